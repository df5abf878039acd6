/* py_manager.c - managers, regions and profiled functions for Python.
 *
 * _core.Manager wraps one sp_manager (the default manager, or an independent
 * one from sp_manager_create()). Its regions are _core.Region objects, one
 * per name and manager, created once and kept: `with region:` is a begin and
 * an end on the C hot path, `manager.profile_region(name)` a dictionary
 * lookup in C that returns the same object every time (upstream built a new
 * region per call). _core.Function is what the decorator returns: a
 * vectorcall object that brackets one call with its region's begin and end
 * and binds like a plain function when it decorates a method.
 *
 * Nothing here takes a lock or assumes the GIL for correctness: every thread
 * records into its own C buffers. Setup and finalize run holding the GIL, so
 * no other Python thread records while they run (the C contract).
 */
#include "py_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_results.h"
#include "structmember.h"

/*====== Manager ======*/

/* Who keeps a C manager alive: its Manager object and every Region made on
 * it, counted here (under the GIL) rather than by the Region holding the
 * Manager, which would make Manager -> regions -> Region -> Manager a cycle
 * that only the garbage collector frees: a program that creates and drops
 * managers then hit the live-manager limit long before a collection ran.
 * The last holder destroys the C manager. */
typedef struct {
  sp_manager *m;
  int is_default;
  Py_ssize_t holders;
} ManagerHold;

static ManagerHold *hold_new(sp_manager *m, int is_default) {
  ManagerHold *h = PyMem_Malloc(sizeof *h);
  if (!h) return (ManagerHold *)PyErr_NoMemory();
  h->m = m;
  h->is_default = is_default;
  h->holders = 1;
  return h;
}

static ManagerHold *hold_take(ManagerHold *h) {
  h->holders++;
  return h;
}

static void hold_drop(ManagerHold *h) {
  if (!h || --h->holders > 0) return;
  /* nothing can record on m now: no Manager, Region or profiled function refers to it */
  if (!h->is_default) {
    sp_py_lines_forget(h->m);
    sp_manager_destroy(h->m);
  }
  PyMem_Free(h);
}

typedef struct {
  PyObject_HEAD
  sp_manager *m;
  int is_default;
  ManagerHold *hold;
  PyObject *regions; /* name -> Region */
  PyObject *weakrefs;
} ManagerObject;

typedef struct {
  PyObject_HEAD
  sp_manager *m;
  sp_region id;
  PyObject *name;
  ManagerHold *hold;  /* keeps m alive */
  PyObject *manager;  /* a weak reference to the ManagerObject it was made on */
  PyObject *tags;    /* tuple of str */
  PyObject *functions; /* list of functions registered for line profiling */
  sp_py_lines_sync lines;
  PyObject *weakrefs;
} RegionObject;

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  sp_manager *m;
  sp_region id;
  PyObject *func;
  PyObject *region;
  PyObject *dict;
  PyObject *weakrefs;
} FunctionObject;

static PyTypeObject ManagerType, RegionType, FunctionType;
static ManagerObject *default_manager;

sp_manager *sp_py_manager_ptr(PyObject *obj) {
  if (!PyObject_TypeCheck(obj, &ManagerType)) {
    PyErr_SetString(PyExc_TypeError, "expected a scope_profiler._core.Manager");
    return NULL;
  }
  return ((ManagerObject *)obj)->m;
}

int sp_py_region_handle(PyObject *obj, sp_manager **m, sp_region *id) {
  if (!PyObject_TypeCheck(obj, &RegionType)) {
    PyErr_SetString(PyExc_TypeError, "expected a scope_profiler._core.Region");
    return -1;
  }
  *m = ((RegionObject *)obj)->m;
  *id = ((RegionObject *)obj)->id;
  return 0;
}

int sp_py_region_lines(PyObject *obj, PyObject **functions, PyObject **name, sp_py_lines_sync **sync) {
  if (!PyObject_TypeCheck(obj, &RegionType)) {
    PyErr_SetString(PyExc_TypeError, "expected a scope_profiler._core.Region");
    return -1;
  }
  RegionObject *r = (RegionObject *)obj;
  *functions = r->functions;
  *name = r->name;
  *sync = &r->lines;
  return 0;
}

