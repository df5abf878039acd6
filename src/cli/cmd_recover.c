/* cmd_recover.c - `scope-profiler recover SPILL... [-o FILE]`: turn the
 * spill file a crashed run left beside its output (<file_path>.spill, written
 * from a fatal-signal handler) into a normal HDF5 profile (schema 3 unless
 * the run asked for 2); the spills of an MPI job's ranks
 * (<file_path>.rank<R>.spill) into the job's one file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/error.h"
#include "core/spill.h"

static const char usage[] =
    "usage: scope-profiler recover SPILL... [-o FILE]\n"
    "\n"
    "Rebuild the profile of a run that died on a fatal signal (SIGSEGV, SIGBUS, SIGFPE,\n"
    "SIGABRT, SIGILL) from the spill file it wrote beside its output. The events recorded\n"
    "before the crash are written as a normal HDF5 profile, the calls still open ending at\n"
    "the crash (cut_short_call_ids); its metadata has recovered_from_signal (the signal\n"
    "number) and recovery_complete (0 when the spill itself was cut short). Given the\n"
    "spills of every rank of an MPI job (<file_path>.rank<R>.spill, also what a rank\n"
    "writes on a termination signal), it writes the job's one file with their ranks;\n"
    "recovery_complete is then 1 only when every rank's spill was whole.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  where to write (default: the crashed run's file_path)\n"
    "  -h, --help         this help\n"
    "\n"
    "examples:\n"
    "  scope-profiler recover profiling_data.h5.spill\n"
    "  scope-profiler recover run.h5.spill -o recovered.h5\n"
    "  scope-profiler recover job.h5.rank*.spill\n";

int sp_cmd_recover(int argc, char **argv) {
  const char *out = NULL;
  const char **spills = calloc((size_t)argc + 1, sizeof *spills);
  size_t nspills = 0;
  if (!spills) {
    fprintf(stderr, "scope-profiler recover: out of memory\n");
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      free(spills);
      return 0;
    } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "scope-profiler recover: unknown option %s\n%s", argv[i], usage);
      free(spills);
      return 2;
    } else {
      spills[nspills++] = argv[i];
    }
  }
  if (!nspills) {
    fprintf(stderr, "scope-profiler recover: give the spill file to recover\n%s", usage);
    free(spills);
    return 2;
  }
  struct sp_recover_info info;
  sp_status st = sp__spill_recover_run(spills, nspills, out, &info);
  if (st != SP_OK) {
    fprintf(stderr, "scope-profiler recover: %s\n", sp_last_error());
    sp__recover_info_free(&info);
    free(spills);
    return 2;
  }
  if (info.published)
    printf("nothing to recover: the run was published complete as %s before the crash\n", info.written);
  else if (nspills == 1)
    printf("recovered %s -> %s\n", spills[0], info.written);
  else
    printf("recovered %zu ranks' spills -> %s\n", nspills, info.written);
  sp__recover_info_free(&info);
  free(spills);
  return 0;
}
