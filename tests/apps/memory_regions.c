/* memory_regions.c - an instrumented program for the use_memray CLI tests:
 * "outer" keeps 7000 bytes while its three "inner" calls each allocate and
 * free one block (1000, 30000, 500 bytes). Run it with the interposer
 * preloaded and SCOPE_PROFILER_USE_MEMRAY=1; the memory columns are then
 * exact (the usable sizes of glibc's blocks). */
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"

int main(void) {
  static const size_t inner_size[3] = {1000, 30000, 500};
  if (sp_setup(NULL) != SP_OK) return 1;
  sp_region warm = sp_region_intern("warm"), outer = sp_region_intern("outer"),
            inner = sp_region_intern("inner");
  sp_region_begin(SP_DEFAULT, warm); /* the thread's buffers are set up here */
  sp_region_end(SP_DEFAULT, warm);
  sp_region_begin(SP_DEFAULT, outer);
  char *x = malloc(7000);
  for (int k = 0; k < 3; k++) {
    sp_region_begin(SP_DEFAULT, inner);
    char *p = malloc(inner_size[k]);
    memset(p, 1, 8);
    free(p);
    sp_region_end(SP_DEFAULT, inner);
  }
  free(x);
  sp_region_end(SP_DEFAULT, outer);
  return sp_finalize(NULL, NULL) == SP_OK ? 0 : 1;
}
