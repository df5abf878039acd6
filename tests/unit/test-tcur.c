/* test-tcur.c - the tick cursor on a run's clock map (struct sp_tcur in
 * core.h, clock.c), which finalize's passes and the stream writer's merge
 * (stream.c cursor_head) convert ticks with. Each case names the piece a
 * tick must take, by the rule the file's values were always written by
 * (sp__ticks_to_ns_hint's, with one hint carried along), and checks the
 * cursor's ns against that piece's line and against the hint: ticks in
 * order, ticks going backwards, a map whose later piece starts before an
 * earlier one (the cursor's range must then be empty), a multiplier that
 * is not a signed one. Randomised sequences over the same maps follow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "harness.h"

#define HALF ((uint64_t)1 << 63)

/* One tick through the cursor: the ns of piece `k`'s line (k < 0: the
 * map's own line), and the hint's value, which carries its own state. */
static void step(const struct sp_clock_map *c, struct sp_tcur *q, size_t *hint, uint64_t t, int k) {
  int64_t want = k < 0 ? sp__clock_line(c->tick0, c->ns0, c->mult, t)
                       : sp__clock_line(c->seg[k].tick, c->seg[k].ns, c->seg[k].mult, t);
  int64_t have = sp__tcur_ns(c, q, t), by_hint = sp__ticks_to_ns_hint(c, hint, t);
  ASSERT_EQ(by_hint, want); /* the case's piece is the hint's */
  ASSERT_EQ(have, want);
}

/* Lines far enough apart that a wrong piece cannot give the right ns. */
static void pieces(struct sp_clock_seg *seg, const uint64_t *tick, size_t n) {
  for (size_t i = 0; i < n; i++)
    seg[i] = (struct sp_clock_seg){tick[i], 1000000 * (int64_t)(i + 1), ((uint64_t)(i + 2) << 31) + i};
}

SP_TEST(in_order_through_every_piece) {
  const uint64_t tk[4] = {1000, 2000, 3000, 4000};
  struct sp_clock_seg seg[4];
  pieces(seg, tk, 4);
  struct sp_clock_map c = {.tick0 = 1000, .ns0 = 1, .mult = 1ull << 32, .seg = seg, .nseg = 4};
  struct sp_tcur q;
  size_t hint = 0;
  sp__tcur_init(&c, &q);
  step(&c, &q, &hint, 10, 0); /* before the first piece: the first */
  step(&c, &q, &hint, 1000, 0);
  step(&c, &q, &hint, 1999, 0);
  step(&c, &q, &hint, 2000, 1);
  step(&c, &q, &hint, 2999, 1);
  step(&c, &q, &hint, 3000, 2);
  step(&c, &q, &hint, 4000, 3);
  step(&c, &q, &hint, 4000 + (1ull << 40), 3); /* after the last: the last */
}

/* A log's ticks step back (a call that began before the previous one
 * ended, or a clock that stepped back): the cursor, left on a later
 * piece, must go back to the earlier one rather than extend its line. */
SP_TEST(ticks_going_backwards) {
  const uint64_t tk[4] = {1000, 2000, 3000, 4000};
  struct sp_clock_seg seg[4];
  pieces(seg, tk, 4);
  struct sp_clock_map c = {.tick0 = 1000, .ns0 = 1, .mult = 1ull << 32, .seg = seg, .nseg = 4};
  struct sp_tcur q;
  size_t hint = 0;
  sp__tcur_init(&c, &q);
  step(&c, &q, &hint, 3500, 2);
  step(&c, &q, &hint, 1500, 0);
  step(&c, &q, &hint, 3999, 2);
  step(&c, &q, &hint, 2500, 1);
  step(&c, &q, &hint, 2000, 1);
  step(&c, &q, &hint, 1999, 0);
  step(&c, &q, &hint, 4500, 3);
  step(&c, &q, &hint, 3999, 2);
  step(&c, &q, &hint, 5, 0);
}

/* A later piece that starts before an earlier one (anchors out of order,
 * as a corrupt spill file's can be): piece 2 starts 10 ticks before piece
 * 1. A tick 2^63 - 1 past piece 1 is taken for piece 1 (the search's
 * signed comparisons), but the ticks right after piece 1's start belong
 * to piece 2, so that piece 1's range must hold no tick at all. */
SP_TEST(later_piece_before_an_earlier_one) {
  const uint64_t t1 = 1u << 20;
  const uint64_t tk[4] = {1000, t1, t1 - 10, t1 + 1000};
  struct sp_clock_seg seg[4];
  pieces(seg, tk, 4);
  struct sp_clock_map c = {.tick0 = 1000, .ns0 = 1, .mult = 1ull << 32, .seg = seg, .nseg = 4};
  struct sp_tcur q;
  size_t hint = 0;
  sp__tcur_init(&c, &q);
  step(&c, &q, &hint, t1 + HALF - 1, 1);
  step(&c, &q, &hint, t1 + 5, 2);
  step(&c, &q, &hint, t1 + HALF - 2, 1);
  step(&c, &q, &hint, t1, 2);
  step(&c, &q, &hint, t1 + HALF - 3, 1);
  step(&c, &q, &hint, t1 + 999, 2);
  step(&c, &q, &hint, t1 + 1000, 3);
}

