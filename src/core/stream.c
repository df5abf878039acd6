/* stream.c - bounded memory for long runs (max_buffer_bytes).
 *
 * A run that would outgrow its memory budget streams: when a thread's event
 * buffer is full and growing it would pass the budget, the recording thread
 * hands the whole buffer to a writer thread and carries on in a fresh one (a
 * recycled buffer when the writer has handed one back), keeping only its
 * calls still open. The writer rebuilds the calls' tree (the same per-thread
 * pass finalize uses, so ids, parents and exclusive time are identical),
 * groups the completed calls by region and appends them as segments, each
 * behind a header, to a staging file beside the output (.<name>.stage.XXXXXX,
 * kept while the run lasts so that a crash spill can name it and recovery
 * read the streamed calls back: sp__stream_adopt). Finalize hands over what is left,
 * waits for the writer, and assembles the file from the segments a
 * row at a time (a k-way merge of the row's segments by start, longer
 * first, then call id: the in-memory writers' row order), so neither
 * side ever holds the run in memory.
 *
 * The writer also stages each block in the run's own HDF5 file (h5stage.c,
 * docs/file-format.md "Staged blocks"): its calls converted with the part
 * of the clock map no later anchor changes (finalize lets the writer
 * finish its block before it takes its end anchor and hands it the final
 * map for the rest, so every block's nanoseconds are final), coded as the file's rows (start deltas
 * from the region's last staged start), the rows' statistics accumulated.
 * Publishing then maps /events onto the blocks instead of copying the
 * events again; where that cannot apply the assembly below is the
 * fallback. A staged block is written once, to the staged file: the raw
 * staging file then holds a journal of where its segments are (struct
 * jseg), which the assembly and crash recovery read them back through.
 *
 * If the writer cannot keep up, a handoff waits up to five seconds for it;
 * after that the buffer's completed calls are dropped and counted per
 * region, written as metadata (dropped_events, dropped_by_region), never
 * silently. Not used under MPI or with an extension column in clock ticks
 * (track_async's await_ns; buffers then grow). The staging file holds an
 * event's extension columns as they are written to /events (ext_out).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/mpi_hooks.h"
#include "core/rd.h"
#include "core/snapshot.h"
#include "core/spill.h"
#include "core/source.h"
#include "core/stream.h"
#include "output/output.h"

struct seg {
  uint32_t region; /* region id */
  uint32_t thread; /* thread index */
  uint64_t count;
  uint64_t off;    /* file offset: start[count], end[count], id[count], parent[count], cols */
  uint32_t block;  /* staged: the block's datasets (h5stage.c) */
  uint64_t boff;   /* and the segment's first call in them */
  /* staged: the calls are in the staged HDF5 file only (not in the raw
   * staging file), read back through sfd at these offsets (start deltas,
   * durations, ids, parents), in nanoseconds already; the segment's first
   * delta is taken from `base` */
  int staged;
  int64_t base;
  uint64_t coff[4];
  /* staged in this run: the journal's checksums of its columns (struct
   * jseg), which reading it back checks (a recovery's were checked there) */
  int sums;
  uint64_t sum[4][2];
};

/* A region's row as the staged blocks code it (h5stage.c): the start its
 * next delta is taken from, and its statistics, accumulated as the blocks
 * are written in the order the row's segments have in the file. */
struct racc {
  uint64_t n;
  int64_t prev, shift, total, min, max, first, first_start, last, last_start, smin, emax;
  double s1, s2;
};

/* Each segment of the staging file starts with this header, so that a crash
 * spill's recovery can read back what was streamed (sp__stream_adopt). */
#define SEG_MAGIC UINT64_C(0x3130304745535053) /* "SPSEG001" */
#define SEG_HEAD 32u
struct seg_head {
  uint64_t magic;
  uint32_t region, thread;
  uint64_t count;
  uint32_t ncols, reserved;
};

/* While a run stages, the raw staging file holds no calls: it is a journal
 * of the staged blocks. First the staged file's name, then, after each
 * block's data is written and flushed, one record per segment saying where
 * its columns are in that file (offsets HDF5 gave the contiguous datasets,
 * which never move) and a checksum of each, so that recovery reads the
 * calls back without HDF5 metadata written after the crash (sp__stream_adopt). */
#define JFILE_MAGIC UINT64_C(0x3130464754535053) /* "SPSTGF01" + u64 length + the name, padded to 8 */
#define JSEG_MAGIC UINT64_C(0x3230304745535053)  /* "SPSEG002" */
struct jseg {
  uint64_t magic;
  uint32_t region, thread;
  uint64_t count;
  int64_t base;
  uint64_t coff[4];
  uint64_t sum[4][2]; /* per column: sum of the values, sum of the running sums (mod 2^64) */
};

/* A staged value finalize patches in place (a cross-thread parent, known
 * only then: build_staged), journaled before the patch: where it is in the
 * staged file, the value the block's checksum was taken over, the value
 * written. Recovery checks the checksum with the first in place of the
 * second (either may be on the disk at a crash). */
#define JPATCH_MAGIC UINT64_C(0x3130305441505053) /* "SPPAT001" */
struct jpatch {
  uint64_t magic, off;
  int64_t was, now;
};

/* The journal's checksum of n values, continued from sum[0..1]. */
static void jsum(uint64_t sum[2], const int64_t *v, uint64_t n) {
  uint64_t a = sum[0], b = sum[1];
  for (uint64_t k = 0; k < n; k++) {
    a += (uint64_t)v[k];
    b += a;
  }
  sum[0] = a;
  sum[1] = b;
}

/* What recovery needs when no spill was written (SIGKILL, the OOM killer,
 * a power loss: no handler ran), journaled by the writer thread as it
 * learns it, never on the recording threads' path. Each is one record,
 * written with one pwrite: u64 magic, u64 payload bytes, the payload padded
 * to 8, then the journal's checksum (jsum) of every word before it, so that
 * a record cut short by the kill, or its bytes not yet on the disk, fails
 * its checksum and ends the walk there (what came before stays good).
 * Strings are u32 length + bytes; everything native-endian.
 * - SPRUN001, after SPSTGF01: u32 version (1), u32 clock kind, u64 run start
 *   tick, i64 its ns, i64 start_time_ns, i32 rank, i32 job size, u32 pid,
 *   u32 n, n x (str key, str value): the resolved settings, as a spill has
 *   them (file_path and the run's metadata settings among them).
 * - SPREG001, before the first block record that uses them: u32 n, n x (u32
 *   id, u32 kind, i32 line, u32 opt-in, str name, str file, u32 ntags, ntags
 *   x str): the regions the writer has not journaled yet, by id.
 * - SPTHR001, before a thread's first block record: u32 index, u32 tid, str
 *   name.
 * - SPANC001, before each block's segment records: u64 tick, i64 ns, u64 the
 *   block: the clock anchor the writer took before that block (every call
 *   of it ended before it; the staged segments are in ns already, so this
 *   is only the run's last known instant, its end in a recovery). */
#define JRUN_MAGIC UINT64_C(0x3130304E55525053) /* "SPRUN001" */
#define JREG_MAGIC UINT64_C(0x3130304745525053) /* "SPREG001" */
#define JTHR_MAGIC UINT64_C(0x3130305248545053) /* "SPTHR001" */
#define JANC_MAGIC UINT64_C(0x313030434E415053) /* "SPANC001" */
#define JREC_VERSION 1u
#define JREC_MAX (UINT64_C(1) << 26) /* a payload's bytes at most */

static int is_jrec(uint64_t magic) {
  return magic == JRUN_MAGIC || magic == JREG_MAGIC || magic == JTHR_MAGIC || magic == JANC_MAGIC;
}

struct block {
  struct block *next;
  sp_thread_rec *t;
  struct sp_i_event *ev;
  int64_t *cols;
  uint64_t n, cap;
};

struct sp_stream {
  struct sp_manager *m;
  int fd;
  uint64_t file_end;
  struct seg *segs;
  size_t nsegs, segs_cap;
  int64_t *excl; /* ns, by region id */
  uint64_t *dropped; /* calls dropped, by region id */
  uint32_t nregions; /* size of excl and dropped */
  /* writer scratch: a block's parts by region id, their buffers (start,
   * end, id, parent; with probe columns each call's log index) */
  struct rpart *part;
  uint32_t part_cap;
  int64_t *arena, *colbuf;
  uint64_t *arena_ix;
  uint64_t arena_cap, arena_ix_cap;
  uint64_t *calls; /* completed calls streamed, by region id (running total of the run) */
  /* whether the file can leave the call ids out (struct sp_gaps): the
   * smallest gap of the run, and per thread index its latest begin and
   * its kept calls' last child starts */
  uint64_t gap_min;
  int gap_need_ids;
  struct thread_gaps {
    uint64_t prev_start;
    int any;
    struct sp_gap_frame *kept;
    size_t nkept, kept_cap;
    /* buffers the writer is done with, for the thread's next hand-offs
     * (under mu): with two here, a streaming thread's live buffer and the
     * two on their way to the writer are always the same three */
    struct spare {
      struct sp_i_event *ev;
      int64_t *cols;
      uint64_t cap;
    } spare[2];
    int nspare;
    /* bytes of the fresh buffer finalize's drain gave the thread: the next
     * run touches its pages, so its overhead counts them (sp__stream_reset) */
    uint64_t fresh_at_drain;
  } *tg;
  size_t ntg;
  pthread_mutex_t mu;
  pthread_cond_t wake, idle;
  struct block *head, *tail;
  struct block *current; /* being processed by the writer */
  uint64_t queued_bytes;
  int busy, stop;
  pthread_t th;
  int adopted; /* recovery: the crashed run's staging file */
  uint64_t blocks;
  /* The run's blocks staged in its own HDF5 file as well (h5stage.c), in
   * nanoseconds already: each block's ticks are converted with the pieces of
   * the clock map that no later anchor changes (sp__clock_final_map), the
   * blocks drained at finalize with its final map. NULL: the copy way only
   * (declined, failed, or a recovery). */
  struct sp_stage *stage;
  char stage_tmp[4096]; /* its name, for a crash to remove (async-signal safe) */
  /* the journal's records for a recovery without a spill (JRUN_MAGIC):
   * their scratch, the regions journaled (ids 1..jreg), the threads (by
   * index, 1 once journaled) */
  unsigned char *jb;
  size_t jb_len, jb_cap;
  int jb_bad;
  uint32_t jreg;
  unsigned char *jthr;
  size_t jthr_cap;
  int stage_off; /* not staged in this run */
  int staging;    /* stage is open (atomic: the hand-offs read it) */
  int sfd;        /* the staged file, to read its blocks back (the copy way, recovery); -1 */
  char sfd_name[4096]; /* its name, and the raw staging file's, for what a failed read says */
  char fd_name[4096];
  int patched;    /* cross-thread parents patched in the staged file: no checksum of that column */
  int readback_failed; /* finalize could not read the staged file back: it is kept (sp__stream_reset) */
  int stage_kept; /* stage closed but its file left by name: its blocks are the run's data */
  int stage_shed; /* a hand-off waited for the writer: stop staging (under mu) */
  int stage_stale; /* a finalize ended without writing the run: the map the blocks used may change */
  uint32_t sblocks; /* blocks staged in this run */
  /* thread ids are staged only once a second thread hands a block over (or
   * track_threads asks): the blocks before are all sthr0's, which the file
   * may not need at all (one thread) */
  int64_t sthr0;
  int sthr_all;
  struct racc *acc; /* by region id */
  struct xpatch {
    uint32_t block;
    uint64_t at;
    int64_t pid;
  } *xp; /* staged parents that are cross-thread links, resolved at finalize */
  size_t nxp, xp_cap;
  struct sp_clock_map bm; /* the block's map */
  struct sp_clock_seg *bseg;
  int64_t *sbuf; /* PART_CALLS thread ids: the thread column of its last staged block */
  int64_t sbuf_thread; /* the id it holds, -1 */
  /* finalize: between its hold (before its end anchor) and the final map
   * it hands over, a block has no map known final: the run is then not
   * staged (under mu) */
  int hold, have_final;
  uint64_t ntaken, ndone; /* blocks the writer took from the queue, and finished */
  /* A crash spill reads what a block's pass rewrites (the thread's kept
   * calls, the next call id, the cross-thread contexts, the staged file's
   * name), with no lock it may take: `own` (atomic, SP_STREAM_OWN_*) says
   * whether the writer is in a block, and which part; a block is begun only
   * while no spill is under way (m->spilling), and a spill under way waits
   * for the block in hand (sp__stream_spill_settle). own_thread: the
   * block's thread index; own_idbound: above every call id its pass can
   * give; writer_tid: the writer's kernel thread id (a spill on the writer
   * itself cannot wait for it). */
  int own;
  uint32_t own_thread;
  int64_t own_idbound;
  long writer_tid;
  /* hand-offs of this stream, those that waited for the writer, and how
   * long they waited in all (under mu; sp__stream_waits) */
  uint64_t handoffs, waits, wait_ns;
  struct sp_clock_map fin;
  struct sp_clock_seg *fin_seg;
  sp_status err;
  char errmsg[512];
};

/* Tests: the writer sleeps this long before each block (a slow disk). */
int sp__stream_test_block_delay_ms;
int sp__stream_test_in_flight;
int sp__stream_shed_wait_ms = 1000;
int sp__stream_drop_wait_ms = 5000;
void (*sp__stream_test_pass_hook)(struct sp_manager *m, uint64_t block);

/* `t` plus ms milliseconds. */
static struct timespec after_ms(struct timespec t, int ms) {
  t.tv_sec += ms / 1000;
  t.tv_nsec += (long)(ms % 1000) * 1000000;
  if (t.tv_nsec >= 1000000000) t.tv_sec++, t.tv_nsec -= 1000000000;
  return t;
}

/*====== Writer ======*/

static int grow_regions(struct sp_stream *s, uint32_t need) {
  if (need <= s->nregions) return 0;
  uint32_t cap = s->nregions ? s->nregions : 256;
  while (cap < need) cap *= 2;
  int64_t *e = realloc(s->excl, cap * sizeof *e);
  if (e) s->excl = e;
  uint64_t *d = realloc(s->dropped, cap * sizeof *d);
  if (d) s->dropped = d;
  uint64_t *c = realloc(s->calls, cap * sizeof *c);
  if (c) s->calls = c;
  struct racc *a = realloc(s->acc, cap * sizeof *a);
  if (a) s->acc = a;
  if (!e || !d || !c || !a) return -1;
  memset(s->acc + s->nregions, 0, (cap - s->nregions) * sizeof *s->acc);
  memset(s->excl + s->nregions, 0, (cap - s->nregions) * sizeof *s->excl);
  memset(s->dropped + s->nregions, 0, (cap - s->nregions) * sizeof *s->dropped);
  memset(s->calls + s->nregions, 0, (cap - s->nregions) * sizeof *s->calls);
  s->nregions = cap;
  return 0;
}

