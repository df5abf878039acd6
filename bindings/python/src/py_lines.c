/* py_lines.c - use_line_profiler for Python: the lines of profiled Python
 * functions timed by a C trace function, the way line_profiler times them,
 * and handed to the library at finalize as upstream's line-profile records
 * (sp_manager_add_line_records), so they land in rank<N>/line_profile/<i>
 * beside the library's natively sampled records and print, inspect and
 * report like them.
 *
 * What is timed (upstream's rule): the functions registered on a region,
 * by the decorator (@profile registers the function it wraps) or by
 * profile_region(name, functions=[f, ...]), while that region is open on
 * the thread through the package (a decorated call, `with region:`). A
 * line's hit is counted when it starts; its time runs until the next line
 * event of the same frame (or its return), so a line that calls a function
 * includes the callee, as in line_profiler (the native sampler's times are
 * self time). A function registered on several regions counts for the
 * innermost of them open on the thread. Lines of the `with` block itself
 * are not timed (upstream's context-manager rule), nor frames that were
 * already running when the region opened.
 *
 * How: the managers whose runs are timed are listed (_core.lines_start;
 * records are per manager, region and code object). While the first such
 * region opens on a thread the trace function is installed
 * there (PyEval_SetTrace, chaining the one that was set: a debugger's,
 * coverage's), and removed when the last one closes, so code outside
 * profiled regions runs untraced. A call event looks the frame's code up in
 * a pointer-keyed table (no Python-level lookup); a line or return event
 * only compares the frame with the innermost timed frame of the thread. All
 * of it runs under the GIL (the trace function is called with it held);
 * per-thread state is the thread's own (a thread-local pointer).
 */
#include "py_core.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "frameobject.h"

int sp_py_lines_on; /* a timer was started in this process */

/* One (manager, region, code) record: hits and ns per line from the
 * code's first. */
typedef struct rec {
  struct rec *next_same_code;
  PyCodeObject *code; /* strong */
  sp_manager *m;
  sp_region region;
  PyObject *region_name; /* strong */
  int first;
  int cap;
  int64_t *hits, *ns;
} Rec;

typedef struct {
  PyFrameObject *frame; /* identity only: the frame lives until its return event */
  Rec *rec;
  int line; /* the line running since t, 0 before the first */
  int64_t t;
} Frame;

typedef struct {
  sp_manager *m;
  sp_region id;
} Open;

typedef struct {
  unsigned gen;         /* the records the frames point into */
  Open *open;           /* regions opened through the package, innermost last */
  size_t nopen, capopen;
  Frame *frames;        /* timed frames, innermost last */
  size_t nframes, capframes;
  int installed;
  Py_tracefunc prev;
  PyObject *prevobj;
} Thread;

static struct {
  sp_manager **ms; /* the managers whose runs are timed */
  size_t nms, capms;
  unsigned gen;    /* bumped whenever records are freed */
  Rec **slots;   /* code pointer -> chain of records, open addressing */
  size_t mask, used;
  Rec **all;
  size_t nall, capall;
} T;

static __thread Thread *self;
static pthread_key_t thread_key;
static int thread_key_made;

static void free_thread(void *p) {
  Thread *t = p;
  /* At the thread's exit, without the GIL: only the thread's own memory
   * (prevobj's reference is dropped with the GIL in uninstall). */
  PyMem_RawFree(t->open);
  PyMem_RawFree(t->frames);
  PyMem_RawFree(t);
}

static Thread *thread_state(void) {
  if (self) return self;
  Thread *t = PyMem_RawCalloc(1, sizeof *t);
  if (!t) return NULL;
  self = t;
  if (thread_key_made) pthread_setspecific(thread_key, t);
  return t;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t hash_ptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x;
}

/* The chain of records of `code`, or NULL. */
static Rec *lookup(PyCodeObject *code) {
  if (!T.slots) return NULL;
  for (size_t i = hash_ptr(code) & T.mask;; i = (i + 1) & T.mask) {
    Rec *r = T.slots[i];
    if (!r) return NULL;
    if (r->code == code) return r;
  }
}

