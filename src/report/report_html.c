/* report_html.c - report.html of `scope-profiler report`: one self-contained
 * page (no network, no framework) with the input files and their metadata,
 * the region colours, a sortable summary table (inspect's statistics) and
 * every chart as inline SVG, plus a little plain JavaScript:
 *
 *  - wheel zooms and drag pans the time axis of the Gantt chart, the flame
 *    chart and the flame graph (by changing the viewBox of the plot's nested
 *    <svg>; panels of one file in one chart move together; the axis ticks,
 *    frame labels and one-pixel minimum widths are redrawn for the view);
 *  - a click on any mark, label, legend entry or table row highlights that
 *    region in every chart and in the table (data-ri = the region's colour
 *    index); a second click clears it;
 *  - the rank selector hides other ranks' panels (Gantt, flame chart), marks
 *    (time series) or dims their bars (imbalance);
 *  - table headers sort;
 *  - the views (report_views.c) draw their sections from the JSON blob.
 *
 * The page is src/report/assets/report.html.in with its @name@ slots filled;
 * the script and styles are report.js and report.css there, embedded at build
 * time. What the script may rely on (the JSON blob, classes, data-*
 * attributes) is written down in docs/report.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/report_internal.h"
#include "scope_profiler.h"

/* The embedded assets (cmake/embed_assets.cmake, from src/report/assets/). */
extern const unsigned char rp_asset_report_css[], rp_asset_report_js[], rp_asset_report_html[];
extern const size_t rp_asset_report_css_len, rp_asset_report_js_len, rp_asset_report_html_len;

static void cell_num(FILE *o, double v, const char *fmt_kind) {
  if (!isfinite(v)) {
    fputs("<td data-v=\"nan\">-</td>", o);
    return;
  }
  if (!strcmp(fmt_kind, "s")) fprintf(o, "<td data-v=\"%.9g\">%.6g</td>", v, v / 1e9);
  else if (!strcmp(fmt_kind, "ratio")) fprintf(o, "<td data-v=\"%.9g\">%.2f</td>", v, v);
  else fprintf(o, "<td data-v=\"%.0f\">%.0f</td>", v, v);
}

static void summary_table(FILE *o, const struct rp_model *m) {
  fputs("<section id=\"summary\"><h2>Summary statistics</h2>\n<p class=\"notes\">Over the selected "
        "ranks, in seconds (as <code>scope-profiler inspect</code>). imbalance = slowest rank's "
        "total / mean rank total; own = inclusive time minus direct children. Click a header to "
        "sort, a row to highlight its region.</p>\n",
        o);
  fputs("<table id=\"summary-table\" class=\"sortable\"><thead><tr>", o);
  if (m->nfiles > 1) fputs("<th class=\"name\">file</th>", o);
  fputs("<th class=\"name\">region</th><th>ranks</th><th>calls</th><th>total [s]</th>"
        "<th>avg [s]</th><th>min [s]</th><th>max [s]</th><th>std [s]</th><th>p50 [s]</th>"
        "<th>p95 [s]</th><th>p99 [s]</th><th>imbalance</th><th>own [s]</th></tr></thead><tbody>\n",
        o);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    for (size_t k = 0; k < f->nregs; k++) {
      const sp_region_stats *s = &f->regs[k].s;
      size_t g = f->regs[k].g;
      fprintf(o, "<tr data-ri=\"%zu\">", g);
      if (m->nfiles > 1) {
        fputs("<td class=\"txt\" data-v=\"", o);
        rp_xml(o, f->label);
        fputs("\">", o);
        rp_xml(o, f->label);
        fputs("</td>", o);
      }
      fputs("<td class=\"name\" data-v=\"", o);
      rp_xml(o, m->regions[g].name);
      fprintf(o, "\"><span class=\"sw\" style=\"background:%s\"></span>", m->regions[g].color);
      rp_xml(o, m->regions[g].name);
      fputs("</td>", o);
      cell_num(o, (double)s->ranks, "n");
      cell_num(o, (double)s->count, "n");
      cell_num(o, (double)s->total_ns, "s");
      cell_num(o, s->mean_ns, "s");
      cell_num(o, (double)s->min_ns, "s");
      cell_num(o, (double)s->max_ns, "s");
      cell_num(o, s->std_ns, "s");
      cell_num(o, s->has_percentiles ? s->p50_ns : NAN, "s");
      cell_num(o, s->has_percentiles ? s->p95_ns : NAN, "s");
      cell_num(o, s->has_percentiles ? s->p99_ns : NAN, "s");
      cell_num(o, s->imbalance, "ratio");
      cell_num(o, s->has_own ? (double)s->own_ns : NAN, "s");
      fputs("</tr>\n", o);
    }
  }
  fputs("</tbody></table></section>\n", o);
}

