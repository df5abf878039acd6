/* report_data.c - what `scope-profiler report` reads, reduced on the way to
 * what a chart can show.
 *
 * Statistics come from the summary rows (no events). The flame chart and
 * flame graph need the exact call tree: the reader's walk (read/read_walk.h)
 * hands a rank's calls over nested, in start order, and each goes straight
 * to its tree node and chart row; the Gantt lanes and time series of the
 * same calls are taken on the way (one pass over the events). A lane with
 * more calls than the plot has pixel columns keeps one mark per column (the
 * calls starting in it merged: extent, summed and extreme durations), so
 * memory is bounded by lanes x columns, never by events. A rank the walk
 * refuses is nested by the reader (sp_results_call_stack, every call held)
 * one rank at a time, and the Gantt lanes then come from a pass of their
 * own over the rows. Percentiles for the summary table are the reader's
 * (tried from the walk: holding 8 bytes per call of fresh memory cost more
 * than reading the two columns again).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "read/read_walk.h"
#include "report/report_internal.h"

#define SLICE ((size_t)1 << 16)

static int oom(const char *cmd) { return sp_cli_error(cmd, "out of memory"); }

/* Progress of one operation (the reader's or ours) on the report's single
 * bar: events done so far in earlier operations plus this one's. */
static void progress(void *ctx, uint64_t done, uint64_t total) {
  struct rp_model *m = ctx;
  (void)total;
  sp_cli_progress_cb(m->prog, m->pdone + done, m->ptotal > m->pdone + done ? m->ptotal
                                                                            : m->pdone + done);
}

uint64_t rp_work(const struct rp_model *m, const struct rp_file *f) {
  if (!f->has_events) return 0;
  uint64_t kept = 0, all = 0;
  for (size_t w = 0; w < sp_results_num_rows(f->r); w++) {
    sp_row_info info;
    if (sp_results_row_info(f->r, w, &info) != SP_OK || !sp_filter_match_rank(m->f, info.rank))
      continue;
    all += info.count;
    if (f->gidx[info.region] != SIZE_MAX) kept += info.count;
  }
  return kept + all + kept; /* Gantt pass, call stacks, percentiles */
}

static int push_mark(struct rp_marks *m, const struct rp_mark *k) {
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 16;
    struct rp_mark *v = realloc(m->v, cap * sizeof *v);
    if (!v) return -1;
    m->v = v;
    m->cap = cap;
  }
  m->v[m->n++] = *k;
  return 0;
}

static inline void merge_into(struct rp_mark *a, const struct rp_mark *b) {
  if (b->dmax > a->dmax) a->region = b->region;
  if (b->s < a->s) a->s = b->s;
  if (b->e > a->e) a->e = b->e;
  a->sum += b->sum;
  if (b->dmin < a->dmin) a->dmin = b->dmin;
  if (b->dmax > a->dmax) a->dmax = b->dmax;
  a->n += b->n;
  a->gpu += b->gpu;
  a->ngpu += b->ngpu;
}

static int64_t bucket_of(int64_t t, int64_t origin, double bw) {
  double b = floor((double)(t - origin) / bw);
  return b < 0 ? 0 : (int64_t)b;
}

/* The first time whose column is past column b: bucket_of is monotonic in
 * t, so an estimate a few ns off is walked to the exact boundary;
 * INT64_MIN when it is not found (the caller then divides for every call). */
static int64_t column_end(int64_t b, int64_t origin, double bw) {
  double x = ceil((double)(b + 1) * bw);
  if (!(x > -9e18 && x < 9e18)) return INT64_MIN;
  int64_t t;
  if (__builtin_add_overflow(origin, (int64_t)x, &t) || t == INT64_MIN || t == INT64_MAX)
    return INT64_MIN;
  for (int i = 0; i < 16 && bucket_of(t - 1, origin, bw) > b; i++) t--;
  for (int i = 0; i < 16 && bucket_of(t, origin, bw) <= b; i++) t++;
  if (t == INT64_MIN || bucket_of(t, origin, bw) <= b || bucket_of(t - 1, origin, bw) > b)
    return INT64_MIN;
  return t;
}

static int add_call_slow(struct rp_marks *m, const struct rp_mark *k, int lod, int64_t origin,
                         double bw) {
  if (!lod) {
    m->lastb = 0;
    return push_mark(m, k);
  }
  int64_t b = bucket_of(k->s, origin, bw);
  int merge = 0;
  if (m->n) {
    const struct rp_mark *last = &m->v[m->n - 1];
    /* the last mark's column, kept: merging into it keeps its column */
    int64_t lb = m->lastb ? m->lastb - 1 : bucket_of(last->s, origin, bw);
    merge = lb == b;
  }
  m->lastb = b + 1;
  m->colend = column_end(b, origin, bw);
  if (merge) {
    merge_into(&m->v[m->n - 1], k);
    return 0;
  }
  return push_mark(m, k);
}

/* Add a call; with lod, calls starting in the column of the previous mark
 * join it. Calls arrive in start order per lane, so most join the last
 * mark, which one comparison with its column's end tells (a division per
 * call took a seventh of the report's time on large files). */
static inline int add_call(struct rp_marks *m, const struct rp_mark *k, int lod, int64_t origin,
                           double bw) {
  if (lod && m->n && m->lastb && k->s < m->colend && k->s >= m->v[m->n - 1].s) {
    merge_into(&m->v[m->n - 1], k);
    return 0;
  }
  return add_call_slow(m, k, lod, origin, bw);
}

/* add_call of one call of the walk (no device time): its mark is built
 * only when it does not join the last one. */
static inline int add_one(struct rp_marks *m, int64_t s, int64_t e, int64_t d, uint32_t region,
                          int lod, int64_t origin, double bw) {
  if (lod && m->n && m->lastb && s < m->colend && s >= m->v[m->n - 1].s) {
    struct rp_mark *a = &m->v[m->n - 1]; /* merge_into with b one call, b->s >= a->s */
    if (d > a->dmax) {
      a->region = region;
      a->dmax = d;
    }
    if (e > a->e) a->e = e;
    a->sum += d;
    if (d < a->dmin) a->dmin = d;
    a->n++;
    return 0;
  }
  struct rp_mark mk = {s, e, d, d, d, 1, region, 0, 0};
  return add_call_slow(m, &mk, lod, origin, bw);
}

void rp_marks_fold(struct rp_marks *m, int64_t origin, int64_t span, size_t cols) {
  if (m->n <= cols || cols == 0) return;
  double bw = (double)(span > 0 ? span : 1) / (double)cols;
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (k && bucket_of(m->v[k - 1].s, origin, bw) == bucket_of(m->v[i].s, origin, bw))
      merge_into(&m->v[k - 1], &m->v[i]);
    else
      m->v[k++] = m->v[i];
  }
  m->n = k;
  m->lastb = 0;
}

size_t rp_global_region(const struct rp_model *m, const char *name) {
  size_t lo = 0, hi = m->nregions;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(m->regions[mid].name, name);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return SIZE_MAX;
}

/* ---- statistics ----------------------------------------------------------------------- */

static int cmp_first(const void *pa, const void *pb) {
  const struct rp_region_row *a = pa, *b = pb;
  if (a->s.first_start_ns != b->s.first_start_ns)
    return a->s.first_start_ns < b->s.first_start_ns ? -1 : 1;
  return (a->region > b->region) - (a->region < b->region);
}

