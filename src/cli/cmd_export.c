/* cmd_export.c - `scope-profiler export FORMAT FILE... -o OUT`: a profile in
 * another tool's format. chrome-trace (chrome://tracing, Perfetto),
 * speedscope (one profile per lane), folded stacks (flamegraph.pl), csv
 * (upstream's plot data: gantt, flame or durations), json (upstream's JSON
 * profile, format_version 1, which every command reads back; gzip when OUT
 * ends in .gz), region-statistics (upstream's region_statistics.json) and a
 * flame graph SVG.
 *
 * Output goes to a temporary file next to OUT that is renamed into place when
 * complete, so an interrupted export never leaves a half-written OUT.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "cli/cli_util.h"
#include "cli/cli_opts.h"
#include "cli/commands.h"
#include "common/dest.h"
#include "report/report_internal.h"

#define CMD "export"

static const char about[] =
    "Write profiles in another tool's format. FORMAT is one of:\n"
    "  chrome-trace   Trace Event JSON for chrome://tracing or ui.perfetto.dev;\n"
    "                 pid = rank, tid = thread; streamed, any file size\n"
    "  speedscope     speedscope.app evented profiles, one per rank and thread\n"
    "  folded         \"a;b;c <self ns>\" lines for flamegraph.pl, merged over ranks\n"
    "  csv            upstream's plot data; --kind gantt (default; streamed),\n"
    "                 flame or durations\n"
    "  json           upstream's JSON profile (format_version 1): every call, source,\n"
    "                 tags, metadata and lane tables; gzip-compressed when OUT ends\n"
    "                 in .gz; every command reads it back\n"
    "  region-statistics  upstream's region_statistics.json\n"
    "  flamegraph     a standalone SVG flame graph: call paths merged over the\n"
    "                 selected ranks, width = total time (as the report's)\n"
    "csv and region-statistics take several files; the others exactly one.\n";

static const char epilog[] =
    "Times in traces are relative to the earliest region entry of the file.\n"
    "\n"
    "examples:\n"
    "  scope-profiler export chrome-trace profile.h5 -o trace.json\n"
    "  scope-profiler export speedscope profile.h5 -o profile.speedscope.json --ranks 0\n"
    "  scope-profiler export folded profile.h5 -o - | flamegraph.pl > flame.svg\n"
    "  scope-profiler export csv 'runs/*.h5' --kind durations -o durations.csv\n"
    "  scope-profiler export json profile.h5 -o profile.json.gz\n"
    "  scope-profiler export region-statistics 'runs/*.h5' -o region_statistics.json\n"
    "  scope-profiler export flamegraph profile.h5 -o flame.svg --ranks 0-3\n"
    "\n"
    "exit status: 0 success, 2 usage or input error.\n";

enum { F_CHROME, F_SPEEDSCOPE, F_FOLDED, F_CSV, F_JSON, F_STATS, F_FLAMEGRAPH };
static const char *const formats[] = {"chrome-trace", "speedscope", "folded",     "csv",
                                      "json",         "region-statistics", "flamegraph", NULL};
#define FORMAT_LIST "chrome-trace, speedscope, folded, csv, json, region-statistics or flamegraph"
/* A gzip stream as a FILE (for OUT.gz): zlib writes mtime 0 and no name,
 * so the same profile compresses to the same bytes, as upstream's do. */
static ssize_t gz_write(void *cookie, const char *buf, size_t n) {
  int w = n ? gzwrite((gzFile)cookie, buf, (unsigned)(n > (1u << 30) ? 1u << 30 : n)) : 0;
  return w > 0 || n == 0 ? w : -1;
}
static int gz_close(void *cookie) { return gzclose((gzFile)cookie) == Z_OK ? 0 : -1; }