static int table_put(Rec *head) {
  if (!T.slots || (T.used + 1) * 4 > (T.mask + 1) * 3) {
    size_t n = T.slots ? (T.mask + 1) * 2 : 64;
    Rec **s = PyMem_Calloc(n, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; T.slots && i <= T.mask; i++) {
      if (!T.slots[i]) continue;
      size_t k = hash_ptr(T.slots[i]->code) & (n - 1);
      while (s[k]) k = (k + 1) & (n - 1);
      s[k] = T.slots[i];
    }
    PyMem_Free(T.slots);
    T.slots = s;
    T.mask = n - 1;
  }
  size_t i = hash_ptr(head->code) & T.mask;
  while (T.slots[i] && T.slots[i]->code != head->code) i = (i + 1) & T.mask;
  if (!T.slots[i]) T.used++;
  T.slots[i] = head;
  return 0;
}

/* The code object behind a registered callable: the function itself, a
 * bound method's function, or what a wrapper's __wrapped__ names (our own
 * decorated functions, functools.wraps); NULL (no error) when none. */
static PyCodeObject *code_of(PyObject *f) {
  Py_INCREF(f);
  for (int depth = 0; depth < 16 && f; depth++) {
    if (PyFunction_Check(f)) {
      PyObject *c = PyFunction_GET_CODE(f);
      Py_INCREF(c);
      Py_DECREF(f);
      return (PyCodeObject *)c;
    }
    PyObject *next = NULL;
    if (PyMethod_Check(f)) next = Py_NewRef(PyMethod_GET_FUNCTION(f));
    else if (!(next = PyObject_GetAttrString(f, "__wrapped__"))) PyErr_Clear();
    Py_DECREF(f);
    f = next;
  }
  Py_XDECREF(f);
  return NULL;
}

static int timed(const sp_manager *m) {
  for (size_t i = 0; i < T.nms; i++)
    if (T.ms[i] == m) return 1;
  return 0;
}

/* Register `code` for `region` of m (idempotent). */
static int add_rec(PyCodeObject *code, sp_manager *m, sp_region region, PyObject *region_name) {
  Rec *head = lookup(code);
  for (Rec *r = head; r; r = r->next_same_code)
    if (r->m == m && r->region == region) return 0;
  if (T.nall == T.capall) {
    size_t ncap = T.capall ? T.capall * 2 : 16;
    Rec **n = PyMem_Realloc(T.all, ncap * sizeof *n);
    if (!n) return -1;
    T.all = n;
    T.capall = ncap;
  }
  Rec *r = PyMem_Calloc(1, sizeof *r);
  if (!r) return -1;
  r->code = (PyCodeObject *)Py_NewRef((PyObject *)code);
  r->m = m;
  r->region = region;
  r->region_name = Py_NewRef(region_name);
  r->first = code->co_firstlineno;
  r->next_same_code = head;
  if (table_put(r) < 0) {
    Py_DECREF(r->code);
    Py_DECREF(r->region_name);
    PyMem_Free(r);
    return -1;
  }
  T.all[T.nall++] = r;
  return 0;
}

/* The functions registered on a region since the last look. */
static void sync_region(PyObject *region, sp_manager *m, sp_region id) {
  PyObject *functions, *name;
  sp_py_lines_sync *sync;
  if (sp_py_region_lines(region, &functions, &name, &sync) < 0) {
    PyErr_Clear();
    return;
  }
  if (sync->gen != T.gen) {
    sync->gen = T.gen;
    sync->synced = 0;
  }
  Py_ssize_t n = functions ? PyList_GET_SIZE(functions) : 0;
  for (; sync->synced < n; sync->synced++) {
    PyCodeObject *code = code_of(PyList_GET_ITEM(functions, sync->synced));
    if (!code) continue;
    if (add_rec(code, m, id, name) < 0) PyErr_Clear(); /* out of memory: that function is not timed */
    Py_DECREF(code);
  }
}

