/* h5common.c - HDF5 helpers shared by the serial writer and the MPI job
 * writers: types, attributes, the /metadata group and atomic publication.
 *
 * Publication: a file is written under an exclusive temporary name in the
 * destination directory (mkstemp: O_CREAT|O_EXCL, never following a planted
 * symlink), flushed with fsync and renamed over the destination, so readers
 * never see a partial file and a failure leaves the previous file intact.
 * Only a regular file is replaced so: a device, a FIFO or "-" (stdout) gets
 * the finished file's bytes written into it, from a temporary file in TMPDIR
 * (common/dest.c); a directory or a socket is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dest.h"
#include "common/error.h"
#include "output/h5common.h"

hid_t sp__h5_str_type(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

hid_t sp__h5_uint_type(unsigned bytes, int native) {
  switch (bytes) {
  case 1: return native ? H5T_NATIVE_UINT8 : H5T_STD_U8LE;
  case 2: return native ? H5T_NATIVE_UINT16 : H5T_STD_U16LE;
  case 4: return native ? H5T_NATIVE_UINT32 : H5T_STD_U32LE;
  default: return native ? H5T_NATIVE_UINT64 : H5T_STD_U64LE;
  }
}

hid_t sp__h5_summary_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct sp_summary));
  H5Tinsert(t, "total", HOFFSET(struct sp_summary, total), H5T_STD_I64LE);
  H5Tinsert(t, "minimum", HOFFSET(struct sp_summary, minimum), H5T_STD_I64LE);
  H5Tinsert(t, "maximum", HOFFSET(struct sp_summary, maximum), H5T_STD_I64LE);
  H5Tinsert(t, "first", HOFFSET(struct sp_summary, first), H5T_STD_I64LE);
  H5Tinsert(t, "last", HOFFSET(struct sp_summary, last), H5T_STD_I64LE);
  H5Tinsert(t, "start_minimum", HOFFSET(struct sp_summary, start_minimum), H5T_STD_I64LE);
  H5Tinsert(t, "end_maximum", HOFFSET(struct sp_summary, end_maximum), H5T_STD_I64LE);
  H5Tinsert(t, "gpu_count", HOFFSET(struct sp_summary, gpu_count), H5T_STD_U64LE);
  H5Tinsert(t, "gpu_total", HOFFSET(struct sp_summary, gpu_total), H5T_STD_I64LE);
  H5Tinsert(t, "mean", HOFFSET(struct sp_summary, mean), H5T_IEEE_F64LE);
  H5Tinsert(t, "m2", HOFFSET(struct sp_summary, m2), H5T_IEEE_F64LE);
  return t;
}

hid_t sp__h5_file_access(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  /* Readable by every HDF5 >= 1.8. */
  H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST);
  /* No data sieving: a streamed run writes its events a batch at a time,
   * and sieving would first read back each batch's 64 KiB of a dataset not
   * written yet (pages the kernel zero-fills), then write it. */
  H5Pset_sieve_buf_size(fapl, 0);
  return fapl;
}

void sp__h5_attr_str(hid_t obj, const char *name, const char *value, int *failed) {
  char *clipped = NULL;
  if (strlen(value) > SP_H5_META_MAX_CHARS) {
    clipped = sp__asprintf("%.*s...[truncated]", SP_H5_META_MAX_CHARS, value);
    if (clipped) value = clipped;
  }
  hid_t t = sp__h5_str_type();
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) {
    *failed = 1;
  } else {
    if (H5Awrite(a, t, &value) < 0) *failed = 1;
    H5Aclose(a);
  }
  H5Sclose(space);
  H5Tclose(t);
  free(clipped);
}

void sp__h5_attr_num(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v, int *failed) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) {
    *failed = 1;
  } else {
    if (H5Awrite(a, mtype, v) < 0) *failed = 1;
    H5Aclose(a);
  }
  H5Sclose(space);
}

void sp__h5_attr_strlist(hid_t obj, const char *name, char **list, int *failed) {
  size_t n = 0;
  while (list && list[n]) n++;
  hsize_t dims = n;
  hid_t t = sp__h5_str_type();
  hid_t space = n ? H5Screate_simple(1, &dims, NULL) : H5Screate(H5S_NULL);
  hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) {
    *failed = 1;
  } else {
    if (n && H5Awrite(a, t, list) < 0) *failed = 1;
    H5Aclose(a);
  }
  H5Sclose(space);
  H5Tclose(t);
}

void sp__h5_write_head(hid_t file, int schema_version, const char *layout, const struct sp_meta *meta,
                       int *failed) {
  int64_t schema = schema_version;
  sp__h5_attr_num(file, sp__plan_attr(SP_AT_SCHEMA)->name, H5T_STD_I64LE, H5T_NATIVE_INT64, &schema, failed);
  sp__h5_attr_str(file, sp__plan_attr(SP_AT_STORAGE_LAYOUT)->name, layout, failed);
  hid_t g = H5Gcreate2(file, sp__plan_group_name(SP_GRP_METADATA), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) {
    *failed = 1;
    return;
  }
  sp__h5_write_attrs(g, meta, failed);
  H5Gclose(g);
}

