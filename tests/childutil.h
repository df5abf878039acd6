/* tests/childutil.h - the crash-child pattern's small helpers: a forked
 * child that will crash writes no core file, the parent waits for it
 * through EINTR (the profiler's own handlers may interrupt the wait), and
 * whether a file the crash was meant to leave is there. lstat, not stat:
 * a link left behind counts as left behind. Used by test-crashpub and
 * test-watchspill (review11 D1: each had its own copy). */
#ifndef SP_TEST_CHILDUTIL_H
#define SP_TEST_CHILDUTIL_H

#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

/* In the child, before it crashes on purpose. */
static inline void child_no_core(void) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
}

/* The child's wait status. */
static inline int child_wait(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

static inline int exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

#endif
