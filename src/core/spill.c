/* spill.c - crash spill files: the raw per-thread buffers of every live
 * manager written with plain write(2) from a fatal-signal handler, and their
 * recovery into a normal HDF5 file (`scope-profiler recover SPILL`).
 *
 * Writing is async-signal-safe: no allocation, no locks, no stdio. Everything
 * the writer needs that would otherwise allocate (the configuration as
 * key=value text, the spill path) is prepared at setup. Recovery rebuilds the
 * manager's threads and regions from the file and runs the same snapshot and
 * writer code as finalize, so a recovered file is a normal profile file.
 *
 * Layout (native endianness, version 2): "SPSPILL1", u32 version, u32 signal,
 * the clock anchors of the run start and of the crash, u32 count + key=value
 * strings of the resolved settings, u32 region count + per region (name,
 * file, line, kind, tags), u32 thread count + per thread (index, tid, name,
 * event count, raw events, open-call count), then optional sections behind
 * 8-byte tags (the rank and job size, the cross-thread contexts, a streamed
 * run's staging file, where finalize was in publishing the file, that it
 * was rewriting the buffers, which the spill then leaves out), then
 * "SPILLEND". Strings are u32 length + bytes. A file that ends early (the
 * process died while writing) is recovered up to its last complete thread.
 * Version 1 differs only in the aggregation accumulators (struct agg_v1:
 * shifted floating-point sums where version 2 keeps an exact sum of
 * squares); it is still read.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/metadata.h"
#include "core/rd.h"
#include "core/snapshot.h"
#include "core/spill.h"
#include "core/stream.h"

#define SPILL_MAGIC "SPSPILL1"
#define SPILL_END "SPILLEND"
#define SPILL_RANK "SPRANK01" /* i32 rank, i32 size of the job (-1: unknown) */
#define SPILL_XCTX "SPXCTX01" /* u32 n, n x (u64 start, u32 thread, u32 depth, i64 id): cross-thread contexts */
#define SPILL_STRM "SPSTRM01" /* u64 blocks the run had streamed (their calls are not in the spill) */
/* The staging file of a streaming run: str path, i64 next call id, u32 writer
 * idle, u32 n, n x (u32 thread index, u32 kept calls, kept x (i64 id, i64
 * child ns)): what recovery needs to read back the streamed calls. */
#define SPILL_STAGE "SPSTAGE1"
/* Written only when the crash came while finalize was writing the run's
 * file: u32 SP_PUBSTATE_*, str file_path (where it was being published). */
#define SPILL_PUB "SPPUBL01"
/* Written only when finalize was rewriting the buffers (compacting them
 * once written): u64 calls the run held. The threads then carry no events
 * and no accumulators; the spill does not hold those calls. */
#define SPILL_REWR "SPREWR01"
#define SPILL_VERSION 2u

/* Version 1's accumulator: sums of d - shift and of its square. */
struct agg_v1 {
  uint64_t count;
  int64_t total, excl, min, max, first, last, shift;
  uint64_t start_min, last_start, end_max;
  double s1, s2;
};

/*====== Writing (async-signal-safe) ======*/

struct out {
  int fd;
  int failed;
};

static void put(struct out *o, const void *p, size_t n) {
  const char *c = p;
  while (n && !o->failed) {
    ssize_t w = write(o->fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      o->failed = 1;
      return;
    }
    c += w;
    n -= (size_t)w;
  }
}

static void put_u32(struct out *o, uint32_t v) { put(o, &v, sizeof v); }
static void put_u64(struct out *o, uint64_t v) { put(o, &v, sizeof v); }
static void put_str(struct out *o, const char *s) {
  uint32_t n = 0;
  while (s && s[n]) n++;
  put_u32(o, n);
  put(o, s, n);
}

void (*sp__spill_test_hook)(struct sp_manager *m);

int sp__spill_write(struct sp_manager *m, int sig) { return sp__spill_write_to(m, sig, m->spill_path); }

struct settled {
  int own;          /* SP_STREAM_OWN_*: where the stream writer was */
  uint32_t thread;  /* PASS: the thread index of its block */
  int64_t idbound;  /* PASS: above every call id given so far */
};
static int spill_write_body(struct sp_manager *m, int sig, const char *path, int rewriting, const struct settled *w);

/* The spill tells a finalize under way that it reads the buffers: finalize
 * waits for it before it rewrites them (compacts what it wrote). Found
 * already rewriting them (a crash in finalize past its write, the MPI
 * watcher's spill beside a finalize it could not wait for), the spill
 * leaves them out and says how many calls they held: half compacted, they
 * would recover as a "complete" run missing its calls. Found finished
 * (the run no longer active), there is nothing to spill. */
int sp__spill_write_to(struct sp_manager *m, int sig, const char *path) {
  if (!path || !path[0] || !m->have_cfg) return -1;
  __atomic_add_fetch(&m->spilling, 1, __ATOMIC_SEQ_CST);
  int rewriting = __atomic_load_n(&m->fin_rewriting, __ATOMIC_SEQ_CST) != 0;
  int rc = -1;
  /* (after spilling is raised: the stream writer begins no block now) */
  struct settled w = {0, 0, 0};
  w.own = sp__stream_spill_settle(m, &w.thread, &w.idbound);
  if (rewriting || __atomic_load_n(&m->run_active, __ATOMIC_ACQUIRE)) rc = spill_write_body(m, sig, path, rewriting, &w);
  __atomic_sub_fetch(&m->spilling, 1, __ATOMIC_SEQ_CST);
  return rc;
}

/* A stream writer still in a block's pass (w->own PASS: it did not finish
 * in the bounded wait, or the crash is in it) may be rewriting the kept
 * calls of its thread, the next call id and the contexts: the spill reads
 * none of them. That thread's open calls then take new ids at recovery,
 * above any the block can have given; the contexts are left out; the
 * block is in hand, so recovery says the run is partial. */
