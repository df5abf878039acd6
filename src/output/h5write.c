/* h5write.c - writes a run as an HDF5 file in schema 3 (the default:
 * delta-coded event columns, delta.c) or schema 2 ("columnar", hdf5_schema=2).
 *
 * Layout (docs/file-format.md): root attributes scope_profiler_schema and
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "output/delta.h"
#include "output/filters.h"
#include "output/h5common.h"
#include "output/output.h"

struct writer {
  hid_t file;
  const struct sp_config *cfg;
  int failed;
  int schema;              /* 2, or 3 with `delta` encoded */
  size_t nevents;          /* the run's */
  struct sp_delta delta;
};

static void check(struct writer *w, herr_t rc) {
  if (rc < 0) w->failed = 1;
}

/* Dataset creation properties for an event column of n values (filters.c). */
static hid_t event_dcpl(struct writer *w, size_t n, size_t elem) {
  return sp__event_dcpl(w->cfg, n, elem, w->nevents, w->schema);
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
  hid_t t = sp__h5_str_type();
  write_array(w, group, name, t, t, n, v, 0);
  H5Tclose(t);
}

static void write_column(struct writer *w, hid_t g, const struct sp_column *c, size_t n, int is_event) {
  if (c->type == SP_COL_U32)
    write_array(w, g, c->name, H5T_STD_U32LE, H5T_NATIVE_UINT32, n, c->data, is_event);
  else
    write_array(w, g, c->name, H5T_STD_I64LE, H5T_NATIVE_INT64, n, c->data, is_event);
  if (c->unit && *c->unit) {
    hid_t d = H5Dopen2(g, c->name, H5P_DEFAULT);
    if (d >= 0) {
      sp__h5_attr_str(d, "units", c->unit, &w->failed);
      H5Dclose(d);
    }
  }
}

/* Schema 3's four coded columns (delta.c), each in its chosen width, and
 * for a column with values that did not fit, <name>_overflow_index (u64,
 * ascending event numbers) and <name>_overflow_values (their true int64
 * values). */
static void write_delta_columns(struct writer *w, hid_t ev, size_t n) {
  for (int c = 0; c < SP_DELTA_NCOLS; c++) {
    const struct sp_delta_col *d = &w->delta.col[c];
    write_array(w, ev, d->name, sp__h5_uint_type(d->width, 0), sp__h5_uint_type(d->width, 1), n, d->data, 1);
    if (!d->nov) continue;
    char name[64];
    snprintf(name, sizeof name, "%s_overflow_index", d->name);
    write_array(w, ev, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, d->nov, d->ov_index, 1);
    snprintf(name, sizeof name, "%s_overflow_values", d->name);
    write_array(w, ev, name, H5T_STD_I64LE, H5T_NATIVE_INT64, d->nov, d->ov_value, 1);
  }
}

/* An empty, extendible overflow list of a coded column, which a streamed
 * run's filler appends to (index: uint64; values: int64), filtered like the
 * event columns. */