static void files_section(FILE *o, const struct rp_model *m) {
  fputs("<section id=\"files\"><h2>Inputs</h2>\n<table><thead><tr><th class=\"name\">label</th>"
        "<th class=\"name\">file</th><th class=\"name\">layout</th><th>ranks</th>"
        "<th>regions</th><th>events</th></tr></thead><tbody>\n",
        o);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    fputs("<tr><td class=\"txt\">", o);
    rp_xml(o, f->label);
    fputs("</td><td class=\"txt\">", o);
    rp_xml(o, f->abs);
    fprintf(o, "</td><td class=\"txt\">schema %d, %s</td><td>%zu of %zu</td><td>%zu</td>",
            sp_results_schema(f->r), sp_results_layout(f->r), f->nranks,
            sp_results_num_ranks(f->r), f->nregs);
    fprintf(o, "<td>%llu</td></tr>\n", (unsigned long long)sp_results_num_events(f->r));
  }
  fputs("</tbody></table>\n", o);
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    fputs("<details><summary>metadata of ", o);
    rp_xml(o, f->label);
    fprintf(o, " (%zu entries)</summary><table>", sp_results_num_metadata(f->r));
    for (size_t i = 0; i < sp_results_num_metadata(f->r); i++) {
      const sp_metadata_entry *e = sp_results_metadata_at(f->r, i);
      fputs("<tr><td class=\"txt\">", o);
      rp_xml(o, e->key);
      fputs("</td><td class=\"txt\"><pre>", o);
      rp_xml_clip(o, e->text, 2000);
      fputs("</pre></td></tr>", o);
    }
    fputs("</table></details>\n", o);
  }
  fputs("</section>\n", o);
}

static void write_subtitle(FILE *o, const struct rp_model *m) {
  time_t now = time(NULL);
  char when[64];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  fprintf(o, "scope-profiler %s — %zu input file%s — %zu regions — generated %s",
          sp_version_string(), m->nfiles, m->nfiles == 1 ? "" : "s", m->nregions, when);
}

static void write_toolbar(FILE *o, const struct rp_model *m, const struct rp_svg *charts,
                          size_t n, const struct rp_view_out *views, size_t nviews) {
  fputs("<nav id=\"toolbar\"><label>rank <select id=\"rank-select\"><option value=\"all\">all "
        "ranks</option>",
        o);
  for (size_t i = 0; i < m->nall_ranks; i++)
    fprintf(o, "<option value=\"%lld\">rank %lld</option>", (long long)m->all_ranks[i],
            (long long)m->all_ranks[i]);
  fputs("</select></label><button id=\"clear-hl\" type=\"button\">clear highlight</button>"
        "<span id=\"hl-name\"></span><span>charts:",
        o);
  for (size_t i = 0; i < n; i++) {
    fprintf(o, " <a href=\"#sec-%s\">", charts[i].id);
    rp_xml(o, charts[i].id);
    fputs("</a>", o);
  }
  for (size_t i = 0; i < nviews; i++)
    if (views[i].json) fprintf(o, " <a href=\"#sec-%s\">%s</a>", views[i].id, views[i].id);
  fputs(" · <a href=\"#summary\">table</a> · <a href=\"region_statistics.json\">"
        "region_statistics.json</a></span></nav>",
        o);
}

static int write_main(FILE *o, const struct rp_model *m, const struct rp_svg *charts, size_t n,
                       const struct rp_view_out *views, size_t nviews) {
  files_section(o, m);
  fputs("<section id=\"legend\"><h2>Regions</h2>", o);
  for (size_t i = 0; i < m->nregions; i++) {
    fprintf(o, "<span class=\"lg\" data-ri=\"%zu\" data-region=\"", i);
    rp_xml(o, m->regions[i].name);
    fprintf(o, "\"><span class=\"sw\" style=\"background:%s\"></span>", m->regions[i].color);
    rp_xml(o, m->regions[i].name);
    fputs("</span>", o);
  }
  if (!m->nregions) fputs("<p class=\"why\">No region matches the selected filters.</p>", o);
  fputs("</section>\n", o);
  summary_table(o, m);
  for (size_t i = 0; i < n; i++) {
    fprintf(o, "<section class=\"chart-section\" id=\"sec-%s\">", charts[i].id);
    if (!rp_svg_drawn(&charts[i])) { /* a drawn chart carries its title */
      fputs("<h2>", o);
      rp_xml(o, charts[i].title);
      fputs("</h2>\n", o);
    }
    if (rp_svg_drawn(&charts[i])) {
      fprintf(o, "<div class=\"chart-wrap\">\n");
      /* the standalone SVG documents are inlined as they are: they are
       * well-formed XML, which HTML parses the same way */
      if (rp_svg_put(&charts[i], o) != 0) return -1; /* a spill that cannot be read back */
      fprintf(o, "</div><p class=\"notes\"><a href=\"%s\">%s</a></p>\n", charts[i].file,
              charts[i].file);
    } else {
      fputs("<p class=\"why\">Not drawn: ", o);
      rp_xml(o, charts[i].why ? charts[i].why : "");
      fputs("</p>\n", o);
    }
    fputs("</section>\n", o);
  }
  /* a view's section is empty here: report.js draws it from the JSON blob */
  for (size_t i = 0; i < nviews; i++) {
    if (!views[i].json) continue;
    fprintf(o, "<section class=\"view\" id=\"sec-%s\" data-view=\"%s\"><h2>", views[i].id,
            views[i].id);
    rp_xml(o, views[i].title);
    fputs("</h2>", o);
    if (views[i].notes) {
      fputs("<p class=\"notes\">", o);
      rp_xml(o, views[i].notes);
      fputs("</p>", o);
    }
    fputs("<div class=\"view-body\"></div></section>\n", o);
  }
  return 0;
}