static int spill_write_body(struct sp_manager *m, int sig, const char *path, int rewriting, const struct settled *w) {
  const int pass = w->own == SP_STREAM_OWN_PASS;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  struct out o = {fd, 0};
  uint64_t tick1;
  int64_t ns1;
  sp__clock_anchor(&tick1, &ns1);
  put(&o, SPILL_MAGIC, 8);
  put_u32(&o, SPILL_VERSION);
  put_u32(&o, (uint32_t)sig);
  put_u64(&o, m->run_tick0);
  put_u64(&o, (uint64_t)m->run_ns0);
  put_u64(&o, tick1);
  put_u64(&o, (uint64_t)ns1);
  put_u64(&o, (uint64_t)m->cfg.start_time_ns);
  put_u32(&o, (uint32_t)sp_i_clock_tsc);
  /* Settings as key=value, from the text the resolver rendered at setup. */
  put_u32(&o, SP__NSETTINGS);
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    put_str(&o, sp_setting_name(i));
    put_str(&o, m->cfg.text[i] ? m->cfg.text[i] : "");
  }
  uint32_t maxid = sp__region_max_id();
  put_u32(&o, maxid);
  for (uint32_t id = 1; id <= maxid; id++) {
    const struct sp_region_info *ri = sp__region_info(id);
    put_str(&o, ri ? ri->name : "?");
    put_str(&o, ri ? ri->file : NULL);
    put_u32(&o, (uint32_t)(ri ? ri->line : -1));
    put_u32(&o, (uint32_t)(ri ? ri->kind : 0));
    put_u32(&o, (uint32_t)(ri ? ri->ntags : 0));
    for (size_t k = 0; ri && k < ri->ntags; k++) put_str(&o, ri->tags[k]);
  }
  if (sp__spill_test_hook) sp__spill_test_hook(m);
  uint32_t nthreads = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) nthreads++;
  put_u32(&o, nthreads);
  for (sp_thread_rec *t = m->threads; t && nthreads; t = t->next, nthreads--) {
    put_u32(&o, t->index);
    put_u32(&o, (uint32_t)t->tid);
    put_str(&o, t->name);
    uint64_t n = rewriting ? 0 : t->hot.n; /* a racing thread may append; n bounds what is read */
    put_u64(&o, n);
    put(&o, t->hot.ev, n * sizeof *t->hot.ev);
    /* aggregation accumulators */
    uint32_t acc_cap = rewriting ? 0 : t->hot.acc_cap;
    put_u32(&o, acc_cap);
    put(&o, t->hot.acc, (size_t)acc_cap * sizeof *t->hot.acc);
  }
  /* Optional sections, each behind its tag (older spills end here). */
  put(&o, SPILL_RANK, 8);
  put_u32(&o, (uint32_t)m->spill_rank);
  put_u32(&o, (uint32_t)m->spill_size);
  uint32_t nx = rewriting || pass ? 0 : __atomic_load_n(&m->nxctx, __ATOMIC_ACQUIRE);
  put(&o, SPILL_XCTX, 8);
  put_u32(&o, nx);
  for (uint32_t k = 0; k < nx; k++) {
    const struct sp_xctx *c = m->xctx[k / SP__XCTX_CHUNK] ? &m->xctx[k / SP__XCTX_CHUNK][k % SP__XCTX_CHUNK] : NULL;
    put_u64(&o, c ? c->start : 0);
    put_u32(&o, c ? c->thread : UINT32_MAX);
    put_u32(&o, c ? c->depth : 0);
    put_u64(&o, (uint64_t)(c ? c->id : -1));
  }
  if (!pass) sp__stream_crash_unlink(m); /* (a first block's pass may be naming the staged file) */
  if (m->stage_path[0] && !rewriting) { /* (its kept calls are in the buffers) */
    put(&o, SPILL_STAGE, 8);
    put_str(&o, m->stage_path);
    put_u64(&o, (uint64_t)(pass ? w->idbound : m->next_callid));
    put_u32(&o, (uint32_t)sp__stream_idle_now(m));
    uint32_t nt = 0;
    for (sp_thread_rec *t = m->threads; t; t = t->next) nt++;
    put_u32(&o, nt);
    for (sp_thread_rec *t = m->threads; t && nt; t = t->next, nt--) {
      uint32_t nk = pass && t->index == w->thread ? 0 : t->nkept;
      put_u32(&o, t->index);
      put_u32(&o, nk);
      for (uint32_t k = 0; k < nk; k++) {
        put_u64(&o, (uint64_t)t->kept_ids[k]);
        put_u64(&o, (uint64_t)t->kept_child[k]);
      }
    }
  }
  put(&o, SPILL_STRM, 8);
  put_u64(&o, sp__stream_blocks_now(m));
  uint32_t pub = (uint32_t)__atomic_load_n(&m->pub_state, __ATOMIC_ACQUIRE);
  if (pub != SP_PUBSTATE_NONE) {
    put(&o, SPILL_PUB, 8);
    put_u32(&o, pub);
    put_str(&o, m->cfg.file_path);
  }
  if (rewriting) {
    put(&o, SPILL_REWR, 8);
    put_u64(&o, __atomic_load_n(&m->fin_rewrite_calls, __ATOMIC_RELAXED));
  }
  put(&o, SPILL_END, 8);
  fsync(fd);
  close(fd);
  return o.failed ? -1 : 0;
}

/*====== Recovery ======*/

/* A spill is outside data: its times feed conversions and int64 ns sums
 * that trust in-process values. Ticks more than TICK_REACH from the run's
 * start tick, or call durations adding up to 2^62 ns (146 years), would
 * overflow them; a real run is years and a century away from either. */
#define TICK_REACH (UINT64_C(1) << 56)

static int near_start(uint64_t t, uint64_t tick0) {
  return (t >= tick0 ? t - tick0 : tick0 - t) < TICK_REACH;
}

/* An event that ended must end after it starts, near the run; otherwise it
 * is dropped like a call of an unknown region. Adds its duration to *spent. */