int rp_load_file(struct rp_model *m, struct rp_file *f, const char *cmd) {
  sp_results *r = f->r;
  f->has_events = sp_results_has_events(r);
  if (sp_results_min_start(r, &f->origin) != SP_OK)
    return sp_cli_error(cmd, "%s", sp_last_error());
  size_t nr = sp_results_num_ranks(r), nreg = sp_results_num_regions(r);
  f->ranks = malloc((nr ? nr : 1) * sizeof *f->ranks);
  f->regs = calloc(nreg ? nreg : 1, sizeof *f->regs);
  f->gidx = malloc((nreg ? nreg : 1) * sizeof *f->gidx);
  if (!f->ranks || !f->regs || !f->gidx) return oom(cmd);
  for (size_t i = 0; i < nr; i++)
    if (sp_filter_match_rank(m->f, sp_results_rank(r, i))) f->ranks[f->nranks++] = sp_results_rank(r, i);
  f->end = f->origin;
  for (size_t i = 0; i < nreg; i++) {
    f->gidx[i] = SIZE_MAX;
    if (!sp_filter_match_region(m->f, sp_results_region_name(r, i))) continue;
    sp_region_stats s;
    if (sp_results_region_stats(r, i, m->f, 0, &s) != SP_OK)
      return sp_cli_error(cmd, "%s", sp_last_error());
    if (s.ranks == 0 || s.count == 0) continue;
    f->regs[f->nregs].region = i;
    f->regs[f->nregs].s = s;
    f->nregs++;
    if (s.last_end_ns > f->end) f->end = s.last_end_ns;
  }
  qsort(f->regs, f->nregs, sizeof *f->regs, cmp_first);
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const struct rp_region *)a)->name, ((const struct rp_region *)b)->name);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int rp_assign_regions(struct rp_model *m, const char *cmd) {
  size_t total = 0, nranks = 0;
  for (size_t i = 0; i < m->nfiles; i++) {
    total += m->files[i].nregs;
    nranks += m->files[i].nranks;
  }
  m->regions = calloc(total ? total : 1, sizeof *m->regions);
  m->all_ranks = malloc((nranks ? nranks : 1) * sizeof *m->all_ranks);
  if (!m->regions || !m->all_ranks) return oom(cmd);
  for (size_t i = 0; i < m->nfiles; i++) {
    struct rp_file *f = &m->files[i];
    for (size_t k = 0; k < f->nregs; k++) {
      char *name = strdup(sp_results_region_name(f->r, f->regs[k].region));
      if (!name) return oom(cmd);
      m->regions[m->nregions++].name = name;
    }
    for (size_t k = 0; k < f->nranks; k++) m->all_ranks[m->nall_ranks++] = f->ranks[k];
  }
  qsort(m->regions, m->nregions, sizeof *m->regions, cmp_name);
  size_t u = 0;
  for (size_t i = 0; i < m->nregions; i++) {
    if (!u || strcmp(m->regions[u - 1].name, m->regions[i].name)) m->regions[u++] = m->regions[i];
    else free(m->regions[i].name);
  }
  m->nregions = u;
  for (size_t i = 0; i < u; i++) {
    rp_palette_color(m->o->palette, i, u, m->regions[i].color);
    m->regions[i].dark = rp_color_is_dark(m->regions[i].color);
  }
  qsort(m->all_ranks, m->nall_ranks, sizeof *m->all_ranks, cmp_i64);
  u = 0;
  for (size_t i = 0; i < m->nall_ranks; i++)
    if (!u || m->all_ranks[u - 1] != m->all_ranks[i]) m->all_ranks[u++] = m->all_ranks[i];
  m->nall_ranks = u;
  for (size_t i = 0; i < m->nfiles; i++) {
    struct rp_file *f = &m->files[i];
    /* the charts look a file's row up by global region: an index, not a
     * scan of the file's regions per lookup (quadratic in the regions) */
    f->reg_of_g = malloc((m->nregions ? m->nregions : 1) * sizeof *f->reg_of_g);
    if (!f->reg_of_g) return oom(cmd);
    for (size_t g = 0; g < m->nregions; g++) f->reg_of_g[g] = SIZE_MAX;
    for (size_t k = 0; k < f->nregs; k++) {
      size_t reg = f->regs[k].region;
      f->gidx[reg] = rp_global_region(m, sp_results_region_name(f->r, reg));
      f->regs[k].g = f->gidx[reg];
      if (f->reg_of_g[f->regs[k].g] == SIZE_MAX) f->reg_of_g[f->regs[k].g] = k;
    }
  }
  return 0;
}

/* ---- Gantt lanes and time series ------------------------------------------------------ */

static int rank_in(const int64_t *v, size_t n, int64_t rank) {
  return bsearch(&rank, v, n, sizeof *v, cmp_i64) != NULL;
}

struct lane_ref {
  int64_t thread;
  size_t lane;
};

static int cmp_lane(const void *pa, const void *pb) {
  const struct rp_lane *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->region != b->region) return a->region < b->region ? -1 : 1; /* order of first call */
  return (a->thread > b->thread) - (a->thread < b->thread);
}

#define RP_ROW_THREADS 64 /* lanes of one row; calls on further threads are dropped */

/* What rp_load_events leaves to the walk of rp_load_flame when it can: the
 * Gantt lanes and time series of the Gantt ranks, taken as the walk hands
 * the calls over (one pass over the events instead of two; the walk gives
 * each lane's calls in start order, as the rows do). Dropped, and the
 * separate pass made, when the walk refuses a rank (part way, perhaps), a
 * row has more than RP_ROW_THREADS threads or a lane would pass the lane
 * cap (the separate pass decides which lanes to drop, in row order). The
 * percentiles are the reader's (rp_load_table), which then reads the
 * durations of the rows the walk checked alone. */
struct rp_rowinfo {       /* every row of the file (ranks x regions: 16 bytes each) */
  uint64_t count;          /* the row's calls */
  size_t series;           /* SIZE_MAX: the row draws nothing */
};

struct rp_serlanes {       /* each drawn row (as many as its time series) */
  struct lane_ref refs[RP_ROW_THREADS];
  size_t nrefs, last;      /* last: the index in refs of the lane used last */
};

struct rp_defer {
  size_t *order;           /* file region -> index in f->regs; SIZE_MAX: not drawn */
  struct rp_rowinfo *rows;
  struct rp_serlanes *sl;  /* by series */
  size_t lanes_cap, lane_cap, cols, ts_cols;
  double bw, ts_bw;
  int threads;
  uint64_t total;          /* the Gantt pass's events (progress) */
  int gantt_failed, walk_failed;
};

static void defer_free(struct rp_file *f) {
  struct rp_defer *d = f->defer;
  if (!d) return;
  free(d->order);
  free(d->rows);
  free(d->sl);
  free(d);
  f->defer = NULL;
}

static struct rp_series *new_series(struct rp_file *f, size_t *cap, const sp_row_info *info) {
  if (f->nseries == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    struct rp_series *v = realloc(f->series, nc * sizeof *v);
    if (!v) return NULL;
    f->series = v;
    *cap = nc;
  }
  struct rp_series *ser = &f->series[f->nseries++];
  memset(ser, 0, sizeof *ser);
  ser->region = info->region;
  ser->rank = info->rank;
  return ser;
}

