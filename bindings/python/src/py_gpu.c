/* py_gpu.c - gpu_timing_backend as a Python object: an object with
 * record_event() and elapsed_time_ns(start, end) (upstream's custom
 * backend; the package's torch and cupy backends are such objects too)
 * registered as the library's callbacks backend (sp_gpu_callbacks,
 * scope_profiler/gpu.h) on one manager.
 *
 * record() calls record_event() and keeps the returned event object as the
 * event handle (a new reference, released by release()); elapsed_ns()
 * calls elapsed_time_ns(start, end). When the end event has query() and it
 * answers False, the device has not reached it yet: SP_GPU_NOT_READY, asked
 * again later, unless the library must wait, which calls its synchronize()
 * first when it has one. Each callback takes the GIL (the recording thread
 * already holds it; PyGILState makes that free), so a backend may be called
 * from any thread the library uses. A Python exception in a callback is
 * reported by the library at finalize as that call's error ("Python
 * exception in record_event()") and printed once.
 *
 * The registration entry point is looked up in the library at run time, so
 * a library without the callbacks backend says so (GpuCallbacks.available).
 */
#include "py_core.h"

#include <dlfcn.h>
#include <string.h>

#include "scope_profiler/gpu.h"

enum { ERR_RECORD = 1, ERR_ELAPSED, ERR_VALUE, ERR_SYNC };

typedef sp_status (*set_callbacks_fn)(sp_manager *m, const sp_gpu_callbacks *cb);

static set_callbacks_fn find_setter(void) {
  static int looked;
  static set_callbacks_fn fn;
  if (looked) return fn;
  looked = 1;
  Dl_info info;
  /* The library this extension is linked with, wherever it was loaded from. */
  if (!dladdr((const void *)&sp_i_default, &info) || !info.dli_fname) return NULL;
  void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return NULL;
  void *sym = dlsym(h, "sp_manager_set_gpu_callbacks");
  dlclose(h);
  memcpy(&fn, &sym, sizeof fn);
  return fn;
}

static int printed;

static void report(const char *what) {
  if (!printed) {
    printed = 1;
    PySys_WriteStderr("scope-profiler: warning: the gpu_timing_backend object raised in %s:\n", what);
    PyErr_Print();
  } else {
    PyErr_Clear();
  }
}

static int cb_record(void *user, void *stream, void **event) {
  (void)stream;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *e = PyObject_CallMethod((PyObject *)user, "record_event", NULL);
  int rc = 0;
  if (!e) {
    report("record_event()");
    rc = ERR_RECORD;
  }
  *event = e;
  PyGILState_Release(g);
  return rc;
}

static int cb_elapsed(void *user, void *start, void *end, int wait, int64_t *ns) {
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *endo = end;
  if (PyObject_HasAttrString(endo, wait ? "synchronize" : "query")) {
    PyObject *r = PyObject_CallMethod(endo, wait ? "synchronize" : "query", NULL);
    if (!r) {
      report(wait ? "event.synchronize()" : "event.query()");
      rc = ERR_SYNC;
      goto out;
    }
    int done = wait ? 1 : PyObject_IsTrue(r);
    Py_DECREF(r);
    if (done < 0) {
      report("event.query()");
      rc = ERR_SYNC;
      goto out;
    }
    if (!done) {
      rc = SP_GPU_NOT_READY;
      goto out;
    }
  }
  PyObject *v = PyObject_CallMethod((PyObject *)user, "elapsed_time_ns", "OO", (PyObject *)start, endo);
  if (!v) {
    report("elapsed_time_ns()");
    rc = ERR_ELAPSED;
    goto out;
  }
  long long x = PyLong_AsLongLong(v);
  Py_DECREF(v);
  if (x == -1 && PyErr_Occurred()) {
    report("elapsed_time_ns() (it must return an int of nanoseconds)");
    rc = ERR_VALUE;
  } else if (x < 0) {
    rc = ERR_VALUE;
  } else {
    *ns = x;
  }
out:
  PyGILState_Release(g);
  return rc;
}

static void cb_release(void *user, void *event) {
  (void)user;
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF((PyObject *)event);
  PyGILState_Release(g);
}

static const char *cb_error_name(void *user, int code) {
  (void)user;
  switch (code) {
  case ERR_RECORD: return "Python exception in record_event()";
  case ERR_ELAPSED: return "Python exception in elapsed_time_ns()";
  case ERR_VALUE: return "elapsed_time_ns() did not return a nonnegative int";
  case ERR_SYNC: return "Python exception in the event's query()/synchronize()";
  }
  return NULL;
}

/* set_gpu_backend(manager, obj or None) -> True, or False when this library
 * has no callbacks backend. The manager keeps a reference to obj (in the
 * _core.Manager's dict of held objects) for as long as it is registered. */
static PyObject *py_set_gpu_backend(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *mgr, *obj;
  if (!PyArg_ParseTuple(args, "OO:set_gpu_backend", &mgr, &obj)) return NULL;
  sp_manager *m = sp_py_manager_ptr(mgr);
  if (!m) return NULL;
  set_callbacks_fn set = find_setter();
  if (!set) Py_RETURN_FALSE;
  if (obj != Py_None) {
    if (!PyObject_HasAttrString(obj, "record_event") || !PyObject_HasAttrString(obj, "elapsed_time_ns"))
      return PyErr_Format(PyExc_TypeError, "gpu_timing_backend %R has no record_event() and "
                          "elapsed_time_ns(start_event, end_event) methods", obj);
  }
  sp_gpu_callbacks cb = {0};
  cb.size = sizeof cb;
  cb.user = obj;
  cb.record = cb_record;
  cb.elapsed_ns = cb_elapsed;
  cb.release = cb_release;
  cb.error_name = cb_error_name;
  sp_status st = set(m, obj == Py_None ? NULL : &cb);
  if (st != SP_OK) return sp_py_raise(st, "cannot register the GPU backend");
  Py_RETURN_TRUE;
}

static PyObject *py_gpu_callbacks_available(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return PyBool_FromLong(find_setter() != NULL);
}

static PyMethodDef gpu_methods[] = {
    {"set_gpu_backend", py_set_gpu_backend, METH_VARARGS,
     "set_gpu_backend(manager, obj): register obj (record_event/elapsed_time_ns) as the callbacks backend."},
    {"gpu_callbacks_available", py_gpu_callbacks_available, METH_NOARGS,
     "Whether the library has the GPU callbacks backend."},
    {NULL, NULL, 0, NULL},
};

int sp_py_gpu_init(PyObject *module) { return PyModule_AddFunctions(module, gpu_methods); }
