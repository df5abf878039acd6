/* report_scaling.c - the statistics charts of `scope-profiler report`:
 * durations (grouped bars per region, one bar per file, one chart per
 * metric), strong-scaling speedup and efficiency against --x, and load
 * imbalance (per-rank totals per region with the mean and the maximum).
 *
 * Everything here comes from the summary rows (no events). Speedup follows
 * upstream's plot_speedup: per region and file the mean duration per call
 * over the selected ranks; non-finite or non-positive samples dropped;
 * samples with equal x averaged; baseline = the first x; speedup =
 * baseline / mean. The scaling fields (num_ranks, num_nodes, omp_num_threads,
 * total_cores) are sorted numerically and get an ideal line; any other
 * metadata field keeps the command-line order of the files and has none.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

const char *const rp_metric_names[RP_NMETRICS + 1] = {"avg", "min", "max", "total", NULL};

static const char *const metric_titles[RP_NMETRICS] = {
    "average duration per call", "shortest call", "longest call", "total time"};

#define SLEFT 90.0
#define STOP 26.0

static double metric_value(const sp_region_stats *s, int metric) {
  if (s->count == 0) return NAN;
  switch (metric) {
  case RP_AVG: return s->mean_ns / 1e9;
  case RP_MIN: return (double)s->min_ns / 1e9;
  case RP_MAX: return (double)s->max_ns / 1e9;
  default: return (double)s->total_ns / 1e9;
  }
}

static const struct rp_region_row *find_row(const struct rp_file *f, size_t g) {
  size_t k = f->reg_of_g ? f->reg_of_g[g] : SIZE_MAX;
  return k == SIZE_MAX ? NULL : &f->regs[k];
}

/* Global indices of the regions every file has, in the first file's order. */
static size_t common_regions(const struct rp_model *m, size_t *out) {
  size_t n = 0;
  if (!m->nfiles) return 0;
  for (size_t k = 0; k < m->files[0].nregs; k++) {
    size_t g = m->files[0].regs[k].g;
    int all = 1;
    for (size_t i = 1; i < m->nfiles && all; i++) all = find_row(&m->files[i], g) != NULL;
    if (all) out[n++] = g;
  }
  return n;
}

/* Region names under a plot, rotated, clickable. */
static void region_labels(FILE *o, const struct rp_model *m, const size_t *regs, size_t n,
                          double x0, double gw, double y) {
  for (size_t i = 0; i < n; i++) {
    double x = x0 + gw * ((double)i + 0.5);
    fprintf(o, "<text class=\"lanelabel\" data-ri=\"%zu\" text-anchor=\"end\" transform=\"translate(",
            regs[i]);
    rp_px(o, x + 3);
    fputc(',', o);
    rp_px(o, y + 12);
    fputs(") rotate(-35)\">", o);
    rp_xml_clip(o, m->regions[regs[i]].name, 24);
    fputs("<title>", o);
    rp_xml(o, m->regions[regs[i]].name);
    fputs("</title></text>", o);
  }
}

/* A legend of the input files (bars coloured per file). */
static void file_legend(struct rp_chart *c, const struct rp_model *m) {
  double h = 22;
  rp_block_begin(c, h, -1, "legend");
  double x = 10;
  for (size_t i = 0; i < m->nfiles; i++) {
    char col[8];
    rp_palette_color(m->o->palette, i, m->nfiles, col);
    fprintf(c->body, "<rect x=\"");
    rp_px(c->body, x);
    fprintf(c->body, "\" y=\"4\" width=\"11\" height=\"11\" fill=\"%s\"/><text x=\"", col);
    rp_px(c->body, x + 15);
    fputs("\" y=\"13.5\">", c->body);
    rp_xml_clip(c->body, m->files[i].label, 40);
    fputs("</text>", c->body);
    size_t w = sp_cli_width(m->files[i].label);
    x += 34 + 6.2 * (double)(w > 40 ? 40 : w);
  }
  rp_block_end(c, h);
}

/* ---- durations ------------------------------------------------------------------------- */

struct val_idx {
  double v;
  size_t i;
};
static int cmp_val_desc(const void *pa, const void *pb) {
  const struct val_idx *a = pa, *b = pb;
  if (a->v != b->v) return a->v > b->v ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}
