/* ext.c - the core side of the extension interface (src/probes/ext.h):
 * setting extensions up on a manager, attaching threads, deciding once per
 * region which extensions take it, calling them around a call's timestamps,
 * folding their columns per region, and handing them the run at finalize.
 *
 * Columns live in each thread's column block (t->cols), one row of
 * m->ext_stride int64 per event slot: element 0 is the mask of extensions
 * whose enter ran for the call, then every extension's columns. Slots are
 * filled with "not taken" (mask 0, each column's fill) whenever they become
 * free, so the inlined path can record calls of regions no extension takes
 * without touching the block. A region's decision is made once per setup,
 * under ext_lock, and cached per thread; a region taken by nobody gets its
 * bit in hot.plain and stays inlined from then on.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/error.h"
#include "core/autorun.h"
#include "core/core.h"
#include "output/output.h"
#include "output/plan.h"

#define CALIBRATION_REGION "scope_profiler.calibration"

static int bits_of(uint32_t mask, int k) { return (int)((mask >> k) & 1u); }

/*====== Warnings ======*/

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char **warned;
static size_t nwarned;

void sp_ext_warn(struct sp_manager *m, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&warn_lock);
  int seen = 0;
  for (size_t i = 0; i < nwarned && !seen; i++) seen = strcmp(warned[i], buf) == 0;
  if (!seen) {
    char **n = realloc(warned, (nwarned + 1) * sizeof *n);
    if (n) {
      warned = n;
      if ((warned[nwarned] = sp__strdup(buf))) nwarned++;
    }
    /* A setting the user turned on does not do what it says here, and
     * silence would hide that (the `quiet` setting silences it). */
    /* Every rank of a job would say the same: rank 0 speaks for them. */
    if (!(m && m->have_cfg && m->cfg.quiet) && sp__launcher_rank() <= 0) sp__message(SP_MESSAGE_WARNING, "%s", buf);
  }
  pthread_mutex_unlock(&warn_lock);
  if (!m) return;
  pthread_mutex_lock(&m->lock);
  char **n = realloc(m->warnings, (m->nwarnings + 1) * sizeof *n);
  if (n) {
    m->warnings = n;
    if ((m->warnings[m->nwarnings] = sp__strdup(buf))) m->nwarnings++;
  }
  pthread_mutex_unlock(&m->lock);
}

static void free_warnings(struct sp_manager *m) {
  for (size_t i = 0; i < m->nwarnings; i++) free(m->warnings[i]);
  free(m->warnings);
  m->warnings = NULL;
  m->nwarnings = 0;
}

void **sp__ext_user_slot(struct sp_manager *m, const char *ext_name) {
  return sp__ext_user_slot_owned(m, ext_name, NULL);
}

void **sp__ext_user_slot_owned(struct sp_manager *m, const char *ext_name, void (*destroy)(void *p)) {
  if (!m || !ext_name) return NULL;
  pthread_mutex_lock(&m->lock);
  struct sp_ext_user *u = NULL;
  for (size_t i = 0; i < m->next_user && !u; i++)
    if (strcmp(m->ext_user[i].name, ext_name) == 0) u = &m->ext_user[i];
  if (!u && m->next_user < sizeof m->ext_user / sizeof m->ext_user[0]) {
    u = &m->ext_user[m->next_user];
    if ((u->name = sp__strdup(ext_name))) {
      u->p = NULL;
      u->destroy = NULL;
      m->next_user++;
    } else {
      u = NULL;
    }
  }
  if (u && destroy) u->destroy = destroy;
  pthread_mutex_unlock(&m->lock);
  return u ? &u->p : NULL;
}

/*====== Setup and teardown ======*/

static void reset_layout(struct sp_manager *m) {
  m->next = 0;
  m->ext_stride = 0;
  m->ext_ncols = 0;
  m->ext_inside = 0;
  m->ext_all = 0;
  m->ext_threads = 0;
  m->ext_ticks = 0;
  m->lane_col = -1;
  m->ext_nout = 0;
  m->ext_gpu_out = -1;
}

/* Threads detach under ext_lock, against a thread exiting at the same time. */
static void detach_locked(struct sp_manager *m, sp_thread_rec *t) {
  if (t->ext_epoch == m->ext_epoch)
    for (int k = 0; k < m->next; k++)
      if (bits_of(t->ext_on, k) && m->ext[k].x->thread_detach) m->ext[k].x->thread_detach(m->ext[k].proc, t->ext_thr[k]);
  t->ext_on = 0;
  memset(t->ext_thr, 0, sizeof t->ext_thr);
}

