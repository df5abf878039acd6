/* read_memcap.c - opening an allocation capture: the prelude, every record
 * checked (bounds, checksum, zstd frame, content), the metadata records
 * decoded, the event blocks indexed; and the time-ordered iteration of the
 * events across threads (a k-way merge holding one decoded block per
 * thread, so memory does not grow with the capture).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "common/error.h"
#include "read/memcap_read.h"

#define BAD(...) sp__set_error(SP_ERR_FORMAT, __VA_ARGS__)

static int grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 16;
  void *p = realloc(*v, c * size);
  if (!p) return -1;
  *v = p;
  *cap = c;
  return 0;
}

static char *dupn(const char *s, size_t n) { return sp__strndup(s, n); }

/* Reads a whole payload and checks it; *out is malloc'd, raw length. */
static sp_status load_payload(sp_memcap *c, uint64_t offset, uint32_t stored, uint32_t raw,
                              unsigned codec, uint32_t crc, unsigned char **out) {
  unsigned char *s = malloc(stored ? stored : 1);
  if (!s) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", c->path);
  if (fseeko(c->f, (off_t)offset, SEEK_SET) || fread(s, 1, stored, c->f) != stored) {
    free(s);
    return sp__set_error(SP_ERR_IO, "%s: cannot read %u bytes at offset %llu: %s", c->path, stored,
                         (unsigned long long)offset, ferror(c->f) ? strerror(errno) : "file ends");
  }
  if (sp__memcap_crc32(s, stored) != crc) {
    free(s);
    return BAD("%s: the record at offset %llu fails its checksum (the file is damaged)", c->path,
               (unsigned long long)offset - SP_MEMCAP_RECORD_HEADER);
  }
  if (codec == SP_MEMCAP_CODEC_STORED) {
    *out = s;
    return SP_OK;
  }
  unsigned long long fsz = ZSTD_getFrameContentSize(s, stored);
  if (fsz != raw) {
    free(s);
    return BAD("%s: the record at offset %llu is not a zstd frame of %u bytes", c->path,
               (unsigned long long)offset - SP_MEMCAP_RECORD_HEADER, raw);
  }
  unsigned char *d = malloc(raw ? raw : 1);
  if (!d) {
    free(s);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", c->path);
  }
  size_t got = ZSTD_decompress(d, raw, s, stored);
  free(s);
  if (ZSTD_isError(got) || got != raw) {
    free(d);
    return BAD("%s: the record at offset %llu does not decompress (%s)", c->path,
               (unsigned long long)offset - SP_MEMCAP_RECORD_HEADER,
               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
  }
  *out = d;
  return SP_OK;
}

/*====== Metadata records ======*/

#define GET(cur, v) sp__memcap_get_varint(cur, v)

static sp_status head(sp_memcap *c, struct sp_memcap_cur *cur) {
  uint64_t flags, pid, ppid, mono, real, page, frames;
  const char *s;
  size_t n;
  if (GET(cur, &flags) || GET(cur, &pid) || GET(cur, &ppid) || GET(cur, &mono) ||
      GET(cur, &real) || GET(cur, &page) || GET(cur, &frames) ||
      sp__memcap_get_string(cur, &s, &n))
    return BAD("%s: the HEAD record is cut short", c->path);
  c->flags = (unsigned)flags;
  c->pid = pid;
  c->ppid = ppid;
  c->start_mono_ns = (int64_t)mono;
  c->start_real_ns = (int64_t)real;
  c->page_size = page;
  c->max_frames = frames;
  c->program = dupn(s, n);
  return c->program ? SP_OK : sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
}

static sp_status clock_rec(sp_memcap *c, struct sp_memcap_cur *cur) {
  uint64_t tick, ns;
  if (GET(cur, &tick) || GET(cur, &ns)) return BAD("%s: a CLCK record is cut short", c->path);
  /* A few per second of capture: grow by one. */
  void *p = realloc(c->clocks, (c->nclocks + 1) * sizeof *c->clocks);
  if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  c->clocks = p;
  c->clocks[c->nclocks].tick = tick;
  c->clocks[c->nclocks].ns = (int64_t)ns;
  c->nclocks++;
  return SP_OK;
}

static int cmp_region(const void *a, const void *b) {
  uint32_t x = ((const struct sp_memcap_region *)a)->id, y = ((const struct sp_memcap_region *)b)->id;
  return x < y ? -1 : x > y;
}

static sp_status regions_rec(sp_memcap *c, struct sp_memcap_cur *cur, size_t *cap) {
  uint64_t n;
  if (GET(cur, &n)) return BAD("%s: a REGN record is cut short", c->path);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t id;
    const char *s;
    size_t len;
    if (GET(cur, &id) || sp__memcap_get_string(cur, &s, &len))
      return BAD("%s: a REGN record is cut short", c->path);
    if (id > UINT32_MAX) return BAD("%s: region id %llu is out of range", c->path, (unsigned long long)id);
    if (!sp__utf8_valid(s, len)) return BAD("%s: region %llu's name is not UTF-8", c->path,
                                            (unsigned long long)id);
    if (grow((void **)&c->regions, cap, c->nregions, sizeof *c->regions))
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    c->regions[c->nregions].id = (uint32_t)id;
    c->regions[c->nregions].name = dupn(s, len);
    if (!c->regions[c->nregions].name) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    c->nregions++;
  }
  return SP_OK;
}

