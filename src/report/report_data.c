/* report_data.c - what `scope-profiler report` reads, reduced on the way to
 * what a chart can show.
 *
 * Statistics come from the summary rows (no events). Gantt lanes and time
 * series come from one streamed pass over the kept rows, read in slices:
 * a lane with more calls than the plot has pixel columns keeps one mark per
 * column (the calls starting in it merged: extent, summed and extreme
 * durations), so memory is bounded by lanes x columns, never by events. The
 * flame chart and flame graph need the exact call tree; it is rebuilt one
 * rank at a time (sp_results_call_stack) and reduced the same way before the
 * next rank is read. Percentiles for the summary table are the reader's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static void merge_into(struct rp_mark *a, const struct rp_mark *b) {
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

/* Add a call; with lod, calls starting in the column of the previous mark
 * join it. Calls arrive in start order per lane. */
static int add_call(struct rp_marks *m, const struct rp_mark *k, int lod, int64_t origin, double bw) {
  if (lod && m->n) {
    struct rp_mark *last = &m->v[m->n - 1];
    if (bucket_of(last->s, origin, bw) == bucket_of(k->s, origin, bw)) {
      merge_into(last, k);
      return 0;
    }
  }
  return push_mark(m, k);
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
    for (size_t k = 0; k < f->nregs; k++) {
      size_t reg = f->regs[k].region;
      f->gidx[reg] = rp_global_region(m, sp_results_region_name(f->r, reg));
      f->regs[k].g = f->gidx[reg];
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

int rp_load_events(struct rp_model *m, struct rp_file *f, const char *cmd) {
  if (!f->has_events || f->nregs == 0 || f->nranks == 0) return 0;
  sp_results *r = f->r;
  size_t nrows = sp_results_num_rows(r), nreg = sp_results_num_regions(r);
  double pw = RP_PLOT_W(m);
  size_t cols = (size_t)pw, ts_cols = cols / 2;
  int64_t span = f->end - f->origin > 0 ? f->end - f->origin : 1;
  double bw = (double)span / (double)cols, ts_bw = (double)span / (double)ts_cols;
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
  int64_t *st = malloc(SLICE * sizeof *st), *en = malloc(SLICE * sizeof *en);
  int64_t *th = malloc(SLICE * sizeof *th);
  int gpu = sp_results_has_gpu(r);
  int64_t *gp = gpu ? malloc(SLICE * sizeof *gp) : NULL;
  size_t lanes_cap = 0, series_cap = 0;
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
    if (f->nseries == series_cap) {
      series_cap = series_cap ? series_cap * 2 : 16;
      struct rp_series *v = realloc(f->series, series_cap * sizeof *v);
      if (!v) {
        rc = oom(cmd);
        break;
      }
      f->series = v;
    }
    struct rp_series *ser = &f->series[f->nseries++];
    memset(ser, 0, sizeof *ser);
    ser->region = info.region;
    ser->rank = info.rank;
    int lod = info.count > cols, ts_lod = info.count > ts_cols;
    struct lane_ref refs[64];
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
          if (nrefs == 64 || f->nlanes >= 4 * lane_cap) {
            f->lanes_dropped++;
          } else {
            if (f->nlanes == lanes_cap) {
              lanes_cap = lanes_cap ? lanes_cap * 2 : 16;
              struct rp_lane *v = realloc(f->lanes, lanes_cap * sizeof *v);
              if (!v) {
                rc = oom(cmd);
                break;
              }
              f->lanes = v;
            }
            li = f->nlanes++;
            memset(&f->lanes[li], 0, sizeof f->lanes[li]);
            f->lanes[li].region = info.region;
            f->lanes[li].rank = info.rank;
            f->lanes[li].thread = t;
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
  if (!rc && f->nlanes) {
    /* lanes: by rank, then region in order of first call, then thread */
    for (size_t i = 0; i < f->nlanes; i++) f->lanes[i].region = order[f->lanes[i].region];
    qsort(f->lanes, f->nlanes, sizeof *f->lanes, cmp_lane);
    for (size_t i = 0; i < f->nlanes; i++) f->lanes[i].region = f->regs[f->lanes[i].region].region;
  }
  free(order);
  return rc;
}

/* ---- call stacks: flame chart rows and the merged tree --------------------------------- */

struct tmap {
  size_t *slots, nslots;
};

static uint64_t mix(int64_t parent, uint32_t region) {
  uint64_t h = (uint64_t)parent * 0x9E3779B97F4A7C15ull ^ ((uint64_t)region + 0x632BE59BD9B4E019ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

static int tmap_grow(struct tmap *t, const struct rp_tnode *nodes, size_t n) {
  size_t ns = t->nslots ? t->nslots * 2 : 256;
  size_t *slots = malloc(ns * sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < ns; i++) slots[i] = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    size_t s = mix(nodes[i].parent, nodes[i].region) & (ns - 1);
    while (slots[s] != SIZE_MAX) s = (s + 1) & (ns - 1);
    slots[s] = i;
  }
  free(t->slots);
  t->slots = slots;
  t->nslots = ns;
  return 0;
}

static int tnode(struct rp_file *f, struct tmap *t, size_t *cap, int64_t parent, uint32_t region,
                 size_t *out) {
  if ((f->ntree + 1) * 2 > t->nslots && tmap_grow(t, f->tree, f->ntree)) return -1;
  size_t s = mix(parent, region) & (t->nslots - 1);
  while (t->slots[s] != SIZE_MAX) {
    const struct rp_tnode *x = &f->tree[t->slots[s]];
    if (x->parent == parent && x->region == region) {
      *out = t->slots[s];
      return 0;
    }
    s = (s + 1) & (t->nslots - 1);
  }
  if (f->ntree == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    struct rp_tnode *v = realloc(f->tree, nc * sizeof *v);
    if (!v) return -1;
    f->tree = v;
    *cap = nc;
  }
  struct rp_tnode *x = &f->tree[f->ntree];
  memset(x, 0, sizeof *x);
  x->region = region;
  x->parent = parent;
  t->slots[s] = f->ntree;
  *out = f->ntree++;
  return 0;
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
static int ids_tree(struct rp_model *m, struct rp_file *f, int64_t rank, struct tmap *t,
                    size_t *tcap) {
  sp_results *r = f->r;
  if (!sp_results_has_call_ids(r) || sp_results_has_tasks(r)) return 0;
  size_t nrows = sp_results_num_rows(r);
  uint64_t total = 0;
  for (size_t w = 0; w < nrows; w++) {
    sp_row_info info;
    if (sp_results_row_info(r, w, &info) == SP_OK && info.rank == rank) total += info.count;
  }
  if (total > ((uint64_t)1 << 31)) return 0;
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
  for (size_t w = 0; w < nrows && rc == 1; w++) {
    sp_row_info info;
    if (sp_results_row_info(r, w, &info) != SP_OK || info.rank != rank || !info.count) continue;
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
      if (tnode(f, t, tcap, pn, reg[c], &x)) rc = -1;
      else node[c] = (int64_t)x;
    }
  }
  for (size_t i = 0; rc == 1 && i < n; i++) {
    if (!keep[reg[i]]) continue;
    f->tree[node[i]].count++;
    f->tree[node[i]].total_ns += en[i] - st[i];
  }
  free(id), free(pid), free(st), free(en), free(th), free(reg), free(slot), free(node), free(stack);
  free(keep);
  return rc;
}

int rp_load_flame(struct rp_model *m, struct rp_file *f, const char *cmd) {
  if (!f->has_events || f->nregs == 0 || f->nranks == 0) return 0;
  int64_t *want = NULL;
  size_t nwant = 0;
  int all = m->o->flame_ranks && !strcmp(m->o->flame_ranks, "all");
  if (m->o->flame_ranks && !all && sp_parse_rank_spec(m->o->flame_ranks, &want, &nwant) != SP_OK)
    return sp_cli_usage_error(cmd, "--flame-ranks: %s", sp_last_error());
  f->fpanels = calloc(f->nranks, sizeof *f->fpanels);
  if (!f->fpanels) {
    free(want);
    return oom(cmd);
  }
  struct tmap t = {NULL, 0};
  size_t tcap = 0;
  int rc = 0;
  m->prog->label = "building call trees";
  sp_results_set_progress(f->r, progress, m);
  for (size_t i = 0; i < f->nranks && !rc; i++) {
    int64_t rank = f->ranks[i];
    int drawn = all ? 1 : want ? rank_in(want, nwant, rank) : i == 0;
    uint64_t rank_events = 0;
    for (size_t w = 0; w < sp_results_num_rows(f->r); w++) {
      sp_row_info info;
      if (sp_results_row_info(f->r, w, &info) == SP_OK && info.rank == rank)
        rank_events += info.count;
    }
    if (!drawn) {
      int fast = ids_tree(m, f, rank, &t, &tcap);
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
    size_t *node_of = malloc((n ? n : 1) * sizeof *node_of);
    if (!node_of) rc = oom(cmd);
    for (size_t k = 0; k < n && !rc; k++) {
      int64_t up = c[k].parent >= 0 ? c[k].parent : c[k].xparent < (int64_t)k ? c[k].xparent : -1;
      int64_t pn = up < 0 ? -1 : (int64_t)node_of[up];
      if (tnode(f, &t, &tcap, pn, c[k].region, &node_of[k])) {
        rc = oom(cmd);
        break;
      }
      f->tree[node_of[k]].count++;
      f->tree[node_of[k]].total_ns += c[k].end_ns - c[k].start_ns;
    }
    free(node_of);
    if (!rc && drawn && flame_panel(m, f, rank, c, n, ov)) rc = oom(cmd);
    free(c);
    m->pdone += rank_events;
  }
  sp_results_set_progress(f->r, NULL, NULL);
  free(t.slots);
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
  free(f->gidx);
  free(f->abs);
  free(f->label);
  sp_results_free(f->r);
  memset(f, 0, sizeof *f);
}