void sp__ext_teardown(struct sp_manager *m) {
  pthread_mutex_lock(&m->ext_lock);
  for (sp_thread_rec *t = m->threads; t; t = t->next) detach_locked(m, t);
  pthread_mutex_unlock(&m->ext_lock);
  for (int k = 0; k < m->next; k++)
    if (m->ext[k].x->teardown) m->ext[k].x->teardown(m->ext[k].proc);
  memset(m->ext, 0, sizeof m->ext);
  reset_layout(m);
  free_warnings(m);
}

void sp__ext_after_fork(struct sp_manager *m) {
  for (int k = 0; k < m->next; k++)
    if (m->ext[k].x->after_fork) m->ext[k].x->after_fork(m->ext[k].proc);
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    t->ext_on = 0;
    memset(t->ext_thr, 0, sizeof t->ext_thr);
  }
  /* Nothing is torn down later: the child's next setup starts clean. The
   * layout stays, so the inherited column blocks still match it. */
  memset(m->ext, 0, sizeof m->ext);
  int stride = m->ext_stride;
  reset_layout(m);
  m->ext_stride = stride;
}

/* The core's own /events columns (the dataset plan's), which an extension
 * may not write; upstream's task ids, await time and GPU durations are
 * columns an extension provides. */
static int reserved_name(const char *name) {
  int id = sp__plan_find(SP_GRP_EVENTS, name);
  return id >= 0 && id < SP_DS_NBUILTIN && id != SP_DS_TASK_IDS && id != SP_DS_AWAIT_NS && id != SP_DS_GPU_DURATIONS;
}

static sp_status check_columns(struct sp_manager *m, const struct sp_ext *x, const struct sp_ext_col *cols, int n) {
  if (n < 0 || (n && !cols))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "extension %s declared %d columns without a column table", x->name, n);
  if (m->ext_ncols + n > SP_EXT_MAX_COLS)
    return sp__set_error(SP_ERR_LIMIT,
                         "extensions ask for more than %d event columns in all (%s adds %d); ask for fewer "
                         "counters",
                         SP_EXT_MAX_COLS, x->name, n);
  for (int c = 0; c < n; c++) {
    const char *name = cols[c].name;
    if (!name || !*name || strchr(name, '/'))
      return sp__set_error(SP_ERR_INVALID_ARGUMENT, "extension %s: column %d has no valid name", x->name, c);
    if (cols[c].flags & SP_EXT_COL_SCRATCH) continue;
    if (reserved_name(name))
      return sp__set_error(SP_ERR_INVALID_ARGUMENT, "extension %s: column name %s is the core's", x->name, name);
    for (int k = 0; k < m->next; k++)
      for (int j = 0; j < m->ext[k].ncols; j++)
        if (!(m->ext[k].cols[j].flags & SP_EXT_COL_SCRATCH) && strcmp(m->ext[k].cols[j].name, name) == 0)
          return sp__set_error(SP_ERR_CONFLICT, "extensions %s and %s both write the event column %s",
                               m->ext[k].x->name, x->name, name);
    for (int j = 0; j < c; j++)
      if (!(cols[j].flags & SP_EXT_COL_SCRATCH) && strcmp(cols[j].name, name) == 0)
        return sp__set_error(SP_ERR_CONFLICT, "extension %s writes the event column %s twice", x->name, name);
  }
  return SP_OK;
}

/* The block layout of the extensions now set up: fill row, /events
 * columns, and what the inlined path may skip. */
static void finish_layout(struct sp_manager *m) {
  int hooks = 0;
  for (int k = 0; k < m->next; k++) hooks |= (m->ext[k].x->kind & (SP_EXT_FORWARD | SP_EXT_COLUMNS)) != 0;
  m->ext_stride = hooks ? 1 + m->ext_ncols : 0;
  m->ext_fill_row[0] = 0;
  for (int k = 0; k < m->next; k++) {
    const struct sp_ext_live *e = &m->ext[k];
    if ((e->x->kind & (SP_EXT_FORWARD | SP_EXT_COLUMNS)) && !e->x->region_added) m->ext_all = 1;
    if (e->x->kind & SP_EXT_INSIDE) m->ext_inside |= 1u << k;
    if ((e->x->kind & SP_EXT_LANES) && e->ncols > 0) m->lane_col = e->col0;
    for (int c = 0; c < e->ncols; c++) {
      const struct sp_ext_col *col = &e->cols[c];
      m->ext_fill_row[e->col0 + c] = col->fill;
      if (col->flags & SP_EXT_COL_SCRATCH) continue;
      if (col->flags & SP_EXT_COL_TICKS) m->ext_ticks = 1;
      if (col->flags & SP_EXT_COL_GPU) m->ext_gpu_out = m->ext_nout;
      m->ext_out[m->ext_nout++] = (col->flags & SP_EXT_COL_TICKS) ? -(e->col0 + c) : e->col0 + c;
    }
  }
}

