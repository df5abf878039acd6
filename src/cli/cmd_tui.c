/* cmd_tui.c - `scope-profiler tui FILE`: browse a profile in the terminal
 * (region table, call tree, ranks, threads, calls over time, search), for a
 * login node over ssh where no browser runs. The browser is src/tui/.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_opts.h"
#include "cli/commands.h"
#include "tui/tui.h"

#define CMD "tui"

static const char about[] =
    "Browse a profile in the terminal: the region table (sorted by total, own or\n"
    "calls), the call tree (folded and unfolded), the selected region per rank and\n"
    "per thread, its calls over time as a sparkline, and a search by name. Events\n"
    "are read only when a view needs them, so large files open at once.\n";

static const char epilog[] =
    "Keys: 1-4 or Tab switch views, arrows move, s t o c sort, Enter folds, / searches,\n"
    "n finds the next match, ? shows all keys, q quits.\n"
    "\n"
    "examples:\n"
    "  scope-profiler tui profile.h5\n"
    "  scope-profiler tui big.h5 --ranks 0-3 --exclude mpi_\n"
    "\n"
    "exit status: 0 success, 2 usage or input error.\n";

struct opts {
  struct sp_cli_strs files, include, exclude, ranks;
};

static const struct sp_cli_opt opt_rows[] = {
    SP_CLI_OPT_FILTERS(struct opts, "ranks to aggregate, e.g. 0,2,4-7 (default: all)"),
};

static const struct sp_cli_spec spec = {CMD, "FILE [options]", about, opt_rows,
                                        SP_CLI_NROWS(opt_rows), offsetof(struct opts, files),
                                        "no FILE given", epilog};

int sp_cmd_tui(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct sp_cli_strs files = {0};
  sp_results *r = NULL;
  sp_filter *f = NULL;
  int rc = sp_cli_parse(&spec, argc, argv, &o);
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
    goto out;
  }
  if ((rc = sp_cli_expand_files(CMD, &o.files, &files))) goto out;
  if (files.n != 1) {
    rc = sp_cli_usage_error(CMD, "tui browses one file at a time (got %zu)", files.n);
    goto out;
  }
  if ((rc = sp_cli_filter(CMD, &o.include, &o.exclude, &o.ranks, &f))) goto out;
  if ((rc = sp_cli_open(CMD, files.v[0], &r))) goto out;
  if ((rc = sp_cli_check_ranks(CMD, f, r))) goto out;
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    rc = sp_cli_error(CMD, "needs a terminal (stdin and stdout); for text output use "
                           "`scope-profiler inspect %s` (or --tree)", files.v[0]);
    goto out;
  }
  rc = sp_tui_run(r, files.v[0], f);
out:
  sp_results_free(r);
  sp_filter_free(f);
  sp_cli_strs_free(&files);
  sp_cli_opts_free(&spec, &o);
  return rc;
}