/* A multiplier of 2^63 or more is not a signed one: the cursor must take
 * sp__clock_line's unsigned product for every tick of that piece. */
SP_TEST(multiplier_past_2_63) {
  const uint64_t tk[3] = {1000, 2000, 3000};
  struct sp_clock_seg seg[3];
  pieces(seg, tk, 3);
  seg[1].mult = HALF | 99;
  struct sp_clock_map c = {.tick0 = 1000, .ns0 = 1, .mult = 1ull << 32, .seg = seg, .nseg = 3};
  struct sp_tcur q;
  size_t hint = 0;
  sp__tcur_init(&c, &q);
  step(&c, &q, &hint, 1500, 0);
  step(&c, &q, &hint, 2001, 1);
  step(&c, &q, &hint, 2500, 1);
  step(&c, &q, &hint, 2999, 1);
  step(&c, &q, &hint, 3001, 2);
  struct sp_clock_map line = {.tick0 = 1000, .ns0 = 7, .mult = HALF + 12345};
  sp__tcur_init(&line, &q);
  hint = 0;
  step(&line, &q, &hint, 1001, -1);
  step(&line, &q, &hint, 900000, -1);
}

SP_TEST(no_piece_and_one_piece) {
  struct sp_clock_map line = {.tick0 = 1000000, .ns0 = 5000, .mult = (uint64_t)(0.37 * 4294967296.0)};
  struct sp_tcur q;
  size_t hint = 0;
  sp__tcur_init(&line, &q);
  step(&line, &q, &hint, 1000000, -1);
  step(&line, &q, &hint, 5, -1);
  step(&line, &q, &hint, UINT64_MAX, -1);
  const uint64_t tk[1] = {1000};
  struct sp_clock_seg seg[1];
  pieces(seg, tk, 1);
  struct sp_clock_map one = {.tick0 = 1000, .ns0 = 1, .mult = 1ull << 32, .seg = seg, .nseg = 1};
  sp__tcur_init(&one, &q);
  hint = 0;
  step(&one, &q, &hint, 5, 0);
  step(&one, &q, &hint, 1u << 30, 0);
  step(&one, &q, &hint, HALF + 1000, 0);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Random walks over maps with pieces in order, out of order and with
 * pieces half the tick space apart: every tick as the hint gives it. */
SP_TEST(random_walks_same_as_hint) {
  for (int round = 0; round < 200; round++) {
    struct sp_clock_seg seg[12];
    size_t n = 1 + (size_t)(next_rand() % 12);
    uint64_t tick = next_rand() % 4 == 0 ? HALF - 5000 : 1u << 20;
    for (size_t i = 0; i < n; i++) {
      seg[i] = (struct sp_clock_seg){tick, (int64_t)(next_rand() % 1000000000),
                                     next_rand() % 16 == 0 ? HALF | (next_rand() >> 40) : next_rand() >> 30};
      tick += next_rand() % 8 == 0 ? HALF - (next_rand() % 3) : 1 + next_rand() % 100000;
    }
    if (n > 2 && round % 3 == 0) { /* a later piece before an earlier one */
      size_t a = 1 + (size_t)(next_rand() % (n - 2));
      uint64_t x = seg[a].tick;
      seg[a].tick = seg[a + 1].tick;
      seg[a + 1].tick = x;
    }
    struct sp_clock_map c = {.tick0 = seg[0].tick, .ns0 = seg[0].ns, .mult = seg[0].mult, .seg = seg, .nseg = n};
    struct sp_tcur q;
    size_t hint = 0;
    sp__tcur_init(&c, &q);
    uint64_t t = seg[0].tick;
    for (int i = 0; i < 4000; i++) {
      switch (next_rand() % 6) {
      case 0: t = seg[next_rand() % n].tick + (next_rand() % 7) - 3; break;
      case 1: t -= next_rand() % 5000; break;
      case 2: t = next_rand(); break;
      case 3: t = seg[next_rand() % n].tick + HALF + (next_rand() % 7) - 3; break;
      default: t += next_rand() % 3000; break;
      }
      int64_t want = sp__ticks_to_ns_hint(&c, &hint, t), have = sp__tcur_ns(&c, &q, t);
      if (have != want) {
        fprintf(stderr, "round %d tick %d: %llu\n", round, i, (unsigned long long)t);
        ASSERT_EQ(have, want);
      }
    }
  }
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
