/* scope_profiler/detail.h - the inlined region begin/end hot path.
 *
 * Not an API: the layouts below are private to the library and may change in
 * any release. They are visible only so that sp_region_begin()/sp_region_end()
 * can be inlined into the caller, which is what keeps a begin/end pair close to
 * the cost of reading the clock twice. The slow-path symbols carry the layout
 * version (sp_i_begin_slow_v6), so a program compiled against a different layout
 * fails to link instead of misbehaving. Callers that cannot inline (bindings,
 * other languages) use the out-of-line sp_region_begin_fn()/sp_region_end_fn().
 *
 * The hot path takes no lock, makes no syscall (the TSC is read in user
 * space), hashes no string, never prints and never allocates: anything unusual
 * (first call on a thread, a full buffer, pause, a region an extension
 * takes, a mismatched end) goes to the out-of-line slow path in
 * src/core/record.c.
 *
 * Dispatch, by manager state (sp_i_hot.state) and region:
 *   OFF                     nothing (one compare)
 *   TIMELINE                inlined event; the slow path for opt-in tagged
 *                           regions (unless known disabled: nothing)
 *   AGGREGATE               inlined accumulator update; likewise
 *   TIMELINE|EXT, AGG|EXT   as without EXT for regions whose plain bit is
 *                           set (no extension takes them), else the slow path
 *   SLOW                    the slow path (paused, or an extension takes
 *                           every region)
 *   TIMELINE|CLOCK, AGG|CLOCK  as without CLOCK, the clock read through
 *                           sp_i_ticks() (not the TSC, or a manual clock)
 */
#ifndef SCOPE_PROFILER_DETAIL_H
#define SCOPE_PROFILER_DETAIL_H

#include <stdint.h>
#include <time.h>

#include "scope_profiler/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#  define SP_I_LIKELY(x) __builtin_expect(!!(x), 1)
#  define SP_I_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define SP_I_INLINE static inline __attribute__((always_inline, no_instrument_function))
#  define SP_I_TLS __thread __attribute__((tls_model("initial-exec")))
#else
#  define SP_I_LIKELY(x) (x)
#  define SP_I_UNLIKELY(x) (x)
#  define SP_I_INLINE static inline
#  if defined(__cplusplus)
#    define SP_I_TLS thread_local
#  else
#    define SP_I_TLS _Thread_local
#  endif
#endif

/* Managers that can be live at once in one process (each holds a TLS slot).
 * The library's whole thread-local block must stay small (<= 256 bytes):
 * initial-exec TLS in a dlopen()ed library lives in glibc's small static-TLS
 * surplus, and a larger block makes dlopen (Python's import, ctypes, cffi)
 * fail with "cannot allocate memory in static TLS block". */
#define SP_I_MAX_MANAGERS 16

/* Manager states, read by every begin/end. */
#define SP_I_STATE_OFF 0u      /* not set up, deactivated, or finalized for good */
#define SP_I_STATE_TIMELINE 1u /* recording, no probes: fully inlined */
#define SP_I_STATE_SLOW 2u     /* recording through the slow path (pause, probes) */
#define SP_I_STATE_AGGREGATE 3u /* aggregation_mode: per-region accumulators, inlined */
/* Flag on TIMELINE or AGGREGATE: extensions take some regions; a region
 * known to be taken by none (its bit in sp_i_hot.plain) stays inlined, the
 * others go through the slow path, which calls the extensions. */
#define SP_I_STATE_EXT 4u
/* Flag on TIMELINE or AGGREGATE: the clock is not the TSC (sp_i_hot.clock
 * != 1), so the inlined paths read it through sp_i_ticks(). Without it the
 * fast path reads the TSC without testing the clock kind again. */
#define SP_I_STATE_CLOCK 8u

/* Region ids with this bit set carry an opt-in tag and always take the slow
 * path, where the manager decides whether the tag is enabled. */
#define SP_I_REGION_SLOW_BIT 0x80000000u

/* A stack entry with this bit set is a call that is not recorded (begun while
 * paused); the low 32 bits hold its region so its end can still be matched. */
#define SP_I_GHOST_BIT (UINT64_C(1) << 63)

