/* tui_model.c - the data of `scope-profiler tui` (see tui_model.h): region
 * statistics from the summary rows, the call tree, and per region its calls
 * over time, per rank and per thread, read from its rows in slices.
 */
#include "tui/tui_model.h"

#include "cli/cli_util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define SLICE 65536

sp_status tui_model_open(struct tui_model *m, sp_results *r, const char *path, const sp_filter *f) {
  memset(m, 0, sizeof *m);
  m->r = r;
  m->f = f;
  m->path = path;
  size_t nreg = sp_results_num_regions(r);
  m->regs = calloc(nreg ? nreg : 1, sizeof *m->regs);
  m->order = calloc(nreg ? nreg : 1, sizeof *m->order);
  if (!m->regs || !m->order) return SP_ERR_NO_MEMORY;
  m->t0 = INT64_MAX;
  m->t1 = INT64_MIN;
  unsigned flags = sp_results_has_events(r) || sp_results_num_events(r) == 0 ? SP_STATS_OWN : 0;
  for (size_t i = 0; i < nreg; i++) {
    const char *name = sp_results_region_name(r, i);
    if (!sp_filter_match_region(f, name)) continue;
    struct tui_region *g = &m->regs[m->nregs];
    sp_status st = sp_results_region_stats(r, i, f, flags, &g->s);
    if (st != SP_OK) return st;
    if (g->s.ranks == 0 || g->s.count == 0) continue;
    g->region = i;
    g->name = name;
    if (g->s.first_start_ns < m->t0) m->t0 = g->s.first_start_ns;
    if (g->s.last_end_ns > m->t1) m->t1 = g->s.last_end_ns;
    m->order[m->nregs] = m->nregs;
    m->nregs++;
  }
  if (m->t1 <= m->t0) m->t1 = m->t0 + 1;
  tui_model_sort(m, TUI_SORT_TOTAL);
  return SP_OK;
}

static void free_detail(struct tui_detail *d) {
  free(d->ranks);
  free(d->threads);
  memset(d, 0, sizeof *d);
}

void tui_model_free(struct tui_model *m) {
  for (size_t i = 0; m->regs && i < m->nregs; i++) free_detail(&m->regs[i].d);
  free(m->regs);
  free(m->order);
  free(m->nodes);
  free(m->kid_start);
  free(m->kids);
  free(m->roots);
  free(m->open);
  free(m->visible);
  memset(m, 0, sizeof *m);
}

const char *tui_sort_name(enum tui_sort sort) {
  static const char *const names[] = {"total", "own", "calls"};
  return sort < TUI_NSORTS ? names[sort] : "?";
}

static double sort_value(const struct tui_region *g, enum tui_sort sort) {
  switch (sort) {
  case TUI_SORT_OWN: return g->s.has_own ? (double)g->s.own_ns : -1;
  case TUI_SORT_CALLS: return (double)g->s.count;
  default: return (double)g->s.total_ns;
  }
}

static const struct tui_model *sort_ctx;
static int cmp_order(const void *pa, const void *pb) {
  const struct tui_region *a = &sort_ctx->regs[*(const size_t *)pa];
  const struct tui_region *b = &sort_ctx->regs[*(const size_t *)pb];
  double x = sort_value(a, sort_ctx->sort), y = sort_value(b, sort_ctx->sort);
  if (x != y) return x > y ? -1 : 1; /* largest first */
  return strcmp(a->name, b->name);
}

void tui_model_sort(struct tui_model *m, enum tui_sort sort) {
  m->sort = sort;
  sort_ctx = m;
  qsort(m->order, m->nregs, sizeof *m->order, cmp_order);
}

size_t tui_model_find(const struct tui_model *m, size_t region) {
  for (size_t i = 0; i < m->nregs; i++)
    if (m->regs[i].region == region) return i;
  return SIZE_MAX;
}

/* ---- the call tree ------------------------------------------------------------------ */

