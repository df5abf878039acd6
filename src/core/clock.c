/* clock.c - the profiler's clock: invariant TSC where the CPU has one, else
 * CLOCK_MONOTONIC through the vDSO.
 *
 * Events store raw ticks; every file stores CLOCK_MONOTONIC nanoseconds, the
 * clock upstream's Python perf_counter_ns reads, so C and Python timelines
 * line up. Ticks are mapped per run through (tick, ns) anchor pairs taken at
 * setup and finalize, and in between every second (by the signal watcher)
 * and at each streamed block: piecewise linear, so every timestamp is as
 * close to the monotonic clock as the anchors are. The rate calibrated once
 * per process serves only runs too short to measure their own. SCOPE_PROFILER_CLOCK=monotonic forces the
 * portable clock; =tsc uses the TSC even where CPUID does not report it
 * invariant (emulators such as valgrind hide the flag).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"

SP_API int sp_i_clock_tsc = 0;
SP_API uint64_t sp_i_manual_ticks = 1;

static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static uint64_t calib_mult; /* ns per tick, 32.32 fixed point */
static double tsc_ghz;

int64_t sp__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

SP_API uint64_t sp_i_clock_ns(void) { return (uint64_t)sp__mono_ns(); }

/* Threads' start and exit times are taken as ns, not ticks (a dying thread
 * has no run to map its ticks with): on the clock the anchors give, so that
 * they line up with the run's start under the manual clock too. */
int64_t sp__clock_now_ns(void) {
  if (sp_i_clock_tsc == 2) return (int64_t)__atomic_load_n(&sp_i_manual_ticks, __ATOMIC_RELAXED);
  return sp__mono_ns();
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static int tsc_is_invariant(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d >> 8) & 1; /* "Invariant TSC": constant rate in all P/C-states */
}

/* Sample (tick, ns) with the ns read bracketed tightly by two tick reads. */
static void anchor(uint64_t *tick, int64_t *ns) {
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t t0 = __builtin_ia32_rdtsc();
    int64_t n = sp__mono_ns();
    uint64_t t1 = __builtin_ia32_rdtsc();
    /* the first sample always (which its gap below UINT64_MAX took before:
     * said so that an optimiser sees both outputs set) */
    if (i == 0 || t1 - t0 < best_gap) {
      best_gap = t1 - t0;
      *tick = t0 + (t1 - t0) / 2;
      *ns = n;
    }
  }
}
#endif