/* One recorded call. start/end are raw clock ticks (see sp_i_ticks), converted
 * to CLOCK_MONOTONIC nanoseconds at finalize; end == 0 while the call is open.
 * depth is the number of open calls of this thread when it began, which is all
 * finalize needs to rebuild exact parent ids. */
struct sp_i_event {
  uint64_t start;
  uint64_t end;
  uint32_t region;
  uint32_t depth;
};

/* Aggregation mode: one accumulator per (thread, region), in raw ticks.
 * The sum of squares is kept exact in 128 bits (no shift, no division and
 * no floating point on the hot path): the variance is derived from count,
 * total and sq at finalize without cancellation. sq passes 2^128 only after
 * a thread has spent about 2^64 ticks squared in one region (a year of
 * calls 16384 deep at 3 GHz). first/last are the durations of the calls
 * with the earliest and the latest start (start_min, last_start). */
#if defined(__SIZEOF_INT128__)
/* 128-bit integers (GCC, Clang) named by their machine mode, which ISO C
 * and C++ pedantic modes accept; 8-byte aligned, so that the layout is the
 * same as the fallback's. */
typedef unsigned int sp_i_u128 __attribute__((mode(TI), aligned(8)));
typedef int sp_i_i128 __attribute__((mode(TI)));
#endif
/* The fields every end writes alternate with those it rarely writes: GCC's
 * vectorizer pairs adjacent updates into SSE code that costs more than the
 * scalar updates it replaces. */
struct sp_i_agg {
  uint64_t count;
  int64_t min;
  int64_t total;
  int64_t max;
  int64_t excl;
  int64_t first;
  int64_t last;
  uint64_t start_min;
  uint64_t last_start;
#if defined(__SIZEOF_INT128__)
  sp_i_u128 sq; /* sum of the squared durations */
#else
  uint64_t sq[2]; /* the same, low word first */
#endif
  uint64_t end_max;
};

/* Per-thread, per-manager recording state, owned by the manager. A
 * thread's TLS slot always points at one (detail.h, sp_i_tls_block), so the
 * inlined path tests no generation: a record is armed for its manager's
 * recording only. */
struct sp_i_thread {
  struct sp_i_event *ev; /* events of the current run, in begin order */
  uint64_t n;           /* events used */
  uint64_t cap;         /* events allocated */
  /* Timeline begins the inlined path may take before it must go out of
   * line: at most cap - n and stack_lim - depth when the slow path armed it
   * (sp__thread_rearm), one less per inlined begin, so the one test at
   * begin stands for "buffer has room, stack has room, no adopted parent
   * to take, the record is its manager's". Ends do not give it back, and
   * whatever frees buffer or stack (a hand-off, a reset) leaves it lower
   * than the room there is; what takes room (a slow begin, a ghost, a
   * task's stack) re-arms it. 0: disarmed. */
  uint64_t room;
  uint64_t *stack;      /* indices into ev of the open calls (or ghosts) */
  uint32_t depth;       /* open calls */
  uint32_t stack_cap;
  /* What the room and the inlined end compare depth with. stack_lim is
   * stack_cap, or 0 while a thread that adopted a context from another
   * thread (an OpenMP worker, sp_context_adopt) is at depth 0, so its depth-0
   * begin goes out of line to take its cross-thread parent; end_floor is 1
   * on such a thread, so the end of its depth-0 call goes out of line to
   * re-arm it, UINT32_MAX on a disarmed record (no end inline), else 0. */
  uint32_t stack_lim;
  uint32_t end_floor;
  /* Aggregation mode: the open calls, outermost at open[0], innermost at
   * top[-1] (end = time of its completed children; a ghost has region 0 and
   * its region in depth). open[-1] is a sentinel (region 0, depth
   * UINT32_MAX) that no end's handle matches (sp_i_open_key): an end on an
   * empty stack needs no test of its own, and a closing call adds its time
   * to top[-2] whether or not it has a parent.
   * top reaching open_end sends a begin out of line to grow the stack. */
  struct sp_i_event *top;
  struct sp_i_event *open_end;
  /* Handles 1..acc_lim have an accumulator (acc_lim < acc_cap): the
   * inlined begin takes no other, so every call on the open stack has its
   * accumulator at its end, which then needs no test of its own. */
  uint32_t acc_lim;
  uint32_t open_cap;
  struct sp_i_agg *acc;
  struct sp_i_event *open;
  uint32_t acc_cap;
};

