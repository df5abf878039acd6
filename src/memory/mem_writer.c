/* mem_writer.c - the capture's background writer: takes full blocks from
 * the queue, codes their events column by column (src/common/memcap.c),
 * compresses them with zstd and appends them to the capture file, together
 * with the records that describe them (new native stacks, region names,
 * threads, clock anchors, mappings, final counts).
 *
 * The writer thread runs with its guard marked internal for its whole life,
 * so its own allocations (zstd's contexts, stdio) are never recorded, and
 * with every signal blocked, so user handlers never run on it. Records that
 * an event refers to are written before the event's block: the writer takes
 * a block off the queue first and then writes every stack interned so far,
 * which includes every stack that block uses.
 *
 * A write error (disk full) stops the writing for good: later blocks are
 * counted as lost, allocating threads never wait for it, and stop reports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "memory/mem_internal.h"

#define CAP mem__cap

/*====== Region and thread tables to emit ======*/

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
struct meta_log {
  struct sp_memcap_buf b; /* encoded entries */
  uint64_t n;             /* entries */
  size_t emitted_bytes;
  uint64_t emitted_n;
};
static struct meta_log regions = {{NULL, 0, 0, mem__buf_grow, 0}, 0, 0, 0};
static struct meta_log threads = {{NULL, 0, 0, mem__buf_grow, 0}, 0, 0, 0};

MEM_HIDDEN void mem__meta_lock(void) { pthread_mutex_lock(&meta_lock); }
MEM_HIDDEN void mem__meta_unlock(void) { pthread_mutex_unlock(&meta_lock); }

MEM_HIDDEN void mem__meta_add_region(uint32_t id, const char *name, size_t len) {
  pthread_mutex_lock(&meta_lock);
  sp__memcap_put_varint(&regions.b, id);
  sp__memcap_put_string(&regions.b, name, len);
  regions.n++;
  pthread_mutex_unlock(&meta_lock);
}

MEM_HIDDEN void mem__meta_add_thread(uint32_t index, pid_t tid, const char *name) {
  pthread_mutex_lock(&meta_lock);
  sp__memcap_put_varint(&threads.b, index);
  sp__memcap_put_varint(&threads.b, (uint64_t)tid);
  sp__memcap_put_string(&threads.b, name, strlen(name));
  threads.n++;
  pthread_mutex_unlock(&meta_lock);
}

static void log_clear(struct meta_log *l) {
  l->b.n = 0;
  l->b.failed = 0;
  l->n = l->emitted_n = 0;
  l->emitted_bytes = 0;
}

/* A new capture: threads start over; region names may be kept (the
 * profiler names its regions once, they stay valid). */
MEM_HIDDEN void mem__meta_reset(int keep_regions) {
  pthread_mutex_lock(&meta_lock);
  log_clear(&threads);
  if (keep_regions) {
    regions.emitted_n = 0;
    regions.emitted_bytes = 0;
  } else {
    log_clear(&regions);
  }
  pthread_mutex_unlock(&meta_lock);
}

/* A forked child writes a file of its own: every region again; its threads
 * are new (the parent's do not exist in it). Called with the lock
 * re-initialised. */
MEM_HIDDEN void mem__meta_rewind(void) {
  pthread_mutex_init(&meta_lock, NULL);
  regions.emitted_n = 0;
  regions.emitted_bytes = 0;
  log_clear(&threads);
}

/*====== File output ======*/

static int write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

struct wstate {
  ZSTD_CCtx *cc;
  uint64_t scratch[SP_MEMCAP_ENC_SCRATCH(MEM_BLOCK_WORDS)];
  struct sp_memcap_buf raw, z;
  uint64_t stacks_written;
  int64_t last_clock_ns;
  int err; /* errno of the first failed write */
};

