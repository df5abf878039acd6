/* rd.h - a bounds-checked cursor over fixed-width fields in a byte buffer,
 * the one reader of the crash spill (spill.c) and the staging journal's
 * records (stream.c), both outside data. Depends on libc and error.h only. */
#ifndef SP_CORE_RD_H
#define SP_CORE_RD_H

#include <stdint.h>
#include <string.h>

#include "common/error.h"

/* Once a read runs past the end, `bad` stays set and every later read yields
 * zeros or NULL, so a caller checks once after a whole record. */
struct sp_rd {
  const unsigned char *p, *end;
  int bad;
};

/* Strings longer than this are taken as damage, not data: no name or
 * setting comes near it, and a torn length must not drive a huge copy. */
#define SP_RD_STR_MAX (1u << 24)

static inline int sp__rd_get(struct sp_rd *i, void *dst, size_t n) {
  if (i->bad || (size_t)(i->end - i->p) < n) {
    i->bad = 1;
    memset(dst, 0, n);
    return -1;
  }
  memcpy(dst, i->p, n);
  i->p += n;
  return 0;
}
static inline uint32_t sp__rd_u32(struct sp_rd *i) {
  uint32_t v;
  sp__rd_get(i, &v, sizeof v);
  return v;
}
static inline uint64_t sp__rd_u64(struct sp_rd *i) {
  uint64_t v;
  sp__rd_get(i, &v, sizeof v);
  return v;
}
/* A u32 length and that many bytes, as a malloc'd NUL-terminated string;
 * NULL (and bad) when the bytes run out, the length is damage or memory is. */
static inline char *sp__rd_str(struct sp_rd *i) {
  uint32_t n = sp__rd_u32(i);
  if (i->bad || n > SP_RD_STR_MAX || (size_t)(i->end - i->p) < n) {
    i->bad = 1;
    return NULL;
  }
  char *s = sp__strndup((const char *)i->p, n);
  i->p += n;
  if (!s) i->bad = 1;
  return s;
}

#endif