static sp_status threads_rec(sp_memcap *c, struct sp_memcap_cur *cur, size_t *cap) {
  uint64_t n;
  if (GET(cur, &n)) return BAD("%s: a THRD record is cut short", c->path);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t idx, tid;
    const char *s;
    size_t len;
    if (GET(cur, &idx) || GET(cur, &tid) || sp__memcap_get_string(cur, &s, &len))
      return BAD("%s: a THRD record is cut short", c->path);
    if (idx > UINT32_MAX) return BAD("%s: thread index %llu is out of range", c->path,
                                     (unsigned long long)idx);
    if (grow((void **)&c->threads, cap, c->nthreads, sizeof *c->threads))
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    struct sp_memcap_thread *t = &c->threads[c->nthreads++];
    t->index = (uint32_t)idx;
    t->tid = tid;
    t->name = dupn(s, len);
    if (!t->name) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  return SP_OK;
}

static sp_status maps_rec(sp_memcap *c, struct sp_memcap_cur *cur, size_t *cap) {
  uint64_t n;
  if (GET(cur, &n)) return BAD("%s: a MAPS record is cut short", c->path);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t lo, hi, off;
    unsigned x;
    const char *s;
    size_t len;
    if (GET(cur, &lo) || GET(cur, &hi) || GET(cur, &off) || sp__memcap_get_u8(cur, &x) ||
        sp__memcap_get_string(cur, &s, &len))
      return BAD("%s: a MAPS record is cut short", c->path);
    if (hi <= lo) return BAD("%s: a mapping ends (0x%llx) before it starts (0x%llx)", c->path,
                             (unsigned long long)hi, (unsigned long long)lo);
    if (grow((void **)&c->maps, cap, c->nmaps, sizeof *c->maps))
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    struct sp_memcap_map *m = &c->maps[c->nmaps++];
    m->lo = lo;
    m->hi = hi;
    m->off = off;
    m->exec = x != 0;
    m->path = dupn(s, len);
    if (!m->path) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  return SP_OK;
}

static sp_status stacks_rec(sp_memcap *c, struct sp_memcap_cur *cur, size_t *cap) {
  uint64_t n;
  if (GET(cur, &n)) return BAD("%s: a STCK record is cut short", c->path);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t id, nf;
    if (GET(cur, &id) || GET(cur, &nf)) return BAD("%s: a STCK record is cut short", c->path);
    if (id != c->nstacks + 1)
      return BAD("%s: stack %llu is out of order (expected %zu)", c->path, (unsigned long long)id,
                 c->nstacks + 1);
    if (nf > 1024) return BAD("%s: stack %llu has %llu frames (at most 1024)", c->path,
                              (unsigned long long)id, (unsigned long long)nf);
    if (grow((void **)&c->stacks, cap, c->nstacks, sizeof *c->stacks))
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    struct sp_memcap_stack *st = &c->stacks[c->nstacks];
    st->n = (uint32_t)nf;
    st->pc = malloc((nf ? nf : 1) * sizeof *st->pc);
    if (!st->pc) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    c->nstacks++;
    uint64_t prev = 0;
    for (uint64_t f = 0; f < nf; f++) {
      int64_t d;
      if (sp__memcap_get_zigzag(cur, &d)) return BAD("%s: a STCK record is cut short", c->path);
      prev += (uint64_t)d;
      st->pc[f] = prev;
    }
  }
  return SP_OK;
}