static PyObject *manager_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds)))
    return PyErr_Format(PyExc_TypeError, "Manager() takes no arguments");
  ManagerObject *self = (ManagerObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->regions = PyDict_New();
  if (!self->regions) {
    Py_DECREF(self);
    return NULL;
  }
  self->m = sp_manager_create();
  if (!self->m) {
    /* managers dropped inside reference cycles of the program's own (a
     * profiled method's closure holding its ProfileManager) wait for a
     * collection: run one before refusing */
    PyGC_Collect();
    self->m = sp_manager_create();
  }
  if (!self->m) {
    Py_DECREF(self);
    return sp_py_raise(SP_ERR_LIMIT, "no more managers can be created");
  }
  if (!(self->hold = hold_new(self->m, 0))) {
    sp_manager_destroy(self->m);
    self->m = NULL;
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static int manager_traverse(ManagerObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->regions);
  return 0;
}

static int manager_clear(ManagerObject *self) {
  Py_CLEAR(self->regions);
  return 0;
}

static void manager_dealloc(ManagerObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  manager_clear(self);
  if (self->hold) hold_drop(self->hold); /* regions still alive keep m */
  else if (self->m && !self->is_default) sp_manager_destroy(self->m); /* made, never held */
  Py_TYPE(self)->tp_free(self);
}

/* A list of (key, text) pairs into options: each through the C setter, so
 * that every type, bound, choice and did-you-mean comes from the table. */
static int fill_options(sp_options *o, PyObject *pairs) {
  if (pairs == Py_None) return 0;
  PyObject *seq = PySequence_Fast(pairs, "options must be a sequence of (key, value) pairs");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    const char *key, *value;
    if (!PyArg_ParseTuple(item, "sz;options must be (key, value-or-None) pairs", &key, &value)) {
      Py_DECREF(seq);
      return -1;
    }
    sp_status st = sp_options_set(o, key, value);
    if (st != SP_OK) {
      Py_DECREF(seq);
      sp_py_raise(st, "invalid setting");
      return -1;
    }
  }
  Py_DECREF(seq);
  return 0;
}

/* (key, text) pairs into a NULL-terminated "key=value" array (malloc'd). */
static char **make_overrides(PyObject *pairs) {
  PyObject *seq = PySequence_Fast(pairs, "overrides must be a sequence of (key, value) pairs");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  char **out = calloc((size_t)n + 1, sizeof *out);
  if (!out) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    const char *key, *value;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss;overrides must be (key, value) pairs",
                          &key, &value))
      goto fail;
    size_t len = strlen(key) + strlen(value) + 2;
    if (!(out[i] = malloc(len))) {
      PyErr_NoMemory();
      goto fail;
    }
    snprintf(out[i], len, "%s=%s", key, value);
  }
  Py_DECREF(seq);
  return out;
fail:
  for (Py_ssize_t i = 0; i < n; i++) free(out[i]);
  free(out);
  Py_DECREF(seq);
  return NULL;
}

static void free_overrides(char **o) {
  for (size_t i = 0; o && o[i]; i++) free(o[i]);
  free(o);
}

static PyObject *manager_setup(ManagerObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"options", "overrides", "config_path", "replace", "auto_finalize", NULL};
  PyObject *options = Py_None, *overrides = Py_None, *config_path = Py_None;
  int replace = 0, auto_finalize = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOOpp:setup", kwlist, &options, &overrides, &config_path,
                                   &replace, &auto_finalize))
    return NULL;
  sp_options o = SP_OPTIONS_INIT;
  char **ov = NULL;
  PyObject *path_bytes = NULL;
  sp_setup_args a = {0};
  if (fill_options(&o, options) < 0) goto fail;
  if (overrides != Py_None && !(ov = make_overrides(overrides))) goto fail;
  if (config_path != Py_None) {
    if (!PyUnicode_FSConverter(config_path, &path_bytes)) goto fail;
    a.config_path = PyBytes_AS_STRING(path_bytes);
  }
  a.options = &o;
  a.overrides = (const char *const *)ov;
  a.replace = replace;
  a.auto_finalize = auto_finalize;
  sp_py_collect_begin();
  sp_status st = sp_manager_setup(self->m, &a);
  int warned = sp_py_collect_end();
  sp_options_clear(&o);
  free_overrides(ov);
  Py_XDECREF(path_bytes);
  if (st != SP_OK) {
    if (warned < 0) PyErr_Clear(); /* the setup error is the one to report */
    return sp_py_raise(st, "setup failed");
  }
  if (warned < 0) return NULL;
  Py_RETURN_NONE;
fail:
  sp_options_clear(&o);
  free_overrides(ov);
  Py_XDECREF(path_bytes);
  return NULL;
}

/* finalize(verbose=False, return_results=False) -> (results or None,
 * summary text or None). The summary goes to a memory stream so that it
 * follows sys.stdout (redirections, pytest's capture) in Python. */
