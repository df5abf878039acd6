/* tests/childutil.h - the crash-child pattern's small helpers: a forked
 * child that will crash writes no core file, the parent waits for it
 * through EINTR (the profiler's own handlers may interrupt the wait), and
 * whether a file the crash was meant to leave is there. lstat, not stat:
 * a link left behind counts as left behind. Used by test-crashpub and
 * test-watchspill (review11 D1: each had its own copy); find_file, the file
 * a crash left whose name starts with a prefix (its mkstemp suffix is
 * random), by test-stagefail and test-journal. */
#ifndef SP_TEST_CHILDUTIL_H
#define SP_TEST_CHILDUTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* The last name in "." that starts with prefix into out ("" when none);
 * -1 when "." cannot be read. */
static inline int find_file(const char *prefix, char *out, size_t len) {
  out[0] = 0;
  DIR *d = opendir(".");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix))) snprintf(out, len, "%s", e->d_name);
  closedir(d);
  return 0;
}

#endif