static int cmp_size(const void *pa, const void *pb) {
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  return (a > b) - (a < b);
}

int rp_chart_durations(struct rp_model *m, int metric, struct rp_svg *out) {
  char id[64], file[64], title[160];
  snprintf(id, sizeof id, "durations_%s", rp_metric_names[metric]);
  snprintf(file, sizeof file, "durations_%s.svg", rp_metric_names[metric]);
  snprintf(title, sizeof title, "Durations: %s (%s) per region%s", metric_titles[metric],
           rp_metric_names[metric], m->nfiles > 1 ? ", one bar per file" : "");
  size_t *regs = malloc((m->nregions ? m->nregions : 1) * sizeof *regs);
  if (!regs) return -1;
  size_t n = common_regions(m, regs);
  if (n == 0) {
    free(regs);
    return rp_svg_not_drawn(out, id, file, title, "no region is common to all inputs");
  }
  double pw = (double)m->o->width - SLEFT - 24, ph = 300;
  struct rp_chart c;
  if (rp_chart_begin(&c, m, id, "durations", title)) {
    free(regs);
    return -1;
  }
  size_t maxn = (size_t)(pw / 12);
  if (maxn * m->nfiles > m->o->max_bars) maxn = m->o->max_bars / m->nfiles;
  if (maxn < 1) maxn = 1;
  if (n > maxn) {
    /* keep the regions with the largest values, in their order */
    struct val_idx *v = malloc(n * sizeof *v);
    if (!v) {
      free(regs);
      rp_chart_discard(&c);
      return -1;
    }
    for (size_t i = 0; i < n; i++) {
      v[i].v = 0;
      v[i].i = i;
      for (size_t fi = 0; fi < m->nfiles; fi++) {
        double x = metric_value(&find_row(&m->files[fi], regs[i])->s, metric);
        if (x > v[i].v) v[i].v = x;
      }
    }
    qsort(v, n, sizeof *v, cmp_val_desc);
    size_t *keep = malloc(maxn * sizeof *keep);
    if (!keep) {
      free(v);
      free(regs);
      rp_chart_discard(&c);
      return -1;
    }
    for (size_t i = 0; i < maxn; i++) keep[i] = v[i].i;
    qsort(keep, maxn, sizeof *keep, cmp_size);
    for (size_t i = 0; i < maxn; i++) keep[i] = regs[keep[i]];
    memcpy(regs, keep, maxn * sizeof *regs);
    rp_chart_note(&c, "%zu of %zu regions shown (the largest by %s); narrow with --include",
                  maxn, n, rp_metric_names[metric]);
    n = maxn;
    free(keep);
    free(v);
  }
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t fi = 0; fi < m->nfiles; fi++) {
      double x = metric_value(&find_row(&m->files[fi], regs[i])->s, metric);
      if (x > 0 && x < lo) lo = x;
      if (x > hi) hi = x;
    }
  int log = hi > 0 && isfinite(lo) && hi / lo > 100;
  struct rp_axis ya;
  /* on a log scale the smallest bar still needs a visible height */
  rp_axis_value(&ya, log ? lo / 5 : 0, hi > 0 ? hi : 1e-9, log, 1);
  size_t zeros = 0;
  for (size_t i = 0; log && i < n; i++)
    for (size_t fi = 0; fi < m->nfiles; fi++)
      zeros += metric_value(&find_row(&m->files[fi], regs[i])->s, metric) == 0;
  if (zeros) { /* 0 ns calls are real: they get the 0 band of the log axis */
    rp_axis_log_zero(&ya);
    rp_chart_note(&c, "%zu value(s) of 0 (calls shorter than one clock tick) are drawn in the "
                      "band marked 0 under the log scale",
                  zeros);
  }
  double h = 14 + ph + 120;
  rp_block_begin(&c, h, -1, "panel");
  FILE *o = c.body;
  double top = 14, gw = pw / (double)n;
  double bw = fmin(0.8 / (double)m->nfiles, 0.35) * gw;
  rp_draw_ygrid(o, &ya, SLEFT, top, pw, ph);
  char ytitle[96];
  snprintf(ytitle, sizeof ytitle, "%s%s", metric_titles[metric], log ? " (log scale)" : "");
  rp_draw_yaxis(o, &ya, SLEFT, top, ph, ytitle);
  for (size_t i = 0; i < n; i++) {
    for (size_t fi = 0; fi < m->nfiles; fi++) {
      const struct rp_file *f = &m->files[fi];
      double v = metric_value(&find_row(f, regs[i])->s, metric);
      if (!isfinite(v)) continue;
      double cx = SLEFT + gw * ((double)i + 0.5) + ((double)fi - (double)(m->nfiles - 1) / 2) * bw;
      double y = rp_axis_map(&ya, v, top + ph, top);
      char col[8];
      rp_palette_color(m->o->palette, fi, m->nfiles, col);
      c.bars++;
      if (m->nfiles == 1) {
        c.used[regs[i]] = 1;
        fprintf(o, "<rect class=\"bar r%zu\"", regs[i]);
      } else {
        fprintf(o, "<rect class=\"bar\" fill=\"%s\"", col);
      }
      fputs(" x=\"", o);
      rp_px(o, cx - bw / 2);
      fputs("\" y=\"", o);
      rp_px(o, y);
      fputs("\" width=\"", o);
      rp_px(o, bw);
      fputs("\" height=\"", o);
      rp_px(o, top + ph - y);
      fputs("\" data-region=\"", o);
      rp_xml(o, m->regions[regs[i]].name);
      fprintf(o, "\" data-ri=\"%zu\" data-rank=\"all\" data-start=\"0\" data-dur=\"%.6g\" "
                 "data-file=\"%zu\" data-metric=\"%s\"><title>",
              regs[i], v, fi, rp_metric_names[metric]);
      rp_xml(o, m->regions[regs[i]].name);
      fputs(" — ", o);
      rp_xml(o, f->label);
      char d[48];
      rp_fmt_dur(d, sizeof d, v);
      fprintf(o, " — %s %s</title></rect>", rp_metric_names[metric], d);
    }
  }
  region_labels(o, m, regs, n, SLEFT, gw, top + ph);
  rp_line(o, "axis", SLEFT, top + ph, SLEFT + pw, top + ph);
  rp_block_end(&c, h);
  if (m->nfiles > 1) file_legend(&c, m);
  free(regs);
  return rp_svg_finish(&c, m, out, id, file);
}

