/* faults_app.c - the instrumented program of the disk-fault tests
 * (tests/integration/test_disk_faults.sh): it records 50 "work" calls inside
 * one "phase" call, writing to the file named on the command line, and
 * finalizes with return_results, so a test can break the file system under
 * it and check what the writer did and that the results survived in memory.
 *
 *   app-faults FILE [--wait]
 *
 * --wait prints "ready" after setup and waits for a line on stdin before
 * recording, so the test can replace or remove things at the output path
 * during the run. Prints the finalize status and message, then what the
 * in-memory results hold; exits 0 when those results are complete (50 work
 * calls), whatever finalize returned, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "scope_profiler.h"
#include "scope_profiler/reader.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: app-faults FILE [--wait]\n");
    return 2;
  }
  /* Line by line: a crash at exit (HDF5 after a failed close) must not eat
   * what was already printed. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  char fp[4200];
  snprintf(fp, sizeof fp, "file_path=%s", argv[1]);
  const char *ov[] = {fp, NULL};
  sp_setup_args setup = {.overrides = ov};
  if (sp_setup(&setup) != SP_OK) {
    printf("setup: %s\n", sp_last_error());
    return 1;
  }
  if (argc > 2 && !strcmp(argv[2], "--wait")) {
    char line[64];
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) return 1;
  }
  sp_region phase = sp_region_intern("phase"), work = sp_region_intern("work");
  sp_region_begin(SP_DEFAULT, phase);
  for (int i = 0; i < 50; i++) {
    sp_region_begin(SP_DEFAULT, work);
    sp_region_end(SP_DEFAULT, work);
  }
  sp_region_end(SP_DEFAULT, phase);

  sp_finalize_args fin = {.return_results = 1};
  sp_results *res = NULL;
  sp_status st = sp_finalize(&fin, &res);
  printf("finalize: %s\n", sp_status_name(st));
  if (st != SP_OK) printf("error: %s\n", sp_last_error());
  size_t idx;
  sp_region_stats s = {0};
  int ok = res && sp_results_find_region(res, "work", &idx) == SP_OK &&
           sp_results_region_stats(res, idx, NULL, 0, &s) == SP_OK && s.count == 50;
  printf("results in memory: %s\n", ok ? "50 work calls" : "missing");
  sp_results_free(res);
  return ok ? 0 : 1;
}
