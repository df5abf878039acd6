/* report_charts.c - the time-based charts of `scope-profiler report`: the
 * Gantt chart (one lane per region and thread, one panel per rank), the
 * time-ordered flame chart (one panel per rank, rows = call depth per
 * thread), the flame graph (call paths merged over ranks, widths = total
 * time) and the time series (each call's duration against wall time).
 *
 * Level of detail: the model keeps at most one mark per pixel column for a
 * lane with more calls than columns; here the marks are folded further when
 * the chart would exceed --max-bars marks, and the chart says how many calls
 * were merged into how many bars. Plots with a time axis are nested <svg>
 * elements whose viewBox the page's script changes to zoom and pan.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define LANE_H 16.0
#define PANEL_TITLE_H 22.0
#define AXIS_H 42.0

static double xpos(const struct rp_file *f, int64_t t, double pw) {
  double span = (double)(f->end - f->origin > 0 ? f->end - f->origin : 1);
  return (double)(t - f->origin) / span * pw;
}

static double span_s(const struct rp_file *f) {
  return (double)(f->end - f->origin > 0 ? f->end - f->origin : 1) / 1e9;
}

static void plot_open(FILE *o, double x, double y, double w, double h, size_t file, double t1,
                      const char *axis) {
  fputs("<svg class=\"plot zoom\" x=\"", o);
  rp_px(o, x);
  fputs("\" y=\"", o);
  rp_px(o, y);
  fputs("\" width=\"", o);
  rp_px(o, w);
  fputs("\" height=\"", o);
  rp_px(o, h);
  fputs("\" viewBox=\"0 0 ", o);
  rp_px(o, w);
  fputc(' ', o);
  rp_px(o, h);
  fprintf(o, "\" preserveAspectRatio=\"none\" data-file=\"%zu\" data-t0=\"0\" data-t1=\"%.9g\" "
             "data-axis=\"%s\">",
          file, t1, axis);
  fputs("<rect class=\"plotbg\" x=\"0\" y=\"0\" width=\"", o);
  rp_px(o, w);
  fputs("\" height=\"", o);
  rp_px(o, h);
  fputs("\"/>", o);
}

static void panel_title(FILE *o, const char *label, int64_t rank, const char *what) {
  fputs("<text class=\"ptitle\" x=\"10\" y=\"15\">", o);
  rp_xml(o, label);
  if (rank >= 0) fprintf(o, " — rank %lld", (long long)rank);
  if (what) {
    fputs(" — ", o);
    rp_xml(o, what);
  }
  fputs("</text>", o);
}

/* A drawn call or merged column. */
static void bar(FILE *o, struct rp_chart *c, const struct rp_model *m, const struct rp_file *f,
                const struct rp_mark *k, double x, double y, double w, double h, int64_t rank,
                int64_t thread) {
  size_t g = f->gidx[k->region];
  c->used[g] = 1;
  c->bars++;
  fprintf(o, "<rect class=\"bar%s r%zu\" x=\"", k->n > 1 ? " merged" : "", g);
  rp_px(o, x);
  fputs("\" y=\"", o);
  rp_px(o, y);
  fputs("\" width=\"", o);
  rp_px(o, w < 1 ? 1 : w);
  fputs("\" height=\"", o);
  rp_px(o, h);
  fputc('"', o);
  if (w < 1) { /* drawn one pixel wide; the page keeps it one screen pixel when zoomed */
    fputs(" data-w=\"", o);
    rp_px(o, w > 0.01 ? w : 0.01);
    fputc('"', o);
  }
  if (k->n > 1 && k->e > k->s) {
    double busy = (double)k->sum / (double)(k->e - k->s);
    fprintf(o, " fill-opacity=\"%.2f\"", 0.35 + 0.65 * (busy > 1 ? 1 : busy));
  }
  rp_mark_attrs(o, m, f, k, rank);
  if (thread >= 0) fprintf(o, " data-thread=\"%lld\"", (long long)thread);
  fputc('>', o);
  rp_mark_title(o, m, f, k, rank, thread, NULL);
  fputs("</rect>", o);
}

