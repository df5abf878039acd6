/* manager.c - manager lifecycle: create, setup, finalize, destroy, sessions,
 * pause/resume and the exit hook; plus the default-manager shortcuts.
 *
 * A manager records from setup on. Finalize writes every call completed since
 * the previous finalize (one "run"), keeps the calls still open so they
 * complete into the next run, and keeps recording; running call counts
 * survive across runs. The state word the inlined hot path reads is derived
 * from the flags here (publish_state) and is the only thing it looks at.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/error.h"
#include "common/overhead.h"
#include "core/autorun.h"
#include "core/core.h"
#include "core/metadata.h"
#include "core/mpi_hooks.h"
#include "core/snapshot.h"
#include "core/spill.h"
#include "core/stream.h"
#include "core/summary.h"
#include "output/output.h"
#include "scope_profiler/results.h"

static sp_status per_rank_file_path(struct sp_manager *m);

static struct sp_manager sp__default_manager = {
    .hot = {.state = SP_I_STATE_OFF, .optin_key = UINT32_MAX}, /* keys: never 0; setup draws a new one */
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .fin_lock = PTHREAD_MUTEX_INITIALIZER,
    .is_default = 1,
    .lane_col = -1,
    .rank_override = -1,
    .file_rank = -1,
    .ext_lock = PTHREAD_MUTEX_INITIALIZER,
};

SP_API struct sp_manager *const sp_i_default = &sp__default_manager;

sp_manager *sp_default_manager(void) { return &sp__default_manager; }

const struct sp_mpi_ops *sp__mpi_ops;

const char *sp_version_string(void) { return SP_VERSION_STRING; }

/*====== Registry of live managers (for the exit hook) ======*/

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_manager *live[SP_I_MAX_MANAGERS];
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

struct sp_manager *sp__live_manager(int i) {
  return i >= 0 && i < SP_I_MAX_MANAGERS ? __atomic_load_n(&live[i], __ATOMIC_ACQUIRE) : NULL;
}

/* While held, no live manager is destroyed: sp_manager_destroy leaves the
 * registry first (set_live) and waits here. */
void sp__live_hold(void) { pthread_mutex_lock(&live_lock); }
void sp__live_release(void) { pthread_mutex_unlock(&live_lock); }

void sp__clock_note_all(void) {
  pthread_mutex_lock(&live_lock);
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++)
    if (live[i]) sp__clock_note(live[i]);
  pthread_mutex_unlock(&live_lock);
}

/* At exit, a streamed run still kept after its write failed (the exit
 * hook's retry failed too, or the run has no exit hook): the process takes
 * its buffers with it, so the run's calls are only in its staging files,
 * which nothing reads without a spill naming them. With one, `recover`
 * writes the run once the cause is fixed, and the files stay for it;
 * without one they are of no use to anyone and go. Either way one message
 * says which (the exit path, never the hot path). */
static void kept_at_exit(struct sp_manager *m) {
  if (m->kept_at_exit) return;
  m->kept_at_exit = 1;
  char files[8300] = "";
  const char *staged = sp__stream_staged_name(m);
  struct stat sb;
  if (m->stage_path[0] && stat(m->stage_path, &sb) == 0) snprintf(files, sizeof files, "%s", m->stage_path);
  if (staged && stat(staged, &sb) == 0)
    snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s", files[0] ? ", " : "", staged);
  int err = 0, spilled = 0;
  if (m->cfg.crash_spill) {
    spilled = sp__spill_write(m, 0) == 0;
    err = spilled ? 0 : errno;
  }
  if (spilled) {
    if (!m->cfg.quiet)
      sp__message(SP_MESSAGE_ERROR,
                  "at exit, %s could not be written: %s. The run's calls are kept: in %s and the staging files "
                  "it names (%s). Once that is fixed, `scope-profiler recover %s` writes the run; it removes "
                  "them once the file is whole",
                  m->cfg.file_path, m->kept_msg ? m->kept_msg : "?", m->spill_path, files[0] ? files : "none",
                  m->spill_path);
    return;
  }
  if (m->stage_path[0]) unlink(m->stage_path);
  m->stage_path[0] = 0;
  sp__stream_unlink_staged(m);
  if (!m->cfg.quiet)
    sp__message(SP_MESSAGE_ERROR,
                "at exit, %s could not be written: %s. No spill keeps the run (%s%s%s), so its calls are lost; "
                "its staging files (%s) were removed",
                m->cfg.file_path, m->kept_msg ? m->kept_msg : "?",
                !m->cfg.crash_spill ? "crash_spill is off" : m->spill_path[0] ? m->spill_path : "no spill path",
                m->cfg.crash_spill && m->spill_path[0] ? ": " : "",
                m->cfg.crash_spill && m->spill_path[0] ? strerror(err) : "", files[0] ? files : "none");
}

static int exit_hook_ran;

/* The staging files of the runs that end with the process; the exit hook
 * calls it too, after its finalizes. */
static void stage_cleanup(void) {
  const int mpi = sp__mpi_ops && sp__mpi_ops->in_use();
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    struct sp_manager *m = sp__live_manager(i);
    if (!m) continue;
    /* atexit runs the handlers in reverse order: a run the exit hook is
     * still to finalize needs its staging file (its journal, or its copied
     * segments) for that, and for the spill should it fail */
    if (m->exit_hook && m->run_active && !exit_hook_ran && !mpi) continue;
    if (m->kept_msg && m->run_active) {
      kept_at_exit(m);
      continue;
    }
    if (m->stage_path[0]) unlink(m->stage_path);
  }
}
static pthread_once_t stage_once = PTHREAD_ONCE_INIT;
static void register_stage_cleanup(void) { atexit(stage_cleanup); }
void sp__stage_cleanup_at_exit(void) { pthread_once(&stage_once, register_stage_cleanup); }

static void exit_hook(void) {
  /* Under MPI, finalize is collective and MPI is usually finalized by now. */
  if (sp__mpi_ops && sp__mpi_ops->in_use()) return;
  exit_hook_ran = 1;
  sp__live_hold(); /* another thread's destroy must not free a manager being cut */
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    struct sp_manager *m = sp__live_manager(i);
    if (m && m->exit_hook && m->run_active) (void)sp__finalize_cut(m, "exit");
  }
  stage_cleanup(); /* (a run still kept now is spilled or said lost there) */
  sp__live_release();
}
static void register_atexit(void) { atexit(exit_hook); }

/* A forked child stands down: the parent's run (and file) stays the parent's.
 * The child keeps no exit hook, records nothing, and writes only after a
 * setup of its own (with its own file_path). */
static void after_fork_child(void) {
  pthread_mutex_init(&live_lock, NULL);
  sp__record_after_fork_child();
  sp__regions_after_fork_child();
  sp__signals_after_fork_child();
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    struct sp_manager *m = live[i];
    if (!m) continue;
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->fin_lock, NULL);
    pthread_mutex_init(&m->ext_lock, NULL);
    sp__ext_after_fork(m);
    sp__threads_after_fork_child(m);
    m->forked_child = 1;
    m->stream = NULL; /* its writer thread does not exist here */
    m->stage_path[0] = 0; /* nor is the staging file the child's to remove */
    m->run_active = 0;
    m->exit_hook = 0;
    __atomic_store_n(&m->hot.state, SP_I_STATE_OFF, __ATOMIC_RELAXED);
  }
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Forget the events a forked child inherited from its parent, and every
 * stack entry and carried-over call that indexes them: the thread context's
 * saved stack while a task runs and the tasks' stacks index the same log,
 * and the child's own calls, reusing those indices, were kept as open by the
 * finalize's compaction and written again by the next run. */
