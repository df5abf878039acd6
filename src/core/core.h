/* core.h - the manager, its threads and the process-wide region registry, as
 * the files of src/core share them.
 *
 * Ownership: a manager owns one sp_thread_rec per thread that ever recorded on
 * it; the thread reaches its record through the TLS slot of the manager
 * (sp_i_tls in detail.h). Records outlive their threads until the manager is
 * destroyed, so a thread that exits before finalize loses nothing; a record
 * whose thread still lives outlives the manager, disarmed (its buffers
 * freed), until that thread attaches to the slot again or ends (record.c),
 * because the inlined path reads the TLS slot without a generation test.
 */
#ifndef SP_CORE_H
#define SP_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config_internal.h"
#include "probes/ext.h"
#include "scope_profiler.h"

/*====== Clock ======*/

/* One piece of a run's clock map: from `tick` on (until the next piece),
 * ns = ns + (t - tick) * mult. */
struct sp_clock_seg {
  uint64_t tick;
  int64_t ns;
  uint64_t mult; /* ns per tick, 32.32 fixed point */
};

/* Maps raw ticks onto CLOCK_MONOTONIC nanoseconds for one run: the straight
 * line through its first and last anchors (durations use its rate), and,
 * where anchors were taken in between (every second, every streamed block),
 * the line through each pair, so that the map follows the monotonic clock's
 * slewing over a long run. */
struct sp_clock_map {
  uint64_t tick0;
  int64_t ns0;
  uint64_t mult; /* ns per tick, 32.32 fixed point */
  const struct sp_clock_seg *seg;
  size_t nseg;   /* 0: the straight line only */
};

void sp__clock_init(void);              /* once per process; picks TSC or clock_gettime */
int64_t sp__mono_ns(void);              /* CLOCK_MONOTONIC now */
/* Now in the ns the run's anchors map ticks to (setup's start_time_ns):
 * CLOCK_MONOTONIC, or the manual clock's ticks under SCOPE_PROFILER_CLOCK=manual. */
int64_t sp__clock_now_ns(void);
const char *sp__clock_name(void);       /* "tsc" or "clock_gettime" */
void sp__clock_anchor(uint64_t *tick, int64_t *ns); /* (tick, ns) taken together */
/* Manual clock (SCOPE_PROFILER_CLOCK=manual): advance it by `ns`. */
SP_API void sp__clock_manual_advance(uint64_t ns);
double sp__clock_tsc_ghz(void);         /* calibrated rate (0 without TSC) */
/* Tests: make the start-up calibration off by `ppm` parts per million, as a
 * 4 ms calibration on a busy machine can be; runs must not depend on it. */
void sp__clock_skew_calibration(double ppm);
/* The map for a run from (tick, ns) pairs at its start and end. */
struct sp_clock_map sp__clock_map(uint64_t tick0, int64_t ns0, uint64_t tick1, int64_t ns1);
__extension__ typedef __int128 sp__i128;
/* The piece of the map (c->nseg > 0) that tick t falls in: the last one
 * that starts at or before t (the first one before all). */
static inline size_t sp__clock_piece(const struct sp_clock_map *c, uint64_t t) {
  size_t lo = 0, hi = c->nseg;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if ((int64_t)(t - c->seg[mid].tick) >= 0) lo = mid;
    else hi = mid;
  }
  return lo;
}
static inline int64_t sp__clock_line(uint64_t tick0, int64_t ns0, uint64_t mult, uint64_t t) {
  sp__i128 d = (sp__i128)((int64_t)(t - tick0)) * (sp__i128)mult;
  return ns0 + (int64_t)(d >> 32);
}
static inline int64_t sp__ticks_to_ns(const struct sp_clock_map *c, uint64_t t) {
  if (!c->nseg) return sp__clock_line(c->tick0, c->ns0, c->mult, t);
  const struct sp_clock_seg *g = &c->seg[sp__clock_piece(c, t)];
  return sp__clock_line(g->tick, g->ns, g->mult, t);
}
/* The same for ticks that mostly come in order (a thread's log): *hint
 * keeps the piece the last one fell in (start it at 0), so most of them
 * skip the search. */