static void clock_setup(void) {
  calib_mult = UINT64_C(1) << 32; /* ticks are ns */
  const char *force = getenv("SCOPE_PROFILER_CLOCK");
  /* "manual": time moves only through sp__clock_manual_advance(); tests use
   * it to feed two managers identical timestamps. */
  if (force && strcmp(force, "manual") == 0) {
    sp_i_clock_tsc = 2;
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (force && strcmp(force, "monotonic") == 0) return;
  if (!tsc_is_invariant() && !(force && strcmp(force, "tsc") == 0)) return;
  uint64_t t0, t1;
  int64_t n0, n1;
  anchor(&t0, &n0);
  /* 4 ms of calibration bounds the rate error to ~1e-5 even with a few
   * hundred ns of anchor jitter; long runs re-derive it from their own span. */
  do {
    anchor(&t1, &n1);
  } while (n1 - n0 < 4000000);
  if (t1 <= t0) return;
  double ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
  calib_mult = (uint64_t)(ns_per_tick * 4294967296.0);
  tsc_ghz = 1.0 / ns_per_tick;
  sp_i_clock_tsc = 1;
#else
  (void)force;
#endif
}

void sp__clock_init(void) { pthread_once(&clock_once, clock_setup); }

const char *sp__clock_name(void) { return sp_i_clock_tsc == 1 ? "tsc" : sp_i_clock_tsc == 2 ? "manual" : "clock_gettime"; }

void sp__clock_manual_advance(uint64_t ns) { __atomic_fetch_add(&sp_i_manual_ticks, ns, __ATOMIC_RELAXED); }

double sp__clock_tsc_ghz(void) { return tsc_ghz; }

void sp__clock_skew_calibration(double ppm) {
  if (sp_i_clock_tsc == 1) calib_mult = (uint64_t)((double)calib_mult * (1.0 + ppm * 1e-6));
}

/* The rate between two anchors, or the calibrated one when they are too
 * close to say (or disagree with it wildly: anchors read back from a spill
 * file may be corrupt). */
static uint64_t rate(uint64_t tick0, int64_t ns0, uint64_t tick1, int64_t ns1) {
  if (!(ns1 > ns0 && tick1 > tick0 && ns1 - ns0 >= 20000)) return calib_mult;
  double mult = (double)((uint64_t)ns1 - (uint64_t)ns0) / (double)(tick1 - tick0) * 4294967296.0;
  return mult > (double)calib_mult / 2 && mult < (double)calib_mult * 2 ? (uint64_t)mult : calib_mult;
}

struct sp_clock_map sp__clock_map(uint64_t tick0, int64_t ns0, uint64_t tick1, int64_t ns1) {
  struct sp_clock_map c = {tick0, ns0, calib_mult, NULL, 0};
  if (sp_i_clock_tsc != 1) {
    c.tick0 = 0;
    c.ns0 = 0;
    return c; /* ticks are already CLOCK_MONOTONIC ns */
  }
  /* The run's own anchors, whatever its length: the start-up calibration's
   * rate is off by a few parts per million (4 ms of it), which is 1-2.5 us
   * a second, while the line through the run's two anchors is as close to the
   * monotonic clock as the anchors themselves (tens of ns) at both ends, and
   * in between as far as the clocks' rates stay put. From 20 us on: a
   * shorter run is within the anchors' error either way. */
  c.mult = rate(tick0, ns0, tick1, ns1);
  return c;
}

void sp__clock_note(struct sp_manager *m) {
  if (sp_i_clock_tsc != 1) return;
  uint64_t tick;
  int64_t ns;
  sp__clock_anchor(&tick, &ns);
  pthread_mutex_lock(&m->lock);
  if (m->nanchors == m->anchors_cap) {
    size_t cap = m->anchors_cap ? m->anchors_cap * 2 : 64;
    uint64_t(*a)[2] = realloc(m->anchors, cap * sizeof *a);
    if (a) {
      m->anchors = a;
      m->anchors_cap = cap;
    }
  }
  if (m->nanchors < m->anchors_cap) {
    m->anchors[m->nanchors][0] = tick;
    m->anchors[m->nanchors][1] = (uint64_t)ns;
    m->nanchors++;
  }
  pthread_mutex_unlock(&m->lock);
}

struct sp_clock_seg *sp__clock_segments(struct sp_manager *m, uint64_t tick1, int64_t ns1, size_t *n) {
  *n = 0;
  pthread_mutex_lock(&m->lock);
  size_t na = m->nanchors;
  struct sp_clock_seg *seg = na && sp_i_clock_tsc == 1 ? malloc((na + 1) * sizeof *seg) : NULL;
  if (seg) {
    uint64_t pt = m->run_tick0;
    int64_t pn = m->run_ns0;
    size_t k = 0;
    for (size_t i = 0; i <= na; i++) {
      uint64_t t = i < na ? m->anchors[i][0] : tick1;
      int64_t ns = i < na ? (int64_t)m->anchors[i][1] : ns1;
      if (t <= pt || ns < pn || (i < na && t >= tick1)) continue; /* out of order: skipped */
      seg[k++] = (struct sp_clock_seg){pt, pn, rate(pt, pn, t, ns)};
      pt = t;
      pn = ns;
    }
    *n = k;
  }
  m->nanchors = 0; /* the next run starts from the end of this one */
  pthread_mutex_unlock(&m->lock);
  if (seg && *n < 2) { /* nothing in between: the straight line is the map */
    free(seg);
    seg = NULL;
    *n = 0;
  }
  return seg;
}

/* The pieces of the current run's map that no later anchor can change: the
 * same walk over the anchors as sp__clock_segments (the same ones skipped),
 * up to the last one kept, whose tick becomes *until. A tick before it maps
 * to the nanoseconds the run's final map will give it, provided the final
 * map keeps that anchor, which it does when the anchor was taken before
 * finalize's end anchor (stream.c holds its writer for that). Without the
 * TSC the map is the identity and final at once (*until = UINT64_MAX).
 * Returns the malloc'd pieces (NULL with *until 0: none kept yet). */
struct sp_clock_seg *sp__clock_final_map(struct sp_manager *m, struct sp_clock_map *out, uint64_t *until) {
  *out = sp__clock_map(m->run_tick0, m->run_ns0, m->run_tick0, m->run_ns0);
  *until = 0;
  if (sp_i_clock_tsc != 1) {
    *until = UINT64_MAX;
    return NULL;
  }
  pthread_mutex_lock(&m->lock);
  size_t na = m->nanchors;
  struct sp_clock_seg *seg = na ? malloc(na * sizeof *seg) : NULL;
  size_t k = 0;
  if (seg) {
    uint64_t pt = m->run_tick0;
    int64_t pn = m->run_ns0;
    for (size_t i = 0; i < na; i++) {
      uint64_t t = m->anchors[i][0];
      int64_t ns = (int64_t)m->anchors[i][1];
      if (t <= pt || ns < pn) continue; /* out of order: skipped, as sp__clock_segments does */
      seg[k++] = (struct sp_clock_seg){pt, pn, rate(pt, pn, t, ns)};
      pt = t;
      pn = ns;
    }
    if (k) *until = pt;
  }
  pthread_mutex_unlock(&m->lock);
  if (!k) {
    free(seg);
    return NULL;
  }
  out->seg = seg;
  out->nseg = k;
  return seg;
}

/* The cursor on piece k (the map's line when it has no pieces): the range
 * of ticks the hint would take piece k for. */
void sp__tcur_set(const struct sp_clock_map *c, struct sp_tcur *q, size_t k) {
  const uint64_t half = (uint64_t)1 << 63;
  if (!c->nseg) {
    *q = (struct sp_tcur){0, c->mult < half ? UINT64_MAX : 0, c->tick0, c->mult, c->ns0, 0};
    return;
  }
  size_t n = c->nseg;
  q->k = k;
  q->tick = c->seg[k].tick;
  q->ns = c->seg[k].ns;
  q->mult = c->seg[k].mult;
  if (n == 1) {
    q->lo = 0, q->span = UINT64_MAX;
  } else if (k == 0) { /* the hint's test: before piece 1 */
    q->lo = c->seg[1].tick - half, q->span = half;
  } else if (k + 1 == n) { /* at or after the last piece */
    q->lo = c->seg[k].tick, q->span = half;
  } else {
    uint64_t d = c->seg[k + 1].tick - c->seg[k].tick;
    q->lo = c->seg[k].tick, q->span = d < half ? d : 0; /* pieces out of order: every tick moves */
  }
  if (q->mult >= half) q->span = 0; /* not a signed multiplier: sp__tcur_move's line for every tick */
}

/* Out of line: the rare tick outside the cursor's range keeps the inlined
 * sp__tcur_ns at one compare and a multiply. */
__attribute__((noinline)) int64_t sp__tcur_move(const struct sp_clock_map *c, struct sp_tcur *q, uint64_t t) {
  size_t k = q->k, n = c->nseg;
  if (n && (k >= n || (k && (int64_t)(t - c->seg[k].tick) < 0) ||
            (k + 1 < n && (int64_t)(t - c->seg[k + 1].tick) >= 0)))
    k = sp__clock_piece(c, t);
  sp__tcur_set(c, q, k);
  return sp__clock_line(q->tick, q->ns, q->mult, t);
}

void sp__clock_anchor(uint64_t *tick, int64_t *ns) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (sp_i_clock_tsc == 1) {
    anchor(tick, ns);
    return;
  }
#endif
  if (sp_i_clock_tsc == 2) {
    *tick = __atomic_load_n(&sp_i_manual_ticks, __ATOMIC_RELAXED);
    *ns = (int64_t)*tick;
    return;
  }
  *ns = sp__mono_ns();
  *tick = (uint64_t)*ns;
}
