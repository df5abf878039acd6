/* c_ext.c - a C extension module that records with SP_REGION, for the
 * tests of C and Python regions in one run: work(n) opens the region
 * "c_work" on the default manager, and inside it "c_inner" n times, then
 * calls back into Python (callback, if given) from inside c_work. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "scope_profiler.h"

static PyObject *work(PyObject *self, PyObject *args) {
  (void)self;
  int n;
  PyObject *cb = Py_None;
  if (!PyArg_ParseTuple(args, "i|O", &n, &cb)) return NULL;
  PyObject *r = NULL;
  {
    SP_REGION("c_work");
    for (int i = 0; i < n; i++) {
      SP_REGION("c_inner");
    }
    if (cb != Py_None) r = PyObject_CallNoArgs(cb);
  }
  if (cb != Py_None && !r) return NULL;
  Py_XDECREF(r);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"work", work, METH_VARARGS, "work(n, callback=None): c_work with n c_inner calls inside."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "sp_c_ext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_sp_c_ext(void);
PyMODINIT_FUNC PyInit_sp_c_ext(void) { return PyModule_Create(&def); }