/* Every thread's blocks in the new layout, holding "not taken" (the calls
 * still open lose their columns: they began under another setup). */
static sp_status relayout_threads(struct sp_manager *m) {
  int stride = m->ext_stride;
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    free(t->cols);
    free(t->open_cols);
    free(t->ext_acc);
    t->cols = t->open_cols = t->ext_acc = NULL;
    t->ext_acc_cap = 0;
    t->ext_on = 0;
    if (!stride) continue;
    t->cols = malloc(t->hot.cap * (size_t)stride * sizeof *t->cols);
    if (!t->cols || sp__ext_grow_open(m, t) != 0)
      return sp__set_error(SP_ERR_NO_MEMORY, "setup: out of memory for the extensions' event columns");
    sp__ext_fill(m, t->cols, 0, t->hot.cap);
  }
  return SP_OK;
}

sp_status sp__ext_setup(struct sp_manager *m) {
  const struct sp_ext *want[SP_EXT_MAX];
  int n = sp__ext_select(&m->cfg, want, SP_EXT_MAX);
  int agg = m->cfg.aggregation_mode;
  reset_layout(m);
  m->ext_epoch++;
  for (int i = 0; i < n; i++) {
    const struct sp_ext *x = want[i];
    if (agg && !(x->kind & SP_EXT_AGGREGATE)) {
      sp_ext_warn(m, "%s records per call and is off in aggregation_mode", x->name);
      continue;
    }
    struct sp_ext_setup s;
    memset(&s, 0, sizeof s);
    s.cfg = &m->cfg;
    s.manager = m;
    s.user = sp__ext_user_slot(m, x->name);
    s.aggregation = agg;
    void *proc = NULL;
    sp_status st = x->setup ? x->setup(&s, &proc) : SP_OK;
    if (st == SP_OK && !s.decline && !(x->kind & SP_EXT_COLUMNS) && s.ncols)
      st = sp__set_error(SP_ERR_INVALID_ARGUMENT, "extension %s declared columns without SP_EXT_COLUMNS", x->name);
    if (st == SP_OK && !s.decline) st = check_columns(m, x, s.cols, s.ncols);
    if (st != SP_OK) {
      if (!s.decline && x->teardown && proc) x->teardown(proc);
      sp__ext_teardown(m);
      return st;
    }
    if (s.decline) continue;
    struct sp_ext_live *e = &m->ext[m->next++];
    e->x = x;
    e->proc = proc;
    e->cols = s.cols;
    e->ncols = s.ncols;
    e->col0 = 1 + m->ext_ncols;
    m->ext_ncols += s.ncols;
    if (x->kind & SP_EXT_THREADS) m->ext_threads = 1;
  }
  finish_layout(m);
  /* Every region is undecided again, and none is known plain. */
  pthread_mutex_lock(&m->ext_lock);
  if (m->ext_rmask) memset(m->ext_rmask, 0, m->ext_rcap * sizeof *m->ext_rmask);
  if (m->hot.plain) memset(m->hot.plain, 0, m->hot.plain_nbits / 8);
  pthread_mutex_unlock(&m->ext_lock);
  sp_status st = relayout_threads(m);
  if (st != SP_OK) sp__ext_teardown(m);
  return st;
}

void sp__ext_fill(const struct sp_manager *m, int64_t *cols, uint64_t from, uint64_t to) {
  size_t stride = (size_t)m->ext_stride;
  if (!stride || !cols) return;
  for (uint64_t i = from; i < to; i++) memcpy(cols + i * stride, m->ext_fill_row, stride * sizeof *cols);
}

int sp__ext_grow_open(struct sp_manager *m, sp_thread_rec *t) {
  if (!m->ext_stride) return 0;
  int64_t *n = realloc(t->open_cols, (size_t)t->hot.open_cap * (size_t)m->ext_stride * sizeof *n);
  if (!n) return -1;
  t->open_cols = n;
  /* Calls the inlined path opens write no scratch: their masks must read 0. */
  for (uint32_t i = 0; i < t->hot.open_cap; i++) n[(size_t)i * (size_t)m->ext_stride] = 0;
  return 0;
}

/*====== Regions and threads ======*/

/* Publish "no extension takes region id" to the inlined path (ext_lock held). */
static void mark_plain_locked(struct sp_manager *m, uint32_t id) {
  sp__bitmap_set(&m->hot.plain, &m->hot.plain_nbits, &m->plain_retired, &m->nplain_retired, id);
}

