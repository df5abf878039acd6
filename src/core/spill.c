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
 * Layout (native endianness, version 1): "SPSPILL1", u32 version, u32 signal,
 * the clock anchors of the run start and of the crash, u32 count + key=value
 * strings of the resolved settings, u32 region count + per region (name,
 * file, line, kind, tags), u32 thread count + per thread (index, tid, name,
 * event count, raw events, open-call count), then "SPILLEND". Strings are u32
 * length + bytes. A file that ends early (the process died while writing) is
 * recovered up to its last complete thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/metadata.h"
#include "core/snapshot.h"
#include "core/spill.h"

#define SPILL_MAGIC "SPSPILL1"
#define SPILL_END "SPILLEND"
#define SPILL_VERSION 1u

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

int sp__spill_write(struct sp_manager *m, int sig) { return sp__spill_write_to(m, sig, m->spill_path); }

int sp__spill_write_to(struct sp_manager *m, int sig, const char *path) {
  if (!path || !path[0] || !m->have_cfg) return -1;
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
  uint32_t nthreads = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) nthreads++;
  put_u32(&o, nthreads);
  for (sp_thread_rec *t = m->threads; t && nthreads; t = t->next, nthreads--) {
    put_u32(&o, t->index);
    put_u32(&o, (uint32_t)t->tid);
    put_str(&o, t->name);
    uint64_t n = t->hot.n; /* a racing thread may append; n bounds what is read */
    put_u64(&o, n);
    put(&o, t->hot.ev, n * sizeof *t->hot.ev);
    /* aggregation accumulators */
    put_u32(&o, t->hot.acc_cap);
    put(&o, t->hot.acc, (size_t)t->hot.acc_cap * sizeof *t->hot.acc);
  }
  put(&o, SPILL_END, 8);
  fsync(fd);
  close(fd);
  return o.failed ? -1 : 0;
}

/*====== Recovery ======*/

struct in {
  const unsigned char *p, *end;
  int bad;
};

static int get(struct in *i, void *dst, size_t n) {
  if (i->bad || (size_t)(i->end - i->p) < n) {
    i->bad = 1;
    memset(dst, 0, n);
    return -1;
  }
  memcpy(dst, i->p, n);
  i->p += n;
  return 0;
}
static uint32_t get_u32(struct in *i) {
  uint32_t v;
  get(i, &v, sizeof v);
  return v;
}
static uint64_t get_u64(struct in *i) {
  uint64_t v;
  get(i, &v, sizeof v);
  return v;
}
static char *get_str(struct in *i) {
  uint32_t n = get_u32(i);
  if (i->bad || n > (1u << 24) || (size_t)(i->end - i->p) < n) {
    i->bad = 1;
    return NULL;
  }
  char *s = sp__strndup((const char *)i->p, n);
  i->p += n;
  return s;
}

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
           a->last >= 0 && a->last <= a->max && a->shift > -reach && a->shift < reach &&
           near_start(a->start_min, tick0) && near_start(a->last_start, tick0) &&
           near_start(a->end_max, tick0) && isfinite(a->s1) && isfinite(a->s2) &&
           fabs(a->s1) < 1e30 && a->s2 >= 0 && a->s2 < 1e60 &&
           !__builtin_add_overflow(*calls, a->count, &sum) && sum < (UINT64_C(1) << 62) &&
           !__builtin_add_overflow(*spent, (uint64_t)a->total, spent);
  if (ok) *calls = sum;
  else a->count = 0;
}

sp_status sp__spill_recover(const char *spill, const char *out_path, char *written, size_t written_len) {
  FILE *f = fopen(spill, "rb");
  if (!f) return sp__set_error(SP_ERR_IO, "cannot open spill file %s: %s", spill, strerror(errno));
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
  sp_status st = sp__spill_recover_mem(buf, len, spill, out_path, written, written_len);
  free(buf);
  return st;
}

/* The parser proper, on bytes in memory (the fuzz target calls it directly);
 * `spill` only names the input in messages. */
