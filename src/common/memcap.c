/* memcap.c - the allocation capture file's primitives (CRC-32, LEB128
 * varints, strings) and the column coding of EVNT payloads, shared by the
 * writer in libscope_profiler_memory.so and the reader. Depends on libc
 * only; allocates only through the buffer's own grow function (the
 * interposer passes one that maps memory instead of calling malloc).
 */
#include "common/memcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sp__memcap_kind_name(unsigned kind) {
  switch (kind) {
  case SP_MEMCAP_MALLOC: return "malloc";
  case SP_MEMCAP_CALLOC: return "calloc";
  case SP_MEMCAP_REALLOC: return "realloc";
  case SP_MEMCAP_POSIX_MEMALIGN: return "posix_memalign";
  case SP_MEMCAP_ALIGNED_ALLOC: return "aligned_alloc";
  case SP_MEMCAP_MEMALIGN: return "memalign";
  case SP_MEMCAP_VALLOC: return "valloc";
  case SP_MEMCAP_PVALLOC: return "pvalloc";
  case SP_MEMCAP_MMAP: return "mmap";
  case SP_MEMCAP_FOREIGN: return "foreign";
  case SP_MEMCAP_FREE: return "free";
  case SP_MEMCAP_REALLOC_FREE: return "realloc(old)";
  case SP_MEMCAP_MUNMAP: return "munmap";
  case SP_MEMCAP_FOREIGN_FREE: return "foreign free";
  }
  return "?";
}

/* Reflected CRC-32 (polynomial 0xEDB88320, zlib's), table built on first
 * use; the race of two first users writes the same values. */
static uint32_t crc_table[256];
static int crc_ready;