static void drop_inherited(struct sp_manager *m) {
  for (uint32_t k = 0; k < m->ntasks; k++) m->tasks[k]->depth = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    if (m->ext_stride) sp__ext_fill(m, t->cols, 0, t->hot.n);
    t->hot.n = 0;
    t->hot.depth = 0;
    t->ctx_depth = 0;
    t->nkept = 0;
    t->ncarry = 0;
    sp__agg_set_nopen(&t->hot, 0);
    sp__agg_reset(t->hot.acc, t->hot.acc_cap);
  }
  if (m->calls_done) memset(m->calls_done, 0, m->calls_done_cap * sizeof *m->calls_done);
  m->forked_child = 0;
}

static void set_live(struct sp_manager *m, int on) {
  /* The registry's count first, then live (regions.c updates live managers,
   * and the slow path catches up with any count interned in between). */
  if (on) __atomic_store_n(&m->hot.nregions, sp__region_max_id(), __ATOMIC_RELEASE);
  pthread_mutex_lock(&live_lock);
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    if (on && !live[i]) {
      __atomic_store_n(&live[i], m, __ATOMIC_RELEASE);
      break;
    }
    if (!on && live[i] == m) __atomic_store_n(&live[i], NULL, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&live_lock);
}

/*====== State ======*/

void sp__manager_publish_state(struct sp_manager *m) {
  uint32_t s;
  if (!m->configured || !m->have_cfg || m->cfg.deactivate_profiling)
    s = SP_I_STATE_OFF;
  else if (m->paused)
    s = SP_I_STATE_SLOW;
  else if (m->cfg.aggregation_mode)
    s = SP_I_STATE_AGGREGATE | (m->next ? SP_I_STATE_EXT : 0);
  else if (m->ext_all)
    s = SP_I_STATE_SLOW; /* every region goes to the extensions */
  else
    s = SP_I_STATE_TIMELINE | (m->next ? SP_I_STATE_EXT : 0);
  /* The fast paths read the TSC without testing the clock kind (detail.h). */
  if (s != SP_I_STATE_OFF && s != SP_I_STATE_SLOW && m->hot.clock != 1) s |= SP_I_STATE_CLOCK;
  __atomic_store_n(&m->hot.state, s, __ATOMIC_RELEASE);
}

sp_manager *sp_manager_create(void) {
  struct sp_manager *m = calloc(1, sizeof *m);
  if (!m) {
    sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_create: out of memory");
    return NULL;
  }
  pthread_mutex_init(&m->lock, NULL);
  pthread_mutex_init(&m->fin_lock, NULL);
  m->rank_override = -1;
  m->file_rank = -1;
  pthread_mutex_init(&m->ext_lock, NULL);
  m->lane_col = -1;
  if (sp__slot_acquire(m) < 0) {
    pthread_mutex_destroy(&m->lock);
    free(m);
    sp__set_error(SP_ERR_LIMIT, "sp_manager_create: %d managers are alive already; destroy one first",
                  SP_I_MAX_MANAGERS - 1);
    return NULL;
  }
  sp__optin_reset(m); /* its first opt-in key */
  set_live(m, 1);
  return m;
}

void sp_manager_destroy(sp_manager *m) {
  if (!m || m->is_default) return;
  __atomic_store_n(&m->hot.state, SP_I_STATE_OFF, __ATOMIC_RELEASE);
  set_live(m, 0);
  sp__slot_release(m);
  sp__ext_teardown(m);
  sp__stream_close(m);
  sp__threads_free(m);
  sp__tasks_free(m);
  sp__xctx_free(m);
  if (m->have_cfg) sp__config_free(&m->cfg);
  free(m->calls_done);
  free(m->kept_msg);
  free(m->output_path);
  free(m->cut_ids);
  free(m->anchors);
  free(m->hot.optin_off);
  for (size_t i = 0; i < m->noptin_retired; i++) free(m->optin_retired[i]);
  free(m->optin_retired);
  free(m->hot.plain);
  for (size_t i = 0; i < m->nplain_retired; i++) free(m->plain_retired[i]);
  free(m->plain_retired);
  free(m->ext_rmask);
  for (size_t i = 0; i < m->next_user; i++) {
    if (m->ext_user[i].destroy && m->ext_user[i].p) m->ext_user[i].destroy(m->ext_user[i].p);
    free(m->ext_user[i].name);
  }
  pthread_mutex_destroy(&m->lock);
  pthread_mutex_destroy(&m->fin_lock);
  pthread_mutex_destroy(&m->ext_lock);
  free(m);
}

/* Evicts the cache lines of [p, p + len) (written back if dirty). */
static void flush_lines(const void *p, size_t len) {
#if defined(__x86_64__) || defined(__i386__)
  for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < (uintptr_t)p + len; a += 64)
    __builtin_ia32_clflush((const void *)a);
#elif defined(__aarch64__)
  for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < (uintptr_t)p + len; a += 64)
    __asm__ volatile("dc civac, %0" ::"r"(a) : "memory");
#else
  (void)p, (void)len;
#endif
}

/* The calibration record armed for its whole buffer at depth 0, as a
 * thread's own record is when the slow path arms it (sp__thread_rearm),
 * whatever context the calling thread adopted: a pair in the calibration
 * loops then never leaves the inlined path. */
static void calib_arm(sp_thread_rec *priv) {
  priv->hot.stack_lim = priv->hot.stack_cap;
  priv->hot.end_floor = 0;
  uint64_t buf = priv->hot.cap - priv->hot.n, stk = priv->hot.stack_cap - priv->hot.depth;
  priv->hot.room = buf < stk ? buf : stk;
}

/* One pair when none of the lines it touches is cached: what a call costs
 * after program work that evicted them (a memory-bound loop between calls),
 * beside the warm pair measured back to back. Each of 31 pairs follows the
 * eviction of the calibration record's lines (TLS slot, thread record, open
 * stack, event slot or aggregation entries, the manager's line), timed
 * alone; the median, less what the two clock reads cost. The code's own
 * lines and the TLB stay warm. About 0.1 ms. Negative where this build
 * cannot evict a line. */
static double calibrate_cold(struct sp_manager *m, sp_thread_rec *priv, sp_region r) {
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  enum { K = 31 };
  double per[K], clock_ns = -1;
  for (int i = 0; i < 16; i++) {
    int64_t a = sp__mono_ns(), b = sp__mono_ns();
    if (clock_ns < 0 || (double)(b - a) < clock_ns) clock_ns = (double)(b - a);
  }
  for (int k = 0; k < K; k++) {
    struct sp_i_thread *h = &priv->hot;
    flush_lines(&sp_i_tls.t[m->hot.slot], sizeof sp_i_tls.t[0]);
    flush_lines(h, sizeof *h);
    flush_lines(h->ev + h->n, sizeof *h->ev);
    flush_lines(h->stack + h->depth, sizeof *h->stack);
    if (h->top) flush_lines(h->top - 1, 2 * sizeof *h->top);
    if (h->acc && r < h->acc_cap) flush_lines(h->acc + r, sizeof *h->acc);
    flush_lines(&m->hot, sizeof m->hot);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_mfence();
#else
    __asm__ volatile("dsb sy" ::: "memory");
#endif
    int64_t a = sp__mono_ns();
    sp_i_begin(m, r);
    sp_i_end(m, r);
    per[k] = (double)(sp__mono_ns() - a) - clock_ns;
  }
  if (priv->cols) sp__ext_fill(m, priv->cols, 0, priv->hot.n);
  priv->hot.n = 0;
  calib_arm(priv);
  for (int i = 1; i < K; i++) /* insertion sort: 31 values */
    for (int j = i; j > 0 && per[j] < per[j - 1]; j--) {
      double t = per[j];
      per[j] = per[j - 1];
      per[j - 1] = t;
    }
  return per[K / 2] > 0 ? per[K / 2] : 0;
#else
  (void)m, (void)priv, (void)r;
  return -1;
#endif
}

