/* gpu_probe.c - the "gpu" extension: device time per region call
 * (use_gpu_timing) as the event column gpu_durations (int64 ns, -1 where a
 * call has none) and, through SP_EXT_COL_GPU, the summary's gpu_count and
 * gpu_total; plus the public calls of scope_profiler/gpu.h.
 *
 * It is an inside column probe: the start event is recorded after the CPU
 * start time and the end event before the CPU end time, so with
 * gpu_sync_on_exit the wait for the stream is part of the CPU interval (the
 * seed's "wait for the device before recording the CPU end time"). Values
 * arrive late: a call's column keeps its fill until the pool of its thread
 * (gpu_timer.h) resolves the call, then is written through
 * sp_ext_cols_at(thread, slot); the core's resolve pass (finalize, a
 * bounded-memory handoff) finishes the rest, waiting for the device.
 *
 * Backend choice at setup (gpu_timing_backend): "callbacks" needs callbacks
 * registered on the manager (an error otherwise: the program asked for
 * something it did not provide); "cuda" and "auto" without callbacks load
 * the driver, and when it or a device is missing the run goes on without GPU
 * time after one warning naming the reason (no gpu_durations column).
 *
 * What the public setters store lives in the manager's extension slot
 * "gpu", which outlives setups: callbacks (read at setup) and streams (read
 * at every call, lock-free: region streams sit in fixed chunks that never
 * move).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "config/config_internal.h"
#include "output/plan.h"
#include "probes/ext.h"
#include "probes/gpu/gpu_cuda.h"
#include "scope_profiler.h"

#define CHUNK 1024u
#define MAX_CHUNKS 1024u /* the region registry's limit: 1M ids */

struct stream_ent {
  void *stream;
  int set; /* atomic: stream is valid */
};

/* The manager's slot: what the public setters stored. */
struct gpu_user {
  pthread_mutex_t lock; /* callbacks, chunk creation */
  int has_cb;
  sp_gpu_callbacks cb;
  void *stream;                          /* atomic: the manager's stream */
  struct stream_ent *chunks[MAX_CHUNKS]; /* atomic pointers */
};

struct gpu_thr {
  struct sp__gpu_thread pool;
  const struct sp_ext_thread *th;
  struct gpu_thr *prev, *next;
};

struct gpu_proc {
  struct sp_manager *m;
  void **slot; /* -> struct gpu_user *, may be filled after setup */
  struct sp__gpu_backend b;
  sp_gpu_callbacks cb; /* the callbacks backend's copy */
  int sync;
  pthread_mutex_t lock; /* threads list, problems */
  struct gpu_thr *threads;
  struct sp__gpu_problems detached; /* of threads gone since the last report */
};

static const struct sp_ext_col gpu_cols[] = {
    {SP_PLAN_GPU_DURATIONS, "ns", SP_EXT_COL_GPU, SP_EXT_FOLD_SUM, -1}, /* the plan's row: upstream's name */
};

/*====== The manager's slot and the public calls ======*/

static void user_free(void *p) {
  struct gpu_user *u = p;
  for (uint32_t c = 0; c < MAX_CHUNKS; c++) free(u->chunks[c]);
  pthread_mutex_destroy(&u->lock);
  free(u);
}

