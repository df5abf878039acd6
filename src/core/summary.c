/* summary.c - the per-region table finalize prints when asked (verbose).
 *
 * One line per region, ordered by total time: calls, total, avg, min, max,
 * population std and exclusive ("own") time, in seconds, plus a "% session"
 * column when the run has the session root region, and "ovh %": the share of
 * the region's time that is profiler overhead, estimated as its calls times
 * the pair cost their length implies (common/overhead.h: the pair measured
 * back to back for short calls, the pair with none of its lines cached for
 * calls after long work). What the run paid once or in a few calls (fresh
 * buffer pages, growth, hand-offs, out-of-line calls) is no region's: the
 * head line gives it beside the run's total, instead of spreading it over
 * calls that did not pay it (a short run's would dwarf its pairs).
 * A "!" marks regions whose mean call is under 20 times the pair: their
 * durations mostly measure the profiler. This is the only place in the
 * library that prints, and only to the stream the caller chose.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/line_table.h"
#include "common/overhead.h"
#include "core/summary.h"
#include "output/plan.h"

static const struct sp_run *sort_run;
static int by_total_desc(const void *a, const void *b) {
  const struct sp_row *x = &sort_run->rows[*(const size_t *)a], *y = &sort_run->rows[*(const size_t *)b];
  if (x->stats.total != y->stats.total) return x->stats.total > y->stats.total ? -1 : 1;
  return strcmp(sort_run->names[x->region], sort_run->names[y->region]);
}

static int64_t meta_i64(const struct sp_run *run, const char *key) {
  const struct sp_meta_item *it = sp__meta_get(&run->meta, key);
  return it && it->type == SP_META_I64 ? it->i : 0;
}

/* The problems counted on the hot path (finalize stores them in the file
 * too), and a run cut short, after the table: silent only when all is well. */
static void print_problems(FILE *out, const struct sp_run *run) {
  int64_t un = meta_i64(run, SP_META_PROBLEMS_UNMATCHED), inv = meta_i64(run, SP_META_PROBLEMS_INVALID);
  int64_t left = meta_i64(run, SP_META_PROBLEMS_LEFT_OPEN), open = meta_i64(run, SP_META_OPEN_AT_FINALIZE);
  if (un || inv || left || open)
    fprintf(out, "problems: %lld unmatched end(s), %lld invalid region handle(s), %lld call(s) left open "
                 "(closed without their end), %lld call(s) still open at finalize\n",
            (long long)un, (long long)inv, (long long)left, (long long)open);
  const struct sp_meta_item *cut = sp__meta_get(&run->meta, SP_META_CUT_SHORT);
  if (cut && cut->type == SP_META_STR)
    fprintf(out, "run cut short by %s: %lld call(s) still open were ended then (cut_short_call_ids)\n", cut->s,
            (long long)meta_i64(run, "cut_short_calls"));
}

