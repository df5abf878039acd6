/* cmd_diff.c - `scope-profiler diff A B`: one line per region with a metric
 * on both sides, the difference and the relative change, as upstream's diff
 * does. A region missing on one side counts as 0 there; regions only in a
 * show -100%, regions only in b show "new" and are listed again under
 * "Only in a" / "Only in b". --threshold never hides regions new in b.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "cli/cli_opts.h"
#include "cli/commands.h"

#define CMD "diff"

static const char about[] =
    "Compare the regions of two profiles (a = A, b = B) on one metric,\n"
    "aggregated over the selected ranks.\n";

static const char epilog[] =
    "A region missing on one side counts as 0 there: only in a shows -100%,\n"
    "only in b shows \"new\".\n"
    "\n"
    "examples:\n"
    "  scope-profiler diff before.h5 after.h5\n"
    "  scope-profiler diff before.h5 after.h5 --metric p95 --sort pct --threshold 5\n"
    "  scope-profiler diff run_a.h5 run_b.h5 --include solve --ranks 0\n"
    "\n"
    "exit status: 0 success, 2 usage or input error.\n";

struct opts {
  struct sp_cli_strs pos, include, exclude, ranks;
  int metric, sort;
  double threshold;
};

static const char *const sort_modes[] = {"delta", "pct", "name", NULL};

static const struct sp_cli_opt opt_rows[] = {
    {"--metric", NULL, "M", SP_OPT_CHOICE, offsetof(struct opts, metric), "{choices}",
     .choices = sp_cli_metric_names, .def = "total", .what = "--metric"},
    {"--sort", NULL, "KEY", SP_OPT_CHOICE, offsetof(struct opts, sort),
     "delta (by |b - a|, default), pct (by |change %|) or name", .choices = sort_modes,
     .def = "delta", .what = "--sort"},
    {"--threshold", NULL, "PCT", SP_OPT_NUM, offsetof(struct opts, threshold),
     "hide regions whose change is below PCT percent\n(regions new in b are always shown)",
     .def = "0", .lo = 0, .what = "a non-negative percentage"},
    SP_CLI_OPT_FILTERS(struct opts, "ranks to aggregate, e.g. 0,2,4-7 (default: all)"),
};

static const struct sp_cli_spec spec = {CMD, "A B [options]", about, opt_rows,
                                        SP_CLI_NROWS(opt_rows), offsetof(struct opts, pos), NULL,
                                        epilog};


static int sort_mode; /* 0 delta, 1 pct, 2 name */
static int cmp(const void *pa, const void *pb) {
  const struct sp_cli_cmp *a = pa, *b = pb;
  if (sort_mode == 0 && fabs(a->delta) != fabs(b->delta)) return fabs(a->delta) > fabs(b->delta) ? -1 : 1;
  if (sort_mode == 1) {
    /* new regions have no percentage: they sort as the largest change */
    double x = isnan(a->pct) ? INFINITY : fabs(a->pct), y = isnan(b->pct) ? INFINITY : fabs(b->pct);
    if (x != y) return x > y ? -1 : 1;
  }
  return strcmp(a->name, b->name);
}

int sp_cmd_diff(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct sp_cli_pair p = {0};
  int rc = sp_cli_parse(&spec, argc, argv, &o);
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
    goto out;
  }
  int metric = o.metric;
  double threshold = o.threshold;
  sort_mode = o.sort;
  if (o.pos.n != 2) {
    rc = sp_cli_usage_error(CMD, "expected two files A and B, got %zu", o.pos.n);
    goto out;
  }
  if ((rc = sp_cli_pair_open(CMD, &o.pos, &o.include, &o.exclude, &o.ranks, metric, &p))) goto out;
  struct sp_cli_cmp *rows = p.rows;
  size_t n = p.n;
  qsort(rows, n, sizeof *rows, cmp);

  printf("a: %s (%s)\n", p.files.v[0], sp_results_display_label(p.a));
  printf("b: %s (%s)\n", p.files.v[1], sp_results_display_label(p.b));
  printf("metric: %s%s", sp_cli_metric_name(metric), sp_cli_metric_unit(metric));
  if (threshold > 0) printf(", changes below %g%% hidden", threshold);
  printf("\n\n");
  const char *unit = sp_cli_metric_unit(metric);
  char ha[32], hb[32], hd[32];
  snprintf(ha, sizeof ha, "a%s", unit);
  snprintf(hb, sizeof hb, "b%s", unit);
  snprintf(hd, sizeof hd, "delta%s", unit);
  char cell[5][64];
  size_t w[5] = {6, strlen(ha), strlen(hb), strlen(hd), 7};
  size_t shown = 0;
  int *keep = calloc(n + 1, sizeof *keep);
  for (size_t i = 0; i < n; i++) {
    const struct sp_cli_cmp *c = &rows[i];
    keep[i] = !(c->in_a && c->in_b && fabs(c->pct) < threshold);
    if (!keep[i]) continue;
    shown++;
    if (sp_cli_width(c->name) > w[0]) w[0] = sp_cli_width(c->name);
    sp_cli_metric_fmt(cell[1], 64, metric, c->a, 0);
    sp_cli_metric_fmt(cell[2], 64, metric, c->b, 0);
    sp_cli_metric_fmt(cell[3], 64, metric, c->delta, 1);
    for (int k = 1; k < 4; k++)
      if (strlen(cell[k]) > w[k]) w[k] = strlen(cell[k]);
  }
  sp_cli_pad(stdout, "region", w[0], 0);
  printf("  %*s  %*s  %*s  %*s\n", (int)w[1], ha, (int)w[2], hb, (int)w[3], hd, (int)w[4], "change");
  for (size_t i = 0; i < n; i++) {
    const struct sp_cli_cmp *c = &rows[i];
    if (!keep[i]) continue;
    sp_cli_metric_fmt(cell[1], 64, metric, c->a, 0);
    sp_cli_metric_fmt(cell[2], 64, metric, c->b, 0);
    sp_cli_metric_fmt(cell[3], 64, metric, c->delta, 1);
    if (isnan(c->pct)) snprintf(cell[4], 64, "new");
    else if (isinf(c->pct)) snprintf(cell[4], 64, "+inf%%");
    else snprintf(cell[4], 64, "%+.1f%%", c->pct);
    sp_cli_pad(stdout, c->name, w[0], 0);
    printf("  %*s  %*s  %*s  %*s\n", (int)w[1], cell[1], (int)w[2], cell[2], (int)w[3], cell[3],
           (int)w[4], cell[4]);
  }
  if (shown == 0) printf("(no regions to show)\n");
  free(keep);
  for (int side = 0; side < 2; side++) {
    int header = 0;
    for (size_t i = 0; i < n; i++) {
      if (side ? (rows[i].in_b && !rows[i].in_a) : (rows[i].in_a && !rows[i].in_b)) {
        if (!header) printf("\nOnly in %s:\n", side ? "b" : "a");
        header = 1;
        printf("  %s\n", rows[i].name);
      }
    }
  }
out:
  fflush(stdout);
  sp_cli_pair_free(&p);
  sp_cli_opts_free(&spec, &o);
  return rc;
}