static PyObject *manager_finalize(ManagerObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"verbose", "return_results", NULL};
  int verbose = 0, return_results = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pp:finalize", kwlist, &verbose, &return_results)) return NULL;
  char *text = NULL;
  size_t text_len = 0;
  FILE *stream = verbose ? open_memstream(&text, &text_len) : NULL;
  if (verbose && !stream) return PyErr_NoMemory();
  sp_finalize_args fa = {verbose, stream, return_results};
  sp_results *res = NULL;
  sp_status st = sp_manager_finalize(self->m, &fa, return_results ? &res : NULL);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", sp_last_error());
  if (stream) fclose(stream);
  PyObject *summary = NULL, *results = NULL;
  if (text && text_len) summary = PyUnicode_DecodeUTF8(text, (Py_ssize_t)text_len, "replace");
  free(text);
  if (st != SP_OK && st != SP_ERR_OPEN_SCOPES) {
    sp_results_free(res);
    Py_XDECREF(summary);
    PyErr_Clear();
    return sp_py_raise(st, "finalize failed");
  }
  if (res) {
    results = sp_py_results_wrap(res);
    if (!results) {
      Py_XDECREF(summary);
      return NULL;
    }
  }
  if (st == SP_ERR_OPEN_SCOPES && PyErr_WarnEx(sp_py_warning, msg, 2) < 0) {
    Py_XDECREF(results);
    Py_XDECREF(summary);
    return NULL;
  }
  PyObject *out = PyTuple_Pack(2, results ? results : Py_None, summary ? summary : Py_None);
  Py_XDECREF(results);
  Py_XDECREF(summary);
  return out;
}

/* Whether a frame runs code of the scope_profiler package itself. */
static int package_frame(PyFrameObject *f) {
  PyObject *g = PyFrame_GetGlobals(f);
  PyObject *n = g ? PyDict_GetItemString(g, "__name__") : NULL; /* borrowed */
  const char *s = n && PyUnicode_Check(n) ? PyUnicode_AsUTF8(n) : NULL;
  int in = s && (!strcmp(s, "scope_profiler") || !strncmp(s, "scope_profiler.", 15));
  if (!s) PyErr_Clear();
  Py_XDECREF(g);
  return in;
}

/* Source location of the Python code that called us (for a new region): the
 * first frame outside the package, so sp.region("x") made from a user's line
 * points there, not into profile_manager.py. */
static void caller_location(PyObject **file, int *line, PyObject **func) {
  *file = NULL;
  *func = NULL;
  *line = -1;
  PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
  if (!f) return;
  Py_INCREF(f);
  while (package_frame(f)) {
    PyFrameObject *back = PyFrame_GetBack(f);
    if (!back) break;
    Py_DECREF(f);
    f = back;
  }
  PyCodeObject *code = PyFrame_GetCode(f);
  *line = PyFrame_GetLineNumber(f);
  Py_DECREF(f);
  PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
  PyObject *qn = PyObject_GetAttrString((PyObject *)code, "co_qualname");
  Py_DECREF(code);
  if (!fn || !qn) PyErr_Clear();
  *file = fn;
  *func = qn;
}

/* The tags of a region as one comma list for the C library. */
static int tags_text(PyObject *tags, PyObject **tuple_out, PyObject **joined_out) {
  *tuple_out = NULL;
  *joined_out = NULL;
  if (tags == NULL || tags == Py_None) {
    *tuple_out = PyTuple_New(0);
    return *tuple_out ? 0 : -1;
  }
  if (PyUnicode_Check(tags)) {
    PyErr_SetString(PyExc_TypeError, "tags must be a list or tuple of strings, not a string");
    return -1;
  }
  PyObject *t = PySequence_Tuple(tags);
  if (!t) return -1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
    PyObject *s = PyTuple_GET_ITEM(t, i);
    if (!PyUnicode_Check(s)) {
      PyErr_Format(PyExc_TypeError, "tags must be strings, not %.100s", Py_TYPE(s)->tp_name);
      Py_DECREF(t);
      return -1;
    }
    if (PyUnicode_GET_LENGTH(s) == 0 || PyUnicode_FindChar(s, ',', 0, PyUnicode_GET_LENGTH(s), 1) >= 0) {
      PyErr_Format(sp_py_config_error, "tag %R: a tag must be non-empty and contain no comma", s);
      Py_DECREF(t);
      return -1;
    }
  }
  PyObject *comma = PyUnicode_FromString(",");
  PyObject *j = comma ? PyUnicode_Join(comma, t) : NULL;
  Py_XDECREF(comma);
  if (!j) {
    Py_DECREF(t);
    return -1;
  }
  *tuple_out = t;
  *joined_out = j;
  return 0;
}