uint32_t sp__memcap_crc32(const void *p, size_t n) {
  if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      crc_table[i] = c;
    }
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
  }
  const unsigned char *b = p;
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ b[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void sp__memcap_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

uint32_t sp__memcap_rd32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*====== Writing ======*/

static int reserve(struct sp_memcap_buf *b, size_t more) {
  if (b->failed) return -1;
  if (b->n + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more) cap *= 2;
  void *np = b->grow ? b->grow(b->p, b->cap, cap) : realloc(b->p, cap);
  if (!np) {
    b->failed = 1;
    return -1;
  }
  b->p = np;
  b->cap = cap;
  return 0;
}

void sp__memcap_put_u8(struct sp_memcap_buf *b, unsigned v) {
  if (reserve(b, 1) == 0) b->p[b->n++] = (unsigned char)v;
}

void sp__memcap_put_varint(struct sp_memcap_buf *b, uint64_t v) {
  if (reserve(b, 10)) return;
  while (v >= 0x80) {
    b->p[b->n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  b->p[b->n++] = (unsigned char)v;
}

void sp__memcap_put_zigzag(struct sp_memcap_buf *b, int64_t v) {
  sp__memcap_put_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void sp__memcap_put_bytes(struct sp_memcap_buf *b, const void *p, size_t n) {
  if (n && reserve(b, n) == 0) {
    memcpy(b->p + b->n, p, n);
    b->n += n;
  }
}

void sp__memcap_put_string(struct sp_memcap_buf *b, const char *s, size_t n) {
  sp__memcap_put_varint(b, n);
  sp__memcap_put_bytes(b, s, n);
}

/*====== Reading ======*/

int sp__memcap_get_u8(struct sp_memcap_cur *c, unsigned *v) {
  if (c->bad || c->p >= c->end) {
    c->bad = 1;
    return -1;
  }
  *v = *c->p++;
  return 0;
}

int sp__memcap_get_varint(struct sp_memcap_cur *c, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (c->bad || c->p >= c->end) break;
    unsigned byte = *c->p++;
    if (shift == 63 && byte > 1) break; /* more than 64 bits */
    x |= (uint64_t)(byte & 0x7F) << shift;
    if (!(byte & 0x80)) {
      *v = x;
      return 0;
    }
  }
  c->bad = 1;
  return -1;
}

int sp__memcap_get_zigzag(struct sp_memcap_cur *c, int64_t *v) {
  uint64_t u;
  if (sp__memcap_get_varint(c, &u)) return -1;
  *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
  return 0;
}

int sp__memcap_get_string(struct sp_memcap_cur *c, const char **s, size_t *n) {
  uint64_t len;
  if (sp__memcap_get_varint(c, &len)) return -1;
  if (len > (uint64_t)(c->end - c->p)) {
    c->bad = 1;
    return -1;
  }
  *s = (const char *)c->p;
  *n = (size_t)len;
  c->p += len;
  return 0;
}

/*====== EVNT payloads ======*/


/* The encoder runs in the writer thread for every event: it first splits
 * the block's words into columns, then codes each column in a tight loop
 * through a raw pointer into space reserved once for the worst case (61
 * bytes an event). Most values are below 128: one byte, one branch. */
static inline unsigned char *vput(unsigned char *o, uint64_t v) {
  if (v < 0x80) {
    *o = (unsigned char)v;
    return o + 1;
  }
  while (v >= 0x80) {
    *o++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *o++ = (unsigned char)v;
  return o;
}

static inline uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

void sp__memcap_encode_events(struct sp_memcap_buf *b, uint32_t thread, const uint64_t *w,
                              size_t nwords, uint64_t *scratch) {
  /* columns: time delta, address delta, region, usable, kind; then for the
   * allocations usable - size and site delta. An event takes 4 words or
   * more, so 7 columns of nwords / 4 fit in the caller's 2 * nwords. */
  size_t max = nwords / SP_MEMCAP_FREE_WORDS + 1;
  uint64_t *col[5], *acol[2];
  for (int k = 0; k < 5; k++) col[k] = scratch + (size_t)k * max;
  for (int k = 0; k < 2; k++) acol[k] = scratch + (size_t)(5 + k) * max;
  size_t n = 0, na = 0;
  uint64_t pt = nwords ? w[0] : 0, pa = 0, ps = 0;
  for (size_t i = 0; i < nwords;) {
    uint64_t meta = w[i + 2];
    unsigned k = meta & 0xFF;
    col[0][n] = zz((int64_t)(w[i] - pt));
    col[1][n] = zz((int64_t)(w[i + 1] - pa));
    col[2][n] = meta >> 8;
    col[3][n] = w[i + 3];
    col[4][n] = k;
    pt = w[i];
    pa = w[i + 1];
    n++;
    if (SP_MEMCAP_IS_ALLOC(k)) {
      acol[0][na] = zz((int64_t)(w[i + 3] - w[i + 4]));
      acol[1][na] = zz((int64_t)(w[i + 5] - ps));
      ps = w[i + 5];
      na++;
      i += SP_MEMCAP_ALLOC_WORDS;
    } else {
      i += SP_MEMCAP_FREE_WORDS;
    }
  }
  if (reserve(b, 30 + n * 61)) return;
  unsigned char *o = b->p + b->n;
  o = vput(o, thread);
  o = vput(o, n);
  o = vput(o, n ? w[0] : 0);
  for (size_t i = 0; i < n; i++) *o++ = (unsigned char)col[4][i];
  for (size_t i = 0; i < n; i++) o = vput(o, col[2][i]);
  for (size_t i = 0; i < n; i++) o = vput(o, col[0][i]);
  for (size_t i = 0; i < n; i++) o = vput(o, col[1][i]);
  for (size_t i = 0; i < n; i++) o = vput(o, col[3][i]);
  for (size_t i = 0; i < na; i++) o = vput(o, acol[0][i]);
  for (size_t i = 0; i < na; i++) o = vput(o, acol[1][i]);
  b->n = (size_t)(o - b->p);
}

#define BAD(...)                                  \
  do {                                            \
    if (whylen) snprintf(why, whylen, __VA_ARGS__); \
    free(ev);                                     \
    return -1;                                    \
  } while (0)

int sp__memcap_decode_events(const unsigned char *p, size_t n, uint32_t *thread,
                             struct sp_memcap_event **out, size_t *count, char *why,
                             size_t whylen) {
  struct sp_memcap_cur c = {p, p + n, 0};
  struct sp_memcap_event *ev = NULL;
  uint64_t th, cnt, t0;
  *out = NULL;
  *count = 0;
  if (sp__memcap_get_varint(&c, &th) || sp__memcap_get_varint(&c, &cnt) ||
      sp__memcap_get_varint(&c, &t0))
    BAD("event block header is cut short");
  if (th > UINT32_MAX) BAD("thread index %llu is out of range", (unsigned long long)th);
  /* Every event takes at least 5 bytes (kind, region, time, address, size). */
  if (cnt > (uint64_t)(c.end - c.p) / 5)
    BAD("event block claims %llu events in %zu bytes", (unsigned long long)cnt,
        (size_t)(c.end - c.p));
  *thread = (uint32_t)th;
  if (!cnt) {
    if (c.p != c.end) BAD("%zu stray bytes after an empty event block", (size_t)(c.end - c.p));
    return 0;
  }
  ev = calloc((size_t)cnt, sizeof *ev);
  if (!ev) BAD("out of memory for %llu events", (unsigned long long)cnt);
  for (uint64_t i = 0; i < cnt; i++) {
    unsigned k;
    if (sp__memcap_get_u8(&c, &k)) BAD("event kinds are cut short");
    if (!SP_MEMCAP_IS_ALLOC(k) && !SP_MEMCAP_IS_FREE(k))
      BAD("event %llu has unknown kind %u", (unsigned long long)i, k);
    ev[i].kind = (uint8_t)k;
  }
  for (uint64_t i = 0; i < cnt; i++) {
    uint64_t r;
    if (sp__memcap_get_varint(&c, &r)) BAD("event regions are cut short");
    if (r > UINT32_MAX) BAD("event %llu has region id %llu, out of range", (unsigned long long)i,
                            (unsigned long long)r);
    ev[i].region = (uint32_t)r;
  }
  uint64_t prev = t0;
  for (uint64_t i = 0; i < cnt; i++) {
    int64_t d;
    if (sp__memcap_get_zigzag(&c, &d)) BAD("event times are cut short");
    prev += (uint64_t)d;
    ev[i].t = prev;
  }
  prev = 0;
  for (uint64_t i = 0; i < cnt; i++) {
    int64_t d;
    if (sp__memcap_get_zigzag(&c, &d)) BAD("event addresses are cut short");
    prev += (uint64_t)d;
    ev[i].addr = prev;
  }
  for (uint64_t i = 0; i < cnt; i++)
    if (sp__memcap_get_varint(&c, &ev[i].usable)) BAD("event sizes are cut short");
  for (uint64_t i = 0; i < cnt; i++)
    if (SP_MEMCAP_IS_ALLOC(ev[i].kind)) {
      int64_t d;
      if (sp__memcap_get_zigzag(&c, &d)) BAD("requested sizes are cut short");
      ev[i].size = ev[i].usable - (uint64_t)d;
    }
  prev = 0;
  for (uint64_t i = 0; i < cnt; i++)
    if (SP_MEMCAP_IS_ALLOC(ev[i].kind)) {
      int64_t d;
      if (sp__memcap_get_zigzag(&c, &d)) BAD("allocation sites are cut short");
      prev += (uint64_t)d;
      ev[i].site = prev;
    }
  if (c.p != c.end) BAD("%zu stray bytes after %llu events", (size_t)(c.end - c.p),
                        (unsigned long long)cnt);
  *out = ev;
  *count = (size_t)cnt;
  return 0;
}