/* The first member of every manager: what the inlined path reads. */
struct sp_i_hot {
  uint32_t state;
  uint32_t slot; /* index into sp_i_tls */
  uint32_t gen;  /* unique per live manager lifetime; 0 never matches */
  /* Region ids 1..nregions are live: a copy of the process-wide count, kept
   * here because the inlined path checks every handle against it and this
   * line is read anyway. A stale (smaller) value only sends a valid handle
   * out of line, which refreshes it. */
  uint32_t nregions;
  /* sp_i_clock_tsc as setup found it, beside the state: the inlined path's
   * clock test then reads the line it reads anyway, not another page (in a
   * loop that misses the TLB, each page the pair touches costs a walk). */
  uint32_t clock;
  /* Opt-in regions known to be disabled on this manager: one bit per region
   * id, set by the slow path once decided, so later calls of a disabled
   * region cost a load and a bit test. */
  uint64_t *optin_off;
  uint32_t optin_nbits;
  /* Regions no extension of this run takes (SP_I_STATE_EXT), one bit per
   * region id, published like optin_off: the array first, then its size. */
  uint64_t *plain;
  uint32_t plain_nbits;
  /* Unique in the process per manager and setup (never 0): a call site that
   * saw its opt-in region disabled keeps this key (sp_site.off_key), and
   * later calls of the site compare it and skip the region (scope_profiler.h,
   * sp_i_site_begin). A new setup, which may enable other tags, takes a new key. */
  uint32_t optin_key;
};

/* 1 when region r is known to be taken by no extension of h's run. The size
 * is loaded first: a reader that sees a size sees an array that large. An
 * id with SP_I_REGION_SLOW_BIT is never plain (it is past any size). */
SP_I_INLINE int sp_i_ext_plain(const struct sp_i_hot *h, uint32_t r) {
#if defined(__GNUC__)
  uint32_t nbits = __atomic_load_n(&h->plain_nbits, __ATOMIC_ACQUIRE);
  const uint64_t *bits = __atomic_load_n(&h->plain, __ATOMIC_ACQUIRE);
#else
  uint32_t nbits = h->plain_nbits;
  const uint64_t *bits = h->plain;
#endif
  return r < nbits && ((bits[r >> 6] >> (r & 63)) & 1);
}

/* 1 when `r` is an opt-in region already known to be disabled on h. The
 * size is loaded first: the writer stores a grown array before its size, so a
 * reader that sees the new size also sees the new array, while one that sees
 * the old size reads inside either array (retired arrays are kept). */
SP_I_INLINE int sp_i_optin_off(const struct sp_i_hot *h, uint32_t r) {
  uint32_t id = r & ~SP_I_REGION_SLOW_BIT;
#if defined(__GNUC__)
  uint32_t nbits = __atomic_load_n(&h->optin_nbits, __ATOMIC_ACQUIRE);
  const uint64_t *bits = __atomic_load_n(&h->optin_off, __ATOMIC_ACQUIRE);
  /* the word is set with an atomic or: read it atomically (a plain load) */
  return id < nbits && ((__atomic_load_n(&bits[id >> 6], __ATOMIC_RELAXED) >> (id & 63)) & 1);
#else
  const uint64_t *bits = h->optin_off;
  uint32_t nbits = h->optin_nbits;
  return id < nbits && ((bits[id >> 6] >> (id & 63)) & 1);
#endif
}

/* A thread's record on manager slot s is t[s], that manager's while gen[s]
 * equals its generation. t[s] is never NULL nor freed memory: it starts at a
 * static disarmed record (room 0, no end matches), and a record whose
 * manager is destroyed while its thread lives stays allocated, disarmed,
 * until the thread attaches again or exits (record.c). So the inlined path
 * reads t[s] without testing gen[s]: a record not armed for the manager
 * called sends the call out of line, where the generation is checked.
 * 192 bytes. */
struct sp_i_tls_block {
  struct sp_i_thread *t[SP_I_MAX_MANAGERS];
  uint32_t gen[SP_I_MAX_MANAGERS];
};

SP_API extern SP_I_TLS struct sp_i_tls_block sp_i_tls;
SP_API extern int sp_i_clock_tsc; /* 1: invariant-TSC cycles, 0: CLOCK_MONOTONIC ns, 2: manual */
SP_API extern uint64_t sp_i_manual_ticks; /* the manual clock (tests: deterministic time) */