/* ---- speedup and efficiency ---------------------------------------------------------------- */

static const char *const scaling_fields[] = {"num_ranks", "num_nodes", "omp_num_threads",
                                             "total_cores"};

static int is_scaling(const char *x) {
  for (size_t i = 0; i < 4; i++)
    if (!strcmp(x, scaling_fields[i])) return 1;
  return 0;
}

static int meta_number(const sp_metadata_entry *e, double *v) {
  if (!e) return 0;
  if (e->kind == SP_VALUE_INT || e->kind == SP_VALUE_BOOL) *v = (double)e->i;
  else if (e->kind == SP_VALUE_FLOAT) *v = e->f;
  else if (e->kind == SP_VALUE_STRING) {
    char *end;
    *v = strtod(e->s, &end);
    while (end && isspace((unsigned char)*end)) end++;
    if (end == e->s || (end && *end)) return 0;
  } else return 0;
  return isfinite(*v);
}

static int not_found(const char *cmd, const struct rp_file *f, const char *field) {
  char *list = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&list, &len);
  if (!o) return sp_cli_error(cmd, "out of memory");
  fputc('[', o);
  for (size_t i = 0; i < sp_results_num_metadata(f->r); i++)
    fprintf(o, "%s'%s'", i ? ", " : "", sp_results_metadata_at(f->r, i)->key);
  fputc(']', o);
  fclose(o);
  int rc = sp_cli_error(cmd, "--x %s: '%s' not found in the metadata of %s. Available fields: %s",
                        field, field, f->path, list ? list : "[]");
  free(list);
  return rc;
}