sp_status sp__spill_recover_mem(const void *data, size_t len, const char *spill, const char *out_path,
                                char *written, size_t written_len) {
  const unsigned char *buf = data;
  struct in in = {buf, buf + len, 0};
  char magic[8];
  if (!buf || get(&in, magic, 8) != 0 || memcmp(magic, SPILL_MAGIC, 8) != 0)
    return sp__set_error(SP_ERR_FORMAT, "%s is not a scope-profiler spill file (bad magic)", spill);
  uint32_t version = get_u32(&in);
  if (version != SPILL_VERSION) {
    return sp__set_error(SP_ERR_FORMAT, "%s: spill version %u is not supported (this build reads %u)", spill,
                         version, SPILL_VERSION);
  }
  uint32_t sig = get_u32(&in);
  uint64_t tick0 = get_u64(&in);
  int64_t ns0 = (int64_t)get_u64(&in);
  uint64_t tick1 = get_u64(&in);
  int64_t ns1 = (int64_t)get_u64(&in);
  int64_t start_ns = (int64_t)get_u64(&in);
  uint32_t clock_kind = get_u32(&in);
  uint32_t nset = get_u32(&in);
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
    char *key = get_str(&in), *val = get_str(&in);
    if (key && val && *val && strcmp(key, "file_path") != 0)
      ov[nov++] = sp__asprintf("%s=%s", key, val);
    else if (key && val && strcmp(key, "file_path") == 0 && !out_path)
      ov[nov++] = sp__asprintf("%s=%s", key, val);
    free(key);
    free(val);
  }
  if (out_path && ov) ov[nov++] = sp__asprintf("file_path=%s", out_path);

  struct sp_manager *m = sp_manager_create();
  uint32_t nreg = get_u32(&in);
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
    char *name = get_str(&in), *file = get_str(&in);
    int line = (int)get_u32(&in);
    int kind = (int)get_u32(&in);
    uint32_t ntags = get_u32(&in);
    size_t tl = 0;
    char tags[4096] = "";
    for (uint32_t k = 0; k < ntags && k < 256 && !in.bad; k++) {
      char *tg = get_str(&in);
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
  uint32_t nthreads = get_u32(&in);
  sp_thread_rec **tail = &m->threads;
  uint64_t spent = 0, calls = 0; /* ticks of the calls recovered; count of the aggregated ones */
  for (uint32_t k = 0; k < nthreads && !in.bad; k++) {
    const unsigned char *mark = in.p;
    uint32_t index = get_u32(&in), tid = get_u32(&in);
    char *tname = get_str(&in);
    uint64_t n = get_u64(&in);
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
    if (t->hot.ev) get(&in, t->hot.ev, n * sizeof *t->hot.ev);
    t->hot.n = t->hot.ev ? n : 0;
    for (uint64_t e = 0; e < t->hot.n; e++) {
      uint32_t rid = t->hot.ev[e].region;
      t->hot.ev[e].region = rid <= nreg ? idmap[rid] : 0;
      if (!t->hot.ev[e].region) t->hot.ev[e].end = 0; /* unknown region: drop the call */
      check_event(&t->hot.ev[e], tick0, &spent);
    }
    uint32_t acc_cap = get_u32(&in);
    if (!in.bad && acc_cap <= (uint64_t)(in.end - in.p) / sizeof(struct sp_i_agg)) {
      struct sp_i_agg *acc = acc_cap ? malloc((size_t)acc_cap * sizeof *acc) : NULL;
      if (acc_cap && acc) get(&in, acc, (size_t)acc_cap * sizeof *acc);
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
  /* A crash while writing leaves a file without its end marker: recover the
   * threads that are complete, and say so. */
  char endm[8] = {0};
  int complete = !in.bad && get(&in, endm, 8) == 0 && memcmp(endm, SPILL_END, 8) == 0;
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
  /* Calls open at the crash never ended: they end at the crash, marked cut
   * short, so the recovered tree keeps its root. */
  st = sp__finalize_recovered(m, tick1, ns1, (int)sig, complete);
  if (st == SP_OK && written) snprintf(written, written_len, "%s", m->cfg.file_path);
done:
  sp_manager_destroy(m);
  for (size_t k = 0; ov && k < nov; k++) free(ov[k]);
  free(ov);
  free(idmap);
  return st;
}