/* A region-decision array grown to hold `id` (zeroed); 0 on success. */
static int grow_masks(uint32_t **a, uint32_t *cap, uint32_t id) {
  if (id < *cap) return 0;
  uint32_t ncap = *cap ? *cap : 256;
  while (ncap <= id) ncap *= 2;
  uint32_t *n = realloc(*a, ncap * sizeof *n);
  if (!n) return -1;
  memset(n + *cap, 0, (ncap - *cap) * sizeof *n);
  *a = n;
  *cap = ncap;
  return 0;
}

static uint32_t decide_locked(struct sp_manager *m, uint32_t id) {
  (void)grow_masks(&m->ext_rmask, &m->ext_rcap, id); /* out of memory: decided, not remembered */
  if (id < m->ext_rcap && (m->ext_rmask[id] & SP__EXT_DECIDED)) return m->ext_rmask[id] & ~SP__EXT_DECIDED;
  const struct sp_region_info *ri = sp__region_info(id);
  struct sp_ext_region info = {0};
  if (ri) {
    info.name = ri->name;
    info.len = ri->len;
    info.file = ri->file;
    info.line = ri->line;
    info.func = ri->func;
    info.tags = ri->tags;
    info.ntags = ri->ntags;
    info.internal = strcmp(ri->name, CALIBRATION_REGION) == 0;
  }
  uint32_t mask = 0;
  for (int k = 0; k < m->next; k++) {
    const struct sp_ext *x = m->ext[k].x;
    int takes = (x->kind & (SP_EXT_FORWARD | SP_EXT_COLUMNS)) != 0;
    if (x->region_added && ri) {
      int r = x->region_added(m->ext[k].proc, id, &info);
      takes = takes && r;
    }
    if (takes) mask |= 1u << k;
  }
  if (id < m->ext_rcap) {
    m->ext_rmask[id] = mask | SP__EXT_DECIDED;
    if (!mask) mark_plain_locked(m, id);
  }
  return mask;
}

static void attach_locked(struct sp_manager *m, sp_thread_rec *t) {
  if (t->ext_rmask) memset(t->ext_rmask, 0, t->ext_rcap * sizeof *t->ext_rmask);
  t->ext_on = 0;
  t->ext_epoch = m->ext_epoch;
  for (int k = 0; k < m->next; k++) {
    struct sp_ext_thread *th = &t->ext_th[k];
    th->index = t->index;
    th->tid = (int32_t)t->tid;
    th->omp_thread = t->omp_thread;
    th->core = t;
    th->col0 = m->ext[k].col0;
    void *thr = NULL;
    const struct sp_ext *x = m->ext[k].x;
    if (x->thread_attach && x->thread_attach(m->ext[k].proc, th, &thr) != 0) continue;
    t->ext_thr[k] = thr;
    t->ext_on |= 1u << k;
  }
}

void sp__ext_join_thread(struct sp_manager *m) {
  if (!m->ext_threads) return;
  sp_thread_rec *t = sp__thread_attach(m);
  if (!t || t->ext_epoch == m->ext_epoch) return;
  pthread_mutex_lock(&m->ext_lock);
  attach_locked(m, t);
  pthread_mutex_unlock(&m->ext_lock);
}

uint32_t sp__ext_decide(struct sp_manager *m, sp_thread_rec *t, uint32_t id) {
  if (SP_I_UNLIKELY(t->ext_epoch != m->ext_epoch)) {
    pthread_mutex_lock(&m->ext_lock);
    attach_locked(m, t);
    pthread_mutex_unlock(&m->ext_lock);
  }
  if (id < t->ext_rcap && (t->ext_rmask[id] & SP__EXT_DECIDED)) return t->ext_rmask[id] & t->ext_on;
  pthread_mutex_lock(&m->ext_lock);
  uint32_t mask = decide_locked(m, id);
  pthread_mutex_unlock(&m->ext_lock);
  if (grow_masks(&t->ext_rmask, &t->ext_rcap, id) == 0) t->ext_rmask[id] = mask | SP__EXT_DECIDED;
  return mask & t->ext_on;
}

void sp__ext_thread_exit(struct sp_manager *m, sp_thread_rec *t) {
  if (!m->next) return;
  pthread_mutex_lock(&m->ext_lock);
  detach_locked(m, t);
  pthread_mutex_unlock(&m->ext_lock);
}

