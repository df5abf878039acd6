/* many_rows.c - writes a synthetic timeline file of many ranks or many
 * regions straight through the serial writer (sp_run), for measuring the
 * readers and `report` where their cost is per row rather than per call
 * (BENCHMARKS.md, "Reading many rows"). One sp_run per rank, as an MPI
 * job's ranks are written (sp__h5_write_parts).
 *
 * Each rank runs `steps` time steps; a step is one call of region 0 with
 * one call of each other region inside it, one after another, so every
 * (rank, region) row has `steps` calls, in start order. Ranks are shifted
 * by a few ns so that no two are identical. --ids writes call and parent
 * ids (else the readers nest by containment).
 *
 *   many_rows OUT.h5 RANKS REGIONS STEPS [--ids]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "output/output.h"
#include "scope_profiler.h"

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: many_rows OUT.h5 RANKS REGIONS STEPS [--ids]\n");
    return 2;
  }
  const char *out = argv[1];
  long ranks = atol(argv[2]), regions = atol(argv[3]), steps = atol(argv[4]);
  int ids = argc > 5 && strcmp(argv[5], "--ids") == 0;
  if (ranks < 1 || regions < 2 || steps < 1) {
    fprintf(stderr, "many_rows: RANKS >= 1, REGIONS >= 2 and STEPS >= 1 are needed\n");
    return 2;
  }
  size_t per = (size_t)regions * (size_t)steps; /* calls of one rank */
  struct sp_run *parts = calloc((size_t)ranks, sizeof *parts);
  char **names = calloc((size_t)regions, sizeof *names);
  if (!parts || !names) {
    fprintf(stderr, "many_rows: out of memory\n");
    return 1;
  }
  for (long g = 0; g < regions; g++) {
    names[g] = malloc(32);
    snprintf(names[g], 32, "region_%05ld", g);
  }
  /* a step: region 0 over [t, t + 10 (regions - 1) + 5], region g inside
   * it over [t + 10 (g - 1) + 2, + 7] */
  const int64_t step_len = 10 * (int64_t)(regions - 1) + 10;
  for (long r = 0; r < ranks; r++) {
    int64_t *start = malloc(per * sizeof *start), *end = malloc(per * sizeof *end);
    int64_t *cid = malloc(per * sizeof *cid), *pid = malloc(per * sizeof *pid);
    struct sp_row *rows = calloc((size_t)regions, sizeof *rows);
    if (!start || !end || !cid || !pid || !rows) {
      fprintf(stderr, "many_rows: out of memory\n");
      return 1;
    }
    size_t at = 0;
    for (long g = 0; g < regions; g++) {
      struct sp_row *row = &rows[g];
      *row = (struct sp_row){.region = (uint32_t)g,
                             .rank = (uint32_t)r,
                             .offset = at,
                             .count = (uint64_t)steps,
                             .aggregate_count = steps,
                             .source_line = -1,
                             .exclusive_total = -1,
                             .source_file = "",
                             .source_text = "",
                             .tags_json = "[]"};
      struct sp_summary *su = &row->stats;
      for (long s = 0; s < steps; s++, at++) {
        int64_t t = 1000 + r * 3 + s * step_len;
        int64_t b = g ? t + 10 * (g - 1) + 2 : t, e = g ? b + 7 : t + step_len - 5;
        /* ids: per rank, a step's region-0 call then its children */
        int64_t base = (int64_t)s * regions;
        start[at] = b;
        end[at] = e;
        cid[at] = base + g;
        pid[at] = g ? base : -1;
        int64_t d = e - b;
        su->total += d;
        if (s == 0) su->minimum = su->maximum = su->first = d, su->start_minimum = b;
        su->last = d;
        su->end_maximum = e;
      }
      su->mean = (double)su->total / (double)steps;
    }
    parts[r] = (struct sp_run){.layout = "columnar",
                               .names = names,
                               .nnames = (size_t)regions,
                               .rows = rows,
                               .nrows = (size_t)regions,
                               .start = start,
                               .end = end,
                               .nevents = per};
    if (ids) {
      parts[r].call_id = cid;
      parts[r].parent_id = pid;
    }
  }
  struct sp_config cfg;
  sp_setup_args a = {0};
  if (ranks > INT32_MAX || sp__config_resolve(&cfg, &a) != SP_OK ||
      sp__h5_write_parts(parts, (int)ranks, &cfg, out) != SP_OK) {
    fprintf(stderr, "many_rows: %s\n", sp_last_error());
    return 1;
  }
  sp__config_free(&cfg);
  printf("%s: %ld ranks x %ld regions x %ld steps = %zu calls\n", out, ranks, regions, steps, per * (size_t)ranks);
  return 0;
}