static inline int64_t sp__ticks_to_ns_hint(const struct sp_clock_map *c, size_t *hint, uint64_t t) {
  if (!c->nseg) return sp__clock_line(c->tick0, c->ns0, c->mult, t);
  size_t k = *hint;
  if (k >= c->nseg || (k && (int64_t)(t - c->seg[k].tick) < 0) ||
      (k + 1 < c->nseg && (int64_t)(t - c->seg[k + 1].tick) >= 0))
    *hint = k = sp__clock_piece(c, t);
  return sp__clock_line(c->seg[k].tick, c->seg[k].ns, c->seg[k].mult, t);
}
/* The same values as sp__ticks_to_ns_hint, from a cursor that keeps the
 * piece the last tick fell in and the ticks that piece is taken for (those
 * the hint's test accepts: [lo, lo + span) in unsigned arithmetic), so that
 * a tick in the same piece costs one compare and one signed multiply, not
 * the hint's tests. Any other tick goes through sp__tcur_move (out of line),
 * which makes the hint's own choice. A map
 * whose pieces are out of order (a later piece starting before an earlier
 * one) or whose multiplier is not a signed one gets an empty range: every
 * tick moves (unit/test-tcur). Start with sp__tcur_init (a hint of 0). */
struct sp_tcur {
  uint64_t lo, span, tick, mult;
  int64_t ns;
  size_t k;
};
void sp__tcur_set(const struct sp_clock_map *c, struct sp_tcur *q, size_t k); /* on piece k */
int64_t sp__tcur_move(const struct sp_clock_map *c, struct sp_tcur *q, uint64_t t);
static inline void sp__tcur_init(const struct sp_clock_map *c, struct sp_tcur *q) { sp__tcur_set(c, q, 0); }
/* sp__clock_line's value: a piece's multiplier below 2^63 (ns per tick
 * under 2^31) is a signed one, and the product one signed multiply. */
static inline int64_t sp__tcur_ns(const struct sp_clock_map *c, struct sp_tcur *q, uint64_t t) {
  if (__builtin_expect(t - q->lo >= q->span, 0)) return sp__tcur_move(c, q, t);
  sp__i128 d = (sp__i128)(int64_t)(t - q->tick) * (sp__i128)(int64_t)q->mult;
  return q->ns + (int64_t)(d >> 32);
}
/* Anchors of the current run (manager.c): one now, kept for finalize's map;
 * pieces of the map through them, malloc'd (NULL, 0 when there is nothing
 * between the run's two ends). */
struct sp_manager;
void sp__clock_note(struct sp_manager *m);
/* Remove the live managers' staging files at exit (registered once). */
void sp__stage_cleanup_at_exit(void);
struct sp_clock_seg *sp__clock_segments(struct sp_manager *m, uint64_t tick1, int64_t ns1, size_t *n);
/* The part of the current run's map later anchors cannot change (clock.c):
 * ticks before *until map as the final map will map them. */
struct sp_clock_seg *sp__clock_final_map(struct sp_manager *m, struct sp_clock_map *out, uint64_t *until);

/* A function from the running process (NULL if absent), without linking
 * its library: used for optional runtimes such as OpenMP. */
typedef int (*sp__int_fn)(void);
sp__int_fn sp__find_int_fn(const char *name);

/*====== Region registry (process-wide) ======*/

struct sp_region_info {
  char *name;
  size_t len;
  char *file; /* as the compiler spelled __FILE__, or NULL */
  int line;   /* -1 unknown */
  char *func;
  int kind;   /* SP_SITE_BLOCK / SP_SITE_FUNCTION */
  char **tags; /* NULL-terminated, or NULL */
  size_t ntags;
  int opt_in;  /* carries a registered opt-in tag (atomic: read without the lock) */
  /* The handle callers get: the id, with SP_I_REGION_SLOW_BIT while opt_in
   * (atomic; 0 until the registry has published it). */
  uint32_t handle;
};

