/* pair_count.c - a minimal loop of N begin/end pairs in one mode, for
 * counting instructions under callgrind (bench/callgrind.sh): the difference
 * between two N is the exact instruction cost of N pairs, free of noise.
 *
 *   pair_count MODE N     MODE: empty, timeline, aggregation, deactivated, tag
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"

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
  int empty = !strcmp(mode, "empty");
  for (long i = 0; i < n; i++) {
    if (!empty) sp_region_begin(m, r);
    __asm__ volatile("" ::: "memory");
    if (!empty) sp_region_end(m, r);
  }
  sp_manager_destroy(m);
  return 0;
}