static sp_status stat_rec(sp_memcap *c, struct sp_memcap_cur *cur) {
  if (GET(cur, &c->stat.events) || GET(cur, &c->stat.allocations) || GET(cur, &c->stat.lost) ||
      GET(cur, &c->stat.unattributed) || GET(cur, &c->stat.buffer_peak) || GET(cur, &c->stat.waits))
    return BAD("%s: the STAT record is cut short", c->path);
  c->complete = 1;
  return SP_OK;
}

/*====== Open ======*/

void sp__memcap_close(sp_memcap *c) {
  if (!c) return;
  if (c->f) fclose(c->f);
  for (size_t i = 0; i < c->nregions; i++) free(c->regions[i].name);
  for (size_t i = 0; i < c->nthreads; i++) free(c->threads[i].name);
  for (size_t i = 0; i < c->nmaps; i++) free(c->maps[i].path);
  for (size_t i = 0; i < c->nstacks; i++) free(c->stacks[i].pc);
  free(c->regions);
  free(c->threads);
  free(c->maps);
  free(c->stacks);
  free(c->chunks);
  free(c->clocks);
  free(c->program);
  free(c->path);
  free(c);
}

/* Decodes an EVNT payload to check it and index its block. */
static sp_status index_events(sp_memcap *c, const unsigned char *p, size_t n, uint64_t rec_off,
                              struct sp_memcap_chunk *ch, uint64_t *max_stack) {
  struct sp_memcap_event *ev;
  size_t cnt;
  uint32_t thread;
  char why[160];
  if (sp__memcap_decode_events(p, n, &thread, &ev, &cnt, why, sizeof why))
    return BAD("%s: the event block at offset %llu is malformed: %s", c->path,
               (unsigned long long)rec_off, why);
  ch->thread = thread;
  ch->nevents = cnt;
  for (size_t i = 0; i < cnt; i++) {
    if (ev[i].t < c->tick_min) c->tick_min = ev[i].t;
    if (ev[i].t > c->tick_max) c->tick_max = ev[i].t;
    if ((c->flags & SP_MEMCAP_F_NATIVE) && SP_MEMCAP_IS_ALLOC(ev[i].kind) && ev[i].site > *max_stack)
      *max_stack = ev[i].site;
    if (SP_MEMCAP_IS_ALLOC(ev[i].kind) && ev[i].size > ev[i].usable) {
      unsigned long long req = ev[i].size, usable = ev[i].usable;
      free(ev);
      return BAD("%s: the event block at offset %llu has an allocation of %llu bytes with only "
                 "%llu usable", c->path, (unsigned long long)rec_off, req, usable);
    }
  }
  free(ev);
  c->nevents += cnt;
  return SP_OK;
}

