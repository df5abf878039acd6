/* timesteps.h - the recorded workload that bench/finalize.c,
 * bench/reader.c and bench/publish.c share, so that their figures are of
 * the same file: a time-step loop of nested calls (step > one of three
 * solvers > 30 kernels) over 32 interned names, one thread, timeline mode,
 * 1 MiB buffers. Header-only: each bench is one source file.
 */
#ifndef SP_BENCH_TIMESTEPS_H
#define SP_BENCH_TIMESTEPS_H

#include <stdio.h>
#include <stdlib.h>

#include "scope_profiler.h"

enum { TS_NREG = 32 };

static inline void ts_regions(sp_region regs[TS_NREG]) {
  char name[32];
  for (int i = 0; i < TS_NREG; i++) {
    snprintf(name, sizeof name, "region_%02d", i);
    regs[i] = sp_region_intern(name);
  }
}

/* A manager set up to write `out` (with one more setting `extra`, or
 * NULL); a bench cannot go on without one, so a failure ends the program
 * with setup's message. */
static inline sp_manager *ts_manager_with(const char *prog, const char *out, const char *extra) {
  char fp[4200];
  snprintf(fp, sizeof fp, "file_path=%s", out);
  const char *ov[] = {fp, "buffer_limit=1048576", extra, NULL};
  sp_manager *m = sp_manager_create();
  if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) {
    fprintf(stderr, "%s: setup: %s\n", prog, sp_last_error());
    exit(1);
  }
  return m;
}

static inline sp_manager *ts_manager(const char *prog, const char *out) { return ts_manager_with(prog, out, NULL); }

/* Records `events` calls (a step cut short keeps the nesting whole);
 * returns how many it recorded. */
static inline long ts_record(sp_manager *m, const sp_region *regs, long events) {
  long done = 0;
  for (long step = 0; done < events; step++) {
    sp_region_begin(m, regs[0]);
    sp_region_begin(m, regs[1 + step % 3]);
    for (int k = 0; k < 30 && done + 2 < events; k++) {
      sp_region_begin(m, regs[4 + (k + step) % (TS_NREG - 4)]);
      sp_region_end(m, regs[4 + (k + step) % (TS_NREG - 4)]);
      done++;
    }
    sp_region_end(m, regs[1 + step % 3]);
    sp_region_end(m, regs[0]);
    done += 2;
  }
  return done;
}

#endif