/* Info of a handle (without SP_I_REGION_SLOW_BIT), or NULL. Lock-free. */
const struct sp_region_info *sp__region_info(uint32_t id);
/* Highest id handed out so far. */
uint32_t sp__region_max_id(void);
/* 1 if the region carries a tag registered as opt-in. */
int sp__region_has_opt_in(uint32_t id);
/* JSON list text of the region's tags ("[]" when none); malloc'd. */
char *sp__region_tags_json(uint32_t id);

/*====== Cross-thread parents (context.c) ======*/

/* A context: the innermost open call of one thread, captured so that calls
 * another thread begins at depth 0 get it as their parent (an OpenMP worker's
 * calls under the call that opened the parallel region; sp_context_adopt).
 * Events mark both ends in their depth field, which has room to spare:
 *   SP__DEPTH_XPARENT  a depth-0 call whose parent is context (depth & MASK)
 *   SP__DEPTH_TARGET   a call that was innermost when a context was captured
 * A snapshot pass that meets a target gives its call id to the contexts taken
 * of it; calls with a cross-thread parent are emitted with parent id
 * SP__XPARENT_ID(k) and resolved once every thread's pass is done. */
/* A timeline begin out of line grows a stack with fewer free entries than
 * this (when the buffer has more room), so that a shallow loop's inlined
 * begins do not run out of room every few calls (detail.h, room). */
#define SP__STACK_AHEAD 1024u
#define SP__DEPTH_XPARENT 0x80000000u
#define SP__DEPTH_TARGET 0x40000000u
/* A call that never ended: closed at the instant the run was cut short (a
 * termination signal, the exit hook, a crash) or by an enclosing end (the
 * session's); its call id goes to the file's cut_short_call_ids. */
#define SP__DEPTH_CUT 0x20000000u
#define SP__DEPTH_MASK 0x1fffffffu
#define SP__XPARENT_ID(k) (-2 - (int64_t)(k))
static inline uint32_t sp__ev_depth(uint32_t d) { return d & SP__DEPTH_XPARENT ? 0 : d & SP__DEPTH_MASK; }

struct sp_xctx {
  uint64_t start;        /* the captured call: begin tick, */
  uint32_t thread, depth; /* thread index and depth */
  int64_t id;            /* its call id once a pass met it, else -1 */
  uint32_t region;       /* its region (0: unknown, a recovered context) */
};
#define SP__XCTX_CHUNK 1024u
#define SP__XCTX_CHUNKS 4096u

/* Recompute what the inlined path compares depth with (detail.h), after the
 * depth or the adoption of the calling thread changed. */
struct sp_thread_rec;
void sp__thread_rearm(struct sp_manager *m, struct sp_thread_rec *t);
/* The depth field of a call begun at depth 0 by the calling thread: its
 * adopted context, or 0. */
uint32_t sp__xparent_depth(struct sp_manager *m);
/* A pass met target event (thread, start, depth) and gave it call id `id`. */
void sp__xctx_resolve(struct sp_manager *m, uint32_t thread, uint64_t start, uint32_t depth, int64_t id);
/* The parent id for a placeholder SP__XPARENT_ID(k): the captured call's id,
 * or -1 when it is unknown. Any other value is returned as it is. */
int64_t sp__xctx_parent(const struct sp_manager *m, int64_t pid);
/* Capture the calling thread's innermost open call on m: context index + 1,
 * or 0 when it has none. */
uint32_t sp__xctx_capture(struct sp_manager *m);
void sp__xctx_free(struct sp_manager *m);
/* Recovery: context k (the next one) as a spill recorded it; 0 or -1. */
int sp__xctx_restore(struct sp_manager *m, uint32_t k, uint32_t thread, uint64_t start, uint32_t depth, int64_t id);
/* Make context ctx (index + 1; 0: none) of the manager generation `gen` the
 * calling thread's adopted one on m. */