static void merged_note(struct rp_chart *c, uint64_t calls, uint64_t bars, const char *what) {
  if (calls)
    rp_chart_note(c, "%llu calls merged into %llu %s at this resolution (one per pixel column; "
                  "hover shows the count, span and busy time)",
                  (unsigned long long)calls, (unsigned long long)bars, what);
}

/* Calls folded into marks at this resolution, said once under the chart. */
struct merged {
  uint64_t calls, marks;
};

static void count_merged(struct merged *mg, const struct rp_mark *mk) {
  if (mk->n > 1) {
    mg->calls += mk->n;
    mg->marks++;
  }
}

/* A mark of a Gantt lane as a bar from its first start to its last end, in
 * the row from y, h high; returns its left edge (where a GPU strip starts). */
static double lane_bar(FILE *o, struct rp_chart *c, const struct rp_model *m, const struct rp_file *f,
                       const struct rp_mark *mk, double pw, double y, double h, int64_t rank, int64_t thread,
                       struct merged *mg) {
  count_merged(mg, mk);
  double x0 = xpos(f, mk->s, pw), x1 = xpos(f, mk->e, pw);
  bar(o, c, m, f, mk, x0, y, x1 - x0, h, rank, thread);
  return x0;
}

/* The time axis of file f's panels and its title. */
static void time_axis(const struct rp_file *f, struct rp_axis *ax, char *title, size_t size,
                      const char *what) {
  rp_axis_time(ax, 0, span_s(f));
  snprintf(title, size, "%s since the first region entry [%s]", what, ax->unit);
}

#define NO_CALLS "no input stores individual calls (aggregate layout or no calls)"

static size_t cols_for(const struct rp_model *m, size_t rows) {
  size_t pw = (size_t)RP_PLOT_W(m), cols = rows ? m->o->max_bars / rows : pw;
  if (cols < RP_MIN_COLS) cols = RP_MIN_COLS;
  return cols > pw ? pw : cols;
}

static size_t files_with_events(const struct rp_model *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->nfiles; i++) n += m->files[i].has_events && m->files[i].nregs;
  return n;
}

/* ---- Gantt ------------------------------------------------------------------------------ */