/* The x value of a file: a number for the scaling fields, text otherwise. */
static int x_value(const char *cmd, const struct rp_file *f, const char *field, double *num,
                   char *text, size_t tsize) {
  sp_results *r = f->r;
  double threads = 0;
  if (!strcmp(field, "num_ranks")) {
    *num = (double)sp_results_num_ranks(r);
  } else if (!strcmp(field, "num_nodes")) {
    if (!meta_number(sp_results_metadata(r, "num_nodes"), num) &&
        !meta_number(sp_results_metadata(r, "SLURM_JOB_NUM_NODES"), num) &&
        !meta_number(sp_results_metadata(r, "SLURM_NNODES"), num))
      return not_found(cmd, f, field);
  } else if (!strcmp(field, "omp_num_threads") || !strcmp(field, "total_cores")) {
    if (!meta_number(sp_results_metadata(r, "omp_num_threads"), &threads))
      return not_found(cmd, f, "omp_num_threads");
    threads = trunc(threads);
    *num = !strcmp(field, "total_cores") ? (double)sp_results_num_ranks(r) * threads : threads;
  } else {
    const sp_metadata_entry *e = sp_results_metadata(r, field);
    if (!e) return not_found(cmd, f, field);
    snprintf(text, tsize, "%s", e->text);
    return 0;
  }
  *num = trunc(*num);
  snprintf(text, tsize, "%.0f", *num);
  return 0;
}

static const char *x_title(const char *field) {
  if (!strcmp(field, "num_ranks")) return "MPI ranks";
  if (!strcmp(field, "num_nodes")) return "nodes";
  if (!strcmp(field, "omp_num_threads")) return "OpenMP threads";
  if (!strcmp(field, "total_cores")) return "MPI ranks × OpenMP threads";
  return field;
}

struct xkey {
  double num;
  char text[128];
};

static int cmp_xkey(const void *pa, const void *pb) {
  double a = ((const struct xkey *)pa)->num, b = ((const struct xkey *)pb)->num;
  return (a > b) - (a < b);
}

/* Positions of the x keys: numeric keys on a linear or (wide ranges) log2
 * scale; categorical keys evenly spaced. */
static double xkey_pos(const struct xkey *keys, size_t nk, size_t i, int numeric, double x0,
                       double w) {
  if (nk < 2) return x0 + w / 2;
  if (!numeric) return x0 + w * ((double)i + 0.5) / (double)nk;
  double lo = keys[0].num, hi = keys[nk - 1].num, v = keys[i].num;
  if (lo > 0 && hi / lo >= 8)
    return x0 + w * 0.04 + w * 0.92 * (log2(v) - log2(lo)) / (log2(hi) - log2(lo));
  return x0 + w * 0.04 + w * 0.92 * (hi > lo ? (v - lo) / (hi - lo) : 0.5);
}

static void xkey_axis(FILE *o, const struct xkey *keys, size_t nk, int numeric, double x0,
                      double y, double w, const char *title) {
  fputs("<g class=\"xaxis\">", o);
  rp_line(o, "axis", x0, y, x0 + w, y);
  for (size_t i = 0; i < nk; i++) {
    double x = xkey_pos(keys, nk, i, numeric, x0, w);
    rp_line(o, "tick", x, y, x, y + 4);
    rp_text_open(o, "tl", x, y + 15, "middle");
    fputc('>', o);
    rp_xml_clip(o, keys[i].text, 20);
    fputs("</text>", o);
  }
  rp_text_open(o, "at", x0 + w / 2, y + 32, "middle");
  fputc('>', o);
  rp_xml(o, title);
  fputs("</text></g>", o);
}

struct curve {
  size_t g;
  double *y;     /* per x key; NaN where missing */
  double *mean;  /* mean duration per call, seconds */
};