static void check_event(struct sp_i_event *ev, uint64_t tick0, uint64_t *spent) {
  if (!ev->end) return;
  if (ev->end < ev->start || !near_start(ev->start, tick0) || !near_start(ev->end, tick0) ||
      __builtin_add_overflow(*spent, ev->end - ev->start, spent)) {
    ev->region = 0;
    ev->end = 0;
  }
}

/* An accumulator whose fields contradict each other is dropped (count 0).
 * Adds its time to *spent and its calls to *calls (the file's int64 counts
 * must hold their sum). */
static void check_agg(struct sp_i_agg *a, uint64_t tick0, uint64_t *spent, uint64_t *calls) {
  if (!a->count) return;
  int64_t reach = (int64_t)TICK_REACH;
  uint64_t sum;
  int ok = a->min >= 0 && a->min <= a->max && a->max <= a->total && a->total < reach &&
           a->excl > -reach && a->excl < reach && a->first >= 0 && a->first <= a->max &&
           a->last >= 0 && a->last <= a->max && near_start(a->start_min, tick0) &&
           near_start(a->last_start, tick0) && near_start(a->end_max, tick0) &&
           !__builtin_add_overflow(*calls, a->count, &sum) && sum < (UINT64_C(1) << 62) &&
           !__builtin_add_overflow(*spent, (uint64_t)a->total, spent);
#if defined(__SIZEOF_INT128__)
  /* The longest call's square is one of the terms, and each term is at
   * most max times its call: max^2 <= sq <= max total (< 2^112, so that
   * sp__agg_m2's 128-bit arithmetic cannot overflow). */
  ok = ok && a->sq >= (sp_i_u128)a->max * (sp_i_u128)a->max &&
       a->sq <= (sp_i_u128)a->max * (sp_i_u128)a->total;
#else
  ok = ok && a->sq[1] < (UINT64_C(1) << 48);
#endif
  if (ok) *calls = sum;
  else a->count = 0;
}

/* A version 1 accumulator in today's form (its sum of squares rebuilt from
 * the shifted sums: as exact as they were); out of range: count 0. */
static void agg_from_v1(struct sp_i_agg *a, const struct agg_v1 *o) {
  memset(a, 0, sizeof *a);
  a->count = o->count;
  a->total = o->total;
  a->excl = o->excl;
  a->min = o->min;
  a->max = o->max;
  a->first = o->first;
  a->last = o->last;
  a->start_min = o->start_min;
  a->last_start = o->last_start;
  a->end_max = o->end_max;
  double sh = (double)o->shift;
  double sq = o->s2 + 2 * sh * o->s1 + (double)o->count * sh * sh;
  if (!(isfinite(sq) && sq >= 0 && sq < 1e36)) {
    a->count = 0;
    return;
  }
#if defined(__SIZEOF_INT128__)
  /* Every exact sum of squares lies in [max^2, max total] (check_agg's
   * test); the rebuild's rounding can leave it just outside (one call of
   * 150000001 ticks: d^2 is not a double and rounds down), which would drop
   * the region. Out-of-range fields are check_agg's to refuse. */
  sp_i_u128 v = (sp_i_u128)sq;
  if (o->max >= 0 && o->max <= o->total && o->total < (INT64_C(1) << 56)) {
    sp_i_u128 lo = (sp_i_u128)o->max * (sp_i_u128)o->max, hi = (sp_i_u128)o->max * (sp_i_u128)o->total;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
  }
  a->sq = v;
#else
  a->sq[1] = (uint64_t)(sq / 18446744073709551616.0);
  a->sq[0] = (uint64_t)(sq - (double)a->sq[1] * 18446744073709551616.0);
#endif
}

/* The whole of a spill file; NULL with the message set. */
static unsigned char *read_spill(const char *spill, size_t *lenp) {
  FILE *f = fopen(spill, "rb");
  if (!f) {
    sp__set_error(SP_ERR_IO, "cannot open spill file %s: %s", spill, strerror(errno));
    return NULL;
  }
  unsigned char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 1 << 20;
      if (cap > ((size_t)1 << 40)) break;
      unsigned char *n = realloc(buf, cap);
      if (!n) break;
      buf = n;
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  fclose(f);
  *lenp = len;
  if (!buf) sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", spill);
  return buf;
}

/* A spill read back: a manager holding the crashed run's settings, regions
 * and buffers, ready to finalize as of the crash. */
struct recovered {
  struct sp_manager *m;
  uint64_t tick1;
  int64_t ns1;
  uint32_t sig;
  int complete;
  int rank, size; /* -1: the spill does not say */
  uint64_t streamed_lost; /* blocks streamed before the crash: their calls are not in the spill */
  int rewritten;          /* spilled while finalize rewrote the buffers: they are left out */
  uint64_t calls_lost;    /* and the calls they held */
  /* the crash came while finalize wrote the run's file (SP_PUBSTATE_*) to
   * pub_path; published: it was published complete there (nothing to do) */
  int pub, published;
  char *pub_path;
  char *file_path;    /* the crashed run's file_path, as its settings say */
  char *journal;      /* the raw staging file the spill names (NULL none) */
  char staged[4096];  /* the staged HDF5 file its journal names ("" none) */
};

static void recovered_free(struct recovered *rv) {
  sp_manager_destroy(rv->m);
  rv->m = NULL;
  free(rv->pub_path);
  free(rv->journal);
  free(rv->file_path);
  rv->pub_path = rv->journal = rv->file_path = NULL;
}

/* The parser proper, on bytes in memory; `spill` only names the input in
 * messages. On success rv->m is the caller's to destroy. */