#define sp_i_begin_slow sp_i_begin_slow_v6
#define sp_i_end_slow sp_i_end_slow_v6
#define sp_i_begin_other sp_i_begin_other_v6
#define sp_i_end_other sp_i_end_other_v6
SP_API int sp_i_begin_slow(void *m, uint32_t r);
SP_API int sp_i_end_slow(void *m, uint32_t r);
/* The inlined dispatch's other cases (record.c): flags, opt-in handles. */
SP_API int sp_i_begin_other(void *m, uint32_t r);
SP_API int sp_i_end_other(void *m, uint32_t r);
/* CLOCK_MONOTONIC in nanoseconds, out of line: for programs compiled in a
 * strict ISO mode (gcc -std=c11), whose <time.h> declares neither
 * clock_gettime nor CLOCK_MONOTONIC (they are POSIX), so that the headers
 * need no _POSIX_C_SOURCE from their users. */
SP_API uint64_t sp_i_clock_ns(void);

/* Raw clock ticks: TSC cycles where the TSC is invariant, else nanoseconds
 * of CLOCK_MONOTONIC. Both map onto CLOCK_MONOTONIC at finalize. */
SP_I_INLINE uint64_t sp_i_ticks(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (SP_I_LIKELY(sp_i_clock_tsc == 1)) return __builtin_ia32_rdtsc();
#endif
  if (SP_I_UNLIKELY(sp_i_clock_tsc == 2)) return __atomic_load_n(&sp_i_manual_ticks, __ATOMIC_RELAXED);
#if defined(CLOCK_MONOTONIC)
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
  return sp_i_clock_ns();
#endif
}

/* The same ticks, with the clock kind read from the manager's hot line. */
SP_I_INLINE uint64_t sp_i_ticks_h(const struct sp_i_hot *h) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (SP_I_LIKELY(h->clock == 1)) return __builtin_ia32_rdtsc();
#else
  (void)h;
#endif
  return sp_i_ticks();
}

/* Relaxed atomic: a plain load on every target, but pause/resume from another
 * thread is then a well-defined (if not instantly seen) state change. */
SP_I_INLINE uint32_t sp_i_state(const struct sp_i_hot *h) {
#if defined(__GNUC__)
  return __atomic_load_n(&h->state, __ATOMIC_RELAXED);
#else
  return h->state;
#endif
}

/* The clock of an inlined path: `tsc` is a constant where the state told
 * which clock runs (the fast paths), else the manager's copy is tested. */
SP_I_INLINE uint64_t sp_i_ticks_k(const struct sp_i_hot *h, int tsc) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (tsc) return __builtin_ia32_rdtsc();
#else
  (void)tsc;
#endif
  return sp_i_ticks_h(h);
}

/* An open call of aggregation mode is matched by its region and depth
 * words read as one: a call has depth 0, so only its region matches a
 * handle; a ghost (region 0, its region in depth) and the sentinel (region
 * 0, depth UINT32_MAX) match none, not even the invalid handle 0. */
SP_I_INLINE uint64_t sp_i_open_key(const struct sp_i_event *ev) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w;
  __builtin_memcpy(&w, &ev->region, sizeof w);
  return w;
#else
  return (uint64_t)ev->depth << 32 | ev->region;
#endif
}

SP_I_INLINE void sp_i_open_set(struct sp_i_event *ev, uint32_t r) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w = r;
  __builtin_memcpy(&ev->region, &w, sizeof w);
#else
  ev->region = r;
  ev->depth = 0;
#endif
}

/* Orders the stores of a push before the one that publishes it (the stack
 * pointer or depth), for a signal handler on the same thread (the line
 * sampler's sp_ext_current_region reads the innermost open call): no
 * instruction, only the compiler's order. */
#if defined(__GNUC__)
#  define SP_I_SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_RELEASE)
#else
#  define SP_I_SIGNAL_FENCE() ((void)0)
#endif

/* For a live plain handle r (sp_i_plain_region): one test each for this
 * manager's record, r's accumulator on this thread, room on the stack. */
