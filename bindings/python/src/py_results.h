/* py_results.h - _core.Results, a profile opened by the C reader (py_results.c). */
#ifndef SP_PY_RESULTS_H
#define SP_PY_RESULTS_H

#include "py_core.h"
#include "scope_profiler/reader.h"

/* A new Results object owning `r` (freed with it; also on failure). */
PyObject *sp_py_results_wrap(sp_results *r);

#endif
