/* py_results.c - _core.Results: a profile read back through the C reader
 * (scope_profiler/reader.h), for scope_profiler.load() and for
 * finalize(return_results=True), which hands back the same type.
 *
 * Arrays cross into Python as bytes of native int64/uint32 values, which
 * the Python side views as numpy arrays without another copy; statistics
 * and tables as plain Python objects. Every call that reads can fail on a
 * damaged file and then raises with the reader's message.
 */
#include "py_results.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  PyObject_HEAD
  sp_results *r;
} ResultsObject;

static PyTypeObject ResultsType;

PyObject *sp_py_results_wrap(sp_results *r) {
  ResultsObject *o = PyObject_New(ResultsObject, &ResultsType);
  if (!o) {
    sp_results_free(r);
    return NULL;
  }
  o->r = r;
  return (PyObject *)o;
}

static void results_dealloc(ResultsObject *self) {
  sp_results_free(self->r);
  PyObject_Free(self);
}

static PyObject *py_open(PyObject *mod, PyObject *arg) {
  (void)mod;
  PyObject *bytes;
  if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
  sp_results *r = NULL;
  sp_status st = sp_results_open(PyBytes_AS_STRING(bytes), &r);
  Py_DECREF(bytes);
  if (st != SP_OK) return sp_py_raise(st, "cannot open the profile");
  return sp_py_results_wrap(r);
}

