/* main.c - the scope-profiler command-line tool: dispatches to a subcommand
 * from the table below. The CLI uses only the library (public API plus the
 * internal headers of config/ and read/), never the other way round. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "output/filters.h"
#include "scope_profiler.h"

static const struct sp_cli_command commands[] = {
    {"config", sp_cmd_config, "check or show a configuration (TOML, environment, defaults)"},
    {"inspect", sp_cmd_inspect, "show a profile's metadata, region statistics, call tree or source"},
    {"diff", sp_cmd_diff, "compare the regions of two profiles"},
    {"check", sp_cmd_check, "fail (exit 1) when a candidate profile regressed against a baseline"},
    {"export", sp_cmd_export, "write chrome-trace, speedscope, folded, csv, json (profile), region-statistics or a flame graph SVG"},
    {"report", sp_cmd_report, "write a self-contained HTML report with charts (and SVG, JSON)"},
    {"tui", sp_cmd_tui, "browse a profile in the terminal (regions, call tree, ranks, threads)"},
    {"run", sp_cmd_run, "profile a program without editing it: scope-profiler run -- ./app args"},
    {"recover", sp_cmd_recover, "turn the spill file of a crashed run into its HDF5 profile"},
    {"memory", sp_cmd_memory, "summarise an allocation capture (use_memray): peak, regions, sites, leaks"},
    {"import-native", sp_cmd_import_native, "merge native traces (.spt) and per-rank files into one profile"},
};

static void usage(FILE *out) {
  fprintf(out,
          "usage: scope-profiler <command> [options]\n\n"
          "Region profiler for scientific and HPC programs (version %s).\n\ncommands:\n",
          sp_version_string());
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nRun `scope-profiler <command> --help` for a command's options.\n");
}

int main(int argc, char **argv) {
  /* Files written with lzf or zstd open without HDF5_PLUGIN_PATH: the
   * library's own filters are registered for every command. */
  sp__filters_register();
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("scope-profiler %s\n", sp_version_string());
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "scope-profiler: unknown command '%s'. Run `scope-profiler --help` for the list.\n", argv[1]);
  return 2;
}
