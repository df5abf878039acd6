/* bigmem.h - large arrays that a reader fills once and frees whole (the
 * walk's id tables, the report's durations: tens of bytes per event of a
 * file), from anonymous mappings that ask for transparent huge pages
 * (bigmem.c). Depends on libc only. */
#ifndef SP_COMMON_BIGMEM_H
#define SP_COMMON_BIGMEM_H

#include <stddef.h>

/* `bytes` zero-filled bytes; NULL when they cannot be had. */
void *sp__big_calloc(size_t bytes);
/* Frees what sp__big_calloc(bytes) gave (the same `bytes`); NULL is fine. */
void sp__big_free(void *p, size_t bytes);

#endif