void sp__ext_thread_release(struct sp_manager *m, sp_thread_rec *t) {
  sp__ext_thread_exit(m, t);
  free(t->ext_rmask);
  free(t->ext_acc);
  free(t->open_cols);
  t->ext_rmask = NULL;
  t->ext_acc = NULL;
  t->open_cols = NULL;
  t->ext_rcap = t->ext_acc_cap = 0;
}

/*====== Calls ======*/

void sp__ext_enter(struct sp_manager *m, sp_thread_rec *t, uint32_t mask, uint32_t id, uint32_t depth, uint64_t slot,
                   int64_t *cols) {
  struct sp_ext_call c = {id, depth, slot, NULL, NULL};
  for (int k = 0; k < m->next; k++) {
    if (!bits_of(mask, k)) continue;
    const struct sp_ext_live *e = &m->ext[k];
    if (!e->x->enter) continue;
    c.cols = cols && e->ncols ? cols + e->col0 : NULL;
    c.thread = &t->ext_th[k];
    e->x->enter(e->proc, t->ext_thr[k], &c);
  }
}

void sp__ext_exit(struct sp_manager *m, sp_thread_rec *t, uint32_t mask, uint32_t id, uint32_t depth, uint64_t slot,
                  int64_t *cols) {
  struct sp_ext_call c = {id, depth, slot, NULL, NULL};
  for (int k = m->next - 1; k >= 0; k--) {
    if (!bits_of(mask, k)) continue;
    const struct sp_ext_live *e = &m->ext[k];
    if (!e->x->exit) continue;
    c.cols = cols && e->ncols ? cols + e->col0 : NULL;
    c.thread = &t->ext_th[k];
    e->x->exit(e->proc, t->ext_thr[k], &c);
  }
}

int64_t *sp_ext_cols_at(const struct sp_ext_thread *th, uint64_t slot) {
  const sp_thread_rec *t = th->core;
  const struct sp_manager *m = t->m;
  if (!m->ext_stride || slot >= t->hot.n) return NULL;
  return t->cols + slot * (uint64_t)m->ext_stride + (uint64_t)th->col0;
}

int sp_ext_task(const struct sp_ext_thread *th, uint32_t *index, uint64_t *suspended_ticks) {
  const sp_thread_rec *t = th->core;
  if (!t->cur_task) return 0;
  *index = t->cur_task->index;
  *suspended_ticks = t->cur_task->suspended;
  return 1;
}

uint32_t sp_ext_run_root(const struct sp_manager *m) { return m == SP_DEFAULT ? sp__autorun_root() : 0; }

/* The innermost open region of the calling thread on m, 0 if none, -1 while
 * its buffers are being replaced (no answer). */
static int64_t innermost_region(const struct sp_manager *m) {
  uint32_t slot = m->hot.slot;
  if (slot >= SP_I_MAX_MANAGERS || sp_i_tls.gen[slot] != m->hot.gen || !m->hot.gen) return 0;
  const sp_thread_rec *t = (const sp_thread_rec *)sp_i_tls.t[slot];
  if (!t) return 0;
  if (t->busy) return -1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  uint32_t r = 0;
  if (m->cfg.aggregation_mode) {
    uint32_t n = sp__agg_nopen(&t->hot);
    if (n && n <= t->hot.open_cap) r = t->hot.open[n - 1].region; /* 0 for a paused call */
  } else {
    uint32_t d = t->hot.depth;
    if (d && d <= t->hot.stack_cap) {
      uint64_t i = t->hot.stack[d - 1];
      if (!(i & SP_I_GHOST_BIT) && i < t->hot.n && t->hot.n <= t->hot.cap) r = t->hot.ev[i].region;
    }
  }
  /* A begin this signal interrupted may not have stored its region yet. */
  return r <= sp__region_max_id() ? r : 0;
}

uint32_t sp_ext_current_region(const struct sp_manager *m) {
  int64_t r = innermost_region(m);
  return r > 0 ? (uint32_t)r : 0;
}

uint32_t sp_ext_sample_region(const struct sp_manager *m) {
  int64_t r = innermost_region(m);
  if (r <= 0) r = sp__adopted_region(m); /* no answer (-1): the work's region at least */
  return r ? (uint32_t)r : sp_ext_run_root(m);
}

/*====== Per-region folds ======*/

/* Accumulator row of a region: calls, then (taken, value) per column. */
static int64_t *acc_row(struct sp_manager *m, sp_thread_rec *t, uint32_t id) {
  size_t w = 1 + 2 * (size_t)m->ext_ncols;
  if (id >= t->ext_acc_cap) {
    uint32_t cap = t->ext_acc_cap ? t->ext_acc_cap : 64;
    while (cap <= id) cap *= 2;
    int64_t *n = realloc(t->ext_acc, (size_t)cap * w * sizeof *n);
    if (!n) return NULL;
    memset(n + (size_t)t->ext_acc_cap * w, 0, (size_t)(cap - t->ext_acc_cap) * w * sizeof *n);
    t->ext_acc = n;
    t->ext_acc_cap = cap;
  }
  return t->ext_acc + (size_t)id * w;
}

