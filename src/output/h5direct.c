/* h5direct.c - writes around the page cache (h5direct.h): the aligned body
 * of a large write goes through an O_DIRECT descriptor on the same file,
 * the rest through the ordinary one; a file system that refuses O_DIRECT
 * gets ordinary writes. Page-aligned memory that grows by mremap. And an
 * HDF5 file driver that sends raw data writes that way.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/h5direct.h"

_Atomic uint64_t sp__direct_bytes;
int sp__direct_refuse;

/* The copy buffer for bodies whose memory is not aligned (reused, so its
 * pages are touched once), and the most one write() is asked for. */
#define BOUNCE_SIZE ((size_t)4 << 20)
#define WRITE_MAX ((size_t)1 << 30)

void sp__direct_init(struct sp_direct *d, int fd, const char *path) {
  *d = (struct sp_direct){.fd = fd, .dfd = -1, .path = path};
}

void sp__direct_end(struct sp_direct *d) {
  if (d->dfd >= 0) close(d->dfd);
  d->dfd = -1;
  free(d->bounce);
  d->bounce = NULL;
  d->bounce_size = 0;
}

static void refuse(struct sp_direct *d) {
  if (d->dfd >= 0) close(d->dfd);
  d->dfd = -1;
  d->refused = 1;
}

/* The O_DIRECT descriptor, opened on the same open file as d->fd: through
 * /proc/self/fd (no name to race with), else by name and only if it is the
 * same file. Any failure means plain writes, never an error. */
