/* context.c - parents on another thread: contexts captured on one thread and
 * adopted on another, so that the calls a thread begins at depth 0 hang under
 * the call that handed it the work (an OpenMP worker's calls under the call
 * that opened the parallel region, a pool thread's under the call that
 * submitted its task).
 *
 * A capture marks the capturing thread's innermost open call as a target and
 * adds a context naming it by (thread, begin tick, depth); an adopting thread
 * keeps the context in its TLS and is "armed" (detail.h: stack_lim 0 at depth
 * 0, end_floor 1), so only its depth-0 begins and their ends leave the
 * inlined path. Nothing else pays: the capturing thread records as before.
 * At finalize (or in the stream writer) the per-thread pass gives every target
 * its call id, the contexts taken of it learn that id, and the calls that
 * adopted them are written with it as their parent. The parent's exclusive
 * time is not reduced by them: they ran beside it, on another thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/core.h"

/* What the calling thread adopted, per manager slot: the context index + 1
 * (0: none) for the manager of that generation. Allocated on the thread's
 * first adoption: the library's TLS block must stay small (dlopen). */
struct adoption {
  uint32_t gen;
  uint32_t ctx;
};
/* initial-exec: a signal handler reads it (sp__adopted_region), and the
 * general model may allocate on a thread's first access. */
static __thread __attribute__((tls_model("initial-exec"))) struct adoption *adopted;
static pthread_key_t adopted_key;
static pthread_once_t adopted_once = PTHREAD_ONCE_INIT;

static void adopted_make_key(void) { pthread_key_create(&adopted_key, free); }

static struct adoption *adopted_table(void) {
  if (!adopted) {
    pthread_once(&adopted_once, adopted_make_key);
    adopted = calloc(SP_I_MAX_MANAGERS, sizeof *adopted);
    if (adopted) pthread_setspecific(adopted_key, adopted);
  }
  return adopted;
}

static uint32_t adopted_ctx(const struct sp_manager *m) {
  uint32_t s = m->hot.slot;
  return adopted && adopted[s].gen == m->hot.gen ? adopted[s].ctx : 0;
}

void sp__thread_rearm(struct sp_manager *m, sp_thread_rec *t) {
  int on = adopted_ctx(m) != 0 && !t->cur_task;
  t->hot.end_floor = on ? 1u : 0u;
  t->hot.stack_lim = on && t->hot.depth == 0 ? 0u : t->hot.stack_cap;
  uint64_t buf = t->hot.cap - t->hot.n, stk = t->hot.stack_lim > t->hot.depth ? t->hot.stack_lim - t->hot.depth : 0;
  t->hot.room = buf < stk ? buf : stk;
}

uint32_t sp__xparent_depth(struct sp_manager *m) {
  uint32_t c = adopted_ctx(m);
  return c ? SP__DEPTH_XPARENT | (c - 1) : 0;
}

static struct sp_xctx *xctx_at(const struct sp_manager *m, uint32_t k) {
  struct sp_xctx *c = __atomic_load_n(&m->xctx[k / SP__XCTX_CHUNK], __ATOMIC_ACQUIRE);
  return c ? &c[k % SP__XCTX_CHUNK] : NULL;
}

uint32_t sp__xctx_capture(struct sp_manager *m) {
  uint32_t state = __atomic_load_n(&m->hot.state, __ATOMIC_RELAXED);
  if (state == SP_I_STATE_OFF || (state & ~SP_I_STATE_CLOCK) == SP_I_STATE_AGGREGATE) return 0;
  uint32_t slot = m->hot.slot;
  sp_thread_rec *t = sp_i_tls.gen[slot] == m->hot.gen ? (sp_thread_rec *)sp_i_tls.t[slot] : NULL;
  uint32_t d = t ? t->hot.depth : 0;
  while (d && (t->hot.stack[d - 1] & SP_I_GHOST_BIT)) d--;
  if (d == 0) {
    /* Nothing of its own open: the thread passes on what it adopted, so
     * nested hand-offs keep their root. */
    return adopted_ctx(m);
  }
  uint64_t i = t->hot.stack[d - 1];
  struct sp_i_event *ev = &t->hot.ev[i];
  if (t->xcap_ctx && t->xcap_i == i && t->xcap_start == ev->start) return t->xcap_ctx;
  pthread_mutex_lock(&m->lock);
  uint32_t k = m->nxctx;
  struct sp_xctx *chunk = k / SP__XCTX_CHUNK < SP__XCTX_CHUNKS ? m->xctx[k / SP__XCTX_CHUNK] : NULL;
  if (!chunk && k / SP__XCTX_CHUNK < SP__XCTX_CHUNKS) {
    chunk = malloc(SP__XCTX_CHUNK * sizeof *chunk);
    if (chunk) __atomic_store_n(&m->xctx[k / SP__XCTX_CHUNK], chunk, __ATOMIC_RELEASE);
  }
  if (chunk && m->nxctx_open == m->xctx_open_cap) {
    size_t cap = m->xctx_open_cap ? m->xctx_open_cap * 2 : 64;
    uint32_t *o = realloc(m->xctx_open, cap * sizeof *o);
    if (o) {
      m->xctx_open = o;
      m->xctx_open_cap = cap;
    } else {
      chunk = NULL;
    }
  }
  if (!chunk) { /* out of memory or of contexts: the calls become roots */
    pthread_mutex_unlock(&m->lock);
    t->dropped_events++;
    return 0;
  }
  struct sp_xctx *c = &chunk[k % SP__XCTX_CHUNK];
  c->start = ev->start;
  c->thread = t->index;
  c->depth = sp__ev_depth(ev->depth);
  c->id = -1;
  c->region = ev->region;
  m->xctx_open[m->nxctx_open++] = k;
  __atomic_store_n(&m->nxctx, k + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&m->lock);
  ev->depth |= SP__DEPTH_TARGET; /* the owning thread's own event */
  t->xcap_i = i;
  t->xcap_start = ev->start;
  t->xcap_ctx = k + 1;
  return k + 1;
}