static void fold_value(int64_t *taken_value, const struct sp_ext_col *col, int64_t v) {
  if ((col->flags & SP_EXT_COL_GPU) && v < 0) return;
  if (col->fill < 0 && v == col->fill) return; /* a negative fill is "no value" */
  int64_t *taken = &taken_value[0], *acc = &taken_value[1];
  if (*taken == 0) *acc = col->fold == SP_EXT_FOLD_NONE ? 0 : v;
  else if (col->fold == SP_EXT_FOLD_SUM) *acc += v;
  else if (col->fold == SP_EXT_FOLD_MAX && v > *acc) *acc = v;
  else if (col->fold == SP_EXT_FOLD_MIN && v < *acc) *acc = v;
  (*taken)++;
}

static void fold_row(struct sp_manager *m, int64_t *acc, const int64_t *cols) {
  uint32_t mask = (uint32_t)cols[0];
  for (int k = 0; k < m->next; k++) {
    if (!bits_of(mask, k)) continue;
    const struct sp_ext_live *e = &m->ext[k];
    for (int c = 0; c < e->ncols; c++)
      if (!(e->cols[c].flags & SP_EXT_COL_SCRATCH))
        fold_value(acc + 1 + 2 * (size_t)(e->col0 - 1 + c), &e->cols[c], cols[e->col0 + c]);
  }
}

void sp__ext_fold_call(struct sp_manager *m, sp_thread_rec *t, uint32_t id, const int64_t *cols) {
  int64_t *acc = acc_row(m, t, id);
  if (!acc) {
    t->dropped_events++; /* the call's counters are lost, not its time */
    return;
  }
  acc[0]++;
  fold_row(m, acc, cols);
}

void sp__ext_fold_events(struct sp_manager *m, sp_thread_rec *t, const struct sp_i_event *ev, const int64_t *cols,
                         uint64_t n) {
  if (!m->ext_stride || !cols) return;
  for (uint64_t i = 0; i < n; i++) {
    if (!ev[i].end) continue;
    int64_t *acc = acc_row(m, t, ev[i].region);
    if (!acc) continue;
    acc[0]++;
    fold_row(m, acc, cols + i * (uint64_t)m->ext_stride);
  }
}

void sp__ext_resolve(struct sp_manager *m, sp_thread_rec *t, uint64_t n) {
  if (t->ext_epoch != m->ext_epoch) return;
  for (int k = 0; k < m->next; k++)
    if (bits_of(t->ext_on, k) && m->ext[k].x->resolve)
      m->ext[k].x->resolve(m->ext[k].proc, t->ext_thr[k], &t->ext_th[k], n);
}

/*====== Finalize ======*/

void sp__ext_before_snapshot(struct sp_manager *m) {
  for (int k = 0; k < m->next; k++)
    if (m->ext[k].x->before_snapshot) m->ext[k].x->before_snapshot(m->ext[k].proc);
}

int sp__ext_out_columns(const struct sp_manager *m, struct sp_run *run) {
  for (int k = 0; k < m->next; k++)
    for (int j = 0; j < m->ext[k].ncols; j++) {
      const struct sp_ext_col *col = &m->ext[k].cols[j];
      if (col->flags & SP_EXT_COL_SCRATCH) continue;
      int id = sp__plan_find(SP_GRP_EVENTS, col->name);
      if (id < 0)
        id = sp__plan_add_event_column(
            &(struct sp_plan_col_decl){col->name, SP_DT_I64, col->unit, col->fill, m->ext[k].x->name});
      if (id < 0 || !sp__run_add_column(run, id)) return -1;
    }
  return 0;
}

struct sp_ext_emit {
  struct sp_manager *m;
  struct sp_run *run;
  uint32_t rank;
  struct sp_ext_totals tot;
};

const struct sp_ext_totals *sp_ext_totals(struct sp_ext_emit *out) { return &out->tot; }
uint32_t sp_ext_rank(const struct sp_ext_emit *out) { return out->rank; }

/* The regions with calls since the last finalize, summed over threads:
 * calls, then (taken, value) per column, folded across threads. */
