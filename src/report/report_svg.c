/* report_svg.c - the SVG side of `scope-profiler report`: XML escaping that
 * always yields well-formed output, compact numbers, time and value axes with
 * nice ticks, the region palettes, and the chart frame every chart shares (a
 * title, notes, a vertical stack of blocks and a region legend).
 *
 * Each chart is a standalone SVG document (it carries its own <style>), so
 * the same text is written to DIR/<chart>.svg and inlined into report.html.
 * With the report's scratch file a chart is drawn straight into it (its
 * blocks as they are drawn, then its header, which needs the height and
 * the notes), so no chart's text is held in memory: a 40000-region
 * imbalance chart is 37 MB, and its body grew through a memory stream and
 * was then copied once more into the finished text.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

/* ---- escaping and numbers ----------------------------------------------------------- */

/* Length of a valid UTF-8 sequence at s that XML 1.0 allows, or 0. */
static size_t utf8_ok(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80) return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') ? 1 : 0;
  size_t n;
  unsigned cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  /* overlong forms, surrogates and the two non-characters XML forbids */
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF || cp == 0xFFFE || cp == 0xFFFF) return 0;
  return n;
}

static void xml_n(FILE *o, const char *str, size_t max) {
  const unsigned char *s = (const unsigned char *)str;
  size_t cps = 0;
  while (*s) {
    if (cps == max) {
      fputs("…", o);
      return;
    }
    size_t n = utf8_ok(s);
    cps++;
    if (n == 0) {
      fputs("\xEF\xBF\xBD", o);
      s++;
      continue;
    }
    if (n > 1) {
      fwrite(s, 1, n, o);
      s += n;
      continue;
    }
    switch (*s) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    case '\n': fputs("&#10;", o); break;
    case '\r': fputs("&#13;", o); break;
    case '\t': fputs("&#9;", o); break;
    default: fputc(*s, o);
    }
    s++;
  }
}

void rp_xml(FILE *o, const char *s) { xml_n(o, s ? s : "", SIZE_MAX); }

void rp_json_str(FILE *o, const char *str) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  fputc('"', o);
  while (*s) {
    size_t n = *s < 0x80 ? 1 : utf8_ok(s);
    if (n == 0) {
      fputs("\\ufffd", o);
      s++;
    } else if (n > 1) {
      fwrite(s, 1, n, o);
      s += n;
    } else {
      /* '<' and '>' as escapes: the text never closes the <script> it sits in */
      if (*s == '"' || *s == '\\') fprintf(o, "\\%c", *s);
      else if (*s < 0x20 || *s == '<' || *s == '>' || *s == '&') fprintf(o, "\\u%04x", *s);
      else fputc(*s, o);
      s++;
    }
  }
  fputc('"', o);
}

void rp_json_num(FILE *o, double v) {
  if (!isfinite(v)) fputs("null", o);
  else if (v == (double)(int64_t)v && fabs(v) < 9e15) fprintf(o, "%lld", (long long)v);
  else fprintf(o, "%.9g", v);
}

void rp_xml_clip(FILE *o, const char *s, size_t max) {
  if (!s) s = "";
  size_t cps = sp_cli_width(s);
  xml_n(o, s, cps > max ? (max > 1 ? max - 1 : 1) : SIZE_MAX);
}

void rp_px(FILE *o, double v) {
  if (!isfinite(v)) v = 0;
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f", v);
  char *dot = strchr(buf, '.');
  if (dot) {
    char *e = buf + strlen(buf) - 1;
    while (e > dot && *e == '0') *e-- = '\0';
    if (e == dot) *e = '\0';
  }
  if (!strcmp(buf, "-0")) strcpy(buf, "0");
  fputs(buf, o);
}

void rp_line(FILE *o, const char *cls, double x1, double y1, double x2, double y2) {
  fprintf(o, "<line class=\"%s\" x1=\"", cls);
  rp_px(o, x1);
  fputs("\" y1=\"", o);
  rp_px(o, y1);
  fputs("\" x2=\"", o);
  rp_px(o, x2);
  fputs("\" y2=\"", o);
  rp_px(o, y2);
  fputs("\"/>", o);
}