static sp_status spill_load(const void *data, size_t len, const char *spill, const char *out_path,
                            struct recovered *rv) {
  memset(rv, 0, sizeof *rv);
  rv->rank = rv->size = -1;
  char *stage = NULL; /* the staging file a streaming run named */
  int stage_idle = 0;
  const unsigned char *buf = data;
  struct sp_rd in = {buf, buf + len, 0};
  char magic[8];
  if (!buf || sp__rd_get(&in, magic, 8) != 0 || memcmp(magic, SPILL_MAGIC, 8) != 0)
    return sp__set_error(SP_ERR_FORMAT, "%s is not a scope-profiler spill file (bad magic)", spill);
  uint32_t version = sp__rd_u32(&in);
  if (version != SPILL_VERSION && version != 1) {
    return sp__set_error(SP_ERR_FORMAT, "%s: spill version %u is not supported (this build reads 1 to %u)", spill,
                         version, SPILL_VERSION);
  }
  uint32_t sig = sp__rd_u32(&in);
  uint64_t tick0 = sp__rd_u64(&in);
  int64_t ns0 = (int64_t)sp__rd_u64(&in);
  uint64_t tick1 = sp__rd_u64(&in);
  int64_t ns1 = (int64_t)sp__rd_u64(&in);
  int64_t start_ns = (int64_t)sp__rd_u64(&in);
  uint32_t clock_kind = sp__rd_u32(&in);
  uint32_t nset = sp__rd_u32(&in);
  if (in.bad || nset > 4096) {
    return sp__set_error(SP_ERR_FORMAT, "%s: truncated or corrupt spill header", spill);
  }
  if (tick1 < tick0 || ns0 < 0 || ns1 < ns0 || ns1 >= (INT64_C(1) << 62) || tick1 - tick0 >= TICK_REACH)
    return sp__set_error(SP_ERR_FORMAT, "%s: the clock anchors in the spill header are corrupt", spill);
  /* The run's settings, replayed as overrides so recovery resolves the
   * same configuration (file_path can be redirected with out_path). */
  char **ov = calloc((size_t)nset + 2, sizeof *ov);
  size_t nov = 0;
  sp_status st = SP_OK;
  for (uint32_t k = 0; k < nset && !in.bad && ov; k++) {
    char *key = sp__rd_str(&in), *val = sp__rd_str(&in);
    if (key && val && *val && strcmp(key, "file_path") != 0)
      ov[nov++] = sp__asprintf("%s=%s", key, val);
    else if (key && val && strcmp(key, "file_path") == 0 && !out_path)
      ov[nov++] = sp__asprintf("%s=%s", key, val);
    if (key && val && strcmp(key, "file_path") == 0) {
      free(rv->file_path);
      rv->file_path = sp__strdup(val);
    }
    free(key);
    free(val);
  }
  if (out_path && ov) ov[nov++] = sp__asprintf("file_path=%s", out_path);

  struct sp_manager *m = sp_manager_create();
  uint32_t nreg = sp__rd_u32(&in);
  uint32_t *idmap = !in.bad && nreg < (1u << 24) ? calloc((size_t)nreg + 1, sizeof *idmap) : NULL;
  if (!m || !ov || !idmap) {
    st = in.bad ? sp__set_error(SP_ERR_FORMAT, "%s: truncated or corrupt spill file", spill)
                : sp__set_error(SP_ERR_NO_MEMORY, "out of memory recovering %s", spill);
    goto done;
  }
  /* Resolve with the environment set aside: the crashed run's values win. */
  sp_setup_args args = {.overrides = (const char *const *)ov, .replace = 1};
  if ((st = sp__manager_setup_ex(m, &args, SP__SETUP_SILENT)) != SP_OK) goto done;
  for (uint32_t id = 1; id <= nreg && !in.bad; id++) {
    char *name = sp__rd_str(&in), *file = sp__rd_str(&in);
    int line = (int)sp__rd_u32(&in);
    int kind = (int)sp__rd_u32(&in);
    uint32_t ntags = sp__rd_u32(&in);
    size_t tl = 0;
    char tags[4096] = "";
    for (uint32_t k = 0; k < ntags && k < 256 && !in.bad; k++) {
      char *tg = sp__rd_str(&in);
      if (tg) tl += (size_t)snprintf(tags + tl, tl < sizeof tags ? sizeof tags - tl : 0, "%s%s", k ? "," : "", tg);
      free(tg);
    }
    if (name && !in.bad) {
      sp_region r = sp_region_intern_ex(name, file && *file ? file : NULL, line, NULL, ntags ? tags : NULL);
      idmap[id] = r & ~SP_I_REGION_SLOW_BIT;
      struct sp_region_info *ri = (struct sp_region_info *)sp__region_info(r);
      if (ri && kind == SP_SITE_FUNCTION) ri->kind = SP_SITE_FUNCTION;
    }
    free(name);
    free(file);
  }
  uint32_t nthreads = sp__rd_u32(&in);
  sp_thread_rec **tail = &m->threads;
  uint64_t spent = 0, calls = 0; /* ticks of the calls recovered; count of the aggregated ones */
  for (uint32_t k = 0; k < nthreads && !in.bad; k++) {
    const unsigned char *mark = in.p;
    uint32_t index = sp__rd_u32(&in), tid = sp__rd_u32(&in);
    char *tname = sp__rd_str(&in);
    uint64_t n = sp__rd_u64(&in);
    if (in.bad || n > (uint64_t)(in.end - in.p) / sizeof(struct sp_i_event)) {
      free(tname);
      in.p = mark;
      in.bad = 1;
      break;
    }
    sp_thread_rec *t = calloc(1, sizeof *t);
    if (!t) break;
    t->m = m;
    t->index = index;
    t->tid = (pid_t)tid;
    snprintf(t->name, sizeof t->name, "%s", tname ? tname : "");
    free(tname);
    t->hot.cap = n ? n : 1;
    t->hot.ev = malloc(t->hot.cap * sizeof *t->hot.ev);
    if (t->hot.ev) sp__rd_get(&in, t->hot.ev, n * sizeof *t->hot.ev);
    t->hot.n = t->hot.ev ? n : 0;
    for (uint64_t e = 0; e < t->hot.n; e++) {
      uint32_t rid = t->hot.ev[e].region;
      t->hot.ev[e].region = rid <= nreg ? idmap[rid] : 0;
      if (!t->hot.ev[e].region) t->hot.ev[e].end = 0; /* unknown region: drop the call */
      check_event(&t->hot.ev[e], tick0, &spent);
    }
    uint32_t acc_cap = sp__rd_u32(&in);
    size_t rec = version == 1 ? sizeof(struct agg_v1) : sizeof(struct sp_i_agg);
    if (!in.bad && acc_cap <= (uint64_t)(in.end - in.p) / rec) {
      struct sp_i_agg *acc = acc_cap ? malloc((size_t)acc_cap * sizeof *acc) : NULL;
      if (acc_cap && acc && version == 1) {
        for (uint32_t j = 0; j < acc_cap; j++) {
          struct agg_v1 o;
          sp__rd_get(&in, &o, sizeof o);
          agg_from_v1(&acc[j], &o);
        }
      } else if (acc_cap && acc) {
        sp__rd_get(&in, acc, (size_t)acc_cap * sizeof *acc);
      } else if (acc_cap) {
        in.p += (size_t)acc_cap * rec; /* no memory: skip them */
      }
      /* remap accumulator slots onto this process's region ids */
      uint32_t need = 1;
      for (uint32_t id = 1; id < acc_cap && id <= nreg; id++)
        if (idmap[id] + 1 > need) need = idmap[id] + 1;
      t->hot.acc = calloc(need, sizeof *t->hot.acc);
      t->hot.acc_cap = t->hot.acc ? need : 0;
      if (t->hot.acc) sp__agg_reset(t->hot.acc, need);
      for (uint32_t id = 1; acc && t->hot.acc && id < acc_cap && id <= nreg; id++) {
        check_agg(&acc[id], tick0, &spent, &calls);
        if (idmap[id] && acc[id].count) t->hot.acc[idmap[id]] = acc[id];
      }
      free(acc);
    }
    *tail = t;
    tail = &t->next;
    m->nthreads++;
  }
  /* The optional sections, then the end marker. A crash while writing
   * leaves a file without it: recover the threads that are complete, and
   * say so. */
  int complete = 0;
  for (int sections = 0; !in.bad && sections < 16; sections++) {
    char tag[8] = {0};
    if (sp__rd_get(&in, tag, 8) != 0) break;
    if (memcmp(tag, SPILL_END, 8) == 0) {
      complete = 1;
      break;
    }
    if (memcmp(tag, SPILL_RANK, 8) == 0) {
      int r = (int)sp__rd_u32(&in), n = (int)sp__rd_u32(&in);
      if (!in.bad && r >= 0 && n > r) {
        rv->rank = r;
        rv->size = n;
      }
    } else if (memcmp(tag, SPILL_XCTX, 8) == 0) {
      uint32_t nx = sp__rd_u32(&in);
      if (in.bad || nx > (uint64_t)(in.end - in.p) / 24 || nx > SP__XCTX_CHUNK * SP__XCTX_CHUNKS) {
        in.bad = 1;
        break;
      }
      for (uint32_t k = 0; k < nx && !in.bad; k++) {
        uint64_t start = sp__rd_u64(&in);
        uint32_t thread = sp__rd_u32(&in), depth = sp__rd_u32(&in);
        int64_t id = (int64_t)sp__rd_u64(&in);
        if (sp__xctx_restore(m, k, thread, start, depth, id) != 0) in.bad = 1;
      }
    } else if (memcmp(tag, SPILL_STAGE, 8) == 0) {
      free(stage);
      stage = sp__rd_str(&in);
      int64_t next = (int64_t)sp__rd_u64(&in);
      stage_idle = (int)sp__rd_u32(&in);
      uint32_t nt = sp__rd_u32(&in);
      if (!in.bad && next >= 0 && next < (INT64_C(1) << 62)) m->next_callid = next;
      for (uint32_t j = 0; j < nt && !in.bad; j++) {
        uint32_t index = sp__rd_u32(&in), nk = sp__rd_u32(&in);
        sp_thread_rec *t = m->threads;
        while (t && t->index != index) t = t->next;
        if (in.bad || nk > (uint64_t)(in.end - in.p) / 16 || !t || nk > t->hot.n) {
          in.bad = 1;
          break;
        }
        t->kept_ids = calloc(nk + 1, sizeof *t->kept_ids);
        t->kept_child = calloc(nk + 1, sizeof *t->kept_child);
        if (!t->kept_ids || !t->kept_child) {
          in.bad = 1;
          break;
        }
        for (uint32_t k = 0; k < nk; k++) {
          t->kept_ids[k] = (int64_t)sp__rd_u64(&in);
          t->kept_child[k] = (int64_t)sp__rd_u64(&in);
          if (t->kept_ids[k] < 0 || t->kept_child[k] < 0) in.bad = 1;
        }
        t->nkept = t->kept_cap = nk;
      }
    } else if (memcmp(tag, SPILL_STRM, 8) == 0) {
      rv->streamed_lost = sp__rd_u64(&in);
    } else if (memcmp(tag, SPILL_REWR, 8) == 0) {
      rv->calls_lost = sp__rd_u64(&in);
      rv->rewritten = !in.bad;
    } else if (memcmp(tag, SPILL_PUB, 8) == 0) {
      uint32_t pub = sp__rd_u32(&in);
      free(rv->pub_path);
      rv->pub_path = sp__rd_str(&in);
      if (in.bad || !rv->pub_path || !rv->pub_path[0] || (pub != SP_PUBSTATE_WRITING && pub != SP_PUBSTATE_DONE)) {
        in.bad = 1;
        break;
      }
      rv->pub = (int)pub;
    } else {
      in.bad = 1; /* unknown section: not from this build */
    }
  }
  struct sp_clock_map cm = sp__clock_map(tick0, ns0, tick1, ns1);
  if ((double)spent * (double)cm.mult / 4294967296.0 >= 0x1p62) {
    st = sp__set_error(SP_ERR_FORMAT, "%s: the calls in the spill add up to an impossible duration; "
                       "the file is corrupt", spill);
    goto done;
  }
  m->run_tick0 = tick0;
  m->run_ns0 = ns0;
  m->cfg.start_time_ns = start_ns;
  (void)clock_kind;
  rv->m = m;
  rv->tick1 = tick1;
  rv->ns1 = ns1;
  rv->sig = sig;
  /* Calls streamed before the crash are read back from the staging file the
   * run kept; when it is gone, torn, or the writer had a block in hand, the
   * recovery is not complete, and says how many blocks it could miss. */
  /* A crash after finalize had published the file (its spill written
   * while the run was still active): the file is whole, nothing to do. One
   * while it published: the staged blocks are in the staged file, or, once
   * it was renamed, in the output, which is then whole too. */
  if (rv->pub == SP_PUBSTATE_DONE && complete) {
    rv->published = 1;
    if (stage) sp__stream_journal_staged(stage, rv->staged, sizeof rv->staged);
  } else if (stage && rv->streamed_lost && !in.bad) {
    struct sp_adopted ad;
    int got = sp__stream_adopt(m, stage, idmap, nreg, &cm, rv->pub == SP_PUBSTATE_WRITING ? rv->pub_path : NULL, &ad);
    if (got == 0 && stage_idle) rv->streamed_lost = 0;
    rv->published = got == 0 && complete && ad.in_published && ad.segs > 0;
    snprintf(rv->staged, sizeof rv->staged, "%s", ad.staged);
  }
  rv->complete = complete && rv->streamed_lost == 0 && !rv->rewritten;
  m->recovered_lost = rv->streamed_lost;
  m = NULL;
  rv->journal = stage;
  stage = NULL;
done:
  free(stage);
  sp_manager_destroy(m);
  if (st != SP_OK) {
    free(rv->pub_path);
    free(rv->file_path);
    rv->pub_path = rv->file_path = NULL;
  }
  for (size_t k = 0; ov && k < nov; k++) free(ov[k]);
  free(ov);
  free(idmap);
  return st;
}

