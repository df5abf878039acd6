/* py_tasks.c - track_async for asyncio: _core.TaskSteps, the coroutine an
 * asyncio task runs instead of its own.
 *
 * It delegates every step (send, throw, close) to the task's coroutine and
 * tells the manager, around each one, that this thread now runs the task
 * (sp_manager_task_switch(m, id)) and afterwards that it runs none (0). The
 * core then nests every region call of the step in the task's own lane,
 * records the task in events/task_ids and the time the task spent switched
 * out while a call was open in events/await_ns, and writes the task
 * table. asyncio's C Task drives it through am_send (PyIter_Send), the same
 * slot a native coroutine uses, so a step costs two task switches more.
 * Python's side (scope_profiler/concurrency.py) installs the task factory
 * that wraps each new task's coroutine, chaining any factory already set.
 */
#include "py_core.h"

#include "structmember.h"

typedef struct {
  PyObject_HEAD
  PyObject *coro;
  PyObject *manager; /* keeps m alive */
  sp_manager *m;
  unsigned long long id;
} StepsObject;

static PyTypeObject StepsType;

static PyObject *steps_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"manager", "coro", "task_id", NULL};
  PyObject *manager, *coro;
  unsigned long long id;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOK:TaskSteps", kwlist, &manager, &coro, &id)) return NULL;
  sp_manager *m = sp_py_manager_ptr(manager);
  if (!m) return NULL;
  if (id == 0) return PyErr_Format(PyExc_ValueError, "a task id must be nonzero (0 is the thread's own context)");
  StepsObject *self = (StepsObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->coro = Py_NewRef(coro);
  self->manager = Py_NewRef(manager);
  self->m = m;
  self->id = id;
  return (PyObject *)self;
}

static int steps_traverse(StepsObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->coro);
  Py_VISIT(self->manager);
  return 0;
}

static int steps_clear(StepsObject *self) {
  Py_CLEAR(self->coro);
  return 0;
}

static void steps_dealloc(StepsObject *self) {
  PyObject_GC_UnTrack(self);
  steps_clear(self);
  Py_CLEAR(self->manager);
  Py_TYPE(self)->tp_free(self);
}

static PySendResult steps_am_send(PyObject *obj, PyObject *arg, PyObject **result) {
  StepsObject *self = (StepsObject *)obj;
  if (!self->coro) {
    PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited coroutine");
    *result = NULL;
    return PYGEN_ERROR;
  }
  sp_manager_task_switch(self->m, self->id);
  PySendResult r = PyIter_Send(self->coro, arg, result);
  sp_manager_task_switch(self->m, 0);
  return r;
}

/* A value the coroutine returned, as the StopIteration a send() raises. */
static PyObject *stop_with(PyObject *value) {
  if (value == Py_None) {
    Py_DECREF(value);
    PyErr_SetNone(PyExc_StopIteration);
    return NULL;
  }
  PyObject *exc = PyObject_CallOneArg(PyExc_StopIteration, value);
  Py_DECREF(value);
  if (exc) {
    PyErr_SetObject(PyExc_StopIteration, exc);
    Py_DECREF(exc);
  }
  return NULL;
}

static PyObject *steps_send(PyObject *self, PyObject *arg) {
  PyObject *result;
  PySendResult r = steps_am_send(self, arg, &result);
  if (r == PYGEN_NEXT) return result;
  if (r == PYGEN_RETURN) return stop_with(result);
  return NULL;
}

static PyObject *steps_iternext(PyObject *self) {
  PyObject *result;
  PySendResult r = steps_am_send(self, Py_None, &result);
  if (r == PYGEN_NEXT) return result;
  if (r == PYGEN_RETURN) return stop_with(result);
  return NULL;
}

static PyObject *steps_throw(StepsObject *self, PyObject *args) {
  if (!self->coro) {
    PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited coroutine");
    return NULL;
  }
  PyObject *meth = PyObject_GetAttrString(self->coro, "throw");
  if (!meth) return NULL;
  sp_manager_task_switch(self->m, self->id);
  PyObject *r = PyObject_Call(meth, args, NULL);
  sp_manager_task_switch(self->m, 0);
  Py_DECREF(meth);
  return r;
}

static PyObject *steps_close(StepsObject *self, PyObject *noargs) {
  (void)noargs;
  if (!self->coro) Py_RETURN_NONE;
  sp_manager_task_switch(self->m, self->id);
  PyObject *r = PyObject_CallMethod(self->coro, "close", NULL);
  sp_manager_task_switch(self->m, 0);
  return r;
}

static PyObject *steps_self(PyObject *self) { return Py_NewRef(self); }

static PyObject *steps_await(PyObject *self, PyObject *noargs) {
  (void)noargs;
  return Py_NewRef(self);
}

/* cr_code, cr_frame, __qualname__, ...: what asyncio and debuggers read
 * from a task's coroutine come from the wrapped one. */
static PyObject *steps_getattro(PyObject *self, PyObject *name) {
  PyObject *v = PyObject_GenericGetAttr(self, name);
  StepsObject *s = (StepsObject *)self;
  if (v || !s->coro || !PyErr_ExceptionMatches(PyExc_AttributeError)) return v;
  PyErr_Clear();
  return PyObject_GetAttr(s->coro, name);
}

static PyObject *steps_repr(StepsObject *self) {
  return PyUnicode_FromFormat("<task %llu steps of %R>", self->id, self->coro ? self->coro : Py_None);
}

static PyMethodDef steps_methods[] = {
    {"send", steps_send, METH_O, "Run one step of the task."},
    {"throw", (PyCFunction)steps_throw, METH_VARARGS, "Raise into the task's coroutine."},
    {"close", (PyCFunction)steps_close, METH_NOARGS, "Close the task's coroutine."},
    {"__await__", steps_await, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef steps_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(StepsObject, coro), READONLY, "The task's own coroutine."},
    {"task_id", T_ULONGLONG, offsetof(StepsObject, id), READONLY, "The id the manager knows the task by."},
    {NULL, 0, 0, 0, NULL},
};

static PyAsyncMethods steps_async = {
    .am_await = steps_self,
    .am_send = steps_am_send,
};

static PyTypeObject StepsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.TaskSteps",
    .tp_basicsize = sizeof(StepsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "TaskSteps(manager, coro, task_id): coro, with each step announced to the manager as task_id.",
    .tp_new = steps_new,
    .tp_dealloc = (destructor)steps_dealloc,
    .tp_traverse = (traverseproc)steps_traverse,
    .tp_clear = (inquiry)steps_clear,
    .tp_as_async = &steps_async,
    .tp_iter = steps_self,
    .tp_iternext = steps_iternext,
    .tp_getattro = steps_getattro,
    .tp_methods = steps_methods,
    .tp_members = steps_members,
    .tp_repr = (reprfunc)steps_repr,
};

int sp_py_tasks_init(PyObject *module) {
  if (PyType_Ready(&StepsType) < 0) return -1;
  return PyModule_AddObjectRef(module, "TaskSteps", (PyObject *)&StepsType);
}