void sp__adopt(struct sp_manager *m, uint32_t gen, uint32_t ctx);
void sp__adopted_get(const struct sp_manager *m, uint32_t *gen, uint32_t *ctx);
/* The region of the call whose context the calling thread adopted on m (the
 * call that opened the OpenMP parallel region it works in, or that handed it
 * an sp_context), 0 when none. Async-signal-safe (a source's handler). */
uint32_t sp__adopted_region(const struct sp_manager *m);
/* Teams seen by the OpenMP hooks: the largest team size (for metadata). */
int sp__omp_max_team(void);
/* "gomp", "ompt" or "none": how OpenMP parallel regions are followed. */
const char *sp__omp_hook(void);

/*====== Threads and tasks ======*/

struct sp_thread_rec;

/* A user-level task (track_async): a coroutine or fiber announced by its
 * scheduler through sp_task_switch(). Each task has its own stack of open
 * calls, swapped in and out of its thread's recording state on a switch. */
struct sp_task {
  uint64_t id;
  uint32_t index; /* dense per manager: the value in events/task_ids */
  struct sp_thread_rec *thread; /* whose log holds its open calls */
  char *name;
  char *kind, *coro_name; /* sp_manager_task_describe; NULL: "task", "" */
  uint64_t *stack; /* saved open calls while switched out; NULL while running */
  uint32_t depth, cap;
  uint64_t suspended; /* ticks switched out since creation (running total) */
  uint64_t out_at;    /* tick of the last switch-out; 0 while running */
  uint64_t in_at;
  uint64_t steps, running;
  uint64_t created, done_at; /* ticks; done_at 0 until sp_task_done */
};

struct sp_carry {
  uint64_t i;      /* log index of an open call */
  int64_t id;      /* its call id */
  int64_t pending; /* ns of its children already written */
  struct sp_gap_frame {
    /* the stream writer's gap bookkeeping of an open call (struct sp_gaps
     * in snapshot.h): its first child's start and end and its latest
     * child's start, in ticks */
    uint64_t fcs, fce, lcs;
    uint8_t has_child, fce_set, is_first;
  } gf;
};

typedef struct sp_thread_rec {
  struct sp_i_thread hot; /* first: sp_i_tls points here */
  struct sp_thread_rec *next;
  struct sp_manager *m;
  uint32_t index;        /* dense per manager, in registration order */
  pid_t tid;
  uint64_t ident;        /* pthread_self(), as Python's threading.get_ident() */
  char name[32];
  int omp_thread;        /* -1 outside an OpenMP parallel region */
  int64_t first_ns, last_ns;
  int64_t cpu_ns;        /* CPU time read on the thread at exit (or finalize) */
  int exited;
  /* Guarded by record.c's slot lock: in_tls while the owning thread's TLS
   * slot points here; zombie once the manager is destroyed with in_tls up
   * (the record is then the thread's to free, sp__thread_attach). */
  int in_tls, zombie;
  int64_t *cols;         /* extension columns: hot.cap x m->ext_stride (ext.c) */
  /* The first nkept events of the log are calls carried over open from an
   * earlier finalize or streamed block: their call ids, and the time (ns) of
   * their children already written. */
  int64_t *kept_ids, *kept_child;
  uint32_t nkept, kept_cap;
  /* Open calls found by the last snapshot, by log index, for compaction. */
  struct sp_carry *carry;
  size_t ncarry;
  struct sp_task *cur_task; /* track_async: the task running now, NULL = thread context */
  uint64_t *ctx_stack;   /* the thread context's open calls while a task runs */
  uint32_t ctx_depth, ctx_cap;
  /* opt-in tag decisions per region id for m->optin_epoch: 0 unknown,
   * 1 recorded, 2 disabled; written only by the owning thread */
  uint8_t *optin;
  uint32_t optin_cap;
  uint64_t optin_epoch;
  /* extensions (ext.c): per-extension thread state, attached for ext_epoch */
  void *ext_thr[SP_EXT_MAX];
  struct sp_ext_thread ext_th[SP_EXT_MAX];
  uint32_t ext_on;       /* extensions attached to this thread */
  uint64_t ext_epoch;
  uint32_t *ext_rmask;   /* cached region decisions (owning thread only) */
  uint32_t ext_rcap;
  int64_t *open_cols;    /* aggregation_mode: open_cap x m->ext_stride */
  int64_t *ext_acc;      /* per region: (taken, value) per extension column */
  uint32_t ext_acc_cap;  /* regions */
  /* nonzero while the buffers sp_ext_current_region() reads are replaced */
  volatile uint32_t busy;
  /* the last context captured of this thread (a cache: the same call is
   * captured again at every parallel region it opens) */
  uint64_t xcap_i, xcap_start;
  uint32_t xcap_ctx;
  /* What this run paid beyond the calibrated pair, for the overhead estimate
   * (owning thread only): calls that went out of line, bytes of fresh buffer
   * memory (each page faults on its first touch), and ticks spent in buffer
   * growth, stream hand-offs and registration. */
  uint64_t ovh_slow_calls, ovh_fresh_bytes, ovh_ticks;
  /* problems, counted without atomics by the owning thread */
  uint64_t unmatched_ends, invalid_regions, dropped_events, task_migrations, left_open;
} sp_thread_rec;