static PyObject *new_region(ManagerObject *self, PyObject *name, PyObject *tags, PyObject *file, int line,
                            PyObject *func) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "a region name must be a str, not %.100s", Py_TYPE(name)->tp_name);
    return NULL;
  }
  PyObject *tag_tuple, *tag_text;
  if (tags_text(tags, &tag_tuple, &tag_text) < 0) return NULL;
  Py_ssize_t len;
  const char *cname = PyUnicode_AsUTF8AndSize(name, &len);
  const char *cfile = NULL, *cfunc = NULL, *ctags = NULL;
  PyObject *file_bytes = NULL;
  if (cname && file && file != Py_None && PyUnicode_FSConverter(file, &file_bytes))
    cfile = PyBytes_AS_STRING(file_bytes);
  if (cname && func && func != Py_None) cfunc = PyUnicode_AsUTF8(func);
  if (cname && tag_text) ctags = PyUnicode_AsUTF8(tag_text);
  PyObject *out = NULL;
  if (PyErr_Occurred()) goto done;
  if ((size_t)len != strlen(cname)) {
    PyErr_SetString(sp_py_config_error, "a region name cannot contain a NUL character");
    goto done;
  }
  sp_region id = sp_region_intern_ex(cname, cfile, line, cfunc, ctags);
  if (!id) {
    sp_py_raise(SP_ERR_INVALID_ARGUMENT, "invalid region name");
    goto done;
  }
  PyObject *wr = PyWeakref_NewRef((PyObject *)self, NULL);
  if (!wr) goto done;
  RegionObject *r = PyObject_GC_New(RegionObject, &RegionType);
  if (!r) {
    Py_DECREF(wr);
    goto done;
  }
  r->m = self->m;
  r->id = id;
  r->name = Py_NewRef(name);
  r->hold = hold_take(self->hold);
  r->manager = wr;
  r->tags = Py_NewRef(tag_tuple);
  r->functions = NULL;
  r->lines = (sp_py_lines_sync){0, 0};
  r->weakrefs = NULL;
  PyObject_GC_Track(r);
  out = (PyObject *)r;
done:
  Py_XDECREF(file_bytes);
  Py_XDECREF(tag_tuple);
  Py_XDECREF(tag_text);
  return out;
}

/* The manager's region for `name`, created on first use. */
static PyObject *get_region(ManagerObject *self, PyObject *name, PyObject *tags, PyObject *file, int line,
                            PyObject *func) {
  PyObject *r = PyDict_GetItemWithError(self->regions, name);
  if (r) return Py_NewRef(r);
  if (PyErr_Occurred()) return NULL;
  PyObject *cf = NULL, *cq = NULL;
  if (!file) {
    caller_location(&cf, &line, &cq);
    file = cf;
    func = cq;
  }
  r = new_region(self, name, tags, file, line, func);
  Py_XDECREF(cf);
  Py_XDECREF(cq);
  if (!r) return NULL;
  if (PyDict_SetItem(self->regions, name, r) < 0) {
    Py_DECREF(r);
    return NULL;
  }
  return r;
}

/* profile_region(name, functions=None): the hot call of `with
 * ProfileManager.profile_region("x"):`, so one positional argument is a
 * dictionary lookup and nothing else. */
static PyObject *manager_profile_region(ManagerObject *self, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames) {
  if (nargs == 1 && !kwnames) {
    PyObject *r = PyDict_GetItemWithError(self->regions, args[0]);
    if (r) return Py_NewRef(r);
    if (PyErr_Occurred()) return NULL;
    return get_region(self, args[0], NULL, NULL, -1, NULL);
  }
  static const char *const kw[] = {"region_name", "functions", NULL};
  PyObject *name = NULL, *functions = Py_None;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs > 2) return PyErr_Format(PyExc_TypeError, "profile_region() takes at most 2 arguments");
  if (nargs >= 1) name = args[0];
  if (nargs == 2) functions = args[1];
  for (Py_ssize_t i = 0; i < nkw; i++) {
    const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    if (!k) return NULL;
    if (!strcmp(k, kw[0]) && !name)
      name = args[nargs + i];
    else if (!strcmp(k, kw[1]) && nargs < 2)
      functions = args[nargs + i];
    else
      return PyErr_Format(PyExc_TypeError, "profile_region() got an unexpected keyword argument '%s'", k);
  }
  if (!name) return PyErr_Format(PyExc_TypeError, "profile_region() missing its region_name");
  PyObject *r = get_region(self, name, NULL, NULL, -1, NULL);
  if (!r || functions == Py_None) return r;
  RegionObject *reg = (RegionObject *)r;
  if (!reg->functions && !(reg->functions = PyList_New(0))) goto fail;
  PyObject *it = PyObject_GetIter(functions);
  if (!it) goto fail;
  PyObject *f;
  while ((f = PyIter_Next(it))) {
    int has = PySequence_Contains(reg->functions, f);
    if (has == 0) has = PyList_Append(reg->functions, f);
    Py_DECREF(f);
    if (has < 0) break;
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) goto fail;
  return r;
fail:
  Py_DECREF(r);
  return NULL;
}