static int open_direct(struct sp_direct *d) {
  if (d->dfd >= 0) return 1;
  if (d->refused) return 0;
  if (sp__direct_refuse == 1) {
    refuse(d);
    return 0;
  }
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", d->fd);
  int dfd = open(proc, O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (dfd < 0 && errno == ENOENT && d->path) dfd = open(d->path, O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC);
  struct stat a, b;
  if (dfd >= 0 && (fstat(dfd, &a) != 0 || fstat(d->fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
    close(dfd);
    dfd = -1;
  }
  if (dfd < 0) {
    refuse(d);
    return 0;
  }
  d->dfd = dfd;
  return 1;
}

/* One direct write of the aligned body at p (len >= SP_DIRECT_MIN, off
 * aligned): bytes written, 0 when O_DIRECT turned out refused (nothing
 * written), -1 on a real error. */
static ssize_t direct_once(struct sp_direct *d, const char *p, size_t len, uint64_t off) {
  size_t body = len & ~(size_t)(SP_DIRECT_ALIGN - 1);
  if (body > WRITE_MAX) body = WRITE_MAX;
  const char *src = p;
  if ((uintptr_t)p % SP_DIRECT_ALIGN) {
    if (!d->bounce) {
      void *m = NULL;
      if (posix_memalign(&m, SP_DIRECT_ALIGN, BOUNCE_SIZE) != 0) return 0;
      d->bounce = m;
      d->bounce_size = BOUNCE_SIZE;
    }
    if (body > d->bounce_size) body = d->bounce_size;
    memcpy(d->bounce, p, body);
    src = d->bounce;
  }
  for (;;) {
    ssize_t w = sp__direct_refuse == 2 ? (errno = EINVAL, -1) : pwrite(d->dfd, src, body, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL) { /* the file system takes no direct writes after all */
      refuse(d);
      return 0;
    }
    if (w > 0) sp__direct_bytes += (uint64_t)w;
    if (w == 0) errno = EIO;
    return w > 0 ? w : -1;
  }
}

int sp__direct_pwrite(struct sp_direct *d, const void *buf, size_t len, uint64_t off) {
  const char *p = buf;
  while (len) {
    size_t head = off % SP_DIRECT_ALIGN ? SP_DIRECT_ALIGN - off % SP_DIRECT_ALIGN : 0;
    size_t n = len;
    if (len > head && ((len - head) & ~(size_t)(SP_DIRECT_ALIGN - 1)) >= SP_DIRECT_MIN && !d->refused) {
      if (head) {
        n = head; /* up to the next aligned offset, then the body */
      } else if (open_direct(d)) {
        ssize_t w = direct_once(d, p, len, off);
        if (w < 0) return -1;
        if (w > 0) {
          p += w;
          off += (uint64_t)w;
          len -= (size_t)w;
          continue;
        }
        /* refused at the write, or no copy buffer: this one plain */
      }
    }
    if (n > WRITE_MAX) n = WRITE_MAX;
    ssize_t w = pwrite(d->fd, p, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    p += w;
    off += (uint64_t)w;
    len -= (size_t)w;
  }
  return 0;
}

static size_t pages(size_t size) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  if (pg < SP_DIRECT_ALIGN) pg = SP_DIRECT_ALIGN;
  return (size ? size + pg - 1 : pg) / pg * pg;
}

void *sp__direct_map(size_t size, size_t *cap) {
  size_t c = pages(size);
  void *p = mmap(NULL, c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  *cap = c;
  return p;
}

void *sp__direct_remap(void *p, size_t size, size_t *cap) {
  size_t c = pages(size);
  if (c == *cap) return p;
  void *q = mremap(p, *cap, c, MREMAP_MAYMOVE);
  if (q == MAP_FAILED) return NULL;
  *cap = c;
  return q;
}

void sp__direct_unmap(void *p, size_t cap) {
  if (p) munmap(p, cap);
}

/* ---- the HDF5 driver -----------------------------------------------------
 * A copy of the sec2 driver's behaviour (one file, pread/pwrite, the
 * canonical format any reader opens with the default driver) whose raw data
 * writes go through sp__direct_pwrite; metadata, small and scattered,
 * stays in the page cache. H5FD_class_t changed in HDF5 1.13: other
 * versions get the default driver. */
#if H5_VERSION_LE(1, 12, 99)

/* Write-behind: HDF5 hands the event sink's raw data over 64 KiB at a
 * time per row and column, rows interleaved, too small to go direct one by
 * one (BENCHMARKS.md). Each slot gathers one run of contiguous writes (a
 * row's column) in aligned memory, placed so that memory and file offsets
 * agree modulo 4096, and writes its whole pages direct when full, keeping
 * the last partial page for the writes that follow. Slots are taken least
 * recently used first; their memory is allocated as they are first used. */
#define WB_SLOTS 64
#define WB_SIZE ((size_t)512 << 10)

struct wslot {
  uint64_t addr; /* file offset of buf[lead] */
  size_t lead, len;
  unsigned long used;
  char *buf;
};

struct dfile {
  H5FD_t pub; /* first: HDF5 casts */
  int fd;
  struct sp_direct d;
  char *name;
  haddr_t eoa, eof;
  dev_t dev;
  ino_t ino;
  unsigned long clock;
  struct wslot slot[WB_SLOTS];
};

/* Writes out all of slot w (a partial page at either end plain). */
static int slot_flush(struct dfile *f, struct wslot *w) {
  if (!w->len) return 0;
  int rc = sp__direct_pwrite(&f->d, w->buf + w->lead, w->len, w->addr);
  w->len = 0;
  return rc;
}

/* A full slot: its whole pages out, the last partial page kept in front. */
static int slot_drain(struct dfile *f, struct wslot *w) {
  uint64_t end = w->addr + w->len, cut = end & ~(uint64_t)(SP_DIRECT_ALIGN - 1);
  if (cut <= w->addr) return slot_flush(f, w);
  if (sp__direct_pwrite(&f->d, w->buf + w->lead, (size_t)(cut - w->addr), w->addr) != 0) return -1;
  size_t keep = (size_t)(end - cut);
  memmove(w->buf, w->buf + w->lead + (cut - w->addr), keep);
  w->addr = cut;
  w->lead = 0;
  w->len = keep;
  return 0;
}

/* Every slot holding bytes of [addr, addr + size) written out, so that a
 * read or another write of the range sees and orders after them. */
static int slots_flush_range(struct dfile *f, uint64_t addr, size_t size) {
  int rc = 0;
  for (int k = 0; k < WB_SLOTS; k++) {
    struct wslot *w = &f->slot[k];
    if (w->len && w->addr < addr + size && addr < w->addr + w->len && slot_flush(f, w) != 0) rc = -1;
  }
  return rc;
}

static int slots_flush_all(struct dfile *f) {
  int rc = 0;
  for (int k = 0; k < WB_SLOTS; k++)
    if (slot_flush(f, &f->slot[k]) != 0) rc = -1;
  return rc;
}

static int slot_append(struct dfile *f, struct wslot *w, const char *p, size_t size) {
  while (size) {
    size_t room = WB_SIZE - w->lead - w->len, n = size < room ? size : room;
    memcpy(w->buf + w->lead + w->len, p, n);
    w->len += n;
    p += n;
    size -= n;
    if (w->lead + w->len == WB_SIZE && slot_drain(f, w) != 0) return -1;
  }
  w->used = ++f->clock;
  return 0;
}

static int raw_write(struct dfile *f, uint64_t addr, size_t size, const char *p) {
  if (slots_flush_range(f, addr, size) != 0) return -1; /* bytes rewritten: the old ones go first */
  for (int k = 0; k < WB_SLOTS; k++) {
    struct wslot *w = &f->slot[k];
    if (w->len && w->addr + w->len == addr) return slot_append(f, w, p, size);
  }
  if (size >= WB_SIZE / 2) return sp__direct_pwrite(&f->d, p, size, addr);
  struct wslot *w = NULL;
  for (int k = 0; k < WB_SLOTS; k++) {
    struct wslot *c = &f->slot[k];
    if (!w || (!c->len && w->len) || (!c->len == !w->len && c->used < w->used)) w = c;
  }
  if (slot_flush(f, w) != 0) return -1;
  if (!w->buf) {
    void *m = NULL;
    if (posix_memalign(&m, SP_DIRECT_ALIGN, WB_SIZE) != 0) return sp__direct_pwrite(&f->d, p, size, addr);
    w->buf = m;
  }
  w->addr = addr;
  w->lead = (size_t)(addr % SP_DIRECT_ALIGN);
  w->len = 0;
  return slot_append(f, w, p, size);
}

#define MAXADDR (((haddr_t)1 << (8 * sizeof(off_t) - 1)) - 1)

static H5FD_t *d_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  (void)fapl;
  if (!name || !*name || maxaddr == 0 || maxaddr > MAXADDR) return NULL;
  int o = flags & H5F_ACC_RDWR ? O_RDWR : O_RDONLY;
  if (flags & H5F_ACC_TRUNC) o |= O_TRUNC;
  if (flags & H5F_ACC_CREAT) o |= O_CREAT;
  if (flags & H5F_ACC_EXCL) o |= O_EXCL;
  struct dfile *f = calloc(1, sizeof *f);
  char *copy = f ? strdup(name) : NULL;
  int fd = copy ? open(name, o | O_CLOEXEC, 0666) : -1;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    free(copy);
    free(f);
    return NULL;
  }
  f->fd = fd;
  f->name = copy;
  f->eof = (haddr_t)st.st_size;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  sp__direct_init(&f->d, fd, f->name);
  return &f->pub;
}

static herr_t d_close(H5FD_t *file) {
  struct dfile *f = (struct dfile *)file;
  int rc = slots_flush_all(f);
  for (int k = 0; k < WB_SLOTS; k++) free(f->slot[k].buf);
  sp__direct_end(&f->d);
  if (close(f->fd) != 0) rc = -1;
  free(f->name);
  free(f);
  return rc == 0 ? 0 : -1;
}

static int d_cmp(const H5FD_t *a, const H5FD_t *b) {
  const struct dfile *x = (const struct dfile *)a, *y = (const struct dfile *)b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return 0;
}

static herr_t d_query(const H5FD_t *file, unsigned long *flags) {
  (void)file;
  *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
           H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_POSIX_COMPAT_HANDLE;
  return 0;
}

static haddr_t d_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const struct dfile *)file)->eoa;
}
static herr_t d_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
  (void)type;
  ((struct dfile *)file)->eoa = addr;
  return 0;
}
static haddr_t d_get_eof(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const struct dfile *)file)->eof;
}
static herr_t d_get_handle(H5FD_t *file, hid_t fapl, void **handle) {
  (void)fapl;
  *handle = &((struct dfile *)file)->fd;
  return 0;
}