/* The profiler's own cost per begin/end pair in the mode this run records
 * in, measured on the calling thread through a private thread record that is
 * swapped into its TLS slot and thrown away, so the run records nothing of
 * it. Stored as metadata and used to flag regions whose calls are too short
 * to measure meaningfully. */
static double calibrate_overhead(struct sp_manager *m) {
  enum { N = 4096 };
  sp_region r = sp_region_intern("scope_profiler.calibration");
  if (!r) return -1;
  sp_thread_rec priv;
  memset(&priv, 0, sizeof priv);
  priv.m = m;
  /* A source's signal handler (line samples) sees no region open on this
   * thread meanwhile: the calibration is the profiler's own work, no
   * region of the run's. */
  priv.busy = 1;
  priv.hot.cap = N + 1;
  priv.hot.stack_cap = N + 1; /* room for every pair of a loop (calib_arm) */
  priv.hot.stack_lim = N + 1;
  calib_arm(&priv);
  priv.hot.ev = malloc(priv.hot.cap * sizeof *priv.hot.ev);
  priv.hot.stack = malloc(priv.hot.stack_cap * sizeof *priv.hot.stack);
  priv.cols = m->ext_stride ? malloc(priv.hot.cap * (size_t)m->ext_stride * sizeof *priv.cols) : NULL;
  if (priv.cols) sp__ext_fill(m, priv.cols, 0, priv.hot.cap);
  double best = -1;
  if (priv.hot.ev && priv.hot.stack && (!m->ext_stride || priv.cols) && sp__thread_grow_open(&priv) == 0 &&
      sp__ext_grow_open(m, &priv) == 0 && sp__thread_grow_acc(&priv, r + 1) == 0) {
    struct sp_i_thread *saved_t = sp_i_tls.t[m->hot.slot];
    uint32_t saved_gen = sp_i_tls.gen[m->hot.slot];
    sp_i_tls.t[m->hot.slot] = &priv.hot;
    sp_i_tls.gen[m->hot.slot] = m->hot.gen;
    for (int rep = 0; rep < 3; rep++) { /* best of 3 */
      int64_t a = sp__mono_ns();
      for (int i = 0; i < N; i++) {
        sp_i_begin(m, r);
        sp_i_end(m, r);
      }
      int64_t b = sp__mono_ns();
      double per = (double)(b - a) / N;
      if (best < 0 || per < best) best = per;
      if (priv.cols) sp__ext_fill(m, priv.cols, 0, priv.hot.n);
      priv.hot.n = 0;
      calib_arm(&priv);
    }
    /* The same pairs forced out of line: what a call costs that the inlined
     * path hands over (a new thread, a full buffer, pause, an extension's
     * region), for the overhead estimate. */
    double slow = -1;
    for (int rep = 0; rep < 3; rep++) {
      int64_t a = sp__mono_ns();
      for (int i = 0; i < N; i++) {
        sp_i_begin_slow(m, r);
        sp_i_end_slow(m, r);
      }
      double per = (double)(sp__mono_ns() - a) / N;
      if (slow < 0 || per < slow) slow = per;
      if (priv.cols) sp__ext_fill(m, priv.cols, 0, priv.hot.n);
      priv.hot.n = 0;
    }
    calib_arm(&priv); /* the slow path re-armed it as the calling thread's */
    m->overhead_slow_ns = slow > best ? (slow - best) / 2 : 0;
    m->overhead_cold_ns = calibrate_cold(m, &priv, r);
    if (m->overhead_cold_ns >= 0 && m->overhead_cold_ns < best) m->overhead_cold_ns = best; /* noise */
    sp_i_tls.t[m->hot.slot] = saved_t;
    sp_i_tls.gen[m->hot.slot] = saved_gen;
  }
  sp__ext_thread_release(m, &priv); /* detaches what the calibration attached */
  free(priv.hot.ev);
  free(priv.hot.stack);
  sp__thread_free_open(&priv.hot);
  free(priv.hot.acc);
  free(priv.cols);
  free(priv.optin);
  return best;
}

/* The first touch of a fresh page (the kernel zeroes it; on a VM the host
 * may allocate it too): the part of recording into freshly grown buffers
 * that the calibrated pair does not show. Best of 3 over 32 pages. */