static int put_at(int fd, const void *p, size_t n, uint64_t off) {
  const char *c = p;
  while (n) {
    ssize_t w = pwrite(fd, c, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return 0;
}

static int get_at(int fd, void *p, size_t n, uint64_t off) {
  char *c = p;
  while (n) {
    ssize_t r = pread(fd, c, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    c += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* A region's part of a block: its completed calls go to its staged
 * segment (data at file offset `data`, `count` calls, column by column)
 * through a small buffer of `cap` calls at arena slot `base`, written out
 * each time it fills. */
struct rpart {
  uint64_t count, data, base, cap, fill, written, boff;
  int64_t sbase;      /* staged: the start its first delta is taken from */
  uint64_t sum[4][2]; /* and its columns' checksums (struct jseg) */
};

/* Calls a region buffers before its columns go out (32 KiB per column):
 * the values are still in cache when written, and the buffers of all
 * regions together stay small (at most this many calls per region). */
#define PART_CALLS 4096u
#define PART_CALLS_ ((uint64_t)PART_CALLS)

struct emit_ctx {
  struct sp_stream *s;
  const struct block *b;
  int ncols;
  sp_status st;
  int staged;    /* the block goes to the staged file only */
  int sthreads;  /* with its thread ids */
  int stage_err; /* staging this block failed: its calls are dropped, the run goes the copy way */
  const struct sp_gaps *gaps; /* where the pass keeps the emitted call's ns (s0, e0) */
};

/* Region r's buffered calls (emit_staged: starts and ends in ns on the
 * block's map, ids, parents) coded in place as the file's rows have them
 * (start deltas from the row's last staged start, durations), the rows'
 * statistics and the journal's checksums taken in the same pass, with
 * everything it accumulates in locals (through the struct, each store to
 * the buffer could alias them), then into the block's staged datasets. */
static void stage_part(struct emit_ctx *e, uint32_t r, uint64_t n) {
  struct sp_stream *s = e->s;
  struct rpart *q = &s->part[r];
  struct racc A = s->acc[r];
  int64_t *v0 = s->arena + 4 * q->base, *v1 = v0 + q->cap, *v2 = v1 + q->cap, *v3 = v2 + q->cap;
  const uint64_t at = q->boff + q->written;
  uint64_t k = 0;
  if (!q->written) q->sbase = A.n ? A.prev : 0;
  if (!A.n) { /* the row's first call: its start as is, then deltas */
    int64_t s0 = v0[0], e0 = v1[0], d = e0 - s0;
    A.shift = A.first = A.min = A.max = A.last = d;
    A.first_start = A.last_start = A.smin = s0;
    A.emax = e0;
    A.prev = s0;
    v1[0] = d;
    A.total += d;
    A.s1 += 0.0; /* x = d - shift = 0 */
    A.s2 += 0.0;
    k = 1;
  }
  uint64_t a0 = q->sum[0][0], b0 = q->sum[0][1], a1 = q->sum[1][0], b1 = q->sum[1][1];
  uint64_t a2 = q->sum[2][0], b2 = q->sum[2][1], a3 = q->sum[3][0], b3 = q->sum[3][1];
  if (k) { /* the first call's checksum terms */
    a0 += (uint64_t)v0[0], b0 += a0, a1 += (uint64_t)v1[0], b1 += a1;
    a2 += (uint64_t)v2[0], b2 += a2, a3 += (uint64_t)v3[0], b3 += a3;
  }
  int xparents = 0;
  for (; k < n; k++) {
    int64_t s0 = v0[k], e0 = v1[k], d = e0 - s0; /* e0 >= s0: the pass clamps it */
    int64_t delta = (int64_t)((uint64_t)s0 - (uint64_t)A.prev);
    A.prev = s0;
    v0[k] = delta;
    v1[k] = d;
    /* the statistics as the copy way's merge makes them (first: the earliest
     * start; last: the latest; mean and m2 from sums shifted by a duration) */
    if (s0 < A.first_start) A.first = d, A.first_start = s0;
    if (s0 >= A.last_start) A.last = d, A.last_start = s0;
    if (d < A.min) A.min = d;
    if (d > A.max) A.max = d;
    if (s0 < A.smin) A.smin = s0;
    if (e0 > A.emax) A.emax = e0;
    A.total += d;
    double x = (double)(d - A.shift);
    A.s1 += x;
    A.s2 += x * x;
    a0 += (uint64_t)delta, b0 += a0, a1 += (uint64_t)d, b1 += a1;
    a2 += (uint64_t)v2[k], b2 += a2, a3 += (uint64_t)v3[k], b3 += a3;
    xparents |= v3[k] <= -2;
  }
  A.n += n;
  s->acc[r] = A;
  q->sum[0][0] = a0, q->sum[0][1] = b0, q->sum[1][0] = a1, q->sum[1][1] = b1;
  q->sum[2][0] = a2, q->sum[2][1] = b2, q->sum[3][0] = a3, q->sum[3][1] = b3;
  for (uint64_t j = 0; xparents && j < n && !e->stage_err; j++) {
    if (v3[j] > -2) continue;
    if (s->nxp == s->xp_cap) { /* a cross-thread parent: known at finalize */
      size_t cap = s->xp_cap ? s->xp_cap * 2 : 64;
      struct xpatch *np = realloc(s->xp, cap * sizeof *np);
      if (!np) {
        e->stage_err = 1;
        break;
      }
      s->xp = np;
      s->xp_cap = cap;
    }
    s->xp[s->nxp++] = (struct xpatch){s->sblocks, at + j, v3[j]};
  }
  for (int c = 0; c < 4 && !e->stage_err; c++)
    if (sp__stage_put(s->stage, c, at, n, v0 + (uint64_t)c * q->cap) != 0) e->stage_err = 1;
  if (e->sthreads && !e->stage_err && sp__stage_put(s->stage, SP_STAGE_NCOLS - 1, at, n, s->sbuf) != 0)
    e->stage_err = 1;
}

/* Write region r's buffered calls to their place in its segment. */
static void part_flush(struct emit_ctx *e, uint32_t r) {
  struct sp_stream *s = e->s;
  struct rpart *q = &s->part[r];
  uint64_t n = q->fill;
  q->fill = 0;
  if (!n || e->st != SP_OK) return;
  if (e->staged) { /* the staged file only: no second copy in the raw staging file */
    if (s->stage && !e->stage_err) stage_part(e, r, n);
    q->written += n;
    return;
  }
  const int64_t *v = s->arena + 4 * q->base;
  for (int c = 0; c < 4 && e->st == SP_OK; c++)
    if (put_at(s->fd, v + (uint64_t)c * q->cap, n * 8, q->data + ((uint64_t)c * q->count + q->written) * 8) != 0)
      e->st = sp__set_error(SP_ERR_IO, "stream: writing the staging file failed: %s (disk full?)", strerror(errno));
  /* probe columns: gathered through the calls' log indices */
  uint64_t stride = (uint64_t)s->m->ext_stride;
  for (int p = 0; p < e->ncols && e->st == SP_OK; p++) {
    uint64_t at = (uint64_t)s->m->ext_out[p];
    const uint64_t *ix = s->arena_ix + q->base;
    for (uint64_t k = 0; k < n; k++) s->colbuf[k] = e->b->cols[ix[k] * stride + at];
    if (put_at(s->fd, s->colbuf, n * 8, q->data + ((uint64_t)(4 + p) * q->count + q->written) * 8) != 0)
      e->st = sp__set_error(SP_ERR_IO, "stream: writing the staging file failed: %s (disk full?)", strerror(errno));
  }
  q->written += n;
}

/* The tree pass emits the completed calls in log order, each to its
 * region's buffer: the block is read once, in order, and the segments are
 * written from values still in cache (gathering them region by region
 * afterwards read the block once per region, a cache miss per call). */
static void emit_scratch(void *ctx, uint64_t i, int64_t id, int64_t parent_id, uint32_t region) {
  struct emit_ctx *e = ctx;
  struct sp_stream *s = e->s;
  struct rpart *q = &s->part[region];
  uint64_t k = q->fill++;
  int64_t *v = s->arena + 4 * q->base + k;
  v[0] = (int64_t)e->b->ev[i].start;
  v[q->cap] = (int64_t)e->b->ev[i].end;
  v[2 * q->cap] = id;
  v[3 * q->cap] = parent_id;
  if (e->ncols) s->arena_ix[q->base + k] = i;
  if (q->fill == q->cap) part_flush(e, region);
}

/* A staged block's calls are buffered in the nanoseconds the pass converted
 * them to on the block's map (process_block makes it the pass's map), so
 * that stage_part codes them without converting any tick again (before:
 * ticks buffered, converted again, coded into a second buffer and summed
 * from it, 138 instructions a call of the writer's 466, callgrind). */
static void emit_staged(void *ctx, uint64_t i, int64_t id, int64_t parent_id, uint32_t region) {
  (void)i;
  struct emit_ctx *e = ctx;
  struct sp_stream *s = e->s;
  struct rpart *q = &s->part[region];
  uint64_t k = q->fill++;
  int64_t *v = s->arena + 4 * q->base + k;
  v[0] = *e->gaps->s0;
  v[q->cap] = *e->gaps->e0;
  v[2 * q->cap] = id;
  v[3 * q->cap] = parent_id;
  if (q->fill == q->cap) part_flush(e, region);
}

/* Grow a per-thread table to hold index `i`. */
static int grow_threads(struct sp_stream *s, uint32_t i) {
  if (i < s->ntg) return 0;
  size_t n = (size_t)i + 16;
  struct thread_gaps *tg = realloc(s->tg, n * sizeof *tg);
  if (!tg) return -1;
  memset(tg + s->ntg, 0, (n - s->ntg) * sizeof *tg);
  s->tg = tg;
  s->ntg = n;
  return 0;
}

/* Per-region parts of a block (its completed calls counted, segments
 * placed after the file's end in region order, buffers in the arena). */
static sp_status parts_plan(struct sp_stream *s, const struct block *b, uint32_t maxid, int ncols,
                            uint64_t *maxtick, uint64_t *ncalls) {
  if (maxid + 1 > s->part_cap) {
    struct rpart *p = realloc(s->part, ((size_t)maxid + 1) * sizeof *p);
    if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
    s->part = p;
    s->part_cap = maxid + 1;
  }
  memset(s->part, 0, ((size_t)maxid + 1) * sizeof *s->part);
  uint64_t top = 0;
  for (uint64_t i = 0; i < b->n; i++)
    if (b->ev[i].end && b->ev[i].region) {
      s->part[b->ev[i].region].count++;
      if (b->ev[i].end > top) top = b->ev[i].end;
    }
  *maxtick = top;
  uint64_t off = s->file_end, slots = 0, nc = 4 + (uint64_t)ncols, boff = 0;
  for (uint32_t r = 1; r <= maxid; r++) {
    struct rpart *q = &s->part[r];
    if (!q->count) continue;
    q->boff = boff;
    boff += q->count;
    q->data = off + SEG_HEAD;
    off = q->data + q->count * 8 * nc;
    q->base = slots;
    q->cap = q->count < PART_CALLS ? q->count : PART_CALLS;
    slots += q->cap;
  }
  if (slots > s->arena_cap) {
    int64_t *a = realloc(s->arena, slots * 4 * sizeof *a);
    if (!a) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
    s->arena = a;
    s->arena_cap = slots;
  }
  if (ncols && slots > s->arena_ix_cap) {
    uint64_t *x = realloc(s->arena_ix, slots * sizeof *x);
    if (!x) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
    s->arena_ix = x;
    s->arena_ix_cap = slots;
  }
  if (ncols && !s->colbuf && !(s->colbuf = malloc(PART_CALLS * sizeof *s->colbuf)))
    return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
  *ncalls = boff;
  return SP_OK;
}

/* HDF5 1.10 holds about 8 KiB per mapping while it creates a virtual
 * dataset (measured: 7039 segments x 4 columns grew the peak RSS by 220 MiB,
 * the mappings freed only at exit): past an eighth of the memory budget in
 * mappings, the run goes the copy way, whose memory does not grow with the
 * blocks. The default budget (1 GiB) allows 3276 segments (e.g. 100 blocks
 * of 32 regions). */
#define STAGE_MAP_BYTES 8192u
static int stage_too_many(const struct sp_stream *s) {
  return (uint64_t)s->nsegs * SP_STAGE_NCOLS * STAGE_MAP_BYTES > (uint64_t)s->m->cfg.max_buffer_bytes / 8;
}

/* The run goes the copy way from here on. Blocks it staged already are
 * in the staged file only: the file stays (closed, read through sfd; a
 * crash keeps it for recovery) until the run is written; with none, it is
 * removed now. */
static void stage_stop(struct sp_stream *s) {
  __atomic_store_n(&s->staging, 0, __ATOMIC_RELAXED);
  if (s->sblocks && s->sfd >= 0) {
    sp__stage_close(s->stage, 1);
    s->stage_kept = 1;
  } else {
    __atomic_store_n(&s->stage_tmp[0], 0, __ATOMIC_RELAXED);
    sp__stage_discard(s->stage);
    if (s->sfd >= 0) close(s->sfd);
    s->sfd = -1;
  }
  s->stage = NULL;
  s->stage_off = 1;
}

/* A record's payload, built in s->jb (jb_bad once out of memory). */
static void jb_put(struct sp_stream *s, const void *p, size_t n) {
  if (s->jb_bad || n == 0) return; /* p may be null then (an empty setting) */
  if (s->jb_len + n + 32 > s->jb_cap) {
    size_t cap = s->jb_cap ? s->jb_cap : 4096;
    while (cap < s->jb_len + n + 32) cap *= 2;
    unsigned char *b = realloc(s->jb, cap);
    if (!b) {
      s->jb_bad = 1;
      return;
    }
    s->jb = b;
    s->jb_cap = cap;
  }
  memcpy(s->jb + s->jb_len, p, n);
  s->jb_len += n;
}
static void jb_u32(struct sp_stream *s, uint32_t v) { jb_put(s, &v, sizeof v); }
static void jb_u64(struct sp_stream *s, uint64_t v) { jb_put(s, &v, sizeof v); }
static void jb_str(struct sp_stream *s, const char *v) {
  size_t n = v ? strlen(v) : 0;
  jb_u32(s, (uint32_t)n);
  jb_put(s, v, n);
}
/* The record begun at s->jb (16 bytes of head reserved by jb_begin)
 * appended to the journal in one write. 0 or -1. */
static void jb_begin(struct sp_stream *s, uint64_t magic) {
  s->jb_len = 0;
  s->jb_bad = 0;
  jb_u64(s, magic);
  jb_u64(s, 0);
}
static int jb_end(struct sp_stream *s) {
  static const unsigned char zeros[8];
  uint64_t len = s->jb_len - 16;
  jb_put(s, zeros, (8 - len % 8) % 8);
  if (s->jb_bad || len > JREC_MAX) return -1;
  memcpy(s->jb + 8, &len, 8);
  uint64_t sum[2] = {0, 0};
  for (size_t k = 0; k < s->jb_len; k += 8) {
    int64_t w;
    memcpy(&w, s->jb + k, 8);
    jsum(sum, &w, 1);
  }
  jb_u64(s, sum[0]);
  jb_u64(s, sum[1]);
  if (s->jb_bad || put_at(s->fd, s->jb, s->jb_len, s->file_end) != 0) return -1;
  s->file_end += s->jb_len;
  return 0;
}

/* The staged file's name, first in the journal, then the run's identity
 * (SPRUN001). 0 or -1. */
static int journal_start(struct sp_stream *s) {
  const char *path = sp__stage_path(s->stage);
  uint64_t len = strlen(path), pad = (8 - len % 8) % 8, head[2] = {JFILE_MAGIC, len};
  static const char zeros[8];
  if (put_at(s->fd, head, sizeof head, s->file_end) != 0 || put_at(s->fd, path, len, s->file_end + 16) != 0 ||
      (pad && put_at(s->fd, zeros, pad, s->file_end + 16 + len) != 0))
    return -1;
  s->file_end += 16 + len + pad;
  struct sp_manager *m = s->m;
  s->jreg = 0;
  if (s->jthr) /* memset of a null pointer is undefined even for 0 bytes */
    memset(s->jthr, 0, s->jthr_cap);
  jb_begin(s, JRUN_MAGIC);
  jb_u32(s, JREC_VERSION);
  jb_u32(s, (uint32_t)sp_i_clock_tsc);
  jb_u64(s, m->run_tick0);
  jb_u64(s, (uint64_t)m->run_ns0);
  jb_u64(s, (uint64_t)m->cfg.start_time_ns);
  jb_u32(s, (uint32_t)m->spill_rank);
  jb_u32(s, (uint32_t)m->spill_size);
  jb_u32(s, (uint32_t)getpid());
  jb_u32(s, SP__NSETTINGS);
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    jb_str(s, sp_setting_name(i));
    jb_str(s, m->cfg.text[i] ? m->cfg.text[i] : "");
  }
  return jb_end(s);
}

/* Before a block's segment records: its anchor, then the regions up to
 * maxid and the block's thread where the journal does not have them yet.
 * 0 or -1 (the journal then cannot be recovered without a spill; the run
 * itself is not harmed). */
static int journal_known(struct sp_stream *s, const sp_thread_rec *t, uint32_t maxid, uint64_t tick, int64_t ns) {
  jb_begin(s, JANC_MAGIC);
  jb_u64(s, tick);
  jb_u64(s, (uint64_t)ns);
  jb_u64(s, s->sblocks);
  if (jb_end(s) != 0) return -1;
  if (maxid > s->jreg) {
    uint32_t upto = s->jreg;
    while (upto < maxid && sp__region_info(upto + 1)) upto++;
    jb_begin(s, JREG_MAGIC);
    jb_u32(s, upto - s->jreg);
    for (uint32_t id = s->jreg + 1; id <= upto; id++) {
      const struct sp_region_info *ri = sp__region_info(id);
      jb_u32(s, id);
      jb_u32(s, (uint32_t)ri->kind);
      jb_u32(s, (uint32_t)ri->line);
      jb_u32(s, (uint32_t)__atomic_load_n(&ri->opt_in, __ATOMIC_RELAXED));
      jb_str(s, ri->name);
      jb_str(s, ri->file);
      jb_u32(s, (uint32_t)ri->ntags);
      for (size_t k = 0; k < ri->ntags; k++) jb_str(s, ri->tags[k]);
    }
    if (jb_end(s) != 0) return -1;
    s->jreg = upto;
  }
  if (t->index >= s->jthr_cap) {
    size_t cap = s->jthr_cap ? s->jthr_cap : 64;
    while (cap <= t->index) cap *= 2;
    unsigned char *j = realloc(s->jthr, cap);
    if (!j) return -1;
    memset(j + s->jthr_cap, 0, cap - s->jthr_cap);
    s->jthr = j;
    s->jthr_cap = cap;
  }
  if (!s->jthr[t->index]) {
    jb_begin(s, JTHR_MAGIC);
    jb_u32(s, t->index);
    jb_u32(s, (uint32_t)t->tid);
    jb_str(s, t->name);
    if (jb_end(s) != 0) return -1;
    s->jthr[t->index] = 1;
  }
  return 0;
}

/* The block's map (s->bm): finalize's final map once it has handed it over,
 * else the pieces no later anchor changes, which must cover every tick of
 * the block (the anchor the writer just noted comes after them; one noted
 * out of order by another thread is skipped, so note again). -1: no map
 * is final for this block yet. */
static int block_map(struct sp_stream *s, uint64_t maxtick) {
  pthread_mutex_lock(&s->mu);
  int fin = s->have_final;
  if (fin) s->bm = s->fin;
  pthread_mutex_unlock(&s->mu);
  if (fin) return 0;
  for (int tries = 0; tries < 3; tries++) {
    free(s->bseg);
    uint64_t until = 0;
    s->bseg = sp__clock_final_map(s->m, &s->bm, &until);
    if (maxtick < until) return 0;
    sp__clock_note(s->m);
  }
  return -1;
}

/* HDF5 closes every file it has open in an atexit handler it registers
 * when it first runs: for a run that stages, in the writer's first block,
 * after the profiler's exit hook was registered, so it runs before that
 * hook. A block the writer was staging then failed midway and was dropped
 * (600,000 calls, exit right after the last: 131,072 dropped, the blocks
 * in flight). Registered once the staged file exists, this runs before
 * HDF5's handler: each active run's writer finishes the blocks handed to
 * it (as the exit hook's finalize would wait for them), for at most twice
 * the drop's wait. */
static void writers_settle(void) {
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    struct sp_manager *m = sp__live_manager(i);
    struct sp_stream *s = m && __atomic_load_n(&m->run_active, __ATOMIC_ACQUIRE)
                              ? __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE)
                              : NULL;
    if (!s || s->adopted) continue;
    struct timespec now, until;
    clock_gettime(CLOCK_REALTIME, &now);
    until = after_ms(now, 2 * sp__stream_drop_wait_ms);
    pthread_mutex_lock(&s->mu);
    while ((s->head || s->busy) && pthread_cond_timedwait(&s->idle, &s->mu, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&s->mu);
  }
}
static pthread_once_t settle_once = PTHREAD_ONCE_INIT;
static void register_settle(void) { atexit(writers_settle); }

/* Whether this run can stage its blocks (the first block asks): h5stage.c
 * declines what its file cannot be, the probe columns are not staged. */
static void stage_begin(struct sp_stream *s) {
  struct sp_manager *m = s->m;
  const char *why = NULL;
  if (s->adopted || m->ext_nout || m->cfg.aggregation_mode || m->cfg.deactivate_file_output)
    s->stage_off = 1;
  else if (!(s->sbuf || ((s->sbuf_thread = -1), (s->sbuf = malloc((size_t)PART_CALLS * sizeof *s->sbuf)))) ||
           !(s->stage = sp__stage_open(&m->cfg, m->cfg.file_path, &why)))
    s->stage_off = 1;
  else if (strlen(sp__stage_path(s->stage)) < sizeof s->stage_tmp)
    memcpy(s->stage_tmp, sp__stage_path(s->stage), strlen(sp__stage_path(s->stage)) + 1);
  if (s->stage) snprintf(s->sfd_name, sizeof s->sfd_name, "%s", sp__stage_path(s->stage));
  if (s->stage && ((s->sfd = open(sp__stage_path(s->stage), O_RDONLY | O_CLOEXEC)) < 0 || journal_start(s) != 0)) {
    stage_stop(s); /* (no blocks yet: removed) */
    return;
  }
  if (s->stage) __atomic_store_n(&s->staging, 1, __ATOMIC_RELAXED);
  if (s->stage) pthread_once(&settle_once, register_settle);
}

static int add_seg(struct sp_stream *s, const struct seg *g) {
  if (s->nsegs == s->segs_cap) {
    size_t cap = s->segs_cap ? s->segs_cap * 2 : 256;
    struct seg *n = realloc(s->segs, cap * sizeof *n);
    if (!n) return -1;
    s->segs = n;
    s->segs_cap = cap;
  }
  s->segs[s->nsegs++] = *g;
  return 0;
}

/* Every completed call of a block is emitted once; fewer is a bug. */
static sp_status short_block(const struct rpart *q, uint32_t r, const char *went) {
  return sp__set_error(SP_ERR_IO,
                       "stream: only %llu of region %u's %llu completed calls of a block %s (a bug: please report it)",
                       (unsigned long long)q->written, (unsigned)r, (unsigned long long)q->count, went);
}

/* The writer alone counts blocks; a fatal-signal handler reads the count
 * without the lock (sp__stream_blocks_now), so it is stored atomically. */
static void count_block(struct sp_stream *s) { __atomic_store_n(&s->blocks, s->blocks + 1, __ATOMIC_RELAXED); }

/* A staged block is whole: its file flushed, then its segments' records
 * appended to the journal. A block that could not be staged whole is in
 * neither file: its calls are dropped (counted per region, as a hand-off
 * that waits too long drops them) and the run goes the copy way. */
static sp_status journal_block(struct sp_stream *s, struct emit_ctx *ec, uint32_t maxid, uint64_t tick1,
                               int64_t ns1) {
  uint64_t off[SP_STAGE_NCOLS];
  int bad = ec->stage_err || !s->stage || sp__stage_end_block(s->stage, off) != 0;
  uint64_t ncalls = 0;
  for (uint32_t r = 1; r <= maxid; r++) ncalls += s->part[r].count;
  for (int c = 0; c < 4 && ncalls; c++) bad |= off[c] == UINT64_MAX;
  /* (a journal that cannot say these is still one a spill recovers) */
  if (!bad && ncalls) (void)journal_known(s, ec->b->t, maxid, tick1, ns1);
  for (uint32_t r = 1; r <= maxid && !bad; r++) {
    const struct rpart *q = &s->part[r];
    if (!q->count) continue;
    if (q->written != q->count) return short_block(q, r, "were staged");
    struct jseg j = {JSEG_MAGIC, r, ec->b->t->index, q->count, q->sbase, {0}, {{0}}};
    struct seg g = {r, ec->b->t->index, q->count, 0, s->sblocks, q->boff, 1, q->sbase, {0}, 0, {{0}}};
    g.sums = 1;
    for (int c = 0; c < 4; c++) {
      j.coff[c] = g.coff[c] = off[c] + q->boff * 8;
      j.sum[c][0] = g.sum[c][0] = q->sum[c][0];
      j.sum[c][1] = g.sum[c][1] = q->sum[c][1];
    }
    if (put_at(s->fd, &j, sizeof j, s->file_end) != 0)
      return sp__set_error(SP_ERR_IO, "stream: writing the staging journal failed: %s (disk full?)", strerror(errno));
    s->file_end += sizeof j;
    if (add_seg(s, &g) != 0) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
  }
  if (bad) {
    for (uint32_t r = 1; r <= maxid; r++) s->dropped[r] += s->part[r].count;
    stage_stop(s);
    count_block(s);
    return SP_OK;
  }
  count_block(s);
  __atomic_store_n(&s->sblocks, s->sblocks + 1, __ATOMIC_RELEASE);
  if (stage_too_many(s)) stage_stop(s);
  return SP_OK;
}

/* Append one block's completed calls as per-region segments. */
static sp_status process_block(struct sp_stream *s, struct block *b) {
  struct sp_manager *m = s->m;
  sp_thread_rec *t = b->t;
  uint32_t maxid = sp__region_max_id();
  if (grow_regions(s, maxid + 1) != 0) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
  int ncols = m->ext_nout, nc = 4 + ncols;
  uint64_t maxtick = 0, ncalls = 0;
  sp_status st = parts_plan(s, b, maxid, ncols, &maxtick, &ncalls);
  if (st != SP_OK) return st;
  pthread_mutex_lock(&s->mu); /* the hand-off side reads tg[] for spares */
  int grown = grow_threads(s, t->index);
  pthread_mutex_unlock(&s->mu);
  if (grown != 0) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
  /* A provisional clock map for exclusive time; timestamps stay raw ticks
   * until the final map is known at finalize. */
  uint64_t tick1;
  int64_t ns1;
  sp__clock_anchor(&tick1, &ns1);
  struct sp_clock_map cm = sp__clock_map(m->run_tick0, m->run_ns0, tick1, ns1);
  sp__clock_note(m); /* and one for the run's final map, at every block */
  struct emit_ctx ec = {s, b, ncols, SP_OK, 0, 0, 0, NULL};
  if (!s->adopted) {
    pthread_mutex_lock(&s->mu);
    int stale = s->stage_stale;
    s->stage_stale = 0;
    /* handed over while a finalize is between its hold and its final map
     * (another thread still recording): no map is known final for it */
    int held = s->hold && !s->have_final, shed = s->stage_shed;
    pthread_mutex_unlock(&s->mu);
    if (sp__stream_test_block_delay_ms) {
      struct timespec d = {sp__stream_test_block_delay_ms / 1000, (long)(sp__stream_test_block_delay_ms % 1000) * 1000000};
      nanosleep(&d, NULL);
    }
    if ((stale || held || shed) && s->stage) stage_stop(s);
    if (shed) s->stage_off = 1;
    if (!s->stage && !s->stage_off && s->blocks == 0 && !held) stage_begin(s);
    /* The block's nanoseconds are final once its map is: its exclusive
     * times then agree with the durations the file gets. */
    if (!held && block_map(s, maxtick) == 0) cm = s->bm;
    else if (s->stage) stage_stop(s);
    if (s->stage) {
      if (m->cfg.track_threads || (s->sthr0 >= 0 && s->sthr0 != (int64_t)t->index))
        __atomic_store_n(&s->sthr_all, 1, __ATOMIC_RELAXED); /* the hand-offs read it */
      if (s->sthr0 < 0) s->sthr0 = (int64_t)t->index;
      ec.sthreads = s->sthr_all;
      if (ec.sthreads && s->sbuf_thread != (int64_t)t->index) {
        for (uint64_t k = 0; k < PART_CALLS; k++) s->sbuf[k] = (int64_t)t->index;
        s->sbuf_thread = (int64_t)t->index;
      }
      if (sp__stage_block(s->stage, s->sblocks, ncalls, ec.sthreads) != 0) stage_stop(s);
    }
  } else if (s->stage) {
    stage_stop(s);
  }
  ec.staged = s->stage != NULL;
  struct sp_carry *carry = NULL;
  size_t ncarry = 0;
  struct thread_gaps *tg = &s->tg[t->index];
  struct sp_gaps gaps = {s->gap_min, s->gap_need_ids, tg->prev_start, tg->any, tg->kept, tg->nkept, NULL, NULL};
  ec.gaps = &gaps;
  st = sp__thread_pass_alone(m, t, b->ev, b->n, &cm, s->excl, ec.staged ? emit_staged : emit_scratch, &ec, &carry,
                             &ncarry, &gaps);
  if (st != SP_OK) return st;
  if (sp__stream_test_pass_hook) sp__stream_test_pass_hook(m, s->blocks);
  s->gap_min = gaps.min;
  s->gap_need_ids = gaps.need_ids;
  tg->prev_start = gaps.prev_start;
  tg->any = gaps.any;
  if (ncarry > tg->kept_cap) {
    struct sp_gap_frame *l = realloc(tg->kept, ncarry * sizeof *l);
    if (!l) {
      free(carry);
      return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
    }
    tg->kept = l;
    tg->kept_cap = ncarry;
  }
  for (size_t k = 0; k < ncarry; k++) tg->kept[k] = carry[k].gf;
  tg->nkept = ncarry;
  /* The calls open at the end of this block are the kept calls at the front
   * of the thread's next block: their ids and parked child time move on. */
  if (ncarry > t->kept_cap) {
    int64_t *ids = realloc(t->kept_ids, ncarry * sizeof *ids);
    if (ids) t->kept_ids = ids;
    int64_t *ch = realloc(t->kept_child, ncarry * sizeof *ch);
    if (ch) t->kept_child = ch;
    if (!ids || !ch) {
      free(carry);
      return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
    }
    t->kept_cap = (uint32_t)ncarry;
  }
  for (size_t k = 0; k < ncarry; k++) {
    t->kept_ids[k] = carry[k].id;
    t->kept_child[k] = carry[k].pending;
  }
  t->nkept = (uint32_t)ncarry;
  free(carry);
  /* the kept calls, the call ids and the contexts are final for this block */
  __atomic_store_n(&s->own, SP_STREAM_OWN_KEPT, __ATOMIC_RELEASE);

  /* The rest of each region's calls, then the headers, in file order, each
   * after all of the block's data: a block the process died writing ends
   * the staging file at its first segment without a header. */
  for (uint32_t r = 1; r <= maxid; r++) part_flush(&ec, r);
  st = ec.st;
  if (ec.staged) return st == SP_OK ? journal_block(s, &ec, maxid, tick1, ns1) : st;
  for (uint32_t r = 1; r <= maxid && st == SP_OK; r++) {
    const struct rpart *q = &s->part[r];
    if (!q->count) continue;
    if (q->written != q->count) return short_block(q, r, "reached the staging file");
    if (s->nsegs == s->segs_cap) {
      size_t cap = s->segs_cap ? s->segs_cap * 2 : 256;
      struct seg *n = realloc(s->segs, cap * sizeof *n);
      if (!n) return sp__set_error(SP_ERR_NO_MEMORY, "stream: out of memory");
      s->segs = n;
      s->segs_cap = cap;
    }
    struct seg_head h = {SEG_MAGIC, r, t->index, q->count, (uint32_t)ncols, 0};
    if (put_at(s->fd, &h, sizeof h, q->data - SEG_HEAD) != 0)
      return sp__set_error(SP_ERR_IO, "stream: writing the staging file failed: %s (disk full?)", strerror(errno));
    s->segs[s->nsegs++] = (struct seg){r, t->index, q->count, q->data, s->sblocks, q->boff, 0, 0, {0}, 0, {{0}}};
    s->file_end = q->data + q->count * 8 * (uint64_t)nc;
  }
  count_block(s);
  return st;
}

/* Keep a processed buffer for its thread's next hand-off (under mu): its
 * pages are resident, where a fresh buffer's fault on first touch in the
 * recording thread (about a microsecond per 4 KiB here). 0 when there is no
 * room: the caller frees it, outside the lock. */
static int recycle(struct sp_stream *s, struct block *b) {
  struct thread_gaps *tg = b->t->index < s->ntg ? &s->tg[b->t->index] : NULL;
  if (!tg || tg->nspare == 2) return 0;
  tg->spare[tg->nspare++] = (struct spare){b->ev, b->cols, b->cap};
  return 1;
}

/* The writer takes a block (its thread's kept calls, the call ids and the
 * contexts are its to rewrite) only while no spill is under way: announced
 * first, then m->spilling looked at (both sequentially consistent, as the
 * spill's raise and its look at `own`), so that either the spill sees the
 * block owned and waits for it, or the writer sees the spill and waits for
 * it to end (a fatal signal's spill ends in the process's death). */
static void own_begin(struct sp_stream *s, const struct block *b) {
  struct sp_manager *m = s->m;
  __atomic_store_n(&s->own_thread, b->t->index, __ATOMIC_RELAXED);
  /* every begin in the block takes at most one id */
  __atomic_store_n(&s->own_idbound, m->next_callid + (int64_t)b->n, __ATOMIC_RELAXED);
  for (;;) {
    __atomic_store_n(&s->own, SP_STREAM_OWN_PASS, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&m->spilling, __ATOMIC_SEQ_CST)) return;
    __atomic_store_n(&s->own, SP_STREAM_OWN_NONE, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&m->spilling, __ATOMIC_ACQUIRE)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
}

int sp__stream_spill_settle(const struct sp_manager *m, uint32_t *thread, int64_t *idbound) {
  const struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) return SP_STREAM_OWN_NONE;
  int own = __atomic_load_n(&s->own, __ATOMIC_SEQ_CST);
  /* on the writer itself (a crash in its block) nothing can change */
  int self = syscall(SYS_gettid) == __atomic_load_n(&s->writer_tid, __ATOMIC_RELAXED);
  for (int ms = 0; own != SP_STREAM_OWN_NONE && !self && ms < sp__stream_drop_wait_ms; ms++) {
    nanosleep(&(struct timespec){0, 1000000}, NULL);
    own = __atomic_load_n(&s->own, __ATOMIC_ACQUIRE);
  }
  *thread = __atomic_load_n(&s->own_thread, __ATOMIC_RELAXED);
  *idbound = __atomic_load_n(&s->own_idbound, __ATOMIC_RELAXED);
  return own;
}

static void *writer(void *arg) {
  struct sp_stream *s = arg;
  __atomic_store_n(&s->writer_tid, (long)syscall(SYS_gettid), __ATOMIC_RELAXED);
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->wake, &s->mu);
    if (!s->head && s->stop) break;
    struct block *b = s->head;
    __atomic_store_n(&s->head, b->next, __ATOMIC_RELAXED); /* (sp__stream_blocks_now) */
    if (!s->head) s->tail = NULL;
    __atomic_store_n(&s->busy, 1, __ATOMIC_RELAXED); /* (sp__stream_idle_now) */
    s->ntaken++;
    __atomic_store_n(&s->current, b, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->mu);
    size_t seg0 = s->nsegs;
    if (s->err == SP_OK) own_begin(s, b);
    sp_status st = s->err == SP_OK ? process_block(s, b) : SP_OK;
    uint64_t bytes = b->cap * sizeof *b->ev;
    if (st != SP_OK) {
      snprintf(s->errmsg, sizeof s->errmsg, "%s", sp_last_error());
      s->err = st;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t g = seg0; g < s->nsegs; g++) s->calls[s->segs[g].region] += s->segs[g].count;
    __atomic_store_n(&s->current, NULL, __ATOMIC_RELAXED); /* counted in s->calls from here on */
    int kept = recycle(s, b);
    s->queued_bytes -= bytes;
    __atomic_store_n(&s->busy, 0, __ATOMIC_RELAXED);
    s->ndone++;
    /* (after busy and current: a spill that waited for this block finds
     * the writer idle, the block's calls durable) */
    __atomic_store_n(&s->own, SP_STREAM_OWN_NONE, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&s->idle);
    if (!kept) {
      pthread_mutex_unlock(&s->mu);
      free(b->ev);
      free(b->cols);
      pthread_mutex_lock(&s->mu);
    }
    free(b);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static struct sp_stream *stream_open(struct sp_manager *m) {
  struct sp_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->m = m;
  s->fd = -1;
  s->sfd = -1;
  s->sthr0 = -1;
  s->sbuf_thread = -1;
  s->gap_min = UINT64_MAX;
  /* The staging file lives beside the output (same file system as the final
   * write), else in TMPDIR. It keeps its name while the run lasts, so that a
   * crash spill can name it and `recover` read back what was streamed; it
   * is removed when the run is written, the manager destroyed, or the
   * process exits. */
  char *copy = sp__strdup(m->cfg.file_path);
  const char *base = copy && strrchr(m->cfg.file_path, '/') ? strrchr(m->cfg.file_path, '/') + 1 : m->cfg.file_path;
  const char *dirs[] = {copy ? dirname(copy) : ".", getenv("TMPDIR"), "/tmp"};
  for (size_t i = 0; i < 3 && s->fd < 0; i++) {
    if (!dirs[i]) continue;
    char *tmpl = sp__asprintf("%s/.%s.stage.XXXXXX", dirs[i], base);
    if (tmpl && (s->fd = mkstemp(tmpl)) >= 0 && strlen(tmpl) < sizeof m->stage_path) {
      memcpy(m->stage_path, tmpl, strlen(tmpl) + 1);
      memcpy(s->fd_name, tmpl, strlen(tmpl) + 1);
    } else if (s->fd >= 0) {
      unlink(tmpl); /* a name too long for the spill: unnamed, not recoverable */
      m->stage_path[0] = 0;
    }
    free(tmpl);
  }
  free(copy);
  if (s->fd >= 0) sp__stage_cleanup_at_exit();
  if (s->fd < 0) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_cond_init(&s->idle, NULL);
  if (pthread_create(&s->th, NULL, writer, s) != 0) {
    close(s->fd);
    free(s);
    return NULL;
  }
  return s;
}

/*====== Recording side ======*/

uint64_t sp__stream_live_limit(const struct sp_manager *m) {
  /* A quarter of the budget for all live buffers together leaves room for
   * the two buffers that may be on their way to the writer and its scratch
   * arrays (docs/configuration.md says so). */
  return (uint64_t)m->cfg.max_buffer_bytes / 4;
}

/* One thread staging keeps one block in flight (asked again at every wake:
 * the first block decides whether the run stages). */
static int one_in_flight(struct sp_stream *s) {
  if (sp__stream_test_in_flight) return sp__stream_test_in_flight == 1;
  return __atomic_load_n(&s->staging, __ATOMIC_RELAXED) && !__atomic_load_n(&s->sthr_all, __ATOMIC_RELAXED);
}

/* `recording`: called by the thread whose buffer is full, which pays the
 * first touch of a fresh buffer's pages from here on (the overhead estimate
 * counts them, overhead_fresh_bytes); 0 from finalize's drain. */
static int handoff(struct sp_manager *m, sp_thread_rec *t, int recording) {
  if (m->ext_ticks || (sp__mpi_ops && sp__mpi_ops->in_use())) return -1;
  /* Threads fill their buffers at once: the stream is opened by the first,
   * published with release and seen with acquire by the rest. */
  struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) {
    pthread_mutex_lock(&m->lock);
    s = m->stream;
    if (!s) {
      s = stream_open(m);
      __atomic_store_n(&m->stream, s, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&m->lock);
    if (!s) return -1;
  }
  size_t ncols = (size_t)m->ext_stride;
  uint64_t cap = t->hot.cap;
  /* Wait for the writer when two buffers are already in flight (one, for a
   * run one thread stages: below); past sp__stream_drop_wait_ms (five
   * seconds) the completed calls of this buffer are dropped, and counted.
   * Then continue in a buffer the writer is done with, if it has one of
   * this size (a fresh one otherwise: at most three per thread in all). */
  int drop = 0;
  struct sp_i_event *fresh = NULL;
  int64_t *fresh_cols = NULL;
  pthread_mutex_lock(&s->mu);
  struct timespec now, until, shed_at, relax_at;
  clock_gettime(CLOCK_REALTIME, &now);
  shed_at = after_ms(now, sp__stream_shed_wait_ms);
  until = after_ms(now, sp__stream_drop_wait_ms);
  relax_at = after_ms(now, sp__stream_drop_wait_ms / 2);
  /* A writer that keeps a thread waiting a second while it stages thread
   * ids writes 40 B per call where the copy way writes 32: it sheds the
   * staging, so that it catches up before any block is dropped. Without
   * thread ids both ways write 32 B per call, and shedding would only lose
   * the fast publish. */
  /* One thread staging: one block in flight, not two. In a steady state
   * the hand-off waits as long either way (until the writer is done with
   * the block in hand), but a signal then finds one block to wait for
   * instead of two (BENCHMARKS.md "Round 5": 3.9 s a block at load 13;
   * 200M events published in 2.9 s with one, 11.0 s with two). But a
   * wait that lasts half the drop's lets a second block queue: a writer
   * stalled for one long block (a slow disk for a moment) then costs the
   * recording thread that half, not the buffer's calls (review11 F4: a
   * writer slowed to 5.2 s a block dropped a block with one in flight, none
   * with two). Steadily slower than that, both rules drop alike. */
  int64_t waited_from = -1;
  int relaxed = 0;
  while ((one_in_flight(s) && !relaxed ? s->queued_bytes > 0 : s->queued_bytes >= 2 * cap * sizeof *t->hot.ev) &&
         !drop) {
    if (waited_from < 0) waited_from = sp__mono_ns();
    if (__atomic_load_n(&s->staging, __ATOMIC_RELAXED) && __atomic_load_n(&s->sthr_all, __ATOMIC_RELAXED) &&
        !s->stage_shed) {
      if (pthread_cond_timedwait(&s->idle, &s->mu, &shed_at) == ETIMEDOUT) s->stage_shed = 1;
      continue;
    }
    if (one_in_flight(s) && !relaxed) {
      if (pthread_cond_timedwait(&s->idle, &s->mu, &relax_at) == ETIMEDOUT) relaxed = 1;
      continue;
    }
    if (pthread_cond_timedwait(&s->idle, &s->mu, &until) == ETIMEDOUT) drop = 1;
  }
  if (recording) { /* finalize's drain waits for the writer anyway */
    s->handoffs++;
    if (waited_from >= 0) {
      s->waits++;
      s->wait_ns += (uint64_t)(sp__mono_ns() - waited_from);
    }
  }
  struct thread_gaps *tg = t->index < s->ntg ? &s->tg[t->index] : NULL;
  while (tg && tg->nspare && !fresh) {
    struct spare sp = tg->spare[--tg->nspare];
    if (sp.cap == cap && (!ncols || sp.cols)) {
      fresh = sp.ev;
      fresh_cols = sp.cols;
    } else {
      free(sp.ev);
      free(sp.cols);
    }
  }
  pthread_mutex_unlock(&s->mu);
  uint64_t fresh_bytes = 0;
  if (!fresh) {
    fresh = malloc(cap * sizeof *fresh);
    fresh_bytes += cap * sizeof *fresh;
  }
  if (ncols && !fresh_cols) {
    fresh_cols = malloc(cap * ncols * sizeof *fresh_cols);
    fresh_bytes += cap * ncols * sizeof *fresh_cols;
  }
  struct block *b = calloc(1, sizeof *b);
  if (!fresh || (ncols && !fresh_cols) || !b) {
    free(fresh);
    free(fresh_cols);
    free(b);
    return -1;
  }
  if (recording) {
    t->ovh_fresh_bytes += fresh_bytes;
  } else if (fresh_bytes) {
    pthread_mutex_lock(&s->mu);
    if (grow_threads(s, t->index) == 0) s->tg[t->index].fresh_at_drain += fresh_bytes;
    pthread_mutex_unlock(&s->mu);
  }

  /* Late values first, then the block's calls count in the per-region
   * totals: they leave this thread's buffer now. */
  if (m->next) {
    sp__ext_resolve(m, t, t->hot.n);
    if (!drop) sp__ext_fold_events(m, t, t->hot.ev, t->cols, t->hot.n);
  }
  /* The open calls move to the front of the fresh buffer, in log order. */
  uint64_t k = 0;
  t->busy++; /* sp_ext_current_region: stack and buffer change together */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  for (uint32_t d = 0; d < t->hot.depth; d++) {
    uint64_t i = t->hot.stack[d];
    if (i & SP_I_GHOST_BIT) continue;
    fresh[k] = t->hot.ev[i];
    if (ncols) memcpy(fresh_cols + k * ncols, t->cols + i * ncols, ncols * sizeof *fresh_cols);
    t->hot.stack[d] = k++;
  }
  sp__ext_fill(m, fresh_cols, k, cap);
  b->t = t;
  b->ev = t->hot.ev;
  b->cols = t->cols;
  b->n = t->hot.n;
  b->cap = cap;
  t->hot.ev = fresh;
  t->cols = fresh_cols;
  t->hot.n = k;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy--;
  if (drop) {
    /* The kept calls of the dropped block stay kept: only completed calls
     * are lost. Their regions are counted for the metadata. */
    pthread_mutex_lock(&s->mu);
    if (grow_regions(s, sp__region_max_id() + 1) == 0)
      for (uint64_t i = 0; i < b->n; i++)
        if (b->ev[i].end) s->dropped[b->ev[i].region]++;
    for (uint64_t i = 0; i < b->n; i++) t->dropped_events += b->ev[i].end != 0;
    pthread_mutex_unlock(&s->mu);
    free(b->ev);
    free(b->cols);
    free(b);
    return 0;
  }
  pthread_mutex_lock(&s->mu);
  s->queued_bytes += cap * sizeof *t->hot.ev;
  if (s->tail)
    s->tail->next = b;
  else
    __atomic_store_n(&s->head, b, __ATOMIC_RELAXED);
  s->tail = b;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int sp__stream_handoff(struct sp_manager *m, sp_thread_rec *t) { return handoff(m, t, 1); }

/*====== Finalize ======*/

int sp__stream_active(const struct sp_manager *m) {
  struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) return 0;
  /* A block queued or in the writer's hands counts too. The writer changes
   * nsegs and blocks outside the lock only while busy, so they are read
   * only once it is idle. */
  pthread_mutex_lock(&s->mu);
  int active = s->head || s->busy || s->nsegs + s->blocks > 0;
  pthread_mutex_unlock(&s->mu);
  return active;
}

void sp__stream_hold(struct sp_manager *m) {
  struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  /* the block in hand and those queued now: handed over before the end
   * anchor, so their own anchors come before it too (blocks queued later
   * are not waited for: a thread still recording cannot hold finalize) */
  uint64_t want = s->ntaken;
  for (const struct block *b = s->head; b; b = b->next) want++;
  while (s->ndone < want) pthread_cond_wait(&s->idle, &s->mu);
  s->hold = 1;
  pthread_mutex_unlock(&s->mu);
}

void sp__stream_release(struct sp_manager *m) {
  struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->hold = 0;
  if (s->have_final) { /* handed over, but the run was not written: the next finalize has its own map */
    s->have_final = 0;
    s->stage_stale = 1;
  }
  pthread_cond_broadcast(&s->wake);
  pthread_mutex_unlock(&s->mu);
}

/* The blocks still to come are converted with the run's final map. */
static int hand_final_map(struct sp_stream *s, const struct sp_clock_map *cm) {
  struct sp_clock_seg *seg = NULL;
  if (cm->nseg && !(seg = malloc(cm->nseg * sizeof *seg))) return -1;
  if (cm->nseg) memcpy(seg, cm->seg, cm->nseg * sizeof *seg);
  pthread_mutex_lock(&s->mu);
  free(s->fin_seg);
  s->fin_seg = seg;
  s->fin = *cm;
  s->fin.seg = seg;
  s->have_final = 1;
  s->hold = 0;
  pthread_cond_broadcast(&s->wake);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

/* Hand over every thread's buffer and wait until the writer is idle. */
static sp_status drain(struct sp_manager *m) {
  struct sp_stream *s = m->stream;
  for (sp_thread_rec *t = m->threads; t; t = t->next)
    if (t->hot.n && handoff(m, t, 0) != 0)
      return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory handing the last events to the writer");
  pthread_mutex_lock(&s->mu);
  while (s->head || s->busy) pthread_cond_wait(&s->idle, &s->mu);
  pthread_mutex_unlock(&s->mu);
  if (s->err != SP_OK) return sp__set_error(s->err, "%s", s->errmsg);
  return SP_OK;
}

/* Calls a cursor reads back per column and read (32 KiB): fewer, larger
 * reads of the staging file. A row of many segments shares 2^18 calls of
 * buffers among its cursors instead (CURSOR_MIN each at least). */
#define CURSOR_N 4096
#define CURSOR_MIN 64
#define CURSOR_ROW_CALLS ((size_t)1 << 18)

/* One segment of a row being merged. A cursor per segment, not per
 * thread: a thread's segments, read one after the other, are not in start
 * order when a call of the region was open across a hand-off (it is kept
 * at the front of the next block, after calls that started inside it:
 * recursion), and the row came out of the order the file promises. */
struct cursor {
  const struct seg *seg;
  uint64_t pos, have, at; /* within the segment: read position, values buffered, next */
  uint64_t room;          /* the buffers' calls */
  int64_t *start, *end, *id, *pid;
  int64_t *cols; /* room x ncols */
  struct sp_tcur tc; /* on the final clock map, where this segment's calls are now */
  int64_t hs, he; /* the next call's start and end, ns on the final map */
  int ns;         /* the buffered calls are staged ones: nanoseconds already */
  uint64_t run;   /* staged: the last start decoded */
  uint64_t sum[4][2]; /* staged: the checksums of what was read so far, as stored */
};

/* The next call's nanoseconds, which the merge orders by (start, longer
 * first, call id: the order the in-memory writers store a row in and the
 * readers nest by, snapshot.c row_before), not by ticks with ties in
 * thread order. */
static void cursor_head(const struct sp_clock_map *cm, struct cursor *c) {
  if (c->at >= c->have) return;
  if (c->ns) {
    c->hs = c->start[c->at];
    c->he = c->end[c->at];
    return;
  }
  c->hs = sp__tcur_ns(cm, &c->tc, (uint64_t)c->start[c->at]);
  c->he = sp__tcur_ns(cm, &c->tc, (uint64_t)c->end[c->at]);
  if (c->he < c->hs) c->he = c->hs;
}

/* Cursor a's next call comes before b's; full ties in segment order. */
static inline int cursor_before(const struct cursor *cur, size_t a, size_t b) {
  const struct cursor *x = &cur[a], *y = &cur[b];
  if (x->hs != y->hs) return x->hs < y->hs;
  if (x->he != y->he) return x->he > y->he;
  if (x->id[x->at] != y->id[y->at]) return x->id[x->at] < y->id[y->at];
  return a < b;
}

/* The row's cursors with calls left, as a min-heap by their next call:
 * h[i] is not after h[2i + 1] and h[2i + 2]. */
static inline void heap_down(const struct cursor *cur, size_t *h, size_t n, size_t i) {
  for (;;) {
    size_t m = i, l = 2 * i + 1;
    if (l < n && cursor_before(cur, h[l], h[m])) m = l;
    if (l + 1 < n && cursor_before(cur, h[l + 1], h[m])) m = l + 1;
    if (m == i) return;
    size_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

/* The earliest start among the heap's cursors but its top (INT64_MAX when
 * none): a top whose next call starts before it is still the top. */
static inline int64_t runner_up(const struct cursor *cur, const size_t *h, size_t n) {
  int64_t a = n > 1 ? cur[h[1]].hs : INT64_MAX, b = n > 2 ? cur[h[2]].hs : INT64_MAX;
  return a < b ? a : b;
}

/* What reading a segment back found wrong, as finalize's message: the
 * file, the cause, what is kept and what to do. -1. */
static const char *const col_words[4] = {"start", "duration", "call id", "parent id"};
static int readback_error(struct sp_stream *s, const struct seg *g, int col, const char *cause) {
  const struct sp_region_info *ri = s->adopted ? NULL : sp__region_info(g->region);
  const char *name = g->staged ? s->sfd_name : s->fd_name;
  if (!name[0]) name = g->staged ? "(the staged file)" : "(the staging file)";
  s->readback_failed = 1;
  char where[320];
  if (g->staged)
    snprintf(where, sizeof where, "block %u, region \"%.200s\", %llu calls, their %s column", (unsigned)g->block,
             ri ? ri->name : "?", (unsigned long long)g->count, col_words[col < 4 ? col : 0]);
  else
    snprintf(where, sizeof where, "region \"%.200s\", %llu calls", ri ? ri->name : "?", (unsigned long long)g->count);
  /* (the raw staging file is emptied when the run is reset: it is the
   * next run's, and without the rest of this run nothing can read it) */
  sp__set_error(SP_ERR_IO,
                "reading the streamed calls back from the %s file %s failed: %s (%s). The file no longer holds what "
                "the run wrote there, so this run cannot be written%s%s%s. Keep other programs (dot-file cleaners, "
                "backup or quota tools) away from the files beside file_path while a run lasts, and check the "
                "file system for I/O errors",
                g->staged ? "staged" : "staging", name, cause, where, g->staged ? "; " : "", g->staged ? name : "",
                g->staged ? " is kept as it is (remove it when done with it)"
                          : ", and the calls streamed there are lost: the run starts over from the calls still "
                            "open, and the file is emptied for it");
  return -1;
}

/* n bytes at `off` of fd, or the error said (readback_error). */
static int read_back(struct sp_stream *s, const struct seg *g, int col, int fd, void *p, size_t n, uint64_t off) {
  char *c = p;
  size_t left = n;
  uint64_t at = off;
  int err = 0;
  while (left) {
    ssize_t r = fd >= 0 ? pread(fd, c, left, (off_t)at) : (errno = EBADF, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) err = errno;
    if (r <= 0) break;
    c += r;
    left -= (size_t)r;
    at += (uint64_t)r;
  }
  if (!left) return 0;
  char cause[512];
  struct stat sb;
  if (err)
    snprintf(cause, sizeof cause, "reading %zu bytes at offset %llu: %s", n, (unsigned long long)off, strerror(err));
  else if (fstat(fd, &sb) == 0)
    snprintf(cause, sizeof cause, "%zu bytes at offset %llu were to be read, but the file ends at byte %lld",
             n, (unsigned long long)off, (long long)sb.st_size);
  else
    snprintf(cause, sizeof cause, "%zu bytes at offset %llu were to be read, but the file ended before", n,
             (unsigned long long)off);
  return readback_error(s, g, col, cause);
}

/* The first hole in bytes [from, to) of fd before its end, else -1: a
 * hole reads as zeros without an error (the file was cut short, and
 * written past since). A file system without holes has none to say. */
static off_t hole_within(int fd, uint64_t from, uint64_t to) {
  off_t hole = lseek(fd, (off_t)from, SEEK_HOLE); /* (positional reads only: the offset is no one's) */
  struct stat sb;
  if (hole < 0 || (uint64_t)hole >= to || fstat(fd, &sb) != 0 || hole >= sb.st_size) return -1;
  return hole;
}

/* Before a raw segment is read: a hole in its bytes (the file was cut
 * short, and the hand-offs since wrote past the cut) reads as zeros without
 * an error, and was written as calls at tick 0; and its header, written
 * once its columns were, must be the segment's. -1 with the error said. */
static int check_raw_segment(struct sp_stream *s, const struct seg *g, int ncols) {
  uint64_t at = g->off - SEG_HEAD, end = g->off + g->count * 8 * (4 + (uint64_t)ncols);
  off_t hole = hole_within(s->fd, at, end);
  if (hole >= 0) {
    char cause[256];
    snprintf(cause, sizeof cause,
             "the file has a hole at byte %lld, in the segment's bytes %llu to %llu (it was cut short, and "
             "written past since)",
             (long long)hole, (unsigned long long)at, (unsigned long long)end);
    return readback_error(s, g, 0, cause);
  }
  struct seg_head h;
  if (read_back(s, g, 0, s->fd, &h, sizeof h, at) != 0) return -1;
  if (h.magic != SEG_MAGIC || h.count != g->count || h.ncols != (uint32_t)ncols ||
      (!s->adopted && (h.region != g->region || h.thread != g->thread))) {
    char cause[128];
    snprintf(cause, sizeof cause, "the segment's header at byte %llu is not the one the run wrote there",
             (unsigned long long)at);
    return readback_error(s, g, 0, cause);
  }
  return 0;
}

static int cursor_fill(struct sp_stream *s, struct cursor *c, int ncols) {
  const struct seg *g = c->seg;
  if (c->pos >= g->count) return 0;
  uint64_t n = g->count - c->pos < c->room ? g->count - c->pos : c->room;
  int64_t *dst[4] = {c->start, c->end, c->id, c->pid};
  c->ns = g->staged;
  if (g->staged) { /* start deltas and durations, in ns, from the staged file */
    if (!c->pos) memset(c->sum, 0, sizeof c->sum);
    for (int col = 0; col < 4; col++) {
      if (read_back(s, g, col, s->sfd, dst[col], n * 8, g->coff[col] + c->pos * 8) != 0) return -1;
      if (g->sums) jsum(c->sum[col], dst[col], n);
    }
    /* the whole segment read: what the journal's checksums were taken
     * over (a patched parent column is not: build_staged) */
    for (int col = 0; g->sums && c->pos + n == g->count && col < (s->patched ? 3 : 4); col++)
      if (c->sum[col][0] != g->sum[col][0] || c->sum[col][1] != g->sum[col][1])
        return readback_error(s, g, col, "the values read differ from the checksum the run took when it wrote them");
    if (!c->pos) c->run = (uint64_t)g->base;
    for (uint64_t k = 0; k < n; k++) {
      c->run += (uint64_t)c->start[k];
      c->start[k] = (int64_t)c->run;
      c->end[k] += c->start[k];
    }
    c->pos += n;
    c->have = n;
    c->at = 0;
    return 1;
  }
  if (!c->pos && check_raw_segment(s, g, ncols) != 0) return -1;
  for (int col = 0; col < 4; col++)
    if (read_back(s, g, col, s->fd, dst[col], n * 8, g->off + ((uint64_t)col * g->count + c->pos) * 8) != 0)
      return -1;
  for (int p = 0; p < ncols; p++) {
    int64_t tmp[CURSOR_N];
    if (read_back(s, g, 4, s->fd, tmp, n * 8, g->off + ((uint64_t)(4 + p) * g->count + c->pos) * 8) != 0) return -1;
    for (uint64_t k = 0; k < n; k++) c->cols[k * (uint64_t)ncols + (uint64_t)p] = tmp[k];
  }
  c->pos += n;
  c->have = n;
  c->at = 0;
  return 1;
}

struct fill_ctx {
  struct sp_manager *m;
  struct sp_run *run;
  struct sp_clock_map cm;
  uint32_t *row_region; /* region id of each row */
  int track_threads;
  struct sp_staged staged; /* the staged blocks' mappings, when the run has them */
  struct sp_stage_map *map;
};

#define FILL_BATCH 4096 /* calls written per HDF5 call when assembling */

/* Write a batch of merged calls (columns o[0..3], thread ids, probe
 * columns, interleaved per call) at event offset `off` through the
 * writer's sink, which lays them out as the file's schema says; -1 on an
 * HDF5 error. */
static int flush_out(const struct fill_ctx *f, struct sp_event_sink *sink, uint64_t off, uint64_t nout,
                     int64_t *const o[4], const int64_t *othr, const int64_t *ocols, int64_t **pcols) {
  int ncols = f->m->ext_nout;
  const struct sp_run *run = f->run;
  const void *extra[SP_PLAN_MAX_EXT_COLUMNS + 1];
  size_t x = 0;
  if (f->track_threads && x < run->nextra) extra[x++] = othr;
  for (int p = 0; p < ncols && x < run->nextra && x < SP_PLAN_MAX_EXT_COLUMNS; p++, x++) {
    for (uint64_t k = 0; k < nout; k++) pcols[p][k] = ocols[k * (uint64_t)ncols + (uint64_t)p];
    extra[x] = pcols[p];
  }
  struct sp_event_batch b = {o[0], o[1], o[2], o[3], extra};
  return sp__sink_put(sink, off, nout, &b);
}

/* Writes every row: the row's segments, a cursor each, merged by
 * (start, longer first, call id), converted with the run's final clock map, CURSOR_N at a time;
 * the statistics come out of the same pass. */
static sp_status fill(void *ctx, struct sp_event_sink *sink) {
  struct fill_ctx *f = ctx;
  struct sp_stream *s = f->m->stream;
  struct sp_run *run = f->run;
  int ncols = f->m->ext_nout, gpu = f->m->ext_gpu_out;
  sp_status st = SP_OK;
  int64_t *o[4];
  for (int k = 0; k < 4; k++) o[k] = malloc(FILL_BATCH * sizeof **o);
  int64_t *othr = malloc(FILL_BATCH * sizeof *othr);
  int64_t *ocols = ncols ? malloc((size_t)FILL_BATCH * (size_t)ncols * sizeof *ocols) : NULL;
  int64_t **pcols = calloc((size_t)ncols + 1, sizeof *pcols);
  const struct seg **rowsegs = malloc((s->nsegs + 1) * sizeof *rowsegs);
  struct cursor *cur = NULL;
  size_t *heap = NULL;
  int64_t *bufs = NULL;
  for (int p = 0; pcols && p < ncols; p++)
    if (!(pcols[p] = malloc(FILL_BATCH * sizeof **pcols))) goto oom;
  if (!o[0] || !o[1] || !o[2] || !o[3] || !othr || (ncols && !ocols) || !pcols || !rowsegs) goto oom;
  for (size_t r = 0; r < run->nrows && st == SP_OK; r++) {
    struct sp_row *row = &run->rows[r];
    uint32_t region = f->row_region[r];
    /* This row's segments, a cursor each, buffers shared out among them */
    size_t ns = 0;
    for (size_t g = 0; g < s->nsegs; g++)
      if (s->segs[g].region == region) rowsegs[ns++] = &s->segs[g];
    free(cur);
    free(heap);
    free(bufs);
    heap = NULL, bufs = NULL;
    if (!(cur = calloc(ns + 1, sizeof *cur)) || !(heap = malloc((ns + 1) * sizeof *heap))) goto oom;
    size_t room = ns ? CURSOR_ROW_CALLS / ns : CURSOR_N;
    room = room > CURSOR_N ? CURSOR_N : room < CURSOR_MIN ? CURSOR_MIN : room;
    size_t need = 0;
    for (size_t g = 0; g < ns; g++) need += rowsegs[g]->count < room ? (size_t)rowsegs[g]->count : room;
    if (!(bufs = malloc((need ? need : 1) * (4 + (size_t)ncols) * sizeof *bufs))) goto oom;
    size_t nh = 0;
    int64_t *at = bufs;
    for (size_t g = 0; g < ns; g++) {
      struct cursor *c = &cur[g];
      c->seg = rowsegs[g];
      sp__tcur_init(&f->cm, &c->tc);
      c->room = rowsegs[g]->count < room ? rowsegs[g]->count : room;
      c->start = at, c->end = at + c->room, c->id = at + 2 * c->room, c->pid = at + 3 * c->room;
      c->cols = at + 4 * c->room;
      at += (4 + (uint64_t)ncols) * c->room;
      if (st == SP_OK && cursor_fill(s, c, ncols) < 0) st = SP_ERR_IO;
      cursor_head(&f->cm, c);
      if (c->at < c->have) heap[nh++] = g;
    }
    for (size_t i = nh / 2; i-- > 0;) heap_down(cur, heap, nh, i);
    int64_t bar = runner_up(cur, heap, nh);
    struct sp_summary *su = &row->stats;
    memset(su, 0, sizeof *su);
    su->minimum = su->start_minimum = INT64_MAX;
    su->maximum = su->end_maximum = INT64_MIN;
    /* mean and m2 from sums shifted by the row's first duration (no
     * division per call, no cancellation for durations near it) */
    double s1 = 0, s2 = 0;
    int64_t shift = 0;
    uint64_t done = 0, nout = 0;
    int64_t last_start = INT64_MIN;
    while (st == SP_OK && nh) {
      struct cursor *c = &cur[heap[0]];
      int64_t s0 = c->hs, e0 = c->he;
      int64_t d = e0 - s0, pid = c->pid[c->at];
      o[0][nout] = s0;
      o[1][nout] = e0;
      o[2][nout] = c->id[c->at];
      o[3][nout] = pid > -2 ? pid : sp__xctx_parent(f->m, pid); /* cross-thread parents are known by now */
      othr[nout] = c->seg->thread;
      for (int p = 0; p < ncols; p++) ocols[nout * (uint64_t)ncols + (uint64_t)p] = c->cols[c->at * (uint64_t)ncols + (uint64_t)p];
      if (gpu >= 0 && c->cols[c->at * (uint64_t)ncols + (uint64_t)gpu] >= 0) {
        su->gpu_count++;
        su->gpu_total += c->cols[c->at * (uint64_t)ncols + (uint64_t)gpu];
      }
      nout++;
      done++;
      su->total += d;
      if (d < su->minimum) su->minimum = d;
      if (d > su->maximum) su->maximum = d;
      if (s0 < su->start_minimum) su->start_minimum = s0;
      if (e0 > su->end_maximum) su->end_maximum = e0;
      if (done == 1) su->first = shift = d;
      if (s0 >= last_start) {
        last_start = s0;
        su->last = d;
      }
      double x = (double)(d - shift);
      s1 += x;
      s2 += x * x;
      if (++c->at == c->have && cursor_fill(s, c, ncols) < 0) st = SP_ERR_IO;
      cursor_head(&f->cm, c);
      /* the taken segment's next call mostly comes first again (a thread's
       * blocks overlap only by the calls carried over): while it starts
       * before the next segment's call, no heap step */
      int gone = c->at >= c->have;
      if (gone || c->hs >= bar) {
        if (gone) heap[0] = heap[--nh];
        heap_down(cur, heap, nh, 0);
        bar = runner_up(cur, heap, nh);
      }
      if (nout == FILL_BATCH && flush_out(f, sink, row->offset + done - nout, nout, o, othr, ocols, pcols) != 0)
        st = sp__set_error(SP_ERR_IO, "finalize: HDF5 could not write the streamed calls into the file (disk full?)");
      if (nout == FILL_BATCH) nout = 0;
    }
    if (nout && st == SP_OK && flush_out(f, sink, row->offset + done - nout, nout, o, othr, ocols, pcols) != 0)
      st = sp__set_error(SP_ERR_IO, "finalize: HDF5 could not write the streamed calls into the file (disk full?)");
    if (done) {
      double nd = (double)done;
      su->mean = (double)shift + s1 / nd;
      su->m2 = s2 - s1 * s1 / nd;
      if (su->m2 < 0) su->m2 = 0;
    }
  }
  goto out; /* (a failed read or write said what failed) */
oom:
  st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory assembling the streamed run");
out:
  free(cur);
  free(heap);
  free(bufs);
  for (int k = 0; k < 4; k++) free(o[k]);
  for (int p = 0; pcols && p < ncols; p++) free(pcols[p]);
  free(pcols);
  free(othr);
  free(ocols);
  free(rowsegs);
  return st;
}

/* The file leaves the call ids out, as a run kept in memory does, when the
 * intervals give the recorded tree (struct sp_gaps): no link they cannot
 * give (a cross-thread parent, a call cut short or still open, a call
 * dropped, a call carried from an earlier file, a crashed run's staging
 * file read back), and the smallest gap the writer saw still strict in
 * nanoseconds on the final map. Inside one piece of the map a gap of g ticks
 * becomes at least floor(g * slope) ns; where two pieces meet, the later one
 * may start up to a few ns below the earlier one's line, which a gap across
 * the seam must also cover. */
static int ids_redundant(const struct sp_manager *m, const struct sp_stream *s, const struct sp_clock_map *cm,
                         uint64_t open_calls, uint64_t dropped) {
  if (s->adopted || s->gap_need_ids || m->nxctx || m->ncut || open_calls || dropped) return 0;
  if (s->gap_min == UINT64_MAX) return 1;
  uint64_t mult = cm->nseg ? cm->seg[0].mult : cm->mult;
  int64_t drop = 0; /* the largest step down at a seam, ns */
  for (size_t k = 1; k < cm->nseg; k++) {
    const struct sp_clock_seg *p = &cm->seg[k - 1], *q = &cm->seg[k];
    if (q->mult < mult) mult = q->mult;
    sp__i128 d = (sp__i128)((int64_t)(q->tick - p->tick)) * (sp__i128)p->mult;
    int64_t line = p->ns + (int64_t)(d >> 32);
    if (line - q->ns > drop) drop = line - q->ns;
  }
  double need = cm->nseg > 1 ? (double)drop + 2.0 : 1.0;
  return (double)s->gap_min * ((double)mult / 4294967296.0) >= need;
}

/* The staged blocks as the file's events: cross-thread parents patched in
 * place, one mapping per (row, block) segment in row order, the rows'
 * statistics from what the writer accumulated. 0, or -1: the copy way. */
static int build_staged(struct sp_manager *m, struct sp_stream *s, struct sp_run *run, struct fill_ctx *f) {
  size_t sg_at = 0; /* the segment of the last patch: the next is mostly in it too */
  if (s->nxp) s->patched = 1; /* (a publish that declines reads them back patched) */
  for (size_t k = 0; k < s->nxp; k++) {
    const struct xpatch *x = &s->xp[k];
    int64_t v = sp__xctx_parent(m, x->pid);
    /* journaled first: the journal's checksum of that segment is of the
     * placeholder (review11 F2) */
    for (size_t tries = 0; tries < s->nsegs; tries++, sg_at = (sg_at + 1) % s->nsegs) {
      const struct seg *sg = &s->segs[sg_at];
      if (sg->staged && sg->block == x->block && x->at >= sg->boff && x->at < sg->boff + sg->count) {
        struct jpatch j = {JPATCH_MAGIC, sg->coff[3] + (x->at - sg->boff) * 8, x->pid, v};
        if (put_at(s->fd, &j, sizeof j, s->file_end) != 0) return -1;
        s->file_end += sizeof j;
        break;
      }
    }
    if (sp__stage_patch(s->stage, x->block, 3, x->at, v) != 0) return -1;
  }
  if (!(f->map = malloc((s->nsegs + 1) * sizeof *f->map))) return -1;
  size_t n = 0;
  for (size_t r = 0; r < run->nrows; r++) {
    struct sp_row *row = &run->rows[r];
    uint32_t id = f->row_region[r];
    uint64_t dst = row->offset;
    for (size_t g = 0; g < s->nsegs; g++)
      if (s->segs[g].region == id) {
        f->map[n++] = (struct sp_stage_map){s->segs[g].block, s->segs[g].boff, dst, s->segs[g].count};
        dst += s->segs[g].count;
      }
    const struct racc *a = &s->acc[id];
    if (dst != row->offset + row->count || a->n != row->count) return -1;
    struct sp_summary *su = &row->stats;
    memset(su, 0, sizeof *su);
    su->total = a->total;
    su->minimum = a->min;
    su->maximum = a->max;
    su->first = a->first;
    su->last = a->last;
    su->start_minimum = a->smin;
    su->end_maximum = a->emax;
    double nd = (double)a->n;
    su->mean = (double)a->shift + a->s1 / nd;
    su->m2 = a->s2 - a->s1 * a->s1 / nd;
    if (su->m2 < 0) su->m2 = 0;
  }
  f->staged = (struct sp_staged){s->stage, f->map, n, s->sthr0};
  run->staged = &f->staged;
  return 0;
}

sp_status sp__stream_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank, struct sp_run *run,
                           uint64_t *open_calls, void **fill_ctx) {
  memset(run, 0, sizeof *run);
  *fill_ctx = NULL;
  run->layout = "columnar";
  struct sp_stream *s = m->stream;
  if (hand_final_map(s, cm) != 0) return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory");
  sp_status st = drain(m);
  if (st != SP_OK) return st;
  *open_calls = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) *open_calls += t->hot.n; /* only kept, open calls remain */
  uint32_t maxid = sp__region_max_id();
  uint64_t *count = calloc((size_t)maxid + 1, sizeof *count);
  struct fill_ctx *f = calloc(1, sizeof *f);
  sp_source_cache *cache = sp__source_cache_new();
  if (!count || !f || !cache) goto oom;
  for (size_t g = 0; g < s->nsegs; g++) count[s->segs[g].region] += s->segs[g].count;
  for (uint32_t id = 1; id <= maxid; id++)
    if (count[id]) run->nrows++;
  run->nnames = run->nrows;
  run->names = calloc(run->nrows + 1, sizeof *run->names);
  run->rows = calloc(run->nrows + 1, sizeof *run->rows);
  f->row_region = calloc(run->nrows + 1, sizeof *f->row_region);
  if (!run->names || !run->rows || !f->row_region) goto oom;
  /* As in snapshot.c: calls of several threads always carry their thread. */
  int track_threads = m->cfg.track_threads;
  for (size_t g = 1; g < s->nsegs && !track_threads; g++) track_threads = s->segs[g].thread != s->segs[0].thread;
  size_t r = 0;
  uint64_t off = 0;
  for (uint32_t id = 1; id <= maxid; id++) {
    if (!count[id]) continue;
    const struct sp_region_info *ri = sp__region_info(id);
    struct sp_row *row = &run->rows[r];
    run->names[r] = sp__strdup(ri->name);
    row->region = (uint32_t)r;
    row->rank = rank;
    row->offset = off;
    row->count = count[id];
    row->aggregate_count = (int64_t)count[id];
    row->exclusive_total = id < s->nregions ? s->excl[id] : 0;
    row->tags_json = sp__region_tags_json(id);
    if (!run->names[r] || !row->tags_json || sp__row_source(m, row, ri, cache) != 0) goto oom;
    f->row_region[r] = id;
    off += count[id];
    r++;
  }
  run->nevents = 0; /* no arrays: the columns below only name what the filler writes */
  if (sp__run_event_columns(m, run, track_threads) != 0) goto oom;
  for (size_t i = 0; i < run->nextra; i++) {
    free(run->extra[i].data);
    run->extra[i].data = NULL;
  }
  run->nevents = off;
  run->has_ids = 1;
  uint64_t dropped = 0;
  for (uint32_t id = 0; id < s->nregions; id++) dropped += s->dropped[id];
  run->ids_redundant = ids_redundant(m, s, cm, *open_calls, dropped);
  f->m = m;
  f->run = run;
  f->cm = *cm;
  f->track_threads = track_threads;
  run->fill_events = fill;
  run->fill_ctx = f;
  *fill_ctx = f;
  if (s->stage_stale && s->stage) stage_stop(s);
  s->stage_stale = 0;
  if (s->stage && build_staged(m, s, run, f) != 0) {
    run->staged = NULL; /* the copy way; the file is removed when the run is reset */
    for (size_t i = 0; i < run->nrows; i++) memset(&run->rows[i].stats, 0, sizeof run->rows[i].stats);
  }
  sp__meta_i64(&run->meta, SP_META_STREAMED_BLOCKS, (int64_t)s->blocks);
  sp__meta_i64(&run->meta, SP_META_DROPPED_EVENTS, (int64_t)dropped);
  if (dropped) {
    size_t cap = 64, len = 0;
    char *js = malloc(cap);
    for (uint32_t id = 1; js && id < s->nregions; id++) {
      if (!s->dropped[id]) continue;
      const struct sp_region_info *ri = sp__region_info(id);
      char *piece = sp__asprintf("%s\"%s\": %llu", len ? ", " : "{", ri ? ri->name : "?",
                                 (unsigned long long)s->dropped[id]);
      if (!piece) continue;
      size_t pl = strlen(piece);
      if (len + pl + 3 > cap) {
        cap = (len + pl + 3) * 2;
        char *n = realloc(js, cap);
        if (!n) {
          free(piece);
          break;
        }
        js = n;
      }
      memcpy(js + len, piece, pl);
      len += pl;
      free(piece);
    }
    if (js) {
      memcpy(js + len, "}", 2);
      sp__meta_str(&run->meta, SP_META_DROPPED_BY_REGION, js);
    }
    free(js);
  }
  free(count);
  sp__source_cache_free(cache);
  return SP_OK;
oom:
  free(count);
  sp__source_cache_free(cache);
  if (f) free(f->row_region);
  free(f);
  sp__run_free(run);
  return sp__set_error(SP_ERR_NO_MEMORY, "out of memory assembling the streamed run");
}

void sp__stream_fill_free(void *fill_ctx) {
  struct fill_ctx *f = fill_ctx;
  if (!f) return;
  free(f->map);
  free(f->row_region);
  free(f);
}

/* The run is written: start the next one with an empty staging file. */
void sp__stream_reset(struct sp_manager *m) {
  struct sp_stream *s = m->stream;
  if (!s) return;
  /* (a crashed run's file read back by recovery is left as it was) */
  if (!s->adopted && ftruncate(s->fd, 0) != 0) { /* the next run appends past the old data: wasteful, not wrong */ }
  s->file_end = 0;
  s->nsegs = 0;
  __atomic_store_n(&s->blocks, 0, __ATOMIC_RELAXED);
  /* published (its file renamed to the output) or not used: gone either way;
   * but a staged file finalize could not read back is kept, as its message
   * says (it holds the run's calls, and nothing else does now) */
  if (s->stage_kept && s->stage_tmp[0] && !s->readback_failed) unlink(s->stage_tmp);
  s->stage_kept = 0;
  s->stage_tmp[0] = 0;
  sp__stage_close(s->stage, s->readback_failed);
  s->stage = NULL;
  s->readback_failed = 0;
  s->patched = 0;
  s->sfd_name[0] = 0;
  if (s->sfd >= 0) close(s->sfd);
  s->sfd = -1;
  __atomic_store_n(&s->staging, 0, __ATOMIC_RELAXED);
  s->stage_off = 0;
  s->sblocks = 0;
  s->sthr0 = -1;
  s->sthr_all = 0;
  s->nxp = 0;
  if (s->acc) memset(s->acc, 0, s->nregions * sizeof *s->acc);
  pthread_mutex_lock(&s->mu);
  s->have_final = 0;
  s->stage_stale = 0;
  s->stage_shed = 0;
  pthread_mutex_unlock(&s->mu);
  memset(s->excl, 0, s->nregions * sizeof *s->excl);
  memset(s->dropped, 0, s->nregions * sizeof *s->dropped);
  memset(s->calls, 0, s->nregions * sizeof *s->calls);
  s->gap_min = UINT64_MAX;
  s->gap_need_ids = 0;
  for (size_t i = 0; i < s->ntg; i++) {
    s->tg[i].any = 0;
    s->tg[i].nkept = 0;
  }
  s->err = SP_OK;
  /* A manager that lives on after finalize may record little or nothing
   * more: the recycled buffers (two per thread, each a whole buffer) go
   * back now, not when it is destroyed. The next run's first hand-offs
   * take fresh ones, counted in its overhead as every fresh buffer is, and
   * so are the pages of the buffers the drain gave the threads. */
  struct spare gone[64];
  int ngone;
  do {
    ngone = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->ntg && ngone + 2 <= (int)(sizeof gone / sizeof gone[0]); i++)
      while (s->tg[i].nspare) gone[ngone++] = s->tg[i].spare[--s->tg[i].nspare];
    pthread_mutex_unlock(&s->mu);
    for (int k = 0; k < ngone; k++) {
      free(gone[k].ev);
      free(gone[k].cols);
    }
  } while (ngone);
  /* under mu: a thread's first hand-off may grow s->tg meanwhile (review8 F7) */
  pthread_mutex_lock(&s->mu);
  for (sp_thread_rec *t = m->threads; t; t = t->next)
    if (t->index < s->ntg) {
      t->ovh_fresh_bytes += s->tg[t->index].fresh_at_drain;
      s->tg[t->index].fresh_at_drain = 0;
    }
  pthread_mutex_unlock(&s->mu);
}

int sp__stream_keep_failed(const struct sp_manager *m) {
  const struct sp_stream *s = m->stream;
  return s && !s->adopted && !s->readback_failed && s->err == SP_OK;
}

uint64_t sp__stream_spare_bytes(const struct sp_manager *m) {
  struct sp_stream *s = m->stream;
  if (!s) return 0;
  uint64_t n = 0;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->ntg; i++)
    for (int k = 0; k < s->tg[i].nspare; k++)
      n += s->tg[i].spare[k].cap * (sizeof *s->tg[i].spare[k].ev + (s->tg[i].spare[k].cols ? (uint64_t)m->ext_stride * 8 : 0));
  pthread_mutex_unlock(&s->mu);
  return n;
}

void sp__stream_close(struct sp_manager *m) {
  struct sp_stream *s = m->stream;
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->wake);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->th, NULL);
  while (s->head) {
    struct block *b = s->head;
    __atomic_store_n(&s->head, b->next, __ATOMIC_RELAXED);
    free(b->ev);
    free(b->cols);
    free(b);
  }
  close(s->fd);
  if (m->stage_path[0]) unlink(m->stage_path);
  m->stage_path[0] = 0;
  if (s->stage_kept && s->stage_tmp[0]) unlink(s->stage_tmp);
  sp__stage_discard(s->stage);
  if (s->sfd >= 0) close(s->sfd);
  free(s->acc);
  free(s->jb);
  free(s->jthr);
  free(s->xp);
  free(s->bseg);
  free(s->fin_seg);
  free(s->sbuf);
  free(s->segs);
  free(s->excl);
  free(s->dropped);
  free(s->part);
  free(s->arena);
  free(s->arena_ix);
  free(s->colbuf);
  free(s->calls);
  for (size_t i = 0; i < s->ntg; i++) {
    free(s->tg[i].kept);
    for (int k = 0; k < s->tg[i].nspare; k++) {
      free(s->tg[i].spare[k].ev);
      free(s->tg[i].spare[k].cols);
    }
  }
  free(s->tg);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->wake);
  pthread_cond_destroy(&s->idle);
  free(s);
  m->stream = NULL;
}

