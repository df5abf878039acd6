/* record_floor_lib.c - the out-of-line half of bench/record_floor.h's record
 * log: the thread's cursor and region stack, arming, and the decode step
 * that turns records into the library's 24-byte events. A shared library of
 * its own so that its thread-local cursor is reached as the profiler's is. */
#include <stdlib.h>

#include "record_floor.h"

__thread struct rf_arm rf_arm __attribute__((tls_model("initial-exec")));

static uint64_t *log_base, *log_end;
static uint32_t rstack[1 + 4096];
static struct rf_event *events;
static uint64_t nevents, cap_events, dstack[4096];
static uint32_t ddepth;
static int decode_on;

/* Arm the cursor at `from`: its limit is the log's end, or earlier where the
 * region stack would fill first (each record pushes at most one region), so
 * one compare on the fast path covers both. */
static void arm(struct rf_manager *m, uint64_t *from) {
  rf_arm.cur = from;
  rf_arm.lim = log_end - 1; /* a record is 2 words at most */
  rf_arm.key = m->key;
  if (!rf_arm.rs) rf_arm.rs = rstack + 1; /* rstack[0]: the sentinel, 0 is no region */
  uint64_t room = (uint64_t)(rstack + sizeof rstack / sizeof rstack[0] - rf_arm.rs);
  if (from >= rf_arm.lim) rf_arm.lim = from; /* no room: the caller decodes */
  else if ((uint64_t)(rf_arm.lim - from) / 2 > room) rf_arm.lim = from + 2 * room;
}

uint64_t rf_decode(const uint64_t *p, const uint64_t *to, struct rf_event *ev, uint64_t n, uint64_t *stack,
                   uint32_t *depth) {
  uint32_t d = *depth;
  while (p < to) {
    uint64_t w = *p++;
    if (w & RF_END) {
      ev[stack[--d]].end = w & ~RF_END;
    } else {
      struct rf_event *e = &ev[n];
      e->start = w;
      e->end = 0;
      e->region = (uint32_t)*p++;
      e->depth = d;
      stack[d++] = n++;
    }
  }
  *depth = d;
  return n;
}

/* A full log: decode it (the drain's step, here on every fill) and re-arm. */
static int refill(struct rf_manager *m) {
  arm(m, rf_arm.cur); /* the stack's bound, not the log's end: arm again from here */
  if (rf_arm.cur < rf_arm.lim) return 0;
  if (!decode_on) return -1;
  if (nevents + (uint64_t)(rf_arm.cur - log_base) > cap_events) nevents = 0; /* a bench: reuse the events */
  nevents = rf_decode(log_base, rf_arm.cur, events, nevents, dstack, &ddepth);
  arm(m, log_base);
  return 0;
}

__attribute__((noinline)) int rf_begin_slow(struct rf_manager *m, uint32_t r, int how) {
  if (how != 2 && r - 1u >= m->nregions) return -2;
  if (rf_arm.key != m->key) arm(m, log_base);
  else if (refill(m) != 0) return -1;
  return how == 0 ? rf_begin_full(m, r) : how == 1 ? rf_begin_nonest(m, r) : rf_begin_none(m, r);
}

__attribute__((noinline)) int rf_end_slow(struct rf_manager *m, uint32_t r, int how) {
  if (rf_arm.key != m->key || rf_arm.cur < rf_arm.lim) return -3; /* not armed, or (full) unmatched */
  if (refill(m) != 0) return -1;
  return how == 0 ? rf_end_full(m, r) : rf_end_nonest(m, r);
}

int rf_setup(struct rf_manager *m, uint64_t words, int decode) {
  log_base = malloc(words * sizeof *log_base);
  if (!log_base) return -1;
  log_end = log_base + words;
  decode_on = decode;
  cap_events = words;
  events = decode ? malloc(cap_events * sizeof *events) : NULL;
  if (decode && !events) return -1;
  m->nregions = 1;
  m->key = 0x100000001u;
  arm(m, log_base);
  return 0;
}

uint64_t rf_decoded(void) { return nevents; }
uint64_t rf_used(void) { return (uint64_t)(rf_arm.cur - log_base); }