/*====== Extensions (ext.c) ======*/

/* An extension set up on a manager. */
struct sp_ext_live {
  const struct sp_ext *x;
  void *proc;
  const struct sp_ext_col *cols;
  int ncols;
  int col0; /* its first column in the block */
};

#define SP__EXT_DECIDED 0x80000000u

struct sp_manager;
/* Set up the extensions the configuration asks for (setup), tear them down
 * (next setup, destroy), forget them in a forked child. */
sp_status sp__ext_setup(struct sp_manager *m);
void sp__ext_teardown(struct sp_manager *m);
void sp__ext_after_fork(struct sp_manager *m);
/* Columns of event slots [from, to) of a block set to "not taken". */
void sp__ext_fill(const struct sp_manager *m, int64_t *cols, uint64_t from, uint64_t to);
/* The extensions that take region `id` on this thread (attaching the thread
 * first after a setup); slow path only. */
uint32_t sp__ext_decide(struct sp_manager *m, struct sp_thread_rec *t, uint32_t id);
/* The calling thread joins an OpenMP team of m's run (context.c): with an
 * SP_EXT_THREADS extension it is attached now, extensions included. */
void sp__ext_join_thread(struct sp_manager *m);
void sp__ext_enter(struct sp_manager *m, struct sp_thread_rec *t, uint32_t mask, uint32_t id, uint32_t depth,
                   uint64_t slot, int64_t *cols);
void sp__ext_exit(struct sp_manager *m, struct sp_thread_rec *t, uint32_t mask, uint32_t id, uint32_t depth,
                  uint64_t slot, int64_t *cols);
/* aggregation_mode: fold one finished call's columns into t's accumulators. */
void sp__ext_fold_call(struct sp_manager *m, struct sp_thread_rec *t, uint32_t id, const int64_t *cols);
/* timeline: fold the completed calls of a buffer into t's accumulators
 * (snapshot, stream handoff), after resolve. */
void sp__ext_fold_events(struct sp_manager *m, struct sp_thread_rec *t, const struct sp_i_event *ev,
                         const int64_t *cols, uint64_t n);
void sp__ext_resolve(struct sp_manager *m, struct sp_thread_rec *t, uint64_t n);
/* The thread exits (its key destructor), or its record is freed. */
void sp__ext_thread_exit(struct sp_manager *m, struct sp_thread_rec *t);
void sp__ext_thread_release(struct sp_manager *m, struct sp_thread_rec *t);
/* Grow the aggregation open-call columns with the open stack. */
int sp__ext_grow_open(struct sp_manager *m, struct sp_thread_rec *t);
struct sp_run;
/* Finalize: drain sources; then every extension's emit into the run (the
 * accumulators stay until sp__ext_totals_clear). */
