/* report_export.c - `scope-profiler export flamegraph`: the report's flame
 * graph (call paths merged over the selected ranks, width = total time) as
 * one standalone SVG, from the same model and chart code as report.html, so
 * the two always agree.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

int rp_export_flamegraph(sp_results *r, const char *path, const sp_filter *f, int width,
                         const char *cmd, FILE *out, uint64_t *calls) {
  struct rp_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.title = "flame graph";
  ro.x_field = "num_ranks";
  ro.width = width;
  ro.max_bars = 8000;
  struct rp_model m;
  memset(&m, 0, sizeof m);
  struct sp_cli_progress prog;
  struct rp_file file;
  memset(&file, 0, sizeof file);
  struct rp_svg svg;
  memset(&svg, 0, sizeof svg);
  file.r = r;
  file.path = path;
  file.label = (char *)sp_results_display_label(r);
  m.o = &ro;
  m.f = f;
  m.prog = &prog;
  m.files = &file;
  m.nfiles = 1;
  sp_cli_progress_start(&prog, "reading");
  int rc = rp_load_file(&m, &file, cmd);
  if (!rc) rc = rp_assign_regions(&m, cmd);
  if (!rc) m.ptotal = rp_work(&m, &file);
  if (!rc) rc = rp_load_flame(&m, &file, cmd);
  sp_cli_progress_end(&prog);
  if (!rc && m.nregions == 0) rc = sp_cli_error(cmd, "no regions match the selected filters");
  if (!rc) {
    int crc = rp_chart_flamegraph(&m, &svg);
    if (crc) rc = sp_cli_error(cmd, "out of memory");
    else if (!svg.svg) rc = sp_cli_error(cmd, "%s: no flame graph: %s", path, svg.why);
  }
  if (!rc && fwrite(svg.svg, 1, svg.len, out) != svg.len) rc = sp_cli_error(cmd, "write failed");
  if (!rc && calls) {
    *calls = 0;
    for (size_t i = 0; i < file.ntree; i++) *calls += file.tree[i].count;
  }
  free(svg.title);
  free(svg.svg);
  free(svg.why);
  file.label = NULL; /* owned by r */
  file.r = NULL;
  rp_free_file(&file);
  for (size_t i = 0; i < m.nregions; i++) free(m.regions[i].name);
  free(m.regions);
  free(m.all_ranks);
  return rc;
}