static double calibrate_fault(void) {
  enum { PAGES = 32, PAGE = 4096 };
  double best = -1;
  for (int rep = 0; rep < 3; rep++) {
    char *p = mmap(NULL, PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    int64_t a = sp__mono_ns();
    for (int i = 0; i < PAGES; i++) ((volatile char *)p)[i * PAGE] = 1;
    double per = (double)(sp__mono_ns() - a) / PAGES;
    munmap(p, PAGES * PAGE);
    if (best < 0 || per < best) best = per;
  }
  return best;
}

static sp_status setup_run(sp_manager *m, const sp_setup_args *args) {
  if (!m) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_setup: manager is NULL");
  sp__clock_init();
  m->hot.clock = (uint32_t)sp_i_clock_tsc; /* the inlined path's copy */
  pthread_once(&atfork_once, register_atfork);
  if (m->forked_child) drop_inherited(m);
  if (m->run_active && !(args && args->replace))
    return sp__set_error(SP_ERR_ALREADY_ACTIVE,
                         "setup: a run is already active on this manager; finalize it first, or pass "
                         "replace=1 to discard it and start over");
  struct sp_config cfg;
  sp_status st = sp__config_for_setup(&cfg, args, 0);
  if (st != SP_OK) return st;
  if (m->is_default && m->hot.gen == 0) {
    if (sp__slot_acquire(m) < 0) {
      sp__config_free(&cfg);
      return sp__set_error(SP_ERR_LIMIT, "setup: no TLS slot for the default manager");
    }
    set_live(m, 1);
  }
  __atomic_store_n(&m->hot.state, SP_I_STATE_OFF, __ATOMIC_RELEASE);
  if (m->run_active) { /* replace: the old run's calls are dropped */
    sp__snapshot_compact(m);
    sp__snapshot_compact_aggregate(m);
  }
  if (m->have_cfg && cfg.aggregation_mode != m->cfg.aggregation_mode) {
    /* Open calls cannot change representation: they are dropped. */
    for (sp_thread_rec *t = m->threads; t; t = t->next) {
      t->hot.depth = 0;
      t->hot.n = 0;
      sp__agg_set_nopen(&t->hot, 0);
    }
  }
  sp__ext_teardown(m);
  if (m->have_cfg) sp__config_free(&m->cfg);
  m->cfg = cfg;
  m->have_cfg = 1;
  if ((st = per_rank_file_path(m)) != SP_OK) {
    m->run_active = 0;
    return st;
  }
  st = sp__ext_setup(m);
  if (st != SP_OK) {
    m->run_active = 0;
    return st;
  }
  pthread_mutex_lock(&m->lock); /* the signal watcher adds anchors */
  sp__clock_anchor(&m->run_tick0, &m->run_ns0);
  m->run_mono0 = sp__clock_now_ns();
  m->nanchors = 0;
  pthread_mutex_unlock(&m->lock);
  m->setup_ns = m->run_ns0;
  m->cfg.start_time_ns = m->run_ns0;
  m->paused = 0;
  m->cfg.paused = 0;
  memset(&m->problems, 0, sizeof m->problems);
  m->optin_epoch++;
  sp__optin_reset(m);
  m->configured = 1;
  m->run_active = 1;
  m->cut_by = NULL;
  m->exit_hook = (args && args->auto_finalize) || m->cfg.finalize_on_exit;
  if (m->exit_hook) pthread_once(&atexit_once, register_atexit);
  /* Ranks of one launch that write one job file each spill to their own
   * file, recorded with their rank, so `recover` rebuilds the job's file. */
  int lrank = -1, lsize = -1, ranked = sp__launcher_world(&lrank, &lsize) && !m->per_rank_file;
  m->spill_rank = lrank;
  m->spill_size = lsize;
  int n = ranked ? snprintf(m->spill_path, sizeof m->spill_path, "%s.rank%d.spill", m->cfg.file_path, lrank)
                 : snprintf(m->spill_path, sizeof m->spill_path, "%s.spill", m->cfg.file_path);
  if (n < 0 || (size_t)n >= sizeof m->spill_path) m->spill_path[0] = 0;
  if (!m->cfg.deactivate_profiling && !m->cfg.deactivate_file_output && (st = sp__signals_install(&m->cfg)) != SP_OK) {
    m->run_active = 0;
    return st;
  }
  sp__manager_publish_state(m);
  m->overhead_slow_ns = 0;
  m->overhead_cold_ns = -1;
  m->overhead_ns = m->hot.state != SP_I_STATE_OFF && !m->paused ? calibrate_overhead(m) : -1;
  m->overhead_fault_ns = m->overhead_ns >= 0 ? calibrate_fault() : -1;
  return SP_OK;
}

/* A program written like the README never looks at setup's status: a
 * setup that fails must say so itself, or the run silently records
 * nothing. */
sp_status sp__manager_setup_ex(sp_manager *m, const sp_setup_args *args, unsigned flags) {
  /* Under `scope-profiler run` the program's own setup joins the launcher's
   * run: its settings come from the environment, which outranks options. */
  if (sp__autorun_owns(m)) return SP_OK;
  sp_status st = setup_run(m, args);
  if (flags & SP__SETUP_SILENT) return st;
  if (st == SP_OK) {
    sp__config_warn_unavailable(&m->cfg);
  } else if (!sp__config_quiet_hint(args)) {
    sp__message(SP_MESSAGE_ERROR, "setup failed, %s: %s",
                m && m->run_active ? "the run already active goes on unchanged"
                                   : "so this run records nothing",
                sp_last_error());
  }
  return st;
}

/* SCOPE_PROFILER_MPI=0 (or any false spelling). */
static int mpi_forced_off(void) {
  const char *e = getenv("SCOPE_PROFILER_MPI");
  static const char *const off[] = {"0", "false", "no", "off"};
  for (size_t i = 0; e && i < 4; i++)
    if (strcasecmp(e, off[i]) == 0) return 1;
  return 0;
}

/* Several processes of one launch that will not write one job file (the
 * library without its MPI layer, or SCOPE_PROFILER_MPI=0) would all write
 * file_path, each replacing the last: each gets <stem>.rank<R><suffix>, and
 * rank 0 says so once. */
static sp_status per_rank_file_path(struct sp_manager *m) {
  int rank, size;
  m->per_rank_file = 0;
  m->file_rank = -1;
  if (!sp__launcher_world(&rank, &size) || (sp__mpi_ops && !mpi_forced_off())) return SP_OK;
  const char *p = m->cfg.file_path, *base = strrchr(p, '/');
  base = base ? base + 1 : p;
  const char *dot = strrchr(base, '.');
  size_t stem = dot && dot != base ? (size_t)(dot - p) : strlen(p);
  char *ranked = sp__asprintf("%.*s.rank%d%s", (int)stem, p, rank, p + stem);
  if (!ranked) return sp__set_error(SP_ERR_NO_MEMORY, "setup: out of memory");
  if (rank == 0 && !m->cfg.quiet)
    sp__message(SP_MESSAGE_WARNING,
                "%d processes of one launch without an MPI job file (%s): each writes its own, %.*s.rank<N>%s; "
                "link libscope_profiler_mpi for one file of the job",
                size, sp__mpi_ops ? "SCOPE_PROFILER_MPI=0" : "this program does not use libscope_profiler_mpi",
                (int)stem, p, p + stem);
  free(m->cfg.file_path);
  m->cfg.file_path = ranked;
  m->per_rank_file = 1;
  m->file_rank = rank;
  return SP_OK;
}

sp_status sp_manager_setup(sp_manager *m, const sp_setup_args *args) {
  return sp__manager_setup_ex(m, args, 0);
}

static void collect_problems(struct sp_manager *m, uint64_t open_calls) {
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    m->problems.unmatched_ends += t->unmatched_ends;
    m->problems.invalid_regions += t->invalid_regions;
    m->problems.dropped_events += t->dropped_events;
    m->problems.left_open += t->left_open;
    t->unmatched_ends = t->invalid_regions = t->dropped_events = t->left_open = 0;
  }
  m->problems.open_at_finalize = open_calls;
}

/* After the write: each region's completed calls join its count. A run
 * the filler wrote takes its first pass's counts (the logs are read again
 * only where they grew or held open calls; a whole read of them was a
 * twentieth of a finalize). */
static int count_done_calls(struct sp_manager *m, void *snap_ctx) {
  uint32_t maxid = sp__region_max_id();
  if (maxid + 1 > m->calls_done_cap) {
    uint64_t *n = realloc(m->calls_done, ((size_t)maxid + 1) * sizeof *n);
    if (!n) return -1;
    memset(n + m->calls_done_cap, 0, ((size_t)maxid + 1 - m->calls_done_cap) * sizeof *n);
    m->calls_done = n;
    m->calls_done_cap = maxid + 1;
  }
  int counted = sp__snapshot_fill_done_calls(snap_ctx, m, m->calls_done, maxid) == 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    for (uint64_t i = 0; !counted && i < t->hot.n; i++)
      /* a region interned since maxid was read has no count yet */
      if (t->hot.ev[i].end && t->hot.ev[i].region <= maxid) m->calls_done[t->hot.ev[i].region]++;
    for (uint32_t id = 0; id < t->hot.acc_cap && id <= maxid; id++) m->calls_done[id] += t->hot.acc[id].count;
  }
  for (uint32_t id = 1; id <= maxid; id++) m->calls_done[id] += sp__stream_calls(m, id);
  return 0;
}

/* A time relative to the run's start_time_ns, as the lane tables store
 * them (docs/file-format.md); -1 stays -1. */
static int64_t relative(const struct sp_manager *m, int64_t t) { return t == -1 ? -1 : t - m->cfg.start_time_ns; }

