/* memory.c - use_memray: the allocation capture of libscope_profiler_memory.so
 * (src/memory/, docs/memory-capture.md) driven by the profiler, and its
 * per-call columns.
 *
 * The interposer is found with one dlsym of its versioned API table, so the
 * library never links it: a program that did not preload or link it gets a
 * warning and a run without memory figures. At setup the probe starts the
 * capture into memory_profile_path (native_traces, follow_fork as set),
 * names every region in it, and at finalize stops it, so the capture file is
 * complete when finalize returns (upstream stops Memray at finalize too).
 *
 * Per call (a column probe on every region, outside the timestamps) it
 * reads the thread's counters the interposer keeps: bytes allocated and
 * freed and allocations while the call was open, and the peak of the
 * thread's live bytes above their level at the call's entry. The peak is
 * exact and nests: at entry the running peak is lowered to the current live
 * bytes (the old value saved in a scratch column), at exit the call's peak
 * is read and the caller's running peak becomes the larger of the two. The
 * thread's current region, which the interposer records with every event,
 * is set and restored the same way. Per region the columns fold into sums
 * (the peak into a maximum), written under rank<N>/memory with the memory
 * over time of the capture.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "config/config_internal.h"
#include "probes/ext.h"
#include "scope_profiler/memory.h"

enum { C_ALLOC, C_FREED, C_COUNT, C_PEAK, C_SAVED_PEAK, C_SAVED_REGION, NCOLS };

static const struct sp_ext_col memory_cols[NCOLS] = {
    {"mem_alloc_bytes", "bytes", 0, SP_EXT_FOLD_SUM, -1},
    {"mem_freed_bytes", "bytes", 0, SP_EXT_FOLD_SUM, -1},
    {"mem_alloc_count", "count", 0, SP_EXT_FOLD_SUM, -1},
    {"mem_peak_bytes", "bytes", 0, SP_EXT_FOLD_MAX, -1},
    {"mem_saved_peak", "bytes", SP_EXT_COL_SCRATCH, SP_EXT_FOLD_NONE, 0},
    {"mem_saved_region", "index", SP_EXT_COL_SCRATCH, SP_EXT_FOLD_NONE, 0},
};

struct memory_proc {
  const struct sp_memory_api *api;
  struct sp_manager *m;
  int owned;   /* this run started the capture (and stops it) */
  int stopped; /* stopped at a finalize: later calls record no figures */
  int idle;    /* a whole run after the stop: nothing to emit */
  sp_memory_stats stats;
  char *path;
  int64_t *tl_ns, *tl_bytes;
  size_t ntl;
};

static int memory_wanted(const struct sp_config *cfg) { return cfg->use_memray; }

static const struct sp_memory_api *find_api(void) {
  void *sym = dlsym(RTLD_DEFAULT, "sp_memory_api_v1");
  const struct sp_memory_api *api = sym;
  if (!api || api->abi != SP_MEMORY_ABI || api->size < sizeof *api) return NULL;
  return api;
}

/* A Python interpreter runs in this process (the Python package hooks its
 * allocators onto the capture through sp_memory_record_alloc). */
static int python_running(void) {
  void *sym = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  int (*initialized)(void);
  if (!sym) return 0;
  memcpy(&initialized, &sym, sizeof initialized);
  return initialized();
}