sp_status sp__memcap_open(const char *path, sp_memcap **out) {
  *out = NULL;
  sp_memcap *c = calloc(1, sizeof *c);
  if (!c) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  c->path = sp__strdup(path);
  c->tick_min = UINT64_MAX;
  sp_status st = SP_OK;
  c->f = fopen(path, "rb");
  if (!c->f) {
    st = sp__set_error(errno == ENOENT ? SP_ERR_NOT_FOUND : SP_ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
    sp__memcap_close(c);
    return st;
  }
  struct stat sb;
  if (fstat(fileno(c->f), &sb) || !S_ISREG(sb.st_mode)) {
    st = sp__set_error(SP_ERR_IO, "%s is not a regular file", path);
    sp__memcap_close(c);
    return st;
  }
  uint64_t size = (uint64_t)sb.st_size;
  unsigned char pre[SP_MEMCAP_PRELUDE_LEN] = {0};
  size_t got = fread(pre, 1, sizeof pre, c->f);
  if (got != sizeof pre || memcmp(pre, SP_MEMCAP_MAGIC, SP_MEMCAP_MAGIC_LEN)) {
    int memray = got >= 6 && !memcmp(pre, "memray", 6);
    st = BAD("%s is not a scope-profiler memory capture (it does not start with \"scope-profiler "
             "memory capture\")%s", path,
             memray ? "; it looks like a Memray capture: open it with `memray`" : "");
    sp__memcap_close(c);
    return st;
  }
  c->version = pre[30] | (unsigned)pre[31] << 8;
  if (c->version != SP_MEMCAP_VERSION) {
    st = BAD("%s is a memory capture of format version %u; this scope-profiler reads version %u "
             "(use the scope-profiler that wrote it)", path, c->version, SP_MEMCAP_VERSION);
    sp__memcap_close(c);
    return st;
  }
  size_t cap_r = 0, cap_t = 0, cap_m = 0, cap_s = 0, cap_c = 0;
  uint64_t off = sizeof pre, max_stack = 0;
  int seen_head = 0;
  while (st == SP_OK && off < size) {
    unsigned char h[SP_MEMCAP_RECORD_HEADER];
    if (size - off < sizeof h) {
      c->truncated = 1;
      c->truncated_at = off;
      break;
    }
    if (fseeko(c->f, (off_t)off, SEEK_SET) || fread(h, 1, sizeof h, c->f) != sizeof h) {
      st = sp__set_error(SP_ERR_IO, "%s: cannot read at offset %llu", path, (unsigned long long)off);
      break;
    }
    uint32_t type = sp__memcap_rd32(h), stored = sp__memcap_rd32(h + 4), raw = sp__memcap_rd32(h + 8);
    unsigned codec = h[12];
    uint32_t crc = sp__memcap_rd32(h + 16);
    if (codec > SP_MEMCAP_CODEC_ZSTD || h[13] || h[14] || h[15]) {
      st = BAD("%s: the record at offset %llu has an unknown coding (%u)", path,
               (unsigned long long)off, codec);
      break;
    }
    if (stored > SP_MEMCAP_MAX_PAYLOAD || raw > SP_MEMCAP_MAX_PAYLOAD ||
        (codec == SP_MEMCAP_CODEC_STORED && stored != raw)) {
      st = BAD("%s: the record at offset %llu claims %u stored and %u decoded bytes (at most %u, "
               "equal when stored)", path, (unsigned long long)off, stored, raw, SP_MEMCAP_MAX_PAYLOAD);
      break;
    }
    if (stored > size - off - sizeof h) {
      c->truncated = 1;
      c->truncated_at = off;
      break;
    }
    if (!seen_head && type != SP_MEMCAP_HEAD) {
      st = BAD("%s: the first record is not HEAD", path);
      break;
    }
    if (seen_head && type == SP_MEMCAP_HEAD) {
      st = BAD("%s: a second HEAD record at offset %llu", path, (unsigned long long)off);
      break;
    }
    if (c->complete) {
      st = BAD("%s: a record follows the closing STAT record (offset %llu)", path,
               (unsigned long long)off);
      break;
    }
    uint64_t payload_off = off + sizeof h;
    unsigned char *p = NULL;
    st = load_payload(c, payload_off, stored, raw, codec, crc, &p);
    if (st) break;
    struct sp_memcap_cur cur = {p, p + raw, 0};
    switch (type) {
    case SP_MEMCAP_HEAD: st = head(c, &cur); seen_head = 1; break;
    case SP_MEMCAP_CLCK: st = clock_rec(c, &cur); break;
    case SP_MEMCAP_REGN: st = regions_rec(c, &cur, &cap_r); break;
    case SP_MEMCAP_THRD: st = threads_rec(c, &cur, &cap_t); break;
    case SP_MEMCAP_MAPS: st = maps_rec(c, &cur, &cap_m); break;
    case SP_MEMCAP_STCK: st = stacks_rec(c, &cur, &cap_s); break;
    case SP_MEMCAP_STAT: st = stat_rec(c, &cur); break;
    case SP_MEMCAP_EVNT:
      if (grow((void **)&c->chunks, &cap_c, c->nchunks, sizeof *c->chunks)) {
        st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
        break;
      }
      c->chunks[c->nchunks] = (struct sp_memcap_chunk){payload_off, stored, raw, (uint8_t)codec, 0, 0};
      st = index_events(c, p, raw, off, &c->chunks[c->nchunks], &max_stack);
      cur.p = cur.end;
      if (!st) c->nchunks++;
      break;
    default: /* a later version's record: skip it */
      cur.p = cur.end;
      break;
    }
    if (!st && cur.p != cur.end)
      st = BAD("%s: the record at offset %llu has %zu stray bytes at its end", path,
               (unsigned long long)off, (size_t)(cur.end - cur.p));
    free(p);
    off = payload_off + stored;
  }
  if (!st && !seen_head) st = BAD("%s: the capture has no HEAD record", path);
  if (!st && max_stack > c->nstacks)
    st = BAD("%s: an allocation refers to native stack %llu, but the capture stores %zu", path,
             (unsigned long long)max_stack, c->nstacks);
  if (st) {
    sp__memcap_close(c);
    return st;
  }
  if (c->nregions) qsort(c->regions, c->nregions, sizeof *c->regions, cmp_region);
  if (!c->nevents) c->tick_min = c->tick_max = 0;
  *out = c;
  return SP_OK;
}

int64_t sp__memcap_ns(const sp_memcap *c, uint64_t tick) {
  if (!c->nclocks) return (int64_t)tick;
  const struct sp_memcap_clock *a = &c->clocks[0], *b = &c->clocks[c->nclocks - 1];
  if (!(c->flags & SP_MEMCAP_F_TSC)) return (int64_t)tick;
  if (b->tick <= a->tick) return a->ns + (int64_t)(tick - a->tick);
  long double rate = (long double)(b->ns - a->ns) / (long double)(b->tick - a->tick);
  return a->ns + (int64_t)((long double)((int64_t)(tick - a->tick)) * rate);
}

const char *sp__memcap_region_name(const sp_memcap *c, uint32_t id) {
  size_t lo = 0, hi = c->nregions;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->regions[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->nregions && c->regions[lo].id == id ? c->regions[lo].name : NULL;
}

/*====== Time-ordered iteration ======*/

struct lane {
  uint32_t thread;
  size_t *chunks; /* indices into c->chunks, file order */
  size_t nchunks, next_chunk;
  struct sp_memcap_event *ev;
  size_t nev, pos;
};

struct sp_memcap_iter {
  sp_memcap *c;
  struct lane *lanes;
  size_t nlanes;
  size_t *heap; /* lane indices, by the head event */
  size_t nheap;
};

static int ev_before(const struct sp_memcap_event *a, const struct sp_memcap_event *b) {
  if (a->t != b->t) return a->t < b->t;
  return SP_MEMCAP_IS_FREE(a->kind) && !SP_MEMCAP_IS_FREE(b->kind);
}

static int cmp_ev(const void *x, const void *y) {
  const struct sp_memcap_event *a = x, *b = y;
  if (ev_before(a, b)) return -1;
  if (ev_before(b, a)) return 1;
  return 0;
}

/* Loads the lane's next block; 0 when it had one, 1 when done, <0 error. */
static int lane_load(struct sp_memcap_iter *it, struct lane *l) {
  free(l->ev);
  l->ev = NULL;
  l->nev = l->pos = 0;
  while (l->next_chunk < l->nchunks) {
    const struct sp_memcap_chunk *ch = &it->c->chunks[l->chunks[l->next_chunk++]];
    unsigned char *p;
    unsigned char h[SP_MEMCAP_RECORD_HEADER];
    if (fseeko(it->c->f, (off_t)(ch->offset - sizeof h), SEEK_SET) ||
        fread(h, 1, sizeof h, it->c->f) != sizeof h)
      return sp__set_error(SP_ERR_IO, "%s: cannot read an event block again", it->c->path);
    sp_status st = load_payload(it->c, ch->offset, ch->stored, ch->raw, ch->codec,
                                sp__memcap_rd32(h + 16), &p);
    if (st) return st;
    uint32_t thread;
    char why[160];
    int rc = sp__memcap_decode_events(p, ch->raw, &thread, &l->ev, &l->nev, why, sizeof why);
    free(p);
    if (rc) return BAD("%s: an event block changed while reading: %s", it->c->path, why);
    /* Events deferred from a signal handler may sit slightly out of order. */
    if (l->nev) qsort(l->ev, l->nev, sizeof *l->ev, cmp_ev);
    if (l->nev) return 0;
  }
  return 1;
}

static int lane_less(struct sp_memcap_iter *it, size_t a, size_t b) {
  const struct lane *x = &it->lanes[a], *y = &it->lanes[b];
  return ev_before(&x->ev[x->pos], &y->ev[y->pos]);
}

static void sift_down(struct sp_memcap_iter *it, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < it->nheap && lane_less(it, it->heap[l], it->heap[m])) m = l;
    if (r < it->nheap && lane_less(it, it->heap[r], it->heap[m])) m = r;
    if (m == i) return;
    size_t t = it->heap[i];
    it->heap[i] = it->heap[m];
    it->heap[m] = t;
    i = m;
  }
}

