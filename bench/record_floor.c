/* record_floor.c - N begin/end pairs through bench/record_floor.h's compact
 * record log, for callgrind (bench/callgrind.sh with SP_PAIR_COUNT=record_floor
 * and SP_MODES below): what a pair costs in that design with each per-call
 * guarantee kept or moved to the decode step, against the hand-written floor.
 *
 *   record_floor MODE N   MODE: empty; full (off test, handle check, armed
 *                         cursor for this manager and state, end matched at
 *                         the call); full_decode (the same, the log decoded
 *                         into 24-byte events whenever its 64 KiB fill: the
 *                         drain's cost, amortized per pair); deactivated;
 *                         nonest (the end's region checked at decode);
 *                         nochecks (the handle too); reference (a
 *                         hand-written loop storing the clock twice)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_floor.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: record_floor MODE N\n");
    return 2;
  }
  const char *mode = argv[1];
  long n = atol(argv[2]);
  static struct rf_manager m;
  int decode = !strcmp(mode, "full_decode");
  if (rf_setup(&m, decode ? 8192 : (uint64_t)n * 4 + 16, decode) != 0) return 1;
  uint32_t r = 1;
  __asm__ volatile("" : "+r"(r)); /* a handle the compiler does not know */
  if (!strcmp(mode, "deactivated")) m.key = 0;
  if (!strcmp(mode, "full") || !strcmp(mode, "full_decode") || !strcmp(mode, "deactivated")) {
    for (long i = 0; i < n; i++) {
      rf_begin_full(&m, r);
      __asm__ volatile("" ::: "memory");
      rf_end_full(&m, r);
    }
  } else if (!strcmp(mode, "nonest")) {
    for (long i = 0; i < n; i++) {
      rf_begin_nonest(&m, r);
      __asm__ volatile("" ::: "memory");
      rf_end_nonest(&m, r);
    }
  } else if (!strcmp(mode, "nochecks")) {
    for (long i = 0; i < n; i++) {
      rf_begin_none(&m, r);
      __asm__ volatile("" ::: "memory");
      rf_end_nonest(&m, r);
    }
  } else if (!strcmp(mode, "reference")) {
    uint64_t *buf = malloc(((size_t)n * 2 + 2) * sizeof *buf), *cur = buf;
    if (!buf) return 1;
    for (long i = 0; i < n; i++) {
      rf_reference(&cur);
      __asm__ volatile("" ::: "memory");
      rf_reference(&cur);
    }
    free(buf);
  } else if (!strcmp(mode, "empty")) {
    for (long i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
  } else {
    fprintf(stderr, "record_floor: no mode '%s'\n", mode);
    return 2;
  }
  /* the log holds what the mode wrote: 3 words a pair, 4 with the end's region */
  uint64_t want = !strcmp(mode, "full") ? 3 : !strcmp(mode, "nonest") || !strcmp(mode, "nochecks") ? 4 : 0;
  if (want && m.key && rf_used() != want * (uint64_t)n) {
    fprintf(stderr, "record_floor: %llu words for %ld pairs\n", (unsigned long long)rf_used(), n);
    return 3;
  }
  if (decode && n > 4096 && rf_decoded() == 0) return 3;
  return 0;
}