/* Writes one record; compresses payloads over 64 bytes when it pays. */
static int put_record(struct wstate *ws, uint32_t type, const unsigned char *p, size_t n) {
  unsigned char h[SP_MEMCAP_RECORD_HEADER];
  const unsigned char *out = p;
  size_t stored = n;
  unsigned codec = SP_MEMCAP_CODEC_STORED;
  if (ws && ws->cc && n > 64) {
    size_t bound = ZSTD_compressBound(n);
    if (ws->z.cap < bound) {
      void *np = realloc(ws->z.p, bound);
      if (np) {
        ws->z.p = np;
        ws->z.cap = bound;
      }
    }
    if (ws->z.cap >= bound) {
      size_t z = ZSTD_compressCCtx(ws->cc, ws->z.p, ws->z.cap, p, n, CAP.level);
      if (!ZSTD_isError(z) && z < n) {
        out = ws->z.p;
        stored = z;
        codec = SP_MEMCAP_CODEC_ZSTD;
      }
    }
  }
  sp__memcap_le32(h, type);
  sp__memcap_le32(h + 4, (uint32_t)stored);
  sp__memcap_le32(h + 8, (uint32_t)n);
  h[12] = (unsigned char)codec;
  h[13] = h[14] = h[15] = 0;
  sp__memcap_le32(h + 16, sp__memcap_crc32(out, stored));
  if (write_all(CAP.fd, h, sizeof h) || write_all(CAP.fd, out, stored)) {
    if (ws && !ws->err) ws->err = errno ? errno : EIO;
    return -1;
  }
  CAP.file_bytes += sizeof h + stored;
  return 0;
}

static int put_buf(struct wstate *ws, uint32_t type, struct sp_memcap_buf *b) {
  if (b->failed) return -1;
  return put_record(ws, type, b->p, b->n);
}

static void clock_anchor(uint64_t *tick, int64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t t0 = mem__ticks();
    int64_t n = mem__mono_ns();
    uint64_t t1 = mem__ticks();
    if (t1 - t0 < best) {
      best = t1 - t0;
      *tick = t0 + (t1 - t0) / 2;
      *ns = n;
    }
  }
}

static int put_clock(struct wstate *ws) {
  unsigned char buf[32];
  struct sp_memcap_buf b = {buf, 0, sizeof buf, NULL, 0};
  uint64_t tick = 0;
  int64_t ns = 0;
  clock_anchor(&tick, &ns);
  if (!mem__cap.clock_n0) {
    mem__cap.clock_t0 = tick;
    mem__cap.clock_n0 = ns;
  }
  mem__cap.clock_t1 = tick;
  mem__cap.clock_n1 = ns;
  sp__memcap_put_varint(&b, tick);
  sp__memcap_put_varint(&b, (uint64_t)ns);
  if (ws) ws->last_clock_ns = ns;
  return put_record(ws, SP_MEMCAP_CLCK, b.p, b.n);
}

/* File-backed mappings from /proc/self/maps: start, end, offset, path. The
 * reader finds each module's load address from them. */
static int put_maps(struct wstate *ws) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct sp_memcap_buf text = {NULL, 0, 0, mem__buf_grow, 0};
  char tmp[4096];
  ssize_t r;
  while ((r = read(fd, tmp, sizeof tmp)) > 0) sp__memcap_put_bytes(&text, tmp, (size_t)r);
  close(fd);
  struct sp_memcap_buf out = {NULL, 0, 0, mem__buf_grow, 0};
  uint64_t n = 0;
  struct sp_memcap_buf body = {NULL, 0, 0, mem__buf_grow, 0};
  for (size_t i = 0; i < text.n;) {
    size_t j = i;
    while (j < text.n && text.p[j] != '\n') j++;
    char line[PATH_MAX + 128];
    size_t len = j - i < sizeof line - 1 ? j - i : sizeof line - 1;
    memcpy(line, text.p + i, len);
    line[len] = '\0';
    i = j + 1;
    unsigned long long lo, hi, off;
    char perms[8];
    int pos = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 || !pos)
      continue;
    const char *path = line + pos;
    if (path[0] != '/') continue; /* anonymous, [heap], [vdso], ... */
    sp__memcap_put_varint(&body, lo);
    sp__memcap_put_varint(&body, hi);
    sp__memcap_put_varint(&body, off);
    sp__memcap_put_u8(&body, perms[2] == 'x');
    sp__memcap_put_string(&body, path, strlen(path));
    n++;
  }
  sp__memcap_put_varint(&out, n);
  sp__memcap_put_bytes(&out, body.p, body.n);
  int rc = put_buf(ws, SP_MEMCAP_MAPS, &out);
  mem__unmap(text.p, text.cap);
  mem__unmap(body.p, body.cap);
  mem__unmap(out.p, out.cap);
  return rc;
}