static PyObject *opt_str(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *i64_bytes(const int64_t *v, size_t n) {
  return PyBytes_FromStringAndSize((const char *)v, (Py_ssize_t)(n * sizeof *v));
}

#define SELF_R(o) (((ResultsObject *)(o))->r)

static PyObject *results_info(PyObject *self, PyObject *noargs) {
  (void)noargs;
  sp_results *r = SELF_R(self);
  return Py_BuildValue("{s:i,s:s,s:s,s:O,s:N,s:N,s:N,s:K,s:O,s:O,s:O}", "schema", sp_results_schema(r),
                       "format", sp_results_source_format(r), "layout", sp_results_layout(r), "has_events", sp_results_has_events(r) ? Py_True : Py_False,
                       "path", opt_str(sp_results_path(r)), "label", opt_str(sp_results_label(r)),
                       "display_label", opt_str(sp_results_display_label(r)), "num_events",
                       (unsigned long long)sp_results_num_events(r), "has_threads",
                       sp_results_has_threads(r) ? Py_True : Py_False, "has_tasks",
                       sp_results_has_tasks(r) ? Py_True : Py_False, "has_call_ids",
                       sp_results_has_call_ids(r) ? Py_True : Py_False);
}

static PyObject *metadata_value(const sp_metadata_entry *e) {
  switch (e->kind) {
  case SP_VALUE_INT: return PyLong_FromLongLong(e->i);
  case SP_VALUE_FLOAT: return PyFloat_FromDouble(e->f);
  case SP_VALUE_STRING: return opt_str(e->s ? e->s : "");
  case SP_VALUE_BOOL: return PyBool_FromLong(e->i != 0);
  case SP_VALUE_INT_ARRAY:
  case SP_VALUE_FLOAT_ARRAY:
  case SP_VALUE_STRING_ARRAY: {
    PyObject *l = PyList_New((Py_ssize_t)e->n);
    for (size_t i = 0; l && i < e->n; i++) {
      PyObject *v = e->kind == SP_VALUE_INT_ARRAY     ? PyLong_FromLongLong(e->ints[i])
                    : e->kind == SP_VALUE_FLOAT_ARRAY ? PyFloat_FromDouble(e->floats[i])
                                                      : opt_str(e->strings[i] ? e->strings[i] : "");
      if (!v) {
        Py_CLEAR(l);
        break;
      }
      PyList_SET_ITEM(l, (Py_ssize_t)i, v);
    }
    return l;
  }
  default: return opt_str(e->text ? e->text : "");
  }
}

static PyObject *results_metadata(PyObject *self, PyObject *noargs) {
  (void)noargs;
  sp_results *r = SELF_R(self);
  PyObject *d = PyDict_New();
  for (size_t i = 0, n = sp_results_num_metadata(r); d && i < n; i++) {
    const sp_metadata_entry *e = sp_results_metadata_at(r, i);
    PyObject *v = e ? metadata_value(e) : NULL;
    if (!v || PyDict_SetItemString(d, e->key, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *results_region_names(PyObject *self, PyObject *noargs) {
  (void)noargs;
  sp_results *r = SELF_R(self);
  size_t n = sp_results_num_regions(r);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *s = opt_str(sp_results_region_name(r, i));
    if (!s) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, s);
  }
  return l;
}

static PyObject *results_ranks(PyObject *self, PyObject *noargs) {
  (void)noargs;
  sp_results *r = SELF_R(self);
  size_t n = sp_results_num_ranks(r);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) PyList_SET_ITEM(l, (Py_ssize_t)i, PyLong_FromLongLong(sp_results_rank(r, i)));
  return l;
}

static int region_arg(sp_results *r, PyObject *arg, size_t *out) {
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred()) return -1;
  if (i < 0 || (size_t)i >= sp_results_num_regions(r)) {
    PyErr_Format(PyExc_IndexError, "region index %zd out of range", i);
    return -1;
  }
  *out = (size_t)i;
  return 0;
}

/* region_info(i) -> dict: name, ranks, source file/line/text, tags (JSON). */
static PyObject *results_region_info(PyObject *self, PyObject *arg) {
  sp_results *r = SELF_R(self);
  size_t i;
  if (region_arg(r, arg, &i) < 0) return NULL;
  const char *file = "", *text = "";
  int64_t line = -1;
  if (sp_results_region_source(r, i, &file, &line, &text) != SP_OK) {
    file = text = "";
    line = -1;
  }
  return Py_BuildValue("{s:N,s:n,s:N,s:L,s:N,s:s}", "name", opt_str(sp_results_region_name(r, i)), "num_ranks",
                       (Py_ssize_t)sp_results_region_num_ranks(r, i), "source_file", opt_str(file),
                       "source_lineno", (long long)line, "source_text", opt_str(text), "tags",
                       sp_results_region_tags(r, i));
}

/* A filter from optional include/exclude lists and a rank spec. */
static sp_filter *make_filter(PyObject *include, PyObject *exclude, PyObject *ranks) {
  sp_filter *f = NULL;
  sp_status st = sp_filter_create(&f);
  if (st != SP_OK) {
    sp_py_raise(st, "out of memory");
    return NULL;
  }
  PyObject *lists[2] = {include, exclude};
  for (int k = 0; k < 2; k++) {
    if (!lists[k] || lists[k] == Py_None) continue;
    PyObject *seq = PySequence_Fast(lists[k], "patterns must be a list of strings");
    if (!seq) goto fail;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
      const char *pat = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, j));
      if (!pat || (st = (k ? sp_filter_exclude : sp_filter_include)(f, pat)) != SP_OK) {
        Py_DECREF(seq);
        if (pat) sp_py_raise(st, "bad pattern");
        goto fail;
      }
    }
    Py_DECREF(seq);
  }
  if (ranks && ranks != Py_None) {
    const char *spec = PyUnicode_AsUTF8(ranks);
    if (!spec) goto fail;
    if ((st = sp_filter_ranks(f, spec)) != SP_OK) {
      sp_py_raise(st, "bad rank selection");
      goto fail;
    }
  }
  return f;
fail:
  sp_filter_free(f);
  return NULL;
}