static herr_t d_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf) {
  (void)type, (void)dxpl;
  struct dfile *f = (struct dfile *)file;
  if (slots_flush_range(f, addr, size) != 0) return -1;
  char *p = buf;
  while (size) {
    ssize_t r = pread(f->fd, p, size > WRITE_MAX ? WRITE_MAX : size, (off_t)addr);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) { /* past the end of the file: zeros, as sec2 reads */
      memset(p, 0, size);
      break;
    }
    p += r;
    addr += (haddr_t)r;
    size -= (size_t)r;
  }
  return 0;
}

static herr_t d_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf) {
  (void)dxpl;
  struct dfile *f = (struct dfile *)file;
  if (addr + size > f->eoa) return -1;
  if (type == H5FD_MEM_DRAW) {
    if (raw_write(f, addr, size, buf) != 0) return -1;
  } else {
    if (slots_flush_range(f, addr, size) != 0) return -1;
    const char *p = buf;
    for (size_t left = size; left;) {
      ssize_t w = pwrite(f->fd, p, left > WRITE_MAX ? WRITE_MAX : left, (off_t)(addr + (size - left)));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return -1;
      p += w;
      left -= (size_t)w;
    }
  }
  if (addr + size > f->eof) f->eof = addr + size;
  return 0;
}