int sp__stream_idle_now(const struct sp_manager *m) {
  const struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  return !s || (!__atomic_load_n(&s->busy, __ATOMIC_RELAXED) && !__atomic_load_n(&s->head, __ATOMIC_RELAXED));
}

/* A staged call read back, for the exclusive totals. */
struct staged {
  int64_t id, parent, dur;
  uint32_t region, thread;
};
static int cmp_staged(const void *a, const void *b) {
  int64_t x = ((const struct staged *)a)->id, y = ((const struct staged *)b)->id;
  return (x > y) - (x < y);
}

/* A private, unlinked copy of the first `len` bytes of fd (recovery writes
 * its own blocks after them, and the crashed run's file stays as it was). */
static int private_copy(int fd, uint64_t len) {
  const char *td = getenv("TMPDIR");
  char *tmpl = sp__asprintf("%s/.scope_profiler.recover.XXXXXX", td && *td ? td : "/tmp");
  int out = tmpl ? mkstemp(tmpl) : -1;
  if (out >= 0) unlink(tmpl);
  free(tmpl);
  char buf[1 << 16];
  for (uint64_t off = 0; out >= 0 && off < len;) {
    size_t n = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
    if (get_at(fd, buf, n, off) != 0 || put_at(out, buf, n, off) != 0) {
      close(out);
      out = -1;
    }
    off += n;
  }
  return out;
}