static int grow(void **a, size_t *cap, size_t size) {
  size_t ncap = *cap ? *cap * 2 : 16;
  void *n = PyMem_RawRealloc(*a, ncap * size);
  if (!n) return -1;
  *a = n;
  *cap = ncap;
  return 0;
}

/* Time since the frame's running line started goes to that line. */
static void close_line(Frame *f, int64_t t) {
  Rec *r = f->rec;
  int k = f->line - r->first;
  if (f->line > 0 && k >= 0 && k < r->cap) r->ns[k] += t - f->t;
}

static int start_line(Frame *f, int line, int64_t t) {
  Rec *r = f->rec;
  int k = line - r->first;
  if (k < 0) return 0; /* a line before the function's first: not its own */
  if (k >= r->cap) {
    int ncap = r->cap ? r->cap : 16;
    while (ncap <= k) ncap *= 2;
    int64_t *h = PyMem_Realloc(r->hits, (size_t)ncap * sizeof *h);
    if (h) r->hits = h;
    int64_t *ns = h ? PyMem_Realloc(r->ns, (size_t)ncap * sizeof *ns) : NULL;
    if (!h || !ns) return -1;
    r->ns = ns;
    memset(r->hits + r->cap, 0, (size_t)(ncap - r->cap) * sizeof *h);
    memset(r->ns + r->cap, 0, (size_t)(ncap - r->cap) * sizeof *ns);
    r->cap = ncap;
  }
  r->hits[k]++;
  f->line = line;
  f->t = t;
  return 0;
}

/* The record of `code` for the innermost open region of the thread that
 * registered it, or NULL. */
static Rec *rec_for(Thread *t, PyCodeObject *code) {
  Rec *head = lookup(code);
  if (!head) return NULL;
  for (size_t i = t->nopen; i-- > 0;)
    for (Rec *r = head; r; r = r->next_same_code)
      if (r->region == t->open[i].id && r->m == t->open[i].m) return r;
  return NULL;
}

static int trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
  Thread *t = self;
  if (t && t->prev && t->prev(t->prevobj, frame, what, arg) < 0) return -1;
  (void)obj;
  if (!t) return 0;
  if (t->gen != T.gen) { /* records were freed: the frames pointing into them go */
    t->gen = T.gen;
    t->nframes = 0;
  }
  if (what == PyTrace_LINE) {
    if (!t->nframes || t->frames[t->nframes - 1].frame != frame) return 0;
    Frame *f = &t->frames[t->nframes - 1];
    int64_t now = now_ns();
    close_line(f, now);
    if (start_line(f, PyFrame_GetLineNumber(frame), now) < 0) PyErr_Clear();
  } else if (what == PyTrace_CALL) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    Rec *r = rec_for(t, code);
    Py_DECREF(code);
    if (!r) return 0;
    if (t->nframes == t->capframes && grow((void **)&t->frames, &t->capframes, sizeof *t->frames) < 0) return 0;
    t->frames[t->nframes++] = (Frame){frame, r, 0, now_ns()};
  } else if (what == PyTrace_RETURN) {
    if (!t->nframes || t->frames[t->nframes - 1].frame != frame) return 0;
    close_line(&t->frames[--t->nframes], now_ns());
  }
  return 0;
}

static void uninstall(Thread *t) {
  if (!t->installed) return;
  PyObject *prevobj = t->prevobj;
  Py_tracefunc prev = t->prev;
  t->prev = NULL;
  t->prevobj = NULL;
  t->installed = 0;
  t->nframes = 0;
  PyEval_SetTrace(prev, prevobj);
  Py_XDECREF(prevobj);
}