/* "12.3 us", "4.56 ms": the head line's sums. */
static void fmt_ns(char *buf, size_t size, double ns) {
  if (ns < 1e3) snprintf(buf, size, "%.1f ns", ns);
  else if (ns < 1e6) snprintf(buf, size, "%.1f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, size, "%.2f ms", ns / 1e6);
  else snprintf(buf, size, "%.3f s", ns / 1e9);
}

void sp__summary_print(FILE *out, const struct sp_run *run, const char *label, const struct sp_ovh_figures *ovh) {
  size_t *order = malloc((run->nrows + 1) * sizeof *order);
  if (!order) return;
  for (size_t i = 0; i < run->nrows; i++) order[i] = i;
  sort_run = run;
  qsort(order, run->nrows, sizeof *order, by_total_desc);
  int64_t session = -1;
  size_t width = 6;
  for (size_t i = 0; i < run->nrows; i++) {
    const char *name = run->names[run->rows[i].region];
    if (strcmp(name, "scope_profiler.session") == 0) session = run->rows[i].stats.total;
    size_t l = strlen(name);
    if (l > width) width = l;
  }
  if (width > 48) width = 48;
  uint64_t calls = 0;
  for (size_t i = 0; i < run->nrows; i++)
    calls += run->rows[i].count ? run->rows[i].count : (uint64_t)run->rows[i].aggregate_count;
  fprintf(out, "scope-profiler summary: %s (%zu regions, %llu calls", label ? label : "", run->nrows,
          (unsigned long long)calls);
  int have_ovh = ovh && ovh->pair_ns >= 0;
  if (have_ovh) {
    char text[32];
    if (ovh->total_ns >= 0) {
      fmt_ns(text, sizeof text, ovh->total_ns);
      fprintf(out, ", profiler cost %s", text);
    } else {
      fprintf(out, ", profiler cost");
    }
    fprintf(out, ": one begin/end pair %.1f ns", ovh->pair_ns);
    if (ovh->cold_ns > ovh->pair_ns) fprintf(out, ", %.1f ns uncached", ovh->cold_ns);
    if (ovh->extra_ns >= 0) {
      fmt_ns(text, sizeof text, ovh->extra_ns);
      fprintf(out, "; %s once or out of line", text);
    }
  }
  fprintf(out, ")\n");
  fprintf(out, "%-*s %10s %12s %12s %12s %12s %12s %12s%s%s\n", (int)width, "region", "calls", "total [s]",
          "avg [s]", "min [s]", "max [s]", "std [s]", "own [s]", have_ovh ? "   ovh %" : "",
          session > 0 ? "  % session" : "");
  for (size_t k = 0; k < run->nrows; k++) {
    const struct sp_row *r = &run->rows[order[k]];
    const struct sp_summary *s = &r->stats;
    uint64_t cnt = r->count ? r->count : (uint64_t)r->aggregate_count;
    double n = (double)cnt;
    double std = n > 0 ? sqrt(s->m2 / n) : 0;
    fprintf(out, "%-*.*s %10llu %12.6f %12.9f %12.9f %12.9f %12.9f %12.6f", (int)width, (int)width,
            run->names[r->region], (unsigned long long)cnt, s->total / 1e9, s->mean / 1e9,
            s->minimum / 1e9, s->maximum / 1e9, std / 1e9, r->exclusive_total / 1e9);
    if (have_ovh) {
      double share = s->total > 0 ? 100.0 * n * sp__ovh_call_ns(s->mean, ovh->pair_ns, ovh->cold_ns) / (double)s->total : 0;
      fprintf(out, " %7.1f%s", share > 100 ? 100 : share, s->mean < 20 * ovh->pair_ns ? "!" : " ");
    }
    if (session > 0) fprintf(out, "  %9.1f%%", 100.0 * (double)s->total / (double)session);
    fputc('\n', out);
  }
  free(order);
  print_problems(out, run);
}

static const struct sp_node_ds *node_ds(const struct sp_node *g, const char *name) {
  for (size_t i = 0; i < g->nds; i++)
    if (!strcmp(g->ds[i].name, name) && g->ds[i].ndims == 1) return &g->ds[i];
  return NULL;
}

static const char *node_str(const struct sp_node *g, const char *key) {
  const struct sp_meta_item *it = sp__meta_get(&g->attrs, key);
  return it && it->type == SP_META_STR ? it->s : NULL;
}

void sp__summary_print_lines(FILE *out, const struct sp_run *run, uint32_t rank) {
  const struct sp_node *lp = NULL;
  const char *lp_name = sp__plan_rank_group(SP_RG_LINE_PROFILE)->name;
  for (size_t i = 0; i < run->ngroups && !lp; i++)
    if (!strcmp(run->groups[i]->name, lp_name)) lp = run->groups[i];
  int header = 0;
  for (size_t i = 0; lp && i < lp->nkids; i++) {
    const struct sp_node *g = lp->kids[i];
    const struct sp_node_ds *l = node_ds(g, "line_numbers"), *h = node_ds(g, "hits"), *t = node_ds(g, "times"),
                            *a = node_ds(g, "addresses");
    if (!l || !h || !t || l->dims[0] != h->dims[0] || l->dims[0] != t->dims[0]) continue;
    const struct sp_meta_item *first = sp__meta_get(&g->attrs, "first_lineno"),
                              *sfirst = sp__meta_get(&g->attrs, "source_first_lineno"),
                              *unit = sp__meta_get(&g->attrs, "unit"), *inl = sp__meta_get(&g->attrs, "inlined_into");
    size_t ninl = 0;
    while (inl && inl->type == SP_META_STRLIST && inl->list[ninl]) ninl++;
    struct sp_line_table lt = {
        .region = node_str(g, "region"),
        .filename = node_str(g, "filename"),
        .function = node_str(g, "function"),
        .first_lineno = first ? first->i : 0,
        .unit = unit ? unit->d : 1.0,
        .n = (size_t)l->dims[0],
        .line_numbers = l->data,
        .hits = h->data,
        .times = t->data,
        .addresses = a && a->dims[0] == l->dims[0] ? a->data : NULL,
        .module = node_str(g, "module"),
        .source = node_str(g, "source"),
        .source_first_lineno = sfirst ? sfirst->i : 0,
        .inlined_into = ninl ? (const char *const *)inl->list : NULL,
        .ninlined = ninl,
    };
    if (!header) {
      fprintf(out, "\nscope-profiler line profile (rank %u)\n", (unsigned)rank);
      sp__line_table_header(out, lt.unit);
      header = 1;
    }
    sp__line_table_print(out, &lt, 0);
  }
}