/* The bytes of the JRUN_MAGIC-kind record at off when it is whole and its
 * checksum holds, else 0 (cut short by the kill, or not on the disk): the
 * journal ends there. With `out`, its payload too (malloc'ed). */
static uint64_t jrec_at(int fd, uint64_t off, uint64_t size, unsigned char **out) {
  uint64_t head[2];
  if (out) *out = NULL;
  if (off + 16 > size || get_at(fd, head, sizeof head, off) != 0 || !is_jrec(head[0]) || head[1] > JREC_MAX)
    return 0;
  uint64_t body = head[1] + (8 - head[1] % 8) % 8, len = 16 + body + 16;
  if (off + len > size) return 0;
  unsigned char *b = malloc(body + 16 ? body + 16 : 1);
  if (!b || get_at(fd, b, body + 16, off + 16) != 0) {
    free(b);
    return 0;
  }
  uint64_t sum[2] = {0, 0}, want[2];
  jsum(sum, (const int64_t *)head, 2);
  for (uint64_t k = 0; k < body; k += 8) {
    int64_t w;
    memcpy(&w, b + k, 8);
    jsum(sum, &w, 1);
  }
  memcpy(want, b + body, 16);
  if (sum[0] != want[0] || sum[1] != want[1]) {
    free(b);
    return 0;
  }
  if (out) *out = b;
  else free(b);
  return len;
}