sp_status tui_model_tree(struct tui_model *m) {
  if (m->tree_loaded) return SP_OK;
  sp_status st = sp_results_call_tree(m->r, m->f, &m->nodes, &m->nnodes);
  if (st != SP_OK) return st;
  size_t n = m->nnodes;
  m->kid_start = calloc(n + 1, sizeof *m->kid_start);
  m->kids = malloc((n ? n : 1) * sizeof *m->kids);
  m->roots = malloc((n ? n : 1) * sizeof *m->roots);
  m->open = calloc(n ? n : 1, 1);
  m->visible = malloc((n ? n : 1) * sizeof *m->visible);
  size_t *fill = calloc(n + 1, sizeof *fill);
  if (!m->kid_start || !m->kids || !m->roots || !m->open || !m->visible || !fill) {
    free(fill);
    return SP_ERR_NO_MEMORY;
  }
  double roots_total = 0, session = 0;
  for (size_t i = 0; i < n; i++) {
    if (m->nodes[i].parent >= 0) {
      m->kid_start[m->nodes[i].parent + 1]++;
    } else {
      m->roots[m->nroots++] = i;
      roots_total += (double)m->nodes[i].total_ns;
      if (!strcmp(sp_results_region_name(m->r, m->nodes[i].region), "scope_profiler.session"))
        session += (double)m->nodes[i].total_ns;
    }
  }
  for (size_t i = 0; i < n; i++) m->kid_start[i + 1] += m->kid_start[i];
  for (size_t i = 0; i < n; i++)
    if (m->nodes[i].parent >= 0) {
      size_t p = (size_t)m->nodes[i].parent;
      m->kids[m->kid_start[p] + fill[p]++] = i;
    }
  free(fill);
  for (size_t i = 0; i < n; i++)
    sp_cli_sort_tree_nodes(m->r, m->nodes, m->kids + m->kid_start[i],
                           m->kid_start[i + 1] - m->kid_start[i]);
  sp_cli_sort_tree_nodes(m->r, m->nodes, m->roots, m->nroots);
  m->session_ns = session > 0 ? session : roots_total;
  for (size_t i = 0; i < m->nroots; i++) m->open[m->roots[i]] = 1;
  m->tree_loaded = 1;
  tui_model_relist(m);
  return SP_OK;
}

static void list_node(struct tui_model *m, size_t node, size_t depth) {
  m->visible[m->nvisible++] = (struct tui_node){node, depth};
  if (!m->open[node]) return;
  for (size_t k = m->kid_start[node]; k < m->kid_start[node + 1]; k++)
    list_node(m, m->kids[k], depth + 1);
}

void tui_model_relist(struct tui_model *m) {
  m->nvisible = 0;
  for (size_t i = 0; i < m->nroots; i++) list_node(m, m->roots[i], 0);
}

void tui_model_reveal(struct tui_model *m, size_t node) {
  for (int64_t p = m->nodes[node].parent; p >= 0; p = m->nodes[p].parent) m->open[p] = 1;
  tui_model_relist(m);
}

/* ---- search ------------------------------------------------------------------------- */

static int contains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0) return 0;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n) return 1;
  }
  return 0;
}

size_t tui_model_search(const struct tui_model *m, const char *needle, size_t from) {
  for (size_t k = 1; k <= m->nregs; k++) {
    size_t pos = (from + k) % m->nregs;
    if (contains(m->regs[m->order[pos]].name, needle)) return pos;
  }
  return SIZE_MAX;
}

/* Depth-first order of the whole tree: node -> its rank in that order. */
static size_t next_in_full_order(const struct tui_model *m, size_t node) {
  if (m->kid_start[node + 1] > m->kid_start[node]) return m->kids[m->kid_start[node]];
  for (;;) {
    int64_t p = m->nodes[node].parent;
    const size_t *sib = p >= 0 ? m->kids + m->kid_start[p] : m->roots;
    size_t nsib = p >= 0 ? m->kid_start[p + 1] - m->kid_start[p] : m->nroots;
    size_t i = 0;
    while (i < nsib && sib[i] != node) i++;
    if (i + 1 < nsib) return sib[i + 1];
    if (p < 0) return m->roots[0]; /* wrap */
    node = (size_t)p;
  }
}

size_t tui_model_search_tree(const struct tui_model *m, const char *needle, size_t from) {
  if (!m->tree_loaded || m->nnodes == 0) return SIZE_MAX;
  size_t node = from < m->nnodes ? from : m->roots[0];
  for (size_t k = 0; k < m->nnodes; k++) {
    node = next_in_full_order(m, node);
    if (contains(sp_results_region_name(m->r, m->nodes[node].region), needle)) return node;
  }
  return SIZE_MAX;
}

/* ---- a region's detail ---------------------------------------------------------------- */

static int cmp_threads(const void *pa, const void *pb) {
  const struct tui_thread_row *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->thread < b->thread ? -1 : a->thread > b->thread;
}