static hid_t create_list(struct writer *w, hid_t ev, const char *column, int values) {
  char name[64];
  snprintf(name, sizeof name, "%s_overflow_%s", column, values ? "values" : "index");
  hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = 4096;
  hid_t space = H5Screate_simple(1, &zero, &unlimited);
  hid_t dcpl = sp__event_dcpl(w->cfg, (size_t)chunk, 8, w->nevents, w->schema);
  if (dcpl >= 0 && H5Pget_layout(dcpl) != H5D_CHUNKED) H5Pset_chunk(dcpl, 1, &chunk);
  hid_t ds = space >= 0 && dcpl >= 0
                 ? H5Dcreate2(ev, name, values ? H5T_STD_I64LE : H5T_STD_U64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                 : -1;
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  if (ds < 0) w->failed = 1;
  return ds;
}

/* The event columns. A run streamed through a staging file (bounded memory)
 * has no arrays: its datasets are created full-size and its filler writes
 * them piece by piece, updating the rows' statistics as it goes, which is
 * why it runs before the index is written. */
static void write_events(struct writer *w, const struct sp_run *run) {
  hid_t root = w->file;
  hid_t ev = H5Gcreate2(root, "events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  size_t n = run->nevents;
  if (run->fill_events) {
    static const char *const plain[] = {"start_times", "end_times", "call_ids", "parent_ids"};
    const char *const *coded = sp__delta_col_names;
    const char *const *base = w->schema == 3 ? coded : plain;
    size_t ncols = 4 + run->nextra, nd = ncols + (w->schema == 3 ? 8 : 0);
    hid_t *ds = calloc(nd, sizeof *ds);
    hsize_t dims = n;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    for (size_t i = 0; ds && i < ncols; i++) {
      /* schema 3: the coded columns in 4 bytes, what does not fit listed */
      int u32 = (i >= 4 && run->extra[i - 4].type == SP_COL_U32) || (i < 4 && w->schema == 3);
      hid_t dcpl = event_dcpl(w, n, u32 ? 4 : 8);
      ds[i] = H5Dcreate2(ev, i < 4 ? base[i] : run->extra[i - 4].name, u32 ? H5T_STD_U32LE : H5T_STD_I64LE,
                         space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      H5Pclose(dcpl);
      if (ds[i] < 0) w->failed = 1;
      if (ds[i] >= 0 && i >= 4 && run->extra[i - 4].unit && *run->extra[i - 4].unit)
        sp__h5_attr_str(ds[i], "units", run->extra[i - 4].unit, &w->failed);
    }
    H5Sclose(space);
    for (size_t i = ncols; ds && i < nd; i++) ds[i] = create_list(w, ev, coded[(i - ncols) / 2], (i - ncols) % 2);
    if (!ds || w->failed || run->fill_events(run->fill_ctx, ds, nd, w->schema == 3) != SP_OK) w->failed = 1;
    for (size_t i = 0; ds && i < nd; i++) {
      if (ds[i] <= 0) continue;
      /* an empty overflow list is left out, as in-memory runs leave it */
      hsize_t len = 0;
      hid_t sp = i >= ncols ? H5Dget_space(ds[i]) : -1;
      if (sp >= 0) H5Sget_simple_extent_dims(sp, &len, NULL);
      if (sp >= 0) H5Sclose(sp);
      char name[64] = "";
      if (i >= ncols) H5Iget_name(ds[i], name, sizeof name);
      H5Dclose(ds[i]);
      if (i >= ncols && len == 0 && name[0] && H5Ldelete(w->file, name, H5P_DEFAULT) < 0) w->failed = 1;
    }
    free(ds);
    H5Gclose(ev);
    return;
  }
  if (w->schema == 3) {
    write_delta_columns(w, ev, n);
  } else {
    write_array(w, ev, "start_times", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->start, 1);
    write_array(w, ev, "end_times", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->end, 1);
    write_array(w, ev, "call_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->call_id, 1);
    write_array(w, ev, "parent_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, n, run->parent_id, 1);
  }
  for (size_t i = 0; i < run->nextra; i++) write_column(w, ev, &run->extra[i], n, 1);
  H5Gclose(ev);

}

static void write_run_body(struct writer *w, const struct sp_run *run);

static void write_run(struct writer *w, const struct sp_run *run) {
  w->schema = !w->cfg || w->cfg->hdf5_schema == 2 ? 2 : 3;
  w->nevents = run->nevents;
  /* A streamed run's datasets are created before its events are known, so
   * no width can be chosen: its filler codes them in 8 bytes (delta.c). */
  if (w->schema == 3 && !run->fill_events && sp__delta_encode(run, &w->delta) != SP_OK) {
    w->failed = 1;
    return;
  }
  write_run_body(w, run);
  sp__delta_free(&w->delta);
}

static void write_run_body(struct writer *w, const struct sp_run *run) {
  if (run->fill_events) write_events(w, run);
  hid_t root = w->file;
  sp__h5_write_head(root, w->schema, run->layout, &run->meta, &w->failed);

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
    hid_t st = sp__h5_summary_type();
    write_array(w, ri, "summary_statistics", st, st, k, sum, 0);
    H5Tclose(st);
    if (w->schema == 3 && run->fill_events) { /* the filler set them */
      int64_t *bs = malloc(kk * sizeof *bs), *bc = malloc(kk * sizeof *bc);
      for (size_t i = 0; bs && bc && i < k; i++) {
        bs[i] = run->rows[i].start_base;
        bc[i] = run->rows[i].call_id_base;
      }
      if (bs && bc) {
        write_array(w, ri, "start_bases", H5T_STD_I64LE, H5T_NATIVE_INT64, k, bs, 0);
        write_array(w, ri, "call_id_bases", H5T_STD_I64LE, H5T_NATIVE_INT64, k, bc, 0);
      } else {
        w->failed = 1;
      }
      free(bs);
      free(bc);
    } else if (w->schema == 3) {
      write_array(w, ri, "start_bases", H5T_STD_I64LE, H5T_NATIVE_INT64, k, w->delta.start_bases, 0);
      write_array(w, ri, "call_id_bases", H5T_STD_I64LE, H5T_NATIVE_INT64, k, w->delta.call_id_bases, 0);
    }
    if (strcmp(run->layout, "aggregate") == 0)
      write_array(w, ri, "aggregate_counts", H5T_STD_I64LE, H5T_NATIVE_INT64, k, i64c, 0);
    H5Gclose(ri);
  }
  free(u32a); free(u32b); free(u64a); free(u64b); free(i64a); free(i64b); free(i64c);
  free(sa); free(sb); free(sc); free(sum);

  if (!run->fill_events) write_events(w, run);

  for (size_t i = 0; i < run->ntables; i++) {
    const struct sp_table *t = &run->tables[i];
    hid_t g = H5Gcreate2(root, t->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (size_t c = 0; c < t->ncols; c++) write_column(w, g, &t->cols[c], t->nrows, 0);
    for (size_t c = 0; c < t->nstr; c++)
      write_strings(w, g, t->str_cols_names[c], t->nrows, (const char **)t->str_cols[c]);
    H5Gclose(g);
  }
  sp__h5_write_aux(w->file, run->aux, run->naux, &w->failed);
}

static sp_status validate_filters(const struct sp_config *cfg) { return sp__filters_check(cfg); }

/* Files up to this size are built in memory by HDF5 and written out by us:
 * an I/O error (a full disk) then happens outside HDF5, which 1.10 cannot
 * recover from (a file whose close failed crashes it at exit). Larger runs,
 * and bounded-memory ones, are written by HDF5 directly. */
#define SP_IMAGE_MAX ((uint64_t)256 << 20)

static uint64_t estimated_size(const struct sp_run *run) {
  return (uint64_t)run->nevents * (32 + 8 * (uint64_t)run->nextra) + (uint64_t)run->nrows * 512 + (1u << 20);
}

static sp_status write_image_file(const struct sp_run *run, const struct sp_config *cfg, const char *path) {
  void *image = NULL;
  size_t size = 0;
  sp_status st = sp__h5_write_image(run, cfg, &image, &size);
  if (st != SP_OK) return st;
  char *tmp = NULL;
  if ((st = sp__h5_tmp_create(path, &tmp)) != SP_OK) {
    free(image);
    return st;
  }
  /* Created afresh with O_EXCL: never through a symlink planted at the name,
   * and with the mode the umask gives. */
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  int failed = fd < 0;
  const char *p = image;
  for (size_t left = size; !failed && left;) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) failed = 1;
    else {
      p += w;
      left -= (size_t)w;
    }
  }
  if (fd >= 0 && close(fd) != 0) failed = 1;
  free(image);
  if (failed && fd < 0) {
    int e = errno;
    free(tmp);
    return sp__set_error(SP_ERR_IO,
                         "could not create the temporary file for %s: %s (something appeared at its name, "
                         "e.g. a planted symlink); nothing was written through it",
                         path, strerror(e));
  }
  return sp__h5_publish(tmp, path, failed);
}

sp_status sp__h5_write_file(const struct sp_run *run, const struct sp_config *cfg, const char *path) {
  sp_status st = validate_filters(cfg);
  if (st != SP_OK) return st;
  if (!run->fill_events && estimated_size(run) <= SP_IMAGE_MAX) return write_image_file(run, cfg, path);
  char *tmp = NULL;
  if ((st = sp__h5_tmp_create(path, &tmp)) != SP_OK) return st;

  /* HDF5 opens the file by name: with H5F_ACC_TRUNC it would follow a
   * symlink planted at the reserved name and overwrite its target. Free the
   * name and let HDF5 create it with O_CREAT|O_EXCL instead, which never
   * follows a symlink (a planted one makes the create fail) and applies the
   * umask itself. */
  unlink(tmp);
  hid_t fapl = sp__h5_file_access();
  struct writer w = {.cfg = cfg};
  H5E_BEGIN_TRY { w.file = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl); }
  H5E_END_TRY;
  H5Pclose(fapl);
  if (w.file < 0) {
    unlink(tmp);
    free(tmp);
    return sp__set_error(SP_ERR_IO, "HDF5 could not create a temporary file beside %s (directory not "
                         "writable, disk full, or its name was taken meanwhile); nothing was written", path);
  }
  H5E_BEGIN_TRY { write_run(&w, run); }
  H5E_END_TRY;
  if (H5Fclose(w.file) < 0) w.failed = 1;
  return sp__h5_publish(tmp, path, w.failed);
}

sp_status sp__h5_write_image(const struct sp_run *run, const struct sp_config *cfg, void **image, size_t *size) {
  *image = NULL;
  *size = 0;
  sp_status st = validate_filters(cfg);
  if (st != SP_OK) return st;
  hid_t fapl = sp__h5_file_access();
  H5Pset_fapl_core(fapl, 1 << 20, 0); /* memory only, nothing touches disk */
  struct writer w = {.cfg = cfg};
  /* A name of its own: HDF5 would refuse (or share) a second in-memory
   * file of the same name created while another is open. */
  static _Atomic unsigned long serial;
  char name[64];
  snprintf(name, sizeof name, "scope_profiler_results-%lu.h5", ++serial);
  H5E_BEGIN_TRY { w.file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl); }
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

int sp__h5_append(int64_t dset, enum sp_slice_type type, uint64_t n, const void *data) {
  if (n == 0) return 0;
  hid_t fs = H5Dget_space(dset);
  hsize_t len = 0;
  int bad = fs < 0 || H5Sget_simple_extent_dims(fs, &len, NULL) < 0;
  if (fs >= 0) H5Sclose(fs);
  if (bad) return -1;
  hsize_t grown = len + n;
  if (H5Dset_extent(dset, &grown) < 0) return -1;
  return sp__h5_write_slice(dset, type, len, n, data);
}

int sp__h5_write_slice(int64_t dset, enum sp_slice_type type, uint64_t off, uint64_t n, const void *data) {
  hsize_t start = off, count = n;
  hid_t fs = H5Dget_space(dset);
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
  hid_t ms = H5Screate_simple(1, &count, NULL);
  hid_t mt = type == SP_SLICE_U32 ? H5T_NATIVE_UINT32 : type == SP_SLICE_U64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
  herr_t rc = H5Dwrite(dset, mt, ms, fs, H5P_DEFAULT, data);
  H5Sclose(ms);
  H5Sclose(fs);
  return rc < 0 ? -1 : 0;
}