static int cmp_patch(const void *a, const void *b) {
  uint64_t x = ((const struct jpatch *)a)->off, y = ((const struct jpatch *)b)->off;
  return (x > y) - (x < y);
}

/* The journal's patch records, sorted by offset (the walk stops where
 * adopt's does: at a record it does not know or one cut short). */
static struct jpatch *journal_patches(int fd, uint64_t size, int ncols, size_t *np) {
  struct jpatch *v = NULL;
  size_t n = 0, cap = 0;
  for (uint64_t off = 0; off + 16 <= size;) {
    uint64_t head[2];
    if (get_at(fd, head, sizeof head, off) != 0) break;
    uint64_t len;
    if (head[0] == JFILE_MAGIC) {
      if (head[1] >= 4096) break;
      len = 16 + head[1] + (8 - head[1] % 8) % 8;
    } else if (head[0] == JSEG_MAGIC) {
      len = sizeof(struct jseg);
    } else if (head[0] == JPATCH_MAGIC) {
      len = sizeof(struct jpatch);
    } else if (is_jrec(head[0])) {
      if (!(len = jrec_at(fd, off, size, NULL))) break;
    } else if (head[0] == SEG_MAGIC) {
      struct seg_head h;
      if (off + SEG_HEAD > size || get_at(fd, &h, sizeof h, off) != 0 || h.count > ((uint64_t)1 << 40) ||
          h.ncols != (uint32_t)ncols)
        break;
      len = SEG_HEAD + h.count * 8 * (uint64_t)(4 + h.ncols);
    } else {
      break;
    }
    if (off + len > size) break;
    if (head[0] == JPATCH_MAGIC) {
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        struct jpatch *w = realloc(v, cap * sizeof *w);
        if (!w) break;
        v = w;
      }
      if (get_at(fd, &v[n], sizeof v[n], off) != 0) break;
      n++;
    }
    off += len;
  }
  if (n) qsort(v, n, sizeof *v, cmp_patch);
  *np = n;
  return v;
}

