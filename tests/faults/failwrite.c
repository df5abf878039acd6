/* failwrite.c - an LD_PRELOAD shim that makes the file system misbehave for
 * one directory, for tests/integration/test_disk_faults.sh.
 *
 * Files opened under $FAILWRITE_DIR (an absolute, canonical path) are
 * watched; everything else passes through untouched. Settings, all optional:
 *   FAILWRITE_AFTER=N   the disk fills after N bytes written to watched files
 *                       in all: the write that crosses N is cut short, later
 *                       ones fail with ENOSPC (N=0: every write fails)
 *   FAILWRITE_FSYNC=1   fsync/fdatasync of a watched file fail with EIO
 *   FAILWRITE_LOG=FILE  append "open <flags in hex> <path>" for every open of
 *                       a watched path (to check O_CREAT comes with O_EXCL),
 *                       and "fsync file" or "fsync dir" for every fsync of
 *                       a watched file or directory
 *   FAILWRITE_PLANT=T   the first time a watched dot-file (a temporary name)
 *                       is opened, replace whatever is at that path by a
 *                       symlink to T just before the open: the race an
 *                       attacker with write access to the directory would
 *                       run against a temporary file name
 * The writer reaches the kernel through open/openat and write/pwrite (HDF5's
 * sec2 driver, our fsync); glibc-internal calls such as mkstemp's own open
 * do not go through the PLT and are not seen, which is fine: mkstemp always
 * uses O_EXCL.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 4096

static unsigned char watched[MAX_FD];
static int64_t budget = -1; /* bytes left; -1: unlimited */
static int fail_fsync, planted;
static const char *dir, *plant, *logpath;
static size_t dirlen;

/* The next definition of `name` (libc's), without converting an object
 * pointer to a function pointer, which ISO C does not define. */
#define REAL(type, name)                                                         \
  __typeof__(type) real_##name;                                                   \
  do {                                                                            \
    void *p_ = dlsym(RTLD_NEXT, #name);                                           \
    memcpy(&real_##name, &p_, sizeof real_##name);                               \
  } while (0)

__attribute__((constructor)) static void init(void) {
  dir = getenv("FAILWRITE_DIR");
  dirlen = dir ? strlen(dir) : 0;
  const char *after = getenv("FAILWRITE_AFTER");
  if (after && *after) budget = strtoll(after, NULL, 10);
  const char *fs = getenv("FAILWRITE_FSYNC");
  fail_fsync = fs && *fs == '1';
  plant = getenv("FAILWRITE_PLANT");
  logpath = getenv("FAILWRITE_LOG");
}

/* Is `path` (relative to dirfd) inside the watched directory? */
static int under(int dirfd, const char *path) {
  if (!dir || !path) return 0;
  char abs[2 * PATH_MAX + 2];
  if (!strncmp(path, "/proc/self/fd/", 14)) { /* a descriptor reopened (the writer's O_DIRECT one) */
    ssize_t n = readlink(path, abs, sizeof abs - 1);
    if (n < 0) return 0;
    abs[n] = '\0';
  } else if (path[0] == '/') {
    snprintf(abs, sizeof abs, "%s", path);
  } else {
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof base)) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof base - 1);
      if (n < 0) return 0;
      base[n] = '\0';
    }
    snprintf(abs, sizeof abs, "%s/%s", base, path);
  }
  return strncmp(abs, dir, dirlen) == 0 && (abs[dirlen] == '/' || abs[dirlen] == '\0');
}

static void log_line(const char *line) {
  if (!logpath) return;
  REAL(int (*)(const char *, int, ...), open);
  int fd = real_open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  REAL(ssize_t(*)(int, const void *, size_t), write);
  (void)real_write(fd, line, strlen(line));
  close(fd);
}

static void log_open(const char *path, int flags) {
  char line[PATH_MAX + 64];
  snprintf(line, sizeof line, "open %x %s\n", (unsigned)flags, path);
  log_line(line);
}

/* watched[fd]: 0 not watched, 1 a file, 2 a directory */
static int opened(int fd, int dirfd, const char *path, int flags) {
  if (fd >= 0 && fd < MAX_FD)
    watched[fd] = (unsigned char)(under(dirfd, path) ? (flags & O_DIRECTORY ? 2 : 1) : 0);
  return fd;
}

