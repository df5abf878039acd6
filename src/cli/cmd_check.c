/* cmd_check.c - `scope-profiler check BASELINE CANDIDATE --max-regression PCT`:
 * a CI gate. Every region present in both profiles is compared on a metric;
 * one that got slower by more than PCT percent fails the check (exit 1), and
 * with --fail-on-new so does a region the baseline did not have. Usage and
 * input errors exit 2, so CI can tell "regressed" from "broken".
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "cli/cli_opts.h"
#include "cli/commands.h"

#define CMD "check"

static const char about[] =
    "Fail (exit 1) when a region of CANDIDATE is slower than in BASELINE by more\n"
    "than PCT percent on the chosen metric. Meant for CI.\n";

static const char epilog[] =
    "A region with 0 in the baseline and more in the candidate counts as an\n"
    "infinite regression. Regions missing from the candidate are reported, not failed.\n"
    "\n"
    "examples:\n"
    "  scope-profiler check main.h5 pr.h5 --max-regression 10\n"
    "  scope-profiler check main.h5 pr.h5 --max-regression 5 --metric p95 --include solve\n"
    "  scope-profiler check main.h5 pr.h5 --max-regression 20 --fail-on-new\n"
    "\n"
    "exit status: 0 no regression, 1 regression found, 2 usage or input error.\n";

struct opts {
  struct sp_cli_strs pos, include, exclude, ranks;
  int metric, fail_on_new;
  double max_pct;
};

static const struct sp_cli_opt opt_rows[] = {
    {"--max-regression", NULL, "PCT", SP_OPT_NUM, offsetof(struct opts, max_pct),
     "allowed slowdown in percent (required), e.g. 10", .lo = 0, .hi = 1e308,
     .what = "a non-negative percentage", .required = "e.g. --max-regression 10"},
    {"--metric", NULL, "M", SP_OPT_CHOICE, offsetof(struct opts, metric), "{choices}",
     .choices = sp_cli_metric_names, .def = "total", .what = "--metric"},
    {"--fail-on-new", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, fail_on_new),
     .help = "also fail when CANDIDATE has regions BASELINE lacks"},
    SP_CLI_OPT_FILTERS_HELP(struct opts, "check only regions whose name matches RE at its start",
                            "skip regions whose name matches RE at its start",
                            "ranks to aggregate, e.g. 0,2,4-7 (default: all)"),
};

static const struct sp_cli_spec spec = {CMD, "BASELINE CANDIDATE --max-regression PCT [options]",
                                        about, opt_rows, SP_CLI_NROWS(opt_rows),
                                        offsetof(struct opts, pos), NULL, epilog};


enum status { ST_REGRESSED, ST_NEW_FAIL, ST_OK, ST_NEW, ST_MISSING };
static const char *const status_text[] = {"REGRESSED", "NEW", "ok", "new", "missing"};

struct line {
  const struct sp_cli_cmp *c;
  enum status st;
};

static int cmp_lines(const void *pa, const void *pb) {
  const struct line *a = pa, *b = pb;
  if (a->st != b->st) return a->st < b->st ? -1 : 1;
  double x = isnan(a->c->pct) ? 0 : a->c->pct, y = isnan(b->c->pct) ? 0 : b->c->pct;
  if (x != y) return x > y ? -1 : 1;
  return strcmp(a->c->name, b->c->name);
}

int sp_cmd_check(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct sp_cli_pair p = {0};
  struct line *lines = NULL;
  int rc = sp_cli_parse(&spec, argc, argv, &o);
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
    goto out;
  }
  int metric = o.metric, fail_on_new = o.fail_on_new;
  double max_pct = o.max_pct;
  if (o.pos.n != 2) {
    rc = sp_cli_usage_error(CMD, "expected BASELINE and CANDIDATE, got %zu file argument(s)", o.pos.n);
    goto out;
  }
  if ((rc = sp_cli_pair_open(CMD, &o.pos, &o.include, &o.exclude, &o.ranks, metric, &p))) goto out;
  const struct sp_cli_cmp *rows = p.rows;
  size_t n = p.n;

  lines = calloc(n + 1, sizeof *lines);
  if (!lines) {
    rc = sp_cli_error(CMD, "out of memory");
    goto out;
  }
  size_t regressed = 0, new_fail = 0, compared = 0;
  for (size_t i = 0; i < n; i++) {
    const struct sp_cli_cmp *c = &rows[i];
    lines[i].c = c;
    if (c->in_a && c->in_b) {
      compared++;
      lines[i].st = c->pct > max_pct ? ST_REGRESSED : ST_OK;
      if (lines[i].st == ST_REGRESSED) regressed++;
    } else if (c->in_b) {
      lines[i].st = fail_on_new ? ST_NEW_FAIL : ST_NEW;
      if (fail_on_new) new_fail++;
    } else {
      lines[i].st = ST_MISSING;
    }
  }
  qsort(lines, n, sizeof *lines, cmp_lines);

  const char *unit = sp_cli_metric_unit(metric);
  printf("baseline:  %s (%s)\n", p.files.v[0], sp_results_display_label(p.a));
  printf("candidate: %s (%s)\n", p.files.v[1], sp_results_display_label(p.b));
  printf("metric: %s%s, allowed regression: %g%%\n\n", sp_cli_metric_name(metric), unit, max_pct);
  char hb[32], hc[32], cell[4][64];
  snprintf(hb, sizeof hb, "baseline%s", unit);
  snprintf(hc, sizeof hc, "candidate%s", unit);
  size_t w[4] = {9, 6, strlen(hb), strlen(hc)};
  for (size_t i = 0; i < n; i++) {
    if (sp_cli_width(lines[i].c->name) > w[1]) w[1] = sp_cli_width(lines[i].c->name);
    sp_cli_metric_fmt(cell[2], 64, metric, lines[i].c->in_a ? lines[i].c->a : NAN, 0);
    sp_cli_metric_fmt(cell[3], 64, metric, lines[i].c->in_b ? lines[i].c->b : NAN, 0);
    if (strlen(cell[2]) > w[2]) w[2] = strlen(cell[2]);
    if (strlen(cell[3]) > w[3]) w[3] = strlen(cell[3]);
  }
  printf("%-*s  ", (int)w[0], "status");
  sp_cli_pad(stdout, "region", w[1], 0);
  printf("  %*s  %*s  %7s\n", (int)w[2], hb, (int)w[3], hc, "change");
  for (size_t i = 0; i < n; i++) {
    const struct sp_cli_cmp *c = lines[i].c;
    sp_cli_metric_fmt(cell[2], 64, metric, c->in_a ? c->a : NAN, 0);
    sp_cli_metric_fmt(cell[3], 64, metric, c->in_b ? c->b : NAN, 0);
    if (!(c->in_a && c->in_b)) snprintf(cell[1], 64, "-");
    else if (isinf(c->pct)) snprintf(cell[1], 64, "+inf%%");
    else snprintf(cell[1], 64, "%+.1f%%", c->pct);
    printf("%-*s  ", (int)w[0], status_text[lines[i].st]);
    sp_cli_pad(stdout, c->name, w[1], 0);
    printf("  %*s  %*s  %7s\n", (int)w[2], cell[2], (int)w[3], cell[3], cell[1]);
  }
  if (n == 0) printf("(no regions to compare)\n");
  printf("\n");
  if (regressed || new_fail) {
    printf("FAIL:");
    if (regressed)
      printf(" %zu of %zu compared region(s) regressed by more than %g%%", regressed, compared,
             max_pct);
    if (regressed && new_fail) printf(";");
    if (new_fail) printf(" %zu new region(s) (--fail-on-new)", new_fail);
    printf("\n");
    rc = 1;
  } else {
    printf("OK: no region regressed by more than %g%% (%zu compared)\n", max_pct, compared);
  }
out:
  fflush(stdout);
  free(lines);
  sp_cli_pair_free(&p);
  sp_cli_opts_free(&spec, &o);
  return rc;
}