/* The parts of a metadata log not written yet, as one record. */
static int put_log(struct wstate *ws, uint32_t type, struct meta_log *l) {
  pthread_mutex_lock(&meta_lock);
  int rc = 0;
  if (l->n > l->emitted_n && !l->b.failed) {
    unsigned char hdr[10];
    struct sp_memcap_buf h = {hdr, 0, sizeof hdr, NULL, 0};
    sp__memcap_put_varint(&h, l->n - l->emitted_n);
    ws->raw.n = 0;
    sp__memcap_put_bytes(&ws->raw, h.p, h.n);
    sp__memcap_put_bytes(&ws->raw, l->b.p + l->emitted_bytes, l->b.n - l->emitted_bytes);
    l->emitted_n = l->n;
    l->emitted_bytes = l->b.n;
    pthread_mutex_unlock(&meta_lock);
    return put_buf(ws, type, &ws->raw);
  }
  pthread_mutex_unlock(&meta_lock);
  return rc;
}

static int put_stacks(struct wstate *ws) {
  uint64_t n = mem__stacks_count();
  if (n <= ws->stacks_written) return 0;
  ws->raw.n = 0;
  mem__stacks_encode(&ws->raw, ws->stacks_written, n);
  ws->stacks_written = n;
  return put_buf(ws, SP_MEMCAP_STCK, &ws->raw);
}

static int put_head(void) {
  struct sp_memcap_buf b = {NULL, 0, 0, mem__buf_grow, 0};
  unsigned flags = (CAP.native ? SP_MEMCAP_F_NATIVE : 0) | (CAP.tsc ? SP_MEMCAP_F_TSC : 0) |
                   (CAP.fork_child ? SP_MEMCAP_F_FORK_CHILD : 0) | (CAP.mmap_on ? SP_MEMCAP_F_MMAP : 0);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) n = 0;
  exe[n] = '\0';
  sp__memcap_put_varint(&b, flags);
  sp__memcap_put_varint(&b, (uint64_t)getpid());
  sp__memcap_put_varint(&b, (uint64_t)CAP.ppid);
  sp__memcap_put_varint(&b, (uint64_t)mem__mono_ns());
  sp__memcap_put_varint(&b, (uint64_t)mem__real_ns());
  sp__memcap_put_varint(&b, (uint64_t)sysconf(_SC_PAGESIZE));
  sp__memcap_put_varint(&b, (uint64_t)CAP.max_frames);
  sp__memcap_put_string(&b, exe, (size_t)n);
  int rc = put_buf(NULL, SP_MEMCAP_HEAD, &b);
  mem__unmap(b.p, b.cap);
  return rc;
}

MEM_HIDDEN int mem__writer_open(char *err, size_t errlen) {
  CAP.fd = open(CAP.file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (CAP.fd < 0) {
    snprintf(err, errlen, "cannot create the memory capture %s: %s; check that its directory exists "
             "and is writable, or set memory_profile_path", CAP.file, strerror(errno));
    return -1;
  }
  unsigned char pre[SP_MEMCAP_PRELUDE_LEN];
  memcpy(pre, SP_MEMCAP_MAGIC, SP_MEMCAP_MAGIC_LEN);
  pre[30] = SP_MEMCAP_VERSION & 0xFF;
  pre[31] = SP_MEMCAP_VERSION >> 8;
  CAP.file_bytes = 0;
  CAP.clock_n0 = 0;
  mem__timeline_reset(mem__ticks());
  if (write_all(CAP.fd, pre, sizeof pre) || put_head() || put_clock(NULL) || put_maps(NULL)) {
    snprintf(err, errlen, "cannot write the memory capture %s: %s", CAP.file, strerror(errno));
    return -1;
  }
  CAP.file_bytes += sizeof pre;
  return 0;
}

MEM_HIDDEN int mem__writer_start(char *err, size_t errlen) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  CAP.writer_running = 1;
  int rc = pthread_create(&CAP.writer, NULL, mem__writer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) {
    CAP.writer_running = 0;
    snprintf(err, errlen, "cannot start the memory capture's writer thread: %s", strerror(rc));
    return -1;
  }
  return 0;
}