void sp__memcap_iter_free(struct sp_memcap_iter *it) {
  if (!it) return;
  for (size_t i = 0; i < it->nlanes; i++) {
    free(it->lanes[i].ev);
    free(it->lanes[i].chunks);
  }
  free(it->lanes);
  free(it->heap);
  free(it);
}

sp_status sp__memcap_iter_new(sp_memcap *c, struct sp_memcap_iter **out) {
  *out = NULL;
  struct sp_memcap_iter *it = calloc(1, sizeof *it);
  if (!it) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  it->c = c;
  size_t cap = 0;
  for (size_t i = 0; i < c->nchunks; i++) {
    size_t k = 0;
    while (k < it->nlanes && it->lanes[k].thread != c->chunks[i].thread) k++;
    if (k == it->nlanes) {
      if (grow((void **)&it->lanes, &cap, it->nlanes, sizeof *it->lanes)) goto oom;
      memset(&it->lanes[k], 0, sizeof it->lanes[k]);
      it->lanes[k].thread = c->chunks[i].thread;
      it->nlanes++;
    }
    struct lane *l = &it->lanes[k];
    size_t *v = realloc(l->chunks, (l->nchunks + 1) * sizeof *v);
    if (!v) goto oom;
    l->chunks = v;
    l->chunks[l->nchunks++] = i;
  }
  it->heap = malloc((it->nlanes ? it->nlanes : 1) * sizeof *it->heap);
  if (!it->heap) goto oom;
  for (size_t k = 0; k < it->nlanes; k++) {
    int rc = lane_load(it, &it->lanes[k]);
    if (rc < 0) {
      sp__memcap_iter_free(it);
      return (sp_status)rc;
    }
    if (rc == 0) it->heap[it->nheap++] = k;
  }
  for (size_t i = it->nheap; i-- > 0;) sift_down(it, i);
  *out = it;
  return SP_OK;
oom:
  sp__memcap_iter_free(it);
  return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
}

