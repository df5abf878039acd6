/* gpu_pool.c - the per-thread event pool and its asynchronous resolution
 * (see gpu_timer.h for the model).
 *
 * Growth is geometric and happens only when the pool is low and nothing in
 * flight has completed, so in a steady state where the device keeps up a call
 * costs its two records and the occasional query of the oldest pairs. After
 * the backend once fails to create an event (out of resources), the pool
 * stops growing and lives on the events it has: calls then wait for a free
 * event from the ring or, when none has completed, go untimed (counted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/gpu/gpu_timer.h"

#define DEFAULT_MAX_PENDING 65536u
#define FIRST_BATCH 8u
#define MAX_BATCH 1024u

enum { STEP_BIND, STEP_CREATE, STEP_RECORD, STEP_ELAPSED, STEP_SYNC };
static const char *const step_text[] = {"choosing the device context", "creating an event",
                                        "recording an event", "reading an elapsed time",
                                        "synchronizing the stream"};

void sp__gpu_thread_init(struct sp__gpu_thread *t, const struct sp__gpu_backend *b,
                         sp__gpu_deliver_fn deliver, void *ctx, uint32_t max_pending) {
  memset(t, 0, sizeof *t);
  t->b = b;
  t->deliver = deliver;
  t->ctx = ctx;
  uint32_t m = max_pending ? max_pending : DEFAULT_MAX_PENDING, p2 = 1;
  while (p2 < m && p2 < (1u << 30)) p2 *= 2;
  t->max_pending = p2;
}

static void fail(struct sp__gpu_thread *t, int step, int code, uint64_t *counter) {
  (*counter)++;
  if (!t->prob.first_error) {
    t->prob.first_error = code ? code : -1;
    t->prob.first_where = step_text[step];
  }
}

static void untimed(struct sp__gpu_thread *t, uint64_t tag) {
  t->prob.untimed++;
  t->deliver(t->ctx, tag, -1);
}

static void release(struct sp__gpu_thread *t, void *ev) {
  if (!ev) return;
  if (!t->b->create) { /* record() made it: hand it back */
    if (t->b->destroy) t->b->destroy(t->b->be, t->ts, ev);
    return;
  }
  if (t->nfree == t->free_cap) { /* cannot happen: free_cap >= live_events */
    t->b->destroy(t->b->be, t->ts, ev);
    t->live_events--;
    return;
  }
  t->free_ev[t->nfree++] = ev;
}

/* Resolve one pair; wait or not. Returns 0 when it is still in flight. */
static int resolve(struct sp__gpu_thread *t, const struct sp__gpu_pair *p, int wait) {
  int64_t ns = -1;
  int rc = t->b->elapsed(t->b->be, t->ts, p->start, p->end, wait, &ns);
  if (rc == SP__GPU_NOT_READY) {
    if (!wait) return 0;
    rc = -1; /* a backend must not answer "not ready" to a wait */
  }
  if (rc != SP__GPU_DONE || ns < 0) {
    fail(t, STEP_ELAPSED, rc, &t->prob.elapsed_errors);
    untimed(t, p->tag);
  } else {
    t->deliver(t->ctx, p->tag, ns);
  }
  release(t, p->start);
  release(t, p->end);
  return 1;
}

uint32_t sp__gpu_poll(struct sp__gpu_thread *t) {
  uint32_t done = 0;
  t->polls++;
  while (t->count) {
    if (!resolve(t, &t->ring[t->head], 0)) break;
    t->head = (t->head + 1) & (t->cap - 1);
    t->count--;
    done++;
  }
  return done;
}

/* Create a batch of events: as many as are alive (doubling), at least 8. */
static void grow_events(struct sp__gpu_thread *t) {
  if (t->prob.create_errors) return; /* out of resources once: live on what we have */
  uint64_t want = t->live_events ? t->live_events : FIRST_BATCH;
  if (want > MAX_BATCH) want = MAX_BATCH;
  uint64_t need = t->live_events + want;
  if (need > t->free_cap) {
    void **f = realloc(t->free_ev, need * sizeof *f);
    if (!f) return;
    t->free_ev = f;
    t->free_cap = (uint32_t)need;
  }
  for (uint64_t i = 0; i < want; i++) {
    void *ev = NULL;
    int rc = t->b->create(t->b->be, t->ts, &ev);
    if (rc != 0 || !ev) {
      fail(t, STEP_CREATE, rc, &t->prob.create_errors);
      return;
    }
    t->live_events++;
    t->free_ev[t->nfree++] = ev;
  }
}

