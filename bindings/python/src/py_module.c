/* py_module.c - the scope_profiler._core extension module: its exceptions,
 * the mapping from the library's status codes to them, the library's
 * setup-time messages turned into Python warnings, and the module-level
 * functions that are not about one manager.
 *
 * The package's Python modules (scope_profiler/...py) are thin: every
 * setting, validation, recording and reading call ends up here, in the C
 * library.
 */
#include "py_core.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

PyObject *sp_py_error;
PyObject *sp_py_config_error;
PyObject *sp_py_unknown_setting;
PyObject *sp_py_format_error;
PyObject *sp_py_state_error;
PyObject *sp_py_warning;

PyObject *sp_py_raise(sp_status st, const char *what) {
  const char *msg = sp_last_error();
  if (!msg || !*msg) msg = what ? what : sp_strerror(st);
  PyObject *type;
  switch (st) {
  case SP_ERR_UNKNOWN_SETTING: type = sp_py_unknown_setting; break;
  case SP_ERR_INVALID_VALUE:
  case SP_ERR_CONFLICT:
  case SP_ERR_PARSE: type = sp_py_config_error; break;
  case SP_ERR_FORMAT: type = sp_py_format_error; break;
  case SP_ERR_NOT_FOUND: type = PyExc_FileNotFoundError; break;
  case SP_ERR_IO: type = PyExc_OSError; break;
  case SP_ERR_NO_MEMORY: type = PyExc_MemoryError; break;
  case SP_ERR_INVALID_ARGUMENT: type = PyExc_ValueError; break;
  case SP_ERR_INACTIVE:
  case SP_ERR_ALREADY_ACTIVE:
  case SP_ERR_OPEN_SCOPES:
  case SP_ERR_MPI: type = sp_py_state_error; break;
  default: type = sp_py_error; break;
  }
  PyErr_SetString(type, msg);
  return NULL;
}

/*====== Setup-time messages ======*/

/* Collected warnings of the setup that runs on `collector` (one at a time:
 * setup holds the GIL, and the library produces messages only in setup). */
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t collector;
static int collecting;
static char **pending;
static size_t npending;

static void message_handler(sp_message_level level, const char *text, void *user) {
  (void)user;
  pthread_mutex_lock(&msg_lock);
  int mine = collecting && pthread_equal(collector, pthread_self());
  if (mine && level == SP_MESSAGE_WARNING) {
    char **p = realloc(pending, (npending + 1) * sizeof *p);
    if (p) {
      pending = p;
      pending[npending] = strdup(text);
      if (pending[npending]) npending++;
    }
  }
  pthread_mutex_unlock(&msg_lock);
  /* A setup error becomes the exception the caller raises; messages of
   * setups the package did not start (a C extension's) keep the library's
   * own form on stderr. */
  if (!mine) fprintf(stderr, "scope-profiler: %s: %s\n", level == SP_MESSAGE_ERROR ? "error" : "warning", text);
}

void sp_py_install_message_handler(void) { sp_set_message_handler(message_handler, NULL); }

void sp_py_collect_begin(void) {
  pthread_mutex_lock(&msg_lock);
  collecting = 1;
  collector = pthread_self();
  pthread_mutex_unlock(&msg_lock);
}

int sp_py_collect_end(void) {
  pthread_mutex_lock(&msg_lock);
  char **msgs = pending;
  size_t n = npending;
  pending = NULL;
  npending = 0;
  collecting = 0;
  pthread_mutex_unlock(&msg_lock);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (rc == 0 && PyErr_WarnEx(sp_py_warning, msgs[i], 2) < 0) rc = -1;
    free(msgs[i]);
  }
  free(msgs);
  return rc;
}

/*====== NullContext: the benchmark's baseline ======*/

/* A context manager written in C that does nothing: the same call shapes
 * as a Region (__enter__ METH_NOARGS returning self, __exit__ METH_FASTCALL),
 * so bench/python_overhead.py can subtract what the interpreter costs for a
 * `with` of a C object from what a region costs. */
typedef struct {
  PyObject_HEAD
} NullObject;

static PyObject *null_enter(PyObject *self, PyObject *noargs) {
  (void)noargs;
  return Py_NewRef(self);
}

static PyObject *null_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self, (void)args, (void)nargs;
  Py_RETURN_NONE;
}

static PyMethodDef null_methods[] = {
    {"__enter__", null_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))null_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NullType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.NullContext",
    .tp_basicsize = sizeof(NullObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A C context manager that does nothing (a benchmark baseline).",
    .tp_new = PyType_GenericNew,
    .tp_methods = null_methods,
};

/*====== Module functions ======*/

static PyObject *py_version(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return PyUnicode_FromString(sp_version_string());
}

static PyObject *py_register_opt_in_tag(PyObject *self, PyObject *arg) {
  (void)self;
  const char *tag = PyUnicode_AsUTF8(arg);
  if (!tag) return NULL;
  sp_status st = sp_register_opt_in_tag(tag);
  if (st != SP_OK) return sp_py_raise(st, "register_opt_in_tag failed");
  Py_RETURN_NONE;
}

static PyObject *py_region_name(PyObject *self, PyObject *arg) {
  (void)self;
  unsigned long id = PyLong_AsUnsignedLong(arg);
  if (id == (unsigned long)-1 && PyErr_Occurred()) return NULL;
  const char *name = sp_region_name((sp_region)id);
  if (!name) Py_RETURN_NONE;
  return PyUnicode_FromString(name);
}

/* thread_end(): the calling thread is done (sp_thread_end): its end and CPU
 * time are stamped now, before threading's join() can return. */
static PyObject *py_thread_end(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  sp_thread_end();
  Py_RETURN_NONE;
}