void sp_py_lines_enter(PyObject *region, sp_manager *m, sp_region id) {
  if (!timed(m)) return;
  Thread *t = thread_state();
  if (!t) return;
  if (t->gen != T.gen) { /* records were freed: the frames pointing into them go */
    t->gen = T.gen;
    t->nframes = 0;
  }
  sync_region(region, m, id);
  if (t->nopen == t->capopen && grow((void **)&t->open, &t->capopen, sizeof *t->open) < 0) return;
  t->open[t->nopen++] = (Open){m, id};
  if (!t->installed) {
    PyThreadState *ts = PyThreadState_Get();
    t->prev = ts->c_tracefunc == trace ? NULL : ts->c_tracefunc;
    t->prevobj = t->prev ? Py_XNewRef(ts->c_traceobj) : NULL;
    t->installed = 1;
    PyEval_SetTrace(trace, NULL);
  }
}

void sp_py_lines_exit(sp_manager *m, sp_region id) {
  Thread *t = self;
  if (!t || !t->nopen) return;
  /* Regions close innermost first; one that closes out of turn is dropped
   * wherever it is (the library counts the unmatched end). Those of a
   * manager no longer timed still close here, so the trace function goes
   * when the last of them does. */
  size_t i = t->nopen;
  while (i > 0 && !(t->open[i - 1].id == id && t->open[i - 1].m == m)) i--;
  if (!i) return;
  memmove(&t->open[i - 1], &t->open[i], (t->nopen - i) * sizeof *t->open);
  t->nopen--;
  if (!t->nopen) uninstall(t);
}

/* Free the records of m (of every manager when NULL) and rebuild the
 * table from the others. */
static void drop_records(const sp_manager *m) {
  size_t keep = 0;
  for (size_t i = 0; i < T.nall; i++) {
    Rec *r = T.all[i];
    if (m && r->m != m) {
      T.all[keep++] = r;
      continue;
    }
    Py_DECREF(r->code);
    Py_DECREF(r->region_name);
    PyMem_Free(r->hits);
    PyMem_Free(r->ns);
    PyMem_Free(r);
  }
  T.nall = keep;
  PyMem_Free(T.slots);
  T.slots = NULL;
  T.used = T.mask = 0;
  T.gen++; /* frames may point at the freed ones */
  for (size_t i = 0; i < T.nall; i++) { /* chains rebuilt, newest first as add_rec links them */
    Rec *r = T.all[i];
    r->next_same_code = lookup(r->code);
    if (table_put(r) < 0) r->next_same_code = NULL; /* out of memory: untimed until re-registered */
  }
}

/* lines_start(manager): time the profiled functions of manager's run
 * (again from nothing when it was timed already). */
static PyObject *py_lines_start(PyObject *mod, PyObject *manager) {
  (void)mod;
  sp_manager *m = sp_py_manager_ptr(manager);
  if (!m) return NULL;
  if (!thread_key_made) {
    if (pthread_key_create(&thread_key, free_thread) != 0)
      return PyErr_Format(sp_py_error, "no thread-specific key left for the line timer");
    thread_key_made = 1;
  }
  if (timed(m)) {
    drop_records(m);
  } else {
    if (T.nms == T.capms) {
      size_t ncap = T.capms ? T.capms * 2 : 4;
      sp_manager **n = PyMem_Realloc(T.ms, ncap * sizeof *n);
      if (!n) return PyErr_NoMemory();
      T.ms = n;
      T.capms = ncap;
    }
    T.ms[T.nms++] = m;
  }
  sp_py_lines_on = 1;
  Py_RETURN_NONE;
}

static void stop(sp_manager *m) {
  size_t k = 0;
  while (k < T.nms && T.ms[k] != m) k++;
  if (k == T.nms) return;
  T.ms[k] = T.ms[--T.nms];
  /* sp_py_lines_on stays: threads still inside timed regions remove their
   * trace function when those close. */
  drop_records(m);
}

void sp_py_lines_forget(sp_manager *m) { stop(m); }

/* lines_stop(manager): no more timing for it; what was not flushed is dropped. */
static PyObject *py_lines_stop(PyObject *mod, PyObject *manager) {
  (void)mod;
  sp_manager *m = sp_py_manager_ptr(manager);
  if (!m) return NULL;
  stop(m);
  Py_RETURN_NONE;
}

