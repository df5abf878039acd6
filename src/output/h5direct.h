/* h5direct.h - writing a file's bytes around the page cache (O_DIRECT).
 *
 * On the virtual machines this profiler is measured on, what a large
 * buffered write pays is the page cache's first touch of fresh pages
 * (3-4 ns of kernel CPU per byte), not the disk; an O_DIRECT write of the
 * same bytes costs about 0.1 ns per byte (BENCHMARKS.md, "Direct I/O").
 * These helpers send the 4096-aligned body of a write through a second
 * descriptor opened with O_DIRECT on the same file, and the unaligned head
 * and tail through the ordinary one. Where O_DIRECT is refused (tmpfs, some
 * network file systems: EINVAL at open or at the write) they write
 * through the ordinary descriptor instead, never failing because of it.
 * The kernel keeps the two coherent: a read after a direct write sees the
 * new bytes. Durability is unchanged: callers still fsync the file.
 *
 * Also here: page-aligned memory that grows without a copy (mmap and
 * mremap), for the in-memory image HDF5 builds and we write out whole.
 */
#ifndef SP_H5DIRECT_H
#define SP_H5DIRECT_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

/* The alignment O_DIRECT needs of file offsets, lengths and memory here. */
#define SP_DIRECT_ALIGN 4096u
/* A write whose aligned body is shorter stays in the page cache: a direct
 * write waits for the disk, which only pays off when it saves the copy of
 * many pages. The event sink's writes (a row's calls 8192 at a time, 64 KiB
 * a column at any offset, interleaved across rows) took 0.75-0.79 s wall
 * direct against 0.29-0.42 s buffered for 152 MB (BENCHMARKS.md). */
#define SP_DIRECT_MIN ((size_t)256 << 10)

/* One file being written. `fd` is the caller's (opened for writing, never
 * closed here); the O_DIRECT one is opened on the same open file (through
 * /proc/self/fd, else by `path`) at the first large write. */
struct sp_direct {
  int fd;
  int dfd;          /* O_DIRECT descriptor; -1 not open yet or refused */
  int refused;      /* O_DIRECT refused once: plain writes from then on */
  const char *path; /* the file's name, for a system without /proc */
  void *bounce;     /* aligned copy of a body whose memory is not aligned */
  size_t bounce_size;
};

/* Starts writing file `fd` (its name: `path`, kept by reference). */
void sp__direct_init(struct sp_direct *d, int fd, const char *path);
/* Writes all `len` bytes of buf at offset `off`: 0, or -1 with errno set
 * (ENOSPC, EFBIG, EIO: the caller's disk-full path). Loops on EINTR and
 * short writes. */
int sp__direct_pwrite(struct sp_direct *d, const void *buf, size_t len, uint64_t off);
/* Closes the O_DIRECT descriptor and frees the copy buffer (not `fd`). */
void sp__direct_end(struct sp_direct *d);

/* Bytes written through O_DIRECT so far (every file): tests' evidence that
 * the direct path was taken. */
extern _Atomic uint64_t sp__direct_bytes;
/* Test hook: 1 makes every O_DIRECT open fail as if refused, 2 every direct
 * write (EINVAL, as a file system that opens but refuses them). */
extern int sp__direct_refuse;

/* Page-aligned anonymous memory of `size` bytes (zeroed, its pages touched
 * only when used); NULL when out of memory. *cap receives the mapped length. */
void *sp__direct_map(size_t size, size_t *cap);
/* Grows (or shrinks) a mapping of *cap bytes to hold `size`, moving it
 * without copying the bytes when it must; NULL (p still valid) on failure. */
void *sp__direct_remap(void *p, size_t size, size_t *cap);
void sp__direct_unmap(void *p, size_t cap);

/* Makes file access list `fapl` use our HDF5 file driver: the sec2
 * driver's files (any reader opens them with the default driver) whose raw
 * data writes go through sp__direct_pwrite, and objects of SP_DIRECT_MIN and more
 * placed at 4096-aligned addresses so that their bodies can. 1 when set; 0
 * where it cannot be (another HDF5 version, registration failed): fapl then
 * has the default sec2 driver. Test hook: sp__direct_refuse == 3 says 0. */
int sp__direct_fapl(hid_t fapl);

#endif
