/* autorun.c - the half of `scope-profiler run` that lives inside the
 * program it launches.
 *
 * The launcher (src/cli/cmd_run.c) puts the settings in the environment,
 * preloads this library (or finds it already linked) and sets
 * SCOPE_PROFILER_RUN to the name of the whole-program root region. A
 * constructor here then sets up the default manager before main runs and
 * opens the root region; at exit (or at MPI_Finalize under MPI, where the
 * job's file is written collectively) the root is closed and the run
 * finalized, with the summary and the file's location printed unless
 * SCOPE_PROFILER_RUN_QUIET is set. The variables are removed from the
 * environment, so programs this one starts are not sessions of their own.
 *
 * The run belongs to the launcher: a setup of the default manager by the
 * program itself joins it (the launcher's environment already outranks the
 * program's options), and the program's finalize is deferred to exit (it
 * hands back the results recorded so far when asked). This file is the
 * launcher's voice in the program: it prints the summary's last line and
 * the reason a run could not start.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/error.h"
#include "core/autorun.h"
#include "core/core.h"
#include "core/mpi_hooks.h"

static int owned;     /* the default manager's run is the launcher's */
static int finishing; /* our own finalize is running */
static int quiet;
static sp_scope root;
static sp_region root_region; /* interned before setup: setup's own work is the program's too */
static int starting;
static char root_name[256];
/* A copy of the program's stdout taken before main: programs close their
 * stdout at exit (coreutils' close_stdout) before the summary is printed. */
static int out_fd = -1;

int sp__autorun_owns(const struct sp_manager *m) { return owned && m == SP_DEFAULT && !finishing; }

sp_region sp__autorun_root(void) { return owned || starting ? root_region : 0; }

void sp__autorun_end_root(void) {
  if (owned) sp_scope_end(&root);
}

/* One rank speaks: rank 0, or the only process. */
static int speaks(void) {
  const struct sp_mpi_ops *mpi = sp__mpi_ops && sp__mpi_ops->in_use() ? sp__mpi_ops : NULL;
  return mpi ? mpi->rank() == 0 : sp__launcher_rank() <= 0;
}

sp_status sp__autorun_finish(void) {
  if (!owned || finishing) return SP_OK;
  struct sp_manager *m = SP_DEFAULT;
  if (!m->run_active) return SP_OK;
  sp__autorun_end_root();
  finishing = 1;
  FILE *out = NULL;
  if (!quiet && out_fd >= 0) out = fdopen(out_fd, "w");
  if (!quiet && !out) out = stderr;
  if (out != stderr) out_fd = -1; /* the stream owns it now */
  sp_finalize_args fa = {.verbose = !quiet, .summary_stream = out};
  sp_status st = sp_manager_finalize(m, &fa, NULL);
  if (out && speaks()) {
    if (st == SP_OK || st == SP_ERR_OPEN_SCOPES) {
      if (!m->cfg.deactivate_file_output && m->output_path)
        fprintf(out, "scope-profiler: profile of %s written to %s\n", root_name, m->output_path);
    } else {
      sp__message(SP_MESSAGE_ERROR, "the profile of %s was not written: %s", root_name, sp_last_error());
    }
  }
  if (out && out != stderr) fclose(out);
  else if (out) fflush(out);
  finishing = 0;
  owned = 0;
  return st;
}

static void at_exit(void) { (void)sp__autorun_finish(); }

/* The threads the program starts (run_preload.c): attached like the threads
 * of an OpenMP team that record nothing (sp__ext_join_thread), so that the
 * line sampler arms them and their samples count for the root. */
static int joins_threads(const struct sp_manager *m) {
  return owned && !finishing && m->run_active && m->ext_threads;
}

SP_API int sp_i_run_thread_wanted(void *(*fn)(void *)) {
  if (!joins_threads(SP_DEFAULT)) return 0;
  void *p;
  memcpy(&p, &fn, sizeof p); /* POSIX guarantees the round trip */
  Dl_info in;
  if (dladdr(p, &in) && in.dli_fname) {
    const char *base = strrchr(in.dli_fname, '/');
    base = base ? base + 1 : in.dli_fname;
    if (!strncmp(base, "libscope_profiler", 17)) return 0; /* our stream writer, signal watcher, memory writer */
  }
  return 1;
}

SP_API void sp_i_run_thread_started(void) {
  struct sp_manager *m = SP_DEFAULT;
  if (joins_threads(m)) sp__ext_join_thread(m);
}

__attribute__((constructor)) static void autorun(void) {
  const char *name = getenv("SCOPE_PROFILER_RUN");
  if (!name || !*name) return;
  snprintf(root_name, sizeof root_name, "%s", name);
  quiet = getenv("SCOPE_PROFILER_RUN_QUIET") != NULL;
  unsetenv("SCOPE_PROFILER_RUN");
  unsetenv("SCOPE_PROFILER_RUN_QUIET");
  if (!quiet) out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  sp_setup_args a = {.auto_finalize = 1};
  /* A line sample taken during setup (its overhead calibration) counts for
   * the root too: everything the process does is the program's. */
  root_region = sp_region_intern_ex(root_name, NULL, -1, NULL, NULL);
  starting = 1;
  sp_status st = sp_manager_setup(SP_DEFAULT, &a);
  if (st != SP_OK) { /* setup said why on stderr */
    starting = 0;
    return;
  }
  /* Until the root is open (its begin registers this thread: a lock, the
   * thread's name, first calls through the PLT), a sample still counts for it. */
  root = sp_scope_begin(SP_DEFAULT, root_region);
  owned = 1;
  starting = 0;
  /* After setup's own exit hook: this one runs first, so the root is
   * closed before anything is finalized. */
  atexit(at_exit);
}