/* n values read from the staged file at file offset `at`: a patched one
 * back to the value the checksum was taken over. */
static void unpatch(const struct jpatch *p, size_t np, int64_t *v, uint64_t n, uint64_t at) {
  size_t lo = 0, hi = np;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p[mid].off < at) lo = mid + 1;
    else hi = mid;
  }
  for (; lo < np && p[lo].off < at + n * 8; lo++)
    if ((p[lo].off - at) % 8 == 0 && v[(p[lo].off - at) / 8] == p[lo].now) v[(p[lo].off - at) / 8] = p[lo].was;
}

int sp__stream_adopt(struct sp_manager *m, const char *path, const uint32_t *idmap, uint32_t nreg,
                     const struct sp_clock_map *cm, const char *published, struct sp_adopted *info) {
  struct sp_adopted none;
  if (!info) info = &none;
  memset(info, 0, sizeof *info);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  off_t size = lseek(fd, 0, SEEK_END);
  struct sp_stream *s = calloc(1, sizeof *s);
  if (!s || size < 0 || grow_regions(s, sp__region_max_id() + 1) != 0) {
    close(fd);
    free(s);
    return -1;
  }
  s->m = m;
  s->fd = fd;
  s->sfd = -1;
  s->adopted = 1;
  snprintf(s->fd_name, sizeof s->fd_name, "%s", path);
  int ncols = m->ext_nout, clean = 0;
  uint64_t off = 0, n = 0;
  size_t npatch = 0;
  struct jpatch *patch = journal_patches(fd, (uint64_t)size, ncols, &npatch);
  int64_t *col = malloc(4 * 8192 * sizeof *col);
  for (; col;) {
    struct seg_head h;
    if (off == (uint64_t)size) {
      clean = 1;
      break;
    }
    uint64_t magic = 0;
    if (off + 8 > (uint64_t)size || get_at(fd, &magic, 8, off) != 0) break;
    if (magic == JFILE_MAGIC) { /* the staged file, whose blocks the journal records name */
      uint64_t head[2];
      char name[4096];
      if (off + 16 > (uint64_t)size || get_at(fd, head, 16, off) != 0 || head[1] >= sizeof name ||
          off + 16 + head[1] > (uint64_t)size || get_at(fd, name, head[1], off + 16) != 0)
        break;
      name[head[1]] = 0;
      if (s->sfd >= 0) close(s->sfd);
      s->sfd = open(name, O_RDONLY | O_CLOEXEC);
      int gone = s->sfd < 0 && errno == ENOENT;
      snprintf(info->staged, sizeof info->staged, "%s", name);
      info->segs = 0;
      /* a crash after the publishing rename: the blocks are in the output
       * now, at the same offsets (their checksums say whether it is still
       * that file) */
      info->in_published = gone && published && *published;
      if (info->in_published) s->sfd = open(published, O_RDONLY | O_CLOEXEC);
      snprintf(s->sfd_name, sizeof s->sfd_name, "%s", info->in_published ? published : name);
      off += 16 + head[1] + (8 - head[1] % 8) % 8;
      continue;
    }
    if (is_jrec(magic)) { /* what a recovery without a spill reads (sp__stream_journal_read) */
      uint64_t len = jrec_at(fd, off, (uint64_t)size, NULL);
      if (!len) break;
      off += len;
      continue;
    }
    if (magic == JPATCH_MAGIC) { /* (read ahead: journal_patches) */
      if (off + sizeof(struct jpatch) > (uint64_t)size) break;
      off += sizeof(struct jpatch);
      continue;
    }
    if (magic == JSEG_MAGIC) { /* a staged segment: its calls read from the staged file, checked */
      struct jseg j;
      if (off + sizeof j > (uint64_t)size || get_at(fd, &j, sizeof j, off) != 0 || s->sfd < 0 ||
          j.count > ((uint64_t)1 << 40) || ncols)
        break;
      int whole = 1;
      for (int c = 0; c < 4 && whole; c++) {
        uint64_t sum[2] = {0, 0};
        for (uint64_t p = 0; p < j.count && whole; p += 8192) {
          uint64_t kn = j.count - p < 8192 ? j.count - p : 8192;
          whole = get_at(s->sfd, col, kn * 8, j.coff[c] + p * 8) == 0;
          if (c == 3) unpatch(patch, npatch, col, kn, j.coff[c] + p * 8);
          jsum(sum, col, kn);
        }
        whole = whole && sum[0] == j.sum[c][0] && sum[1] == j.sum[c][1];
      }
      if (!whole) break; /* torn: the crash came before its data was on the disk */
      info->segs++;
      uint32_t region = j.region <= nreg ? idmap[j.region] : 0;
      int known = 0;
      for (sp_thread_rec *t = m->threads; t && !known; t = t->next) known = t->index == j.thread;
      if (region && known && region < s->nregions) {
        struct seg g = {region, j.thread, j.count, 0, 0, 0, 1, j.base, {j.coff[0], j.coff[1], j.coff[2], j.coff[3]}, 0, {{0}}};
        if (add_seg(s, &g) != 0) break;
        s->calls[region] += j.count;
        n += j.count;
      }
      off += sizeof j;
      continue;
    }
    if (off + SEG_HEAD > (uint64_t)size || get_at(fd, &h, sizeof h, off) != 0 || h.magic != SEG_MAGIC) break;
    uint64_t data = h.count * 8 * (uint64_t)(4 + h.ncols);
    if (h.count > ((uint64_t)1 << 40) || h.ncols != (uint32_t)ncols || off + SEG_HEAD + data > (uint64_t)size) break;
    /* a hole in its bytes (the file cut short, and written past since)
     * reads as zeros: torn, as finalize's check_raw_segment finds it; the
     * private copy below has no holes left to find */
    if (hole_within(fd, off, off + SEG_HEAD + data) >= 0) break;
    uint32_t region = h.region <= nreg ? idmap[h.region] : 0;
    int known = 0;
    for (sp_thread_rec *t = m->threads; t && !known; t = t->next) known = t->index == h.thread;
    if (region && known && region < s->nregions) {
      if (s->nsegs == s->segs_cap) {
        size_t cap = s->segs_cap ? s->segs_cap * 2 : 256;
        struct seg *g = realloc(s->segs, cap * sizeof *g);
        if (!g) break;
        s->segs = g;
        s->segs_cap = cap;
      }
      s->segs[s->nsegs++] = (struct seg){region, h.thread, h.count, off + SEG_HEAD, 0, 0, 0, 0, {0}, 0, {{0}}};
      s->calls[region] += h.count;
      n += h.count;
    }
    off += SEG_HEAD + data;
  }
  /* Exclusive time of the staged calls: each call's duration, less that of
   * its children of the same thread that were staged too (a child of a call
   * still open at the crash is in that call's kept child time). */
  struct staged *v = malloc((n ? n : 1) * sizeof *v);
  size_t k = 0;
  int ok = v && col;
  for (size_t g = 0; g < s->nsegs && ok; g++) {
    const struct seg *sg = &s->segs[g];
    for (uint64_t p = 0; p < sg->count && ok; p += 8192) {
      uint64_t kn = sg->count - p < 8192 ? sg->count - p : 8192;
      for (int c = 0; c < 4 && ok; c++)
        ok = sg->staged ? get_at(s->sfd, col + c * 8192, kn * 8, sg->coff[c] + p * 8) == 0
                        : get_at(fd, col + c * 8192, kn * 8, sg->off + ((uint64_t)c * sg->count + p) * 8) == 0;
      for (uint64_t i = 0; i < kn && ok; i++) {
        int64_t d = sg->staged ? col[8192 + i] /* ns already */
                               : sp__ticks_to_ns(cm, (uint64_t)col[8192 + i]) - sp__ticks_to_ns(cm, (uint64_t)col[i]);
        v[k++] = (struct staged){col[2 * 8192 + i], col[3 * 8192 + i], d < 0 ? 0 : d, sg->region, sg->thread};
      }
    }
  }
  free(col);
  free(patch);
  if (ok) {
    qsort(v, k, sizeof *v, cmp_staged);
    for (size_t i = 0; i < k; i++) {
      s->excl[v[i].region] += v[i].dur;
      struct staged key = {v[i].parent, 0, 0, 0, 0};
      const struct staged *p = v[i].parent >= 0 ? bsearch(&key, v, k, sizeof *v, cmp_staged) : NULL;
      if (p && p->thread == v[i].thread) s->excl[p->region] -= v[i].dur;
    }
  }
  free(v);
  s->file_end = off;
  int copy = ok ? private_copy(fd, off) : -1;
  close(fd);
  fd = s->fd = copy;
  ok = ok && copy >= 0;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_cond_init(&s->idle, NULL);
  if (!ok || pthread_create(&s->th, NULL, writer, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->idle);
    if (fd >= 0) close(fd);
    if (s->sfd >= 0) close(s->sfd);
    free(s->segs);
    free(s->excl);
    free(s->dropped);
    free(s->calls);
    free(s->acc);
    free(s);
    return -1;
  }
  m->stream = s;
  return clean ? 0 : 1;
}