/* A new lane of (row's region and rank, thread); SIZE_MAX out of memory. */
static size_t new_lane(struct rp_file *f, size_t *cap, const sp_row_info *info, int64_t thread) {
  if (f->nlanes == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    struct rp_lane *v = realloc(f->lanes, nc * sizeof *v);
    if (!v) return SIZE_MAX;
    f->lanes = v;
    *cap = nc;
  }
  size_t li = f->nlanes++;
  memset(&f->lanes[li], 0, sizeof f->lanes[li]);
  f->lanes[li].region = info->region;
  f->lanes[li].rank = info->rank;
  f->lanes[li].thread = thread;
  return li;
}

/* The Gantt lanes and time series by a pass of their own over the rows. */
static int gantt_pass(struct rp_model *m, struct rp_file *f, const size_t *order, size_t lane_cap,
                      uint64_t total, const char *cmd) {
  sp_results *r = f->r;
  size_t nrows = sp_results_num_rows(r);
  double pw = RP_PLOT_W(m);
  size_t cols = (size_t)pw, ts_cols = cols / 2;
  int64_t span = f->end - f->origin > 0 ? f->end - f->origin : 1;
  double bw = (double)span / (double)cols, ts_bw = (double)span / (double)ts_cols;
  int64_t *st = malloc(SLICE * sizeof *st), *en = malloc(SLICE * sizeof *en);
  int64_t *th = malloc(SLICE * sizeof *th);
  int gpu = sp_results_has_gpu(r);
  int64_t *gp = gpu ? malloc(SLICE * sizeof *gp) : NULL;
  size_t lanes_cap = f->nlanes, series_cap = f->nseries;
  int rc = 0;
  if (!st || !en || !th || (gpu && !gp)) rc = oom(cmd);
  uint64_t done_all = 0;
  m->prog->label = "reading events";
  int threads = sp_results_has_threads(r);
  for (size_t w = 0; w < nrows && !rc; w++) {
    sp_row_info info;
    if (sp_results_row_info(r, w, &info) != SP_OK || order[info.region] == SIZE_MAX ||
        info.count == 0 || !rank_in(f->gantt_ranks, f->ngantt_ranks, info.rank))
      continue;
    struct rp_series *ser = new_series(f, &series_cap, &info);
    if (!ser) {
      rc = oom(cmd);
      break;
    }
    int lod = info.count > cols, ts_lod = info.count > ts_cols;
    struct lane_ref refs[RP_ROW_THREADS];
    size_t nrefs = 0;
    for (uint64_t done = 0; done < info.count && !rc;) {
      size_t k = info.count - done < SLICE ? (size_t)(info.count - done) : SLICE;
      if (sp_results_row_read(r, w, done, k, st, en, NULL, NULL, threads ? th : NULL) != SP_OK ||
          (gpu && sp_results_row_read_gpu(r, w, done, k, gp) != SP_OK)) {
        rc = sp_cli_error(cmd, "%s", sp_last_error());
        break;
      }
      for (size_t j = 0; j < k && !rc; j++) {
        int64_t t = threads ? th[j] : -1;
        int64_t d = en[j] - st[j];
        int64_t g = gpu ? gp[j] : -1;
        struct rp_mark mk = {st[j], en[j], d, d, d, 1, (uint32_t)info.region, g >= 0 ? g : 0, g >= 0};
        size_t li = SIZE_MAX;
        for (size_t q = 0; q < nrefs; q++)
          if (refs[q].thread == t) li = refs[q].lane;
        if (li == SIZE_MAX) {
          if (nrefs == RP_ROW_THREADS || f->nlanes >= 4 * lane_cap) {
            f->lanes_dropped++;
          } else {
            if ((li = new_lane(f, &lanes_cap, &info, t)) == SIZE_MAX) {
              rc = oom(cmd);
              break;
            }
            refs[nrefs].thread = t;
            refs[nrefs++].lane = li;
          }
        }
        if (li != SIZE_MAX) {
          f->lanes[li].calls++;
          if (add_call(&f->lanes[li].m, &mk, lod, f->origin, bw)) rc = oom(cmd);
        }
        /* a time-series mark spans the starts of its calls */
        struct rp_mark tk = mk;
        tk.e = tk.s;
        ser->calls++;
        if (!rc && add_call(&ser->m, &tk, ts_lod, f->origin, ts_bw)) rc = oom(cmd);
      }
      done += k;
      done_all += k;
      progress(m, done_all, total);
    }
  }
  free(st);
  free(en);
  free(th);
  free(gp);
  m->pdone += total;
  return rc;
}

/* lanes: by rank, then region in order of first call, then thread */
static void gantt_sort(struct rp_file *f, const size_t *order) {
  if (!f->nlanes) return;
  for (size_t i = 0; i < f->nlanes; i++) f->lanes[i].region = order[f->lanes[i].region];
  qsort(f->lanes, f->nlanes, sizeof *f->lanes, cmp_lane);
  for (size_t i = 0; i < f->nlanes; i++) f->lanes[i].region = f->regs[f->lanes[i].region].region;
}

/* The walk can take the Gantt pass's and the percentiles' work over: rows
 * in start order (the walk checks), no device times (the walk reads none). */
static int defer_start(struct rp_model *m, struct rp_file *f, size_t *order, size_t lane_cap,
                       uint64_t total) {
  sp_results *r = f->r;
  if (!sp__walk_enabled || sp_results_has_gpu(r)) return 0;
  size_t nrows = sp_results_num_rows(r);
  struct rp_defer *d = calloc(1, sizeof *d);
  if (!d) {
    free(order);
    return -1;
  }
  f->defer = d;
  d->order = order;
  d->rows = calloc(nrows ? nrows : 1, sizeof *d->rows);
  if (!d->rows) return -1;
  d->cols = (size_t)RP_PLOT_W(m);
  d->ts_cols = d->cols / 2;
  int64_t span = f->end - f->origin > 0 ? f->end - f->origin : 1;
  d->bw = (double)span / (double)d->cols;
  d->ts_bw = (double)span / (double)d->ts_cols;
  d->lane_cap = lane_cap;
  d->threads = sp_results_has_threads(r);
  d->total = total;
  size_t series_cap = 0;
  for (size_t w = 0; w < nrows; w++) {
    sp_row_info info;
    d->rows[w].series = SIZE_MAX;
    if (sp_results_row_info(r, w, &info) != SP_OK) continue;
    d->rows[w].count = info.count;
    if (order[info.region] == SIZE_MAX || info.count == 0 ||
        !rank_in(f->gantt_ranks, f->ngantt_ranks, info.rank))
      continue;
    if (!new_series(f, &series_cap, &info)) return -1;
    d->rows[w].series = f->nseries - 1;
  }
  if (!(d->sl = calloc(f->nseries ? f->nseries : 1, sizeof *d->sl))) return -1;
  return 1;
}