void sp__ext_before_snapshot(struct sp_manager *m);
sp_status sp__ext_emit(struct sp_manager *m, struct sp_run *run, uint32_t rank, const struct sp_clock_map *cm);
/* The run's per-region totals start from zero. */
void sp__ext_totals_clear(struct sp_manager *m);
/* The run is written (or given up): the next one folds its totals from
 * zero, and each extension drops what its emit wrote (`written`). */
void sp__ext_written(struct sp_manager *m);
/* The /events columns of the extensions, appended to run->extra with the
 * dataset plan's ids (upstream's own where the name is one of its columns,
 * else declared as the extension's; run->nevents values each); 0, or -1
 * when out of memory or a column clashes with the plan. */
int sp__ext_out_columns(const struct sp_manager *m, struct sp_run *run);
/* Value k of the extensions' /events columns for one event's block row. */
static inline int64_t sp__ext_out_value(const struct sp_manager *m, const int64_t *row, int k, double ns_per_tick);

/*====== Manager ======*/

/* m->pub_state: no file being written; being written and published (the
 * rename may have happened); published complete at file_path. */
enum { SP_PUBSTATE_NONE, SP_PUBSTATE_WRITING, SP_PUBSTATE_DONE };

struct sp_manager {
  struct sp_i_hot hot; /* first: the inlined path reads it */
  pthread_mutex_t lock;
  int is_default;
  int configured;     /* setup succeeded at least once */
  int run_active;     /* setup done and not yet finalized */
  int paused;
  int exit_hook;      /* finalize at exit if still active */
  int forked_child;   /* this process is a fork of the one that set it up */
  const char *cut_by; /* the termination signal whose cut published the run (the process dies of it) */
  pthread_mutex_t fin_lock; /* finalize from the program, the exit hook and the signal watcher */
  char spill_path[4096];    /* <file_path>[.rank<R>].spill, prepared at setup for the crash handler */
  int spill_rank, spill_size; /* this process's rank and the job's size for the spill, -1 unknown */
  char stage_path[4096];    /* the staging file of a streaming run ("" none), for the spill */
  /* A streamed run kept after its write failed (finalize_map): why, until
   * it is written; at exit it is spilled or said lost, once (manager.c). */
  char *kept_msg;
  int kept_at_exit;
  /* Where finalize is in writing the run's file, for a crash spill
   * (async-signal safe, atomic): SP_PUBSTATE_*. Whatever a crash then left
   * behind, recovery knows whether the file at file_path is this run's. */
  int pub_state;
  /* A spill may be written while a finalize runs (the MPI watcher past its
   * bounded wait, a crash in finalize): finalize does not begin to rewrite
   * the buffers (fin_rewriting) while a spill reads them (spilling: how
   * many), and a spill that finds them being rewritten leaves them out and
   * records the calls they held (fin_rewrite_calls, set before
   * fin_rewriting), for recovery to say partial (spill.c). Atomic,
   * sequentially consistent: one of the two always stands down. */
  int fin_rewriting, spilling;
  uint64_t fin_rewrite_calls;
  int per_rank_file;        /* file_path got this process's rank (a launch without a job file) */
  int file_rank;            /* and the rank that file records, as an MPI job's rank would be (-1: none) */
  int rank_override;        /* recovery: the rank of the spilled process (-1: none) */
  struct sp_run *run_sink;  /* recovery of a job: finalize hands the run here instead of writing */
  uint64_t recovered_lost;  /* recovery: blocks the crashed run had streamed (lost with its staging file) */
  double overhead_ns;       /* measured cost of one begin/end pair in this run's mode */
  double overhead_slow_ns;  /* measured extra cost of a begin or end taken out of line */
  double overhead_cold_ns;  /* measured cost of one pair none of whose lines is cached; -1 unknown */
  double overhead_fault_ns; /* measured cost of the first touch of a fresh page */
  struct sp_config cfg;
  int have_cfg;
  sp_thread_rec *threads;
  uint32_t nthreads;
  /* running totals of completed calls written by earlier finalizes */
  uint64_t *calls_done;
  uint32_t calls_done_cap;
  /* run clock anchors */
  uint64_t run_tick0;
  int64_t run_ns0;
  int64_t run_mono0; /* sp__clock_now_ns() then: threads' start and exit times are on that clock */
  int64_t setup_ns;   /* start_time_ns of the current run */
  char *output_path;
  uint64_t optin_epoch; /* bumped at setup: enabled tags may change */
  uint64_t **optin_retired; /* replaced bitmaps: lock-free readers may still hold them */
  size_t noptin_retired;
  sp_problem_counts problems;
  /* extensions set up for the current run (ext.c) */
  struct sp_ext_live ext[SP_EXT_MAX];
  int next;
  int ext_stride;      /* int64 per event slot in the column block: 0, or 1 (the taken mask) + columns */
  int ext_ncols;       /* columns of all extensions (ext_stride - 1) */
  uint32_t ext_inside; /* extensions flagged SP_EXT_INSIDE */
  int ext_all;         /* some extension takes every region: no region stays inline */
  int ext_threads;     /* some extension is SP_EXT_THREADS: OpenMP team threads attach on joining */
  int ext_ticks;       /* some column holds ticks (no bounded-memory streaming) */
  int lane_col;        /* block index of the lanes column (track_async), else -1 */
  int ext_nout;        /* columns written to /events, and where they are in the block */
  int ext_out[SP_EXT_MAX_COLS];
  int ext_gpu_out;     /* the SP_EXT_COL_GPU column among them, else -1 */
  int64_t ext_fill_row[SP_EXT_MAX_COLS + 1]; /* a block row of a call no extension took */
  uint64_t ext_epoch;  /* bumped at each setup: threads re-attach */
  pthread_mutex_t ext_lock; /* region decisions, attach/detach against teardown */
  uint32_t *ext_rmask; /* per region id: taken mask | SP__EXT_DECIDED (under ext_lock) */
  uint32_t ext_rcap;
  uint64_t **plain_retired; /* replaced hot.plain bitmaps (lock-free readers) */
  size_t nplain_retired;
  struct sp_ext_user { char *name; void *p; void (*destroy)(void *p); } ext_user[2 * SP_EXT_MAX]; /* sp__ext_user_slot */
  size_t next_user;
  char **warnings;     /* sp_ext_warn texts of this setup, for the metadata */
  size_t nwarnings;
  int64_t next_callid;   /* call ids are unique per rank: every call takes the next one */
  struct sp_stream *stream; /* bounded memory: NULL until the budget is first reached */
  uint64_t buf_bytes;    /* bytes held by event buffers (atomic) */
  struct sp_task **tasks;
  uint32_t ntasks, tasks_cap;
  /* cross-thread contexts (context.c): chunks never move, so passes read
   * them without the lock; new ones are added under `lock` */
  struct sp_xctx *xctx[SP__XCTX_CHUNKS];
  uint32_t nxctx;
  uint32_t *xctx_open; /* contexts whose call no pass has met yet */
  size_t nxctx_open, xctx_open_cap;
  /* clock anchors taken during the current run (after run_tick0), under lock */
  uint64_t (*anchors)[2];
  size_t nanchors, anchors_cap;
  /* call ids of the calls of this run closed without their end (cut short),
   * gathered by the passes (snapshot.c, the stream writer) */
  int64_t *cut_ids;
  size_t ncut, cut_cap;
};

