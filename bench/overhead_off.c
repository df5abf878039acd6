/* overhead_off.c - the compiled-out case of bench/overhead: the same loop as
 * the timeline case, built with SP_DISABLE so every macro vanishes. */
#define SP_DISABLE 1
#include "scope_profiler.h"

void bench_loop_compiled_out(long n);
void bench_loop_compiled_out(long n) {
  for (long i = 0; i < n; i++) {
    SP_REGION("bench");
    __asm__ volatile("" ::: "memory");
  }
}