/* lines_flush(manager) -> int: the records with timed lines handed to the
 * manager's run (for its next finalize), counters reset; the count. */
static PyObject *py_lines_flush(PyObject *mod, PyObject *manager) {
  (void)mod;
  sp_manager *m = sp_py_manager_ptr(manager);
  if (!m) return NULL;
  if (!timed(m)) return PyLong_FromLong(0);
  size_t nrec = 0, total = 0;
  for (size_t i = 0; i < T.nall; i++)
    for (int k = 0; T.all[i]->m == m && k < T.all[i]->cap; k++) total += T.all[i]->hits[k] > 0;
  sp_line_profile *recs = PyMem_Calloc(T.nall ? T.nall : 1, sizeof *recs);
  int64_t *lines = PyMem_Malloc((total ? total : 1) * sizeof *lines);
  int64_t *hits = PyMem_Malloc((total ? total : 1) * sizeof *hits);
  double *times = PyMem_Malloc((total ? total : 1) * sizeof *times);
  PyObject *keep = PyList_New(0); /* the UTF-8 strings' owners */
  PyObject *out = NULL;
  if (!recs || !lines || !hits || !times || !keep) {
    PyErr_NoMemory();
    goto done;
  }
  size_t row = 0;
  for (size_t i = 0; i < T.nall; i++) {
    Rec *r = T.all[i];
    if (r->m != m) continue;
    size_t first_row = row;
    for (int k = 0; k < r->cap; k++) {
      if (r->hits[k] <= 0) continue;
      lines[row] = r->first + k;
      hits[row] = r->hits[k];
      times[row] = (double)r->ns[k];
      row++;
    }
    if (row == first_row) continue;
    PyObject *file = NULL;
    if (!PyUnicode_FSConverter(r->code->co_filename, &file) || PyList_Append(keep, file) < 0) {
      Py_XDECREF(file);
      goto done;
    }
    Py_DECREF(file);
    const char *region = PyUnicode_AsUTF8(r->region_name), *fn = PyUnicode_AsUTF8(r->code->co_qualname);
    if (!region || !fn) goto done;
    recs[nrec++] = (sp_line_profile){.region = region, .filename = PyBytes_AS_STRING(file), .function = fn,
                                     .first_lineno = r->first, .unit = 1e-9, .n = row - first_row,
                                     .line_numbers = lines + first_row, .hits = hits + first_row,
                                     .times = times + first_row};
  }
  sp_status st = sp_manager_add_line_records(m, recs, nrec);
  if (st != SP_OK) {
    sp_py_raise(st, "the timed Python lines could not be handed to the run");
    goto done;
  }
  for (size_t i = 0; i < T.nall; i++) {
    Rec *r = T.all[i];
    if (r->m == m && r->cap) {
      memset(r->hits, 0, (size_t)r->cap * sizeof *r->hits);
      memset(r->ns, 0, (size_t)r->cap * sizeof *r->ns);
    }
  }
  out = PyLong_FromSize_t(nrec);
done:
  Py_XDECREF(keep);
  PyMem_Free(recs);
  PyMem_Free(lines);
  PyMem_Free(hits);
  PyMem_Free(times);
  return out;
}

static PyMethodDef lines_methods[] = {
    {"lines_start", py_lines_start, METH_O,
     "lines_start(manager): time the lines of the Python functions registered on its regions."},
    {"lines_stop", py_lines_stop, METH_O,
     "lines_stop(manager): stop timing its lines (unflushed timings are dropped)."},
    {"lines_flush", py_lines_flush, METH_O,
     "lines_flush(manager) -> int: hand the timed lines to the manager's run as line-profile records."},
    {NULL, NULL, 0, NULL},
};

int sp_py_lines_init(PyObject *module) { return PyModule_AddFunctions(module, lines_methods); }