/* set_thread_name(name): the calling thread's OS name (15 bytes at most,
 * cut at a UTF-8 character boundary), which the library records in the
 * thread table when the thread records its first call. */
static PyObject *py_set_thread_name(PyObject *self, PyObject *arg) {
  (void)self;
  Py_ssize_t len;
  const char *name = PyUnicode_AsUTF8AndSize(arg, &len);
  if (!name) return NULL;
  char buf[16];
  size_t n = (size_t)len < sizeof buf - 1 ? (size_t)len : sizeof buf - 1;
  while (n > 0 && n < (size_t)len && ((unsigned char)name[n] & 0xC0) == 0x80) n--;
  memcpy(buf, name, n);
  buf[n] = 0;
  int rc = pthread_setname_np(pthread_self(), buf);
  if (rc) {
    errno = rc;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_thread_name", py_set_thread_name, METH_O, "Name the calling OS thread (at most 15 bytes)."},
    {"thread_end", py_thread_end, METH_NOARGS, "The calling thread is done: stamp its end now."},
    {"version", py_version, METH_NOARGS, "The C library's version string."},
    {"register_opt_in_tag", py_register_opt_in_tag, METH_O,
     "Mark a tag as opt-in: regions carrying it stay disabled unless it is enabled."},
    {"region_name", py_region_name, METH_O, "The name of a region id, or None."},
    {NULL, NULL, 0, NULL},
};

static int add_exceptions(PyObject *m) {
  PyObject *bases = NULL;
  sp_py_error = PyErr_NewExceptionWithDoc("scope_profiler.ScopeProfilerError",
                                          "Base class of scope-profiler's errors.", NULL, NULL);
  if (!sp_py_error) return -1;
  bases = PyTuple_Pack(2, sp_py_error, PyExc_ValueError);
  sp_py_config_error = bases ? PyErr_NewExceptionWithDoc(
                                   "scope_profiler.ConfigurationError",
                                   "A setting, its value, or a combination of settings is invalid.",
                                   bases, NULL)
                             : NULL;
  Py_XDECREF(bases);
  if (!sp_py_config_error) return -1;
  bases = PyTuple_Pack(2, sp_py_config_error, PyExc_TypeError);
  sp_py_unknown_setting = bases ? PyErr_NewExceptionWithDoc(
                                      "scope_profiler.UnknownSettingError",
                                      "No setting has this name (the message names the closest one).",
                                      bases, NULL)
                                : NULL;
  Py_XDECREF(bases);
  if (!sp_py_unknown_setting) return -1;
  bases = PyTuple_Pack(2, sp_py_error, PyExc_ValueError);
  sp_py_format_error = bases ? PyErr_NewExceptionWithDoc(
                                   "scope_profiler.FormatError",
                                   "The file is not a valid profile (or is damaged).", bases, NULL)
                             : NULL;
  Py_XDECREF(bases);
  if (!sp_py_format_error) return -1;
  bases = PyTuple_Pack(2, sp_py_error, PyExc_RuntimeError);
  sp_py_state_error = bases ? PyErr_NewExceptionWithDoc(
                                  "scope_profiler.StateError",
                                  "The manager is not in a state that allows this call.", bases, NULL)
                            : NULL;
  Py_XDECREF(bases);
  if (!sp_py_state_error) return -1;
  sp_py_warning = PyErr_NewExceptionWithDoc(
      "scope_profiler.ScopeProfilerWarning",
      "A setting this build or process cannot honour, or a problem found at finalize.",
      PyExc_UserWarning, NULL);
  if (!sp_py_warning) return -1;
  if (PyModule_AddObjectRef(m, "ScopeProfilerError", sp_py_error) < 0 ||
      PyModule_AddObjectRef(m, "ConfigurationError", sp_py_config_error) < 0 ||
      PyModule_AddObjectRef(m, "UnknownSettingError", sp_py_unknown_setting) < 0 ||
      PyModule_AddObjectRef(m, "FormatError", sp_py_format_error) < 0 ||
      PyModule_AddObjectRef(m, "StateError", sp_py_state_error) < 0 ||
      PyModule_AddObjectRef(m, "ScopeProfilerWarning", sp_py_warning) < 0)
    return -1;
  return 0;
}

/* The same sources build _core (libscope_profiler) and _core_mpi
 * (libscope_profiler_mpi); SP_PY_MODULE names the one being built. */
#ifndef SP_PY_MODULE
#define SP_PY_MODULE _core
#endif
#define SP_PY_STR2(x) #x
#define SP_PY_STR(x) SP_PY_STR2(x)
#define SP_PY_CAT2(a, b) a##b
#define SP_PY_CAT(a, b) SP_PY_CAT2(a, b)
#define SP_PY_MODULE_INIT SP_PY_CAT(PyInit_, SP_PY_MODULE)

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, SP_PY_STR(SP_PY_MODULE),
    "scope-profiler's C core: managers, regions, settings and the reader.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC SP_PY_MODULE_INIT(void);
PyMODINIT_FUNC SP_PY_MODULE_INIT(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (PyType_Ready(&NullType) < 0 || PyModule_AddObjectRef(m, "NullContext", (PyObject *)&NullType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  if (add_exceptions(m) < 0 || sp_py_manager_init(m) < 0 || sp_py_settings_init(m) < 0 ||
      sp_py_results_init(m) < 0 || sp_py_tasks_init(m) < 0 || sp_py_pymem_init(m) < 0 ||
      sp_py_gpu_init(m) < 0 || sp_py_recursive_init(m) < 0 || sp_py_lines_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  sp_py_install_message_handler();
  return m;
}