/*====== Memory over time ======*/

/* Net bytes allocated per interval of ticks since the start, so that the
 * profile can show memory over time without reading the capture. Blocks of
 * different threads arrive in any order, and sums do not care. The series
 * starts with 2^20-tick intervals and doubles them (merging neighbours)
 * whenever an event falls past its end, so it always has at most TL_BINS
 * intervals. Written by the writer thread only; read after it is joined. */
#define TL_BINS 1024
static struct {
  uint64_t t0;
  unsigned shift;
  int64_t delta[TL_BINS];
  size_t used; /* bins up to the last event's */
} tl;

MEM_HIDDEN void mem__timeline_reset(uint64_t t0) {
  memset(&tl, 0, sizeof tl);
  tl.t0 = t0;
  tl.shift = 20;
}

static void timeline_add(uint64_t t, int64_t bytes) {
  uint64_t d = t > tl.t0 ? t - tl.t0 : 0;
  while ((d >> tl.shift) >= TL_BINS) {
    for (size_t i = 0; i < TL_BINS / 2; i++) tl.delta[i] = tl.delta[2 * i] + tl.delta[2 * i + 1];
    memset(&tl.delta[TL_BINS / 2], 0, TL_BINS / 2 * sizeof tl.delta[0]);
    tl.used = (tl.used + 1) / 2;
    tl.shift++;
  }
  size_t b = (size_t)(d >> tl.shift);
  tl.delta[b] += bytes;
  if (b + 1 > tl.used) tl.used = b + 1;
}

size_t sp_memory_timeline(int64_t *end_ns, int64_t *net_bytes, size_t max) {
  size_t n = tl.used < max ? tl.used : max;
  int64_t level = 0;
  long double rate = mem__cap.tsc && mem__cap.clock_t1 > mem__cap.clock_t0
                         ? (long double)(mem__cap.clock_n1 - mem__cap.clock_n0) /
                               (long double)(mem__cap.clock_t1 - mem__cap.clock_t0)
                         : 1.0L;
  for (size_t i = 0; i < n; i++) {
    level += tl.delta[i];
    uint64_t tick = tl.t0 + ((uint64_t)(i + 1) << tl.shift);
    end_ns[i] = mem__cap.clock_n0 + (int64_t)((long double)(int64_t)(tick - mem__cap.clock_t0) * rate);
    net_bytes[i] = level;
  }
  return n;
}

static void write_block(struct wstate *ws, struct mem_block *b) {
  uint64_t nev = 0, nalloc = 0;
  for (size_t i = 0; i < b->nwords;) {
    unsigned k = b->w[i + 2] & 0xFF;
    nev++;
    int64_t u = (int64_t)b->w[i + 3];
    if (SP_MEMCAP_IS_ALLOC(k)) nalloc++;
    timeline_add(b->w[i], SP_MEMCAP_IS_ALLOC(k) ? u : -u);
    i += SP_MEMCAP_IS_ALLOC(k) ? SP_MEMCAP_ALLOC_WORDS : SP_MEMCAP_FREE_WORDS;
  }
  if (ws->err) {
    CAP.lost += nev;
    return;
  }
  /* Names and stacks the block may refer to go first. */
  put_log(ws, SP_MEMCAP_THRD, &threads);
  put_log(ws, SP_MEMCAP_REGN, &regions);
  put_stacks(ws);
  ws->raw.n = 0;
  sp__memcap_encode_events(&ws->raw, b->thread, b->w, b->nwords, ws->scratch);
  if (put_buf(ws, SP_MEMCAP_EVNT, &ws->raw) == 0) {
    CAP.events += nev;
    CAP.allocations += nalloc;
    CAP.raw_bytes += (uint64_t)b->nwords * 8;
  } else {
    CAP.lost += nev;
  }
}

