/* tests/setup_util.h - what the unit tests that set the profiler up share:
 * an environment without SCOPE_PROFILER_* variables (so the developer's own
 * settings cannot leak into a case), a file written from a string (config
 * files), a manager set up with overrides, and a busy loop the optimizer
 * keeps. Header-only beside harness.h, whose asserts end a failing case. */
#ifndef SP_TEST_SETUP_UTIL_H
#define SP_TEST_SETUP_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scope_profiler.h"

extern char **environ;

/* Unsets every SCOPE_PROFILER_* variable; launcher_ranks: also the rank
 * variables of mpirun, Slurm's PMI and PMIx, which rank detection reads. */
static inline void sp_test_clean_env(int launcher_ranks) {
  static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
  for (int again = 1; again;) {
    again = 0;
    for (char **e = environ; *e; e++) {
      int match = strncmp(*e, "SCOPE_PROFILER_", 15) == 0;
      for (size_t r = 0; launcher_ranks && !match && r < sizeof ranks / sizeof ranks[0]; r++)
        match = strncmp(*e, ranks[r], strlen(ranks[r])) == 0;
      if (!match) continue;
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
      unsetenv(name);
      again = 1;
      break;
    }
  }
}

static inline void sp_test_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ASSERT(f);
  fputs(text, f);
  fclose(f);
}

static inline sp_manager *sp_test_setup_with(const char *const *overrides) {
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  sp_setup_args a = {.overrides = overrides};
  ASSERT_OK(sp_manager_setup(m, &a));
  return m;
}

static inline void sp_test_busy(int n) {
  volatile double x = 1;
  for (int i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
}

#endif