/* An event to record into: NULL with *ok=1 for backends that make their own. */
static void *take_event(struct sp__gpu_thread *t, int *ok) {
  *ok = 1;
  if (!t->b->create) return NULL;
  if (!t->nfree && t->count) sp__gpu_poll(t);
  if (!t->nfree) grow_events(t);
  if (!t->nfree && t->count) sp__gpu_poll(t); /* creation failed: maybe one completed meanwhile */
  if (!t->nfree) {
    *ok = 0;
    return NULL;
  }
  return t->free_ev[--t->nfree];
}

static int bind(struct sp__gpu_thread *t) {
  if (t->bound) return t->bound > 0;
  int rc = t->b->bind ? t->b->bind(t->b->be, &t->ts) : 0;
  t->bound = rc == 0 ? 1 : -1;
  if (rc) fail(t, STEP_BIND, rc, &t->prob.bind_errors);
  return t->bound > 0;
}

/* Record into a fresh event; NULL when the call cannot be timed. */
static void *record(struct sp__gpu_thread *t, void *stream) {
  int ok;
  void *ev = take_event(t, &ok);
  if (!ok) return NULL;
  int rc = t->b->record(t->b->be, t->ts, stream, &ev);
  if (rc != 0 || !ev) {
    fail(t, STEP_RECORD, rc, &t->prob.record_errors);
    release(t, ev);
    return NULL;
  }
  return ev;
}

void sp__gpu_begin(struct sp__gpu_thread *t, void *stream) {
  void *ev = bind(t) ? record(t, stream) : NULL;
  if (t->depth == t->open_cap) {
    uint32_t ncap = t->open_cap ? t->open_cap * 2 : 32;
    void **o = realloc(t->open, ncap * sizeof *o);
    if (!o) { /* the call nests deeper than we can remember: untimed */
      release(t, ev);
      t->depth++;
      return;
    }
    t->open = o;
    t->open_cap = ncap;
  }
  t->open[t->depth++] = ev;
}

static int grow_ring(struct sp__gpu_thread *t) {
  if (t->cap >= t->max_pending) return -1;
  uint32_t p2 = t->cap ? t->cap * 2 : 64; /* a power of two: the index mask */
  if (p2 > t->max_pending) p2 = t->max_pending;
  struct sp__gpu_pair *r = malloc((size_t)p2 * sizeof *r);
  if (!r) return -1;
  for (uint32_t i = 0; i < t->count; i++) r[i] = t->ring[(t->head + i) & (t->cap - 1)];
  free(t->ring);
  t->ring = r;
  t->head = 0;
  t->cap = p2;
  return 0;
}

void sp__gpu_end(struct sp__gpu_thread *t, void *stream, uint64_t tag, int sync) {
  if (t->depth == 0) { /* the caller ended more calls than it began */
    untimed(t, tag);
    return;
  }
  t->depth--;
  void *start = t->depth < t->open_cap ? t->open[t->depth] : NULL;
  if (!start) {
    untimed(t, tag);
    return;
  }
  void *end = record(t, stream);
  if (!end) {
    release(t, start);
    untimed(t, tag);
    return;
  }
  struct sp__gpu_pair p = {start, end, tag};
  if (sync) {
    int rc = t->b->sync ? t->b->sync(t->b->be, t->ts, stream) : 0;
    if (rc) fail(t, STEP_SYNC, rc, &t->prob.sync_errors);
    resolve(t, &p, 1);
    return;
  }
  if (t->count == t->cap) {
    if (t->count) sp__gpu_poll(t);
    if (t->count == t->cap && grow_ring(t) != 0) {
      t->prob.exhausted++;
      release(t, start);
      release(t, end);
      untimed(t, tag);
      return;
    }
  }
  t->ring[(t->head + t->count) & (t->cap - 1)] = p;
  t->count++;
}

