/* py_recursive.c - recursive profiling of Python callees:
 * @profile(recursive=True) (and recursive_profile) make every user-code
 * Python function called while the decorated one runs a region of its own,
 * named "<module>.<qualname>" as upstream's tracer names them.
 *
 * _core.Tracer(classify, skip) is a context manager that installs a C
 * profile function (PyEval_SetProfile) on the calling thread for the
 * duration of the decorated call, chaining the profile function that was
 * there (a debugger's, coverage's) and putting it back afterwards. A call
 * event looks its code object up in a cache; on a miss it asks classify(frame)
 * (Python: "is this user code", the region to use or None) once per code
 * object. Codes in `skip` (explicitly decorated functions, which record
 * themselves) are never traced. Only call and return events are used, so a
 * region closes exactly once per frame, also when an exception propagates
 * (the profile hook reports a return then too). Generators and coroutines
 * record each resumption as one call.
 */
#include "py_core.h"

#include "frameobject.h"

typedef struct {
  PyFrameObject *frame; /* identity only: the frame lives until its return event */
  sp_manager *m;
  sp_region id;
} Open;

typedef struct {
  PyObject_HEAD
  PyObject *classify; /* classify(frame) -> Region or None */
  PyObject *skip;     /* set of code objects never traced */
  PyObject *cache;    /* code -> Region or None */
  Py_tracefunc prev;
  PyObject *prevobj;
  int active;
  Open *stack;
  size_t depth, cap;
} TracerObject;

static PyTypeObject TracerType;

static PyObject *region_for(TracerObject *t, PyFrameObject *frame) {
  PyCodeObject *code = PyFrame_GetCode(frame);
  PyObject *r = PyDict_GetItemWithError(t->cache, (PyObject *)code); /* borrowed */
  if (!r && !PyErr_Occurred()) {
    int skip = PySet_Contains(t->skip, (PyObject *)code);
    PyObject *got = skip > 0 ? Py_NewRef(Py_None) : skip < 0 ? NULL : PyObject_CallOneArg(t->classify, (PyObject *)frame);
    if (got && PyDict_SetItem(t->cache, (PyObject *)code, got) == 0) r = got;
    Py_XDECREF(got); /* the cache holds it */
  }
  Py_DECREF(code);
  return r;
}

static int push(TracerObject *t, PyFrameObject *frame, sp_manager *m, sp_region id) {
  if (t->depth == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 64;
    Open *n = PyMem_Realloc(t->stack, ncap * sizeof *n);
    if (!n) return -1;
    t->stack = n;
    t->cap = ncap;
  }
  t->stack[t->depth++] = (Open){frame, m, id};
  return 0;
}

static int trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
  TracerObject *t = (TracerObject *)obj;
  if (t->prev && t->prev(t->prevobj, frame, what, arg) < 0) return -1;
  if (what == PyTrace_CALL) {
    PyObject *r = region_for(t, frame);
    if (!r) {
      /* A failing classify() must not break the program: drop the frame. */
      PyErr_WriteUnraisable(t->classify);
      return 0;
    }
    if (r == Py_None) return 0;
    sp_manager *m;
    sp_region id;
    if (sp_py_region_handle(r, &m, &id) < 0 || push(t, frame, m, id) < 0) {
      PyErr_Clear();
      return 0;
    }
    sp_region_begin(m, id);
  } else if (what == PyTrace_RETURN) {
    if (t->depth && t->stack[t->depth - 1].frame == frame) {
      Open *o = &t->stack[--t->depth];
      sp_region_end(o->m, o->id);
    }
  }
  return 0;
}

static PyObject *tracer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"classify", "skip", NULL};
  PyObject *classify, *skip;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!:Tracer", kwlist, &classify, &PySet_Type, &skip)) return NULL;
  TracerObject *t = (TracerObject *)type->tp_alloc(type, 0);
  if (!t) return NULL;
  t->classify = Py_NewRef(classify);
  t->skip = Py_NewRef(skip);
  if (!(t->cache = PyDict_New())) {
    Py_DECREF(t);
    return NULL;
  }
  return (PyObject *)t;
}

static PyObject *tracer_enter(TracerObject *t, PyObject *noargs) {
  (void)noargs;
  if (t->active) return PyErr_Format(PyExc_RuntimeError, "this tracer is already active");
  PyThreadState *ts = PyThreadState_Get();
  t->prev = ts->c_profilefunc;
  t->prevobj = Py_XNewRef(ts->c_profileobj);
  t->active = 1;
  PyEval_SetProfile(trace, (PyObject *)t);
  return Py_NewRef((PyObject *)t);
}

static PyObject *tracer_exit(TracerObject *t, PyObject *const *args, Py_ssize_t nargs) {
  (void)args, (void)nargs;
  if (!t->active) Py_RETURN_NONE;
  /* Frames still open (the decorated call left through a path the hook did
   * not see) end now, innermost first, so the regions stay balanced. */
  while (t->depth) {
    Open *o = &t->stack[--t->depth];
    sp_region_end(o->m, o->id);
  }
  PyObject *prevobj = t->prevobj;
  t->prevobj = NULL;
  t->active = 0;
  PyEval_SetProfile(t->prev, prevobj);
  Py_XDECREF(prevobj);
  Py_RETURN_NONE;
}

static int tracer_traverse(TracerObject *t, visitproc visit, void *arg) {
  Py_VISIT(t->classify);
  Py_VISIT(t->skip);
  Py_VISIT(t->cache);
  Py_VISIT(t->prevobj);
  return 0;
}

static int tracer_clear(TracerObject *t) {
  Py_CLEAR(t->classify);
  Py_CLEAR(t->skip);
  Py_CLEAR(t->cache);
  Py_CLEAR(t->prevobj);
  return 0;
}

static void tracer_dealloc(TracerObject *t) {
  PyObject_GC_UnTrack(t);
  tracer_clear(t);
  PyMem_Free(t->stack);
  Py_TYPE(t)->tp_free(t);
}

static PyMethodDef tracer_methods[] = {
    {"__enter__", (PyCFunction)tracer_enter, METH_NOARGS, "Install the profile function on this thread."},
    {"__exit__", (PyCFunction)(void (*)(void))tracer_exit, METH_FASTCALL, "Put the previous one back."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TracerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.Tracer",
    .tp_basicsize = sizeof(TracerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Tracer(classify, skip): regions for the Python callees of a call (recursive profiling).",
    .tp_new = tracer_new,
    .tp_dealloc = (destructor)tracer_dealloc,
    .tp_traverse = (traverseproc)tracer_traverse,
    .tp_clear = (inquiry)tracer_clear,
    .tp_methods = tracer_methods,
};

int sp_py_recursive_init(PyObject *module) {
  if (PyType_Ready(&TracerType) < 0) return -1;
  return PyModule_AddObjectRef(module, "Tracer", (PyObject *)&TracerType);
}
