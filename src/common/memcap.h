/* memcap.h - the allocation capture file format (docs/memory-capture.md),
 * shared by its writer (src/memory/, inside libscope_profiler_memory.so) and
 * its reader (src/read/read_memcap.c), so that both spell the record layout
 * the same way. Depends on libc only: the interposer library links this file
 * and nothing else of the project's.
 *
 * A capture is a 32-byte prelude (an ASCII line naming the format, then the
 * format version) followed by records, each a 20-byte header and a payload
 * (zstd-compressed or stored). Payloads are sequences of LEB128 varints and
 * length-prefixed strings. The events of one thread's buffer block make one
 * EVNT record, encoded column by column (kinds, regions, time deltas, address
 * deltas, sizes, sites) so that zstd finds the repetition.
 */
#ifndef SP_COMMON_MEMCAP_H
#define SP_COMMON_MEMCAP_H

#include <stddef.h>
#include <stdint.h>

/* The first 30 bytes of every capture: a line `head -c 30` shows. Memray's
 * captures start with "memray", ours can never be taken for one. */
#define SP_MEMCAP_MAGIC "scope-profiler memory capture\n"
#define SP_MEMCAP_MAGIC_LEN 30
#define SP_MEMCAP_PRELUDE_LEN 32 /* magic + u16 little-endian version */
#define SP_MEMCAP_VERSION 1

#define SP_MEMCAP_RECORD_HEADER 20
/* Largest payload (stored or decompressed) a reader accepts. */
#define SP_MEMCAP_MAX_PAYLOAD (64u << 20)

/* Record types: four ASCII letters read as a little-endian u32. */
#define SP_MEMCAP_FOURCC(a, b, c, d) \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define SP_MEMCAP_HEAD SP_MEMCAP_FOURCC('H', 'E', 'A', 'D') /* first record, once */
#define SP_MEMCAP_CLCK SP_MEMCAP_FOURCC('C', 'L', 'C', 'K') /* (ticks, ns) pair */
#define SP_MEMCAP_EVNT SP_MEMCAP_FOURCC('E', 'V', 'N', 'T') /* one thread's events */
#define SP_MEMCAP_STCK SP_MEMCAP_FOURCC('S', 'T', 'C', 'K') /* interned native stacks */
#define SP_MEMCAP_REGN SP_MEMCAP_FOURCC('R', 'E', 'G', 'N') /* region id -> name */
#define SP_MEMCAP_THRD SP_MEMCAP_FOURCC('T', 'H', 'R', 'D') /* thread index -> tid, name */
#define SP_MEMCAP_MAPS SP_MEMCAP_FOURCC('M', 'A', 'P', 'S') /* executable mappings */
#define SP_MEMCAP_STAT SP_MEMCAP_FOURCC('S', 'T', 'A', 'T') /* final counts: a clean end */

#define SP_MEMCAP_CODEC_STORED 0
#define SP_MEMCAP_CODEC_ZSTD 1

/* HEAD flags. */
#define SP_MEMCAP_F_NATIVE 1u     /* sites are native stack ids (STCK), not return addresses */
#define SP_MEMCAP_F_TSC 2u        /* ticks are TSC cycles (CLCK maps them to ns) */
#define SP_MEMCAP_F_FORK_CHILD 4u /* written by a forked child (follow_fork) */
#define SP_MEMCAP_F_MMAP 8u       /* direct mmap/munmap are captured */

/* Event kinds (one byte each in EVNT). Allocations are below 32, releases
 * from 32 on. A realloc is a REALLOC_FREE of the old block (timed before the
 * call) and a REALLOC of the new one (timed after). */
enum sp_memcap_kind {
  SP_MEMCAP_MALLOC = 1,
  SP_MEMCAP_CALLOC = 2,
  SP_MEMCAP_REALLOC = 3,
  SP_MEMCAP_POSIX_MEMALIGN = 4,
  SP_MEMCAP_ALIGNED_ALLOC = 5,
  SP_MEMCAP_MEMALIGN = 6,
  SP_MEMCAP_VALLOC = 7,
  SP_MEMCAP_PVALLOC = 8,
  SP_MEMCAP_MMAP = 9,
  SP_MEMCAP_FOREIGN = 10, /* sp_memory_record_alloc (e.g. Python's allocators) */
  SP_MEMCAP_KIND_ALLOC_END,
  SP_MEMCAP_FREE = 32,
  SP_MEMCAP_REALLOC_FREE = 33,
  SP_MEMCAP_MUNMAP = 34,
  SP_MEMCAP_FOREIGN_FREE = 35,
  SP_MEMCAP_KIND_END
};
#define SP_MEMCAP_IS_ALLOC(k) ((k) >= 1 && (k) < SP_MEMCAP_KIND_ALLOC_END)
#define SP_MEMCAP_IS_FREE(k) ((k) >= SP_MEMCAP_FREE && (k) < SP_MEMCAP_KIND_END)