int rp_load_events(struct rp_model *m, struct rp_file *f, const char *cmd) {
  if (!f->has_events || f->nregs == 0 || f->nranks == 0) return 0;
  sp_results *r = f->r;
  size_t nrows = sp_results_num_rows(r), nreg = sp_results_num_regions(r);
  /* order of regions in the charts: first call */
  size_t *order = malloc((nreg ? nreg : 1) * sizeof *order);
  if (!order) return oom(cmd);
  for (size_t i = 0; i < nreg; i++) order[i] = SIZE_MAX;
  for (size_t k = 0; k < f->nregs; k++) order[f->regs[k].region] = k;

  /* Lanes are capped so a chart stays readable and bounded: whole ranks, in
   * order, while their rows fit (threads may add lanes later). */
  size_t lane_cap = m->o->max_bars / RP_MIN_COLS;
  if (lane_cap < 1) lane_cap = 1;
  f->gantt_ranks = malloc(f->nranks * sizeof *f->gantt_ranks);
  if (!f->gantt_ranks) {
    free(order);
    return oom(cmd);
  }
  size_t rows_so_far = 0;
  for (size_t i = 0; i < f->nranks; i++) {
    size_t rows = 0;
    for (size_t w = 0; w < nrows; w++) {
      sp_row_info info;
      if (sp_results_row_info(r, w, &info) == SP_OK && info.rank == f->ranks[i] &&
          order[info.region] != SIZE_MAX && info.count > 0)
        rows++;
    }
    if (f->ngantt_ranks && rows_so_far + rows > lane_cap) break;
    f->gantt_ranks[f->ngantt_ranks++] = f->ranks[i];
    rows_so_far += rows;
  }
  uint64_t total = 0;
  for (size_t w = 0; w < nrows; w++) {
    sp_row_info info;
    if (sp_results_row_info(r, w, &info) == SP_OK && order[info.region] != SIZE_MAX &&
        rank_in(f->gantt_ranks, f->ngantt_ranks, info.rank))
      total += info.count;
  }
  int deferred = defer_start(m, f, order, lane_cap, total);
  if (deferred) {
    if (deferred > 0) return 0; /* order is the defer's now */
    defer_free(f);              /* freed order too */
    return oom(cmd);
  }
  int rc = gantt_pass(m, f, order, lane_cap, total, cmd);
  if (!rc) gantt_sort(f, order);
  free(order);
  return rc;
}

/* A call of a Gantt rank's row into its lane and time series. 0, or -1 out
 * of memory; a lane past the cap stops the deferred Gantt pass. */
static int defer_gantt(struct rp_file *f, struct rp_defer *d, const struct sp__walk_call *c) {
  const struct rp_rowinfo *ri = &d->rows[c->row];
  if (ri->series == SIZE_MAX || d->gantt_failed) return 0;
  struct rp_serlanes *rl = &d->sl[ri->series];
  int64_t t = d->threads ? c->thread : -1;
  size_t q = rl->last;
  if (q >= rl->nrefs || rl->refs[q].thread != t) {
    for (q = 0; q < rl->nrefs && rl->refs[q].thread != t; q++) {
    }
    if (q == rl->nrefs) {
      if (rl->nrefs == RP_ROW_THREADS || f->nlanes >= 4 * d->lane_cap) {
        d->gantt_failed = 1; /* the separate pass drops lanes as it always did */
        return 0;
      }
      struct rp_series *ser = &f->series[ri->series];
      sp_row_info info = {0};
      info.region = ser->region;
      info.rank = ser->rank;
      size_t li = new_lane(f, &d->lanes_cap, &info, t);
      if (li == SIZE_MAX) return -1;
      rl->refs[q].thread = t;
      rl->refs[q].lane = li;
      rl->nrefs++;
    }
    rl->last = q;
  }
  struct rp_lane *l = &f->lanes[rl->refs[q].lane];
  int64_t dur = c->end - c->start;
  l->calls++;
  if (add_one(&l->m, c->start, c->end, dur, c->region, ri->count > d->cols, f->origin, d->bw))
    return -1;
  struct rp_series *ser = &f->series[ri->series];
  ser->calls++; /* a time-series mark spans the starts of its calls */
  return add_one(&ser->m, c->start, c->start, dur, c->region, ri->count > d->ts_cols, f->origin,
                 d->ts_bw);
}

/* After the walks: the deferred Gantt pass done apart when the walk could
 * not do it, then the lanes in their order. */
static int defer_finish(struct rp_model *m, struct rp_file *f, const char *cmd) {
  struct rp_defer *d = f->defer;
  int rc = 0;
  if (d->walk_failed || d->gantt_failed) {
    for (size_t i = 0; i < f->nlanes; i++) free(f->lanes[i].m.v);
    for (size_t i = 0; i < f->nseries; i++) free(f->series[i].m.v);
    free(f->lanes);
    free(f->series);
    f->lanes = NULL;
    f->series = NULL;
    f->nlanes = f->nseries = 0;
    f->lanes_dropped = 0;
    rc = gantt_pass(m, f, d->order, d->lane_cap, d->total, cmd);
  } else {
    m->pdone += d->total;
  }
  if (!rc) gantt_sort(f, d->order);
  defer_free(f);
  return rc;
}

/* ---- call stacks: flame chart rows and the merged tree --------------------------------- */

/* A call-path tree being built: nodes keyed by (parent, region), the keys
 * kept in the slots so that a lookup touches one slot (it runs for every
 * call of a walk). */
struct tslot {
  int64_t parent;
  size_t node; /* SIZE_MAX: empty */
  uint32_t region;
};
struct tbuild {
  struct rp_tnode *v;
  size_t n, cap;
  struct tslot *slots;
  size_t nslots;
};

