/* pair_count.c - a minimal loop of N begin/end pairs in one mode, for
 * counting instructions under callgrind (bench/callgrind.sh): the difference
 * between two N is the exact instruction cost of N pairs, free of noise.
 *
 *   pair_count MODE N     MODE: empty, timeline, aggregation, deactivated, tag,
 *                         c_macro (SP_REGION_M), tag_site (a disabled opt-in
 *                         region at a call site), name (a literal interned per
 *                         call), name_buf (a name in a buffer interned per call),
 *                         c_fn (sp_region_begin_fn/
 *                         sp_region_end_fn, out of line), and where built the front
 *                         ends' loops of bench/overhead: cxx_macro, cxx_scope,
 *                         cxx_name, fortran_handle, fortran_name
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"

#if defined(SP_BENCH_CXX)
void bench_cxx_macro(sp_manager *m, long n);
void bench_cxx_scope(sp_manager *m, long n);
void bench_cxx_runtime_name(sp_manager *m, long n);
#endif
#if defined(SP_BENCH_FORTRAN)
void bench_fortran_handle(sp_manager *m, long n);
void bench_fortran_name(sp_manager *m, long n);
#endif

/* The loops of other front ends; 0 when MODE is none of them. */
static int front_end(const char *mode, sp_manager *m, long n) {
  if (!strcmp(mode, "c_macro")) {
    for (long i = 0; i < n; i++) {
      SP_REGION_M(m, "pair.macro");
      __asm__ volatile("" ::: "memory");
    }
    return 1;
  }
  if (!strcmp(mode, "tag_site")) { /* a disabled opt-in region at a call site */
    sp_register_opt_in_tag("off");
    for (long i = 0; i < n; i++) {
      SP_REGION_TAGS_M(m, "pair.site_tagged", "off");
      __asm__ volatile("" ::: "memory");
    }
    return 1;
  }
  if (!strcmp(mode, "name")) { /* a name interned on every call */
    for (long i = 0; i < n; i++) {
      sp_region r = sp_region_intern("pair.by_name");
      sp_region_begin(m, r);
      __asm__ volatile("" ::: "memory");
      sp_region_end(m, r);
    }
    return 1;
  }
  if (!strcmp(mode, "name_buf")) { /* a name in a buffer, not a literal: measured on every call */
    char buf[32];
    strcpy(buf, "pair.by_name");
    __asm__ volatile("" : : "r"(buf) : "memory"); /* the compiler may not know its contents */
    for (long i = 0; i < n; i++) {
      sp_region r = sp_region_intern(buf);
      sp_region_begin(m, r);
      __asm__ volatile("" ::: "memory");
      sp_region_end(m, r);
    }
    return 1;
  }
  if (!strcmp(mode, "c_fn")) { /* the exported out-of-line pair the bindings call */
    sp_region r = sp_region_intern("pair.fn");
    for (long i = 0; i < n; i++) {
      sp_region_begin_fn(m, r);
      __asm__ volatile("" ::: "memory");
      sp_region_end_fn(m, r);
    }
    return 1;
  }
#if defined(SP_BENCH_CXX)
  if (!strcmp(mode, "cxx_macro")) return bench_cxx_macro(m, n), 1;
  if (!strcmp(mode, "cxx_scope")) return bench_cxx_scope(m, n), 1;
  if (!strcmp(mode, "cxx_name")) return bench_cxx_runtime_name(m, n), 1;
#endif
#if defined(SP_BENCH_FORTRAN)
  if (!strcmp(mode, "fortran_handle")) return bench_fortran_handle(m, n), 1;
  if (!strcmp(mode, "fortran_name")) return bench_fortran_name(m, n), 1;
#endif
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pair_count MODE N\n");
    return 2;
  }
  const char *mode = argv[1];
  long n = atol(argv[2]);
  const char *ov_tl[] = {"deactivate_file_output=1", "buffer_limit=4000000", NULL};
  const char *ov_ag[] = {"deactivate_file_output=1", "aggregation_mode=1", NULL};
  const char *ov_off[] = {"deactivate_profiling=1", NULL};
  const char *const *ov = !strcmp(mode, "aggregation") ? ov_ag : !strcmp(mode, "deactivated") ? ov_off : ov_tl;
  sp_manager *m = sp_manager_create();
  if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) return 1;
  sp_region r = sp_region_intern("pair");
  if (!strcmp(mode, "tag")) {
    sp_register_opt_in_tag("off");
    r = sp_region_intern_ex("pair.tagged", NULL, -1, NULL, "off");
    sp_region_begin(m, r); /* the first call decides, later ones hit the bitmap */
    sp_region_end(m, r);
  }
  if (front_end(mode, m, n)) {
    sp_manager_destroy(m);
    return 0;
  }
  if (strcmp(mode, "empty") && strcmp(mode, "timeline") && strcmp(mode, "aggregation") &&
      strcmp(mode, "deactivated") && strcmp(mode, "tag")) {
    fprintf(stderr, "pair_count: no mode '%s' in this build\n", mode);
    return 2;
  }
  int empty = !strcmp(mode, "empty");
  for (long i = 0; i < n; i++) {
    if (!empty) sp_region_begin(m, r);
    __asm__ volatile("" ::: "memory");
    if (!empty) sp_region_end(m, r);
  }
  sp_manager_destroy(m);
  return 0;
}