static PyObject *stats_dict(const sp_region_stats *s) {
  PyObject *d = Py_BuildValue(
      "{s:K,s:n,s:L,s:L,s:L,s:L,s:L,s:d,s:d,s:L,s:L,s:d,s:d}", "count", (unsigned long long)s->count, "ranks",
      (Py_ssize_t)s->ranks, "total_ns", (long long)s->total_ns, "min_ns", (long long)s->min_ns, "max_ns",
      (long long)s->max_ns, "first_ns", (long long)s->first_ns, "last_ns", (long long)s->last_ns, "mean_ns",
      s->mean_ns, "std_ns", s->std_ns, "first_start_ns", (long long)s->first_start_ns, "last_end_ns",
      (long long)s->last_end_ns, "imbalance", s->imbalance, "excess_ns", s->excess_ns);
  if (!d) return NULL;
  PyObject *v;
  if (s->has_percentiles) {
    if ((v = PyFloat_FromDouble(s->p50_ns)) && PyDict_SetItemString(d, "p50_ns", v) == 0) Py_DECREF(v);
    if ((v = PyFloat_FromDouble(s->p95_ns)) && PyDict_SetItemString(d, "p95_ns", v) == 0) Py_DECREF(v);
    if ((v = PyFloat_FromDouble(s->p99_ns)) && PyDict_SetItemString(d, "p99_ns", v) == 0) Py_DECREF(v);
  }
  if (s->has_own && (v = PyLong_FromLongLong(s->own_ns)) && PyDict_SetItemString(d, "own_ns", v) == 0)
    Py_DECREF(v);
  if (PyErr_Occurred()) Py_CLEAR(d);
  return d;
}

/* region_stats(i, rank=None, ranks=None, percentiles=False, own=False) */
static PyObject *results_region_stats(PyObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"region", "rank", "ranks", "percentiles", "own", NULL};
  PyObject *region, *rank = Py_None, *ranks = Py_None;
  int pct = 0, own = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOpp:region_stats", kwlist, &region, &rank, &ranks, &pct, &own))
    return NULL;
  sp_results *r = SELF_R(self);
  size_t i;
  if (region_arg(r, region, &i) < 0) return NULL;
  unsigned flags = (pct ? SP_STATS_PERCENTILES : 0u) | (own ? SP_STATS_OWN : 0u);
  sp_region_stats s;
  sp_status st;
  if (rank != Py_None) {
    long long rk = PyLong_AsLongLong(rank);
    if (rk == -1 && PyErr_Occurred()) return NULL;
    st = sp_results_region_rank_stats(r, i, rk, flags, &s);
  } else {
    sp_filter *f = make_filter(NULL, NULL, ranks);
    if (!f) return NULL;
    st = sp_results_region_stats(r, i, f, flags, &s);
    sp_filter_free(f);
  }
  if (st != SP_OK) return sp_py_raise(st, "cannot compute statistics");
  return stats_dict(&s);
}

/* events(i, rank) -> dict of int64 bytes: start_ns, end_ns, call_ids,
 * parent_ids, thread_ids (-1 where not recorded). */
static PyObject *results_events(PyObject *self, PyObject *args) {
  PyObject *region;
  long long rank;
  if (!PyArg_ParseTuple(args, "OL:events", &region, &rank)) return NULL;
  sp_results *r = SELF_R(self);
  size_t i;
  if (region_arg(r, region, &i) < 0) return NULL;
  sp_events e;
  memset(&e, 0, sizeof e);
  sp_status st = sp_results_events(r, i, rank, &e);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the events");
  PyObject *d = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N}", "start_ns", i64_bytes(e.start_ns, e.count), "end_ns",
                              i64_bytes(e.end_ns, e.count), "call_ids", i64_bytes(e.call_ids, e.count),
                              "parent_ids", i64_bytes(e.parent_ids, e.count), "thread_ids",
                              i64_bytes(e.thread_ids, e.count));
  sp_events_free(&e);
  return d;
}

/* The row of region i on rank and its stored calls (n = 0 when the rank
 * lacks the region). */
static size_t find_row(const sp_results *r, size_t i, long long rank, size_t *n) {
  size_t nrows = sp_results_num_rows(r);
  sp_row_info info = {0};
  for (size_t k = 0; k < nrows; k++)
    if (sp_results_row_info(r, k, &info) == SP_OK && info.region == i && info.rank == rank) {
      *n = (size_t)info.count;
      return k;
    }
  *n = 0;
  return nrows;
}

/* gpu(i, rank) -> (per-call device ns as int64 bytes in the events' order,
 * -1 where a call has none; calls with one; their total ns), or None when
 * the file records no device time. rank -1: the per-call column is None and
 * the totals are over every rank. */