static int64_t *sum_threads(struct sp_manager *m, uint32_t maxid, uint32_t **ids, size_t *n) {
  size_t w = 1 + 2 * (size_t)m->ext_ncols;
  int64_t *all = calloc(((size_t)maxid + 1) * w, sizeof *all);
  *ids = malloc(((size_t)maxid + 1) * sizeof **ids);
  *n = 0;
  if (!all || !*ids) {
    free(all);
    free(*ids);
    *ids = NULL;
    return NULL;
  }
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    if (m->cfg.aggregation_mode) /* calls of plain regions never reach the accumulators */
      for (uint32_t id = 1; id <= maxid && id < t->hot.acc_cap; id++) all[(size_t)id * w] += (int64_t)t->hot.acc[id].count;
    for (uint32_t id = 1; id <= maxid && id < t->ext_acc_cap; id++) {
      const int64_t *a = t->ext_acc + (size_t)id * w;
      int64_t *s = all + (size_t)id * w;
      if (!m->cfg.aggregation_mode) s[0] += a[0];
      for (int k = 0; k < m->next; k++)
        for (int c = 0; c < m->ext[k].ncols; c++) {
          size_t j = 1 + 2 * (size_t)(m->ext[k].col0 - 1 + c);
          if (!a[j]) continue;
          const struct sp_ext_col *col = &m->ext[k].cols[c];
          if (!s[j]) s[j + 1] = a[j + 1];
          else if (col->fold == SP_EXT_FOLD_SUM) s[j + 1] += a[j + 1];
          else if (col->fold == SP_EXT_FOLD_MAX && a[j + 1] > s[j + 1]) s[j + 1] = a[j + 1];
          else if (col->fold == SP_EXT_FOLD_MIN && a[j + 1] < s[j + 1]) s[j + 1] = a[j + 1];
          s[j] += a[j];
        }
    }
  }
  for (uint32_t id = 1; id <= maxid; id++)
    if (all[(size_t)id * w]) (*ids)[(*n)++] = id;
  return all;
}

/* GPU time into the rows' summary statistics, by region name. */
static void gpu_into_rows(struct sp_manager *m, struct sp_run *run, const int64_t *all, const uint32_t *ids, size_t n,
                          const struct sp_clock_map *cm) {
  if (m->ext_gpu_out < 0 || !m->cfg.aggregation_mode) return; /* timeline rows got it per event */
  int b = m->ext_out[m->ext_gpu_out];
  size_t w = 1 + 2 * (size_t)m->ext_ncols, j = 1 + 2 * (size_t)((b < 0 ? -b : b) - 1);
  (void)cm;
  for (size_t i = 0; i < n; i++) {
    const struct sp_region_info *ri = sp__region_info(ids[i]);
    for (size_t r = 0; ri && r < run->nrows; r++)
      if (strcmp(run->names[run->rows[r].region], ri->name) == 0) {
        run->rows[r].stats.gpu_count = (uint64_t)all[(size_t)ids[i] * w + j];
        run->rows[r].stats.gpu_total = all[(size_t)ids[i] * w + j + 1];
      }
  }
}

sp_status sp__ext_emit(struct sp_manager *m, struct sp_run *run, uint32_t rank, const struct sp_clock_map *cm) {
  sp_status st = SP_OK;
  if (m->nwarnings && sp__meta_strlist(&run->meta, "warnings", m->warnings, m->nwarnings) != 0)
    return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the extensions' warnings");
  if (!m->next) return SP_OK;
  uint32_t maxid = sp__region_max_id();
  uint32_t *ids = NULL;
  size_t n = 0;
  int64_t *all = m->ext_ncols || m->ext_stride ? sum_threads(m, maxid, &ids, &n) : NULL;
  if ((m->ext_ncols || m->ext_stride) && !all) return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the extensions' totals");
  gpu_into_rows(m, run, all, ids, n, cm);
  size_t w = 1 + 2 * (size_t)m->ext_ncols;
  uint64_t *calls = calloc(n + 1, sizeof *calls);
  for (size_t i = 0; calls && i < n; i++) calls[i] = (uint64_t)all[(size_t)ids[i] * w];
  struct sp_ext_emit out = {m, run, rank, {0}};
  for (int k = 0; k < m->next && st == SP_OK; k++) {
    const struct sp_ext_live *e = &m->ext[k];
    if (!e->x->emit) continue;
    size_t nc = (size_t)e->ncols;
    int64_t *values = calloc(n * nc + 1, sizeof *values);
    uint64_t *taken = calloc(n * nc + 1, sizeof *taken);
    if (!values || !taken || !calls) {
      free(values);
      free(taken);
      st = sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the extensions' totals");
      break;
    }
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < nc; c++) {
        size_t j = 1 + 2 * (size_t)(e->col0 - 1 + (int)c);
        taken[i * nc + c] = (uint64_t)all[(size_t)ids[i] * w + j];
        values[i * nc + c] = all[(size_t)ids[i] * w + j + 1];
      }
    out.tot = (struct sp_ext_totals){n, ids, calls, values, taken, e->ncols};
    st = e->x->emit(e->proc, &out);
    free(values);
    free(taken);
  }
  free(calls);
  free(all);
  free(ids);
  /* The totals stay until the run is written (sp__ext_totals_clear): a
   * streamed run whose file could not be written is kept, and its retry
   * emits them again with the calls made since (the blocks handed off
   * before the failure folded theirs once, and are not folded again). */
  return st;
}