static inline int64_t sp__ext_out_value(const struct sp_manager *m, const int64_t *row, int k, double ns_per_tick) {
  int b = m->ext_out[k];
  /* a ticks column is marked by its negated index (column 0 is the mask) */
  return b > 0 ? row[b] : (int64_t)((double)row[-b] * ns_per_tick);
}

/* Tasks (tasks.c). */
void sp__tasks_free(struct sp_manager *m);
/* Lane of an event: 0 for the thread context, task index + 1 otherwise. */
static inline uint32_t sp__event_lane(const struct sp_manager *m, const sp_thread_rec *t, uint64_t i) {
  if (m->lane_col < 0) return 0;
  return (uint32_t)(t->cols[i * (uint64_t)m->ext_stride + (uint64_t)m->lane_col] + 1);
}

/* End region r on the calling thread, first closing (at the same instant,
 * marked cut short, counted as left open) every call still open inside it:
 * the session's end, so that one missing end does not lose the root. */
int sp__end_closing(struct sp_manager *m, uint32_t r);
/* A run cut short at tick1 (why: "SIGTERM", "exit", ...): every call still
 * open on every thread ends there, marked cut short. */
void sp__cut_open_calls(struct sp_manager *m, uint64_t tick1);
/* A pass met a call marked cut short. */
void sp__cut_note(struct sp_manager *m, int64_t id);