SP_I_INLINE int sp_i_agg_begin(void *m, const struct sp_i_hot *h, uint32_t r, int tsc) {
  struct sp_i_thread *t = sp_i_tls.t[h->slot];
  if (SP_I_UNLIKELY(r > t->acc_lim || t->top == t->open_end)) return sp_i_begin_slow(m, r);
  struct sp_i_event *ev = t->top;
  ev->end = 0;
  sp_i_open_set(ev, r);
  SP_I_SIGNAL_FENCE(); /* a signal between the two sees the parent, not the entry's last call */
  t->top = ev + 1;
  ev->start = sp_i_ticks_k(h, tsc);
  return 0;
}

/* The accumulator update of a call of region r ending at `now`: the top of
 * t's open stack, already checked to be r (so its accumulator exists). The
 * parent (or the sentinel) takes the call's time as its children's. first
 * needs no test of its own in the common case: the first call of a region
 * is a new minimum, and a later call that started earlier than every
 * closed one (an enclosing call of a recursion) started before last_start.
 * `mono`: now is on the same clock as the thread's earlier ends, so it is
 * the latest end (not so for a call cut at finalize by another thread). */
SP_I_INLINE void sp_i_agg_close(struct sp_i_thread *t, uint32_t r, uint64_t now, int mono) {
  struct sp_i_event *ev = --t->top;
  uint64_t s = ev->start;
  int64_t d = (int64_t)(now - s);
  ev[-1].end += (uint64_t)d;
  struct sp_i_agg *a = &t->acc[r];
  a->count++;
  a->total += d;
  a->excl += d - (int64_t)ev->end;
  if (SP_I_UNLIKELY(d < a->min)) {
    a->min = d;
    if (s < a->start_min) {
      a->start_min = s;
      a->first = d;
    }
  }
  if (SP_I_UNLIKELY(d > a->max)) a->max = d;
  if (SP_I_LIKELY(s >= a->last_start)) {
    a->last_start = s;
    a->last = d;
  } else if (s < a->start_min) {
    a->start_min = s;
    a->first = d;
  }
  if (mono || now > a->end_max) a->end_max = now;
#if defined(__SIZEOF_INT128__)
  a->sq += (sp_i_u128)((sp_i_i128)d * d);
#else
  {
    uint64_t u = d < 0 ? 0u - (uint64_t)d : (uint64_t)d;
    uint64_t lo = u & 0xffffffffu, hi = u >> 32, cross = lo * hi;
    uint64_t sql = lo * lo, sqh = hi * hi + (cross >> 31);
    uint64_t low = sql + (cross << 33);
    sqh += low < sql;
    a->sq[0] += low;
    a->sq[1] += sqh + (a->sq[0] < low);
  }
#endif
}

/* An end the inlined path does not take: a disabled opt-in handle returns
 * at once, anything else goes out of line. */
SP_I_INLINE int sp_i_agg_end_miss(void *m, const struct sp_i_hot *h, uint32_t r) {
  if ((r & SP_I_REGION_SLOW_BIT) && sp_i_optin_off(h, r)) return 0;
  return sp_i_end_slow(m, r);
}

/* The one test of the handle is the match with the innermost open call,
 * whose region was checked at its begin. */
SP_I_INLINE int sp_i_agg_end(void *m, const struct sp_i_hot *h, uint32_t r, int tsc) {
  uint64_t now = sp_i_ticks_k(h, tsc);
  struct sp_i_thread *t = sp_i_tls.t[h->slot];
  if (SP_I_UNLIKELY(sp_i_open_key(t->top - 1) != r)) return sp_i_agg_end_miss(m, h, r);
  sp_i_agg_close(t, r, now, 1);
  return 0;
}

/* 1 for a live handle without the opt-in bit: one compare covers the
 * invalid handle 0, handles never interned and opt-in handles (whose high bit
 * puts them past any count). */
SP_I_INLINE int sp_i_plain_region(const struct sp_i_hot *h, uint32_t r) {
#if defined(__GNUC__)
  return r - 1u < __atomic_load_n(&h->nregions, __ATOMIC_RELAXED);
#else
  return r - 1u < h->nregions;
#endif
}

/* An event's region and depth as one store: GCC's vectorizer otherwise
 * pairs the two through SSE registers (4 instructions for 2 stores). */
SP_I_INLINE void sp_i_ev_set(struct sp_i_event *ev, uint32_t r, uint32_t d) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w = (uint64_t)d << 32 | r;
  __builtin_memcpy(&ev->region, &w, sizeof w);
