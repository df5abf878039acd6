/* cli_counters.c - the counter tables of `inspect`: perf_events per region
 * (summed over the selected ranks) with its calls, then each counter's total
 * and mean per call, from the file's rank<N>/perf_events groups; and LIKWID's
 * results (rank<N>/likwid/regions) per rank and region, summed over the
 * region's threads, one table per LIKWID group.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "read/likwid_read.h"

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

/* A table of nr x ncol strdup'd cells (NULL: out of memory, printed "?"). */
static char ***cells_new(size_t nr, size_t ncol) {
  char ***cell = calloc(nr, sizeof *cell);
  for (size_t i = 0; cell && i < nr; i++)
    if (!(cell[i] = calloc(ncol, sizeof **cell))) {
      while (i--) free(cell[i]);
      free(cell);
      return NULL;
    }
  return cell;
}

/* Prints the table (row 0 the header; the columns whose bit is set in
 * `left` left-aligned, the others right-aligned) and frees it. */
static void cells_print(char ***cell, size_t nr, size_t ncol, unsigned left) {
  size_t *w = calloc(ncol, sizeof *w);
  for (size_t i = 0; cell && w && i < nr; i++)
    for (size_t c = 0; c < ncol; c++) {
      size_t cw = cell[i][c] ? sp_cli_width(cell[i][c]) : 1;
      if (cw > w[c]) w[c] = cw;
    }
  for (size_t i = 0; cell && w && i < nr; i++) {
    for (size_t c = 0; c < ncol; c++) {
      if (c) fputs("  ", stdout);
      int right = !(c < 32 && (left >> c) & 1);
      sp_cli_pad(stdout, cell[i][c] ? cell[i][c] : "?", c + 1 == ncol && !right ? 0 : w[c], right);
    }
    fputc('\n', stdout);
  }
  for (size_t i = 0; cell && i < nr; i++) {
    for (size_t c = 0; c < ncol; c++) free(cell[i][c]);
    free(cell[i]);
  }
  free(cell);
  free(w);
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
    char ***cell = cells_new(nc + 1, ncol);
    for (size_t i = 0; cell && i <= nc; i++)
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
      }
    printf("\nperf_events (per region, summed over ranks: total and mean per call)\n");
    cells_print(cell, nc + 1, ncol, 1u);
  }
  free(cr);
  sp_counter_rows_free(rows, n);
  return 0;
}

/* Rows of one LIKWID group (same group name and event list) print together. */
static int same_events(const struct sp_likwid_row *a, const struct sp_likwid_row *b) {
  if (strcmp(a->group_name, b->group_name) || a->nevents != b->nevents) return 0;
  for (size_t e = 0; e < a->nevents; e++)
    if (strcmp(a->event_names[e], b->event_names[e])) return 0;
  return 1;
}

int sp_cli_print_likwid(const char *cmd, sp_results *r, const sp_filter *f) {
  struct sp_likwid_row *rows;
  size_t n;
  if (sp__results_likwid(r, &rows, &n) != SP_OK) return sp_cli_error(cmd, "%s", sp_last_error());
  size_t *pick = calloc(n + 1, sizeof *pick), np = 0;
  if (!pick) {
    sp__likwid_rows_free(rows, n);
    return sp_cli_error(cmd, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    if (sp_filter_match_region(f, rows[i].region) && sp_filter_match_rank(f, rows[i].rank)) pick[np++] = i;
  char *done = calloc(np + 1, 1);
  for (size_t a = 0; done && a < np; a++) {
    if (done[a]) continue;
    const struct sp_likwid_row *g = &rows[pick[a]];
    size_t nr = 0;
    for (size_t b = a; b < np; b++) nr += !done[b] && same_events(g, &rows[pick[b]]);
    size_t ncol = 6 + g->nevents;
    char ***cell = cells_new(nr + 1, ncol);
    static const char *const head[] = {"rank", "region", "source", "threads", "calls", "time [s]"};
    for (size_t c = 0; cell && c < ncol; c++) cell[0][c] = strdup(c < 6 ? head[c] : g->event_names[c - 6]);
    size_t i = 1;
    for (size_t b = a; b < np; b++) {
      const struct sp_likwid_row *x = &rows[pick[b]];
      if (done[b] || !same_events(g, x)) continue;
      done[b] = 1;
      for (size_t c = 0; cell && c < ncol; c++) {
        char buf[320];
        if (c == 0) snprintf(buf, sizeof buf, "%lld", (long long)x->rank);
        else if (c == 1) snprintf(buf, sizeof buf, "%s", x->region);
        else if (c == 2) snprintf(buf, sizeof buf, "%s", x->source);
        else if (c == 3) snprintf(buf, sizeof buf, "%zu", x->nthreads);
        else if (c == 4) snprintf(buf, sizeof buf, "%lld", (long long)x->calls);
        else if (c == 5) snprintf(buf, sizeof buf, "%.6g", x->time_max);
        else if (x->events[c - 6] == (double)(int64_t)x->events[c - 6] && x->events[c - 6] < 1e15)
          snprintf(buf, sizeof buf, "%.0f", x->events[c - 6]); /* counts */
        else snprintf(buf, sizeof buf, "%.6g", x->events[c - 6]);
        cell[i][c] = strdup(buf);
      }
      i++;
    }
    printf("\nlikwid group %s (per rank and region, summed over threads; time: the slowest thread's)\n",
           g->group_name[0] ? g->group_name : "(unnamed)");
    cells_print(cell, nr + 1, ncol, 1u << 1 | 1u << 2);
  }
  free(done);
  free(pick);
  sp__likwid_rows_free(rows, n);
  return 0;
}