static struct gpu_user *user_of(struct sp_manager *m) {
  void **slot = sp__ext_user_slot_owned(m, "gpu", user_free);
  if (!slot) return NULL;
  struct gpu_user *u = __atomic_load_n((struct gpu_user **)slot, __ATOMIC_ACQUIRE);
  if (u) return u;
  struct gpu_user *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  pthread_mutex_init(&n->lock, NULL);
  struct gpu_user *expected = NULL;
  if (__atomic_compare_exchange_n((struct gpu_user **)slot, &expected, n, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return n;
  user_free(n); /* another thread made it first */
  return expected;
}

SP_API sp_status sp_manager_set_gpu_callbacks(struct sp_manager *m, const sp_gpu_callbacks *cb) {
  if (!m) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_set_gpu_callbacks: no manager given");
  if (cb && (cb->size < offsetof(sp_gpu_callbacks, release) || !cb->record || !cb->elapsed_ns))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "sp_manager_set_gpu_callbacks: the callbacks need size = sizeof(sp_gpu_callbacks) "
                         "and both record and elapsed_ns");
  struct gpu_user *u = user_of(m);
  if (!u) return sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_set_gpu_callbacks: out of memory");
  pthread_mutex_lock(&u->lock);
  memset(&u->cb, 0, sizeof u->cb);
  if (cb) memcpy(&u->cb, cb, cb->size < sizeof u->cb ? cb->size : sizeof u->cb);
  u->cb.size = sizeof u->cb;
  u->has_cb = cb != NULL;
  pthread_mutex_unlock(&u->lock);
  return SP_OK;
}

SP_API sp_status sp_manager_set_gpu_stream(struct sp_manager *m, void *stream) {
  if (!m) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_set_gpu_stream: no manager given");
  struct gpu_user *u = user_of(m);
  if (!u) return sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_set_gpu_stream: out of memory");
  __atomic_store_n(&u->stream, stream, __ATOMIC_RELEASE);
  return SP_OK;
}

SP_API sp_status sp_manager_set_region_gpu_stream(struct sp_manager *m, uint32_t r, void *stream) {
  if (!m) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_set_region_gpu_stream: no manager given");
  if (r == 0 || !sp_region_name(r))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "sp_manager_set_region_gpu_stream: %u is not a region handle; pass one from "
                         "sp_region_intern() or a call site", (unsigned)r);
  if (r / CHUNK >= MAX_CHUNKS)
    return sp__set_error(SP_ERR_LIMIT, "sp_manager_set_region_gpu_stream: region %u is out of range", (unsigned)r);
  struct gpu_user *u = user_of(m);
  if (!u) return sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_set_region_gpu_stream: out of memory");
  pthread_mutex_lock(&u->lock);
  struct stream_ent *ch = u->chunks[r / CHUNK];
  if (!ch) {
    ch = calloc(CHUNK, sizeof *ch);
    if (ch) __atomic_store_n(&u->chunks[r / CHUNK], ch, __ATOMIC_RELEASE);
  }
  if (ch) {
    struct stream_ent *e = &ch[r % CHUNK];
    __atomic_store_n(&e->set, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->stream, stream, __ATOMIC_RELEASE);
    __atomic_store_n(&e->set, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&u->lock);
  return ch ? SP_OK : sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_set_region_gpu_stream: out of memory");
}

/* The stream of a call of region `id`: the region's, else the manager's. */
static void *stream_for(const struct gpu_proc *p, uint32_t id) {
  const struct gpu_user *u = __atomic_load_n((struct gpu_user **)p->slot, __ATOMIC_ACQUIRE);
  if (!u) return NULL;
  const struct stream_ent *ch = id / CHUNK < MAX_CHUNKS ? __atomic_load_n(&u->chunks[id / CHUNK], __ATOMIC_ACQUIRE) : NULL;
  if (ch && __atomic_load_n(&ch[id % CHUNK].set, __ATOMIC_ACQUIRE))
    return __atomic_load_n(&ch[id % CHUNK].stream, __ATOMIC_ACQUIRE);
  return __atomic_load_n(&u->stream, __ATOMIC_ACQUIRE);
}

/*====== The extension ======*/

static int gpu_wanted(const struct sp_config *cfg) { return cfg->use_gpu_timing && !cfg->aggregation_mode; }

static sp_status gpu_setup(struct sp_ext_setup *s, void **procp) {
  enum sp__gpu_timing_backend want = s->cfg->gpu_timing_backend;
  struct gpu_proc *p = calloc(1, sizeof *p);
  if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "use_gpu_timing: out of memory");
  p->m = s->manager;
  p->slot = s->user;
  p->sync = s->cfg->gpu_sync_on_exit;
  pthread_mutex_init(&p->lock, NULL);
  struct gpu_user *u = p->slot ? __atomic_load_n((struct gpu_user **)p->slot, __ATOMIC_ACQUIRE) : NULL;
  sp_gpu_callbacks cb;
  memset(&cb, 0, sizeof cb);
  int has_cb = 0;
  if (u) {
    pthread_mutex_lock(&u->lock);
    has_cb = u->has_cb;
    cb = u->cb;
    pthread_mutex_unlock(&u->lock);
  }
  char why[512] = "";
  int ok = 0;
  if (want == SP__GPU_BACKEND_CALLBACKS || (want == SP__GPU_BACKEND_AUTO && has_cb)) {
    if (!has_cb) {
      pthread_mutex_destroy(&p->lock);
      free(p);
      return sp__set_error(SP_ERR_CONFLICT,
                           "gpu_timing_backend = callbacks, but no callbacks are registered on this manager: "
                           "call sp_manager_set_gpu_callbacks() before setup, or choose gpu_timing_backend = "
                           "auto or cuda");
    }
    ok = sp__gpu_callbacks_backend(&p->b, &p->cb, &cb, why, sizeof why) == 0;
  } else {
    ok = sp__gpu_cuda_backend(&p->b, why, sizeof why) == 0;
  }
  if (!ok) {
    sp_ext_warn(s->manager,
                "use_gpu_timing: no GPU time in this run: %s. Region times are recorded as usual; the file "
                "has no events/%s",
                why, SP_PLAN_GPU_DURATIONS);
    pthread_mutex_destroy(&p->lock);
    free(p);
    s->decline = 1;
    return SP_OK;
  }
  s->cols = gpu_cols;
  s->ncols = 1;
  *procp = p;
  return SP_OK;
}