void sp__stream_journal_free(struct sp_journal *j) {
  for (size_t k = 0; k < j->nset; k++) free(j->keys[k]), free(j->vals[k]);
  for (size_t k = 0; k < j->nreg; k++) free(j->reg[k].name), free(j->reg[k].file), free(j->reg[k].tags);
  free(j->keys);
  free(j->vals);
  free(j->reg);
  free(j->thr);
  memset(j, 0, sizeof *j);
}

/* One record's payload into j; -1 when it does not parse (from another
 * build, or damaged in a way its checksum missed). */
static int journal_rec(struct sp_journal *j, uint64_t magic, const unsigned char *b, uint64_t len) {
  struct sp_rd in = {b, b + len, 0};
  if (magic == JRUN_MAGIC) {
    if (sp__rd_u32(&in) != JREC_VERSION || j->have_run) return -1;
    j->clock_kind = sp__rd_u32(&in);
    j->tick0 = sp__rd_u64(&in);
    j->ns0 = (int64_t)sp__rd_u64(&in);
    j->start_ns = (int64_t)sp__rd_u64(&in);
    j->rank = (int)sp__rd_u32(&in);
    j->size = (int)sp__rd_u32(&in);
    j->pid = sp__rd_u32(&in);
    uint32_t n = sp__rd_u32(&in);
    if (in.bad || n > 4096 || !(j->keys = calloc(n + 1, sizeof *j->keys)) || !(j->vals = calloc(n + 1, sizeof *j->vals)))
      return -1;
    for (uint32_t k = 0; k < n && !in.bad; k++) {
      j->keys[k] = sp__rd_str(&in);
      j->vals[k] = sp__rd_str(&in);
      j->nset = k + 1;
    }
    j->have_run = !in.bad;
  } else if (magic == JANC_MAGIC) {
    j->tick1 = sp__rd_u64(&in);
    j->ns1 = (int64_t)sp__rd_u64(&in);
    j->have_anchor = !in.bad;
  } else if (magic == JTHR_MAGIC) {
    struct sp_journal_thread t = {sp__rd_u32(&in), sp__rd_u32(&in), ""};
    char *name = sp__rd_str(&in);
    if (name) snprintf(t.name, sizeof t.name, "%s", name);
    free(name);
    struct sp_journal_thread *v = in.bad ? NULL : realloc(j->thr, (j->nthr + 1) * sizeof *v);
    if (!v) return -1;
    j->thr = v;
    v[j->nthr++] = t;
  } else if (magic == JREG_MAGIC) {
    uint32_t n = sp__rd_u32(&in);
    if (in.bad || n > len / 24) return -1;
    struct sp_journal_region *v = realloc(j->reg, (j->nreg + n + 1) * sizeof *v);
    if (!v) return -1;
    j->reg = v;
    for (uint32_t k = 0; k < n && !in.bad; k++) {
      struct sp_journal_region r = {0};
      r.id = sp__rd_u32(&in);
      r.kind = sp__rd_u32(&in);
      r.line = (int)sp__rd_u32(&in);
      r.opt_in = sp__rd_u32(&in);
      r.name = sp__rd_str(&in);
      r.file = sp__rd_str(&in);
      uint32_t nt = sp__rd_u32(&in);
      for (uint32_t t = 0; t < nt && t < 256 && !in.bad; t++) {
        char *tg = sp__rd_str(&in);
        char *joined = tg ? sp__asprintf("%s%s%s", r.tags ? r.tags : "", r.tags ? "," : "", tg) : NULL;
        free(tg);
        free(r.tags);
        r.tags = joined;
        if (!joined) in.bad = 1;
      }
      v[j->nreg++] = r;
    }
  }
  return in.bad ? -1 : 0;
}