static sp_status memory_setup(struct sp_ext_setup *s, void **proc) {
  const struct sp_config *cfg = s->cfg;
  const struct sp_memory_api *api = find_api();
  if (!api) {
    sp_ext_warn(s->manager,
                "use_memray = true, but libscope_profiler_memory.so is not loaded in this process: "
                "preload it (LD_PRELOAD=<libdir>/libscope_profiler_memory.so) or link it "
                "(-lscope_profiler_memory); this run records no memory figures");
    s->decline = 1;
    return SP_OK;
  }
  const char *path = cfg->memory_profile_path_resolved;
  if (!api->active() && (!path || !*path)) {
    sp_ext_warn(s->manager, "use_memray = true, but there is no capture path (file_path is empty); "
                            "set memory_profile_path; this run records no memory figures");
    s->decline = 1;
    return SP_OK;
  }
  if (cfg->memray_trace_python_allocators && !python_running())
    sp_ext_warn(s->manager,
                "memray_trace_python_allocators = true: this process runs no Python interpreter, so "
                "there are no Python allocators to trace; C allocations are captured as usual");
  struct memory_proc *p = calloc(1, sizeof *p);
  if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "use_memray: out of memory");
  p->api = api;
  p->m = s->manager;
  if (!api->active()) {
    /* A capture the program started itself is shared, and stays the program's. */
    sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
    o.path = path;
    o.native_traces = cfg->memray_native_traces;
    o.follow_fork = cfg->memray_follow_fork;
    if (api->start(&o)) {
      sp_status st = sp__set_error(SP_ERR_IO, "use_memray: %s", api->error());
      free(p);
      return st;
    }
    p->owned = 1;
  }
  p->path = sp__strdup(path ? path : "");
  s->cols = memory_cols;
  s->ncols = NCOLS;
  *proc = p;
  return SP_OK;
}

/* Every region: its name goes into the capture, and its calls are taken
 * (an allocation is attributed to the innermost open call). */
static int memory_region_added(void *proc, uint32_t id, const struct sp_ext_region *r) {
  struct memory_proc *p = proc;
  char stack[256], *name = r->len < sizeof stack ? stack : malloc(r->len + 1);
  if (name) {
    memcpy(name, r->name, r->len);
    name[r->len] = '\0';
    p->api->region_name(id, name);
    if (name != stack) free(name);
  }
  return 1;
}

static int memory_attach(void *proc, const struct sp_ext_thread *th, void **thr) {
  struct memory_proc *p = proc;
  (void)th;
  *thr = p->api->thread_counters();
  return 0;
}

static void memory_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  struct sp_memory_counters *k = thr;
  int64_t *v = c->cols;
  v[C_ALLOC] = k->alloc_bytes;
  v[C_FREED] = k->freed_bytes;
  v[C_COUNT] = k->alloc_count;
  v[C_PEAK] = k->live_bytes;
  v[C_SAVED_PEAK] = k->peak_bytes;
  v[C_SAVED_REGION] = k->region;
  k->peak_bytes = k->live_bytes;
  k->region = c->region;
}

static void memory_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  struct memory_proc *p = proc;
  struct sp_memory_counters *k = thr;
  int64_t *v = c->cols;
  int64_t peak = k->peak_bytes;
  k->peak_bytes = v[C_SAVED_PEAK] > peak ? v[C_SAVED_PEAK] : peak;
  k->region = (uint32_t)v[C_SAVED_REGION];
  if (__atomic_load_n(&p->stopped, __ATOMIC_RELAXED)) {
    v[C_ALLOC] = v[C_FREED] = v[C_COUNT] = v[C_PEAK] = -1; /* no capture: not recorded */
    return;
  }
  v[C_ALLOC] = k->alloc_bytes - v[C_ALLOC];
  v[C_FREED] = k->freed_bytes - v[C_FREED];
  v[C_COUNT] = k->alloc_count - v[C_COUNT];
  v[C_PEAK] = peak - v[C_PEAK];
}

/* The capture ends with the run, so its file is complete when finalize
 * returns; its memory over time is kept for emit. */
static void memory_before_snapshot(void *proc) {
  struct memory_proc *p = proc;
  if (!p->owned || p->stopped) return;
  __atomic_store_n(&p->stopped, 1, __ATOMIC_RELAXED);
  if (p->api->stop(&p->stats)) sp_ext_warn(p->m, "use_memray: %s", p->api->error());
  free(p->tl_ns);
  free(p->tl_bytes);
  p->tl_ns = malloc(1024 * sizeof *p->tl_ns);
  p->tl_bytes = malloc(1024 * sizeof *p->tl_bytes);
  p->ntl = p->tl_ns && p->tl_bytes ? p->api->timeline(p->tl_ns, p->tl_bytes, 1024) : 0;
}

/* rank<N>/memory: per region (datasets of one row per region with calls)
 * the folded columns, and the capture's memory over time. */