static PyObject *results_gpu(PyObject *self, PyObject *args) {
  PyObject *region;
  long long rank;
  if (!PyArg_ParseTuple(args, "OL:gpu", &region, &rank)) return NULL;
  sp_results *r = SELF_R(self);
  size_t i;
  if (region_arg(r, region, &i) < 0) return NULL;
  if (!sp_results_has_gpu(r)) Py_RETURN_NONE;
  uint64_t count = 0;
  int64_t total = 0;
  sp_status st = rank < 0 ? sp_results_region_gpu(r, i, NULL, &count, &total)
                          : sp_results_region_rank_gpu(r, i, rank, &count, &total);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the device times");
  if (rank < 0) return Py_BuildValue("(OKL)", Py_None, (unsigned long long)count, (long long)total);
  size_t n = 0, row = find_row(r, i, rank, &n);
  int64_t *ns = malloc((n ? n : 1) * sizeof *ns);
  if (!ns) return PyErr_NoMemory();
  st = n ? sp_results_row_read_gpu(r, row, 0, n, ns) : SP_OK;
  PyObject *out = st == SP_OK ? Py_BuildValue("(NKL)", i64_bytes(ns, n), (unsigned long long)count, (long long)total)
                              : sp_py_raise(st, "cannot read the device times");
  free(ns);
  return out;
}

/* tasks(i, rank) -> (task ids, await ns) of the region's calls on rank, as
 * int64 bytes in the events' order (-1 where the file has no such column),
 * or None when the file records neither (no track_async). */
static PyObject *results_tasks(PyObject *self, PyObject *args) {
  PyObject *region;
  long long rank;
  if (!PyArg_ParseTuple(args, "OL:tasks", &region, &rank)) return NULL;
  sp_results *r = SELF_R(self);
  size_t i;
  if (region_arg(r, region, &i) < 0) return NULL;
  if (!sp_results_has_tasks(r) && !sp_results_has_await(r)) Py_RETURN_NONE;
  size_t n = 0, row = find_row(r, i, rank, &n);
  int64_t *task = malloc((n ? n : 1) * sizeof *task), *await = malloc((n ? n : 1) * sizeof *await);
  PyObject *out = NULL;
  if (!task || !await) {
    out = PyErr_NoMemory();
  } else {
    sp_status st = n ? sp_results_row_read_tasks(r, row, 0, n, task, await) : SP_OK;
    out = st == SP_OK ? Py_BuildValue("(NN)", i64_bytes(task, n), i64_bytes(await, n))
                      : sp_py_raise(st, "cannot read the task ids and await times");
  }
  free(task);
  free(await);
  return out;
}

/* json_profile() -> bytes: the profile as upstream's JSON v1 document
 * (sp_write_json_profile, what `scope-profiler export json` writes). */
static PyObject *results_json_profile(PyObject *self, PyObject *noargs) {
  (void)noargs;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return PyErr_NoMemory();
  sp_status st = sp_write_json_profile(SELF_R(self), NULL, f);
  fclose(f);
  PyObject *out = st == SP_OK ? PyBytes_FromStringAndSize(buf ? buf : "", (Py_ssize_t)len)
                              : sp_py_raise(st, "cannot write the JSON profile");
  free(buf);
  return out;
}

/* call_stack(rank, include=None, exclude=None) -> dict of column bytes
 * (start_ns, end_ns, parent, thread, task: int64; region, depth: uint32)
 * and the number of overlapping calls. */