void sp__h5_write_attrs(hid_t g, const struct sp_meta *meta, int *failed) {
  for (size_t i = 0; i < meta->n; i++) {
    const struct sp_meta_item *it = &meta->items[i];
    switch (it->type) {
    case SP_META_STR: sp__h5_attr_str(g, it->key, it->s, failed); break;
    case SP_META_I64: sp__h5_attr_num(g, it->key, H5T_STD_I64LE, H5T_NATIVE_INT64, &it->i, failed); break;
    case SP_META_F64: sp__h5_attr_num(g, it->key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &it->d, failed); break;
    case SP_META_STRLIST: sp__h5_attr_strlist(g, it->key, it->list, failed); break;
    }
  }
}

sp_status sp__h5_tmp_create(const char *path, char **tmp_out) {
  *tmp_out = NULL;
  const char *why;
  enum sp_dest kind = sp__dest_kind(path, &why);
  if (kind == SP_DEST_BAD && !strcmp(why, "a directory"))
    return sp__set_error(SP_ERR_IO, "output path %s is a directory; set file_path to a file name inside it", path);
  if (kind == SP_DEST_BAD)
    return sp__set_error(SP_ERR_IO, "output path %s is %s; set file_path to a regular file (or a device or FIFO "
                         "to write into)", path, why);
  char *tmp;
  if (kind == SP_DEST_STREAM) { /* written whole beside nothing: in TMPDIR, then copied in */
    const char *td = getenv("TMPDIR");
    tmp = sp__asprintf("%s/.scope_profiler.out.XXXXXX", td && *td ? td : "/tmp");
  } else {
    char *pathcopy = sp__strdup(path), *dir = pathcopy ? dirname(pathcopy) : NULL;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    tmp = dir ? sp__asprintf("%s/.%s.tmp.XXXXXX", dir, base) : NULL;
    free(pathcopy);
  }
  if (!tmp) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory preparing %s", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    char *dcopy = sp__strdup(path);
    sp_status st = sp__set_error(SP_ERR_IO, "cannot create the output file in directory %s: %s; choose a "
                                 "writable file_path", dcopy ? dirname(dcopy) : path, strerror(e));
    free(dcopy);
    free(tmp);
    return st;
  }
  /* Only the name is reserved: callers remove it and let HDF5 create the
   * file with O_EXCL, which applies the umask (no umask(0) dance that would
   * race with other threads). */
  close(fd);
  *tmp_out = tmp;
  return SP_OK;
}

int sp__h5_fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW);
  int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
  if (fd >= 0) close(fd);
  return rc;
}

/* The rename itself reaches the disk only with its directory: after a power
 * loss the path would otherwise still name the previous file. Best effort
 * (some filesystems refuse fsync on a directory); the file is complete
 * either way. */
static void sync_directory(const char *path) {
  char *pathcopy = sp__strdup(path);
  int fd = pathcopy ? open(dirname(pathcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(pathcopy);
}

/* A device, FIFO or stdout gets the finished file's bytes; the temporary
 * file goes. */
static sp_status copy_into(char *tmp, const char *path) {
  int in = open(tmp, O_RDONLY | O_CLOEXEC), out = in >= 0 ? sp__dest_open_stream(path) : -1;
  int err = in < 0 || out < 0 ? errno : 0;
  char buf[1 << 16];
  for (ssize_t r = 1; !err && r > 0;) {
    r = read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR) {
      r = 1; /* read again */
      continue;
    }
    if (r < 0) err = errno;
    for (ssize_t off = 0; !err && r > 0 && off < r;) {
      ssize_t w = write(out, buf + off, (size_t)(r - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) err = w < 0 ? errno : EIO;
      else off += w;
    }
  }
  if (in >= 0) close(in);
  if (out >= 0 && close(out) != 0 && !err) err = errno;
  unlink(tmp);
  free(tmp);
  if (err) return sp__set_error(SP_ERR_IO, "writing into %s failed: %s", path, strerror(err));
  return SP_OK;
}

void (*sp__h5_test_publish_hook)(int step);

/* `keep`: a failure leaves tmp where it is, and the name to the caller. */
static sp_status publish(char *tmp, const char *path, int failed, int keep) {
  const char *why;
  if (!failed && sp__dest_kind(path, &why) == SP_DEST_STREAM) return copy_into(tmp, path);
  if (sp__h5_test_publish_hook) sp__h5_test_publish_hook(SP_PUB_FSYNC);
  if (!failed && sp__h5_fsync_path(tmp) != 0) failed = 1;
  if (failed) {
    if (!keep) unlink(tmp), free(tmp);
    return sp__set_error(SP_ERR_IO, "writing %s failed (disk full or I/O error?); %s", path,
                         keep ? "its temporary file is kept" : "no partial file was left");
  }
  if (sp__h5_test_publish_hook) sp__h5_test_publish_hook(SP_PUB_RENAME);
  if (rename(tmp, path) != 0) {
    int e = errno;
    if (!keep) unlink(tmp), free(tmp);
    return sp__set_error(SP_ERR_IO, "cannot publish %s: %s", path, strerror(e));
  }
  if (sp__h5_test_publish_hook) sp__h5_test_publish_hook(SP_PUB_RENAMED);
  free(tmp);
  sync_directory(path);
  return SP_OK;
}

sp_status sp__h5_publish(char *tmp, const char *path, int failed) { return publish(tmp, path, failed, 0); }

sp_status sp__h5_publish_or_keep(char *tmp, const char *path, int failed) { return publish(tmp, path, failed, 1); }
