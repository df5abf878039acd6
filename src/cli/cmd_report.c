/* cmd_report.c - `scope-profiler report FILE... -o DIR`: a self-contained
 * HTML report (DIR/report.html: inline SVG, CSS and a little plain
 * JavaScript, nothing fetched from the network), one SVG per chart and
 * upstream's region_statistics.json.
 *
 * The work is in the report_*.c files (see report_internal.h): this file
 * parses the options, opens the inputs, runs the readers in order (summary
 * statistics, one streamed pass over the events, one call stack per rank,
 * percentiles), asks each chart for its SVG and writes the outputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_opts.h"
#include "cli/commands.h"
#include "report/report_internal.h"

#define CMD "report"

static const char about[] =
    "Write DIR/report.html, a self-contained page (inline SVG, CSS and a little\n"
    "JavaScript; it loads nothing from the network) with a sortable summary table\n"
    "and these charts, each also written as DIR/<chart>.svg:\n"
    "  gantt          every call, one lane per region (and thread), a panel per rank\n"
    "  flame_chart    calls in time order nested by depth (lowest rank; --flame-ranks)\n"
    "  flame_graph    call paths merged over the selected ranks, width = total time\n"
    "  timeseries     each call's duration against wall time (warm-up, drift)\n"
    "  durations_M    grouped bars per region, one bar per file, for each metric M\n"
    "  speedup        strong scaling against --x, with the ideal line (2+ files)\n"
    "  efficiency     speedup / ideal speedup (numeric --x fields)\n"
    "  imbalance      total per rank for each region, mean and maximum marked\n"
    "and DIR/region_statistics.json (upstream's schema). FILE may be a glob.\n";

static const char epilog[] =
    "Large inputs: a lane with more calls than the plot has pixel columns gets one\n"
    "bar per column (the calls starting in it merged), and each chart says how many\n"
    "calls were merged. In the page: wheel zooms and drag pans the Gantt and flame\n"
    "charts, a click highlights a region everywhere, the rank selector filters.\n"
    "\n"
    "examples:\n"
    "  scope-profiler report profile.h5 -o report\n"
    "  scope-profiler report 'runs/*.h5' -o scaling --x num_ranks --metrics avg,total\n"
    "  scope-profiler report gcc.h5 clang.h5 --label gcc clang --x compiler -o cmp\n"
    "  scope-profiler report big.h5 -o rep --ranks 0-3 --exclude mpi_\n"
    "\n"
    "exit status: 0 success, 2 usage or input error.\n";

struct opts {
  struct sp_cli_strs files, include, exclude, ranks, labels;
  struct sp_cli_choices metrics;
  const char *out, *x, *title, *flame_ranks, *memory;
  int palette, quiet;
  long width, max_bars;
};

static const char *const palettes[] = {"tab20", "tab10", "hues", NULL};

static const struct sp_cli_opt opt_rows[] = {
    {"--output", "-o", "DIR", SP_OPT_STR, offsetof(struct opts, out),
     "output directory, created if missing (required)", .required = "the report's directory"},
    SP_CLI_OPT_FILTERS(struct opts, "ranks to show, e.g. 0,2,4-7 (default: all)"),
    {"--metrics", "-m", "M...", SP_OPT_CHOICES, offsetof(struct opts, metrics),
     "durations metrics: avg, min, max, total, as separate words or comma-separated (default: "
     "all four)",
     .choices = rp_metric_names, .what = "metric", .flags = SP_OPT_UNIQUE},
    {"--x", NULL, "FIELD", SP_OPT_STR, offsetof(struct opts, x),
     "speedup x: num_ranks (default), num_nodes, omp_num_threads, total_cores or any metadata "
     "field (kept in command-line order, no ideal line)",
     .def = "num_ranks"},
    {"--x-field", NULL, "FIELD", SP_OPT_STR, offsetof(struct opts, x), "", .flags = SP_OPT_HIDDEN},
    {"--label", NULL, "L...", SP_OPT_LIST, offsetof(struct opts, labels),
     .help = "one label per file (default: metadata label or stem)"},
    {"--palette", NULL, "P", SP_OPT_CHOICE, offsetof(struct opts, palette),
     "region colours: {choices}", .choices = palettes, .def = "tab20", .what = "palette"},
    {"--title", NULL, "T", SP_OPT_STR, offsetof(struct opts, title),
     "page title (default: {default})", .def = "scope-profiler report"},
    {"--flame-ranks", NULL, "SPEC", SP_OPT_STR, offsetof(struct opts, flame_ranks),
     .help = "ranks with a flame chart: a rank spec or all\n(default: the lowest selected rank)"},
    {"--width", NULL, "PX", SP_OPT_INT, offsetof(struct opts, width),
     "chart width in pixels, {range} (default {default})", .def = "1200", .lo = 600, .hi = 8000,
     .what = "a number of pixels"},
    {"--max-bars", NULL, "N", SP_OPT_INT, offsetof(struct opts, max_bars),
     "marks per chart before calls are merged further, {range} (default {default})",
     .def = "8000", .lo = 100, .hi = 10000000},
    {"--memory", NULL, "CAPTURE", SP_OPT_STR, offsetof(struct opts, memory),
     .help = "an allocation capture of the run (use_memray) for the flame graph of the memory "
             "live at its peak (default: the profile's own capture, when it is found beside "
             "the profile)"},
    {"--quiet", "-q", NULL, SP_OPT_FLAG, offsetof(struct opts, quiet),
     .help = "do not list the files written"},
};

static const struct sp_cli_spec spec = {CMD, "FILE... -o DIR [options]", about, opt_rows,
                                        SP_CLI_NROWS(opt_rows), offsetof(struct opts, files),
                                        "no FILE given", epilog};

static int mkdirs(const char *path) {
  char *p = strdup(path);
  if (!p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int rc = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
  free(p);
  struct stat st;
  if (rc == 0 && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
    errno = ENOTDIR;
    rc = -1;
  }
  return rc;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
  return p;
}

/* Writes name under dir: len bytes of data, or (data NULL) the chart c's
 * text from memory or its spill. */
