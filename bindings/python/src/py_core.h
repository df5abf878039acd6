/* py_core.h - the CPython extension scope_profiler._core: what its files
 * share (py_module.c: the module, errors and messages; py_manager.c:
 * managers, regions and profiled functions; py_settings.c: the settings
 * table and options; py_results.c: reading profiles back).
 *
 * Everything here calls the shared libscope_profiler through its public
 * API only, so a C extension that records with SP_REGION in the same
 * process records into the same managers, the same run and the same file.
 */
#ifndef SP_PY_CORE_H
#define SP_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "scope_profiler.h"

/* The module's exceptions (py_module.c). */
extern PyObject *sp_py_error;            /* ScopeProfilerError(Exception) */
extern PyObject *sp_py_config_error;     /* ConfigurationError(ScopeProfilerError, ValueError) */
extern PyObject *sp_py_unknown_setting;  /* UnknownSettingError(ConfigurationError, TypeError) */
extern PyObject *sp_py_format_error;     /* FormatError(ScopeProfilerError, ValueError) */
extern PyObject *sp_py_state_error;      /* StateError(ScopeProfilerError, RuntimeError) */
extern PyObject *sp_py_warning;          /* ScopeProfilerWarning(UserWarning) */

/* Raise the exception that matches `st`, with sp_last_error() (or `what`
 * when the library left no message) as its text. Returns NULL. */
PyObject *sp_py_raise(sp_status st, const char *what);

/* Setup-time messages of the library: while `sp_py_collect_begin()` is in
 * effect on this thread, warnings are kept and sp_py_collect_end() issues
 * them as Python warnings (after the C call returned, so a warnings filter
 * that turns them into errors raises in Python, not inside the library). */
void sp_py_collect_begin(void);
int sp_py_collect_end(void); /* -1 when a warning was turned into an exception */
void sp_py_install_message_handler(void);

/* Types and their setup (py_manager.c, py_settings.c, py_results.c). */
int sp_py_manager_init(PyObject *module);
int sp_py_settings_init(PyObject *module);
int sp_py_results_init(PyObject *module);
int sp_py_tasks_init(PyObject *module);
int sp_py_pymem_init(PyObject *module);
int sp_py_gpu_init(PyObject *module);
int sp_py_recursive_init(PyObject *module);
int sp_py_lines_init(PyObject *module);

/* The C manager behind a _core.Manager object, or NULL with TypeError. */
sp_manager *sp_py_manager_ptr(PyObject *obj);

/* The manager and region id of a _core.Region; -1 with TypeError. */
int sp_py_region_handle(PyObject *obj, sp_manager **m, sp_region *id);

/* use_line_profiler's timer of Python lines (py_lines.c). Regions opened
 * and closed through the package (`with`, decorated calls) tell it, once a
 * timer was started in the process (sp_py_lines_on), so it traces the
 * functions registered on them while they are open. */
typedef struct {
  unsigned gen;       /* the timer that saw the region's functions */
  Py_ssize_t synced;  /* how many of them it has seen */
} sp_py_lines_sync;
extern int sp_py_lines_on;
void sp_py_lines_enter(PyObject *region, sp_manager *m, sp_region id);
void sp_py_lines_exit(sp_manager *m, sp_region id);
void sp_py_lines_forget(sp_manager *m); /* m is being destroyed: its timer stops */
/* A _core.Region's functions registered for line timing (borrowed list,
 * NULL when none), its name (borrowed) and its sync state; -1 with TypeError. */
int sp_py_region_lines(PyObject *obj, PyObject **functions, PyObject **name, sp_py_lines_sync **sync);

#endif