static FILE *gz_file(int fd) {
  gzFile z = gzdopen(fd, "wb");
  if (!z) return NULL;
  cookie_io_functions_t io = {NULL, gz_write, NULL, gz_close};
  FILE *f = fopencookie(z, "w", io);
  if (!f) gzclose(z);
  return f;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static const char *const kinds[] = {"gantt", "flame", "durations", NULL};

struct opts {
  struct sp_cli_strs pos, include, exclude, ranks;
  const char *out;
  int kind, quiet;
  long width;
};

static const struct sp_cli_opt opt_rows[] = {
    {"--output", "-o", "OUT", SP_OPT_STR, offsetof(struct opts, out),
     "output file; '-' writes to stdout (required)", .required = "'-o -' writes to stdout"},
    {"--kind", NULL, "KIND", SP_OPT_CHOICE, offsetof(struct opts, kind), "csv only: gantt, flame or durations",
     .choices = kinds, .what = "--kind"},
    {"--width", NULL, "PX", SP_OPT_INT, offsetof(struct opts, width),
     "flamegraph only: width in pixels, {range} (default {default})", .def = "1200", .lo = 600,
     .hi = 8000, .what = "a number of pixels"},
    SP_CLI_OPT_FILTERS(struct opts, "ranks to export, e.g. 0,2,4-7 (default: all; flame: lowest)"),
    {"--quiet", "-q", NULL, SP_OPT_FLAG, offsetof(struct opts, quiet),
     .help = "no summary line on stderr"},
};

static const struct sp_cli_spec spec = {
    CMD, "FORMAT FILE... -o OUT [options]", about, opt_rows, SP_CLI_NROWS(opt_rows),
    offsetof(struct opts, pos), "no FORMAT given; use " FORMAT_LIST,
    epilog};

int sp_cmd_export(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct sp_cli_strs files = {0};
  sp_results **rs = NULL;
  char **abs = NULL;
  sp_filter *f = NULL;
  char *tmp = NULL;
  FILE *out = NULL;
  int rc = sp_cli_parse(&spec, argc, argv, &o), fmt = -1;
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
    goto done;
  }
  const char *out_s = o.out;
  for (int i = 0; formats[i]; i++)
    if (!strcmp(o.pos.v[0], formats[i])) fmt = i;
  if (fmt < 0) {
    rc = sp_cli_usage_error(CMD, "unknown format '%s'; use " FORMAT_LIST, o.pos.v[0]);
    goto done;
  }
  if (o.pos.n < 2) {
    rc = sp_cli_usage_error(CMD, "no FILE given");
    goto done;
  }
  static const sp_export_format csv_kinds[] = {SP_EXPORT_GANTT_CSV, SP_EXPORT_FLAME_CSV,
                                               SP_EXPORT_DURATIONS_CSV};
  sp_export_format xf = o.kind >= 0 ? csv_kinds[o.kind] : SP_EXPORT_GANTT_CSV;
  if (fmt != 3 && o.kind >= 0) {
    rc = sp_cli_usage_error(CMD, "--kind applies to the csv format only");
    goto done;
  }
  struct sp_cli_strs patterns = {o.pos.v + 1, o.pos.n - 1, 0};
  if ((rc = sp_cli_expand_files(CMD, &patterns, &files))) goto done;
  if (fmt != F_FLAMEGRAPH && o.width != 1200) {
    rc = sp_cli_usage_error(CMD, "--width applies to the flamegraph format only");
    goto done;
  }
  if ((fmt < F_CSV || fmt == F_JSON || fmt == F_FLAMEGRAPH) && files.n != 1) {
    rc = sp_cli_usage_error(CMD, "%s takes exactly one file (got %zu); export them one by one",
                            formats[fmt], files.n);
    goto done;
  }
  if ((rc = sp_cli_filter(CMD, &o.include, &o.exclude, &o.ranks, &f))) goto done;
  rs = calloc(files.n, sizeof *rs);
  abs = calloc(files.n, sizeof *abs);
  if (!rs || !abs) {
    rc = sp_cli_error(CMD, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < files.n; i++) {
    if ((rc = sp_cli_open(CMD, files.v[i], &rs[i]))) goto done;
    if ((rc = sp_cli_check_ranks(CMD, f, rs[i]))) goto done;
    abs[i] = sp_cli_abspath(files.v[i]);
  }

  const char *why;
  enum sp_dest dest = sp__dest_kind(out_s, &why);
  if (dest == SP_DEST_BAD) {
    rc = sp_cli_error(CMD, "-o %s is %s; give a file name (or a device, a FIFO, - for stdout)", out_s, why);
    goto done;
  }
  if (!strcmp(out_s, "-")) {
    out = stdout;
  } else if (dest == SP_DEST_STREAM) {
    /* a device or a FIFO is written in place: renaming over it would
     * replace the node itself with a regular file */
    int fd = sp__dest_open_stream(out_s);
    if (fd < 0 || !(out = fdopen(fd, "w"))) {
      rc = sp_cli_error(CMD, "cannot write %s: %s", out_s, strerror(errno));
      if (fd >= 0) close(fd);
      goto done;
    }
  } else {
    tmp = malloc(strlen(out_s) + 16);
    if (!tmp) {
      rc = sp_cli_error(CMD, "out of memory");
      goto done;
    }
    sprintf(tmp, "%s.tmp-XXXXXX", out_s);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
      /* mkstemp makes the file private; the result should look like any other */
      mode_t mask = umask(0);
      umask(mask);
      if (fchmod(fd, 0666 & ~mask) != 0) { /* keep the private mode */ }
    }
    if (fd < 0 || !(out = fmt == F_JSON && ends_with(out_s, ".gz") ? gz_file(fd) : fdopen(fd, "w"))) {
      rc = sp_cli_error(CMD, "cannot write %s: %s; check that its directory exists and is writable",
                        out_s, strerror(errno));
      if (fd >= 0) close(fd);
      free(tmp);
      tmp = NULL;
      goto done;
    }
  }
  struct sp_cli_progress prog;
  sp_cli_progress_start(&prog, "exporting");
  sp_export_stats xs = {0, 0};
  sp_status st = SP_OK;
  if (fmt == F_FLAMEGRAPH) {
    if ((rc = rp_export_flamegraph(rs[0], files.v[0], f, (int)o.width, CMD, out, &xs.events))) {
      if (out != stdout) {
        fclose(out);
        if (tmp) unlink(tmp);
      }
      out = NULL;
      goto done;
    }
  } else if (fmt == F_STATS) {
    st = sp_write_region_statistics_json(rs, files.n, NULL, (const char *const *)abs, f, out);
  } else if (fmt == F_JSON) {
    st = sp_write_json_profile(rs[0], f, out);
  } else if (fmt == 3 && xf == SP_EXPORT_DURATIONS_CSV) {
    st = sp_write_durations_csv(rs, files.n, NULL, f, out);
  } else {
    static const sp_export_format map[] = {SP_EXPORT_CHROME_TRACE, SP_EXPORT_SPEEDSCOPE,
                                           SP_EXPORT_FOLDED};
    /* CSV labels as in region_statistics.json: repeats become "x (2)" */
    for (size_t i = 0; i < files.n && st == SP_OK; i++) {
      char label[512];
      int dup = 1;
      for (size_t k = 0; k < i; k++)
        dup += !strcmp(sp_results_display_label(rs[k]), sp_results_display_label(rs[i]));
      if (dup > 1) snprintf(label, sizeof label, "%s (%d)", sp_results_display_label(rs[i]), dup);
      else snprintf(label, sizeof label, "%s", sp_results_display_label(rs[i]));
      sp_export_stats one = {0, 0};
      sp_results_set_progress(rs[i], sp_cli_progress_cb, &prog);
      unsigned x = fmt < 3 ? (unsigned)map[fmt] : (unsigned)xf | (i ? SP_EXPORT_NO_HEADER : 0u);
      st = sp_results_export(rs[i], (sp_export_format)x, f, label, out, &one);
      sp_results_set_progress(rs[i], NULL, NULL);
      xs.events += one.events;
      xs.overlaps += one.overlaps;
    }
  }
  sp_cli_progress_end(&prog);
  if (out != stdout) {
    if (fclose(out) != 0 && st == SP_OK) st = SP_ERR_IO;
    out = NULL;
    if (st == SP_OK && tmp && rename(tmp, out_s) != 0) {
      rc = sp_cli_error(CMD, "cannot rename %s to %s: %s", tmp, out_s, strerror(errno));
      unlink(tmp);
      goto done;
    }
    if (st != SP_OK && tmp) unlink(tmp);
  } else {
    fflush(stdout);
  }
  if (st != SP_OK) {
    rc = sp_cli_error(CMD, "%s", st == SP_ERR_IO && !sp_last_error()[0] ? "write failed"
                                                                         : sp_last_error());
    goto done;
  }
  if (xs.overlaps)
    fprintf(stderr,
            "scope-profiler export: warning: %zu call(s) overlap calls they are not nested in "
            "(threads not recorded?); they are clipped or shifted to keep the lanes nested\n",
            xs.overlaps);
  if (!o.quiet) {
    if (fmt == F_JSON)
      fprintf(stderr, "scope-profiler export: wrote the JSON profile of %s to %s\n", files.v[0],
              strcmp(out_s, "-") ? out_s : "stdout");
    else if (fmt == F_STATS || (fmt == F_CSV && xf == SP_EXPORT_DURATIONS_CSV))
      fprintf(stderr, "scope-profiler export: wrote %s of %zu file(s) to %s\n",
              fmt == F_STATS ? "region statistics" : "durations", files.n,
              strcmp(out_s, "-") ? out_s : "stdout");
    else
      fprintf(stderr, "scope-profiler export: wrote %llu call(s) as %s%s%s to %s\n",
              (unsigned long long)xs.events, formats[fmt], fmt == 3 ? " " : "",
              fmt == 3 ? (xf == SP_EXPORT_FLAME_CSV ? "(flame)" : "(gantt)") : "",
              strcmp(out_s, "-") ? out_s : "stdout");
  }
done:
  if (out && out != stdout) {
    fclose(out);
    unlink(tmp);
  }
  free(tmp);
  for (size_t i = 0; rs && i < files.n; i++) sp_results_free(rs[i]);
  for (size_t i = 0; abs && i < files.n; i++) free(abs[i]);
  free(rs);
  free(abs);
  sp_filter_free(f);
  sp_cli_opts_free(&spec, &o);
  sp_cli_strs_free(&files);
  return rc;
}