int rp_chart_gantt(struct rp_model *m, struct rp_svg *out) {
  const char *title = "Gantt chart: every call of every region, per rank";
  if (!files_with_events(m))
    return rp_svg_not_drawn(out, "gantt", "gantt.svg", title, NO_CALLS);
  size_t nl = 0;
  for (size_t i = 0; i < m->nfiles; i++) nl += m->files[i].nlanes;
  size_t cols = cols_for(m, nl);
  double pw = RP_PLOT_W(m);
  struct rp_chart c;
  if (rp_chart_begin(&c, m, "gantt", "gantt", title)) return -1;
  c.rank_mode = 1;
  struct merged mg = {0, 0};
  uint64_t gpu_bars = 0;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    if (!f->has_events) {
      rp_chart_note(&c, "%s: aggregate layout, no individual calls to draw", f->label);
      continue;
    }
    if (f->ngantt_ranks < f->nranks)
      rp_chart_note(&c, "%s: lanes of %zu of %zu ranks shown (lane limit of --max-bars); pick "
                    "ranks with --ranks",
                    f->label, f->ngantt_ranks, f->nranks);
    if (f->lanes_dropped)
      rp_chart_note(&c, "%s: %llu calls on threads past the lane limit not drawn", f->label,
                    (unsigned long long)f->lanes_dropped);
    struct rp_axis ax;
    char atitle[96];
    time_axis(f, &ax, atitle, sizeof atitle, "time");
    for (size_t a = 0; a < f->nlanes;) {
      size_t b = a;
      while (b < f->nlanes && f->lanes[b].rank == f->lanes[a].rank) b++;
      double ph = (double)(b - a) * LANE_H;
      double h = PANEL_TITLE_H + ph + AXIS_H;
      rp_block_begin(&c, h, f->lanes[a].rank, "panel");
      FILE *o = c.body;
      panel_title(o, f->label, f->lanes[a].rank, NULL);
      for (size_t i = a; i < b; i++) {
        const struct rp_lane *l = &f->lanes[i];
        /* the thread is named when the region runs on several, or off the main one */
        int several = (i > a && f->lanes[i - 1].region == l->region) ||
                      (i + 1 < b && f->lanes[i + 1].region == l->region) || l->thread > 0;
        const char *name = sp_results_region_name(f->r, l->region);
        fprintf(o, "<text class=\"lanelabel\" data-ri=\"%zu\" x=\"%d\" y=\"", f->gidx[l->region],
                RP_LEFT - 8);
        rp_px(o, PANEL_TITLE_H + (double)(i - a) * LANE_H + 11.5);
        fputs("\" text-anchor=\"end\">", o);
        rp_xml_clip(o, name, several && l->thread >= 0 ? 22 : 28);
        if (several && l->thread >= 0) fprintf(o, " [t%lld]", (long long)l->thread);
        fputs("<title>", o);
        rp_xml(o, name);
        fprintf(o, " — rank %lld", (long long)l->rank);
        if (l->thread >= 0) fprintf(o, ", thread %lld", (long long)l->thread);
        fprintf(o, " — %llu calls</title></text>", (unsigned long long)l->calls);
      }
      plot_open(o, RP_LEFT, PANEL_TITLE_H, pw, ph, fi, span_s(f), "time");
      for (size_t i = a; i < b; i++) {
        if ((i - a) % 2) {
          fputs("<rect class=\"lanebg\" x=\"0\" y=\"", o);
          rp_px(o, (double)(i - a) * LANE_H);
          fputs("\" width=\"", o);
          rp_px(o, pw);
          fprintf(o, "\" height=\"%g\"/>", LANE_H);
        }
      }
      for (size_t i = a; i < b; i++) {
        struct rp_lane *l = &f->lanes[i];
        rp_marks_fold(&l->m, f->origin, f->end - f->origin, cols);
        for (size_t k = 0; k < l->m.n; k++) {
          const struct rp_mark *mk = &l->m.v[k];
          double x0 =
              lane_bar(o, &c, m, f, mk, pw, (double)(i - a) * LANE_H + 2, LANE_H - 4, l->rank, l->thread, &mg);
          if (mk->ngpu) { /* device time: a strip along the bar's foot, from its start */
            double gw = xpos(f, f->origin + mk->gpu, pw) - xpos(f, f->origin, pw);
            fputs("<rect class=\"gpubar\" x=\"", o);
            rp_px(o, x0);
            fputs("\" y=\"", o);
            rp_px(o, (double)(i - a) * LANE_H + LANE_H - 5);
            fputs("\" width=\"", o);
            rp_px(o, gw < 0.5 ? 0.5 : gw);
            fputs("\" height=\"3\"/>", o);
            gpu_bars++;
          }
        }
      }
      fputs("</svg>", o);
      rp_draw_xaxis(o, &ax, RP_LEFT, PANEL_TITLE_H + ph, pw, atitle);
      rp_block_end(&c, h);
      a = b;
    }
  }
  merged_note(&c, mg.calls, mg.marks, "bars");
  if (gpu_bars)
    rp_chart_note(&c, "Dark strip at a bar's foot: its device time (use_gpu_timing), drawn from the "
                      "call's CPU start; the device may have run it later");
  rp_chart_note(&c, "Wheel: zoom, drag: pan, double-click: reset; click a bar to highlight its "
                    "region everywhere");
  return rp_svg_finish(&c, m, out, "gantt", "gantt.svg");
}

/* ---- flame chart ------------------------------------------------------------------------ */

