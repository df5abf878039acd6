/* ext.h - the extension interface (version 1): what every probe implements,
 * and the core services it may call.
 *
 * An extension adds something to what a region call records. Three kinds,
 * which one extension may combine:
 *   forwarders (SP_EXT_FORWARD)  no columns: get each call's region (NVTX
 *                                ranges, LIKWID markers); cost only what
 *                                they forward;
 *   column probes (SP_EXT_COLUMNS)  typed per-call columns with units
 *                                (counters, GPU time, MPI bytes, track_async's
 *                                task and await columns), per-region folds for
 *                                aggregation_mode and for per-region totals;
 *   sources (SP_EXT_SOURCE)      no per-call hooks: own per-thread buffers
 *                                (sampling, allocation capture), read the
 *                                thread's current region through
 *                                sp_ext_current_region(), and add their own
 *                                groups and tables at finalize (emit).
 *
 * Life cycle, per manager (all hooks optional except where noted):
 *   setup         at every sp_manager_setup whose configuration wants the
 *                 extension (`wanted`); declares the columns; may decline
 *                 (s->decline = 1, after an sp_ext_warn saying why) so the run
 *                 goes on without it; an error status fails the setup.
 *   region_added  once per (setup, region), before the region's first call
 *                 reaches the extension, serialized per manager: returns 1 to
 *                 take the region's calls. A region no extension takes stays
 *                 on the fully inlined path (one bitmap test more than a run
 *                 without extensions). NULL: take every region.
 *   thread_attach on that thread, at its first call after setup that reaches
 *                 the slow path (its first call on the manager, or its first
 *                 call of a region an extension takes); all extensions of
 *                 the manager attach then. With an SP_EXT_THREADS extension
 *                 on the manager, also when the thread joins an OpenMP team
 *                 of the run (its first parallel region), calls or not. Nonzero: the thread runs without
 *                 this extension (its calls keep the fills).
 *   enter / exit  per call taken. Outside extensions (the default) enter
 *                 before the start timestamp and exit after the end one, so
 *                 their cost stays out of the measured interval; SP_EXT_INSIDE
 *                 ones enter after the start and exit before the end (a GPU
 *                 sync that must count). Exit is called exactly for the calls
 *                 whose enter ran, in reverse extension order.
 *   resolve       before calls [0, n) of a thread's buffer are read or moved
 *                 (finalize, a bounded-memory handoff): finish values that
 *                 arrive late (CUDA events), via sp_ext_cols_at(). May block.
 *   before_snapshot  at every finalize, before anything is read (stop and
 *                 drain a source).
 *   emit          after the snapshot: per-region totals (sp_ext_totals), then
 *                 groups under rank<N>/, metadata, tables. Keep what it
 *                 wrote until `written`: a streamed run whose file could not
 *                 be written is kept, and its next finalize (a retry, the
 *                 exit hook) runs before_snapshot and emit again, and must
 *                 write the same groups, with what came since, once.
 *   written       after the file the last emit went into is written, or
 *                 the run given up (reset): drop what that emit wrote (the
 *                 next run's emit has only its own).
 *   thread_detach at the thread's exit (on that thread), or at teardown for
 *                 threads still alive (on the tearing-down thread; recording
 *                 has stopped then). Exactly once per successful attach.
 *   teardown      at the next setup, at destroy; after every detach.
 *   after_fork    in a forked child, which stands down: drop every handle and
 *                 per-thread state (close, free; no other I/O on inherited
 *                 descriptors). No detach or teardown of that state follows.
 *
 * Columns live in the thread's column block, one row per event slot, filled
 * with each column's `fill` until a call taken by the extension writes it.
 * In aggregation_mode (extensions flagged SP_EXT_AGGREGATE only) the call's
 * columns are scratch on the open-call stack and are folded into per-(thread,
 * region) accumulators at exit.
 *
 * Everything here is library-internal (sp__ rules of CONTRIBUTING.md): the
 * interface is versioned by SP_EXT_ABI so a probe built against another
 * version is refused at registration.
 */
#ifndef SP_EXT_H
#define SP_EXT_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/status.h"

struct sp_config;
struct sp_manager;

#define SP_EXT_ABI 2
#define SP_EXT_MAX 16      /* extensions live on one manager */
#define SP_EXT_MAX_COLS 64 /* columns of all extensions of one manager */

