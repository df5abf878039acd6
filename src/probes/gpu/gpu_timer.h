/* gpu_timer.h - device time per call: timing backends and the per-thread
 * event pool that keeps the device off the hot path.
 *
 * A region call takes two device timestamps (CUDA events): one recorded on its
 * stream at begin and one at end. Their difference is known only when the
 * device has reached the end event, long after the CPU left the region. So a
 * thread keeps:
 *   - a free list of reusable events (created once, recorded many times);
 *   - a stack of the start events of its open calls, by nesting depth;
 *   - a ring of closed calls whose end event the device may not have reached
 *     yet, oldest first, each with the caller's 64-bit tag.
 * Pending pairs are resolved without waiting when the pool runs low (the free
 * list is empty, or the ring is full) and all at once, waiting, in
 * sp__gpu_finish. Each resolved call is handed to deliver(ctx, tag, ns) with
 * its device time, or -1 when it has none (an error, or the pool exhausted).
 * A begin or an end therefore costs one event record, except when the pool is
 * low: then the oldest pairs are queried (and events created if none has
 * completed, doubling the pool). The pool never waits for the device except
 * in sp__gpu_finish and with gpu_sync_on_exit.
 *
 * A pool belongs to one thread; sp__gpu_finish and sp__gpu_thread_fini may
 * run on another thread while the owner records nothing (finalize).
 * Backends: gpu_cuda.c (the driver API) and gpu_callbacks.c (user functions).
 */
#ifndef SP_GPU_TIMER_H
#define SP_GPU_TIMER_H

#include <stddef.h>
#include <stdint.h>

/* elapsed() outcomes other than an error code of the backend. */
#define SP__GPU_DONE 0
#define SP__GPU_NOT_READY (-0x7fff)

struct sp__gpu_backend {
  const char *name; /* "cuda", "callbacks": the metadata value */
  void *be;         /* the backend's own state */
  /* The calling thread's binding (a CUDA context), made at its first timed
   * call. Nonzero: an error code, and the thread times nothing. */
  int (*bind)(void *be, void **ts);
  void (*unbind)(void *be, void *ts);
  /* Around work done for a thread from another thread (finalize). */
  int (*enter)(void *be, void *ts);
  void (*leave)(void *be, void *ts);
  /* A reusable event; NULL when record() makes its own handles. */
  int (*create)(void *be, void *ts, void **ev);
  void (*destroy)(void *be, void *ts, void *ev); /* also: release a record()-made handle */
  /* Record a timestamp on `stream` into *ev (from create(), or set here). */
  int (*record)(void *be, void *ts, void *stream, void **ev);
  /* ns from start to end: SP__GPU_DONE, SP__GPU_NOT_READY (only when !wait),
   * or an error code. */
  int (*elapsed)(void *be, void *ts, void *start, void *end, int wait, int64_t *ns);
  /* Wait for everything queued on `stream` (gpu_sync_on_exit). NULL: wait
   * through elapsed(wait=1). */
  int (*sync)(void *be, void *ts, void *stream);
  /* A name for an error code, written into buf. */
  const char *(*error_name)(void *be, int code, char *buf, size_t n);
};

typedef void (*sp__gpu_deliver_fn)(void *ctx, uint64_t tag, int64_t ns);

/* What went wrong on one thread, reported at finalize. */
struct sp__gpu_problems {
  uint64_t untimed;       /* calls delivered with -1 */
  uint64_t bind_errors;   /* threads without a usable device context */
  uint64_t create_errors; /* events the backend could not create (out of resources) */
  uint64_t record_errors;
  uint64_t elapsed_errors;
  uint64_t sync_errors;
  uint64_t exhausted;     /* calls not timed: max_pending calls were already in flight */
  int first_error;        /* the first backend error code seen (0: none) */
  const char *first_where;/* "cuEventRecord", ...: which step returned it */
};

struct sp__gpu_pair {
  void *start, *end;
  uint64_t tag;
};

struct sp__gpu_thread {
  const struct sp__gpu_backend *b;
  void *ts;      /* the backend's per-thread binding */
  int bound;     /* 0 not yet, 1 bound, -1 binding failed */
  sp__gpu_deliver_fn deliver;
  void *ctx;
  void **free_ev;
  uint32_t nfree, free_cap;
  void **open;   /* start event per open call (NULL: not timed) */
  uint32_t depth, open_cap;
  struct sp__gpu_pair *ring;
  uint32_t head, count, cap, max_pending;
  uint64_t live_events; /* created and not yet destroyed */
  uint64_t polls;       /* pool-low queries (tests, benchmarks) */
  struct sp__gpu_problems prob;
};

/* max_pending bounds the calls in flight per thread (0: the default, 65536;
 * rounded up to a power of two). Allocates nothing yet. */
void sp__gpu_thread_init(struct sp__gpu_thread *t, const struct sp__gpu_backend *b,
                         sp__gpu_deliver_fn deliver, void *ctx, uint32_t max_pending);
/* Begin a call: record its start event on `stream`. */
void sp__gpu_begin(struct sp__gpu_thread *t, void *stream);
/* End the innermost open call: record its end event; `tag` comes back with
 * its time. With `sync` the stream is waited for and the call resolved now. */
void sp__gpu_end(struct sp__gpu_thread *t, void *stream, uint64_t tag, int sync);
/* Resolve what has completed, without waiting; returns the calls resolved. */
uint32_t sp__gpu_poll(struct sp__gpu_thread *t);
/* Resolve every closed call, waiting for the device. Open calls stay. */
void sp__gpu_finish(struct sp__gpu_thread *t);
/* Give every event back (finish first to keep the pending times). */
void sp__gpu_thread_fini(struct sp__gpu_thread *t);
/* Calls in flight (closed, not yet resolved). */
static inline uint32_t sp__gpu_pending(const struct sp__gpu_thread *t) { return t->count; }

/* Add b's problems into a. */
void sp__gpu_problems_add(struct sp__gpu_problems *a, const struct sp__gpu_problems *b);
/* One sentence for a non-empty problem set ("" when there is none):
 * "GPU timing: 12 calls have no device time: cuEventCreate returned
 * CUDA_ERROR_OUT_OF_MEMORY (3 events could not be created) ...". */
void sp__gpu_problems_text(const struct sp__gpu_problems *p, const struct sp__gpu_backend *b,
                           char *buf, size_t n);

#endif