int sp__memcap_iter_next(struct sp_memcap_iter *it, struct sp_memcap_event *e, uint32_t *thread) {
  if (!it->nheap) return 0;
  struct lane *l = &it->lanes[it->heap[0]];
  *e = l->ev[l->pos++];
  *thread = l->thread;
  if (l->pos == l->nev) {
    int rc = lane_load(it, l);
    if (rc < 0) return rc;
    if (rc == 1) it->heap[0] = it->heap[--it->nheap];
  }
  if (it->nheap) sift_down(it, 0);
  return 1;
}

/*====== Symbols ======*/

sp_symbolizer *sp__memcap_symbolizer(const sp_memcap *c) {
  sp_symbolizer *s = sp__sym_new();
  if (!s) return NULL;
  /* One module per path, at the bias of its lowest-offset mapping (the ELF
   * header's, where virtual address and file offset coincide), covering all
   * of its mappings. */
  for (size_t i = 0; i < c->nmaps; i++) {
    const struct sp_memcap_map *m = &c->maps[i];
    int first = 1;
    uint64_t lo = m->lo, hi = m->hi;
    for (size_t j = 0; j < c->nmaps; j++) {
      const struct sp_memcap_map *o = &c->maps[j];
      if (j == i || strcmp(o->path, m->path)) continue;
      if (o->off < m->off || (o->off == m->off && (o->lo < m->lo || (o->lo == m->lo && j < i))))
        first = 0;
      if (o->lo < lo) lo = o->lo;
      if (o->hi > hi) hi = o->hi;
    }
    /* Only regular files: a capture names paths, and opening a FIFO or a
     * device it names could block or read forever. */
    struct stat st;
    if (first && !stat(m->path, &st) && S_ISREG(st.st_mode))
      (void)sp__sym_add_module(s, m->path, m->lo - m->off, lo, hi);
  }
  return s;
}

uint64_t sp__memcap_site_pc(const sp_memcap *c, uint64_t key) {
  if (!(c->flags & SP_MEMCAP_F_NATIVE)) return key;
  if (!key || key > c->nstacks || !c->stacks[key - 1].n) return 0;
  return c->stacks[key - 1].pc[0];
}
