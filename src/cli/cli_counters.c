/* cli_counters.c - the perf_events table of `inspect`: per region (summed
 * over the selected ranks) its calls, then each counter's total and mean per
 * call, from the file's rank<N>/perf_events groups.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"

struct crow {
  const char *region;
  int64_t calls;
  uint64_t values[256];
};

static int cmp_crow(const void *a, const void *b) {
  const struct crow *x = a, *y = b;
  /* the first counter's total, largest first; then by name */
  if (x->values[0] != y->values[0]) return x->values[0] < y->values[0] ? 1 : -1;
  return strcmp(x->region, y->region);
}

int sp_cli_print_counters(const char *cmd, sp_results *r, const sp_filter *f) {
  sp_counter_row *rows;
  size_t n;
  if (sp_results_counters(r, &rows, &n) != SP_OK) return sp_cli_error(cmd, "%s", sp_last_error());
  if (n == 0) return 0;
  /* One event list per file: every rank counted the same events. */
  size_t ne = rows[0].nevents;
  for (size_t i = 1; i < n; i++)
    if (rows[i].nevents != ne) {
      sp_counter_rows_free(rows, n);
      return sp_cli_error(cmd, "the file's perf_events groups name different events on different ranks");
    }
  struct crow *cr = calloc(n, sizeof *cr);
  size_t nc = 0;
  if (!cr) {
    sp_counter_rows_free(rows, n);
    return sp_cli_error(cmd, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    if (!sp_filter_match_region(f, rows[i].region) || !sp_filter_match_rank(f, rows[i].rank)) continue;
    size_t k = 0;
    while (k < nc && strcmp(cr[k].region, rows[i].region)) k++;
    if (k == nc) cr[nc++].region = rows[i].region;
    cr[k].calls += rows[i].calls;
    for (size_t e = 0; e < ne; e++) cr[k].values[e] += rows[i].values[e];
  }
  if (nc) {
    qsort(cr, nc, sizeof *cr, cmp_crow);
    size_t ncol = 2 + 2 * ne;
    char ***cell = calloc(nc + 1, sizeof *cell);
    size_t *w = calloc(ncol, sizeof *w);
    for (size_t i = 0; cell && w && i <= nc; i++) {
      cell[i] = calloc(ncol, sizeof **cell);
      if (!cell[i]) break;
      for (size_t c = 0; c < ncol; c++) {
        char buf[320];
        if (i == 0) { /* header */
          if (c == 0) snprintf(buf, sizeof buf, "region");
          else if (c == 1) snprintf(buf, sizeof buf, "calls");
          else snprintf(buf, sizeof buf, "%s%s", rows[0].event_names[(c - 2) / 2], (c - 2) % 2 ? "/call" : "");
        } else {
          const struct crow *x = &cr[i - 1];
          if (c == 0) snprintf(buf, sizeof buf, "%s", x->region);
          else if (c == 1) snprintf(buf, sizeof buf, "%lld", (long long)x->calls);
          else if ((c - 2) % 2 == 0) snprintf(buf, sizeof buf, "%llu", (unsigned long long)x->values[(c - 2) / 2]);
          else if (x->calls) snprintf(buf, sizeof buf, "%.1f", (double)x->values[(c - 2) / 2] / (double)x->calls);
          else snprintf(buf, sizeof buf, "-");
        }
        cell[i][c] = strdup(buf);
        size_t cw = cell[i][c] ? sp_cli_width(cell[i][c]) : 0;
        if (cw > w[c]) w[c] = cw;
      }
    }
    printf("\nperf_events (per region, summed over ranks: total and mean per call)\n");
    for (size_t i = 0; cell && w && i <= nc && cell[i]; i++) {
      for (size_t c = 0; c < ncol; c++) {
        if (c) fputs("  ", stdout);
        sp_cli_pad(stdout, cell[i][c] ? cell[i][c] : "?", c + 1 == ncol ? 0 : w[c], c != 0);
      }
      fputc('\n', stdout);
    }
    for (size_t i = 0; cell && i <= nc; i++) {
      for (size_t c = 0; cell[i] && c < ncol; c++) free(cell[i][c]);
      free(cell[i]);
    }
    free(cell);
    free(w);
  }
  free(cr);
  sp_counter_rows_free(rows, n);
  return 0;
}