static void draw_curves(struct rp_chart *c, const struct rp_model *m, const struct xkey *keys,
                        size_t nk, int numeric, const struct curve *cv, size_t nc, double top,
                        double pw, double ph, const struct rp_axis *ya, int eff) {
  FILE *o = c->body;
  rp_draw_ygrid(o, ya, SLEFT, top, pw, ph);
  rp_draw_yaxis(o, ya, SLEFT, top, ph, eff ? "parallel efficiency" : "speedup");
  for (size_t k = 0; k < nc; k++) {
    const char *col = m->regions[cv[k].g].color;
    fprintf(o, "<polyline class=\"sline\" data-ri=\"%zu\" stroke=\"%s\" points=\"", cv[k].g, col);
    for (size_t i = 0; i < nk; i++) {
      if (!isfinite(cv[k].y[i])) continue;
      rp_px(o, xkey_pos(keys, nk, i, numeric, SLEFT, pw));
      fputc(',', o);
      rp_px(o, rp_axis_map(ya, cv[k].y[i], top + ph, top));
      fputc(' ', o);
    }
    fputs("\"/>", o);
  }
  /* over the curves: a region that scales ideally would hide it */
  if (numeric && nk > 1) {
    fputs("<polyline class=\"ideal\" points=\"", o);
    for (size_t i = 0; i < nk; i++) {
      double ideal = eff ? 1.0 : keys[i].num / keys[0].num;
      rp_px(o, xkey_pos(keys, nk, i, 1, SLEFT, pw));
      fputc(',', o);
      rp_px(o, rp_axis_map(ya, ideal, top + ph, top));
      fputc(' ', o);
    }
    fputs("\"><title>ideal scaling</title></polyline>", o);
  }
  for (size_t k = 0; k < nc; k++) {
    for (size_t i = 0; i < nk; i++) {
      if (!isfinite(cv[k].y[i])) continue;
      c->used[cv[k].g] = 1;
      c->bars++;
      fprintf(o, "<circle class=\"bar r%zu\" r=\"3.5\" cx=\"", cv[k].g);
      rp_px(o, xkey_pos(keys, nk, i, numeric, SLEFT, pw));
      fputs("\" cy=\"", o);
      rp_px(o, rp_axis_map(ya, cv[k].y[i], top + ph, top));
      fputs("\" data-region=\"", o);
      rp_xml(o, m->regions[cv[k].g].name);
      fprintf(o, "\" data-ri=\"%zu\" data-rank=\"all\" data-start=\"0\" data-dur=\"%.6g\" "
                 "data-x=\"",
              cv[k].g, cv[k].mean[i]);
      rp_xml(o, keys[i].text);
      fprintf(o, "\" data-value=\"%.6g\"><title>", cv[k].y[i]);
      rp_xml(o, m->regions[cv[k].g].name);
      fputs(" — x = ", o);
      rp_xml(o, keys[i].text);
      char d[48];
      rp_fmt_dur(d, sizeof d, cv[k].mean[i]);
      fprintf(o, " — %s %.3g (mean %s per call)</title></circle>", eff ? "efficiency" : "speedup",
              cv[k].y[i], d);
    }
  }
  xkey_axis(o, keys, nk, numeric, SLEFT, top + ph, pw, "");
}

