/* fuzz_walk.h - what the reader fuzz targets (fuzz_reader.c, fuzz_native.c)
 * do with a profile they opened: walk it the way the CLI walks one, so that
 * the lazy paths run too: metadata, regions, sources, rows and event slices,
 * per-rank events, statistics with percentiles and exclusive time, call
 * stacks with and without a filter, the call-path tree, every exporter, the
 * lane tables. Also what every input starts and ends with (walk_setup,
 * walk_opened), so that the targets differ only in how they open.
 */
#ifndef SP_FUZZ_WALK_H
#define SP_FUZZ_WALK_H

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

#include "scope_profiler/reader.h"

#define WALK_MAX_EVENTS 100000
#define WALK_MAX_RANKS 16
#define WALK_MAX_ROWS 256

static FILE *sink;

/* Before each input: the exporters write to /dev/null, and HDF5 keeps its
 * error stack to itself (a hostile file would fill the log). */
static void walk_setup(void) {
  if (sink) return;
  sink = fopen("/dev/null", "w");
  if (!sink) abort();
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void walk_events(sp_results *r) {
  size_t nrows = sp_results_num_rows(r);
  for (size_t row = 0; row < nrows && row < WALK_MAX_ROWS; row++) {
    sp_row_info info;
    if (sp_results_row_info(r, row, &info) != SP_OK) continue;
    int64_t s[7], e[7], c[7], p[7], t[7];
    for (uint64_t first = 0; first < info.count; first += 7) {
      size_t n = info.count - first < 7 ? (size_t)(info.count - first) : 7;
      if (sp_results_row_read(r, row, first, n, s, e, c, p, t) != SP_OK) break;
    }
  }
  size_t nranks = sp_results_num_ranks(r);
  for (size_t reg = 0; reg < sp_results_num_regions(r) && reg < WALK_MAX_ROWS; reg++)
    for (size_t k = 0; k < nranks && k < WALK_MAX_RANKS; k++) {
      sp_events ev;
      if (sp_results_events(r, reg, sp_results_rank(r, k), &ev) == SP_OK) sp_events_free(&ev);
    }
  for (size_t k = 0; k < nranks && k < WALK_MAX_RANKS; k++) {
    sp_call *calls = NULL;
    size_t n = 0, overlaps = 0;
    if (sp_results_call_stack(r, sp_results_rank(r, k), NULL, &calls, &n, &overlaps) == SP_OK)
      free(calls);
  }
  sp_filter *f = NULL;
  if (sp_filter_create(&f) == SP_OK) {
    (void)sp_filter_include(f, "s");
    (void)sp_filter_exclude(f, "step");
    (void)sp_filter_ranks(f, "0-1");
    sp_call *calls = NULL;
    size_t n = 0;
    if (sp_results_call_stack(r, 0, f, &calls, &n, NULL) == SP_OK) free(calls);
    sp_tree_node *nodes = NULL;
    if (sp_results_call_tree(r, f, &nodes, &n) == SP_OK) free(nodes);
    sp_filter_free(f);
  }
  sp_tree_node *nodes = NULL;
  size_t n = 0;
  if (sp_results_call_tree(r, NULL, &nodes, &n) == SP_OK) free(nodes);
  static const sp_export_format formats[] = {SP_EXPORT_CHROME_TRACE, SP_EXPORT_SPEEDSCOPE,
                                             SP_EXPORT_FOLDED,       SP_EXPORT_GANTT_CSV,
                                             SP_EXPORT_FLAME_CSV,    SP_EXPORT_DURATIONS_CSV};
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    sp_export_stats st;
    (void)sp_results_export(r, formats[i], NULL, NULL, sink, &st);
  }
}

static void walk(sp_results *r) {
  (void)sp_results_schema(r);
  (void)sp_results_source_format(r);
  const sp_thread_info *th = NULL;
  const sp_task_info *tk = NULL;
  size_t nth = 0, ntk = 0;
  if (sp_results_thread_table(r, &th, &nth) == SP_OK)
    for (size_t i = 0; i < nth; i++) fputs(th[i].name, sink);
  if (sp_results_task_table(r, &tk, &ntk) == SP_OK)
    for (size_t i = 0; i < ntk; i++) fprintf(sink, "%s%s%s", tk[i].kind, tk[i].name, tk[i].coro_name);
  (void)sp_results_layout(r);
  (void)sp_results_label(r);
  (void)sp_results_display_label(r);
  (void)sp_results_has_threads(r);
  (void)sp_results_has_tasks(r);
  (void)sp_results_has_call_ids(r);
  for (size_t i = 0; i < sp_results_num_metadata(r); i++) {
    const sp_metadata_entry *m = sp_results_metadata_at(r, i);
    if (m && m->text) fputs(m->text, sink);
  }
  for (size_t i = 0; i < sp_results_num_regions(r); i++) {
    const char *file = NULL, *text = NULL;
    int64_t line;
    size_t idx;
    const char *name = sp_results_region_name(r, i);
    if (!name || sp_results_find_region(r, name, &idx) != SP_OK) abort(); /* names are unique */
    (void)sp_results_region_source(r, i, &file, &line, &text);
    (void)sp_results_region_tags(r, i);
    (void)sp_results_region_num_ranks(r, i);
    sp_region_stats s;
    (void)sp_results_region_stats(r, i, NULL, 0, &s);
  }
  int64_t t0;
  (void)sp_results_min_start(r, &t0);
  sp_results *one[1] = {r};
  (void)sp_write_metadata_json(one, 1, NULL, sink);
  if (sp_results_num_events(r) > WALK_MAX_EVENTS) return;
  for (size_t i = 0; i < sp_results_num_regions(r) && i < WALK_MAX_ROWS; i++) {
    sp_region_stats s;
    (void)sp_results_region_stats(r, i, NULL, SP_STATS_PERCENTILES | SP_STATS_OWN, &s);
    if (sp_results_num_ranks(r))
      (void)sp_results_region_rank_stats(r, i, sp_results_rank(r, 0), SP_STATS_OWN, &s);
  }
  (void)sp_write_region_statistics_json(one, 1, NULL, NULL, NULL, sink);
  (void)sp_write_durations_csv(one, 1, NULL, NULL, sink);
  walk_events(r);
}

/* After the open: a profile that opened is walked and freed; an open that
 * failed must leave nothing behind and say why. */
static void walk_opened(sp_status st, sp_results *r) {
  if (st == SP_OK) {
    walk(r);
    sp_results_free(r);
  } else if (r != NULL || sp_last_error()[0] == '\0') {
    fprintf(stderr, "a failed open left results behind or gave no message\n");
    abort();
  }
}

#endif