/* A run's lane tables list the threads and tasks of that run: alive at some
 * time during it. A manager keeps its threads' and tasks' records for its
 * whole life (their indices are the values of events/thread_ids and
 * task_ids), so those that ended before the run began are left out. */
static int task_in_run(const struct sp_manager *m, const struct sp_task *k) {
  return !k->done_at || k->done_at >= m->run_tick0;
}
static int thread_in_run(const struct sp_manager *m, const sp_thread_rec *t) {
  return !t->exited || t->last_ns >= m->run_mono0;
}

static sp_status add_task_table_locked(struct sp_manager *m, struct sp_run *run, const struct sp_clock_map *cm) {
  size_t n = 0;
  for (size_t i = 0; i < m->ntasks; i++) n += task_in_run(m, m->tasks[i]);
  struct sp_table *tb = sp__run_add_table(run, SP_GRP_TASK_TABLE, n);
  if (!tb) return SP_ERR_NO_MEMORY;
  double scale = (double)cm->mult / 4294967296.0;
  uint64_t now = sp_i_ticks();
  int64_t *index = sp__table_i64(tb, SP_DS_TASK_INDEX), *thread = sp__table_i64(tb, SP_DS_TASK_THREAD_INDEX);
  int64_t *created = sp__table_i64(tb, SP_DS_TASK_CREATED_NS), *done = sp__table_i64(tb, SP_DS_TASK_DONE_NS);
  int64_t *steps = sp__table_i64(tb, SP_DS_TASK_STEPS), *running = sp__table_i64(tb, SP_DS_TASK_RUNNING_NS);
  int64_t *suspended = sp__table_i64(tb, SP_DS_TASK_SUSPENDED_NS), *sw = sp__table_i64(tb, SP_DS_TASK_SWITCH_ID);
  char **kind = sp__table_str(tb, SP_DS_TASK_KIND), **name = sp__table_str(tb, SP_DS_TASK_NAME);
  char **coro = sp__table_str(tb, SP_DS_TASK_CORO_NAME);
  for (size_t j = 0, i = 0; j < m->ntasks && i < n; j++) {
    const struct sp_task *k = m->tasks[j];
    if (!task_in_run(m, k)) continue;
    /* running now (its stack is in its thread's state): until now, or until
     * it was marked done if it has not been switched out since */
    uint64_t until = k->done_at >= k->in_at && k->done_at ? k->done_at : now;
    uint64_t run_ticks = k->running + (k->stack == NULL && until >= k->in_at ? until - k->in_at : 0);
    index[i] = k->index;
    sw[i] = (int64_t)k->id;
    thread[i] = k->thread ? (int64_t)k->thread->index : -1;
    steps[i] = (int64_t)k->steps;
    running[i] = (int64_t)((double)run_ticks * scale);
    suspended[i] = (int64_t)((double)k->suspended * scale);
    created[i] = relative(m, sp__ticks_to_ns(cm, k->created));
    done[i] = k->done_at ? relative(m, sp__ticks_to_ns(cm, k->done_at)) : -1;
    kind[i] = sp__strdup(k->kind ? k->kind : "task");
    name[i] = sp__strdup(k->name ? k->name : "");
    coro[i] = sp__strdup(k->coro_name ? k->coro_name : "");
    if (!kind[i] || !name[i] || !coro[i]) return SP_ERR_NO_MEMORY;
    i++;
  }
  return SP_OK;
}

/* Under the manager's lock: a task created or described on another thread
 * (sp_manager_task_describe) must not change the list while it is read. */
static sp_status add_task_table(struct sp_manager *m, struct sp_run *run, const struct sp_clock_map *cm) {
  pthread_mutex_lock(&m->lock);
  sp_status st = add_task_table_locked(m, run, cm);
  pthread_mutex_unlock(&m->lock);
  return st;
}

static sp_status add_thread_table(struct sp_manager *m, struct sp_run *run) {
  size_t n = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) n += thread_in_run(m, t);
  struct sp_table *tb = sp__run_add_table(run, SP_GRP_THREAD_TABLE, n);
  if (!tb) return SP_ERR_NO_MEMORY;
  int64_t *index = sp__table_i64(tb, SP_DS_THR_INDEX), *ident = sp__table_i64(tb, SP_DS_THR_IDENT);
  int64_t *native = sp__table_i64(tb, SP_DS_THR_NATIVE_ID), *start = sp__table_i64(tb, SP_DS_THR_START_NS);
  int64_t *end = sp__table_i64(tb, SP_DS_THR_END_NS), *cpu = sp__table_i64(tb, SP_DS_THR_CPU_NS);
  int64_t *omp = sp__table_i64(tb, SP_DS_THR_OMP_THREAD);
  char **name = sp__table_str(tb, SP_DS_THR_NAME);
  size_t i = 0;
  for (sp_thread_rec *t = m->threads; t && i < n; t = t->next) {
    if (!thread_in_run(m, t)) continue;
    index[i] = t->index;
    ident[i] = (int64_t)t->ident;
    native[i] = t->tid;
    omp[i] = t->omp_thread;
    start[i] = relative(m, t->first_ns);
    end[i] = t->exited ? relative(m, t->last_ns) : -1;
    cpu[i] = t->exited ? t->cpu_ns : -1;
    /* the finalizing thread can read its own clock: a lower bound, as upstream samples live threads */
    struct timespec ts;
    if (!t->exited && t->ident == (uint64_t)pthread_self() && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
      cpu[i] = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (!(name[i] = sp__strdup(t->name))) return SP_ERR_NO_MEMORY;
    i++;
  }
  /* daemon stays 0: a C thread is never a daemon */
  return SP_OK;
}

/* The problems counted since setup, and the calls cut short in this run, as
 * metadata (docs/reliability.md). */
static int add_problem_meta(struct sp_manager *m, struct sp_meta *meta, uint64_t open_calls, const char *cut) {
  sp_problem_counts p = sp_manager_problems(m);
  int rc = 0;
  rc |= sp__meta_i64(meta, SP_META_PROBLEMS_UNMATCHED, (int64_t)p.unmatched_ends);
  rc |= sp__meta_i64(meta, SP_META_PROBLEMS_INVALID, (int64_t)p.invalid_regions);
  rc |= sp__meta_i64(meta, SP_META_PROBLEMS_LEFT_OPEN, (int64_t)p.left_open);
  rc |= sp__meta_i64(meta, SP_META_OPEN_AT_FINALIZE, (int64_t)open_calls);
  if (!cut && !m->ncut) return rc;
  if (cut) rc |= sp__meta_str(meta, SP_META_CUT_SHORT, cut);
  rc |= sp__meta_i64(meta, SP_META_CUT_SHORT_CALLS, (int64_t)m->ncut);
  size_t cap = 16 + m->ncut * 21, len = 0;
  char *js = malloc(cap);
  if (!js) return -1;
  js[len++] = '[';
  for (size_t i = 0; i < m->ncut; i++)
    len += (size_t)snprintf(js + len, cap - len, "%s%lld", i ? ", " : "", (long long)m->cut_ids[i]);
  snprintf(js + len, cap - len, "]");
  rc |= sp__meta_str(meta, SP_META_CUT_SHORT_CALL_IDS, js);
  free(js);
  return rc;
}

/* The work of finalize, for a run that ended at (tick1, ns1). `recovered`
 * is the signal a spill file was written on (0 for a normal finalize). */
