/* dest.c - classifying output paths. Atomic publication (a temporary file
 * renamed over the destination) is right for regular files and wrong for
 * anything else: renamed over /dev/null by root, it replaces the device node
 * with a regular file. Devices, FIFOs and "-" are written in place instead,
 * and directories and sockets are refused. The target of a symlink decides
 * (/dev/stdout is a symlink), except that a link to a regular file or to
 * nothing is replaced, as documented in docs/reliability.md.
 */
#include "common/dest.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum sp_dest sp__dest_kind(const char *path, const char **why) {
  *why = NULL;
  if (strcmp(path, "-") == 0) return SP_DEST_STREAM;
  struct stat sb;
  if (stat(path, &sb) != 0) return SP_DEST_FILE; /* nothing there (yet), or a dangling link */
  if (S_ISREG(sb.st_mode)) return SP_DEST_FILE;
  if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) || S_ISFIFO(sb.st_mode)) return SP_DEST_STREAM;
  *why = S_ISDIR(sb.st_mode) ? "a directory" : S_ISSOCK(sb.st_mode) ? "a socket" : "not a regular file";
  return SP_DEST_BAD;
}

int sp__dest_open_stream(const char *path) {
  if (strcmp(path, "-") == 0) return fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  return open(path, O_WRONLY | O_CLOEXEC);
}
