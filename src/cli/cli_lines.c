/* cli_lines.c - `inspect --lines REGION`: the line-profile records of one
 * region printed as line_profiler's tables (common/line_table.c, the same
 * printer as finalize's verbose output), rank by rank. */
#include <stdio.h>
#include <string.h>

#include "cli/cli_lines.h"
#include "cli/cli_util.h"
#include "common/line_table.h"

int sp_cli_print_lines(FILE *out, sp_results *r, const char *region, const char *cmd) {
  const sp_line_profile *v;
  size_t n;
  if (sp_results_line_profiles(r, &v, &n) != SP_OK)
    return sp_cli_error(cmd, "%s: %s", sp_results_path(r) ? sp_results_path(r) : "profile", sp_last_error());
  size_t shown = 0, nranks = 0;
  int64_t last_rank = -1;
  for (size_t i = 0; i < n; i++)
    if (v[i].rank != last_rank) {
      nranks++;
      last_rank = v[i].rank;
    }
  last_rank = -1;
  for (size_t i = 0; i < n; i++) {
    if (!v[i].region || strcmp(v[i].region, region) != 0) continue;
    if (!shown) sp__line_table_header(out, v[i].unit);
    if (nranks > 1 && v[i].rank != last_rank) fprintf(out, "Rank %lld\n", (long long)v[i].rank);
    last_rank = v[i].rank;
    struct sp_line_table t = {v[i].region, v[i].filename, v[i].function, v[i].first_lineno, v[i].unit, v[i].n,
                              v[i].line_numbers, v[i].hits, v[i].times, v[i].addresses, v[i].module, v[i].source,
                              v[i].source_first_lineno, v[i].inlined_into, v[i].ninlined};
    sp__line_table_print(out, &t, 1);
    shown++;
  }
  if (shown) return 0;
  if (n == 0)
    return sp_cli_error(cmd, "%s has no line profile; record one with use_line_profiler = true "
                        "(scope-profiler run --line-profile)", sp_results_path(r) ? sp_results_path(r) : "the profile");
  /* Name the regions that have records. */
  fprintf(stderr, "scope-profiler %s: region '%s' has no line profile; regions with one:", cmd, region);
  for (size_t i = 0; i < n; i++) {
    int dup = 0;
    for (size_t k = 0; k < i && !dup; k++) dup = v[k].region && v[i].region && !strcmp(v[k].region, v[i].region);
    if (!dup) fprintf(stderr, " %s", v[i].region ? v[i].region : "(unnamed)");
  }
  fputc('\n', stderr);
  return 2;
}