#else
  ev->region = r;
  ev->depth = d;
#endif
}

/* The timeline begin proper: an event in the thread's log while the record's
 * room lasts (out of line when it is out: a new thread, a full buffer or
 * stack, an adopted parent to take, a record of another manager). */
SP_I_INLINE int sp_i_tl_begin(void *m, const struct sp_i_hot *h, uint32_t r, int tsc) {
  struct sp_i_thread *t = sp_i_tls.t[h->slot];
  if (SP_I_UNLIKELY(t->room == 0)) return sp_i_begin_slow(m, r);
  t->room--;
  uint64_t i = t->n++;
  struct sp_i_event *ev = &t->ev[i];
  uint32_t d = t->depth;
  t->stack[d] = i;
  sp_i_ev_set(ev, r, d);
  ev->end = 0;
  SP_I_SIGNAL_FENCE(); /* the entry before the depth that publishes it */
  t->depth = d + 1;
  ev->start = sp_i_ticks_k(h, tsc);
  return 0;
}

SP_I_INLINE int sp_i_tl_end(void *m, const struct sp_i_hot *h, uint32_t r, int tsc) {
  uint64_t now = sp_i_ticks_k(h, tsc);
  struct sp_i_thread *t = sp_i_tls.t[h->slot];
  /* end_floor is UINT32_MAX on a disarmed record */
  if (SP_I_UNLIKELY(t->depth <= t->end_floor)) return sp_i_end_slow(m, r);
  uint64_t i = t->stack[t->depth - 1];
  if (SP_I_UNLIKELY(i & SP_I_GHOST_BIT)) return sp_i_end_slow(m, r);
  struct sp_i_event *ev = &t->ev[i];
  if (SP_I_UNLIKELY(ev->region != r)) return sp_i_end_slow(m, r);
  ev->end = now;
  t->depth--;
  return 0;
}

/* Dispatch of a begin:
 *   state OFF                      -> return 0 (one compare)
 *   TIMELINE, plain handle         -> sp_i_tl_begin, reading the TSC
 *   AGGREGATE, plain handle        -> sp_i_agg_begin, reading the TSC
 *   opt-in handle, known disabled  -> return 0
 *   anything else                  -> sp_i_begin_other, out of line: the
 *     same dispatch for the CLOCK and EXT flags (still no slow path for a
 *     plain handle), disabled opt-in handles, else sp_i_begin_slow.
 * TIMELINE and AGGREGATE without flags mean the TSC clock and no extension:
 * the inlined code tests neither again. */
SP_I_INLINE int sp_i_begin(void *m, uint32_t r) {
  const struct sp_i_hot *h = (const struct sp_i_hot *)m;
  uint32_t state = sp_i_state(h);
  /* Off first: a deactivated run pays one compare and one branch. */
  if (state == SP_I_STATE_OFF) return 0;
  if (SP_I_LIKELY(sp_i_plain_region(h, r))) {
    if (SP_I_LIKELY(state == SP_I_STATE_TIMELINE)) return sp_i_tl_begin(m, h, r, 1);
    if (state == SP_I_STATE_AGGREGATE) return sp_i_agg_begin(m, h, r, 1);
  } else if ((r & SP_I_REGION_SLOW_BIT) && sp_i_optin_off(h, r)) return 0;
  return sp_i_begin_other(m, r);
}

/* An end's handle is checked against the call it closes, so only the
 * opt-in bit and 0 (never a call) are tested here. */
SP_I_INLINE int sp_i_end(void *m, uint32_t r) {
  const struct sp_i_hot *h = (const struct sp_i_hot *)m;
  uint32_t state = sp_i_state(h);
  if (state == SP_I_STATE_OFF) return 0;
  if (SP_I_LIKELY(state == SP_I_STATE_TIMELINE) && SP_I_LIKELY(!(r & SP_I_REGION_SLOW_BIT)))
    return sp_i_tl_end(m, h, r, 1);
  if (state == SP_I_STATE_AGGREGATE) return sp_i_agg_end(m, h, r, 1);
  if ((r & SP_I_REGION_SLOW_BIT) && sp_i_optin_off(h, r)) return 0;
  return sp_i_end_other(m, r);
}

#ifdef __cplusplus
}
#endif
#endif
