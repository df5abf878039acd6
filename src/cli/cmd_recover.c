/* cmd_recover.c - `scope-profiler recover SPILL [-o FILE]`: turn the spill
 * file a crashed run left beside its output (<file_path>.spill, written from
 * a fatal-signal handler) into a normal HDF5 profile (schema 3 unless the
 * run asked for 2). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/error.h"
#include "core/spill.h"

static const char usage[] =
    "usage: scope-profiler recover SPILL [-o FILE]\n"
    "\n"
    "Rebuild the profile of a run that died on a fatal signal (SIGSEGV, SIGBUS, SIGFPE,\n"
    "SIGABRT, SIGILL) from the spill file it wrote beside its output. The events recorded\n"
    "before the crash are written as a normal HDF5 profile; its metadata has\n"
    "recovered_from_signal (the signal number) and recovery_complete (0 when the spill\n"
    "itself was cut short).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  where to write (default: the crashed run's file_path)\n"
    "  -h, --help         this help\n"
    "\n"
    "examples:\n"
    "  scope-profiler recover profiling_data.h5.spill\n"
    "  scope-profiler recover run.h5.spill -o recovered.h5\n";

int sp_cmd_recover(int argc, char **argv) {
  const char *spill = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "scope-profiler recover: unknown option %s\n%s", argv[i], usage);
      return 2;
    } else if (!spill) {
      spill = argv[i];
    } else {
      fprintf(stderr, "scope-profiler recover: one spill file at a time (got %s and %s)\n", spill, argv[i]);
      return 2;
    }
  }
  if (!spill) {
    fprintf(stderr, "scope-profiler recover: give the spill file to recover\n%s", usage);
    return 2;
  }
  char written[4096] = "";
  sp_status st = sp__spill_recover(spill, out, written, sizeof written);
  if (st != SP_OK) {
    fprintf(stderr, "scope-profiler recover: %s\n", sp_last_error());
    return 2;
  }
  printf("recovered %s -> %s\n", spill, written);
  return 0;
}
