/* tests/directutil.h - whether a test's directory takes O_DIRECT writes.
 * The tests' TMPDIR may sit on a file system that refuses them (tmpfs,
 * some network file systems); there the write layer falls back to plain
 * writes by design, so assertions on the direct-byte counter only hold
 * where this says yes; and a tmpfs directory for the cases that write
 * there. Used by test-direct, test-finalize and test-stage. */
#ifndef SP_TEST_DIRECTUTIL_H
#define SP_TEST_DIRECTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/h5direct.h"

/* Writes and removes one aligned page named "probe" in the current
 * directory (each case runs in a directory of its own). */
static inline int dir_takes_direct(void) {
  int fd = open("probe", O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  void *m = NULL;
  int ok = fd >= 0 && posix_memalign(&m, SP_DIRECT_ALIGN, SP_DIRECT_ALIGN) == 0;
  if (ok) {
    memset(m, 1, SP_DIRECT_ALIGN);
    ok = pwrite(fd, m, SP_DIRECT_ALIGN, 0) == (ssize_t)SP_DIRECT_ALIGN;
  }
  free(m);
  if (fd >= 0) close(fd);
  unlink("probe");
  return ok;
}

/* A directory on tmpfs for this process, /dev/shm/sp-test-TAG-PID (one per
 * process, so concurrent test runs do not share it; one left by a dead
 * run of the same pid is reused: the cases overwrite their files). The
 * name goes to dir; 0 where there is no /dev/shm to make it in. */
static inline int shm_dir(char *dir, size_t n, const char *tag) {
  snprintf(dir, n, "/dev/shm/sp-test-%s-%ld", tag, (long)getpid());
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

#endif