static PyObject *results_call_stack(PyObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"rank", "include", "exclude", NULL};
  long long rank;
  PyObject *include = Py_None, *exclude = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "L|OO:call_stack", kwlist, &rank, &include, &exclude)) return NULL;
  sp_filter *f = make_filter(include, exclude, NULL);
  if (!f) return NULL;
  sp_call *calls = NULL;
  size_t n = 0, overlaps = 0;
  sp_status st = sp_results_call_stack(SELF_R(self), rank, f, &calls, &n, &overlaps);
  sp_filter_free(f);
  if (st != SP_OK) return sp_py_raise(st, "cannot build the call stack");
  int64_t *cols[5];
  uint32_t *reg = malloc((n ? n : 1) * sizeof *reg), *dep = malloc((n ? n : 1) * sizeof *dep);
  for (int k = 0; k < 5; k++) cols[k] = malloc((n ? n : 1) * sizeof(int64_t));
  PyObject *d = NULL;
  if (reg && dep && cols[0] && cols[1] && cols[2] && cols[3] && cols[4]) {
    for (size_t i = 0; i < n; i++) {
      cols[0][i] = calls[i].start_ns;
      cols[1][i] = calls[i].end_ns;
      cols[2][i] = calls[i].parent;
      cols[3][i] = calls[i].thread;
      cols[4][i] = calls[i].task;
      reg[i] = calls[i].region;
      dep[i] = calls[i].depth;
    }
    d = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:y#,s:y#,s:n}", "start_ns", i64_bytes(cols[0], n), "end_ns",
                      i64_bytes(cols[1], n), "parent", i64_bytes(cols[2], n), "thread", i64_bytes(cols[3], n),
                      "task", i64_bytes(cols[4], n), "region", (const char *)reg, (Py_ssize_t)(n * sizeof *reg),
                      "depth", (const char *)dep, (Py_ssize_t)(n * sizeof *dep), "overlaps", (Py_ssize_t)overlaps);
  } else {
    PyErr_NoMemory();
  }
  for (int k = 0; k < 5; k++) free(cols[k]);
  free(reg);
  free(dep);
  free(calls);
  return d;
}

/* call_tree(ranks=None, include=None, exclude=None) -> list of
 * (region, parent, count, total_ns, children_ns). */
static PyObject *results_call_tree(PyObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"ranks", "include", "exclude", NULL};
  PyObject *ranks = Py_None, *include = Py_None, *exclude = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOO:call_tree", kwlist, &ranks, &include, &exclude)) return NULL;
  sp_filter *f = make_filter(include, exclude, ranks);
  if (!f) return NULL;
  sp_tree_node *nodes = NULL;
  size_t n = 0;
  sp_status st = sp_results_call_tree(SELF_R(self), f, &nodes, &n);
  sp_filter_free(f);
  if (st != SP_OK) return sp_py_raise(st, "cannot build the call tree");
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *t = Py_BuildValue("(ILKLL)", (unsigned)nodes[i].region, (long long)nodes[i].parent,
                                (unsigned long long)nodes[i].count, (long long)nodes[i].total_ns,
                                (long long)nodes[i].children_ns);
    if (!t) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  free(nodes);
  return l;
}

static PyObject *results_threads(PyObject *self, PyObject *arg) {
  long long rank = PyLong_AsLongLong(arg);
  if (rank == -1 && PyErr_Occurred()) return NULL;
  int64_t *ids = NULL;
  size_t n = 0;
  sp_status st = sp_results_threads(SELF_R(self), rank, &ids, &n);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the thread ids");
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) PyList_SET_ITEM(l, (Py_ssize_t)i, PyLong_FromLongLong(ids[i]));
  free(ids);
  return l;
}

static PyObject *results_min_start(PyObject *self, PyObject *noargs) {
  (void)noargs;
  int64_t v = 0;
  sp_status st = sp_results_min_start(SELF_R(self), &v);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the summary");
  return PyLong_FromLongLong(v);
}

/* thread_table() -> list of dicts (upstream's fields; times in ns relative
 * to the rank's start, -1 unknown), [] when the file has none. */
static PyObject *results_thread_table(PyObject *self, PyObject *noargs) {
  (void)noargs;
  const sp_thread_info *rows = NULL;
  size_t n = 0;
  sp_status st = sp_results_thread_table(SELF_R(self), &rows, &n);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the thread table");
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    const sp_thread_info *t = &rows[i];
    PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:O,s:L,s:L,s:L,s:L,s:N}", "rank", (long long)t->rank, "index",
                                (long long)t->index, "ident", (long long)t->ident, "native_id",
                                (long long)t->native_id, "daemon", t->daemon ? Py_True : Py_False, "start_ns",
                                (long long)t->start_ns, "end_ns", (long long)t->end_ns, "cpu_ns",
                                (long long)t->cpu_ns, "omp_thread", (long long)t->omp_thread, "name",
                                opt_str(t->name ? t->name : ""));
    if (!d) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  return l;
}