static void flame_labels(FILE *o, const struct rp_model *m, const struct rp_file *f,
                         const struct rp_mark *k, double x, double y, double w) {
  const char *name = m->regions[f->gidx[k->region]].name;
  size_t fit = w > 14 ? (size_t)((w - 6) / 6.2) : 0;
  if (fit < 3) return;
  fprintf(o, "<text class=\"fl t%zu\" x=\"", f->gidx[k->region]);
  rp_px(o, RP_LEFT + x + 3);
  fputs("\" y=\"", o);
  rp_px(o, y + 11);
  fputs("\">", o);
  rp_xml_clip(o, name, fit);
  fputs("</text>", o);
}

int rp_chart_flame(struct rp_model *m, struct rp_svg *out) {
  const char *title = "Flame chart: calls in time order, nested by call depth";
  if (!files_with_events(m))
    return rp_svg_not_drawn(out, "flame_chart", "flame_chart.svg", title,
                     "no input stores individual calls (aggregate layout or no calls)");
  size_t rows = 0;
  for (size_t i = 0; i < m->nfiles; i++)
    for (size_t p = 0; p < m->files[i].nfpanels; p++) rows += m->files[i].fpanels[p].nrows;
  size_t cols = cols_for(m, rows);
  double pw = RP_PLOT_W(m);
  struct rp_chart c;
  if (rp_chart_begin(&c, m, "flame_chart", "flame_chart", title)) return -1;
  c.rank_mode = 1;
  uint64_t merged_calls = 0, merged_bars = 0;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    if (!f->has_events) continue;
    if (f->nfpanels == 0 && f->nregs)
      rp_chart_note(&c, "%s: none of the --flame-ranks were recorded in this file", f->label);
    struct rp_axis ax;
    rp_axis_time(&ax, 0, span_s(f));
    char atitle[96];
    snprintf(atitle, sizeof atitle, "time since the first region entry [%s]", ax.unit);
    for (size_t p = 0; p < f->nfpanels; p++) {
      struct rp_fpanel *fp = &f->fpanels[p];
      if (fp->deep_calls)
        rp_chart_note(&c, "%s rank %lld: %llu calls deeper than %d levels not drawn", f->label,
                      (long long)fp->rank, (unsigned long long)fp->deep_calls, RP_MAX_DEPTH);
      if (fp->overlaps)
        rp_chart_note(&c, "%s rank %lld: %zu calls overlap a call they are not nested in "
                      "(threads not recorded?); drawn one level below it",
                      f->label, (long long)fp->rank, fp->overlaps);
      double ph = (double)(fp->nrows ? fp->nrows : 1) * LANE_H;
      double h = PANEL_TITLE_H + ph + AXIS_H;
      rp_block_begin(&c, h, fp->rank, "panel");
      FILE *o = c.body;
      panel_title(o, f->label, fp->rank, "top row: outermost calls");
      for (size_t i = 0; i < fp->nrows; i++) {
        const struct rp_frow *w = &fp->rows[i];
        if (i > 0 && w->thread == fp->rows[i - 1].thread && w->task == fp->rows[i - 1].task &&
            w->vlane == fp->rows[i - 1].vlane)
          continue;
        fputs("<text class=\"lanelabel\" x=\"", o);
        rp_px(o, RP_LEFT - 8);
        fputs("\" y=\"", o);
        rp_px(o, PANEL_TITLE_H + (double)i * LANE_H + 11.5);
        fputs("\" text-anchor=\"end\">", o);
        if (w->thread >= 0) fprintf(o, "thread %lld", (long long)w->thread);
        else fputs("calls", o);
        if (w->task >= 0) fprintf(o, " task %lld", (long long)w->task);
        if (w->vlane) fprintf(o, " (overlap %u)", w->vlane);
        fputs(" ▸", o);
        if (w->vlane)
          fputs("<title>roots that overlap earlier roots of this lane: calls of a thread that "
                "was not recorded (track_threads)</title>",
                o);
        fputs("</text>", o);
      }
      plot_open(o, RP_LEFT, PANEL_TITLE_H, pw, ph, fi, span_s(f), "time");
      for (size_t i = 0; i < fp->nrows; i++) {
        if (i > 0 && (fp->rows[i].thread != fp->rows[i - 1].thread ||
                      fp->rows[i].task != fp->rows[i - 1].task ||
                      fp->rows[i].vlane != fp->rows[i - 1].vlane)) {
          fputs("<line class=\"gridline\" x1=\"0\" x2=\"", o);
          rp_px(o, pw);
          fputs("\" y1=\"", o);
          rp_px(o, (double)i * LANE_H);
          fputs("\" y2=\"", o);
          rp_px(o, (double)i * LANE_H);
          fputs("\"/>", o);
        }
      }
      for (size_t i = 0; i < fp->nrows; i++) {
        struct rp_frow *w = &fp->rows[i];
        rp_marks_fold(&w->m, f->origin, f->end - f->origin, cols);
        for (size_t k = 0; k < w->m.n; k++) {
          const struct rp_mark *mk = &w->m.v[k];
          if (mk->n > 1) {
            merged_calls += mk->n;
            merged_bars++;
          }
          double x0 = xpos(f, mk->s, pw), x1 = xpos(f, mk->e, pw);
          bar(o, &c, m, f, mk, x0, (double)i * LANE_H + 1, x1 - x0, LANE_H - 2, fp->rank,
              w->thread);
        }
      }
      fputs("</svg><g class=\"flabels\">", o);
      for (size_t i = 0; i < fp->nrows; i++)
        for (size_t k = 0; k < fp->rows[i].m.n; k++) {
          const struct rp_mark *mk = &fp->rows[i].m.v[k];
          double x0 = xpos(f, mk->s, pw), x1 = xpos(f, mk->e, pw);
          flame_labels(o, m, f, mk, x0, PANEL_TITLE_H + (double)i * LANE_H + 1, x1 - x0);
        }
      fputs("</g>", o);
      rp_draw_xaxis(o, &ax, RP_LEFT, PANEL_TITLE_H + ph, pw, atitle);
      rp_block_end(&c, h);
    }
  }
  merged_note(&c, merged_calls, merged_bars, "bars");
  rp_chart_note(&c, "Wheel: zoom, drag: pan, double-click: reset. Other ranks: --flame-ranks "
                    "SPEC or all");
  return rp_svg_finish(&c, m, out, "flame_chart", "flame_chart.svg");
}