/* region(name, tags=None, file=None, line=-1, func=None) */
static PyObject *manager_region(ManagerObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"name", "tags", "file", "line", "func", NULL};
  PyObject *name, *tags = Py_None, *file = NULL, *func = Py_None;
  int line = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOiO:region", kwlist, &name, &tags, &file, &line, &func))
    return NULL;
  if (file == Py_None) file = NULL;
  PyObject *r = get_region(self, name, tags, file, line, func);
  if (!r) return NULL;
  /* Tags belong to the first definition; asking again with others is a
   * mistake worth reporting rather than silently ignoring. */
  if (tags != Py_None) {
    PyObject *t = PySequence_Tuple(tags);
    int same = t ? PyObject_RichCompareBool(t, ((RegionObject *)r)->tags, Py_EQ) : -1;
    Py_XDECREF(t);
    if (same < 0) goto fail;
    if (!same) {
      PyErr_Format(sp_py_config_error, "region %R already exists with tags %R; a region's tags are fixed "
                   "when it is first created", name, ((RegionObject *)r)->tags);
      goto fail;
    }
  }
  return r;
fail:
  Py_DECREF(r);
  return NULL;
}

static PyObject *manager_regions(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  return PyDict_Copy(self->regions);
}

static PyObject *manager_get_region(ManagerObject *self, PyObject *name) {
  PyObject *r = PyDict_GetItemWithError(self->regions, name);
  if (r) return Py_NewRef(r);
  if (PyErr_Occurred()) return NULL;
  Py_RETURN_NONE;
}

static PyObject *manager_pause(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  sp_manager_pause(self->m);
  Py_RETURN_NONE;
}

static PyObject *manager_resume(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  sp_manager_resume(self->m);
  Py_RETURN_NONE;
}

static PyObject *manager_is_active(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  return PyBool_FromLong(sp_manager_is_active(self->m));
}

static PyObject *manager_is_configured(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  return PyBool_FromLong(sp_manager_is_configured(self->m));
}

static PyObject *manager_is_default(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  return PyBool_FromLong(self->is_default);
}

static PyObject *manager_output_path(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  const char *p = sp_manager_output_path(self->m);
  if (!p) Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault(p);
}

/* config_value(name) -> (text or None, origin): None when the manager was
 * never set up. Text is the library's rendering ("" for unset). */
static PyObject *manager_config_value(ManagerObject *self, PyObject *name) {
  const char *n = PyUnicode_AsUTF8(name);
  if (!n) return NULL;
  const sp_config *c = sp_manager_config(self->m);
  if (!c) Py_RETURN_NONE;
  const char *text = sp_config_value_text(c, n);
  if (!text) return PyErr_Format(sp_py_unknown_setting, "no setting is called %R", name);
  return Py_BuildValue("(si)", text, (int)sp_config_origin(c, n));
}

static PyObject *manager_config_info(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  const sp_config *c = sp_manager_config(self->m);
  if (!c) Py_RETURN_NONE;
  const char *label = sp_config_display_label(c);
  const char *mem = sp_config_memory_profile_path(c);
  return Py_BuildValue("{s:L,s:O,s:s,s:z}", "start_time_ns", (long long)sp_config_start_time_ns(c), "paused",
                       sp_config_paused(c) ? Py_True : Py_False, "display_label", label ? label : "",
                       "memory_profile_path", mem);
}

static PyObject *manager_problems(ManagerObject *self, PyObject *noargs) {
  (void)noargs;
  sp_problem_counts p = sp_manager_problems(self->m);
  return Py_BuildValue("{s:K,s:K,s:K,s:K}", "unmatched_ends", (unsigned long long)p.unmatched_ends,
                       "invalid_regions", (unsigned long long)p.invalid_regions, "dropped_events",
                       (unsigned long long)p.dropped_events, "open_at_finalize",
                       (unsigned long long)p.open_at_finalize);
}

static int task_id_arg(PyObject *arg, unsigned long long *id) {
  *id = PyLong_AsUnsignedLongLong(arg);
  if (*id == (unsigned long long)-1 && PyErr_Occurred()) return -1;
  return 0;
}

static PyObject *manager_task_switch(ManagerObject *self, PyObject *arg) {
  unsigned long long id;
  if (task_id_arg(arg, &id) < 0) return NULL;
  sp_manager_task_switch(self->m, id);
  Py_RETURN_NONE;
}

static PyObject *manager_task_name(ManagerObject *self, PyObject *args) {
  unsigned long long id;
  const char *name;
  if (!PyArg_ParseTuple(args, "Ks:task_name", &id, &name)) return NULL;
  sp_manager_task_name(self->m, id, name);
  Py_RETURN_NONE;
}

/* task_describe(id, kind=None, coro_name=None): the task table's kind and
 * coro_name columns; None keeps a value. */
static PyObject *manager_task_describe(ManagerObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"task_id", "kind", "coro_name", NULL};
  unsigned long long id;
  const char *kind = NULL, *coro = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "K|zz:task_describe", kwlist, &id, &kind, &coro)) return NULL;
  sp_status st = sp_manager_task_describe(self->m, id, kind, coro);
  if (st != SP_OK) return sp_py_raise(st, "task_describe");
  Py_RETURN_NONE;
}