static int write_file(const char *dir, const char *name, const char *data, size_t len, const struct rp_svg *c,
                      struct sp_cli_strs *written) {
  char *path = join(dir, name);
  if (!path) return sp_cli_error(CMD, "out of memory");
  FILE *o = fopen(path, "w");
  int bad = !o || (data ? fwrite(data, 1, len, o) != len : rp_svg_put(c, o) != 0);
  if (o && fclose(o) != 0) bad = 1;
  if (bad) {
    int rc = sp_cli_error(CMD, "cannot write %s: %s", path, strerror(errno));
    free(path);
    return rc;
  }
  sp_cli_strs_push(written, path);
  free(path);
  return 0;
}

/* The scratch file each drawn chart's text moves to as soon as it is
 * finished (rp_model.chart_spill): all of them were held until the page
 * was written (80 MB of 279 on a 40000-region file). An unnamed file in
 * $TMPDIR (O_TMPFILE: nothing is left behind, whatever ends the process);
 * NULL where the directory cannot hold one, and the charts stay in memory,
 * as before. */
static FILE *chart_scratch(void) {
  const char *tmp = getenv("TMPDIR");
  int fd = open(tmp && tmp[0] ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w+");
  if (!f) close(fd);
  return f;
}

static void free_svg(struct rp_svg *s) {
  free(s->title);
  free(s->svg);
  free(s->why);
  memset(s, 0, sizeof *s);
}

enum { C_GANTT, C_FLAME, C_FGRAPH, C_TS, C_DUR0, C_SPEEDUP = C_DUR0 + RP_NMETRICS, C_EFF,
       C_IMB, C_COUNT };

int sp_cmd_report(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct rp_opts ro;
  memset(&ro, 0, sizeof ro);
  struct rp_model m;
  memset(&m, 0, sizeof m);
  FILE *scratch = NULL; /* m.chart_spill, kept to close it when a chart fell back to memory */
  struct sp_cli_strs files = {0}, written = {0};
  struct rp_svg charts[C_COUNT];
  memset(charts, 0, sizeof charts);
  struct sp_cli_progress prog;
  sp_filter *f = NULL;
  char *json = NULL;
  struct rp_view_out *views = NULL;
  size_t nviews = 0;
  size_t json_len = 0;
  int rc = sp_cli_parse(&spec, argc, argv, &o);
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
    goto out;
  }
  ro.title = o.title;
  ro.x_field = o.x;
  ro.flame_ranks = o.flame_ranks;
  ro.memory = o.memory;
  ro.width = (int)o.width;
  ro.max_bars = (size_t)o.max_bars;
  ro.palette = o.palette;
  if (o.metrics.n == 0)
    for (int i = 0; i < RP_NMETRICS; i++) o.metrics.v[o.metrics.n++] = i;
  for (size_t i = 0; i < o.metrics.n; i++) ro.metrics[i] = o.metrics.v[i];
  ro.nmetrics = o.metrics.n;
  if (o.flame_ranks && strcmp(o.flame_ranks, "all")) {
    int64_t *tmp;
    size_t nt;
    if (sp_parse_rank_spec(o.flame_ranks, &tmp, &nt) != SP_OK) {
      rc = sp_cli_usage_error(CMD, "--flame-ranks: %s", sp_last_error());
      goto out;
    }
    free(tmp);
  }
  if ((rc = sp_cli_expand_files(CMD, &o.files, &files))) goto out;
  if (o.labels.n && o.labels.n != files.n) {
    rc = sp_cli_usage_error(CMD, "--label: %zu label(s) for %zu file(s); give one per file",
                            o.labels.n, files.n);
    goto out;
  }
  if ((rc = sp_cli_filter(CMD, &o.include, &o.exclude, &o.ranks, &f))) goto out;
  m.o = &ro;
  m.f = f;
  m.prog = &prog;
  m.chart_spill = scratch = chart_scratch();
  m.files = calloc(files.n, sizeof *m.files);
  if (!m.files) {
    rc = sp_cli_error(CMD, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < files.n; i++) {
    struct rp_file *rf = &m.files[i];
    if ((rc = sp_cli_open(CMD, files.v[i], &rf->r))) goto out;
    m.nfiles++;
    if ((rc = sp_cli_check_ranks(CMD, f, rf->r))) goto out;
    rf->path = files.v[i];
    rf->abs = sp_cli_abspath(files.v[i]);
  }
  /* labels as upstream makes them: given, or the display label; repeats "x (2)" */
  for (size_t i = 0; i < m.nfiles; i++) {
    const char *base = o.labels.n ? o.labels.v[i] : sp_results_display_label(m.files[i].r);
    int dup = 1;
    for (size_t k = 0; k < i; k++)
      dup += !strcmp(o.labels.n ? o.labels.v[k] : sp_results_display_label(m.files[k].r), base);
    size_t len = strlen(base) + 16;
    m.files[i].label = malloc(len);
    if (!m.files[i].label) {
      rc = sp_cli_error(CMD, "out of memory");
      goto out;
    }
    if (dup > 1) snprintf(m.files[i].label, len, "%s (%d)", base, dup);
    else snprintf(m.files[i].label, len, "%s", base);
  }
  struct stat ost;
  if (stat(o.out, &ost) == 0 && !S_ISDIR(ost.st_mode)) { /* fail before the slow part */
    rc = sp_cli_error(CMD, "cannot create the output directory %s: %s", o.out, strerror(ENOTDIR));
    goto out;
  }
  sp_cli_progress_start(&prog, "reading");
  for (size_t i = 0; i < m.nfiles; i++)
    if ((rc = rp_load_file(&m, &m.files[i], CMD))) goto out_prog;
  if ((rc = rp_assign_regions(&m, CMD))) goto out_prog;
  for (size_t i = 0; i < m.nfiles; i++) m.ptotal += rp_work(&m, &m.files[i]);
  for (size_t i = 0; i < m.nfiles; i++) {
    if ((rc = rp_load_events(&m, &m.files[i], CMD))) goto out_prog;
    if ((rc = rp_load_flame(&m, &m.files[i], CMD))) goto out_prog;
    if ((rc = rp_load_table(&m, &m.files[i], CMD))) goto out_prog;
  }
  prog.label = "drawing";
  int crc = 0;
  if (m.nregions == 0) {
    /* upstream's words; the page and the statistics JSON are still written */
    fprintf(stderr, "scope-profiler report: warning: No regions matched the selected filters.\n");
    static const char *const ids[C_COUNT] = {"gantt", "flame_chart", "flame_graph", "timeseries",
                                             "durations_avg", "durations_min", "durations_max",
                                             "durations_total", "speedup", "efficiency",
                                             "imbalance"};
    for (size_t k = 0; k < C_COUNT && !crc; k++) {
      if (k >= C_DUR0 && k < C_DUR0 + RP_NMETRICS) {
        int used = 0;
        for (size_t j = 0; j < ro.nmetrics; j++) used |= (size_t)ro.metrics[j] == k - C_DUR0;
        if (!used) continue;
      }
      snprintf(charts[k].id, sizeof charts[k].id, "%s", ids[k]);
      snprintf(charts[k].file, sizeof charts[k].file, "%s.svg", ids[k]);
      charts[k].title = strdup(ids[k]);
      charts[k].why = strdup("No regions matched the selected filters.");
      if (!charts[k].title || !charts[k].why) crc = -1;
    }
    goto drawn;
  }
  /* A chart the scratch file could not take (TMPDIR full) is drawn again
   * in memory, and so are the charts after it; those before it stay in the
   * file. */
#define DRAW(call, first, last)                                                                  \
  do {                                                                                           \
    if (!crc && (crc = (call)) == RP_SCRATCH_FAILED) {                                           \
      for (size_t k_ = (first); k_ <= (last); k_++) free_svg(&charts[k_]);                       \
      m.chart_spill = NULL;                                                                      \
      crc = (call);                                                                              \
    }                                                                                            \
  } while (0)
  DRAW(rp_chart_gantt(&m, &charts[C_GANTT]), C_GANTT, C_GANTT);
  DRAW(rp_chart_flame(&m, &charts[C_FLAME]), C_FLAME, C_FLAME);
  DRAW(rp_chart_flamegraph(&m, &charts[C_FGRAPH]), C_FGRAPH, C_FGRAPH);
  DRAW(rp_chart_timeseries(&m, &charts[C_TS]), C_TS, C_TS);
  for (size_t k = 0; k < ro.nmetrics; k++)
    DRAW(rp_chart_durations(&m, ro.metrics[k], &charts[C_DUR0 + k]), C_DUR0 + k, C_DUR0 + k);
  DRAW(rp_chart_scaling(&m, CMD, &charts[C_SPEEDUP], &charts[C_EFF]), C_SPEEDUP, C_EFF);
  DRAW(rp_chart_imbalance(&m, &charts[C_IMB]), C_IMB, C_IMB);
#undef DRAW
drawn:
  if (crc) {
    rc = crc < 0 ? sp_cli_error(CMD, "out of memory") : crc;
    goto out_prog;
  }
  /* the charts in page order, without the unused durations slots */
  struct rp_svg order[C_COUNT];
  size_t n = 0;
  for (size_t k = 0; k < C_COUNT; k++)
    if (charts[k].title) order[n++] = charts[k];
  nviews = rp_num_views();
  views = calloc(nviews, sizeof *views);
  if (!views || (crc = rp_views_build(&m, CMD, views)) != 0) {
    rc = crc == 2 ? 2 : sp_cli_error(CMD, "out of memory");
    goto out_prog;
  }
  FILE *jo = open_memstream(&json, &json_len);
  if (!jo) {
    rc = sp_cli_error(CMD, "out of memory");
    goto out_prog;
  }
  {
    sp_results **rs = malloc(m.nfiles * sizeof *rs);
    const char **labels = malloc(m.nfiles * sizeof *labels), **paths = malloc(m.nfiles * sizeof *paths);
    sp_status st = rs && labels && paths ? SP_OK : SP_ERR_NO_MEMORY;
    for (size_t i = 0; st == SP_OK && i < m.nfiles; i++) {
      rs[i] = m.files[i].r;
      labels[i] = o.labels.n ? o.labels.v[i] : NULL;
      paths[i] = m.files[i].abs;
    }
    if (st == SP_OK)
      st = sp_write_region_statistics_json(rs, m.nfiles, o.labels.n ? labels : NULL, paths, f, jo);
    free(rs);
    free(labels);
    free(paths);
    if (fclose(jo) != 0 && st == SP_OK) st = SP_ERR_NO_MEMORY;
    if (st != SP_OK) {
      rc = sp_cli_error(CMD, "region_statistics.json: %s", sp_last_error());
      goto out_prog;
    }
  }
  sp_cli_progress_end(&prog);
  if (mkdirs(o.out) != 0) {
    rc = sp_cli_error(CMD, "cannot create the output directory %s: %s", o.out, strerror(errno));
    goto out;
  }
  /* the page goes straight to its file: held whole in memory as well, it
   * was the largest buffer of the run (the charts' text once more) */
  {
    char *path = join(o.out, "report.html");
    if (!path) {
      rc = sp_cli_error(CMD, "out of memory");
      goto out;
    }
    FILE *ho = fopen(path, "w");
    int bad = !ho || rp_write_html(ho, &m, order, n, views, nviews) != 0;
    if (ho && fclose(ho) != 0) bad = 1;
    if (bad) {
      rc = sp_cli_error(CMD, "cannot write %s: %s", path, strerror(errno));
      free(path);
      goto out;
    }
    sp_cli_strs_push(&written, path);
    free(path);
  }
  for (size_t k = 0; k < n; k++)
    if (rp_svg_drawn(&order[k]) && (rc = write_file(o.out, order[k].file, NULL, 0, &order[k], &written)))
      goto out;
  if ((rc = write_file(o.out, "region_statistics.json", json, json_len, NULL, &written))) goto out;
  for (size_t i = 0; i < m.nfiles; i++)
    if (m.files[i].overlaps)
      fprintf(stderr,
              "scope-profiler report: warning: %s: %zu call(s) overlap calls they are not nested "
              "in (threads not recorded?)\n",
              m.files[i].path, m.files[i].overlaps);
  if (charts[C_SPEEDUP].why && strstr(charts[C_SPEEDUP].why, "No valid speedup"))
    fprintf(stderr, "scope-profiler report: warning: %s\n", charts[C_SPEEDUP].why);
  if (!o.quiet) {
    printf("Outputs saved to:\n");
    for (size_t i = 0; i < written.n; i++) printf("  %s\n", written.v[i]);
  }
  goto out;
out_prog:
  sp_cli_progress_end(&prog);
out:
  fflush(stdout);
  for (size_t k = 0; k < C_COUNT; k++) free_svg(&charts[k]);
  if (scratch) fclose(scratch);
  rp_views_free(views, nviews);
  free(views);
  for (size_t i = 0; i < m.nfiles; i++) rp_free_file(&m.files[i]);
  free(m.files);
  for (size_t i = 0; i < m.nregions; i++) free(m.regions[i].name);
  free(m.regions);
  free(m.all_ranks);
  free(json);
  sp_filter_free(f);
  sp_cli_strs_free(&files);
  sp_cli_strs_free(&written);
  sp_cli_opts_free(&spec, &o);
  return rc;
}