static uint64_t mix(int64_t parent, uint32_t region) {
  uint64_t h = (uint64_t)parent * 0x9E3779B97F4A7C15ull ^ ((uint64_t)region + 0x632BE59BD9B4E019ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

static int tmap_grow(struct tbuild *t) {
  size_t ns = t->nslots ? t->nslots * 2 : 256;
  struct tslot *slots = malloc(ns * sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < ns; i++) slots[i].node = SIZE_MAX;
  for (size_t i = 0; i < t->n; i++) {
    size_t s = mix(t->v[i].parent, t->v[i].region) & (ns - 1);
    while (slots[s].node != SIZE_MAX) s = (s + 1) & (ns - 1);
    slots[s] = (struct tslot){t->v[i].parent, i, t->v[i].region};
  }
  free(t->slots);
  t->slots = slots;
  t->nslots = ns;
  return 0;
}

/* A new node at the empty slot s (after a lookup that missed). */
static int tnode_add(struct tbuild *t, size_t s, int64_t parent, uint32_t region, size_t *out) {
  if (t->n == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 64;
    struct rp_tnode *v = realloc(t->v, nc * sizeof *v);
    if (!v) return -1;
    t->v = v;
    t->cap = nc;
  }
  struct rp_tnode *x = &t->v[t->n];
  memset(x, 0, sizeof *x);
  x->region = region;
  x->parent = parent;
  t->slots[s] = (struct tslot){parent, t->n, region};
  *out = t->n++;
  return 0;
}

static inline int tnode(struct tbuild *t, int64_t parent, uint32_t region, size_t *out) {
  if ((t->n + 1) * 2 > t->nslots && tmap_grow(t)) return -1;
  size_t s = mix(parent, region) & (t->nslots - 1);
  for (;; s = (s + 1) & (t->nslots - 1)) {
    const struct tslot *x = &t->slots[s];
    if (x->node == SIZE_MAX) return tnode_add(t, s, parent, region, out);
    if (x->parent == parent && x->region == region) {
      *out = x->node;
      return 0;
    }
  }
}

/* A call of `ns` ns on node i (sums saturate: a hostile file's times, each
 * bounded, can still add up past int64). */
static void tcount(struct tbuild *t, size_t i, int64_t ns) {
  struct rp_tnode *x = &t->v[i];
  x->count++;
  if (__builtin_add_overflow(x->total_ns, ns, &x->total_ns)) x->total_ns = ns > 0 ? INT64_MAX : INT64_MIN;
}

/* One rank's flame chart: per lane (thread, task) and depth, the calls in
 * start order, merged per pixel column where a row has more calls than
 * columns. Roots that overlap an earlier root of the same lane come from a
 * thread that was not recorded (nesting known from call ids): they and their
 * callees get a lane of their own instead of being drawn on top. */
#define RP_MAX_VLANES 16
static int flame_panel(struct rp_model *m, struct rp_file *f, int64_t rank, const sp_call *c,
                       size_t n, size_t overlaps) {
  struct rp_fpanel *p = &f->fpanels[f->nfpanels];
  memset(p, 0, sizeof *p);
  p->rank = rank;
  p->overlaps = overlaps;
  size_t cols = (size_t)RP_PLOT_W(m);
  int64_t span = f->end - f->origin > 0 ? f->end - f->origin : 1;
  double bw = (double)span / (double)cols;
  size_t cap = 0;
  unsigned char *vl = malloc(n ? n : 1);
  uint64_t (*count)[RP_MAX_DEPTH] = calloc(RP_MAX_VLANES, sizeof *count);
  size_t (*row_of)[RP_MAX_DEPTH] = malloc(RP_MAX_VLANES * sizeof *row_of);
  int rc = vl && count && row_of ? 0 : -1;
  for (size_t a = 0; a < n && !rc;) {
    size_t b = a;
    while (b < n && c[b].thread == c[a].thread && c[b].task == c[a].task) b++;
    int64_t vend[RP_MAX_VLANES];
    size_t nv = 0;
    memset(count, 0, RP_MAX_VLANES * sizeof *count);
    for (size_t i = a; i < b; i++) {
      if (c[i].parent >= 0) {
        vl[i] = vl[c[i].parent];
      } else {
        size_t v = 0;
        while (v < nv && vend[v] > c[i].start_ns) v++;
        if (v == RP_MAX_VLANES) v = RP_MAX_VLANES - 1;
        if (v == nv) nv++;
        if (c[i].end_ns > vend[v] || v + 1 == nv) vend[v] = c[i].end_ns;
        vl[i] = (unsigned char)v;
      }
      if (c[i].depth < RP_MAX_DEPTH) count[vl[i]][c[i].depth]++;
      else p->deep_calls++;
    }
    for (size_t v = 0; v < nv && !rc; v++)
      for (uint32_t d = 0; d < RP_MAX_DEPTH; d++) {
        row_of[v][d] = SIZE_MAX;
        if (!count[v][d]) continue;
        if (p->nrows == cap) {
          cap = cap ? cap * 2 : 16;
          struct rp_frow *w = realloc(p->rows, cap * sizeof *w);
          if (!w) {
            rc = -1;
            break;
          }
          p->rows = w;
        }
        row_of[v][d] = p->nrows;
        struct rp_frow *w = &p->rows[p->nrows++];
        memset(w, 0, sizeof *w);
        w->thread = c[a].thread;
        w->task = c[a].task;
        w->vlane = (uint32_t)v;
        w->depth = d;
        w->calls = count[v][d];
      }
    for (size_t i = a; i < b && !rc; i++) {
      if (c[i].depth >= RP_MAX_DEPTH) continue;
      struct rp_frow *w = &p->rows[row_of[vl[i]][c[i].depth]];
      int64_t d = c[i].end_ns - c[i].start_ns;
      struct rp_mark mk = {c[i].start_ns, c[i].end_ns, d, d, d, 1, c[i].region, 0, 0};
      if (add_call(&w->m, &mk, w->calls > cols, f->origin, bw)) rc = -1;
    }
    a = b;
  }
  free(vl);
  free(count);
  free(row_of);
  f->nfpanels++;
  return rc;
}

/* The call-path tree of one rank straight from the recorded call and parent
 * ids, for ranks that get no flame chart: a hash from id to call instead of
 * sorting every call (which dominates sp_results_call_stack on large files).
 * It accepts exactly the ids the reader's nesting accepts (unique, parent on
 * the same thread and sorting before the child by start, longer first, then
 * id) and builds the same tree; anything else (no ids, async tasks, a
 * dangling or duplicated id) returns 0 and the caller uses the reader.
 * Returns 1 when done, 0 to fall back, -1 out of memory, -2 a read error. */
static int ids_tree(struct rp_model *m, struct rp_file *f, int64_t rank, struct tbuild *t) {
  sp_results *r = f->r;
  if (!sp_results_has_call_ids(r) || sp_results_has_tasks(r)) return 0;
  size_t nrows = 0, *rows = NULL; /* the rank's */
  if (sp__rank_rows(r, rank, &rows, &nrows) != SP_OK) return -1;
  uint64_t total = 0;
  for (size_t k = 0; k < nrows; k++) {
    sp_row_info info;
    if (sp_results_row_info(r, rows[k], &info) == SP_OK) total += info.count;
  }
  if (total > ((uint64_t)1 << 31)) {
    free(rows);
    return 0;
  }
  size_t n = (size_t)total, ns = 16;
  while (ns < 2 * n) ns *= 2;
  int64_t *id = malloc((n ? n : 1) * sizeof *id), *pid = malloc((n ? n : 1) * sizeof *pid);
  int64_t *st = malloc((n ? n : 1) * sizeof *st), *en = malloc((n ? n : 1) * sizeof *en);
  int64_t *th = malloc((n ? n : 1) * sizeof *th);
  uint32_t *reg = malloc((n ? n : 1) * sizeof *reg), *slot = malloc(ns * sizeof *slot);
  int64_t *node = malloc((n ? n : 1) * sizeof *node);
  size_t *stack = malloc((n ? n : 1) * sizeof *stack), nreg = sp_results_num_regions(r);
  unsigned char *keep = malloc(nreg ? nreg : 1);
  int rc = id && pid && st && en && th && reg && slot && node && stack && keep ? 1 : -1;
  for (size_t i = 0; rc == 1 && i < nreg; i++)
    keep[i] = (unsigned char)sp_filter_match_region(m->f, sp_results_region_name(r, i));
  size_t at = 0;
  int threads = sp_results_has_threads(r);
  for (size_t q = 0; q < nrows && rc == 1; q++) {
    size_t w = rows[q];
    sp_row_info info;
    if (sp_results_row_info(r, w, &info) != SP_OK || !info.count) continue;
    for (uint64_t done = 0; done < info.count && rc == 1;) {
      size_t k = info.count - done < SLICE ? (size_t)(info.count - done) : SLICE;
      if (sp_results_row_read(r, w, done, k, st + at, en + at, id + at, pid + at,
                              threads ? th + at : NULL) != SP_OK) {
        rc = -2;
        break;
      }
      for (size_t j = 0; j < k; j++) {
        reg[at + j] = (uint32_t)info.region;
        if (!threads) th[at + j] = -1;
      }
      done += k;
      at += k;
      progress(m, at, n);
    }
  }
  /* id -> call: open addressing, UINT32_MAX = empty */
  for (size_t i = 0; rc == 1 && i < ns; i++) slot[i] = UINT32_MAX;
  for (size_t i = 0; rc == 1 && i < n; i++) {
    if (id[i] < 0) {
      rc = 0;
      break;
    }
    size_t h = (size_t)mix(id[i], 0) & (ns - 1);
    while (slot[h] != UINT32_MAX && id[slot[h]] != id[i]) h = (h + 1) & (ns - 1);
    if (slot[h] != UINT32_MAX) rc = 0; /* duplicated id */
    slot[h] = (uint32_t)i;
  }
  /* pid[i] becomes the parent's index (or -1), checked as the reader checks */
  for (size_t i = 0; rc == 1 && i < n; i++) {
    if (pid[i] < 0) {
      pid[i] = -1;
      continue;
    }
    size_t h = (size_t)mix(pid[i], 0) & (ns - 1);
    while (slot[h] != UINT32_MAX && id[slot[h]] != pid[i]) h = (h + 1) & (ns - 1);
    if (slot[h] == UINT32_MAX) {
      rc = 0;
      break;
    }
    size_t p = slot[h];
    int before = st[p] < st[i] || (st[p] == st[i] && (en[p] > en[i] ||
                                                      (en[p] == en[i] && id[p] < id[i])));
    /* A parent on another thread (an OpenMP worker's call under the call
     * that opened the region) is a parent too; `before` is a strict order,
     * so the chains cannot loop. */
    if (!before) {
      rc = 0;
      break;
    }
    pid[i] = (int64_t)p;
  }
  /* node[c]: the tree node of a kept call; for a dropped call its nearest
   * kept ancestor's node (-1: none); -2 while unknown */
  for (size_t i = 0; rc == 1 && i < n; i++) node[i] = -2;
  for (size_t i = 0; rc == 1 && i < n; i++) {
    size_t top = 0, c = i;
    while (node[c] == -2) {
      stack[top++] = c;
      if (pid[c] < 0) break;
      c = (size_t)pid[c];
    }
    while (top > 0 && rc == 1) {
      c = stack[--top];
      int64_t pn = pid[c] < 0 ? -1 : node[pid[c]];
      if (!keep[reg[c]]) {
        node[c] = pn;
        continue;
      }
      size_t x;
      if (tnode(t, pn, reg[c], &x)) rc = -1;
      else node[c] = (int64_t)x;
    }
  }
  for (size_t i = 0; rc == 1 && i < n; i++) {
    if (!keep[reg[i]]) continue;
    tcount(t, (size_t)node[i], en[i] - st[i]);
  }
  free(id), free(pid), free(st), free(en), free(th), free(reg), free(slot), free(node), free(stack);
  free(keep);
  free(rows);
  return rc;
}

/* ---- flame chart rows and the tree from a walk of the rank's calls ------------------------
 * The walk (read/read_walk.h) hands a rank's calls over in start order,
 * nested, without the reader holding them: each call goes straight to its
 * tree node and flame-chart row, and its tag is (slot, node) for its
 * children. A slot is a (lane, virtual lane, depth) of the chart; the slot
 * one deeper is linked from it, so a child finds its row without a lookup.
 * A row keeps its calls as they come until it has more than the plot has
 * columns, then folds them per column and merges the later ones as they
 * come: the marks the sorted path's flame_panel draws. The rank's tree is
 * built apart and merged once the walk finished, since a walk may refuse a
 * rank part way (the sorted path then starts from nothing). */

#define FW_NONE UINT64_MAX /* the tag of "no kept ancestor" */

struct fslot {
  uint32_t lane, vlane, depth; /* depth RP_MAX_DEPTH: deeper, not drawn */
  uint32_t below;              /* the slot at depth + 1; UINT32_MAX: not made yet */
  size_t row;                  /* SIZE_MAX: no row yet */
};

struct flane {
  int64_t thread, task;
  int64_t vend[RP_MAX_VLANES];
  size_t nv;
  uint32_t top[RP_MAX_VLANES]; /* depth-0 slot of each virtual lane */
  int seen;
};

struct fwalk {
  const unsigned char *keep; /* by file region */
  struct rp_file *f;
  struct rp_defer *d;        /* Gantt lanes and time series taken on the way; NULL: none */
  struct tbuild t;           /* this rank's tree */
  struct rp_fpanel *p;       /* NULL: the rank is not drawn */
  size_t rcap, cols;
  int64_t origin, span;
  double bw;
  struct flane *lanes;
  size_t nlanes;
  struct fslot *slots;
  size_t nslots, scap;
  size_t overlaps;
  int oom;
};

static sp_status fw_oom(struct fwalk *w) {
  w->oom = 1;
  return SP_ERR_NO_MEMORY;
}

static uint32_t fw_slot(struct fwalk *w, uint32_t lane, uint32_t vlane, uint32_t depth) {
  if (w->nslots == w->scap) {
    size_t cap = w->scap ? w->scap * 2 : 64;
    struct fslot *v = cap < UINT32_MAX ? realloc(w->slots, cap * sizeof *v) : NULL;
    if (!v) return UINT32_MAX;
    w->slots = v;
    w->scap = cap;
  }
  uint32_t i = (uint32_t)w->nslots++;
  w->slots[i] = (struct fslot){lane, vlane, depth, UINT32_MAX, SIZE_MAX};
  if (depth == RP_MAX_DEPTH) w->slots[i].below = i; /* deeper still: not drawn either */
  return i;
}

static struct flane *fw_lane(struct fwalk *w, const struct sp__walk_call *c) {
  if (c->lane >= w->nlanes) {
    size_t n = w->nlanes ? w->nlanes * 2 : 16;
    while (n <= c->lane) n *= 2;
    struct flane *v = realloc(w->lanes, n * sizeof *v);
    if (!v) return NULL;
    memset(v + w->nlanes, 0, (n - w->nlanes) * sizeof *v);
    w->lanes = v;
    w->nlanes = n;
  }
  struct flane *l = &w->lanes[c->lane];
  if (!l->seen) {
    l->seen = 1;
    l->thread = c->thread;
    l->task = c->task;
    for (size_t v = 0; v < RP_MAX_VLANES; v++) l->top[v] = UINT32_MAX;
  }
  return l;
}

/* The call's slot: under its kept ancestor when that is on its lane, else
 * a root, on the first virtual lane free at its start (flame_panel's rule). */
static uint32_t fw_place(struct fwalk *w, const struct sp__walk_call *c, uint32_t up) {
  if (up != UINT32_MAX && w->slots[up].lane == c->lane) {
    uint32_t s = w->slots[up].below;
    if (s == UINT32_MAX) {
      s = fw_slot(w, c->lane, w->slots[up].vlane, w->slots[up].depth + 1);
      if (s != UINT32_MAX) w->slots[up].below = s;
    }
    return s;
  }
  struct flane *l = fw_lane(w, c);
  if (!l) return UINT32_MAX;
  size_t v = 0;
  while (v < l->nv && l->vend[v] > c->start) v++;
  if (v == RP_MAX_VLANES) v = RP_MAX_VLANES - 1;
  if (v == l->nv) l->nv++;
  if (c->end > l->vend[v] || v + 1 == l->nv) l->vend[v] = c->end;
  if (l->top[v] == UINT32_MAX) l->top[v] = fw_slot(w, c->lane, (uint32_t)v, 0);
  return l->top[v];
}

static sp_status fw_draw(struct fwalk *w, const struct sp__walk_call *c, uint32_t s) {
  struct fslot *x = &w->slots[s];
  struct rp_fpanel *p = w->p;
  if (x->depth >= RP_MAX_DEPTH) {
    p->deep_calls++;
    return SP_OK;
  }
  if (x->row == SIZE_MAX) {
    if (p->nrows == w->rcap) {
      size_t cap = w->rcap ? w->rcap * 2 : 16;
      struct rp_frow *v = realloc(p->rows, cap * sizeof *v);
      if (!v) return fw_oom(w);
      p->rows = v;
      w->rcap = cap;
    }
    x->row = p->nrows;
    struct rp_frow *r = &p->rows[p->nrows++];
    memset(r, 0, sizeof *r);
    r->thread = c->thread;
    r->task = c->task;
    r->vlane = x->vlane;
    r->depth = x->depth;
  }
  struct rp_frow *r = &p->rows[x->row];
  r->calls++;
  if (add_one(&r->m, c->start, c->end, c->end - c->start, c->region, r->calls > w->cols + 1,
              w->origin, w->bw))
    return fw_oom(w);
  if (r->calls == w->cols + 1) rp_marks_fold(&r->m, w->origin, w->span, w->cols);
  return SP_OK;
}

static sp_status fw_visit(void *ctx, const struct sp__walk_call *c, const uint64_t *ptag,
                          uint64_t *tag) {
  struct fwalk *w = ctx;
  if (c->parent_end != INT64_MIN && c->end > c->parent_end) w->overlaps++;
  uint64_t up = ptag ? *ptag : FW_NONE;
  if (!w->keep[c->region]) {
    *tag = up; /* its callees hang under its kept ancestor */
    return SP_OK;
  }
  if (w->d && defer_gantt(w->f, w->d, c)) return fw_oom(w);
  uint32_t pnode = (uint32_t)up, pslot = (uint32_t)(up >> 32);
  size_t node;
  if (tnode(&w->t, pnode == UINT32_MAX ? -1 : (int64_t)pnode, c->region, &node)) return fw_oom(w);
  if (node >= UINT32_MAX) return fw_oom(w); /* more tree nodes than a tag holds */
  tcount(&w->t, node, c->end - c->start);
  uint32_t slot = UINT32_MAX;
  if (w->p) {
    if ((slot = fw_place(w, c, pslot)) == UINT32_MAX) return fw_oom(w);
    sp_status st = fw_draw(w, c, slot);
    if (st != SP_OK) return st;
  }
  *tag = (uint64_t)slot << 32 | (uint32_t)node;
  return SP_OK;
}

static int cmp_frow(const void *pa, const void *pb) {
  const struct rp_frow *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->task != b->task) return a->task < b->task ? -1 : 1;
  if (a->vlane != b->vlane) return a->vlane < b->vlane ? -1 : 1;
  return (a->depth > b->depth) - (a->depth < b->depth);
}

static void panel_clear(struct rp_fpanel *p) {
  for (size_t k = 0; k < p->nrows; k++) free(p->rows[k].m.v);
  free(p->rows);
  memset(p, 0, sizeof *p);
}

/* One rank's tree (merged into g) and, when drawn, its flame chart panel,
 * from a walk. 1 done, 0 the walk refused the rank (nothing kept), -1 out
 * of memory, -2 a read error (sp_last_error()). */
static int walk_rank(struct rp_model *m, struct rp_file *f, int64_t rank, int drawn,
                     const unsigned char *keep, struct tbuild *g) {
  struct fwalk w;
  memset(&w, 0, sizeof w);
  w.keep = keep;
  w.f = f;
  w.d = f->defer;
  w.cols = (size_t)RP_PLOT_W(m);
  w.origin = f->origin;
  w.span = f->end - f->origin > 0 ? f->end - f->origin : 1;
  w.bw = (double)w.span / (double)w.cols;
  struct rp_fpanel *p = &f->fpanels[f->nfpanels];
  if (drawn) {
    memset(p, 0, sizeof *p);
    p->rank = rank;
    w.p = p;
  }
  sp_status err = SP_OK;
  int rc = sp__walk_calls(f->r, rank, fw_visit, &w, &err);
  if (rc < 0) rc = w.oom ? -1 : -2;
  if (rc == 0 && w.d) w.d->walk_failed = 1; /* what it took of this rank is partial */
  size_t *map = NULL;
  if (rc == 1 && !(map = malloc((w.t.n ? w.t.n : 1) * sizeof *map))) rc = -1;
  /* the rank's nodes into the merged tree, parents first as they were made */
  for (size_t i = 0; rc == 1 && i < w.t.n; i++) {
    const struct rp_tnode *x = &w.t.v[i];
    if (tnode(g, x->parent < 0 ? -1 : (int64_t)map[x->parent], x->region, &map[i])) {
      rc = -1;
      break;
    }
    struct rp_tnode *y = &g->v[map[i]];
    y->count += x->count;
    if (__builtin_add_overflow(y->total_ns, x->total_ns, &y->total_ns))
      y->total_ns = x->total_ns > 0 ? INT64_MAX : INT64_MIN;
  }
  if (rc == 1) {
    f->overlaps += w.overlaps;
    if (drawn) {
      p->overlaps = w.overlaps;
      qsort(p->rows, p->nrows, sizeof *p->rows, cmp_frow);
      f->nfpanels++;
    }
  } else if (drawn) {
    panel_clear(p);
  }
  free(map);
  free(w.t.v);
  free(w.t.slots);
  free(w.lanes);
  free(w.slots);
  return rc;
}

/* The tree of calls sorted by the reader: each call under its lane parent,
 * or its parent on another lane (which may come later in the array: its
 * node is made first), as the walk and ids_tree hang it. */
static int stack_tree(struct tbuild *t, const sp_call *c, size_t n) {
  size_t *node_of = malloc((n ? n : 1) * sizeof *node_of), *stack = malloc((n ? n : 1) * sizeof *stack);
  int rc = node_of && stack ? 0 : -1;
  for (size_t k = 0; k < n && !rc; k++) node_of[k] = SIZE_MAX;
  for (size_t k = 0; k < n && !rc; k++) {
    size_t top = 0, i = k;
    while (node_of[i] == SIZE_MAX) {
      stack[top++] = i;
      int64_t up = c[i].parent >= 0 ? c[i].parent : c[i].xparent;
      if (up < 0) break;
      i = (size_t)up;
    }
    while (top > 0 && !rc) {
      i = stack[--top];
      int64_t up = c[i].parent >= 0 ? c[i].parent : c[i].xparent;
      if (tnode(t, up < 0 ? -1 : (int64_t)node_of[up], c[i].region, &node_of[i])) rc = -1;
    }
    if (!rc) tcount(t, node_of[k], c[k].end_ns - c[k].start_ns);
  }
  free(node_of);
  free(stack);
  return rc;
}

static int cmp_u64(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return (a > b) - (a < b);
}

/* The tree's nodes in one order whichever path built them (the walk makes
 * them in start order, the sorted path lane by lane): breadth first, the
 * children of a node by region. The charts draw nodes in array order. */
static int tree_canonical(struct tbuild *t) {
  size_t n = t->n;
  if (n < 2) return 0;
  if (n >= UINT32_MAX) return -1;
  /* by[p + 1 .. ]: the children of node p (slot 0: the roots), as region << 32 | node */
  size_t *first = calloc(n + 2, sizeof *first), *newidx = malloc(n * sizeof *newidx);
  uint64_t *by = malloc(n * sizeof *by), *order = malloc(n * sizeof *order);
  struct rp_tnode *v = malloc(n * sizeof *v);
  int rc = first && newidx && by && order && v ? 0 : -1;
  if (!rc) {
    for (size_t i = 0; i < n; i++) first[(size_t)(t->v[i].parent + 1) + 1]++;
    for (size_t p = 1; p <= n + 1; p++) first[p] += first[p - 1];
    for (size_t i = 0; i < n; i++)
      by[first[(size_t)(t->v[i].parent + 1)]++] = (uint64_t)t->v[i].region << 32 | i;
    for (size_t p = n + 1; p > 0; p--) first[p] = first[p - 1]; /* back to the starts */
    first[0] = 0;
    for (size_t p = 0; p <= n; p++) qsort(by + first[p], first[p + 1] - first[p], sizeof *by, cmp_u64);
    /* breadth first: the roots, then each placed node's children */
    size_t nord = 0;
    for (size_t k = first[0]; k < first[1]; k++) order[nord++] = (uint32_t)by[k];
    for (size_t q = 0; q < nord; q++) {
      size_t i = (size_t)order[q];
      for (size_t k = first[i + 1]; k < first[i + 2]; k++) order[nord++] = (uint32_t)by[k];
    }
    for (size_t q = 0; q < n; q++) newidx[order[q]] = q;
    for (size_t q = 0; q < n; q++) {
      v[q] = t->v[order[q]];
      if (v[q].parent >= 0) v[q].parent = (int64_t)newidx[v[q].parent];
    }
    free(t->v);
    t->v = v;
    t->cap = n;
    v = NULL;
  }
  free(first);
  free(newidx);
  free(by);
  free(order);
  free(v);
  return rc;
}

int rp_load_flame(struct rp_model *m, struct rp_file *f, const char *cmd) {
  if (!f->has_events || f->nregs == 0 || f->nranks == 0) return 0;
  int64_t *want = NULL;
  size_t nwant = 0;
  int all = m->o->flame_ranks && !strcmp(m->o->flame_ranks, "all");
  if (m->o->flame_ranks && !all && sp_parse_rank_spec(m->o->flame_ranks, &want, &nwant) != SP_OK)
    return sp_cli_usage_error(cmd, "--flame-ranks: %s", sp_last_error());
  size_t nreg = sp_results_num_regions(f->r);
  f->fpanels = calloc(f->nranks, sizeof *f->fpanels);
  unsigned char *keep = malloc(nreg ? nreg : 1);
  if (!f->fpanels || !keep) {
    free(want);
    free(keep);
    return oom(cmd);
  }
  for (size_t i = 0; i < nreg; i++)
    keep[i] = (unsigned char)sp_filter_match_region(m->f, sp_results_region_name(f->r, i));
  struct tbuild t = {NULL, 0, 0, NULL, 0};
  int rc = 0;
  m->prog->label = "building call trees";
  sp_results_set_progress(f->r, progress, m);
  for (size_t i = 0; i < f->nranks && !rc; i++) {
    int64_t rank = f->ranks[i];
    int drawn = all ? 1 : want ? rank_in(want, nwant, rank) : i == 0;
    uint64_t rank_events = 0;
    size_t *rows = NULL, nr = 0; /* the rank's rows (a scan of all rows per rank was quadratic) */
    if (sp__rank_rows(f->r, rank, &rows, &nr) != SP_OK) {
      rc = oom(cmd);
      break;
    }
    for (size_t k = 0; k < nr; k++) {
      sp_row_info info;
      if (sp_results_row_info(f->r, rows[k], &info) == SP_OK) rank_events += info.count;
    }
    free(rows);
    int walked = walk_rank(m, f, rank, drawn, keep, &t);
    if (walked == -1) rc = oom(cmd);
    if (walked == -2) rc = sp_cli_error(cmd, "%s", sp_last_error());
    if (walked) {
      m->pdone += rank_events;
      continue;
    }
    /* the walk refused the rank (rows out of order, odd ids): the reader's
     * sorted path, which holds every call */
    if (!drawn) {
      int fast = ids_tree(m, f, rank, &t);
      if (fast == -1) rc = oom(cmd);
      if (fast == -2) rc = sp_cli_error(cmd, "%s", sp_last_error());
      if (fast) {
        m->pdone += rank_events;
        continue;
      } /* 0: the ids were refused before any node was added */
    }
    sp_call *c = NULL;
    size_t n = 0, ov = 0;
    if (sp_results_call_stack(f->r, rank, m->f, &c, &n, &ov) != SP_OK) {
      rc = sp_cli_error(cmd, "%s", sp_last_error());
      break;
    }
    f->overlaps += ov;
    if (stack_tree(&t, c, n)) rc = oom(cmd);
    if (!rc && drawn && flame_panel(m, f, rank, c, n, ov)) rc = oom(cmd);
    free(c);
    m->pdone += rank_events;
  }
  sp_results_set_progress(f->r, NULL, NULL);
  if (!rc && f->defer) rc = defer_finish(m, f, cmd);
  if (!rc && tree_canonical(&t)) rc = oom(cmd);
  f->tree = t.v;
  f->ntree = t.n;
  free(t.slots); /* slots of the order before tree_canonical */
  free(keep);
  free(want);
  return rc;
}

int rp_load_table(struct rp_model *m, struct rp_file *f, const char *cmd) {
  unsigned flags = SP_STATS_OWN | (f->has_events ? SP_STATS_PERCENTILES : 0u);
  m->prog->label = "percentiles";
  sp_results_set_progress(f->r, progress, m);
  for (size_t k = 0; k < f->nregs; k++) {
    uint64_t calls = f->has_events ? f->regs[k].s.count : 0;
    if (sp_results_region_stats(f->r, f->regs[k].region, m->f, flags, &f->regs[k].s) != SP_OK) {
      sp_results_set_progress(f->r, NULL, NULL);
      return sp_cli_error(cmd, "%s", sp_last_error());
    }
    m->pdone += calls;
  }
  sp_results_set_progress(f->r, NULL, NULL);
  return 0;
}

void rp_free_file(struct rp_file *f) {
  defer_free(f);
  for (size_t i = 0; i < f->nlanes; i++) free(f->lanes[i].m.v);
  for (size_t i = 0; i < f->nseries; i++) free(f->series[i].m.v);
  for (size_t i = 0; i < f->nfpanels; i++) {
    for (size_t k = 0; k < f->fpanels[i].nrows; k++) free(f->fpanels[i].rows[k].m.v);
    free(f->fpanels[i].rows);
  }
  free(f->fpanels);
  free(f->lanes);
  free(f->series);
  free(f->tree);
  free(f->ranks);
  free(f->gantt_ranks);
  free(f->regs);
  free(f->reg_of_g);
  free(f->gidx);
  free(f->abs);
  free(f->label);
  sp_results_free(f->r);
  memset(f, 0, sizeof *f);
}