static PyObject *manager_task_done(ManagerObject *self, PyObject *arg) {
  unsigned long long id;
  if (task_id_arg(arg, &id) < 0) return NULL;
  sp_manager_task_done(self->m, id);
  Py_RETURN_NONE;
}

static PyObject *wrap_function(RegionObject *region, PyObject *func);

/* wrap(func, region_name, tags=None) -> Function: the decorator's object. */
static PyObject *manager_wrap(ManagerObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"func", "name", "tags", NULL};
  PyObject *func, *name, *tags = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|O:wrap", kwlist, &func, &name, &tags)) return NULL;
  if (!PyCallable_Check(func)) return PyErr_Format(PyExc_TypeError, "cannot profile %R: not callable", func);
  PyObject *file = NULL, *qual = NULL;
  int line = -1;
  PyObject *code = PyObject_GetAttrString(func, "__code__");
  if (code) {
    file = PyObject_GetAttrString(code, "co_filename");
    PyObject *ln = PyObject_GetAttrString(code, "co_firstlineno");
    if (ln) line = (int)PyLong_AsLong(ln);
    Py_XDECREF(ln);
    Py_DECREF(code);
  }
  PyErr_Clear();
  qual = PyObject_GetAttrString(func, "__qualname__");
  if (!qual) PyErr_Clear();
  PyObject *r = get_region(self, name, tags, file ? file : Py_None, line, qual ? qual : Py_None);
  Py_XDECREF(file);
  Py_XDECREF(qual);
  if (!r) return NULL;
  PyObject *w = wrap_function((RegionObject *)r, func);
  Py_DECREF(r);
  return w;
}

static PyObject *manager_num_calls(ManagerObject *self, PyObject *arg) {
  unsigned long id = PyLong_AsUnsignedLong(arg);
  if (id == (unsigned long)-1 && PyErr_Occurred()) return NULL;
  return PyLong_FromUnsignedLongLong(sp_manager_num_calls(self->m, (sp_region)id));
}