static herr_t d_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
  (void)dxpl, (void)closing;
  struct dfile *f = (struct dfile *)file;
  if (slots_flush_all(f) != 0) return -1;
  if (f->eoa == f->eof) return 0;
  if (ftruncate(f->fd, (off_t)f->eoa) != 0) return -1;
  f->eof = f->eoa;
  return 0;
}

static herr_t d_flush(H5FD_t *file, hid_t dxpl, hbool_t closing) {
  (void)dxpl, (void)closing;
  return slots_flush_all((struct dfile *)file) == 0 ? 0 : -1;
}

static const H5FD_class_t direct_class = {
    .name = "scope_profiler_direct",
    .maxaddr = MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .open = d_open,
    .close = d_close,
    .cmp = d_cmp,
    .query = d_query,
    .get_eoa = d_get_eoa,
    .set_eoa = d_set_eoa,
    .get_eof = d_get_eof,
    .get_handle = d_get_handle,
    .read = d_read,
    .write = d_write,
    .flush = d_flush,
    .truncate = d_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static hid_t driver_id = -1;

/* Registered once, and again after an H5close dropped it. */
static hid_t driver(void) {
  pthread_mutex_lock(&driver_lock);
  htri_t valid = -1;
  if (driver_id >= 0) {
    H5E_BEGIN_TRY { valid = H5Iis_valid(driver_id); }
    H5E_END_TRY;
  }
  if (valid <= 0) {
    H5E_BEGIN_TRY { driver_id = H5FDregister(&direct_class); }
    H5E_END_TRY;
  }
  hid_t id = driver_id;
  pthread_mutex_unlock(&driver_lock);
  return id;
}

int sp__direct_fapl(hid_t fapl) {
  if (sp__direct_refuse == 3) return 0;
  hid_t id = driver();
  herr_t rc = -1;
  H5E_BEGIN_TRY {
    if (id >= 0 && H5Pset_driver(fapl, id, NULL) >= 0)
      rc = H5Pset_alignment(fapl, SP_DIRECT_MIN, SP_DIRECT_ALIGN);
  }
  H5E_END_TRY;
  if (rc < 0) {
    H5Pset_fapl_sec2(fapl);
    return 0;
  }
  return 1;
}
#else
int sp__direct_fapl(hid_t fapl) {
  (void)fapl;
  return 0;
}
#endif
