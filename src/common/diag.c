/* diag.c - the library's only lines on stderr: warnings about settings this
 * build cannot honour and the reason a setup failed (sp__message), or a
 * handler the program installed instead (sp_set_message_handler).
 *
 * Every message is formatted into one buffer and written with one call, so
 * lines of several ranks or threads sharing a terminal never interleave
 * mid-line. Under a launcher the line names the rank, which is read from the
 * launcher's environment: a message at setup must not make an MPI call.
 */
#include "common/diag.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static sp_message_fn handler;
static void *handler_user;

void sp_set_message_handler(sp_message_fn fn, void *user) {
  pthread_mutex_lock(&handler_lock);
  handler = fn;
  handler_user = user;
  pthread_mutex_unlock(&handler_lock);
}

int sp__launcher_rank(void) {
  /* Open MPI, PMIx, MPICH/Hydra and Intel MPI, MVAPICH. SLURM_PROCID is not
   * one: srun also starts tasks that are not MPI ranks. */
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                     "MV2_COMM_WORLD_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v >= '0' && *v <= '9') return atoi(v);
  }
  return -1;
}

static int env_num(const char *name) {
  const char *v = getenv(name);
  if (!v || !(*v >= '0' && *v <= '9')) return -1;
  char *end;
  long x = strtol(v, &end, 10);
  return *end || x > 1 << 30 ? -1 : (int)x;
}

int sp__launcher_world(int *rank, int *size) {
  /* rank variable, size variable */
  static const char *const vars[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                        {"PMI_RANK", "PMI_SIZE"},
                                        {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
                                        {"PMIX_RANK", "OMPI_COMM_WORLD_SIZE"}};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    int r = env_num(vars[i][0]), n = env_num(vars[i][1]);
    if (r >= 0 && n > r) {
      *rank = r;
      *size = n;
      return n > 1;
    }
  }
  /* srun: the tasks of a job step (not the batch script, which has no step
   * task count of its own). */
  int r = env_num("SLURM_PROCID"), n = env_num("SLURM_STEP_NUM_TASKS");
  if (r >= 0 && n > r && (env_num("SLURM_STEP_ID") >= 0 || env_num("SLURM_STEPID") >= 0)) {
    *rank = r;
    *size = n;
    return n > 1;
  }
  return 0;
}

void sp__message(sp_message_level level, const char *fmt, ...) {
  char text[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&handler_lock);
  sp_message_fn fn = handler;
  void *user = handler_user;
  pthread_mutex_unlock(&handler_lock);
  if (fn) {
    fn(level, text, user);
    return;
  }
  char line[2200], who[48] = "scope-profiler";
  int rank = sp__launcher_rank();
  if (rank >= 0) snprintf(who, sizeof who, "scope-profiler (rank %d)", rank);
  int n = snprintf(line, sizeof line, "%s: %s: %s\n", who,
                   level == SP_MESSAGE_ERROR ? "error" : "warning", text);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (len && line[len - 1] != '\n') line[len - 1] = '\n';
  fflush(stderr);
  for (size_t off = 0; off < len;) {
    ssize_t w = write(STDERR_FILENO, line + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
}