static PyMethodDef manager_methods[] = {
    {"setup", (PyCFunction)(void (*)(void))manager_setup, METH_VARARGS | METH_KEYWORDS,
     "setup(options=None, overrides=None, config_path=None, replace=False, auto_finalize=False)"},
    {"finalize", (PyCFunction)(void (*)(void))manager_finalize, METH_VARARGS | METH_KEYWORDS,
     "finalize(verbose=False, return_results=False) -> (results, summary)"},
    {"profile_region", (PyCFunction)(void (*)(void))manager_profile_region, METH_FASTCALL | METH_KEYWORDS,
     "profile_region(region_name, functions=None) -> Region (the same object for the same name)"},
    {"region", (PyCFunction)(void (*)(void))manager_region, METH_VARARGS | METH_KEYWORDS,
     "region(name, tags=None, file=None, line=-1, func=None) -> Region"},
    {"regions", (PyCFunction)manager_regions, METH_NOARGS, "A copy of the name -> Region dictionary."},
    {"get_region", (PyCFunction)manager_get_region, METH_O, "The region called name, or None."},
    {"wrap", (PyCFunction)(void (*)(void))manager_wrap, METH_VARARGS | METH_KEYWORDS,
     "wrap(func, name, tags=None) -> a profiled callable"},
    {"pause", (PyCFunction)manager_pause, METH_NOARGS, "Stop recording new calls."},
    {"resume", (PyCFunction)manager_resume, METH_NOARGS, "Record again."},
    {"is_active", (PyCFunction)manager_is_active, METH_NOARGS, "Set up and recording."},
    {"is_configured", (PyCFunction)manager_is_configured, METH_NOARGS, "Set up at least once."},
    {"is_default", (PyCFunction)manager_is_default, METH_NOARGS, "The process-wide default manager."},
    {"output_path", (PyCFunction)manager_output_path, METH_NOARGS, "The last file written, or None."},
    {"config_value", (PyCFunction)manager_config_value, METH_O,
     "config_value(name) -> (text, origin) of the resolved setting, or None before setup."},
    {"config_info", (PyCFunction)manager_config_info, METH_NOARGS,
     "Derived properties of the resolved configuration, or None before setup."},
    {"problems", (PyCFunction)manager_problems, METH_NOARGS, "Problems counted on the hot path."},
    {"num_calls", (PyCFunction)manager_num_calls, METH_O, "Completed calls of a region id."},
    {"task_switch", (PyCFunction)manager_task_switch, METH_O, "The calling thread now runs task id (0: none)."},
    {"task_name", (PyCFunction)manager_task_name, METH_VARARGS, "task_name(id, name)"},
    {"task_describe", (PyCFunction)(void (*)(void))manager_task_describe, METH_VARARGS | METH_KEYWORDS,
     "task_describe(id, kind=None, coro_name=None): the task table's kind (\"task\", \"greenlet\", ...) and coro_name"},
    {"task_done", (PyCFunction)manager_task_done, METH_O, "Task id finished."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ManagerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.Manager",
    .tp_basicsize = sizeof(ManagerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One profiling manager of the C library (the default one, or an independent one).",
    .tp_new = manager_new,
    .tp_dealloc = (destructor)manager_dealloc,
    .tp_traverse = (traverseproc)manager_traverse,
    .tp_clear = (inquiry)manager_clear,
    .tp_methods = manager_methods,
    .tp_weaklistoffset = offsetof(ManagerObject, weakrefs),
};

static PyObject *py_default_manager(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return Py_NewRef((PyObject *)default_manager);
}

/*====== Region ======*/

static PyObject *region_enter(RegionObject *self, PyObject *noargs) {
  (void)noargs;
  if (sp_py_lines_on) sp_py_lines_enter((PyObject *)self, self->m, self->id);
  sp_region_begin(self->m, self->id);
  return Py_NewRef((PyObject *)self);
}

static PyObject *region_exit(RegionObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)args, (void)nargs;
  sp_region_end(self->m, self->id);
  if (sp_py_lines_on) sp_py_lines_exit(self->m, self->id);
  Py_RETURN_NONE;
}

/* begin()/end() return the library's status: 0, or a negative code for an
 * end that did not match the innermost open call (counted, nothing changed). */
static PyObject *region_begin(RegionObject *self, PyObject *noargs) {
  (void)noargs;
  return PyLong_FromLong(sp_region_begin(self->m, self->id));
}

static PyObject *region_end(RegionObject *self, PyObject *noargs) {
  (void)noargs;
  return PyLong_FromLong(sp_region_end(self->m, self->id));
}

static PyObject *region_call(RegionObject *self, PyObject *args, PyObject *kwds) {
  PyObject *func;
  if (kwds && PyDict_GET_SIZE(kwds)) return PyErr_Format(PyExc_TypeError, "Region() takes no keywords");
  if (!PyArg_ParseTuple(args, "O:Region", &func)) return NULL;
  if (!PyCallable_Check(func)) return PyErr_Format(PyExc_TypeError, "cannot profile %R: not callable", func);
  return wrap_function(self, func);
}

static PyObject *region_get_num_calls(RegionObject *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLongLong(sp_manager_num_calls(self->m, self->id));
}

static PyObject *region_get_id(RegionObject *self, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong(self->id);
}

static PyObject *region_get_manager(RegionObject *self, void *closure) {
  (void)closure;
  PyObject *m = PyWeakref_GetObject(self->manager); /* borrowed; None once it is gone */
  return Py_NewRef(m ? m : Py_None);
}

static PyObject *region_get_functions(RegionObject *self, void *closure) {
  (void)closure;
  if (!self->functions) return PyTuple_New(0);
  return PyList_AsTuple(self->functions);
}

static PyObject *region_repr(RegionObject *self) {
  return PyUnicode_FromFormat("<scope_profiler Region %R, %llu calls>", self->name,
                              (unsigned long long)sp_manager_num_calls(self->m, self->id));
}

static int region_traverse(RegionObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->functions);
  return 0;
}

static int region_clear(RegionObject *self) {
  /* m stays valid until dealloc: the region holds it (hold) */
  Py_CLEAR(self->functions);
  return 0;
}

static void region_dealloc(RegionObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  region_clear(self);
  Py_CLEAR(self->name);
  Py_CLEAR(self->tags);
  Py_CLEAR(self->manager);
  hold_drop(self->hold);
  self->hold = NULL;
  PyObject_GC_Del(self);
}