static sp_status memory_emit(void *proc, struct sp_ext_emit *out) {
  struct memory_proc *p = proc;
  if (p->idle) return SP_OK;
  const struct sp_ext_totals *t = sp_ext_totals(out);
  struct sp_ext_group *g = sp_ext_group(out, "memory");
  if (!g) return sp__set_error(SP_ERR_NO_MEMORY, "use_memray: out of memory");
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) n += t->taken[i * (size_t)t->ncols] > 0;
  const char **names = calloc(n ? n : 1, sizeof *names);
  int64_t *col[5];
  for (int k = 0; k < 5; k++) col[k] = calloc(n ? n : 1, sizeof *col[k]);
  sp_status st = SP_OK;
  if (!names || !col[0] || !col[1] || !col[2] || !col[3] || !col[4]) {
    st = sp__set_error(SP_ERR_NO_MEMORY, "use_memray: out of memory");
  } else {
    size_t j = 0;
    for (size_t i = 0; i < t->n; i++) {
      const int64_t *v = &t->values[i * (size_t)t->ncols];
      if (!t->taken[i * (size_t)t->ncols]) continue;
      names[j] = sp_region_name(t->region[i]);
      col[0][j] = (int64_t)t->calls[i];
      for (int k = 0; k < 4; k++) col[k + 1][j] = v[k];
      j++;
    }
    static const char *const dsets[5] = {"calls", "alloc_bytes", "freed_bytes", "alloc_count",
                                         "peak_bytes"};
    uint64_t dims = n;
    if (sp_ext_group_attr_str(g, "capture", p->path) ||
        sp_ext_group_attr_i64(g, "capture_events", (int64_t)p->stats.events) ||
        sp_ext_group_attr_i64(g, "capture_lost_events", (int64_t)p->stats.lost_events) ||
        sp_ext_group_dset(g, "regions", SP_EXT_STR, 1, &dims, names))
      st = sp__set_error(SP_ERR_NO_MEMORY, "use_memray: out of memory");
    for (int k = 0; k < 5 && !st; k++)
      if (sp_ext_group_dset(g, dsets[k], SP_EXT_I64, 1, &dims, col[k]))
        st = sp__set_error(SP_ERR_NO_MEMORY, "use_memray: out of memory");
    uint64_t tdims = p->ntl;
    if (!st && p->ntl &&
        (sp_ext_group_dset(g, "timeline_end_ns", SP_EXT_I64, 1, &tdims, p->tl_ns) ||
         sp_ext_group_dset(g, "timeline_net_bytes", SP_EXT_I64, 1, &tdims, p->tl_bytes)))
      st = sp__set_error(SP_ERR_NO_MEMORY, "use_memray: out of memory");
  }
  free(names);
  for (int k = 0; k < 5; k++) free(col[k]);
  if (!st && p->path && *p->path) sp_ext_meta_str(out, "memory_profile", p->path);
  return st;
}

/* A finalize after this one (a manager that lives on) has no capture: it
 * ended with this run. Not before the file is written: a kept run's retry
 * (ext.h, emit) writes the capture's group again. */
static void memory_written(void *proc) {
  struct memory_proc *p = proc;
  if (p->stopped) p->idle = 1;
}

static void memory_teardown(void *proc) {
  struct memory_proc *p = proc;
  if (p->owned && !p->stopped && p->api->active()) (void)p->api->stop(NULL);
  free(p->path);
  free(p->tl_ns);
  free(p->tl_bytes);
  free(p);
}

/* The interposer decides for the child itself (follow_fork); the child's
 * manager stands down and must not stop or restart anything. */
static void memory_after_fork(void *proc) {
  struct memory_proc *p = proc;
  free(p->path);
  free(p->tl_ns);
  free(p->tl_bytes);
  free(p);
}

const struct sp_ext sp__ext_memory = {
    .abi = SP_EXT_ABI,
    .name = "memory",
    .kind = SP_EXT_COLUMNS | SP_EXT_SOURCE | SP_EXT_AGGREGATE,
    .wanted = memory_wanted,
    .setup = memory_setup,
    .teardown = memory_teardown,
    .after_fork = memory_after_fork,
    .thread_attach = memory_attach,
    .region_added = memory_region_added,
    .enter = memory_enter,
    .exit = memory_exit,
    .before_snapshot = memory_before_snapshot,
    .emit = memory_emit,
    .written = memory_written,
};
