/* bigmem.c - large arrays in transparent huge pages where the kernel gives
 * them. Filling a 100 MB table a 4 KiB page at a time costs a page fault
 * per page (about a tenth of the report's CPU time on a 10M-event file);
 * with MADV_HUGEPAGE (THP set to "madvise", Debian's default) one fault
 * maps 2 MiB. Small arrays come from calloc; the size picks the path, so
 * sp__big_free takes it too. A kernel without THP ignores the advice.
 */
#include "common/bigmem.h"

#include <stdlib.h>
#include <sys/mman.h>

#define BIG ((size_t)4 << 20) /* below this, calloc */

void *sp__big_calloc(size_t bytes) {
  if (bytes < BIG) return calloc(bytes ? bytes : 1, 1);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: no THP, no harm */
#endif
  return p;
}

void sp__big_free(void *p, size_t bytes) {
  if (!p) return;
  if (bytes < BIG) free(p);
  else munmap(p, bytes);
}