int sp__stream_journal_read(const char *path, struct sp_journal *j) {
  memset(j, 0, sizeof *j);
  j->rank = j->size = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    sp__set_error(SP_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  off_t size = lseek(fd, 0, SEEK_END);
  uint64_t off = 0, head[2] = {0, 0};
  if (size < 16 || get_at(fd, head, sizeof head, 0) != 0 || head[0] != JFILE_MAGIC) {
    close(fd);
    sp__set_error(SP_ERR_FORMAT, "%s is not the journal of a staged run (it does not start with SPSTGF01)", path);
    return -1;
  }
  while (off < (uint64_t)size) {
    uint64_t len = 0;
    unsigned char *b = NULL;
    if (get_at(fd, head, sizeof head, off) != 0) break;
    if (head[0] == JFILE_MAGIC) {
      if (head[1] >= sizeof j->staged || off + 16 + head[1] > (uint64_t)size ||
          get_at(fd, j->staged, head[1], off + 16) != 0)
        break;
      j->staged[head[1]] = 0;
      len = 16 + head[1] + (8 - head[1] % 8) % 8;
    } else if (head[0] == JSEG_MAGIC) {
      len = sizeof(struct jseg);
    } else if (head[0] == JPATCH_MAGIC) {
      len = sizeof(struct jpatch);
    } else if (head[0] == SEG_MAGIC) {
      struct seg_head h;
      if (get_at(fd, &h, sizeof h, off) != 0 || h.count > ((uint64_t)1 << 40) || h.ncols > 4096) break;
      len = SEG_HEAD + h.count * 8 * (uint64_t)(4 + h.ncols);
    } else if (is_jrec(head[0])) {
      if (!(len = jrec_at(fd, off, (uint64_t)size, &b))) break;
      int bad = journal_rec(j, head[0], b, head[1]);
      free(b);
      if (bad) break;
    } else {
      break;
    }
    if (off + len > (uint64_t)size) break;
    j->segs += head[0] == JSEG_MAGIC || head[0] == SEG_MAGIC; /* (whole: adopt checks their data) */
    off += len;
  }
  j->torn = off != (uint64_t)size;
  close(fd);
  return 0;
}

int sp__stream_is_journal(const unsigned char head[8]) {
  uint64_t magic;
  memcpy(&magic, head, sizeof magic);
  return magic == JFILE_MAGIC || magic == SEG_MAGIC;
}

int sp__stream_journal_staged(const char *path, char *name, size_t len) {
  uint64_t head[2];
  int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
  if (len) name[0] = 0;
  if (fd >= 0 && get_at(fd, head, sizeof head, 0) == 0 && head[0] == JFILE_MAGIC && head[1] < len &&
      get_at(fd, name, head[1], 16) == 0) {
    name[head[1]] = 0;
    ok = 1;
  }
  if (fd >= 0) close(fd);
  if (!ok && len) name[0] = 0;
  return ok ? 0 : -1;
}

void sp__stream_crash_unlink(const struct sp_manager *m) {
  const struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  /* the staged HDF5 file holds the calls of every staged block (the
   * journal in the raw staging file says where): recovery reads them back.
   * With no block staged yet it is no use to anyone. */
  if (s && __atomic_load_n(&s->stage_tmp[0], __ATOMIC_RELAXED) && !__atomic_load_n(&s->sblocks, __ATOMIC_ACQUIRE))
    unlink(s->stage_tmp);
}

const char *sp__stream_staged_name(const struct sp_manager *m) {
  const struct sp_stream *s = m->stream;
  return s && s->stage_tmp[0] ? s->stage_tmp : NULL;
}

void sp__stream_unlink_staged(struct sp_manager *m) {
  struct sp_stream *s = m->stream;
  if (!s || !s->stage_tmp[0]) return;
  unlink(s->stage_tmp);
  /* gone: nothing may remove the name again (another run's mkstemp may
   * take it), and the crash handler reads it; nor may the stage, which
   * keeps the name too (its close at destroy removed it) */
  __atomic_store_n(&s->stage_tmp[0], 0, __ATOMIC_RELAXED);
  sp__stage_forget(s->stage);
}

uint64_t sp__stream_blocks_now(const struct sp_manager *m) {
  const struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) return 0;
  /* a plain read: called from a fatal-signal handler, where no lock may be
   * taken; a block counted a moment late only makes the count larger */
  return __atomic_load_n(&s->blocks, __ATOMIC_RELAXED) + (__atomic_load_n(&s->head, __ATOMIC_RELAXED) != NULL) +
         (__atomic_load_n(&s->current, __ATOMIC_RELAXED) != NULL);
}

uint64_t sp__stream_in_flight(const struct sp_manager *m, uint64_t *done) {
  struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  *done = 0;
  if (!s) return 0;
  pthread_mutex_lock(&s->mu);
  *done = s->ndone;
  uint64_t n = s->current != NULL;
  for (const struct block *b = s->head; b; b = b->next) n++;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void sp__stream_waits(const struct sp_manager *m, uint64_t *handoffs, uint64_t *waits, uint64_t *wait_ns) {
  *handoffs = *waits = *wait_ns = 0;
  struct sp_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  *handoffs = s->handoffs;
  *waits = s->waits;
  *wait_ns = s->wait_ns;
  pthread_mutex_unlock(&s->mu);
}

uint64_t sp__stream_calls(const struct sp_manager *m, uint32_t region) {
  struct sp_stream *s = m->stream;
  if (!s) return 0;
  /* Written calls, plus those still in buffers on their way to the writer. */
  pthread_mutex_lock(&s->mu);
  uint64_t n = region < s->nregions ? s->calls[region] : 0;
  for (const struct block *b = s->current ? s->current : s->head; b; b = b == s->current ? s->head : b->next)
    for (uint64_t i = 0; i < b->n; i++) n += b->ev[i].end && b->ev[i].region == region;
  pthread_mutex_unlock(&s->mu);
  return n;
}
