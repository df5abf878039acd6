/* h5write.c - writes a run as an HDF5 file in schema 2 ("columnar").
 *
 * Layout (docs/file-format.md): root attributes scope_profiler_schema=2 and
 * storage_layout; /metadata (attributes only); /region_table/names; the
 * rank_region_index datasets with one row per (rank, region); the events
 * datasets with all events as row slices. Small runs get exact-size contiguous datasets;
 * hdf5_chunk_size or compression switch the event columns to chunked storage.
 *
 * Publication is atomic: the file is written under an exclusive temporary
 * name in the target directory (never following a symlink), flushed to disk,
 * and renamed over the destination, so a failure leaves no partial file and
 * the previous file at that path intact.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "output/filters.h"
#include "output/output.h"

#define META_MAX_CHARS 60000 /* HDF5 attributes are limited to 64 KiB */

struct writer {
  hid_t file;
  const struct sp_config *cfg;
  int failed;
};

static hid_t str_type(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

static void check(struct writer *w, herr_t rc) {
  if (rc < 0) w->failed = 1;
}

/* Dataset creation properties for an event column of n values (filters.c). */
static hid_t event_dcpl(struct writer *w, size_t n, size_t elem) {
  return sp__event_dcpl(w->cfg, n, elem);
}

static void write_array(struct writer *w, hid_t group, const char *name, hid_t ftype, hid_t mtype,
                        size_t n, const void *data, int is_event) {
  hsize_t dims = n;
  hid_t space = H5Screate_simple(1, &dims, NULL);
  hid_t dcpl = is_event ? event_dcpl(w, n, H5Tget_size(mtype)) : H5Pcreate(H5P_DATASET_CREATE);
  hid_t ds = H5Dcreate2(group, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds < 0) {
    w->failed = 1;
  } else {
    if (n) check(w, H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
    H5Dclose(ds);
  }
  H5Pclose(dcpl);
  H5Sclose(space);
}

static void write_strings(struct writer *w, hid_t group, const char *name, size_t n, const char **v) {
  hid_t t = str_type();
  write_array(w, group, name, t, t, n, v, 0);
  H5Tclose(t);
}

static void attr_str(struct writer *w, hid_t obj, const char *name, const char *value) {
  char *clipped = NULL;
  if (strlen(value) > META_MAX_CHARS) {
    clipped = sp__asprintf("%.*s...[truncated]", META_MAX_CHARS, value);
    if (clipped) value = clipped;
  }
  hid_t t = str_type();
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) {
    w->failed = 1;
  } else {
    check(w, H5Awrite(a, t, &value));
    H5Aclose(a);
  }
  H5Sclose(space);
  H5Tclose(t);
  free(clipped);
}

static void attr_num(struct writer *w, hid_t obj, const char *name, hid_t ftype, hid_t mtype,
                     const void *v) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) {
    w->failed = 1;
  } else {
    check(w, H5Awrite(a, mtype, v));
    H5Aclose(a);
  }
  H5Sclose(space);
}

static void attr_strlist(struct writer *w, hid_t obj, const char *name, char **list) {
  size_t n = 0;
  while (list && list[n]) n++;
  hsize_t dims = n;
  hid_t t = str_type();
  hid_t space = n ? H5Screate_simple(1, &dims, NULL) : H5Screate(H5S_NULL);
  hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) {
    w->failed = 1;
  } else {
    if (n) check(w, H5Awrite(a, t, list));
    H5Aclose(a);
  }
  H5Sclose(space);
  H5Tclose(t);
}