static void gpu_teardown(void *proc) {
  struct gpu_proc *p = proc;
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* A resolved call: its column, in this thread's buffer, gets its time. */
static void deliver(void *ctx, uint64_t slot, int64_t ns) {
  struct gpu_thr *t = ctx;
  int64_t *c = sp_ext_cols_at(t->th, slot);
  if (c) c[0] = ns;
}

static int gpu_attach(void *proc, const struct sp_ext_thread *th, void **thr) {
  struct gpu_proc *p = proc;
  struct gpu_thr *t = calloc(1, sizeof *t);
  if (!t) return -1;
  t->th = th;
  sp__gpu_thread_init(&t->pool, &p->b, deliver, t, 0);
  pthread_mutex_lock(&p->lock);
  t->next = p->threads;
  if (p->threads) p->threads->prev = t;
  p->threads = t;
  pthread_mutex_unlock(&p->lock);
  *thr = t;
  return 0;
}

/* At the thread's exit (on it) or at teardown (recording has stopped):
 * its calls get their times, its events go back to the driver. */
static void gpu_detach(void *proc, void *thr) {
  struct gpu_proc *p = proc;
  struct gpu_thr *t = thr;
  sp__gpu_finish(&t->pool);
  sp__gpu_thread_fini(&t->pool);
  pthread_mutex_lock(&p->lock);
  sp__gpu_problems_add(&p->detached, &t->pool.prob);
  if (t->prev) t->prev->next = t->next;
  else p->threads = t->next;
  if (t->next) t->next->prev = t->prev;
  pthread_mutex_unlock(&p->lock);
  free(t);
}

static void gpu_after_fork(void *proc) {
  /* The child stands down: the parent's events mean nothing to it, so no
   * driver call, only our own memory goes. */
  struct gpu_proc *p = proc;
  for (struct gpu_thr *t = p->threads, *n; t; t = n) {
    n = t->next;
    free(t->pool.free_ev);
    free(t->pool.open);
    free(t->pool.ring);
    free(t);
  }
  free(p);
}

static int gpu_region_added(void *proc, uint32_t id, const struct sp_ext_region *r) {
  (void)proc, (void)id;
  return !r->internal;
}

static void gpu_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  struct gpu_thr *t = thr;
  sp__gpu_begin(&t->pool, stream_for(proc, c->region));
}

static void gpu_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  struct gpu_proc *p = proc;
  struct gpu_thr *t = thr;
  sp__gpu_end(&t->pool, stream_for(p, c->region), c->slot, p->sync);
}

static void gpu_resolve(void *proc, void *thr, const struct sp_ext_thread *th, uint64_t n) {
  (void)proc, (void)th, (void)n; /* every closed call is below n */
  sp__gpu_finish(&((struct gpu_thr *)thr)->pool);
}

static sp_status gpu_emit(void *proc, struct sp_ext_emit *out) {
  struct gpu_proc *p = proc;
  struct sp__gpu_problems prob;
  pthread_mutex_lock(&p->lock);
  prob = p->detached;
  memset(&p->detached, 0, sizeof p->detached);
  for (struct gpu_thr *t = p->threads; t; t = t->next) {
    sp__gpu_problems_add(&prob, &t->pool.prob);
    memset(&t->pool.prob, 0, sizeof t->pool.prob); /* reported once: no thread records now */
  }
  pthread_mutex_unlock(&p->lock);
  int rc = sp_ext_meta_str(out, "gpu_backend", p->b.name);
  if (!strcmp(p->b.name, "cuda")) {
    int version = 0, ndev = 0;
    const char *dev = sp__gpu_cuda_device(&version, &ndev);
    rc |= sp_ext_meta_str(out, "gpu_device", dev ? dev : "unknown");
    rc |= sp_ext_meta_i64(out, "gpu_device_count", ndev);
    rc |= sp_ext_meta_i64(out, "cuda_driver_version", version);
  }
  rc |= sp_ext_meta_i64(out, "gpu_untimed_calls", (int64_t)prob.untimed);
  if (rc) return sp__set_error(SP_ERR_NO_MEMORY, "use_gpu_timing: out of memory for the metadata");
  if (prob.untimed || prob.first_error) {
    char text[768];
    sp__gpu_problems_text(&prob, &p->b, text, sizeof text);
    sp_ext_warn(p->m, "GPU timing (%s backend): %s", p->b.name, text);
  }
  return SP_OK;
}

const struct sp_ext sp__ext_gpu = {
    .abi = SP_EXT_ABI,
    .name = "gpu",
    .kind = SP_EXT_COLUMNS | SP_EXT_INSIDE,
    .wanted = gpu_wanted,
    .setup = gpu_setup,
    .teardown = gpu_teardown,
    .after_fork = gpu_after_fork,
    .thread_attach = gpu_attach,
    .thread_detach = gpu_detach,
    .region_added = gpu_region_added,
    .enter = gpu_enter,
    .exit = gpu_exit,
    .resolve = gpu_resolve,
    .emit = gpu_emit,
};