/* task_table() -> list of dicts, [] when the file has none. */
static PyObject *results_task_table(PyObject *self, PyObject *noargs) {
  (void)noargs;
  const sp_task_info *rows = NULL;
  size_t n = 0;
  sp_status st = sp_results_task_table(SELF_R(self), &rows, &n);
  if (st != SP_OK) return sp_py_raise(st, "cannot read the task table");
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    const sp_task_info *t = &rows[i];
    PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:N,s:N,s:N}", "rank", (long long)t->rank,
                                "index", (long long)t->index, "thread_index", (long long)t->thread_index,
                                "created_ns", (long long)t->created_ns, "done_ns", (long long)t->done_ns, "steps",
                                (long long)t->steps, "running_ns", (long long)t->running_ns, "suspended_ns",
                                (long long)t->suspended_ns, "switch_id", (long long)t->switch_id, "kind",
                                opt_str(t->kind ? t->kind : ""), "name", opt_str(t->name ? t->name : ""),
                                "coro_name", opt_str(t->coro_name ? t->coro_name : ""));
    if (!d) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  return l;
}

static PyMethodDef results_methods[] = {
    {"thread_table", results_thread_table, METH_NOARGS, "The thread table's rows as dicts."},
    {"task_table", results_task_table, METH_NOARGS, "The task table's rows as dicts."},
    {"info", results_info, METH_NOARGS, "Schema, layout, label and what the file records."},
    {"metadata", results_metadata, METH_NOARGS, "The /metadata attributes as a dict."},
    {"region_names", results_region_names, METH_NOARGS, "Region names in table order."},
    {"ranks", results_ranks, METH_NOARGS, "Ranks that recorded something, ascending."},
    {"region_info", results_region_info, METH_O, "Name, rank count, source and tags of region i."},
    {"region_stats", (PyCFunction)(void (*)(void))results_region_stats, METH_VARARGS | METH_KEYWORDS,
     "region_stats(i, rank=None, ranks=None, percentiles=False, own=False) -> dict (ns)"},
    {"events", results_events, METH_VARARGS, "events(i, rank) -> dict of int64 bytes columns"},
    {"gpu", results_gpu, METH_VARARGS, "gpu(i, rank) -> (per-call ns bytes or None, count, total_ns) or None"},
    {"tasks", results_tasks, METH_VARARGS, "tasks(i, rank) -> (task id bytes, await ns bytes) or None"},
    {"json_profile", results_json_profile, METH_NOARGS, "The profile as a JSON v1 document (bytes)."},
    {"call_stack", (PyCFunction)(void (*)(void))results_call_stack, METH_VARARGS | METH_KEYWORDS,
     "call_stack(rank, include=None, exclude=None) -> dict of columns"},
    {"call_tree", (PyCFunction)(void (*)(void))results_call_tree, METH_VARARGS | METH_KEYWORDS,
     "call_tree(ranks=None, include=None, exclude=None) -> [(region, parent, count, total_ns, children_ns)]"},
    {"threads", results_threads, METH_O, "Thread ids that recorded calls on a rank."},
    {"min_start", results_min_start, METH_NOARGS, "Earliest start over all regions (ns)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ResultsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope_profiler._core.Results",
    .tp_basicsize = sizeof(ResultsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A profile opened by the C reader.",
    .tp_dealloc = (destructor)results_dealloc,
    .tp_methods = results_methods,
};

static PyMethodDef results_module_methods[] = {
    {"open", py_open, METH_O, "open(path) -> Results (schema 3, 2 or upstream's hierarchical layout)"},
    {NULL, NULL, 0, NULL},
};

int sp_py_results_init(PyObject *module) {
  if (PyType_Ready(&ResultsType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Results", (PyObject *)&ResultsType) < 0) return -1;
  return PyModule_AddFunctions(module, results_module_methods);
}