/* The run's profiler overhead as it was paid (record.c): the calibrated
 * pair for every call, plus the out-of-line calls, the first touches of
 * fresh buffer pages and the time spent growing, handing off and
 * registering, each measured or counted per thread (counters reset unless
 * `keep`). total_ns / calls is the run's cost per call. */
struct sp_overhead {
  uint64_t calls, slow_calls, fresh_bytes;
  double pair_ns, total_ns, extra_ns; /* extra: all but calls x pair_ns */
};
struct sp_overhead sp__overhead_collect(struct sp_manager *m, const struct sp_run *run,
                                        const struct sp_clock_map *cm, int keep);

/* Registers the calling thread with `m` (slow path); NULL when out of memory. */
sp_thread_rec *sp__thread_attach(struct sp_manager *m);
/* Grow a thread's event (and probe column) buffer; 0 on success. */
int sp__thread_grow_events(sp_thread_rec *t);
int sp__thread_grow_stack(sp_thread_rec *t);
/* Forget every thread record (destroy). */
void sp__threads_free(struct sp_manager *m);
void sp__threads_after_fork_child(struct sp_manager *m);
/* Aggregation mode: open-call stack and accumulator growth (record.c). */
int sp__thread_grow_open(sp_thread_rec *t);
void sp__thread_free_open(struct sp_i_thread *h);
/* need: the accumulators must reach id need - 1; also re-arms acc_lim. */
int sp__thread_grow_acc(sp_thread_rec *t, uint32_t need);
void sp__agg_reset(struct sp_i_agg *a, size_t n);
/* m2 (the sum of squared deviations from the mean, in ticks squared) of
 * an accumulator with count > 0, from its exact sums. */
double sp__agg_m2(const struct sp_i_agg *a);

/* The open-call stack of aggregation mode (detail.h): its depth, and
 * popping it to a depth. */
static inline uint32_t sp__agg_nopen(const struct sp_i_thread *h) {
  return h->open ? (uint32_t)(h->top - h->open) : 0;
}
static inline void sp__agg_set_nopen(struct sp_i_thread *h, uint32_t n) {
  if (h->open) h->top = h->open + n;
}
/* fork(): reset the process-wide locks in the child (record.c, regions.c). */
void sp__record_after_fork_child(void);
void sp__regions_after_fork_child(void);
/* Set a bit of a lock-free-read region bitmap of sp_i_hot (record.c). */
void sp__bitmap_set(uint64_t **bits, uint32_t *nbits, uint64_t ***retired, size_t *nretired, uint32_t id);
/* Publish "region id is a disabled opt-in region" to the inlined path. */
void sp__optin_mark_off(struct sp_manager *m, uint32_t id);
void sp__optin_reset(struct sp_manager *m);
/* Slot management: a TLS slot and a fresh generation for a new manager. */
int sp__slot_acquire(struct sp_manager *m);
void sp__slot_release(struct sp_manager *m);
/* The state the inlined path should see for the manager's current flags. */
void sp__manager_publish_state(struct sp_manager *m);
/* sp_manager_setup; SP__SETUP_SILENT keeps it from printing (a failure or a
 * warning), for callers that report on their own (spill recovery). */
#define SP__SETUP_SILENT 1u
sp_status sp__manager_setup_ex(struct sp_manager *m, const sp_setup_args *args, unsigned flags);

#endif