/* The crashed run's files that recovery read and that are still there
 * (each once): what the caller may remove once the recovered file is safe. */
static void note_file(struct sp_recover_info *info, const char *path) {
  struct stat sb;
  if (!info || !path || !path[0] || lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return;
  for (size_t k = 0; k < info->nfiles; k++)
    if (!strcmp(info->files[k], path)) return;
  char **f = realloc(info->files, (info->nfiles + 1) * sizeof *f);
  if (!f) return;
  info->files = f;
  if ((f[info->nfiles] = sp__strdup(path))) info->nfiles++;
}

/* Whether `path` is named as the run's own file of that kind
 * (".<name of file_path>.<kind>.*") and starts with `magic` (n bytes; with
 * n 0, a staging file's first record or nothing). A spill is outside data:
 * the names it holds are removed only when they are what it says. */
static int own_file(const char *path, const char *file_path, const char *kind, const void *magic, size_t n) {
  if (!path || !path[0] || !file_path || !file_path[0]) return 0;
  const char *slash = strrchr(file_path, '/'), *base = slash ? slash + 1 : file_path;
  const char *pslash = strrchr(path, '/'), *pbase = pslash ? pslash + 1 : path;
  char *want = sp__asprintf(".%s.%s.", base, kind);
  int ok = want && !strncmp(pbase, want, strlen(want)) && pbase[strlen(want)];
  free(want);
  unsigned char head[8] = {0};
  FILE *f = ok ? fopen(path, "rb") : NULL;
  size_t got = f ? fread(head, 1, sizeof head, f) : 0;
  if (f) fclose(f);
  return ok && (n ? got >= n && !memcmp(head, magic, n) : 1) && (n || got == 0 || sp__stream_is_journal(head));
}

static void note_run_files(struct sp_recover_info *info, const char *spill, const struct recovered *rv) {
  note_file(info, spill);
  /* the run's file_path: the output a recovery writes may be elsewhere */
  const char *fp = rv->pub_path ? rv->pub_path : rv->file_path;
  if (own_file(rv->journal, fp, "stage", NULL, 0)) note_file(info, rv->journal);
  /* (never the output: after the rename the staged file's name is gone) */
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if ((!rv->pub_path || strcmp(rv->staged, rv->pub_path) != 0) && own_file(rv->staged, fp, "tmp", hdf5, 8))
    note_file(info, rv->staged);
}

void sp__recover_info_free(struct sp_recover_info *info) {
  for (size_t k = 0; info && k < info->nfiles; k++) free(info->files[k]);
  if (info) free(info->files);
  if (info) memset(info, 0, sizeof *info);
}

static sp_status recover_one(const void *data, size_t len, const char *spill, const char *out_path,
                             struct sp_recover_info *info) {
  struct recovered rv;
  sp_status st = spill_load(data, len, spill, out_path, &rv);
  if (st != SP_OK) return st;
  if (rv.published) { /* nothing to recover: the file is there, whole */
    info->published = 1;
    info->complete = 1;
    snprintf(info->written, sizeof info->written, "%s", rv.pub_path);
  } else {
    /* Calls open at the crash never ended: they end at the crash, marked
     * cut short, so the recovered tree keeps its root. */
    st = sp__finalize_recovered(rv.m, rv.tick1, rv.ns1, (int)rv.sig, rv.complete, rv.rank < 0 ? 0 : rv.rank, NULL);
    info->complete = rv.complete;
    info->calls_lost = rv.calls_lost;
    info->rewritten = rv.rewritten;
    if (st == SP_OK) snprintf(info->written, sizeof info->written, "%s", rv.m->cfg.file_path);
  }
  note_run_files(info, spill, &rv);
  recovered_free(&rv);
  return st;
}

sp_status sp__spill_recover_mem(const void *data, size_t len, const char *spill, const char *out_path,
                                char *written, size_t written_len) {
  struct sp_recover_info info;
  memset(&info, 0, sizeof info);
  sp_status st = recover_one(data, len, spill, out_path, &info);
  if (st == SP_OK && written) snprintf(written, written_len, "%s", info.written);
  sp__recover_info_free(&info);
  return st;
}

/*====== A streamed run's journal, without its spill ======*/

sp_status sp__journal_recover(const char *journal, const char *out_path, struct sp_recover_info *info) {
  memset(info, 0, sizeof *info);
  struct sp_journal j;
  if (sp__stream_journal_read(journal, &j) != 0) return SP_ERR_FORMAT;
  sp_status st = SP_OK;
  struct sp_manager *m = NULL;
  char **ov = NULL;
  size_t nov = 0;
  uint32_t *idmap = NULL, maxid = 0;
  const char *file_path = NULL;
  for (size_t k = 0; k < j.nset; k++)
    if (j.keys[k] && !strcmp(j.keys[k], "file_path")) file_path = j.vals[k];
  if (!j.have_run) {
    st = sp__set_error(SP_ERR_FORMAT, "%s: the journal does not record its run (no whole SPRUN001 record: written by "
                       "an older build, or cut short at its start); only the run's spill can recover it", journal);
    goto done;
  }
  if (!j.have_anchor || !j.segs) {
    st = sp__set_error(SP_ERR_FORMAT, "%s: the journal lists no staged block: the run was killed before its writer "
                       "had staged one, and nothing of it is on the disk", journal);
    goto done;
  }
  if (access(j.staged, R_OK) != 0) {
    st = sp__set_error(SP_ERR_IO, "%s: the staged file %s it names cannot be read (%s): if the run was killed while "
                       "finalize published its file, the calls are in %s", journal, j.staged, strerror(errno),
                       file_path && *file_path ? file_path : "its file_path");
    goto done;
  }
  if (j.tick1 < j.tick0 || j.ns0 < 0 || j.ns1 < j.ns0 || j.ns1 >= (INT64_C(1) << 62) || j.tick1 - j.tick0 >= TICK_REACH) {
    st = sp__set_error(SP_ERR_FORMAT, "%s: the clock anchors in the journal are corrupt", journal);
    goto done;
  }
  /* the run's settings replayed as a spill's are (file_path redirected) */
  ov = calloc(j.nset + 2, sizeof *ov);
  for (size_t k = 0; ov && k < j.nset; k++) {
    if (!j.keys[k] || !j.vals[k] || !*j.vals[k] || (out_path && !strcmp(j.keys[k], "file_path"))) continue;
    ov[nov++] = sp__asprintf("%s=%s", j.keys[k], j.vals[k]);
  }
  if (ov && out_path) ov[nov++] = sp__asprintf("file_path=%s", out_path);
  for (size_t k = 0; k < j.nreg; k++)
    if (j.reg[k].id > maxid && j.reg[k].id < (1u << 24)) maxid = j.reg[k].id;
  idmap = calloc((size_t)maxid + 1, sizeof *idmap);
  m = sp_manager_create();
  if (!ov || !idmap || !m) {
    st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory recovering %s", journal);
    goto done;
  }
  sp_setup_args args = {.overrides = (const char *const *)ov, .replace = 1};
  if ((st = sp__manager_setup_ex(m, &args, SP__SETUP_SILENT)) != SP_OK) goto done;
  for (size_t k = 0; k < j.nreg; k++) {
    const struct sp_journal_region *r = &j.reg[k];
    if (!r->name || !r->id || r->id > maxid) continue;
    sp_region h = sp_region_intern_ex(r->name, r->file && *r->file ? r->file : NULL, r->line, NULL, r->tags);
    idmap[r->id] = h & ~SP_I_REGION_SLOW_BIT;
    struct sp_region_info *ri = (struct sp_region_info *)sp__region_info(h);
    if (ri && r->kind == SP_SITE_FUNCTION) ri->kind = SP_SITE_FUNCTION;
  }
  sp_thread_rec **tail = &m->threads;
  for (size_t k = 0; k < j.nthr; k++) {
    sp_thread_rec *t = calloc(1, sizeof *t);
    if (t) t->hot.ev = malloc(sizeof *t->hot.ev);
    if (t && t->hot.ev) t->hot.acc = calloc(1, sizeof *t->hot.acc);
    if (!t || !t->hot.acc) {
      if (t) free(t->hot.ev);
      free(t);
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory recovering %s", journal);
      goto done;
    }
    t->m = m;
    t->index = j.thr[k].index;
    t->tid = (pid_t)j.thr[k].tid;
    snprintf(t->name, sizeof t->name, "%s", j.thr[k].name);
    t->hot.cap = 1;
    t->hot.acc_cap = 1;
    sp__agg_reset(t->hot.acc, 1);
    *tail = t;
    tail = &t->next;
    m->nthreads++;
  }
  m->run_tick0 = j.tick0;
  m->run_ns0 = j.ns0;
  m->cfg.start_time_ns = j.start_ns;
  struct sp_clock_map cm = sp__clock_map(j.tick0, j.ns0, j.tick1, j.ns1);
  struct sp_adopted ad;
  int got = sp__stream_adopt(m, journal, idmap, maxid, &cm, NULL, &ad);
  if (got < 0) {
    st = sp__set_error(SP_ERR_IO, "%s: its staged blocks could not be read back from %s", journal, j.staged);
    goto done;
  }
  /* SIGKILL: no handler ran, so no spill; the OOM killer's signal too (a
   * power loss has none, and looks the same) */
  st = sp__finalize_recovered(m, j.tick1, j.ns1, SIGKILL, 0, j.rank < 0 ? 0 : j.rank, NULL);
  info->journal = 1;
  info->torn = j.torn || got == 1;
  info->segs = ad.segs;
  if (st == SP_OK) snprintf(info->written, sizeof info->written, "%s", m->cfg.file_path);
  if (own_file(journal, file_path, "stage", NULL, 0)) note_file(info, journal);
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (own_file(j.staged, file_path, "tmp", hdf5, 8)) note_file(info, j.staged);
done:
  sp_manager_destroy(m);
  for (size_t k = 0; ov && k < nov; k++) free(ov[k]);
  free(ov);
  free(idmap);
  sp__stream_journal_free(&j);
  return st;
}

/*====== An MPI job: one spill per rank, one file ======*/

struct job_rank {
  struct recovered rv;
  struct sp_run run;
  const char *spill;
};

static int cmp_rank(const void *a, const void *b) {
  const struct job_rank *x = a, *y = b;
  return (x->rv.rank > y->rv.rank) - (x->rv.rank < y->rv.rank);
}

sp_status sp__spill_recover_job(const char *const *spills, size_t n, const char *out_path, char *written,
                                size_t written_len) {
  struct sp_recover_info info;
  memset(&info, 0, sizeof info);
  sp_status st = sp__spill_recover_run(spills, n, out_path, &info);
  if (st == SP_OK && written) snprintf(written, written_len, "%s", info.written);
  sp__recover_info_free(&info);
  return st;
}

sp_status sp__spill_recover_run(const char *const *spills, size_t n, const char *out_path,
                                struct sp_recover_info *info) {
  memset(info, 0, sizeof *info);
  if (n == 1) {
    size_t len = 0;
    unsigned char *buf = read_spill(spills[0], &len);
    if (!buf) return SP_ERR_IO;
    sp_status st = recover_one(buf, len, spills[0], out_path, info);
    free(buf);
    return st;
  }
  struct job_rank *jr = calloc(n, sizeof *jr);
  if (!jr) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  sp_status st = SP_OK;
  struct sp_manager *first = NULL; /* its settings write the job */
  int complete = 1, size = -1;
  char *pub_path = NULL; /* the job's file, when rank 0 had published it */
  /* One rank at a time: a run outlives its manager (managers are few). */
  for (size_t i = 0; i < n && st == SP_OK; i++) {
    size_t len = 0;
    unsigned char *buf = read_spill(spills[i], &len);
    struct recovered *rv = &jr[i].rv;
    jr[i].spill = spills[i];
    st = buf ? spill_load(buf, len, spills[i], out_path, rv) : SP_ERR_IO;
    free(buf);
    if (st == SP_OK && rv->rank < 0)
      st = sp__set_error(SP_ERR_INVALID_ARGUMENT, "%s does not say which rank wrote it (a run outside a launcher, "
                         "or an older spill): recover it on its own", spills[i]);
    if (st == SP_OK) {
      complete &= rv->complete;
      info->calls_lost += rv->calls_lost;
      info->rewritten += rv->rewritten;
      if (size < 0) size = rv->size;
      /* rank 0 publishes the job's file: its word is the job's */
      if (rv->published && rv->rank == 0) pub_path = sp__strdup(rv->pub_path);
      note_run_files(info, spills[i], rv);
      st = sp__finalize_recovered(rv->m, rv->tick1, rv->ns1, (int)rv->sig, rv->complete, rv->rank, &jr[i].run);
    }
    if (!first) first = rv->m;
    else sp_manager_destroy(rv->m);
    rv->m = NULL;
    recovered_free(rv);
  }
  /* Rank 0 crashed after it published the job's file, which holds every
   * rank's part (finalize is collective): there is nothing to recover. */
  if (st == SP_OK && pub_path) {
    info->published = info->complete = 1;
    info->calls_lost = 0;
    info->rewritten = 0;
    snprintf(info->written, sizeof info->written, "%s", pub_path);
    for (size_t i = 0; i < n; i++) sp__run_free(&jr[i].run);
    sp_manager_destroy(first);
    free(jr);
    free(pub_path);
    return SP_OK;
  }
  free(pub_path);
  if (st == SP_OK) {
    qsort(jr, n, sizeof *jr, cmp_rank);
    for (size_t i = 1; i < n && st == SP_OK; i++)
      if (jr[i].rv.rank == jr[i - 1].rv.rank)
        st = sp__set_error(SP_ERR_INVALID_ARGUMENT, "%s and %s were both written by rank %d; give each rank's "
                           "spill once", jr[i - 1].spill, jr[i].spill, jr[i].rv.rank);
  }
  /* The ranks' runs are the parts of one job file, as the MPI writers'
   * (rows in rank order; tables and groups keep their ranks); the head's
   * metadata are the first rank's. */
  struct sp_run *runs = st == SP_OK ? malloc(n * sizeof *runs) : NULL;
  if (st == SP_OK && !runs) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; runs && st == SP_OK && i < n; i++) {
    runs[i] = jr[i].run;
    if (strcmp(runs[i].layout, runs[0].layout) != 0)
      st = sp__set_error(SP_ERR_CONFLICT, "the ranks' runs were recorded in different layouts (%s and %s); "
                         "recover them one by one", runs[0].layout, runs[i].layout);
    else if (runs[i].fill_events && n > 1)
      st = sp__set_error(SP_ERR_UNSUPPORTED, "a streamed rank cannot be merged with others in memory");
  }
  if (st == SP_OK) {
    /* whole when every rank's spill was, and there was one for every rank
     * the launcher started */
    struct sp_meta *meta = &runs[0].meta;
    if (sp__meta_i64(meta, SP_META_MPI_SIZE, (int64_t)n) != 0 ||
        sp__meta_i64(meta, SP_META_RECOVERY_COMPLETE, complete && size == (int)n) != 0 ||
        sp__meta_i64(meta, "recovered_ranks", (int64_t)n) != 0)
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    else
      st = sp__h5_write_parts(runs, (int)n, &first->cfg, first->cfg.file_path);
    info->complete = complete && size == (int)n;
    if (st == SP_OK) snprintf(info->written, sizeof info->written, "%s", first->cfg.file_path);
  }
  if (runs) jr[0].run.meta = runs[0].meta; /* freed with the run below */
  free(runs);
  for (size_t i = 0; i < n; i++) sp__run_free(&jr[i].run);
  sp_manager_destroy(first);
  free(jr);
  return st;
}