static PyMethodDef region_methods[] = {
    {"__enter__", (PyCFunction)region_enter, METH_NOARGS, "Begin one call."},
    {"__exit__", (PyCFunction)(void (*)(void))region_exit, METH_FASTCALL, "End the call."},
    {"begin", (PyCFunction)region_begin, METH_NOARGS, "Begin one call; 0 or a negative status."},
    {"end", (PyCFunction)region_end, METH_NOARGS, "End the innermost call; 0 or a negative status."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef region_members[] = {
    {"name", T_OBJECT, offsetof(RegionObject, name), READONLY, "The region's name."},
    {"tags", T_OBJECT, offsetof(RegionObject, tags), READONLY, "The region's tags."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef region_getset[] = {
    {"num_calls", (getter)region_get_num_calls, NULL, "Completed calls on this manager, over every run.", NULL},
    {"id", (getter)region_get_id, NULL, "The process-wide region id of the C library.", NULL},
    {"functions", (getter)region_get_functions, NULL, "Functions registered for line profiling.", NULL},
    {"manager", (getter)region_get_manager, NULL,
     "The _core.Manager it records on (None once that object is gone; the region still records).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RegionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.Region",
    .tp_basicsize = sizeof(RegionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A profiled region of one manager: `with region:` records one call; `region(func)` wraps a "
              "function.",
    .tp_dealloc = (destructor)region_dealloc,
    .tp_traverse = (traverseproc)region_traverse,
    .tp_clear = (inquiry)region_clear,
    .tp_methods = region_methods,
    .tp_members = region_members,
    .tp_getset = region_getset,
    .tp_call = (ternaryfunc)region_call,
    .tp_repr = (reprfunc)region_repr,
    .tp_weaklistoffset = offsetof(RegionObject, weakrefs),
};

/*====== Function ======*/

static PyObject *function_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  FunctionObject *self = (FunctionObject *)callable;
  if (sp_py_lines_on) sp_py_lines_enter(self->region, self->m, self->id);
  sp_region_begin(self->m, self->id);
  PyObject *r = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
  sp_region_end(self->m, self->id);
  if (sp_py_lines_on) sp_py_lines_exit(self->m, self->id);
  return r;
}

static PyObject *wrap_function(RegionObject *region, PyObject *func) {
  FunctionObject *f = PyObject_GC_New(FunctionObject, &FunctionType);
  if (!f) return NULL;
  f->vectorcall = function_vectorcall;
  f->m = region->m;
  f->id = region->id;
  f->func = Py_NewRef(func);
  f->region = Py_NewRef((PyObject *)region);
  f->dict = NULL;
  f->weakrefs = NULL;
  PyObject_GC_Track(f);
  return (PyObject *)f;
}

/* As a method: bind like a plain function does. */
static PyObject *function_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
  (void)type;
  if (obj == NULL || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

static int function_traverse(FunctionObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->func);
  Py_VISIT(self->region);
  Py_VISIT(self->dict);
  return 0;
}

static int function_clear(FunctionObject *self) {
  Py_CLEAR(self->func);
  Py_CLEAR(self->dict);
  return 0;
}

static void function_dealloc(FunctionObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  function_clear(self);
  Py_CLEAR(self->region);
  PyObject_GC_Del(self);
}

static PyObject *function_repr(FunctionObject *self) {
  return PyUnicode_FromFormat("<profiled %R in region %R>", self->func, ((RegionObject *)self->region)->name);
}

static PyMemberDef function_members[] = {
    {"__region__", T_OBJECT, offsetof(FunctionObject, region), READONLY, "The region each call records in."},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FunctionObject, vectorcall), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(FunctionObject, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FunctionObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *function_get_func(FunctionObject *self, void *closure) {
  (void)closure;
  if (!self->func) Py_RETURN_NONE;
  return Py_NewRef(self->func);
}

static PyGetSetDef function_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"__func__", (getter)function_get_func, NULL, "The function being profiled.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.Function",
    .tp_basicsize = sizeof(FunctionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A function whose every call is one call of its region.",
    .tp_dealloc = (destructor)function_dealloc,
    .tp_traverse = (traverseproc)function_traverse,
    .tp_clear = (inquiry)function_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FunctionObject, vectorcall),
    .tp_descr_get = function_descr_get,
    .tp_dictoffset = offsetof(FunctionObject, dict),
    .tp_weaklistoffset = offsetof(FunctionObject, weakrefs),
    .tp_members = function_members,
    .tp_getset = function_getset,
    .tp_repr = (reprfunc)function_repr,
};

/*====== Module glue ======*/

static PyMethodDef manager_module_methods[] = {
    {"default_manager", py_default_manager, METH_NOARGS, "The process-wide default manager."},
    {NULL, NULL, 0, NULL},
};

int sp_py_manager_init(PyObject *module) {
  if (PyType_Ready(&ManagerType) < 0 || PyType_Ready(&RegionType) < 0 || PyType_Ready(&FunctionType) < 0)
    return -1;
  if (PyModule_AddObjectRef(module, "Manager", (PyObject *)&ManagerType) < 0 ||
      PyModule_AddObjectRef(module, "Region", (PyObject *)&RegionType) < 0 ||
      PyModule_AddObjectRef(module, "Function", (PyObject *)&FunctionType) < 0)
    return -1;
  default_manager = PyObject_GC_New(ManagerObject, &ManagerType);
  if (!default_manager) return -1;
  default_manager->m = sp_default_manager();
  default_manager->is_default = 1;
  default_manager->weakrefs = NULL;
  default_manager->hold = hold_new(default_manager->m, 1);
  if (!default_manager->hold) return -1;
  default_manager->regions = PyDict_New();
  if (!default_manager->regions) return -1;
  PyObject_GC_Track(default_manager);
  return PyModule_AddFunctions(module, manager_module_methods);
}
