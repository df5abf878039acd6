/* dest.h - what an output path names, so that writers never replace
 * anything but a regular file (dest.c). Depends on libc only. */
#ifndef SP_COMMON_DEST_H
#define SP_COMMON_DEST_H

enum sp_dest {
  SP_DEST_FILE,   /* a regular file, a symlink to one, or nothing yet: written beside it, renamed over it */
  SP_DEST_STREAM, /* "-" (stdout), a character or block device, a FIFO: written in place */
  SP_DEST_BAD     /* a directory, a socket: refused; *why says what it is */
};

enum sp_dest sp__dest_kind(const char *path, const char **why);

/* Open a stream destination for writing ("-" is a dup of stdout); -1 with
 * errno set on failure. */
int sp__dest_open_stream(const char *path);

#endif