void sp__ext_totals_clear(struct sp_manager *m) {
  size_t w = 1 + 2 * (size_t)m->ext_ncols;
  for (sp_thread_rec *t = m->threads; t; t = t->next)
    if (t->ext_acc) memset(t->ext_acc, 0, (size_t)t->ext_acc_cap * w * sizeof *t->ext_acc);
}

void sp__ext_written(struct sp_manager *m) {
  sp__ext_totals_clear(m);
  for (int k = 0; k < m->next; k++)
    if (m->ext[k].x->written) m->ext[k].x->written(m->ext[k].proc);
}

/*====== What emit adds to the run ======*/

/* Groups are nodes of the run's per-rank group trees (output.h), written
 * under rank<N>/ by every writer. The first component of `path` is the
 * rank group: one of the plan's (likwid, perf_events, line_profile) or,
 * for another name, declared here on the extension's behalf. */
struct sp_ext_group *sp_ext_group(struct sp_ext_emit *out, const char *path) {
  char *copy = sp__strdup(path);
  if (!copy) return NULL;
  char *save = NULL, *top = strtok_r(copy, "/", &save);
  int gid = top ? sp__plan_find_rank_group(top) : -1;
  if (top && gid < 0)
    gid = sp__plan_add_rank_group(&(struct sp_plan_group_decl){top, "a group an extension's emit added"});
  struct sp_node *n = gid >= 0 ? sp__run_add_group(out->run, gid) : NULL;
  for (char *c = strtok_r(NULL, "/", &save); n && c; c = strtok_r(NULL, "/", &save)) n = sp__node_add_child(n, c);
  free(copy);
  return (struct sp_ext_group *)n;
}

int sp_ext_group_attr_str(struct sp_ext_group *g, const char *key, const char *value) {
  return sp__meta_str(&((struct sp_node *)g)->attrs, key, value);
}
int sp_ext_group_attr_i64(struct sp_ext_group *g, const char *key, int64_t value) {
  return sp__meta_i64(&((struct sp_node *)g)->attrs, key, value);
}
int sp_ext_group_attr_f64(struct sp_ext_group *g, const char *key, double value) {
  return sp__meta_f64(&((struct sp_node *)g)->attrs, key, value);
}
int sp_ext_group_attr_strlist(struct sp_ext_group *g, const char *key, const char *const *values, size_t n) {
  return sp__meta_strlist(&((struct sp_node *)g)->attrs, key, (char **)values, n);
}

int sp_ext_group_dset(struct sp_ext_group *gv, const char *name, enum sp_ext_dtype type, int ndims,
                      const uint64_t *dims, const void *data) {
  enum sp_dtype t = type == SP_EXT_I64 ? SP_DT_I64 : type == SP_EXT_U64 ? SP_DT_U64 : type == SP_EXT_F64 ? SP_DT_F64 : SP_DT_STR;
  struct sp_node_ds *d = sp__node_add_ds((struct sp_node *)gv, name, t, ndims, dims);
  if (!d) return -1;
  uint64_t count = d->dims[0] * (ndims > 1 ? d->dims[1] : 1);
  if (t != SP_DT_STR) {
    if (count) memcpy(d->data, data, count * 8);
    return 0;
  }
  for (uint64_t i = 0; i < count; i++) {
    const char *v = ((const char *const *)data)[i];
    if (!(((char **)d->data)[i] = sp__strdup(v ? v : ""))) return -1; /* freed with the run */
  }
  return 0;
}

char *sp_ext_group_name(const char *region_name) {
  char *s = sp__strdup(region_name);
  for (char *p = s; p && *p; p++)
    if (*p == '/') *p = '|';
  return s;
}

int sp_ext_meta_str(struct sp_ext_emit *out, const char *key, const char *value) {
  return sp__meta_str(&out->run->meta, key, value);
}
int sp_ext_meta_i64(struct sp_ext_emit *out, const char *key, int64_t value) {
  return sp__meta_i64(&out->run->meta, key, value);
}