/* ---- flame graph -------------------------------------------------------------------------- */

struct fg {
  const struct rp_file *f;
  size_t *kids, *kstart, *nk;
  double *x, *w;
  uint32_t *depth;
};

static const struct fg *fg_sort_ctx;
static int cmp_kid(const void *pa, const void *pb) {
  const struct rp_tnode *t = fg_sort_ctx->f->tree;
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  if (t[a].total_ns != t[b].total_ns) return t[a].total_ns > t[b].total_ns ? -1 : 1;
  return strcmp(sp_results_region_name(fg_sort_ctx->f->r, t[a].region),
                sp_results_region_name(fg_sort_ctx->f->r, t[b].region));
}

static int cmp_desc(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a < b) - (a > b);
}

static void node_path(FILE *o, const struct rp_file *f, size_t i, int depth) {
  if (f->tree[i].parent >= 0 && depth < RP_MAX_DEPTH) {
    node_path(o, f, (size_t)f->tree[i].parent, depth + 1);
    fputs(" › ", o);
  }
  rp_xml(o, sp_results_region_name(f->r, f->tree[i].region));
}

int rp_chart_flamegraph(struct rp_model *m, struct rp_svg *out) {
  const char *title = "Flame graph: call paths merged over the selected ranks, width = total time";
  if (!files_with_events(m))
    return rp_svg_not_drawn(out, "flame_graph", "flame_graph.svg", title,
                     "no input stores individual calls (aggregate layout or no calls)");
  double pw = RP_PLOT_W(m);
  struct rp_chart c;
  if (rp_chart_begin(&c, m, "flame_graph", "flame_graph", title)) return -1;
  size_t nfiles = files_with_events(m);
  size_t budget = m->o->max_bars / (nfiles ? nfiles : 1);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    if (!f->has_events || f->ntree == 0) continue;
    size_t n = f->ntree;
    struct fg g = {f, NULL, NULL, NULL, NULL, NULL, NULL};
    g.kids = malloc(n * sizeof *g.kids);
    g.kstart = calloc(n + 1, sizeof *g.kstart);
    g.nk = calloc(n + 1, sizeof *g.nk);
    g.x = malloc(n * sizeof *g.x);
    g.w = malloc(n * sizeof *g.w);
    g.depth = malloc(n * sizeof *g.depth);
    double *sorted = malloc(n * sizeof *sorted);
    size_t *roots = malloc(n * sizeof *roots);
    if (!g.kids || !g.kstart || !g.nk || !g.x || !g.w || !g.depth || !sorted || !roots) {
      free(g.kids), free(g.kstart), free(g.nk), free(g.x), free(g.w), free(g.depth);
      free(sorted), free(roots);
      rp_chart_discard(&c);
      return -1;
    }
    double total = 0;
    size_t nroots = 0;
    for (size_t i = 0; i < n; i++) {
      if (f->tree[i].parent >= 0) g.nk[f->tree[i].parent]++;
      else {
        roots[nroots++] = i;
        total += (double)f->tree[i].total_ns;
      }
    }
    for (size_t i = 0; i < n; i++) g.kstart[i + 1] = g.kstart[i] + g.nk[i];
    memset(g.nk, 0, (n + 1) * sizeof *g.nk);
    for (size_t i = 0; i < n; i++)
      if (f->tree[i].parent >= 0) {
        size_t p = (size_t)f->tree[i].parent;
        g.kids[g.kstart[p] + g.nk[p]++] = i;
      }
    fg_sort_ctx = &g;
    qsort(roots, nroots, sizeof *roots, cmp_kid);
    for (size_t i = 0; i < n; i++) qsort(g.kids + g.kstart[i], g.nk[i], sizeof *g.kids, cmp_kid);
    /* layout: parents come before children in the node array */
    double at = 0;
    for (size_t k = 0; k < nroots; k++) {
      size_t i = roots[k];
      g.x[i] = at;
      g.w[i] = total > 0 ? (double)f->tree[i].total_ns / total * pw : 0;
      g.depth[i] = 0;
      at += g.w[i];
    }
    uint32_t maxd = 0;
    for (size_t i = 0; i < n; i++) {
      double cx = g.x[i];
      for (size_t k = 0; k < g.nk[i]; k++) {
        size_t ch = g.kids[g.kstart[i] + k];
        g.x[ch] = cx;
        g.w[ch] = total > 0 ? (double)f->tree[ch].total_ns / total * pw : 0;
        g.depth[ch] = g.depth[i] + 1;
        cx += g.w[ch];
      }
    }
    /* a child is never wider than its parent, so "at least w_min wide" keeps
     * whole subtrees from the root: raise w_min until the budget fits */
    for (size_t i = 0; i < n; i++) sorted[i] = g.w[i];
    qsort(sorted, n, sizeof *sorted, cmp_desc);
    double wmin = 0.25;
    if (n > budget && budget > 0 && sorted[budget - 1] > wmin) wmin = sorted[budget - 1];
    size_t skipped = 0;
    double skipped_ns = 0;
    for (size_t i = 0; i < n; i++) {
      int drawn = g.w[i] >= wmin && g.depth[i] < RP_MAX_DEPTH;
      int parent_drawn = f->tree[i].parent < 0 ||
                         (g.w[f->tree[i].parent] >= wmin && g.depth[f->tree[i].parent] < RP_MAX_DEPTH);
      if (drawn && g.w[i] == wmin && n > budget && budget > 0) drawn = 0; /* ties past the cap */
      if (drawn && g.depth[i] + 1 > maxd) maxd = g.depth[i] + 1;
      if (!drawn && parent_drawn) {
        skipped++;
        skipped_ns += (double)f->tree[i].total_ns;
      }
      g.depth[i] = drawn ? g.depth[i] : UINT32_MAX;
    }
    if (skipped)
      rp_chart_note(&c, "%s: %zu call paths narrower than %.2g px (%.2g%% of the time) not drawn",
                    f->label, skipped, wmin, total > 0 ? 100 * skipped_ns / total : 0);
    double ph = (double)(maxd ? maxd : 1) * LANE_H;
    double h = PANEL_TITLE_H + ph + AXIS_H;
    rp_block_begin(&c, h, -1, "panel");
    FILE *o = c.body;
    char what[64];
    if (f->nranks == 1) snprintf(what, sizeof what, "rank %lld", (long long)f->ranks[0]);
    else snprintf(what, sizeof what, "%zu ranks merged", f->nranks);
    panel_title(o, f->label, -1, what);
    plot_open(o, RP_LEFT, PANEL_TITLE_H, pw, ph, fi, 100, "pct");
    for (size_t i = 0; i < n; i++) {
      if (g.depth[i] == UINT32_MAX) continue;
      const struct rp_tnode *t = &f->tree[i];
      size_t gi = f->gidx[t->region];
      c.used[gi] = 1;
      c.bars++;
      fprintf(o, "<rect class=\"bar r%zu\" x=\"", gi);
      rp_px(o, g.x[i]);
      fputs("\" y=\"", o);
      rp_px(o, (double)g.depth[i] * LANE_H + 1);
      fputs("\" width=\"", o);
      rp_px(o, g.w[i] < 1 ? 1 : g.w[i]);
      fprintf(o, "\" height=\"%g\"", LANE_H - 2);
      if (g.w[i] < 1) {
        fputs(" data-w=\"", o);
        rp_px(o, g.w[i]);
        fputc('"', o);
      }
      fputs(" data-region=\"", o);
      rp_xml(o, m->regions[gi].name);
      fprintf(o, "\" data-ri=\"%zu\" data-rank=\"all\" data-start=\"%.9g\" data-dur=\"%.6g\" "
                 "data-calls=\"%llu\" data-depth=\"%u\"><title>",
              gi, total > 0 ? g.x[i] / pw * total / 1e9 : 0, (double)t->total_ns / 1e9,
              (unsigned long long)t->count, g.depth[i]);
      node_path(o, f, i, 0);
      char d[48];
      rp_fmt_dur(d, sizeof d, (double)t->total_ns / 1e9);
      fprintf(o, " — %llu calls — total %s (%.3g%%)</title></rect>", (unsigned long long)t->count,
              d, total > 0 ? 100.0 * (double)t->total_ns / total : 0);
    }
    fputs("</svg><g class=\"flabels\">", o);
    for (size_t i = 0; i < n; i++) {
      if (g.depth[i] == UINT32_MAX) continue;
      struct rp_mark k = {0, 0, 0, 0, 0, 1, f->tree[i].region, 0, 0};
      flame_labels(o, m, f, &k, g.x[i], PANEL_TITLE_H + (double)g.depth[i] * LANE_H + 1, g.w[i]);
    }
    fputs("</g>", o);
    struct rp_axis ax;
    rp_axis_value(&ax, 0, 100, 0, 0);
    rp_draw_xaxis(o, &ax, RP_LEFT, PANEL_TITLE_H + ph, pw,
                  "share of the total time of the outermost calls [%]");
    rp_block_end(&c, h);
    free(g.kids), free(g.kstart), free(g.nk), free(g.x), free(g.w), free(g.depth);
    free(sorted), free(roots);
  }
  rp_chart_note(&c, "Top row: outermost calls; below: their callees, widest first. Wheel: zoom, "
                    "drag: pan, double-click: reset");
  return rp_svg_finish(&c, m, out, "flame_graph", "flame_graph.svg");
}