sp_status tui_model_detail(struct tui_model *m, size_t reg, size_t buckets) {
  struct tui_region *g = &m->regs[reg];
  struct tui_detail *d = &g->d;
  if (buckets > TUI_SPARK_MAX) buckets = TUI_SPARK_MAX;
  if (buckets < 1) buckets = 1;
  if (d->loaded && d->nbuckets == buckets) return SP_OK;
  free_detail(d);
  d->nbuckets = buckets;
  double sum[TUI_SPARK_MAX];
  memset(sum, 0, sizeof sum);
  size_t nranks = sp_results_num_ranks(m->r);
  d->ranks = calloc(nranks ? nranks : 1, sizeof *d->ranks);
  if (!d->ranks) return SP_ERR_NO_MEMORY;
  for (size_t i = 0; i < nranks; i++) {
    int64_t rank = sp_results_rank(m->r, i);
    if (!sp_filter_match_rank(m->f, rank)) continue;
    sp_region_stats s;
    sp_status st = sp_results_region_rank_stats(m->r, g->region, rank, 0, &s);
    if (st != SP_OK) return st;
    if (s.count == 0) continue;
    d->ranks[d->nranks++] = (struct tui_rank_row){rank, s};
  }
  int threads = sp_results_has_threads(m->r);
  size_t tcap = 0;
  int64_t *st = malloc(SLICE * sizeof *st), *en = malloc(SLICE * sizeof *en);
  int64_t *th = malloc(SLICE * sizeof *th);
  sp_status rc = st && en && th ? SP_OK : SP_ERR_NO_MEMORY;
  double span = (double)(m->t1 - m->t0);
  for (size_t w = 0; rc == SP_OK && sp_results_has_events(m->r) && w < sp_results_num_rows(m->r);
       w++) {
    sp_row_info info;
    if (sp_results_row_info(m->r, w, &info) != SP_OK || info.region != g->region ||
        !sp_filter_match_rank(m->f, info.rank))
      continue;
    size_t last = SIZE_MAX;
    for (uint64_t done = 0; done < info.count && rc == SP_OK;) {
      size_t k = info.count - done < SLICE ? (size_t)(info.count - done) : SLICE;
      rc = sp_results_row_read(m->r, w, done, k, st, en, NULL, NULL, threads ? th : NULL);
      for (size_t i = 0; i < k && rc == SP_OK; i++) {
        double dur = (double)(en[i] - st[i]);
        double x = (double)(st[i] - m->t0) / span * (double)buckets;
        size_t b = x < 0 ? 0 : x >= (double)buckets ? buckets - 1 : (size_t)x;
        sum[b] += dur;
        d->calls[b]++;
        if (!threads) continue;
        if (last == SIZE_MAX || d->threads[last].rank != info.rank || d->threads[last].thread != th[i]) {
          for (last = 0; last < d->nthreads && !(d->threads[last].rank == info.rank &&
                                                 d->threads[last].thread == th[i]);)
            last++;
          if (last == d->nthreads) {
            if (d->nthreads == tcap) {
              tcap = tcap ? tcap * 2 : 16;
              struct tui_thread_row *v = realloc(d->threads, tcap * sizeof *v);
              if (!v) {
                rc = SP_ERR_NO_MEMORY;
                break;
              }
              d->threads = v;
            }
            d->threads[d->nthreads++] = (struct tui_thread_row){info.rank, th[i], 0, 0};
          }
        }
        d->threads[last].calls++;
        d->threads[last].total_ns += en[i] - st[i];
      }
      done += k;
    }
  }
  free(st);
  free(en);
  free(th);
  if (rc != SP_OK) return rc;
  for (size_t b = 0; b < buckets; b++) d->mean_ns[b] = d->calls[b] ? sum[b] / (double)d->calls[b] : -1;
  if (d->nthreads) qsort(d->threads, d->nthreads, sizeof *d->threads, cmp_threads);
  d->loaded = 1;
  return SP_OK;
}

void tui_sparkline(const struct tui_detail *d, int utf8, char *out, size_t size) {
  static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char ascii[] = "_.-~=+*#";
  double lo = -1, hi = -1;
  for (size_t b = 0; b < d->nbuckets; b++) {
    if (d->mean_ns[b] < 0) continue;
    if (lo < 0 || d->mean_ns[b] < lo) lo = d->mean_ns[b];
    if (d->mean_ns[b] > hi) hi = d->mean_ns[b];
  }
  size_t len = 0;
  out[0] = '\0';
  for (size_t b = 0; b < d->nbuckets; b++) {
    const char *cell = " ";
    char one[2] = {0, 0};
    if (d->mean_ns[b] >= 0) {
      int level = hi > lo ? (int)((d->mean_ns[b] - lo) / (hi - lo) * 7.0 + 0.5) : 3;
      if (utf8) cell = bars[level];
      else {
        one[0] = ascii[level];
        cell = one;
      }
    }
    size_t n = strlen(cell);
    if (len + n + 1 > size) break;
    memcpy(out + len, cell, n + 1);
    len += n;
  }
}