void sp__xctx_resolve(struct sp_manager *m, uint32_t thread, uint64_t start, uint32_t depth, int64_t id) {
  pthread_mutex_lock(&m->lock);
  for (size_t j = 0; j < m->nxctx_open;) {
    struct sp_xctx *c = xctx_at(m, m->xctx_open[j]);
    if (c && c->thread == thread && c->start == start && c->depth == depth) {
      c->id = id;
      m->xctx_open[j] = m->xctx_open[--m->nxctx_open];
    } else {
      j++;
    }
  }
  pthread_mutex_unlock(&m->lock);
}

int sp__xctx_restore(struct sp_manager *m, uint32_t k, uint32_t thread, uint64_t start, uint32_t depth, int64_t id) {
  if (k != m->nxctx || k / SP__XCTX_CHUNK >= SP__XCTX_CHUNKS) return -1;
  struct sp_xctx **chunk = &m->xctx[k / SP__XCTX_CHUNK];
  if (!*chunk && !(*chunk = malloc(SP__XCTX_CHUNK * sizeof **chunk))) return -1;
  if (m->nxctx_open == m->xctx_open_cap) {
    size_t cap = m->xctx_open_cap ? m->xctx_open_cap * 2 : 64;
    uint32_t *o = realloc(m->xctx_open, cap * sizeof *o);
    if (!o) return -1;
    m->xctx_open = o;
    m->xctx_open_cap = cap;
  }
  (*chunk)[k % SP__XCTX_CHUNK] = (struct sp_xctx){start, thread, depth & SP__DEPTH_MASK, id < 0 ? -1 : id, 0};
  if (id < 0) m->xctx_open[m->nxctx_open++] = k;
  m->nxctx = k + 1;
  return 0;
}

int64_t sp__xctx_parent(const struct sp_manager *m, int64_t pid) {
  if (pid > -2) return pid;
  int64_t k = -2 - pid;
  if (k >= (int64_t)__atomic_load_n(&m->nxctx, __ATOMIC_ACQUIRE)) return -1;
  const struct sp_xctx *c = xctx_at(m, (uint32_t)k);
  return c ? c->id : -1;
}

void sp__xctx_free(struct sp_manager *m) {
  for (uint32_t i = 0; i < SP__XCTX_CHUNKS && m->xctx[i]; i++) {
    free(m->xctx[i]);
    m->xctx[i] = NULL;
  }
  free(m->xctx_open);
  m->xctx_open = NULL;
  m->nxctx_open = m->xctx_open_cap = 0;
  m->nxctx = 0;
}

/*====== The public pair ======*/

sp_context sp_context_capture(sp_manager *m) {
  sp_context c;
  memset(&c, 0, sizeof c);
  if (!m) return c;
  c.ctx = sp__xctx_capture(m);
  if (c.ctx) {
    c.gen = m->hot.gen;
    c.slot = m->hot.slot;
  }
  return c;
}

void sp__adopted_get(const struct sp_manager *m, uint32_t *gen, uint32_t *ctx) {
  uint32_t s = m->hot.slot;
  *gen = adopted ? adopted[s].gen : 0;
  *ctx = adopted ? adopted[s].ctx : 0;
}

uint32_t sp__adopted_region(const struct sp_manager *m) {
  const struct adoption *a = adopted;
  uint32_t s = m->hot.slot;
  if (!a || s >= SP_I_MAX_MANAGERS) return 0;
  /* The thread's own sp__adopt may be interrupted between its two stores:
   * a context of the same generation is still one of this manager's. */
  uint32_t gen = a[s].gen, ctx = a[s].ctx;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (!ctx || gen != m->hot.gen || ctx > __atomic_load_n(&m->nxctx, __ATOMIC_ACQUIRE)) return 0;
  const struct sp_xctx *c = xctx_at(m, ctx - 1);
  uint32_t r = c ? c->region : 0;
  return r <= sp__region_max_id() ? r : 0;
}

void sp__adopt(struct sp_manager *m, uint32_t gen, uint32_t ctx) {
  uint32_t s = m->hot.slot;
  if (gen != m->hot.gen || !ctx) {
    if (adopted) adopted[s] = (struct adoption){0, 0};
  } else if (adopted_table()) {
    adopted[s] = (struct adoption){gen, ctx};
  } /* out of memory: the thread's calls stay roots */
  /* A sampling source counts the team's threads whether they record or not. */
  if (gen == m->hot.gen && ctx && m->ext_threads) sp__ext_join_thread(m);
  if (sp_i_tls.gen[s] == m->hot.gen && sp_i_tls.t[s]) sp__thread_rearm(m, (sp_thread_rec *)sp_i_tls.t[s]);
}

void sp_context_adopt(sp_manager *m, sp_context c) {
  if (!m || m->hot.gen == 0) return;
  sp__adopt(m, c.gen, c.ctx);
}