/* The JSON blob: what the script needs that the SVG does not carry. */
static void write_data(FILE *o, const struct rp_model *m, const struct rp_svg *charts, size_t n,
                       const struct rp_view_out *views, size_t nviews) {
  fputs("{\"generator\":", o);
  rp_json_str(o, sp_version_string());
  fputs(",\"title\":", o);
  rp_json_str(o, m->o->title);
  fputs(",\"regions\":[", o);
  for (size_t i = 0; i < m->nregions; i++) {
    fputs(i ? ",{\"name\":" : "{\"name\":", o);
    rp_json_str(o, m->regions[i].name);
    fprintf(o, ",\"color\":\"%s\"}", m->regions[i].color);
  }
  fputs("],\"ranks\":[", o);
  for (size_t i = 0; i < m->nall_ranks; i++)
    fprintf(o, "%s%lld", i ? "," : "", (long long)m->all_ranks[i]);
  fputs("],\"files\":[", o);
  for (size_t i = 0; i < m->nfiles; i++) {
    const struct rp_file *f = &m->files[i];
    fputs(i ? ",{\"label\":" : "{\"label\":", o);
    rp_json_str(o, f->label);
    fputs(",\"path\":", o);
    rp_json_str(o, f->abs);
    fprintf(o, ",\"schema\":%d,\"layout\":\"%s\",\"events\":%llu}", sp_results_schema(f->r),
            sp_results_layout(f->r), (unsigned long long)sp_results_num_events(f->r));
  }
  fputs("],\"charts\":[", o);
  for (size_t i = 0; i < n; i++) {
    fprintf(o, "%s{\"id\":\"%s\",\"file\":\"%s\",\"drawn\":%s,\"title\":", i ? "," : "",
            charts[i].id, charts[i].file, rp_svg_drawn(&charts[i]) ? "true" : "false");
    rp_json_str(o, charts[i].title);
    if (!rp_svg_drawn(&charts[i])) {
      fputs(",\"why\":", o);
      rp_json_str(o, charts[i].why);
    }
    fputc('}', o);
  }
  fputs("],\"views\":{", o);
  int first = 1;
  for (size_t i = 0; i < nviews; i++) {
    if (!views[i].json) continue;
    fprintf(o, "%s\"%s\":", first ? "" : ",", views[i].id);
    fputs(views[i].json, o);
    first = 0;
  }
  fputs("}}", o);
}

static void write_asset(FILE *o, const unsigned char *p, size_t n) { fwrite(p, 1, n, o); }

int rp_write_html(FILE *o, const struct rp_model *m, const struct rp_svg *charts, size_t n,
                  const struct rp_view_out *views, size_t nviews) {
  const char *t = (const char *)rp_asset_report_html;
  /* the template's own leading comment stays in the source tree */
  const char *start = strstr(t, "<html");
  fputs("<!DOCTYPE html>\n", o);
  for (const char *s = start ? start : t; *s;) {
    const char *at = strchr(s, '@');
    if (!at) {
      fputs(s, o);
      break;
    }
    fwrite(s, 1, (size_t)(at - s), o);
    const char *end = strchr(at + 1, '@');
    size_t len = end ? (size_t)(end - at - 1) : 0;
#define SLOT(name) (len == strlen(name) && !strncmp(at + 1, name, len))
    if (SLOT("title")) rp_xml(o, m->o->title);
    else if (SLOT("css")) write_asset(o, rp_asset_report_css, rp_asset_report_css_len);
    else if (SLOT("js")) write_asset(o, rp_asset_report_js, rp_asset_report_js_len);
    else if (SLOT("subtitle")) write_subtitle(o, m);
    else if (SLOT("toolbar")) write_toolbar(o, m, charts, n, views, nviews);
    else if (SLOT("main")) {
      if (write_main(o, m, charts, n, views, nviews) != 0) return -1;
    }
    else if (SLOT("data")) write_data(o, m, charts, n, views, nviews);
    else {
      fputc('@', o); /* not a slot */
      s = at + 1;
      continue;
    }
#undef SLOT
    s = end + 1;
  }
  return ferror(o) ? -1 : 0;
}