int rp_chart_scaling(struct rp_model *m, const char *cmd, struct rp_svg *sp, struct rp_svg *ef) {
  const char *field = m->o->x_field;
  int numeric = is_scaling(field);
  char st[160], et[160];
  snprintf(st, sizeof st, "Strong scaling: speedup against %s", x_title(field));
  snprintf(et, sizeof et, "Strong scaling: parallel efficiency against %s", x_title(field));
  if (m->nfiles < 2) {
    const char *why = "scaling needs at least two input files (runs at different sizes)";
    if (rp_svg_not_drawn(sp, "speedup", "speedup.svg", st, why)) return -1;
    return rp_svg_not_drawn(ef, "efficiency", "efficiency.svg", et, why);
  }
  struct xkey *fx = calloc(m->nfiles, sizeof *fx), *keys = calloc(m->nfiles, sizeof *keys);
  size_t *regs = malloc((m->nregions ? m->nregions : 1) * sizeof *regs);
  size_t *key_of = malloc(m->nfiles * sizeof *key_of);
  struct curve *cv = NULL;
  size_t nk = 0, nc = 0;
  int rc = 0;
  if (!fx || !keys || !regs || !key_of) {
    rc = -1;
    goto out;
  }
  for (size_t i = 0; i < m->nfiles; i++)
    if ((rc = x_value(cmd, &m->files[i], field, &fx[i].num, fx[i].text, sizeof fx[i].text)))
      goto out;
  for (size_t i = 0; i < m->nfiles; i++) {
    size_t k;
    for (k = 0; k < nk; k++)
      if (numeric ? keys[k].num == fx[i].num : !strcmp(keys[k].text, fx[i].text)) break;
    if (k == nk) keys[nk++] = fx[i];
  }
  if (numeric) qsort(keys, nk, sizeof *keys, cmp_xkey);
  for (size_t i = 0; i < m->nfiles; i++)
    for (size_t k = 0; k < nk; k++)
      if (numeric ? keys[k].num == fx[i].num : !strcmp(keys[k].text, fx[i].text)) key_of[i] = k;
  size_t n = common_regions(m, regs);
  cv = calloc(n ? n : 1, sizeof *cv);
  if (!cv) {
    rc = -1;
    goto out;
  }
  double ymax = 1, emax = 1;
  for (size_t r = 0; r < n; r++) {
    double *sum = calloc(nk, sizeof *sum), *cnt = calloc(nk, sizeof *cnt);
    cv[nc].y = malloc(nk * sizeof *cv[nc].y);
    cv[nc].mean = malloc(nk * sizeof *cv[nc].mean);
    if (!sum || !cnt || !cv[nc].y || !cv[nc].mean) {
      free(sum);
      free(cnt);
      free(cv[nc].y);
      free(cv[nc].mean);
      rc = -1;
      goto out;
    }
    for (size_t i = 0; i < m->nfiles; i++) {
      double v = metric_value(&find_row(&m->files[i], regs[r])->s, RP_AVG);
      if (!isfinite(v) || v <= 0) continue;
      sum[key_of[i]] += v;
      cnt[key_of[i]] += 1;
    }
    for (size_t k = 0; k < nk; k++) cv[nc].mean[k] = cnt[k] ? sum[k] / cnt[k] : NAN;
    free(sum);
    free(cnt);
    if (!isfinite(cv[nc].mean[0])) { /* no baseline: skipped, as upstream */
      free(cv[nc].y);
      free(cv[nc].mean);
      continue;
    }
    cv[nc].g = regs[r];
    for (size_t k = 0; k < nk; k++) {
      cv[nc].y[k] = cv[nc].mean[0] / cv[nc].mean[k];
      if (cv[nc].y[k] > ymax) ymax = cv[nc].y[k];
      if (numeric && keys[0].num > 0) {
        double e = cv[nc].y[k] / (keys[k].num / keys[0].num);
        if (e > emax) emax = e;
      }
    }
    nc++;
  }
  if (nc == 0) {
    const char *why = "No valid speedup data could be computed (no region common to all files "
                      "has a positive mean duration at the baseline)";
    if (rp_svg_not_drawn(sp, "speedup", "speedup.svg", st, why) ||
        rp_svg_not_drawn(ef, "efficiency", "efficiency.svg", et, why))
      rc = -1;
    goto out;
  }
  if (numeric && keys[nk - 1].num / (keys[0].num > 0 ? keys[0].num : 1) > ymax)
    ymax = keys[nk - 1].num / (keys[0].num > 0 ? keys[0].num : 1);
  double pw = (double)m->o->width - SLEFT - 24, ph = 300;
  struct rp_axis ya;
  struct rp_chart c;
  for (int which = 0; which < 2; which++) {
    if (which == 1 && (!numeric || keys[0].num <= 0)) {
      if (rp_svg_not_drawn(ef, "efficiency", "efficiency.svg", et,
                    numeric ? "efficiency needs a positive baseline x"
                            : "efficiency needs a numeric scaling field (--x num_ranks, num_nodes, "
                              "omp_num_threads or total_cores)"))
        rc = -1;
      break;
    }
    if (which == 1) /* efficiency = speedup / (x / x0) */
      for (size_t k = 0; k < nc; k++)
        for (size_t i = 0; i < nk; i++) cv[k].y[i] /= keys[i].num / keys[0].num;
    if (rp_chart_begin(&c, m, which ? "efficiency" : "speedup", which ? "efficiency" : "speedup",
                       which ? et : st)) {
      rc = -1;
      break;
    }
    rp_axis_value(&ya, 0, (which ? emax : ymax) * 1.08, 0, 0);
    if (!numeric)
      rp_chart_note(&c, "%s is not a scaling field: x keeps the command-line order of the files, "
                        "no ideal line",
                    field);
    if (nc < n)
      rp_chart_note(&c, "%zu of %zu common regions skipped: no positive mean at the baseline",
                    n - nc, n);
    rp_chart_note(&c, "baseline: x = %s; speedup = baseline mean per call / mean per call%s",
                  keys[0].text, which ? "; efficiency = speedup / (x / baseline x)" : "");
    double h = 14 + ph + 46;
    rp_block_begin(&c, h, -1, "panel");
    draw_curves(&c, m, keys, nk, numeric, cv, nc, 14, pw, ph, &ya, which);
    rp_text_open(c.body, "at", SLEFT + pw / 2, 14 + ph + 32, "middle");
    fputc('>', c.body);
    rp_xml(c.body, x_title(field));
    fputs("</text>", c.body);
    rp_block_end(&c, h);
    if ((rc = rp_svg_finish(&c, m, which ? ef : sp, which ? "efficiency" : "speedup",
                     which ? "efficiency.svg" : "speedup.svg")))
      break;
  }
out:
  for (size_t k = 0; cv && k < nc; k++) {
    free(cv[k].y);
    free(cv[k].mean);
  }
  free(cv);
  free(fx);
  free(keys);
  free(regs);
  free(key_of);
  return rc;
}