static sp_status finalize_map(struct sp_manager *m, const sp_finalize_args *args, sp_results **results,
                              uint64_t tick1, int64_t ns1, int recovered, int complete, const char *cut,
                              int peek, struct sp_clock_map cm);

static sp_status finalize_run(struct sp_manager *m, const sp_finalize_args *args, sp_results **results,
                              uint64_t tick1, int64_t ns1, int recovered, int complete, const char *cut,
                              int peek) {
  struct sp_clock_map cm = sp__clock_map(m->run_tick0, m->run_ns0, tick1, ns1);
  struct sp_clock_seg *seg = sp__clock_segments(m, tick1, ns1, &cm.nseg);
  cm.seg = seg;
  sp_status st = finalize_map(m, args, results, tick1, ns1, recovered, complete, cut, peek, cm);
  free(seg);
  return st;
}

static sp_status finalize_map(struct sp_manager *m, const sp_finalize_args *args, sp_results **results,
                              uint64_t tick1, int64_t ns1, int recovered, int complete, const char *cut,
                              int peek, struct sp_clock_map cm) {
  /* A run cut short (a termination signal, the exit hook, a crash) ends
   * here for good: its open calls end at this instant, marked, so the tree
   * keeps its root and every parent. */
  if (cut) sp__cut_open_calls(m, tick1);

  /* Under MPI every rank gets here (finalize is collective there). */
  const struct sp_mpi_ops *mpi = sp__mpi_ops && sp__mpi_ops->in_use() ? sp__mpi_ops : NULL;
  /* a spill recovered as one rank of a job keeps its rank */
  /* a launcher rank's own file records its rank (its index rows, lane
   * tables and rank<N>/ groups), so that import-native merges the ranks'
   * files as upstream's per-rank files */
  uint32_t rank = mpi                    ? (uint32_t)mpi->rank()
                  : m->rank_override >= 0 ? (uint32_t)m->rank_override
                  : m->file_rank >= 0     ? (uint32_t)m->file_rank
                                          : 0;
  struct sp_run run;
  uint64_t open_calls = 0;
  int agg = m->cfg.aggregation_mode;
  /* A run that streamed (bounded memory) is assembled from its staging file. */
  int streamed = !agg && !mpi && sp__stream_active(m);
  /* A peek (the program's finalize under `run`) builds results and leaves
   * the run as it is; a streamed run cannot be read without consuming it. */
  if (peek && (streamed || !results || !args->return_results)) return SP_OK;
  void *fill_ctx = NULL;
  if (m->next) {
    /* Sources drain, late values arrive, and the buffered calls join the
     * per-region totals (a streamed run's handoffs fold their own). A peek
     * leaves the extensions alone: their samples, captures and totals
     * belong to the file written at exit, so its results carry the calls
     * and their column values only. */
    if (!peek) sp__ext_before_snapshot(m);
    /* A run in memory folds its buffered calls afresh at each finalize: one
     * that failed before it was written left them folded, and in the
     * buffers. (Streamed and aggregated calls folded as they left the
     * buffers, once: theirs stay until the run is written.) */
    if (!agg && !streamed && !peek) sp__ext_totals_clear(m);
    for (sp_thread_rec *t = m->threads; t; t = t->next) {
      sp__ext_resolve(m, t, t->hot.n);
      if (!agg && !streamed && !peek) sp__ext_fold_events(m, t, t->hot.ev, t->cols, t->hot.n);
    }
  }
  /* A run written to its file and nothing else is written as it is built
   * (no whole-run columns); results and MPI's writers take the columns. */
  void *snap_ctx = NULL;
  int direct = !agg && !streamed && !mpi && !m->run_sink && !m->cfg.deactivate_file_output &&
               !(results && args->return_results);
  sp_status st = agg        ? sp__snapshot_build_aggregate(m, &cm, rank, &run, &open_calls)
                 : streamed ? sp__stream_build(m, &cm, rank, &run, &open_calls, &fill_ctx)
                 : direct   ? sp__snapshot_fill_build(m, &cm, rank, &run, &open_calls, &snap_ctx)
                            : sp__snapshot_build(m, &cm, rank, &run, &open_calls);
  if (st == SP_OK && direct && !snap_ctx) st = sp__snapshot_build(m, &cm, rank, &run, &open_calls);
  if (st != SP_OK) return st;
  /* Thread ids always come with the thread table their values index, also
   * when they were written without track_threads (calls of several threads) */
  int thread_ids = m->cfg.track_threads;
  for (size_t c = 0; c < run.nextra && !thread_ids; c++) thread_ids = run.extra[c].id == SP_DS_THREAD_IDS;
  if ((thread_ids && add_thread_table(m, &run) != SP_OK) ||
      (m->cfg.track_async && add_task_table(m, &run, &cm) != SP_OK)) {
    sp__run_free(&run);
    sp__snapshot_fill_free(snap_ctx);
    return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the thread and task tables");
  }
  if (sp__metadata_collect(&m->cfg, m->cfg.start_time_ns, mpi ? mpi->size() : 1, &run.meta) != 0) {
    sp__run_free(&run);
    sp__snapshot_fill_free(snap_ctx);
    return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory collecting metadata");
  }
  if (mpi && (st = mpi->metadata(&run.meta, &m->cfg)) != SP_OK) {
    sp__run_free(&run);
    return st;
  }
  sp__meta_i64(&run.meta, SP_META_FINALIZE_TIME_NS, ns1);
  /* What the run paid: each region's calls at the pair cost their length
   * implies (common/overhead.h: warm back to back, cold after long work),
   * plus what the out-of-line calls, fresh pages, growth and hand-offs
   * added once, which no single call pays. */
  struct sp_overhead ovh = sp__overhead_collect(m, &run, &cm, peek);
  double ovh_total = ovh.extra_ns;
  for (size_t i = 0; i < run.nrows; i++) {
    const struct sp_row *row = &run.rows[i];
    double n = row->count ? (double)row->count : (double)row->aggregate_count;
    ovh_total += n * sp__ovh_call_ns(row->stats.mean, m->overhead_ns, m->overhead_cold_ns);
  }
  double ovh_per_call = m->overhead_ns < 0 ? -1 : ovh.calls ? ovh_total / (double)ovh.calls : m->overhead_ns;
  if (m->overhead_ns >= 0 &&
      (sp__meta_f64(&run.meta, SP_META_OVERHEAD, ovh_per_call) ||
       sp__meta_f64(&run.meta, SP_META_OVERHEAD_PAIR, m->overhead_ns) ||
       (m->overhead_cold_ns >= 0 && sp__meta_f64(&run.meta, SP_META_OVERHEAD_COLD_PAIR, m->overhead_cold_ns)) ||
       sp__meta_f64(&run.meta, SP_META_OVERHEAD_TOTAL, ovh_total) ||
       sp__meta_f64(&run.meta, SP_META_OVERHEAD_EXTRA, ovh.extra_ns) ||
       sp__meta_i64(&run.meta, SP_META_OVERHEAD_SLOW_CALLS, (int64_t)ovh.slow_calls) ||
       sp__meta_i64(&run.meta, SP_META_OVERHEAD_FRESH_BYTES, (int64_t)ovh.fresh_bytes))) {
    sp__run_free(&run);
    sp__stream_fill_free(fill_ctx);
    sp__snapshot_fill_free(snap_ctx);
    return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory collecting metadata");
  }
  if (!peek && (st = sp__ext_emit(m, &run, rank, &cm)) != SP_OK) {
    sp__run_free(&run);
    sp__stream_fill_free(fill_ctx);
    sp__snapshot_fill_free(snap_ctx);
    return st;
  }
  if (recovered) {
    sp__meta_i64(&run.meta, SP_META_RECOVERED, recovered);
    sp__meta_i64(&run.meta, SP_META_RECOVERY_COMPLETE, complete);
    if (m->recovered_lost) sp__meta_i64(&run.meta, "streamed_blocks_lost", (int64_t)m->recovered_lost);
  }
  if (add_problem_meta(m, &run.meta, open_calls, cut) != 0) {
    sp__run_free(&run);
    sp__stream_fill_free(fill_ctx);
    sp__snapshot_fill_free(snap_ctx);
    return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory collecting metadata");
  }

  sp_status io = SP_OK;
  char io_msg[2048] = "";
  int unwritten = 0; /* the file was to be written, and was not */
  if (m->run_sink) { /* one rank of a job being recovered: the caller writes the job */
    *m->run_sink = run;
    memset(&run, 0, sizeof run);
  } else if (!m->cfg.deactivate_file_output && !peek) {
    /* A crash from here on finds the run's calls in the staged file, under
     * either of its names, or says it was published (spill.c). */
    __atomic_store_n(&m->pub_state, SP_PUBSTATE_WRITING, __ATOMIC_RELEASE);
    if (sp__h5_test_publish_hook) sp__h5_test_publish_hook(SP_PUB_WRITE);
    io = mpi ? mpi->write(&run, &m->cfg, m->cfg.file_path) : sp__h5_write_file(&run, &m->cfg, m->cfg.file_path);
    if (io != SP_OK && sp__snapshot_fill_retry(snap_ctx)) io = sp__h5_write_file(&run, &m->cfg, m->cfg.file_path);
    unwritten = io != SP_OK;
    /* (a job's other ranks return before rank 0 publishes the file) */
    __atomic_store_n(&m->pub_state,
                     io != SP_OK                ? SP_PUBSTATE_NONE
                     : mpi && mpi->rank() != 0 ? SP_PUBSTATE_WRITING
                                               : SP_PUBSTATE_DONE,
                     __ATOMIC_RELEASE);
    if (io == SP_OK && sp__h5_test_publish_hook) sp__h5_test_publish_hook(SP_PUB_WRITTEN);
    if (io == SP_OK) {
      free(m->output_path);
      m->output_path = sp__strdup(m->cfg.file_path);
    } else {
      snprintf(io_msg, sizeof io_msg, "%s", sp_last_error());
    }
  }
  if (results && args->return_results && mpi) {
    sp_status rs = mpi->results(&run, &m->cfg, results);
    if (rs != SP_OK && io == SP_OK) {
      io = rs;
      snprintf(io_msg, sizeof io_msg, "%s", sp_last_error());
    }
  } else if (results && args->return_results) {
    void *image = NULL;
    size_t size = 0;
    sp_status rs = sp__h5_write_image(&run, &m->cfg, &image, &size);
    if (rs == SP_OK) rs = sp_results_open_image(image, size, results);
    free(image);
    if (rs != SP_OK && io == SP_OK) {
      io = rs;
      snprintf(io_msg, sizeof io_msg, "%s", sp_last_error());
    }
  }
  sp__snapshot_fill_settle(snap_ctx);
  if (peek) {
    sp__run_free(&run);
    return io == SP_OK ? SP_OK : sp__set_error(io, "%s", io_msg);
  }
  /* A streamed run whose file could not be written stays as it is, active:
   * its calls are on disk, in its staging files, and a retry once the cause
   * is fixed, the exit hook or a crash's spill still has them (review11 F8:
   * reset, the journal was emptied and no spill written). A run kept in
   * memory loses its completed calls instead (test-finalize
   * failed_write_case). */
  if (unwritten && streamed && sp__stream_keep_failed(m)) {
    sp__run_free(&run);
    sp__stream_fill_free(fill_ctx);
    free(m->kept_msg);
    m->kept_msg = sp__strdup(io_msg);
    return sp__set_error(io,
                         "%s. The run is kept as it was and goes on recording: finalize again once that is fixed "
                         "(the exit hook does), and a crash from here on leaves a spill that recovers its calls",
                         io_msg);
  }
  if (args->verbose && mpi && mpi->summary) /* collective: rank 0 prints the whole job */
    mpi->summary(&run, &m->cfg, args->summary_stream ? args->summary_stream : stdout);
  else if (args->verbose && (rank == 0 || m->file_rank >= 0))
    sp__summary_print(args->summary_stream ? args->summary_stream : stdout, &run, m->cfg.display_label,
                      m->overhead_ns >= 0 ? &(struct sp_ovh_figures){m->overhead_ns, m->overhead_cold_ns,
                                                                     ovh.extra_ns, ovh_total}
                                          : NULL);
  /* Like upstream's print_stats(): each rank its own line tables. */
  if (args->verbose) sp__summary_print_lines(args->summary_stream ? args->summary_stream : stdout, &run, rank);
  sp__run_free(&run);
  sp__stream_fill_free(fill_ctx);
  count_done_calls(m, snap_ctx);
  sp__snapshot_fill_free(snap_ctx);

  /* From here the buffers are rewritten: a spill written alongside this
   * finalize ends first, and one that starts later leaves them out and
   * says how many calls they held (spill.c). */
  __atomic_store_n(&m->fin_rewrite_calls, ovh.calls + open_calls, __ATOMIC_RELAXED);
  __atomic_store_n(&m->fin_rewriting, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&m->spilling, __ATOMIC_SEQ_CST)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  collect_problems(m, open_calls);
  m->ncut = 0; /* written: the next run notes its own */
  free(m->kept_msg);
  m->kept_msg = NULL;
  if (streamed) /* the handoffs already left only the open calls, with their ids */
    sp__stream_reset(m);
  else
    sp__snapshot_compact(m);
  sp__snapshot_compact_aggregate(m);
  if (m->next) sp__ext_written(m);
  if (sp__h5_test_publish_hook && io == SP_OK && !m->run_sink) sp__h5_test_publish_hook(SP_PUB_RESET);
  /* Recording goes on: the next run starts where this one ended. */
  m->run_tick0 = tick1;
  m->run_ns0 = ns1;
  m->run_mono0 = sp__clock_now_ns();
  m->cfg.start_time_ns = ns1;
  __atomic_store_n(&m->run_active, 0, __ATOMIC_RELEASE);
  /* (no spill is written for a run that is not active: the next run's own
   * crash must not find this one's published state) */
  __atomic_store_n(&m->pub_state, SP_PUBSTATE_NONE, __ATOMIC_RELEASE);
  __atomic_store_n(&m->fin_rewriting, 0, __ATOMIC_SEQ_CST);

  if (io != SP_OK) return sp__set_error(io, "%s", io_msg);
  if (open_calls)
    return sp__set_error(SP_ERR_OPEN_SCOPES,
                         "finalize: %llu call(s) were still open; they were left intact and will be written "
                         "by the next finalize once they end",
                         (unsigned long long)open_calls);
  sp__clear_error();
  return SP_OK;
}