void rp_text_open(FILE *o, const char *cls, double x, double y, const char *anchor) {
  fprintf(o, "<text class=\"%s\" x=\"", cls);
  rp_px(o, x);
  fputs("\" y=\"", o);
  rp_px(o, y);
  fputc('"', o);
  if (anchor) fprintf(o, " text-anchor=\"%s\"", anchor);
}

void rp_fmt_dur(char *buf, size_t size, double s) {
  double a = fabs(s);
  if (!isfinite(s)) snprintf(buf, size, "-");
  else if (a == 0) snprintf(buf, size, "0 s");
  else if (a >= 1) snprintf(buf, size, "%.4g s", s);
  else if (a >= 1e-3) snprintf(buf, size, "%.4g ms", s * 1e3);
  else if (a >= 1e-6) snprintf(buf, size, "%.4g µs", s * 1e6);
  else snprintf(buf, size, "%.4g ns", s * 1e9);
}

/* ---- axes ----------------------------------------------------------------------------- */

static double nice_step(double range, int target) {
  if (!(range > 0)) return 1;
  double raw = range / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void unit_for(struct rp_axis *a, double span) {
  if (span >= 1) a->unit = "s", a->unit_div = 1;
  else if (span >= 1e-3) a->unit = "ms", a->unit_div = 1e-3;
  else if (span >= 1e-6) a->unit = "µs", a->unit_div = 1e-6;
  else a->unit = "ns", a->unit_div = 1e-9;
}

static void linear_ticks(struct rp_axis *a) {
  double step = nice_step(a->hi - a->lo, 7);
  a->nticks = 0;
  for (double t = ceil(a->lo / step - 1e-9) * step; t <= a->hi + step * 1e-9 && a->nticks < 24;
       t += step)
    a->ticks[a->nticks++] = fabs(t) < step * 1e-9 ? 0 : t;
}

void rp_axis_time(struct rp_axis *a, double lo, double hi) {
  memset(a, 0, sizeof *a);
  if (!(hi > lo)) hi = lo + 1e-9;
  a->lo = lo;
  a->hi = hi;
  unit_for(a, hi - lo);
  linear_ticks(a);
}

void rp_axis_value(struct rp_axis *a, double lo, double hi, int log, int time_unit) {
  memset(a, 0, sizeof *a);
  a->unit = "";
  a->unit_div = 1;
  a->log = log;
  if (log) {
    if (!(lo > 0)) lo = hi > 0 ? hi / 10 : 1e-9;
    if (!(hi > lo)) hi = lo * 10;
    double l0 = floor(log10(lo)), l1 = ceil(log10(hi));
    if (l1 <= l0) l1 = l0 + 1;
    a->lo = pow(10, l0);
    a->hi = pow(10, l1);
    double step = ceil((l1 - l0) / 12);
    for (double e = l0; e <= l1 && a->nticks < 24; e += step) a->ticks[a->nticks++] = pow(10, e);
  } else {
    if (!(hi > lo)) hi = lo + 1;
    double step = nice_step(hi - lo, 6);
    a->lo = floor(lo / step + 1e-9) * step;
    a->hi = ceil(hi / step - 1e-9) * step;
    linear_ticks(a);
  }
  if (time_unit) a->unit = "time";
}

void rp_axis_log_zero(struct rp_axis *a) {
  if (!a->log || a->zero) return;
  a->zero = 1;
  if (a->nticks == sizeof a->ticks / sizeof a->ticks[0]) a->nticks--;
  memmove(a->ticks + 1, a->ticks, a->nticks * sizeof a->ticks[0]);
  a->ticks[0] = 0;
  a->nticks++;
}

double rp_axis_map(const struct rp_axis *a, double v, double p0, double p1) {
  double f;
  if (a->log && a->zero) {
    /* one decade's height below lo is the band of 0, its tick in the middle */
    double d = log10(a->hi) - log10(a->lo) + 1;
    f = v > 0 ? (log10(v) - log10(a->lo) + 1) / d : 0.5 / d;
  } else if (a->log) {
    if (!(v > 0)) v = a->lo;
    f = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
  } else {
    f = (v - a->lo) / (a->hi - a->lo);
  }
  return p0 + f * (p1 - p0);
}

void rp_axis_label(const struct rp_axis *a, double v, char *buf, size_t size) {
  if (a->unit && !strcmp(a->unit, "time")) rp_fmt_dur(buf, size, v);
  else if (a->log && v == 0) snprintf(buf, size, "0");
  else if (a->log && (v >= 1e4 || v < 1e-3)) snprintf(buf, size, "1e%d", (int)lround(log10(v)));
  else snprintf(buf, size, "%.6g", v / a->unit_div);
}

void rp_draw_xaxis(FILE *o, const struct rp_axis *a, double x, double y, double w,
                   const char *title) {
  fputs("<g class=\"xaxis\">", o);
  rp_line(o, "axis", x, y, x + w, y);
  fputs("<g class=\"ticks\">", o);
  for (size_t i = 0; i < a->nticks; i++) {
    double px = rp_axis_map(a, a->ticks[i], x, x + w);
    char lab[64];
    rp_axis_label(a, a->ticks[i], lab, sizeof lab);
    rp_line(o, "tick", px, y, px, y + 4);
    rp_text_open(o, "tl", px, y + 15, "middle");
    fputc('>', o);
    rp_xml(o, lab);
    fputs("</text>", o);
  }
  fputs("</g>", o);
  if (title) {
    rp_text_open(o, "at", x + w / 2, y + 30, "middle");
    fputc('>', o);
    rp_xml(o, title);
    fputs("</text>", o);
  }
  fputs("</g>", o);
}

void rp_draw_ygrid(FILE *o, const struct rp_axis *a, double x, double y, double w, double h) {
  for (size_t t = 0; t < a->nticks; t++) {
    double py = rp_axis_map(a, a->ticks[t], y + h, y);
    rp_line(o, "gridline", x, py, x + w, py);
  }
}

void rp_draw_yaxis(FILE *o, const struct rp_axis *a, double x, double y, double h,
                   const char *title) {
  fputs("<g class=\"yaxis\">", o);
  rp_line(o, "axis", x, y, x, y + h);
  for (size_t i = 0; i < a->nticks; i++) {
    double py = rp_axis_map(a, a->ticks[i], y + h, y);
    char lab[64];
    rp_axis_label(a, a->ticks[i], lab, sizeof lab);
    rp_line(o, "grid", x, py, x - 4, py);
    rp_text_open(o, "tl", x - 6, py + 3.5, "end");
    fputc('>', o);
    rp_xml(o, lab);
    fputs("</text>", o);
  }
  if (title) {
    fputs("<text class=\"at\" transform=\"translate(", o);
    rp_px(o, x - 58);
    fputc(',', o);
    rp_px(o, y + h / 2);
    fputs(") rotate(-90)\" text-anchor=\"middle\">", o);
    rp_xml(o, title);
    fputs("</text>", o);
  }
  fputs("</g>", o);
}

/* ---- palettes ------------------------------------------------------------------------- */

static const char *const tab20[20] = {
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728",
    "#ff9896", "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2",
    "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"};
static const char *const tab10[10] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
static const char *const palette_names[RP_NPALETTES] = {"tab20", "tab10", "hues"};

int rp_palette_parse(const char *name) {
  for (int i = 0; i < RP_NPALETTES; i++)
    if (!strcmp(name, palette_names[i])) return i;
  return -1;
}

const char *rp_palette_name(int palette) { return palette_names[palette]; }

static void hsl_hex(double h, double s, double l, char out[8]) {
  double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h, 360) / 60, x = c * (1 - fabs(fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) r = c, g = x;
  else if (hp < 2) r = x, g = c;
  else if (hp < 3) g = c, b = x;
  else if (hp < 4) g = x, b = c;
  else if (hp < 5) r = x, b = c;
  else r = c, b = x;
  double mm = l - c / 2;
  snprintf(out, 8, "#%02x%02x%02x", (int)lround((r + mm) * 255), (int)lround((g + mm) * 255),
           (int)lround((b + mm) * 255));
}

/* Colours past a fixed palette: golden-angle hue steps with three lightness
 * levels, so neighbours in the sorted region list never look alike. */
static void extension(size_t k, char out[8]) {
  static const double light[3] = {0.42, 0.62, 0.30};
  hsl_hex(fmod(17.0 + (double)k * 137.50776, 360), 0.62, light[k % 3], out);
}

void rp_palette_color(int palette, size_t i, size_t n, char out[8]) {
  if (palette == RP_PAL_TAB20) {
    if (n <= 20) {
      /* matplotlib's cmap(linspace(0, 1, n)), as upstream assigns colours:
       * x_i = i * (1/(n-1)), the last exactly 1, index = trunc(x * 20) */
      double x = n <= 1 ? 0 : (i + 1 == n ? 1.0 : (double)i * (1.0 / (double)(n - 1)));
      double xa = x * 20;
      int idx = xa >= 20 ? 19 : (int)xa;
      memcpy(out, tab20[idx], 8);
    } else if (i < 20) {
      memcpy(out, tab20[i], 8);
    } else {
      extension(i - 20, out);
    }
  } else if (palette == RP_PAL_TAB10) {
    if (i < 10) memcpy(out, tab10[i], 8);
    else extension(i - 10, out);
  } else {
    extension(i, out);
  }
}

int rp_color_is_dark(const char *hex) {
  unsigned r = 0, g = 0, b = 0;
  if (sscanf(hex, "#%02x%02x%02x", &r, &g, &b) != 3) return 0;
  double lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum < 140;
}

void rp_region_css(FILE *o, const struct rp_model *m) {
  for (size_t i = 0; i < m->nregions; i++)
    fprintf(o, ".r%zu{fill:%s}.t%zu{fill:%s}", i, m->regions[i].color, i,
            m->regions[i].dark ? "#fff" : "#111");
  fputc('\n', o);
}

/* ---- marks ---------------------------------------------------------------------------- */

static double rel_s(const struct rp_file *f, int64_t t) { return (double)(t - f->origin) / 1e9; }

void rp_mark_attrs(FILE *o, const struct rp_model *m, const struct rp_file *f,
                   const struct rp_mark *k, int64_t rank) {
  size_t g = f->gidx[k->region];
  fputs(" data-region=\"", o);
  rp_xml(o, m->regions[g].name);
  fprintf(o, "\" data-ri=\"%zu\"", g);
  if (rank >= 0) fprintf(o, " data-rank=\"%lld\"", (long long)rank);
  fprintf(o, " data-start=\"%.9g\" data-dur=\"%.6g\"", rel_s(f, k->s), (double)(k->e - k->s) / 1e9);
  if (k->n > 1)
    fprintf(o, " data-calls=\"%llu\" data-sum=\"%.6g\"", (unsigned long long)k->n,
            (double)k->sum / 1e9);
}

void rp_mark_title(FILE *o, const struct rp_model *m, const struct rp_file *f,
                   const struct rp_mark *k, int64_t rank, int64_t thread, const char *extra) {
  char a[48], b[48], c[48];
  fputs("<title>", o);
  rp_xml(o, m->regions[f->gidx[k->region]].name);
  if (rank >= 0) fprintf(o, " — rank %lld", (long long)rank);
  if (thread > 0) fprintf(o, ", thread %lld", (long long)thread);
  if (k->n <= 1) {
    rp_fmt_dur(a, sizeof a, rel_s(f, k->s));
    rp_fmt_dur(b, sizeof b, (double)(k->e - k->s) / 1e9);
    fprintf(o, " — start %s — duration %s", a, b);
  } else {
    rp_fmt_dur(a, sizeof a, rel_s(f, k->s));
    rp_fmt_dur(b, sizeof b, rel_s(f, k->e));
    rp_fmt_dur(c, sizeof c, (double)k->sum / 1e9);
    fprintf(o, " — %llu calls merged at this resolution: start %s, until %s, busy %s",
            (unsigned long long)k->n, a, b, c);
    rp_fmt_dur(a, sizeof a, (double)k->dmin / 1e9);
    rp_fmt_dur(b, sizeof b, (double)k->dmax / 1e9);
    fprintf(o, " (each %s to %s)", a, b);
  }
  if (k->ngpu) {
    rp_fmt_dur(a, sizeof a, (double)k->gpu / 1e9);
    if (k->n <= 1) fprintf(o, " — GPU %s", a);
    else fprintf(o, " — GPU %s over %llu calls", a, (unsigned long long)k->ngpu);
  }
  if (extra) rp_xml(o, extra);
  fputs("</title>", o);
}

/* ---- the chart frame ------------------------------------------------------------------ */

static const char chart_tail[] = "</g>\n</svg>\n";

static const char *const chart_css =
    "text{font-family:sans-serif;font-size:11px;fill:#222}"
    ".ctitle{font-size:15px;font-weight:bold}.note{fill:#8a5a00;font-size:11px}"
    ".ptitle{font-size:12px;font-weight:bold}.tl{fill:#444;font-size:10px}.at{fill:#333}"
    ".axis,.tick{stroke:#555;stroke-width:1}.grid{stroke:#555}.gridline{stroke:#e4e4e4}"
    ".lanebg{fill:#f6f6f6}.bar{cursor:pointer}.merged{fill-opacity:.75}"
    ".gpubar{fill:#111;fill-opacity:.8;pointer-events:none}"
    ".ideal{stroke:#555;stroke-dasharray:6 4;fill:none}.sline{fill:none;stroke-width:1.6}"
    ".mean{stroke:#111;stroke-dasharray:4 3;stroke-width:1.3}.maxmark{fill:#b00}"
    ".fl{font-size:10px;pointer-events:none}.li{cursor:pointer}.plotbg{fill:#fff}"
    ".hl{stroke:#000;stroke-width:1.5px}.has-hl .bar:not(.hl){opacity:.25}"
    ".has-hl .sline:not(.hl){opacity:.25}";

int rp_chart_begin(struct rp_chart *c, const struct rp_model *m, const char *id, const char *kind,
                   const char *title) {
  memset(c, 0, sizeof *c);
  snprintf(c->id, sizeof c->id, "%s", id);
  c->kind = kind;
  c->title = strdup(title);
  c->width = m->o->width;
  off_t at = -1;
  if (m->chart_spill && fseeko(m->chart_spill, 0, SEEK_END) == 0) at = ftello(m->chart_spill);
  if (at >= 0) {
    c->spill = c->body = m->chart_spill;
    c->body_off = (long long)at;
  } else {
    c->body = open_memstream(&c->buf, &c->len);
  }
  c->nused = m->nregions;
  c->used = calloc(m->nregions ? m->nregions : 1, 1);
  if (!c->title || !c->body || !c->used) {
    rp_chart_discard(c);
    return -1;
  }
  return 0;
}

void rp_block_begin(struct rp_chart *c, double h, int64_t rank, const char *cls) {
  fprintf(c->body, "<g class=\"blk%s%s\" data-h=\"", cls ? " " : "", cls ? cls : "");
  rp_px(c->body, h);
  fputc('"', c->body);
  if (rank >= 0) fprintf(c->body, " data-rank=\"%lld\"", (long long)rank);
  fputs(" transform=\"translate(0,", c->body);
  rp_px(c->body, c->y);
  fputs(")\">", c->body);
}

void rp_block_end(struct rp_chart *c, double h) {
  fputs("</g>\n", c->body);
  c->y += h;
}

void rp_chart_note(struct rp_chart *c, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  for (size_t i = 0; i < c->notes.n; i++)
    if (!strcmp(c->notes.v[i], buf)) return;
  sp_cli_strs_push(&c->notes, buf);
}

void rp_chart_discard(struct rp_chart *c) {
  if (c->body && !c->spill) fclose(c->body); /* a drawn body stays in the scratch file, unused */
  c->body = NULL;
  c->spill = NULL;
  free(c->buf);
  c->buf = NULL;
  free(c->title);
  c->title = NULL;
  free(c->used);
  c->used = NULL;
  sp_cli_strs_free(&c->notes);
}

/* The legend of the regions drawn, flowed into rows. */
static void legend(struct rp_chart *c, const struct rp_model *m) {
  size_t any = 0;
  for (size_t i = 0; c->used && i < c->nused; i++) any += c->used[i];
  if (!any) return;
  /* two passes over the same flow: the rows' height first (the block's
   * header needs it), then the entries straight into the body (a buffer
   * of their own, copied in, held a chart of 40000 regions' legend twice) */
  double rowh = 18, maxw = c->width - 10, h = 0;
  for (int pass = 0; pass < 2; pass++) {
    double x = 10, y = 0;
    FILE *lo = c->body;
    if (pass == 1) rp_block_begin(c, h, -1, "legend");
    for (size_t i = 0; i < c->nused; i++) {
      if (!c->used[i]) continue;
      size_t w = sp_cli_width(m->regions[i].name);
      double iw = 16 + 6.2 * (double)(w > 40 ? 40 : w) + 16;
      if (x + iw > maxw && x > 10) {
        x = 10;
        y += rowh;
      }
      if (pass == 1) {
        fprintf(lo, "<g class=\"li\" data-ri=\"%zu\" data-region=\"", i);
        rp_xml(lo, m->regions[i].name);
        fprintf(lo, "\"><rect class=\"sw r%zu\" x=\"", i);
        rp_px(lo, x);
        fputs("\" y=\"", lo);
        rp_px(lo, y + 4);
        fputs("\" width=\"11\" height=\"11\"/><text x=\"", lo);
        rp_px(lo, x + 15);
        fputs("\" y=\"", lo);
        rp_px(lo, y + 13.5);
        fputs("\">", lo);
        rp_xml_clip(lo, m->regions[i].name, 40);
        fputs("</text><title>", lo);
        rp_xml(lo, m->regions[i].name);
        fputs(" (click to highlight everywhere)</title></g>", lo);
      }
      x += iw;
    }
    h = y + rowh + 8;
  }
  rp_block_end(c, h);
}

int rp_svg_drawn(const struct rp_svg *c) { return c->svg || c->spill; }

/* Moves a drawn chart's text to the end of `to` (the model's scratch file)
 * and frees it, so that a report holds one chart's text at a time rather
 * than all of them until the page is written; 0 or -1 (write failed, the
 * text kept in memory). */
static int rp_svg_spill(struct rp_svg *c, FILE *to) {
  if (!c->svg) return 0;
  if (fseeko(to, 0, SEEK_END) != 0) return -1;
  off_t at = ftello(to);
  if (at < 0 || fwrite(c->svg, 1, c->len, to) != c->len || fflush(to) != 0) return -1;
  free(c->svg);
  c->svg = NULL;
  c->spill = to;
  c->spill_off = (long long)at;
  return 0;
}

/* Copies len bytes at off in the scratch file f to o; 0 or -1. */
static int copy_span(FILE *f, long long off, size_t len, FILE *o) {
  clearerr(f); /* a later chart's failed write leaves the written ones readable */
  if (fseeko(f, (off_t)off, SEEK_SET) != 0) return -1;
  char buf[65536];
  for (size_t left = len; left;) {
    size_t k = left < sizeof buf ? left : sizeof buf;
    if (fread(buf, 1, k, f) != k || fwrite(buf, 1, k, o) != k) return -1;
    left -= k;
  }
  return 0;
}

int rp_svg_put(const struct rp_svg *c, FILE *o) {
  if (c->svg) return fwrite(c->svg, 1, c->len, o) == c->len ? 0 : -1;
  if (!c->spill || copy_span(c->spill, c->spill_off, c->len, o) != 0) return -1;
  if (!c->streamed) return 0;
  if (copy_span(c->spill, c->body_off, c->body_len, o) != 0) return -1;
  return fputs(chart_tail, o) < 0 ? -1 : 0;
}

/* The chart's header: the document, its style, title and notes, and the
 * blocks' group opened (the body follows, then chart_tail). */
static void chart_head(const struct rp_chart *c, const struct rp_model *m, FILE *o) {
  double hdr = 30 + 15.0 * (double)c->notes.n;
  double height = hdr + c->y + 6;
  fprintf(o,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"chart\" data-kind=\"%s\" "
          "data-bars=\"%llu\" data-rankmode=\"%d\" width=\"%d\" height=\"",
          c->id, c->kind, (unsigned long long)c->bars, c->rank_mode, c->width);
  rp_px(o, height);
  fprintf(o, "\" viewBox=\"0 0 %d ", c->width);
  rp_px(o, height);
  fputs("\">\n<title>", o);
  rp_xml(o, c->title);
  fputs("</title>\n<style><![CDATA[", o);
  fputs(chart_css, o);
  rp_region_css(o, m);
  fputs("]]></style>\n<rect class=\"plotbg\" x=\"0\" y=\"0\" width=\"100%\" height=\"100%\"/>\n",
        o);
  fputs("<g class=\"hdr\"><text class=\"ctitle\" x=\"10\" y=\"20\">", o);
  rp_xml(o, c->title);
  fputs("</text>", o);
  for (size_t i = 0; i < c->notes.n; i++) {
    fputs("<text class=\"note\" x=\"10\" y=\"", o);
    rp_px(o, 36 + 15.0 * (double)i);
    fputs("\">", o);
    rp_xml(o, c->notes.v[i]);
    fputs("</text>", o);
  }
  fputs("</g>\n<g class=\"blocks\" data-y0=\"", o);
  rp_px(o, hdr);
  fputs("\" transform=\"translate(0,", o);
  rp_px(o, hdr);
  fputs(")\">\n", o);
}

int rp_chart_end(struct rp_chart *c, const struct rp_model *m, char **svg, size_t *len) {
  *svg = NULL;
  *len = 0;
  legend(c, m);
  if (fflush(c->body) != 0) {
    rp_chart_discard(c);
    return -1;
  }
  char *out = NULL;
  size_t olen = 0;
  FILE *o = open_memstream(&out, &olen);
  if (!o) {
    rp_chart_discard(c);
    return -1;
  }
  chart_head(c, m, o);
  int bad = ferror(o);
  if (fclose(o) != 0) bad = 1;
  /* the header, the body and the tail in one allocation of the exact size:
   * the body copied through a growing stream took up to twice its size
   * again (the largest allocation of a report of many regions) */
  char *all = bad ? NULL : malloc(olen + c->len + sizeof chart_tail);
  if (all) {
    memcpy(all, out, olen);
    if (c->len) memcpy(all + olen, c->buf, c->len);
    memcpy(all + olen + c->len, chart_tail, sizeof chart_tail); /* with its NUL, as a stream leaves it */
    olen += c->len + sizeof chart_tail - 1;
  }
  free(out);
  rp_chart_discard(c);
  if (!all) return -1;
  *svg = all;
  *len = olen;
  return 0;
}

int rp_svg_finish(struct rp_chart *c, const struct rp_model *m, struct rp_svg *out, const char *id,
                  const char *file) {
  snprintf(out->id, sizeof out->id, "%s", id);
  snprintf(out->file, sizeof out->file, "%s", file);
  out->title = strdup(c->title);
  if (!out->title) {
    rp_chart_discard(c);
    return -1;
  }
  if (c->spill) { /* drawn into the scratch file: the header goes after the body */
    legend(c, m);
    FILE *o = c->spill;
    off_t end = fflush(o) == 0 ? ftello(o) : -1;
    int bad = end < 0;
    if (!bad) chart_head(c, m, o);
    off_t head_end = !bad && fflush(o) == 0 && !ferror(o) ? ftello(o) : -1;
    out->spill = o;
    out->body_off = c->body_off;
    out->body_len = (size_t)(end - (off_t)c->body_off);
    out->spill_off = (long long)end;
    out->len = (size_t)(head_end - end);
    out->streamed = 1;
    rp_chart_discard(c);
    if (bad || head_end < 0) { /* a write failed (TMPDIR full): drawn again in memory */
      free(out->title);
      memset(out, 0, sizeof *out);
      return RP_SCRATCH_FAILED;
    }
    return 0;
  }
  if (rp_chart_end(c, m, &out->svg, &out->len) != 0) return -1;
  if (m->chart_spill) rp_svg_spill(out, m->chart_spill); /* on failure the text stays in memory */
  return 0;
}

int rp_svg_not_drawn(struct rp_svg *out, const char *id, const char *file, const char *title,
                     const char *why) {
  snprintf(out->id, sizeof out->id, "%s", id);
  snprintf(out->file, sizeof out->file, "%s", file);
  out->title = strdup(title);
  out->why = strdup(why);
  return out->title && out->why ? 0 : -1;
}