/* ---- time series ------------------------------------------------------------------------ */

int rp_chart_timeseries(struct rp_model *m, struct rp_svg *out) {
  const char *title = "Time series: duration of each call against wall time";
  if (!files_with_events(m))
    return rp_svg_not_drawn(out, "timeseries", "timeseries.svg", title, NO_CALLS);
  size_t ns = 0;
  for (size_t i = 0; i < m->nfiles; i++) ns += m->files[i].nseries;
  size_t cols = cols_for(m, ns);
  if (cols > (size_t)RP_PLOT_W(m) / 2) cols = (size_t)RP_PLOT_W(m) / 2;
  double pw = RP_PLOT_W(m), ph = 280;
  struct rp_chart c;
  if (rp_chart_begin(&c, m, "timeseries", "timeseries", title)) return -1;
  c.rank_mode = 2;
  struct merged mg = {0, 0};
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    if (!f->has_events || f->nseries == 0) continue;
    if (f->ngantt_ranks < f->nranks)
      rp_chart_note(&c, "%s: calls of %zu of %zu ranks shown; pick ranks with --ranks", f->label,
                    f->ngantt_ranks, f->nranks);
    double lo = INFINITY, hi = 0;
    int zero = 0;
    for (size_t s = 0; s < f->nseries; s++) {
      rp_marks_fold(&f->series[s].m, f->origin, f->end - f->origin, cols);
      for (size_t k = 0; k < f->series[s].m.n; k++) {
        const struct rp_mark *mk = &f->series[s].m.v[k];
        double a = (double)mk->dmin / 1e9, b = (double)mk->dmax / 1e9;
        if (a > 0 && a < lo) lo = a;
        if (b > hi) hi = b;
        zero |= mk->dmin <= 0;
      }
    }
    if (!(hi > 0)) hi = 1e-9;
    if (!isfinite(lo)) lo = hi / 10;
    struct rp_axis xa, ya;
    char atitle[96];
    time_axis(f, &xa, atitle, sizeof atitle, "call start,");
    rp_axis_value(&ya, lo, hi, 1, 1);
    if (zero) rp_axis_log_zero(&ya); /* 0 ns calls are real: the band marked 0 holds them */
    double h = PANEL_TITLE_H + ph + AXIS_H;
    rp_block_begin(&c, h, -1, "panel");
    FILE *o = c.body;
    panel_title(o, f->label, -1, NULL);
    rp_draw_ygrid(o, &ya, RP_LEFT, PANEL_TITLE_H, pw, ph);
    rp_draw_yaxis(o, &ya, RP_LEFT, PANEL_TITLE_H, ph, "call duration (log scale)");
    fputs("<g class=\"marks\">", o);
    for (size_t s = 0; s < f->nseries; s++) {
      const struct rp_series *sr = &f->series[s];
      for (size_t k = 0; k < sr->m.n; k++) {
        const struct rp_mark *mk = &sr->m.v[k];
        double x = RP_LEFT + xpos(f, mk->s, pw);
        double y0 = rp_axis_map(&ya, (double)mk->dmax / 1e9, PANEL_TITLE_H + ph, PANEL_TITLE_H);
        double y1 = rp_axis_map(&ya, (double)mk->dmin / 1e9, PANEL_TITLE_H + ph, PANEL_TITLE_H);
        /* the point is the call: its start and its duration */
        struct rp_mark shown = *mk;
        if (mk->n == 1) shown.e = mk->s + mk->sum;
        count_merged(&mg, mk);
        if (mk->n > 1) {
          double x1 = RP_LEFT + xpos(f, mk->e, pw);
          bar(o, &c, m, f, &shown, x - 1, y0 - 1, (x1 - x) + 2, (y1 - y0) + 2, sr->rank, -1);
        } else {
          bar(o, &c, m, f, &shown, x - 1.5, y0 - 1.5, 3, 3, sr->rank, -1);
        }
      }
    }
    fputs("</g>", o);
    rp_draw_xaxis(o, &xa, RP_LEFT, PANEL_TITLE_H + ph, pw, atitle);
    rp_block_end(&c, h);
  }
  merged_note(&c, mg.calls, mg.marks, "range marks (shortest to longest call)");
  rp_chart_note(&c, "Warm-up shows as early outliers, drift as a trend; the rank selector keeps "
                    "one rank's calls");
  return rp_svg_finish(&c, m, out, "timeseries", "timeseries.svg");
}