sp_status sp_manager_finalize(sp_manager *m, const sp_finalize_args *args, sp_results **results) {
  if (results) *results = NULL;
  if (!m || !m->configured)
    return sp__set_error(SP_ERR_INACTIVE, "finalize: the manager was never set up; call setup first");
  if (m->forked_child)
    return sp__set_error(SP_ERR_INACTIVE,
                         "finalize in a forked child: the parent's run belongs to the parent and nothing "
                         "was written; to profile the child, call setup in it with its own file_path");
  sp_finalize_args none = {0};
  if (!args) args = &none;
  if (m->cfg.deactivate_profiling) {
    m->run_active = 0;
    return SP_OK; /* nothing was recorded and nothing is written */
  }
  pthread_mutex_lock(&m->fin_lock);
  /* The watcher published the run cut short by a termination signal and is
   * about to let the signal end the process: a finalize of the program that
   * queued meanwhile would write the calls recorded since (none: recording
   * is off) over that file before the process dies. */
  if (m->cut_by) {
    const char *sig = m->cut_by;
    pthread_mutex_unlock(&m->fin_lock);
    return sp__set_error(SP_ERR_INACTIVE,
                         "finalize: the signal watcher has finalized the run, cut short by %s, and the "
                         "process ends with that signal; nothing more is written",
                         sig);
  }
  uint64_t tick1;
  int64_t ns1;
  sp__stream_hold(m); /* a streamed block's map is final before the end anchor (stream.h) */
  sp__clock_anchor(&tick1, &ns1);
  /* Under `scope-profiler run` the file is written at exit; the program's
   * finalize gets the results so far. */
  sp_status st = finalize_run(m, args, results, tick1, ns1, 0, 1, NULL, sp__autorun_owns(m));
  sp__stream_release(m);
  pthread_mutex_unlock(&m->fin_lock);
  return st;
}