static void before_open(int dirfd, const char *path, int flags) {
  if (!under(dirfd, path)) return;
  log_open(path, flags);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (plant && !planted && base[0] == '.') { /* a temporary name, at its first open */
    planted = 1;
    /* An attacker who can write to the directory can also remove the file
     * the writer reserved there. */
    if (unlinkat(dirfd, path, 0) != 0) { /* nothing there yet */ }
    if (symlinkat(plant, dirfd, path) != 0) { /* the test then sees no attack */ }
  }
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, unsigned) : 0;
}

#define OPEN_LIKE(name)                                                           \
  int name(const char *path, int flags, ...) {                                   \
    va_list ap;                                                                   \
    va_start(ap, flags);                                                          \
    mode_t mode = mode_arg(flags, ap);                                            \
    va_end(ap);                                                                   \
    before_open(AT_FDCWD, path, flags);                                           \
    REAL(int (*)(const char *, int, ...), name);                                  \
    return opened(real_##name(path, flags, mode), AT_FDCWD, path, flags);         \
  }
#define OPENAT_LIKE(name)                                                         \
  int name(int dirfd, const char *path, int flags, ...) {                        \
    va_list ap;                                                                   \
    va_start(ap, flags);                                                          \
    mode_t mode = mode_arg(flags, ap);                                            \
    va_end(ap);                                                                   \
    before_open(dirfd, path, flags);                                              \
    REAL(int (*)(int, const char *, int, ...), name);                             \
    return opened(real_##name(dirfd, path, flags, mode), dirfd, path, flags);     \
  }
OPEN_LIKE(open)
OPEN_LIKE(open64)
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

/* How much of an n-byte write to fd the disk still takes; -1 with ENOSPC
 * when nothing. */
static ssize_t allowance(int fd, size_t n) {
  if (fd < 0 || fd >= MAX_FD || !watched[fd] || budget < 0) return (ssize_t)n;
  if (budget == 0) {
    errno = ENOSPC;
    return -1;
  }
  size_t take = (uint64_t)budget < n ? (size_t)budget : n;
  budget -= (int64_t)take;
  return (ssize_t)take;
}

ssize_t write(int fd, const void *buf, size_t n) {
  REAL(ssize_t(*)(int, const void *, size_t), write);
  ssize_t take = allowance(fd, n);
  return take < 0 ? -1 : real_write(fd, buf, (size_t)take);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REAL(ssize_t(*)(int, const void *, size_t, off_t), pwrite);
  ssize_t take = allowance(fd, n);
  return take < 0 ? -1 : real_pwrite(fd, buf, (size_t)take, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  REAL(ssize_t(*)(int, const void *, size_t, off_t), pwrite64);
  ssize_t take = allowance(fd, n);
  return take < 0 ? -1 : real_pwrite64(fd, buf, (size_t)take, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  REAL(ssize_t(*)(int, const struct iovec *, int), writev);
  if (fd < 0 || fd >= MAX_FD || !watched[fd] || budget < 0) return real_writev(fd, iov, cnt);
  size_t n = 0;
  for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
  if ((uint64_t)budget < n) { /* no partial vectors: the disk is full */
    budget = 0;
    errno = ENOSPC;
    return -1;
  }
  budget -= (int64_t)n;
  return real_writev(fd, iov, cnt);
}

int fsync(int fd) {
  REAL(int (*)(int), fsync);
  if (fd >= 0 && fd < MAX_FD && watched[fd]) log_line(watched[fd] == 2 ? "fsync dir\n" : "fsync file\n");
  if (fail_fsync && fd >= 0 && fd < MAX_FD && watched[fd]) {
    errno = EIO;
    return -1;
  }
  return real_fsync(fd);
}

int fdatasync(int fd) {
  REAL(int (*)(int), fdatasync);
  if (fail_fsync && fd >= 0 && fd < MAX_FD && watched[fd]) {
    errno = EIO;
    return -1;
  }
  return real_fdatasync(fd);
}

int close(int fd) {
  REAL(int (*)(int), close);
  if (fd >= 0 && fd < MAX_FD) watched[fd] = 0;
  return real_close(fd);
}
