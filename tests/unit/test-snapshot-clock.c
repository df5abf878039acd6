/* test-snapshot-clock.c - finalize's passes convert ticks to ns with a
 * cursor on the clock map's piece (core.h's struct sp_tcur: a range test
 * and one signed multiply) instead of sp__ticks_to_ns_hint's tests per
 * tick. The file's values must not move: over maps of no piece, one piece
 * and many, ticks in order, at and around every piece's edges, before the
 * first and after the last, in random order and far apart, pieces out of
 * order and multipliers past 2^63, every tick must give the hint's ns with
 * one hint carried over the same sequence. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/snapshot.h"
#include "harness.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The cursor's values against the hint's, tick by tick. */
static void same_as_hint(const struct sp_clock_map *c, const uint64_t *t, size_t n) {
  int64_t *got = malloc(n * sizeof *got);
  ASSERT(got != NULL);
  sp__snapshot_ticks_ns(c, t, n, got);
  size_t hint = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t want = sp__ticks_to_ns_hint(c, &hint, t[i]), have = got[i];
    if (have != want) {
      free(got);
      ASSERT_EQ(have, want);
    }
  }
  free(got);
}

/* Ticks of every kind a log has, and some it should not: in order through
 * the pieces with their edges, backwards, random, the extremes. */
static void ticks_for(const struct sp_clock_map *c, uint64_t *t, size_t *n, size_t cap) {
  size_t k = 0;
  uint64_t lo = c->nseg ? c->seg[0].tick : c->tick0;
  for (size_t i = 0; i < 2000 && k < cap; i++) t[k++] = lo - 1000 + i * 37;
  for (size_t s = 0; s < c->nseg; s++)
    for (int d = -3; d <= 3 && k < cap; d++) t[k++] = c->seg[s].tick + (uint64_t)(int64_t)d;
  for (size_t s = c->nseg; s-- > 0;)
    for (int d = 3; d >= -3 && k < cap; d--) t[k++] = c->seg[s].tick + (uint64_t)(int64_t)d;
  uint64_t span = c->nseg ? c->seg[c->nseg - 1].tick - lo + 5000 : 100000;
  for (size_t i = 0; i < 3000 && k < cap; i++) t[k++] = lo - 2000 + next_rand() % span;
  const uint64_t far[] = {0, 1, UINT64_MAX, UINT64_MAX - 1, (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1,
                          lo + ((uint64_t)1 << 62), lo - ((uint64_t)1 << 62)};
  for (size_t i = 0; i < sizeof far / sizeof *far && k < cap; i++) t[k++] = far[i];
  for (size_t i = 0; i < 500 && k < cap; i++) t[k++] = next_rand();
  *n = k;
}

static void check_map(const struct sp_clock_map *c) {
  enum { CAP = 8000 };
  uint64_t *t = malloc(CAP * sizeof *t);
  size_t n = 0;
  ASSERT(t != NULL);
  ticks_for(c, t, &n, CAP);
  same_as_hint(c, t, n);
  free(t);
}

SP_TEST(no_piece_same_as_hint) {
  struct sp_clock_map c = {.tick0 = 1000000, .ns0 = 5000, .mult = (uint64_t)(0.37 * 4294967296.0)};
  check_map(&c);
  c.mult = ((uint64_t)1 << 63) + 12345; /* not a signed multiplier */
  check_map(&c);
  c.mult = UINT64_MAX;
  check_map(&c);
}

static void pieces_case(size_t nseg, int out_of_order, int big_mult) {
  struct sp_clock_seg seg[16];
  uint64_t tick = 1u << 20;
  int64_t ns = 777;
  for (size_t i = 0; i < nseg; i++) {
    seg[i].tick = tick;
    seg[i].ns = ns;
    seg[i].mult = (uint64_t)((0.3 + 0.01 * (double)i) * 4294967296.0);
    uint64_t len = 1000 + next_rand() % 100000;
    tick += len;
    ns += (int64_t)len / 3;
  }
  if (out_of_order && nseg > 3) { /* a map that stepped back */
    uint64_t x = seg[2].tick;
    seg[2].tick = seg[1].tick - 10;
    seg[1].tick = x;
  }
  if (big_mult && nseg > 1) seg[nseg / 2].mult = ((uint64_t)1 << 63) | 99;
  struct sp_clock_map c = {.tick0 = seg[0].tick, .ns0 = seg[0].ns, .mult = seg[0].mult, .seg = seg, .nseg = nseg};
  check_map(&c);
}

SP_TEST(one_piece_same_as_hint) { pieces_case(1, 0, 0); }

SP_TEST(many_pieces_same_as_hint) {
  for (size_t n = 2; n <= 16; n++) pieces_case(n, 0, 0);
}

SP_TEST(pieces_out_of_order_same_as_hint) {
  for (size_t n = 4; n <= 16; n += 3) pieces_case(n, 1, 0);
}

SP_TEST(multiplier_past_2_63_same_as_hint) {
  for (size_t n = 2; n <= 16; n += 7) pieces_case(n, 0, 1);
  pieces_case(1, 0, 1);
}

/* A piece half the tick space long (the range test's edge). */
SP_TEST(pieces_far_apart_same_as_hint) {
  struct sp_clock_seg seg[3] = {{100, 0, 1ull << 31}, {100 + (1ull << 63) - 1, 5, 1ull << 30}, {(1ull << 63) + 200, 9, 1ull << 29}};
  struct sp_clock_map c = {.tick0 = 100, .mult = 1ull << 31, .seg = seg, .nseg = 3};
  check_map(&c);
  seg[1].tick = 100 + (1ull << 63);
  check_map(&c);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