/* ---- imbalance ----------------------------------------------------------------------------- */

int rp_chart_imbalance(struct rp_model *m, struct rp_svg *out) {
  const char *title = "Load imbalance: total time per rank for each region (mean dashed, maximum "
                      "marked)";
  struct rp_chart c;
  if (rp_chart_begin(&c, m, "imbalance", "imbalance", title)) return -1;
  c.rank_mode = 3;
  double pw = (double)m->o->width - SLEFT - 24, ph = 260;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    size_t nr = f->nranks, ng = f->nregs;
    if (!nr || !ng) continue;
    if (nr == 1) rp_chart_note(&c, "%s: a single rank; nothing to balance", f->label);
    /* per region, at most `per` bars: ranks grouped, each bar the group's maximum */
    size_t per = m->o->max_bars / (ng * (m->nfiles ? m->nfiles : 1));
    if (per < 1) per = 1;
    if (per > nr) per = nr;
    size_t group = (nr + per - 1) / per;
    if (group > 1)
      rp_chart_note(&c, "%s: %zu ranks per bar (the bar is the group's largest total)", f->label,
                    group);
    double *tot = malloc(ng * nr * sizeof *tot);
    if (!tot) {
      rp_chart_discard(&c);
      return -1;
    }
    double lo = INFINITY, hi = 0;
    for (size_t g = 0; g < ng; g++)
      for (size_t k = 0; k < nr; k++) {
        sp_region_stats s;
        tot[g * nr + k] = NAN;
        if (sp_results_region_rank_stats(f->r, f->regs[g].region, f->ranks[k], 0, &s) == SP_OK &&
            s.count > 0) {
          double v = (double)s.total_ns / 1e9;
          tot[g * nr + k] = v;
          if (v > 0 && v < lo) lo = v;
          if (v > hi) hi = v;
        }
      }
    int log = hi > 0 && isfinite(lo) && hi / lo > 50;
    struct rp_axis ya;
    rp_axis_value(&ya, log ? lo / 5 : 0, hi > 0 ? hi : 1e-9, log, 1);
    for (size_t k = 0; log && k < ng * nr; k++)
      if (tot[k] == 0) rp_axis_log_zero(&ya); /* a region whose calls all took 0 ns */
    double top = 22, h = top + ph + 120, gw = pw / (double)ng;
    double bw = gw * 0.8 / (double)((nr + group - 1) / group);
    rp_block_begin(&c, h, -1, "panel");
    FILE *o = c.body;
    fputs("<text class=\"ptitle\" x=\"10\" y=\"15\">", o);
    rp_xml(o, f->label);
    fprintf(o, " — %zu ranks</text>", nr);
    rp_draw_ygrid(o, &ya, SLEFT, top, pw, ph);
    rp_draw_yaxis(o, &ya, SLEFT, top, ph, log ? "total per rank (log scale)" : "total per rank");
    size_t *gl = malloc(ng * sizeof *gl);
    if (!gl) {
      free(tot);
      rp_chart_discard(&c);
      return -1;
    }
    for (size_t g = 0; g < ng; g++) {
      gl[g] = f->regs[g].g;
      size_t gi = f->regs[g].g;
      double sum = 0, mx = 0;
      size_t cnt = 0, bi = 0, mx_at = 0;
      for (size_t k = 0; k < nr; k++)
        if (isfinite(tot[g * nr + k])) {
          sum += tot[g * nr + k];
          cnt++;
          if (tot[g * nr + k] > mx) mx = tot[g * nr + k], mx_at = k / group;
        }
      double mean = cnt ? sum / (double)cnt : NAN;
      double gx = SLEFT + gw * (double)g + gw * 0.1;
      for (size_t k0 = 0; k0 < nr; k0 += group, bi++) {
        double v = NAN;
        size_t at = k0;
        for (size_t k = k0; k < k0 + group && k < nr; k++)
          if (isfinite(tot[g * nr + k]) && (!isfinite(v) || tot[g * nr + k] > v)) {
            v = tot[g * nr + k];
            at = k;
          }
        if (nr <= 16 && bw >= 9) { /* rank numbers under the bars while they fit */
          rp_text_open(o, "tl", gx + ((double)bi + 0.5) * bw, top + ph + 10, "middle");
          fprintf(o, " font-size=\"8\">%lld</text>", (long long)f->ranks[k0]);
        }
        if (!isfinite(v)) continue;
        double y = rp_axis_map(&ya, v, top + ph, top);
        c.used[gi] = 1;
        c.bars++;
        fprintf(o, "<rect class=\"bar r%zu\" x=\"", gi);
        rp_px(o, gx + (double)bi * bw);
        fputs("\" y=\"", o);
        rp_px(o, y);
        fputs("\" width=\"", o);
        rp_px(o, bw > 1.5 ? bw - 0.5 : bw);
        fputs("\" height=\"", o);
        rp_px(o, top + ph - y);
        fputs("\" data-region=\"", o);
        rp_xml(o, m->regions[gi].name);
        fprintf(o, "\" data-ri=\"%zu\" data-rank=\"%lld\" data-start=\"0\" data-dur=\"%.6g\"><title>",
                gi, (long long)f->ranks[at], v);
        rp_xml(o, m->regions[gi].name);
        char a[48], b[48];
        rp_fmt_dur(a, sizeof a, v);
        rp_fmt_dur(b, sizeof b, mean);
        if (group > 1)
          fprintf(o, " — ranks %lld-%lld, largest rank %lld", (long long)f->ranks[k0],
                  (long long)f->ranks[k0 + group - 1 < nr ? k0 + group - 1 : nr - 1],
                  (long long)f->ranks[at]);
        else fprintf(o, " — rank %lld", (long long)f->ranks[at]);
        fprintf(o, " — total %s (mean over ranks %s, ×%.3g of the mean)</title></rect>", a, b,
                mean > 0 ? v / mean : 1.0);
      }
      if (isfinite(mean) && (!log || mean > 0)) {
        double ym = rp_axis_map(&ya, mean, top + ph, top), yx = rp_axis_map(&ya, mx, top + ph, top);
        double x1 = gx + (double)bi * bw;
        fputs("<line class=\"mean\" x1=\"", o);
        rp_px(o, gx - 2);
        fputs("\" x2=\"", o);
        rp_px(o, x1 + 2);
        fputs("\" y1=\"", o);
        rp_px(o, ym);
        fputs("\" y2=\"", o);
        rp_px(o, ym);
        fputs("\"><title>mean ", o);
        char a[48];
        rp_fmt_dur(a, sizeof a, mean);
        rp_xml(o, a);
        double xm = gx + ((double)mx_at + 0.5) * bw;
        fputs("</title></line><path class=\"maxmark\" d=\"M", o);
        rp_px(o, xm - 4);
        fputc(' ', o);
        rp_px(o, yx - 9);
        fputs(" h8 l-4 6 z\"/>", o);
        rp_text_open(o, "tl", xm, yx - 11, "middle");
        fprintf(o, ">max ×%.2f</text>", mean > 0 ? mx / mean : 1.0);
      }
    }
    region_labels(o, m, gl, ng, SLEFT, gw, top + ph + (nr <= 16 && bw >= 9 ? 10 : 0));
    rp_line(o, "axis", SLEFT, top + ph, SLEFT + pw, top + ph);
    rp_block_end(&c, h);
    free(gl);
    free(tot);
  }
  rp_chart_note(&c, "max ×k = the slowest rank's total over the mean rank total (1.00 = "
                    "balanced); the rank selector dims the other ranks");
  return rp_svg_finish(&c, m, out, "imbalance", "imbalance.svg");
}