MEM_HIDDEN void *mem__writer_main(void *arg) {
  (void)arg;
  mem__tls.guard = MEM_G_INTERNAL;
  struct wstate *ws = calloc(1, sizeof *ws);
  if (!ws) {
    pthread_mutex_lock(&CAP.qlock);
    CAP.writer_failed = ENOMEM;
    pthread_cond_broadcast(&CAP.qspace);
    pthread_mutex_unlock(&CAP.qlock);
    return NULL;
  }
  ws->cc = ZSTD_createCCtx();
  ws->raw.grow = NULL;
  ws->z.grow = NULL;
  /* A second clock anchor a few ms after the first, so even a short
   * capture maps ticks to ns with a precise rate. */
  struct timespec five = {0, 5 * 1000 * 1000};
  nanosleep(&five, NULL);
  put_clock(ws);
  pthread_mutex_lock(&CAP.qlock);
  for (;;) {
    while (!CAP.qhead && !CAP.stopping) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += 1;
      pthread_cond_timedwait(&CAP.qfull, &CAP.qlock, &until);
    }
    struct mem_block *b = CAP.qhead;
    if (!b) break; /* stopping and drained */
    CAP.qhead = b->next;
    if (!CAP.qhead) CAP.qtail = NULL;
    CAP.nqueued--;
    pthread_mutex_unlock(&CAP.qlock);
    write_block(ws, b);
    if (!ws->err && mem__mono_ns() - ws->last_clock_ns > 1000000000) put_clock(ws);
    pthread_mutex_lock(&CAP.qlock);
    if (ws->err) CAP.writer_failed = 1;
    b->next = CAP.pool;
    CAP.pool = b;
    pthread_cond_broadcast(&CAP.qspace);
  }
  pthread_mutex_unlock(&CAP.qlock);
  if (!ws->err) {
    put_log(ws, SP_MEMCAP_THRD, &threads);
    put_log(ws, SP_MEMCAP_REGN, &regions);
    put_stacks(ws);
    put_maps(ws);
    put_clock(ws);
    struct sp_memcap_buf st = {NULL, 0, 0, NULL, 0};
    sp__memcap_put_varint(&st, CAP.events);
    sp__memcap_put_varint(&st, CAP.allocations);
    sp__memcap_put_varint(&st, CAP.lost);
    sp__memcap_put_varint(&st, CAP.unattributed);
    sp__memcap_put_varint(&st, CAP.nblocks_peak * sizeof(struct mem_block));
    sp__memcap_put_varint(&st, CAP.waits);
    put_buf(ws, SP_MEMCAP_STAT, &st);
    free(st.p);
  }
  if (ws->err) CAP.writer_failed = ws->err;
  free(ws->raw.p);
  free(ws->z.p);
  ZSTD_freeCCtx(ws->cc);
  free(ws);
  return NULL;
}

MEM_HIDDEN int mem__writer_finish(char *err, size_t errlen) {
  pthread_mutex_lock(&CAP.qlock);
  CAP.stopping = 1;
  pthread_cond_broadcast(&CAP.qfull);
  pthread_mutex_unlock(&CAP.qlock);
  if (CAP.writer_running) pthread_join(CAP.writer, NULL);
  pthread_mutex_lock(&CAP.qlock);
  CAP.writer_running = 0;
  int failed = CAP.writer_failed;
  pthread_cond_broadcast(&CAP.qspace);
  pthread_mutex_unlock(&CAP.qlock);
  int rc = 0;
  if (failed) {
    snprintf(err, errlen, "writing the memory capture %s failed (%s); %llu events were lost", CAP.file,
             strerror(failed > 1 ? failed : EIO), (unsigned long long)CAP.lost);
    rc = -1;
  }
  if (CAP.fd >= 0 && close(CAP.fd) && !rc) {
    snprintf(err, errlen, "closing the memory capture %s failed: %s", CAP.file, strerror(errno));
    rc = -1;
  }
  CAP.fd = -1;
  return rc;
}