/* kind and flags of struct sp_ext */
#define SP_EXT_FORWARD 0x1u
#define SP_EXT_COLUMNS 0x2u
#define SP_EXT_SOURCE 0x4u
#define SP_EXT_INSIDE 0x10u    /* hooks inside the timestamps (see above) */
#define SP_EXT_AGGREGATE 0x20u /* also set up in aggregation_mode */
#define SP_EXT_LANES 0x40u     /* column 0 is the call's lane: task index, -1 = the thread itself */
#define SP_EXT_THREADS 0x80u   /* also attach the threads of the run's OpenMP teams that record nothing
                                * (a sampling source: their time counts too) */

enum sp_ext_fold {
  SP_EXT_FOLD_NONE, /* not meaningful per region (an index) */
  SP_EXT_FOLD_SUM,
  SP_EXT_FOLD_MAX,
  SP_EXT_FOLD_MIN,
};

/* column flags */
#define SP_EXT_COL_TICKS 0x1u   /* values are raw clock ticks: written as ns */
#define SP_EXT_COL_SCRATCH 0x2u /* per-call scratch between enter and exit: never written */
#define SP_EXT_COL_GPU 0x4u     /* values >= 0 feed summary_statistics gpu_count/gpu_total */

struct sp_ext_col {
  const char *name; /* dataset /events/<name>; unique within the run */
  const char *unit; /* "count", "ns", "bytes", "index", ... (attribute `units`) */
  unsigned flags;
  enum sp_ext_fold fold;
  int64_t fill; /* the value of calls the extension did not take; a negative fill also
                 * means "no value" in a taken call (not folded) */
};

/* What the core says about a thread, per (thread, extension). */
struct sp_ext_thread {
  uint32_t index; /* dense per manager: the value in events/thread_ids */
  int32_t tid;    /* kernel thread id */
  int omp_thread; /* -1 outside an OpenMP parallel region at attach */
  void *core;     /* private to the core */
  int col0;       /* private: the extension's first column in the block */
};

/* One call, as enter and exit see it. */
struct sp_ext_call {
  uint32_t region; /* region id (no flag bits) */
  uint32_t depth;  /* open calls of this thread (or task) below it */
  uint64_t slot;   /* its event slot in the thread's buffer (timeline), UINT64_MAX in aggregation_mode */
  int64_t *cols;   /* the extension's columns for this call; NULL for forwarders */
  const struct sp_ext_thread *thread;
};

/* What region_added sees of a region. */
struct sp_ext_region {
  const char *name;
  size_t len;
  const char *file; /* NULL unknown */
  int line;         /* -1 unknown */
  const char *func; /* NULL unknown */
  char *const *tags;
  size_t ntags;
  int internal; /* the profiler's own (the overhead calibration region) */
};

/* setup's in/out argument. */
struct sp_ext_setup {
  const struct sp_config *cfg;
  struct sp_manager *manager;
  void **user; /* this extension's slot on the manager (sp__ext_user_slot), kept across setups */
  int aggregation; /* the run is in aggregation_mode */
  /* out: */
  const struct sp_ext_col *cols; /* valid until teardown */
  int ncols;
  int decline; /* take no part in this run (say why with sp_ext_warn) */
};

struct sp_ext_emit;

struct sp_ext {
  uint32_t abi; /* SP_EXT_ABI */
  const char *name;
  unsigned kind; /* SP_EXT_FORWARD | SP_EXT_COLUMNS | SP_EXT_SOURCE, plus flags */
  /* required: 1 if the configuration asks for this extension */
  int (*wanted)(const struct sp_config *cfg);
  sp_status (*setup)(struct sp_ext_setup *s, void **proc);
  void (*teardown)(void *proc);
  void (*after_fork)(void *proc);
  int (*thread_attach)(void *proc, const struct sp_ext_thread *th, void **thr);
  void (*thread_detach)(void *proc, void *thr);
  int (*region_added)(void *proc, uint32_t id, const struct sp_ext_region *r);
  void (*enter)(void *proc, void *thr, const struct sp_ext_call *c);
  void (*exit)(void *proc, void *thr, const struct sp_ext_call *c);
  void (*resolve)(void *proc, void *thr, const struct sp_ext_thread *th, uint64_t n);
  void (*before_snapshot)(void *proc);
  sp_status (*emit)(void *proc, struct sp_ext_emit *out);
  void (*written)(void *proc);
};

/*====== Registration (src/probes/registry.c) ======*/

/* Add an extension to the process-wide list (the built-in ones register
 * themselves; MPI's bytes probe and tests call this). Refused (-1) for
 * another ABI version or a full list. Idempotent. */
int sp__ext_register(const struct sp_ext *x);
/* The extensions `cfg` asks for, in registration order; returns the count. */
int sp__ext_select(const struct sp_config *cfg, const struct sp_ext **out, int max);

