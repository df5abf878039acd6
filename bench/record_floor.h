/* record_floor.h - the fast path of a compact record log, as a measured
 * design (issue 21 target 1), not the library's: how many instructions a
 * begin/end pair needs when it writes 16-byte begin and 8-byte end records
 * through one armed per-thread cursor, with each of the library's per-call
 * guarantees kept or deferred to a decode step. bench/record_floor.c counts it
 * under callgrind beside the library's own pair (bench/callgrind.sh with
 * SP_PAIR_COUNT=record_floor).
 *
 * The per-thread state lives in a shared library (record_floor_lib.c) and is
 * reached the way a program reaches the library's TLS block (initial-exec,
 * through the GOT), so that the counts compare with bench/pair_count's.
 *
 * Records: a begin is {tick, region} (the tick's top bit clear), an end is
 * {tick | END} (END: the top bit), or {tick | END, region} where the end's
 * region is checked at decode instead of at the call. Ticks are TSC cycles
 * (2^63 of them are ~100 years at 3 GHz).
 */
#ifndef SP_BENCH_RECORD_FLOOR_H
#define SP_BENCH_RECORD_FLOOR_H

#include <stdint.h>

#define RF_INLINE static inline __attribute__((always_inline))
#define RF_END (UINT64_C(1) << 63)

/* The manager's hot line: what every call reads first. `key` is 0 while the
 * manager is off, else its generation and state epoch in one word: a
 * thread's cursor is armed for one key, so the off test's load also gives
 * what one compare checks for "this manager, in the state the cursor was
 * armed in" (a pause or a new setup, from any thread, changes the key). */
struct rf_manager {
  uint64_t key;
  uint32_t nregions;
};

/* The calling thread's armed cursor. lim is where the slow path must run
 * again: the end of the log, lowered so that the region stack cannot pass
 * its end either (each record pushes at most one region). Disarmed: key 0. */
struct rf_arm {
  uint64_t *cur, *lim;
  uint64_t key;
  uint32_t *rs; /* top of the region-id stack: rs[-1] is the innermost open call */
};

extern __thread struct rf_arm rf_arm __attribute__((tls_model("initial-exec")));

/* `how`: which of the fast paths below called (0 full, 1 nonest, 2 none),
 * so that the call is retried through it once the cursor is armed again. */
int rf_begin_slow(struct rf_manager *m, uint32_t r, int how);
int rf_end_slow(struct rf_manager *m, uint32_t r, int how);

RF_INLINE uint64_t rf_tsc(void) { return __builtin_ia32_rdtsc(); }

/* Every guarantee at the call: the off test first (a deactivated run pays
 * one compare), the handle checked, the end matched against the innermost
 * open call (so a mismatched end is refused there and then). */
RF_INLINE int rf_begin_full(struct rf_manager *m, uint32_t r) {
  uint64_t k = m->key;
  if (k == 0) return 0;
  if (__builtin_expect(r - 1u >= m->nregions, 0)) return rf_begin_slow(m, r, 0);
  struct rf_arm *a = &rf_arm;
  uint64_t *c = a->cur;
  if (__builtin_expect(c >= a->lim || a->key != k, 0)) return rf_begin_slow(m, r, 0);
  c[0] = rf_tsc();
  c[1] = r;
  a->cur = c + 2;
  *a->rs++ = r;
  return 0;
}

RF_INLINE int rf_end_full(struct rf_manager *m, uint32_t r) {
  uint64_t k = m->key;
  if (k == 0) return 0;
  uint64_t now = rf_tsc();
  struct rf_arm *a = &rf_arm;
  uint64_t *c = a->cur;
  /* rs[-1] of an empty stack is a sentinel no region equals */
  if (__builtin_expect(c >= a->lim || a->key != k || a->rs[-1] != r, 0)) return rf_end_slow(m, r, 0);
  c[0] = now | RF_END;
  a->cur = c + 1;
  a->rs--;
  return 0;
}

/* The end's region recorded and checked at decode: no region stack. */
RF_INLINE int rf_begin_nonest(struct rf_manager *m, uint32_t r) {
  uint64_t k = m->key;
  if (k == 0) return 0;
  if (__builtin_expect(r - 1u >= m->nregions, 0)) return rf_begin_slow(m, r, 1);
  struct rf_arm *a = &rf_arm;
  uint64_t *c = a->cur;
  if (__builtin_expect(c >= a->lim || a->key != k, 0)) return rf_begin_slow(m, r, 1);
  c[0] = rf_tsc();
  c[1] = r;
  a->cur = c + 2;
  return 0;
}

RF_INLINE int rf_end_nonest(struct rf_manager *m, uint32_t r) {
  uint64_t k = m->key;
  if (k == 0) return 0;
  uint64_t now = rf_tsc();
  struct rf_arm *a = &rf_arm;
  uint64_t *c = a->cur;
  if (__builtin_expect(c >= a->lim || a->key != k, 0)) return rf_end_slow(m, r, 1);
  c[0] = now | RF_END;
  c[1] = r;
  a->cur = c + 2;
  return 0;
}

/* The handle too checked only at decode. */
RF_INLINE int rf_begin_none(struct rf_manager *m, uint32_t r) {
  uint64_t k = m->key;
  if (k == 0) return 0;
  struct rf_arm *a = &rf_arm;
  uint64_t *c = a->cur;
  if (__builtin_expect(c >= a->lim || a->key != k, 0)) return rf_begin_slow(m, r, 2);
  c[0] = rf_tsc();
  c[1] = r;
  a->cur = c + 2;
  return 0;
}

/* The floor the issue quotes: a hand-written loop that stores the clock. */
RF_INLINE void rf_reference(uint64_t **cur) {
  uint64_t *c = *cur;
  c[0] = rf_tsc();
  *cur = c + 1;
}

/* Decode: the records of [from, to) turned into 24-byte events {start, end,
 * region, depth} with an index stack, as the library's drain reads them;
 * returns the events written. */
struct rf_event {
  uint64_t start, end;
  uint32_t region, depth;
};
uint64_t rf_decode(const uint64_t *from, const uint64_t *to, struct rf_event *ev, uint64_t n, uint64_t *stack,
                   uint32_t *depth);

/* Set up: a log of `words` words for the calling thread, armed for m. */
int rf_setup(struct rf_manager *m, uint64_t words, int decode);
uint64_t rf_decoded(void);
uint64_t rf_used(void); /* words in the log */

#endif