static hid_t summary_type(void) {
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

static void write_column(struct writer *w, hid_t g, const struct sp_column *c, size_t n, int is_event) {
  if (c->type == SP_COL_U32)
    write_array(w, g, c->name, H5T_STD_U32LE, H5T_NATIVE_UINT32, n, c->data, is_event);
  else
    write_array(w, g, c->name, H5T_STD_I64LE, H5T_NATIVE_INT64, n, c->data, is_event);
}

static void write_run(struct writer *w, const struct sp_run *run) {
  hid_t root = w->file;
  int64_t schema = 2;
  attr_num(w, root, "scope_profiler_schema", H5T_STD_I64LE, H5T_NATIVE_INT64, &schema);
  attr_str(w, root, "storage_layout", run->layout);

  hid_t meta = H5Gcreate2(root, "metadata", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  for (size_t i = 0; i < run->meta.n; i++) {
    const struct sp_meta_item *it = &run->meta.items[i];
    switch (it->type) {
    case SP_META_STR: attr_str(w, meta, it->key, it->s); break;
    case SP_META_I64: attr_num(w, meta, it->key, H5T_STD_I64LE, H5T_NATIVE_INT64, &it->i); break;
    case SP_META_F64: attr_num(w, meta, it->key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &it->d); break;
    case SP_META_STRLIST: attr_strlist(w, meta, it->key, it->list); break;
    }
  }
  H5Gclose(meta);

  hid_t rt = H5Gcreate2(root, "region_table", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  write_strings(w, rt, "names", run->nnames, (const char **)run->names);
  H5Gclose(rt);

  size_t k = run->nrows;
  size_t kk = k ? k : 1;
  uint32_t *u32a = malloc(kk * sizeof *u32a), *u32b = malloc(kk * sizeof *u32b);
  uint64_t *u64a = malloc(kk * sizeof *u64a), *u64b = malloc(kk * sizeof *u64b);
  int64_t *i64a = malloc(kk * sizeof *i64a), *i64b = malloc(kk * sizeof *i64b), *i64c = malloc(kk * sizeof *i64c);
  const char **sa = malloc(kk * sizeof *sa), **sb = malloc(kk * sizeof *sb), **sc = malloc(kk * sizeof *sc);
  struct sp_summary *sum = malloc(kk * sizeof *sum);
  if (!u32a || !u32b || !u64a || !u64b || !i64a || !i64b || !i64c || !sa || !sb || !sc || !sum) {
    w->failed = 1;
  } else {
    for (size_t i = 0; i < k; i++) {
      const struct sp_row *r = &run->rows[i];
      u32a[i] = r->region;
      u32b[i] = r->rank;
      u64a[i] = r->offset;
      u64b[i] = r->count;
      i64a[i] = r->source_line;
      i64b[i] = r->exclusive_total;
      i64c[i] = r->aggregate_count;
      sa[i] = r->source_file ? r->source_file : "";
      sb[i] = r->source_text ? r->source_text : "";
      sc[i] = r->tags_json ? r->tags_json : "[]";
      sum[i] = r->stats;
    }
    hid_t ri = H5Gcreate2(root, "rank_region_index", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    write_array(w, ri, "region_ids", H5T_STD_U32LE, H5T_NATIVE_UINT32, k, u32a, 0);
    write_array(w, ri, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, k, u32b, 0);
    write_array(w, ri, "event_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64, k, u64a, 0);
    write_array(w, ri, "event_counts", H5T_STD_U64LE, H5T_NATIVE_UINT64, k, u64b, 0);
    write_array(w, ri, "source_lines", H5T_STD_I64LE, H5T_NATIVE_INT64, k, i64a, 0);
    write_array(w, ri, "exclusive_totals", H5T_STD_I64LE, H5T_NATIVE_INT64, k, i64b, 0);
    write_strings(w, ri, "source_files", k, sa);
    write_strings(w, ri, "source_texts", k, sb);
    write_strings(w, ri, "tags", k, sc);
    hid_t st = summary_type();
    write_array(w, ri, "summary_statistics", st, st, k, sum, 0);
    H5Tclose(st);
    if (strcmp(run->layout, "aggregate") == 0)
      write_array(w, ri, "aggregate_counts", H5T_STD_I64LE, H5T_NATIVE_INT64, k, i64c, 0);
    H5Gclose(ri);
  }
  free(u32a); free(u32b); free(u64a); free(u64b); free(i64a); free(i64b); free(i64c);
  free(sa); free(sb); free(sc); free(sum);

  hid_t ev = H5Gcreate2(root, "events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  size_t n = run->nevents;
  write_array(w, ev, "start_times", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->start, 1);
  write_array(w, ev, "end_times", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->end, 1);
  write_array(w, ev, "call_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->call_id, 1);
  write_array(w, ev, "parent_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->parent_id, 1);
  for (size_t i = 0; i < run->nextra; i++) write_column(w, ev, &run->extra[i], n, 1);
  H5Gclose(ev);

  for (size_t i = 0; i < run->ntables; i++) {
    const struct sp_table *t = &run->tables[i];
    hid_t g = H5Gcreate2(root, t->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (size_t c = 0; c < t->ncols; c++) write_column(w, g, &t->cols[c], t->nrows, 0);
    for (size_t c = 0; c < t->nstr; c++)
      write_strings(w, g, t->str_cols_names[c], t->nrows, (const char **)t->str_cols[c]);
    H5Gclose(g);
  }
}

static hid_t file_access(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  /* Oldest format that holds what we write: readable by every HDF5 >= 1.8. */
  H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST);
  return fapl;
}

static sp_status validate_filters(const struct sp_config *cfg) { return sp__filters_check(cfg); }

sp_status sp__h5_write_file(const struct sp_run *run, const struct sp_config *cfg, const char *path) {
  sp_status st = validate_filters(cfg);
  if (st != SP_OK) return st;
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
    return sp__set_error(SP_ERR_IO, "output path %s is a directory; set file_path to a file name inside it", path);

  char *pathcopy = sp__strdup(path), *dir = pathcopy ? dirname(pathcopy) : NULL;
  char *tmp = dir ? sp__asprintf("%s/.%s.tmp.XXXXXX", dir, strrchr(path, '/') ? strrchr(path, '/') + 1 : path) : NULL;
  free(pathcopy);
  if (!tmp) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory preparing %s", path);
  /* mkstemp opens with O_CREAT|O_EXCL: a planted symlink is never followed. */
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    char *dcopy = sp__strdup(path);
    st = sp__set_error(SP_ERR_IO, "cannot create the output file in directory %s: %s; choose a writable file_path",
                       dcopy ? dirname(dcopy) : path, strerror(e));
    free(dcopy);
    free(tmp);
    return st;
  }
  mode_t um = umask(0);
  umask(um);
  if (fchmod(fd, 0666 & ~um) != 0) { /* mkstemp's 0600 would hide the file from the group */ }
  close(fd);

  hid_t fapl = file_access();
  struct writer w = {.cfg = cfg};
  H5E_BEGIN_TRY { w.file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl); }
  H5E_END_TRY;
  H5Pclose(fapl);
  if (w.file < 0) {
    unlink(tmp);
    free(tmp);
    return sp__set_error(SP_ERR_IO, "HDF5 could not create %s; check the directory is writable", path);
  }
  H5E_BEGIN_TRY { write_run(&w, run); }
  H5E_END_TRY;
  if (H5Fclose(w.file) < 0) w.failed = 1;
  if (!w.failed) {
    int rfd = open(tmp, O_RDONLY | O_NOFOLLOW);
    if (rfd < 0 || fsync(rfd) != 0) w.failed = 1;
    if (rfd >= 0) close(rfd);
  }
  if (w.failed) {
    unlink(tmp);
    free(tmp);
    return sp__set_error(SP_ERR_IO, "writing %s failed (disk full or I/O error?); no partial file was left", path);
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    free(tmp);
    return sp__set_error(SP_ERR_IO, "cannot publish %s: %s", path, strerror(e));
  }
  free(tmp);
  return SP_OK;
}

sp_status sp__h5_write_image(const struct sp_run *run, const struct sp_config *cfg, void **image, size_t *size) {
  *image = NULL;
  *size = 0;
  sp_status st = validate_filters(cfg);
  if (st != SP_OK) return st;
  hid_t fapl = file_access();
  H5Pset_fapl_core(fapl, 1 << 20, 0); /* memory only, nothing touches disk */
  struct writer w = {.cfg = cfg};
  H5E_BEGIN_TRY { w.file = H5Fcreate("scope_profiler_results.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl); }
  H5E_END_TRY;
  H5Pclose(fapl);
  if (w.file < 0) return sp__set_error(SP_ERR_IO, "HDF5 could not create an in-memory file");
  H5E_BEGIN_TRY {
    write_run(&w, run);
    H5Fflush(w.file, H5F_SCOPE_GLOBAL);
    ssize_t n = H5Fget_file_image(w.file, NULL, 0);
    if (n > 0 && (*image = malloc((size_t)n)) && H5Fget_file_image(w.file, *image, (size_t)n) == n)
      *size = (size_t)n;
    else
      w.failed = 1;
  }
  H5E_END_TRY;
  H5Fclose(w.file);
  if (w.failed) {
    free(*image);
    *image = NULL;
    return sp__set_error(SP_ERR_IO, "building the in-memory results failed (out of memory?)");
  }
  return SP_OK;
}