/*====== Core services (src/core/ext.c) ======*/

/* The columns of an earlier call of this thread (its slot from enter/exit),
 * valid until the thread's next begin; for resolve and late values. */
int64_t *sp_ext_cols_at(const struct sp_ext_thread *th, uint64_t slot);
/* The task the thread runs now (track_async): 1 with its index and its
 * running total of switched-out ticks, 0 in the thread's own context. */
int sp_ext_task(const struct sp_ext_thread *th, uint32_t *index, uint64_t *suspended_ticks);
/* The innermost open region of the calling thread on manager m, 0 if none.
 * Async-signal-safe: a signal handler may call it at any point of the
 * thread's own recording (it answers 0 while a buffer is being replaced). */
uint32_t sp_ext_current_region(const struct sp_manager *m);
/* The region a sample taken now on the calling thread belongs to: the
 * innermost open region; with none, the region of the call that handed the
 * thread its work (the call open when the OpenMP parallel region it works
 * in began, or that captured the sp_context it adopted); with none either,
 * the run's whole-program root (sp_ext_run_root); 0 when there is nothing.
 * While the thread's own buffers are being replaced (or are the setup's
 * private calibration ones) its open region is not read: the answer is the
 * adopted context's region or the root. Async-signal-safe. */
uint32_t sp_ext_sample_region(const struct sp_manager *m);
/* The whole-program root region of the session `scope-profiler run` started
 * on m (src/core/autorun.c), 0 when m's run is not one. Async-signal-safe:
 * a source gives it what a thread does while it has no region open. */
uint32_t sp_ext_run_root(const struct sp_manager *m);
/* A per-manager, per-extension pointer slot that survives setups (public
 * calls such as "set the GPU stream" store into it before setup). NULL when
 * out of memory. */
void **sp__ext_user_slot(struct sp_manager *m, const char *ext_name);
/* The same slot, whose value the core hands to `destroy` when the manager is
 * destroyed (for a value that owns more than one allocation). */
void **sp__ext_user_slot_owned(struct sp_manager *m, const char *ext_name, void (*destroy)(void *p));
/* One warning line to stderr, once per distinct text per process, also
 * kept for the run's metadata (`warnings`). */
void sp_ext_warn(struct sp_manager *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* emit: per-region totals of this extension's columns over the calls
 * completed in this run (timeline) or recorded since the last finalize
 * (aggregation_mode). values[r * ncols + c] is the fold of column c over
 * region r's calls taken by the extension, taken[r * ncols + c] how many
 * calls contributed (for SP_EXT_COL_GPU only values >= 0 do). */
struct sp_ext_totals {
  size_t n;               /* regions with calls */
  const uint32_t *region; /* region ids */
  const uint64_t *calls;  /* completed calls of the region in this run (all, taken or not) */
  const int64_t *values;
  const uint64_t *taken;
  int ncols;
};
const struct sp_ext_totals *sp_ext_totals(struct sp_ext_emit *out);
uint32_t sp_ext_rank(const struct sp_ext_emit *out);

/* A group below rank<N>/ ("perf_events/solve"; each '/' of a region name
 * must already be '|', see sp_ext_group_name). Attributes and datasets are
 * copied. Functions return 0, or -1 when out of memory. */
struct sp_ext_group;
enum sp_ext_dtype { SP_EXT_I64, SP_EXT_U64, SP_EXT_F64, SP_EXT_STR };
struct sp_ext_group *sp_ext_group(struct sp_ext_emit *out, const char *path);
int sp_ext_group_attr_str(struct sp_ext_group *g, const char *key, const char *value);
int sp_ext_group_attr_i64(struct sp_ext_group *g, const char *key, int64_t value);
int sp_ext_group_attr_f64(struct sp_ext_group *g, const char *key, double value);
int sp_ext_group_attr_strlist(struct sp_ext_group *g, const char *key, const char *const *values, size_t n);
/* ndims 1 or 2 (row-major); SP_EXT_STR data is `const char *const *` */
int sp_ext_group_dset(struct sp_ext_group *g, const char *name, enum sp_ext_dtype type, int ndims,
                      const uint64_t *dims, const void *data);
/* A region name as one HDF5 path component: '/' becomes '|' (upstream). malloc'd. */
char *sp_ext_group_name(const char *region_name);
/* Root metadata attributes of the run. */
int sp_ext_meta_str(struct sp_ext_emit *out, const char *key, const char *value);
int sp_ext_meta_i64(struct sp_ext_emit *out, const char *key, int64_t value);

#endif