void sp__gpu_finish(struct sp__gpu_thread *t) {
  if (!t->count) return;
  int entered = !t->b->enter || t->b->enter(t->b->be, t->ts) == 0;
  while (t->count) {
    struct sp__gpu_pair p = t->ring[t->head];
    t->head = (t->head + 1) & (t->cap - 1);
    t->count--;
    if (entered) {
      resolve(t, &p, 1);
    } else {
      fail(t, STEP_BIND, -1, &t->prob.elapsed_errors);
      release(t, p.start);
      release(t, p.end);
      untimed(t, p.tag);
    }
  }
  if (entered && t->b->leave) t->b->leave(t->b->be, t->ts);
}

void sp__gpu_thread_fini(struct sp__gpu_thread *t) {
  if (t->bound > 0) {
    int entered = !t->b->enter || t->b->enter(t->b->be, t->ts) == 0;
    if (entered && t->b->destroy) {
      for (uint32_t i = 0; i < t->count; i++) {
        const struct sp__gpu_pair *p = &t->ring[(t->head + i) & (t->cap - 1)];
        t->b->destroy(t->b->be, t->ts, p->start);
        t->b->destroy(t->b->be, t->ts, p->end);
      }
      uint32_t d = t->depth < t->open_cap ? t->depth : t->open_cap;
      for (uint32_t i = 0; i < d; i++)
        if (t->open[i]) t->b->destroy(t->b->be, t->ts, t->open[i]);
      for (uint32_t i = 0; i < t->nfree; i++) t->b->destroy(t->b->be, t->ts, t->free_ev[i]);
    }
    if (entered && t->b->leave) t->b->leave(t->b->be, t->ts);
    if (t->b->unbind) t->b->unbind(t->b->be, t->ts);
  }
  free(t->free_ev);
  free(t->open);
  free(t->ring);
  struct sp__gpu_problems keep = t->prob;
  const struct sp__gpu_backend *b = t->b;
  memset(t, 0, sizeof *t);
  t->b = b;
  t->prob = keep;
}

void sp__gpu_problems_add(struct sp__gpu_problems *a, const struct sp__gpu_problems *b) {
  a->untimed += b->untimed;
  a->bind_errors += b->bind_errors;
  a->create_errors += b->create_errors;
  a->record_errors += b->record_errors;
  a->elapsed_errors += b->elapsed_errors;
  a->sync_errors += b->sync_errors;
  a->exhausted += b->exhausted;
  if (!a->first_error && b->first_error) {
    a->first_error = b->first_error;
    a->first_where = b->first_where;
  }
}

void sp__gpu_problems_text(const struct sp__gpu_problems *p, const struct sp__gpu_backend *b,
                           char *buf, size_t n) {
  if (!n) return;
  buf[0] = '\0';
  if (!p->untimed && !p->first_error && !p->exhausted) return;
  size_t o = 0;
#define SP__PUT(...)                                                   \
  do {                                                                 \
    int k_ = snprintf(buf + o, o < n ? n - o : 0, __VA_ARGS__);        \
    if (k_ > 0) o += (size_t)k_;                                       \
  } while (0)
  SP__PUT("%llu call%s ha%s no GPU time (events/gpu_durations = -1)", (unsigned long long)p->untimed,
          p->untimed == 1 ? "" : "s", p->untimed == 1 ? "s" : "ve");
  if (p->first_error) {
    char name[96] = "";
    if (p->first_error > 0 && b && b->error_name)
      b->error_name(b->be, p->first_error, name, sizeof name);
    else
      snprintf(name, sizeof name, "error %d", p->first_error);
    SP__PUT("; the first failure was %s: %s", p->first_where ? p->first_where : "?", name);
  }
  const struct { uint64_t v; const char *what; } parts[] = {
      {p->bind_errors, "threads had no usable device context"},
      {p->create_errors, "event creations failed (the pool stopped growing)"},
      {p->record_errors, "event records failed"},
      {p->elapsed_errors, "elapsed-time reads failed"},
      {p->sync_errors, "stream synchronizations failed"},
      {p->exhausted, "calls found too many calls in flight on their thread"},
  };
  const char *sep = " (";
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (parts[i].v) {
      SP__PUT("%s%llu %s", sep, (unsigned long long)parts[i].v, parts[i].what);
      sep = ", ";
    }
  if (sep[0] == ',') SP__PUT(")");
#undef SP__PUT
  if (o >= n && n > 4) memcpy(buf + n - 4, "...", 4);
}