sp_status sp__finalize_cut(sp_manager *m, const char *why) {
  if (!m || !m->configured || m->forked_child || m->cfg.deactivate_profiling) return SP_OK;
  sp_finalize_args none = {0};
  pthread_mutex_lock(&m->fin_lock);
  /* Both callers saw the run active before they took the lock: a signal's
   * watcher and the exit hook of a program that returned meanwhile, or the
   * program's own finalize. Whoever came second would write the few calls
   * recorded since over the file the first one published. */
  if (!m->run_active) {
    pthread_mutex_unlock(&m->fin_lock);
    return SP_OK;
  }
  uint64_t tick1;
  int64_t ns1;
  sp__stream_hold(m);
  sp__clock_anchor(&tick1, &ns1);
  sp_status st = finalize_run(m, &none, NULL, tick1, ns1, 0, 1, why, 0);
  sp__stream_release(m);
  if (strcmp(why, "exit") != 0) m->cut_by = why; /* read under fin_lock; `why` is a static name */
  /* the process ends with the signal, without exit handlers */
  if (m->stage_path[0] && strcmp(why, "exit") != 0) unlink(m->stage_path);
  pthread_mutex_unlock(&m->fin_lock);
  return st;
}

sp_status sp__finalize_recovered(struct sp_manager *m, uint64_t tick1, int64_t ns1, int sig, int complete, int rank,
                                 struct sp_run *sink) {
  sp_finalize_args none = {0};
  const char *why = sig > 0 ? sp__signal_name(sig) : NULL;
  m->rank_override = rank;
  m->run_sink = sink;
  /* (signal 0: the spill a run kept after its write failed wrote at exit) */
  sp_status st = finalize_run(m, &none, NULL, tick1, ns1, sig ? sig : -1, complete,
                              why ? why : sig == 0 ? "exit" : "a crash", 0);
  m->rank_override = -1;
  m->run_sink = NULL;
  return st;
}

void sp_manager_pause(sp_manager *m) {
  if (!m) return;
  m->paused = 1;
  if (m->have_cfg) m->cfg.paused = 1;
  sp__manager_publish_state(m);
}

void sp_manager_resume(sp_manager *m) {
  if (!m) return;
  m->paused = 0;
  if (m->have_cfg) m->cfg.paused = 0;
  sp__manager_publish_state(m);
}

int sp_manager_is_active(const sp_manager *m) {
  return m && __atomic_load_n(&m->hot.state, __ATOMIC_RELAXED) != SP_I_STATE_OFF;
}
int sp_manager_is_configured(const sp_manager *m) { return m && m->configured; }
const sp_config *sp_manager_config(const sp_manager *m) { return m && m->have_cfg ? &m->cfg : NULL; }
const char *sp_manager_output_path(const sp_manager *m) { return m ? m->output_path : NULL; }

sp_problem_counts sp_manager_problems(const sp_manager *m) {
  sp_problem_counts p = {0};
  if (!m) return p;
  p = m->problems;
  for (const sp_thread_rec *t = m->threads; t; t = t->next) {
    p.unmatched_ends += t->unmatched_ends;
    p.invalid_regions += t->invalid_regions;
    p.dropped_events += t->dropped_events;
    p.left_open += t->left_open;
  }
  return p;
}

uint64_t sp_manager_num_calls(const sp_manager *m, sp_region r) {
  if (!m) return 0;
  uint32_t id = r & ~SP_I_REGION_SLOW_BIT;
  uint64_t n = id < m->calls_done_cap ? m->calls_done[id] : 0;
  for (const sp_thread_rec *t = m->threads; t; t = t->next) {
    for (uint64_t i = 0; i < t->hot.n; i++)
      if (t->hot.ev[i].region == id && t->hot.ev[i].end) n++;
    if (id < t->hot.acc_cap) n += t->hot.acc[id].count;
  }
  return n + sp__stream_calls(m, id);
}

/*====== Sessions ======*/

sp_session sp_session_begin(sp_manager *m, const sp_setup_args *setup, const sp_finalize_args *fin,
                            sp_results **results) {
  sp_session s;
  memset(&s, 0, sizeof s);
  s.m = m;
  s.fin = fin;
  s.results = results;
  s.once = 1;
  s.status = sp_manager_setup(m, setup);
  s.root = sp_scope_begin(m, sp_region_intern("scope_profiler.session"));
  return s;
}

sp_status sp_session_end(sp_session *s) {
  if (!s->m) return s->status;
  /* One missing end inside the session must not make the session's own
   * end unmatched and drop the root: it closes what is still open inside
   * it (marked cut short, counted as left open). */
  if (s->root.open) {
    s->root.open = 0;
    (void)sp__end_closing(s->m, s->root.r);
  }
  if (s->status == SP_OK) s->status = sp_manager_finalize(s->m, s->fin, s->results);
  s->m = NULL;
  return s->status;
}

void sp_session_cleanup(sp_session *s) { (void)sp_session_end(s); }

sp_status sp_session_run(sp_manager *m, const sp_setup_args *setup, const sp_finalize_args *fin,
                         sp_results **results, void (*fn)(void *user), void *user) {
  sp_session s = sp_session_begin(m, setup, fin, results);
  if (fn) fn(user);
  return sp_session_end(&s);
}

/*====== Default-manager shortcuts ======*/

sp_status sp_setup(const sp_setup_args *args) { return sp_manager_setup(SP_DEFAULT, args); }
sp_status sp_finalize(const sp_finalize_args *args, sp_results **results) {
  return sp_manager_finalize(SP_DEFAULT, args, results);
}
void sp_pause(void) { sp_manager_pause(SP_DEFAULT); }
void sp_resume(void) { sp_manager_resume(SP_DEFAULT); }
int sp_is_active(void) { return sp_manager_is_active(SP_DEFAULT); }