/* Name of a kind ("malloc", "free", ...); "?" when unknown. */
const char *sp__memcap_kind_name(unsigned kind);

/* ---- in-memory event words (what the interposer appends per event) ----
 * word 0 ticks, 1 address, 2 kind | region << 8, 3 usable size;
 * allocations add 4 requested size and 5 site (return address, or native
 * stack id when SP_MEMCAP_F_NATIVE). */
#define SP_MEMCAP_ALLOC_WORDS 6
#define SP_MEMCAP_FREE_WORDS 4
#define SP_MEMCAP_META(kind, region) ((uint64_t)(kind) | (uint64_t)(region) << 8)

/* One decoded event. */
struct sp_memcap_event {
  uint64_t t;      /* ticks (see CLCK) */
  uint64_t addr;
  uint64_t usable; /* bytes the allocator handed out (malloc_usable_size) */
  uint64_t size;   /* bytes requested (allocations only) */
  uint64_t site;   /* return address or stack id (allocations only) */
  uint32_t region; /* current region of the thread (0: none) */
  uint8_t kind;
};

/* ---- primitives ---- */
uint32_t sp__memcap_crc32(const void *p, size_t n);
void sp__memcap_le32(unsigned char *p, uint32_t v);
uint32_t sp__memcap_rd32(const unsigned char *p);

/* A growable byte buffer whose storage comes from the caller's allocator, so
 * the interposer can keep it off the heap it traces. */
struct sp_memcap_buf {
  unsigned char *p;
  size_t n, cap;
  void *(*grow)(void *old, size_t old_cap, size_t new_cap); /* NULL: realloc */
  int failed;
};
void sp__memcap_put_u8(struct sp_memcap_buf *b, unsigned v);
void sp__memcap_put_varint(struct sp_memcap_buf *b, uint64_t v);
void sp__memcap_put_zigzag(struct sp_memcap_buf *b, int64_t v);
void sp__memcap_put_string(struct sp_memcap_buf *b, const char *s, size_t n);
void sp__memcap_put_bytes(struct sp_memcap_buf *b, const void *p, size_t n);

/* A cursor over a payload; every read fails (returns -1 and sets bad) once
 * the bytes run out or a varint is longer than 10 bytes. */
struct sp_memcap_cur {
  const unsigned char *p, *end;
  int bad;
};
int sp__memcap_get_u8(struct sp_memcap_cur *c, unsigned *v);
int sp__memcap_get_varint(struct sp_memcap_cur *c, uint64_t *v);
int sp__memcap_get_zigzag(struct sp_memcap_cur *c, int64_t *v);
/* A string: sets *s (not NUL-terminated, points into the payload) and *n. */
int sp__memcap_get_string(struct sp_memcap_cur *c, const char **s, size_t *n);

/* ---- EVNT payloads ---- */
/* Encodes the event words of one block (nwords words, as appended by the
 * interposer) for thread `thread`; the previous-site state is per block.
 * `scratch` holds SP_MEMCAP_ENC_SCRATCH(nwords) words. */
#define SP_MEMCAP_ENC_SCRATCH(nwords) (7 * ((nwords) / 4 + 1))
void sp__memcap_encode_events(struct sp_memcap_buf *b, uint32_t thread, const uint64_t *w,
                              size_t nwords, uint64_t *scratch);
/* Decodes an EVNT payload into a malloc'd array of *count events (*out;
 * NULL when there are none). Returns 0, or -1 with the reason in
 * why[0..whylen) when the payload is not well formed. */
int sp__memcap_decode_events(const unsigned char *p, size_t n, uint32_t *thread,
                             struct sp_memcap_event **out, size_t *count, char *why,
                             size_t whylen);

#endif
