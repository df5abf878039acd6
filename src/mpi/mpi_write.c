/* mpi_write.c - one schema-3 file (or schema 2, hdf5_schema=2) for the whole
 * job, and the job's results and summary on rank 0.
 *
 * All writers share one plan (mpi_layout.c): the layout says which datasets
 * the file has and how long they are, each rank's place says where its rows,
 * events and table rows go. Creating the datasets and writing one part are
 * the same code for every writer, so the same run gives the same content
 * whichever wrote it:
 *
 *   direct    Rank 0 creates the file (exclusive temporary name next to the
 *             destination) with every dataset at its final size, writes the
 *             metadata and its own part, closes it and hands an ownership
 *             token (the temporary name) to rank 1, which opens the file with
 *             serial HDF5, writes its part, closes and syncs it and passes
 *             the token on; the last rank returns it to rank 0, which
 *             publishes the file by rename. Only names and sizes ever reach
 *             rank 0; each rank's events go from its memory to the file.
 *   parallel  Every rank opens the temporary file collectively through
 *             parallel HDF5 and writes its hyperslab of every numeric dataset
 *             (collective I/O) after the exchange of sizes. Parallel HDF5
 *             cannot write variable-length strings, so rank 0 then adds them
 *             (metadata, region names, source files and texts, tags, table
 *             strings: gathered, never events) with serial HDF5 and
 *             publishes.
 *   memory    Results with deactivate_file_output (or after a failed write):
 *             every part is gathered to rank 0 and written into an in-memory
 *             HDF5 file, which the reader opens.
 *
 * A rank without some event or table column (settings differ between
 * ranks) gets -1 there; the "ranks" column of a table always holds the rank.
 */
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "core/summary.h"
#include "mpi/mpi_internal.h"
#include "output/delta.h"
#include "output/filters.h"
#include "output/h5common.h"

#define W_NUMERIC 1u
#define W_STRINGS 2u

/* The token the direct writer passes from rank to rank. */
struct token {
  int32_t status;
  int32_t failed_rank;
  char tmp[PATH_MAX + 64];
};

/*====== Verdicts ======*/

/* Collective: every rank learns the first failing rank's status and
 * message (or SP_OK). */
static sp_status verdict(sp_status st) {
  MPI_Comm comm = sp__mpi.comm;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  int who = st != SP_OK ? rank : size, first = size;
  PMPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return SP_OK;
  struct {
    int32_t st;
    char msg[1024];
  } v;
  memset(&v, 0, sizeof v);
  if (rank == first) {
    v.st = (int32_t)st;
    snprintf(v.msg, sizeof v.msg, "%s", sp_last_error());
  }
  PMPI_Bcast(&v, (int)sizeof v, MPI_BYTE, first, comm);
  if (rank == first || first == 0) return sp__set_error((sp_status)v.st, "%s", v.msg);
  return sp__set_error((sp_status)v.st, "rank %d: %s", first, v.msg);
}

/*====== Datasets ======*/

static hid_t group(hid_t file, const char *name) {
  hid_t g = -1;
  H5E_BEGIN_TRY { g = H5Gopen2(file, name, H5P_DEFAULT); }
  H5E_END_TRY;
  return g >= 0 ? g : H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

static void create_ds(hid_t g, const char *name, hid_t ftype, uint64_t n, hid_t dcpl, int *failed) {
  hsize_t dims = n;
  hid_t space = H5Screate_simple(1, &dims, NULL);
  hid_t own = dcpl < 0 ? H5Pcreate(H5P_DATASET_CREATE) : dcpl;
  hid_t ds = space >= 0 && own >= 0 ? H5Dcreate2(g, name, ftype, space, H5P_DEFAULT, own, H5P_DEFAULT) : -1;
  if (ds < 0) *failed = 1;
  else H5Dclose(ds);
  if (own >= 0) H5Pclose(own);
  if (space >= 0) H5Sclose(space);
}

static hid_t col_ftype(enum sp_col_type t) { return t == SP_COL_U32 ? H5T_STD_U32LE : H5T_STD_I64LE; }
static hid_t col_mtype(enum sp_col_type t) { return t == SP_COL_U32 ? H5T_NATIVE_UINT32 : H5T_NATIVE_INT64; }
static size_t col_elem(enum sp_col_type t) { return t == SP_COL_U32 ? 4 : 8; }

/* Every group and dataset of the job's file at its final size: the numeric
 * ones, the string ones, or both. Collective under parallel HDF5. */
static void job_create(hid_t file, const struct sp_mpi_layout *L, const struct sp_config *cfg, unsigned what,
                       int *failed) {
  hid_t st = sp__h5_str_type(), sum = sp__h5_summary_type();
  hid_t ri = group(file, "rank_region_index"), ev = group(file, "events");
  if (ri < 0 || ev < 0) *failed = 1;
  uint64_t k = L->nrows, n = L->nevents;
  if (what & W_NUMERIC && !*failed) {
    create_ds(ri, "region_ids", H5T_STD_U32LE, k, -1, failed);
    create_ds(ri, "ranks", H5T_STD_U32LE, k, -1, failed);
    create_ds(ri, "event_offsets", H5T_STD_U64LE, k, -1, failed);
    create_ds(ri, "event_counts", H5T_STD_U64LE, k, -1, failed);
    create_ds(ri, "source_lines", H5T_STD_I64LE, k, -1, failed);
    create_ds(ri, "exclusive_totals", H5T_STD_I64LE, k, -1, failed);
    create_ds(ri, "summary_statistics", sum, k, -1, failed);
    if (strcmp(L->layout, "aggregate") == 0) create_ds(ri, "aggregate_counts", H5T_STD_I64LE, k, -1, failed);
    if (L->schema == 3) {
      create_ds(ri, "start_bases", H5T_STD_I64LE, k, -1, failed);
      create_ds(ri, "call_id_bases", H5T_STD_I64LE, k, -1, failed);
      for (int c = 0; c < SP_DELTA_NCOLS; c++) {
        create_ds(ev, sp__delta_col_names[c], sp__h5_uint_type(L->width[c], 0), n, sp__event_dcpl(cfg, n, L->width[c], n, 3),
                  failed);
        if (!L->nov[c]) continue;
        char name[64];
        snprintf(name, sizeof name, "%s_overflow_index", sp__delta_col_names[c]);
        create_ds(ev, name, H5T_STD_U64LE, L->nov[c], sp__event_dcpl(cfg, L->nov[c], 8, n, 3), failed);
        snprintf(name, sizeof name, "%s_overflow_values", sp__delta_col_names[c]);
        create_ds(ev, name, H5T_STD_I64LE, L->nov[c], sp__event_dcpl(cfg, L->nov[c], 8, n, 3), failed);
      }
    } else {
      static const char *const cols[] = {"start_times", "end_times", "call_ids", "parent_ids"};
      for (size_t i = 0; i < 4; i++) create_ds(ev, cols[i], H5T_STD_I64LE, n, sp__event_dcpl(cfg, n, 8, n, 2), failed);
    }
    for (size_t i = 0; i < L->nextra; i++)
      create_ds(ev, L->extra[i].name, col_ftype(L->extra[i].type), n,
                sp__event_dcpl(cfg, n, col_elem(L->extra[i].type), n, L->schema), failed);
  }
  if (what & W_STRINGS && !*failed) {
    create_ds(ri, "source_files", st, k, -1, failed);
    create_ds(ri, "source_texts", st, k, -1, failed);
    create_ds(ri, "tags", st, k, -1, failed);
  }
  for (size_t t = 0; t < L->ntables && !*failed; t++) {
    const struct sp_mpi_table *tb = &L->tables[t];
    hid_t g = group(file, tb->name);
    if (g < 0) {
      *failed = 1;
      break;
    }
    for (size_t c = 0; what & W_NUMERIC && c < tb->ncols; c++)
      create_ds(g, tb->cols[c].name, col_ftype(tb->cols[c].type), tb->nrows, -1, failed);
    for (size_t c = 0; what & W_STRINGS && c < tb->nstr; c++) create_ds(g, tb->str_names[c], st, tb->nrows, -1, failed);
    H5Gclose(g);
  }
  if (ri >= 0) H5Gclose(ri);
  if (ev >= 0) H5Gclose(ev);
  H5Tclose(st);
  H5Tclose(sum);
}

/* Writes values [off, off+n) of the dataset at `path` (of `total` values).
 * Under collective I/O every rank takes part, with an empty selection when
 * it has nothing for this dataset. */
static void put(hid_t file, const char *path, hid_t mtype, uint64_t off, uint64_t n, const void *data, uint64_t total,
                hid_t dxpl, int collective, int *failed) {
  if (total == 0 || (n == 0 && !collective)) return;
  hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  if (ds < 0) {
    *failed = 1;
    return;
  }
  hid_t fs = H5Dget_space(ds);
  hsize_t o = off, c = n ? n : 1;
  hid_t ms = H5Screate_simple(1, &c, NULL);
  static const int64_t dummy[1] = {0};
  if (n) {
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &o, NULL, &c, NULL);
  } else {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
    data = dummy;
  }
  if (H5Dwrite(ds, mtype, ms, fs, dxpl, data) < 0) *failed = 1;
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(ds);
}

static const struct sp_table *part_table(const struct sp_run *p, const char *name) {
  for (size_t i = 0; i < p->ntables; i++)
    if (strcmp(p->tables[i].name, name) == 0) return &p->tables[i];
  return NULL;
}

static const struct sp_column *find_col(const struct sp_column *cols, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(cols[i].name, name) == 0) return &cols[i];
  return NULL;
}

/* n values of a column the part lacks: -1 (all ones for u32). */
static void *filler(size_t n, enum sp_col_type t) {
  void *d = malloc((n ? n : 1) * col_elem(t));
  if (d) memset(d, 0xff, (n ? n : 1) * col_elem(t));
  return d;
}

/* Schema 3: the part's coded columns, its overflow entries (event numbers
 * made job-wide) and its rows' bases. Every rank takes part in every write,
 * with nothing when it has nothing (collective I/O). */
static void put_coded(hid_t file, const struct sp_mpi_layout *L, const struct sp_mpi_place *pl,
                      const struct sp_run *part, const struct sp_delta *d, hid_t dxpl, int coll, int *failed) {
  uint64_t n = d ? part->nevents : 0, k = d ? part->nrows : 0;
  put(file, "rank_region_index/start_bases", H5T_NATIVE_INT64, pl->row0, k, d ? d->start_bases : NULL, L->nrows,
      dxpl, coll, failed);
  put(file, "rank_region_index/call_id_bases", H5T_NATIVE_INT64, pl->row0, k, d ? d->call_id_bases : NULL,
      L->nrows, dxpl, coll, failed);
  for (int c = 0; c < SP_DELTA_NCOLS; c++) {
    char path[96];
    snprintf(path, sizeof path, "events/%s", sp__delta_col_names[c]);
    put(file, path, sp__h5_uint_type(L->width[c], 1), pl->ev0, n, d ? d->col[c].data : NULL, L->nevents, dxpl, coll,
        failed);
    if (!L->nov[c]) continue;
    size_t m = d ? d->col[c].nov : 0;
    uint64_t *idx = malloc((m ? m : 1) * sizeof *idx);
    if (!idx) {
      *failed = 1;
      m = 0;
    }
    for (size_t i = 0; i < m; i++) idx[i] = pl->ev0 + d->col[c].ov_index[i];
    snprintf(path, sizeof path, "events/%s_overflow_index", sp__delta_col_names[c]);
    put(file, path, H5T_NATIVE_UINT64, pl->ov0[c], m, idx, L->nov[c], dxpl, coll, failed);
    snprintf(path, sizeof path, "events/%s_overflow_values", sp__delta_col_names[c]);
    put(file, path, H5T_NATIVE_INT64, pl->ov0[c], m, d ? d->col[c].ov_value : NULL, L->nov[c], dxpl, coll,
        failed);
    free(idx);
  }
}

/* One rank's part at its place in the job's file. */
static void job_part(hid_t file, const struct sp_mpi_layout *L, const struct sp_mpi_place *pl,
                     const struct sp_run *part, const struct sp_delta *d, uint32_t rank, hid_t dxpl, unsigned what,
                     int *failed) {
  int coll = dxpl != H5P_DEFAULT;
  size_t k = part->nrows, kk = k ? k : 1;
  if (what & W_NUMERIC) {
    uint32_t *ids = malloc(kk * sizeof *ids), *rk = malloc(kk * sizeof *rk);
    uint64_t *offs = malloc(kk * sizeof *offs), *cnt = malloc(kk * sizeof *cnt);
    int64_t *lines = malloc(kk * sizeof *lines), *excl = malloc(kk * sizeof *excl), *agg = malloc(kk * sizeof *agg);
    struct sp_summary *sum = malloc(kk * sizeof *sum);
    if (!ids || !rk || !offs || !cnt || !lines || !excl || !agg || !sum) {
      *failed = 1;
      k = 0; /* still take part in the collective writes */
    }
    for (size_t i = 0; i < k; i++) {
      const struct sp_row *r = &part->rows[i];
      ids[i] = r->region < pl->nnames ? pl->name_map[r->region] : 0;
      rk[i] = rank;
      offs[i] = pl->ev0 + r->offset;
      cnt[i] = r->count;
      lines[i] = r->source_line;
      excl[i] = r->exclusive_total;
      agg[i] = r->aggregate_count;
      sum[i] = r->stats;
    }
    uint64_t o = pl->row0, T = L->nrows;
    put(file, "rank_region_index/region_ids", H5T_NATIVE_UINT32, o, k, ids, T, dxpl, coll, failed);
    put(file, "rank_region_index/ranks", H5T_NATIVE_UINT32, o, k, rk, T, dxpl, coll, failed);
    put(file, "rank_region_index/event_offsets", H5T_NATIVE_UINT64, o, k, offs, T, dxpl, coll, failed);
    put(file, "rank_region_index/event_counts", H5T_NATIVE_UINT64, o, k, cnt, T, dxpl, coll, failed);
    put(file, "rank_region_index/source_lines", H5T_NATIVE_INT64, o, k, lines, T, dxpl, coll, failed);
    put(file, "rank_region_index/exclusive_totals", H5T_NATIVE_INT64, o, k, excl, T, dxpl, coll, failed);
    hid_t st = sp__h5_summary_type();
    put(file, "rank_region_index/summary_statistics", st, o, k, sum, T, dxpl, coll, failed);
    H5Tclose(st);
    if (strcmp(L->layout, "aggregate") == 0)
      put(file, "rank_region_index/aggregate_counts", H5T_NATIVE_INT64, o, k, agg, T, dxpl, coll, failed);
    free(ids), free(rk), free(offs), free(cnt), free(lines), free(excl), free(agg), free(sum);

    uint64_t e = pl->ev0, n = part->nevents, N = L->nevents;
    if (L->schema == 3) {
      put_coded(file, L, pl, part, d, dxpl, coll, failed);
    } else {
      put(file, "events/start_times", H5T_NATIVE_INT64, e, n, part->start, N, dxpl, coll, failed);
      put(file, "events/end_times", H5T_NATIVE_INT64, e, n, part->end, N, dxpl, coll, failed);
      put(file, "events/call_ids", H5T_NATIVE_INT64, e, n, part->call_id, N, dxpl, coll, failed);
      put(file, "events/parent_ids", H5T_NATIVE_INT64, e, n, part->parent_id, N, dxpl, coll, failed);
    }
    for (size_t i = 0; i < L->nextra; i++) {
      const struct sp_column *c = find_col(part->extra, part->nextra, L->extra[i].name);
      void *fill = c ? NULL : filler(n, L->extra[i].type);
      char *path = sp__asprintf("events/%s", L->extra[i].name);
      if ((!c && !fill) || !path) *failed = 1;
      put(file, path ? path : "events/?", col_mtype(L->extra[i].type), e, (c || fill) ? n : 0,
          c ? c->data : fill, N, dxpl, coll, failed);
      free(path);
      free(fill);
    }
  }
  if (what & W_STRINGS) {
    const char **a = malloc(kk * sizeof *a), **b = malloc(kk * sizeof *b), **c = malloc(kk * sizeof *c);
    if (!a || !b || !c) {
      *failed = 1;
      k = 0;
    }
    for (size_t i = 0; i < k; i++) {
      const struct sp_row *r = &part->rows[i];
      a[i] = r->source_file ? r->source_file : "";
      b[i] = r->source_text ? r->source_text : "";
      c[i] = r->tags_json ? r->tags_json : "[]";
    }
    hid_t st = sp__h5_str_type();
    put(file, "rank_region_index/source_files", st, pl->row0, k, a, L->nrows, dxpl, coll, failed);
    put(file, "rank_region_index/source_texts", st, pl->row0, k, b, L->nrows, dxpl, coll, failed);
    put(file, "rank_region_index/tags", st, pl->row0, k, c, L->nrows, dxpl, coll, failed);
    H5Tclose(st);
    free(a), free(b), free(c);
  }
  for (size_t t = 0; t < L->ntables; t++) {
    const struct sp_mpi_table *lt = &L->tables[t];
    const struct sp_table *pt = part_table(part, lt->name);
    uint64_t n = pt ? pt->nrows : 0, o = t < pl->ntables ? pl->table_row0[t] : 0;
    for (size_t c = 0; what & W_NUMERIC && c < lt->ncols; c++) {
      const struct sp_column *pc = pt ? find_col(pt->cols, pt->ncols, lt->cols[c].name) : NULL;
      int ranks = strcmp(lt->cols[c].name, "ranks") == 0 && lt->cols[c].type == SP_COL_U32;
      void *fill = NULL;
      if (ranks || !pc) {
        fill = filler(n, lt->cols[c].type);
        for (uint64_t i = 0; ranks && fill && i < n; i++) ((uint32_t *)fill)[i] = rank;
      }
      char *path = sp__asprintf("%s/%s", lt->name, lt->cols[c].name);
      if ((!pc && !fill) || !path) *failed = 1;
      put(file, path ? path : "?", col_mtype(lt->cols[c].type), o, (fill || pc) ? n : 0, fill ? fill : pc->data,
          lt->nrows, dxpl, coll, failed);
      free(path);
      free(fill);
    }
    for (size_t c = 0; what & W_STRINGS && c < lt->nstr; c++) {
      char **col = NULL;
      for (size_t q = 0; pt && q < pt->nstr; q++)
        if (strcmp(pt->str_cols_names[q], lt->str_names[c]) == 0) col = pt->str_cols[q];
      const char **v = malloc((n ? n : 1) * sizeof *v);
      if (!v) *failed = 1;
      for (uint64_t i = 0; v && i < n; i++) v[i] = col && col[i] ? col[i] : "";
      char *path = sp__asprintf("%s/%s", lt->name, lt->str_names[c]);
      if (!path) *failed = 1;
      hid_t st = sp__h5_str_type();
      put(file, path ? path : "?", st, o, v ? n : 0, v, lt->nrows, dxpl, coll, failed);
      H5Tclose(st);
      free(path);
      free(v);
    }
  }
}

static void write_i64s(hid_t g, const char *name, const int64_t *v, size_t n, int *failed) {
  hsize_t dims = n;
  hid_t space = H5Screate_simple(1, &dims, NULL);
  hid_t ds = H5Dcreate2(g, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds < 0 || (n && H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)) *failed = 1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
}

static void write_strs(hid_t g, const char *name, const char *const *v, size_t n, int *failed) {
  hsize_t dims = n;
  hid_t t = sp__h5_str_type();
  hid_t space = H5Screate_simple(1, &dims, NULL);
  hid_t ds = H5Dcreate2(g, name, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds < 0 || (n && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)) *failed = 1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  H5Tclose(t);
}

/* Rank 0's share: root attributes, /metadata, the region table and /ranks
 * (clock offsets, host names). Serial HDF5 only (strings). */
static void job_head(hid_t file, const struct sp_mpi_layout *L, const struct sp_meta *meta, int *failed) {
  sp__h5_write_head(file, L->schema == 3 ? 3 : 2, L->layout, meta, failed);
  hid_t rt = group(file, "region_table");
  if (rt < 0) {
    *failed = 1;
    return;
  }
  write_strs(rt, "names", (const char *const *)L->names, L->nnames, failed);
  H5Gclose(rt);
  hid_t g = group(file, "ranks");
  if (g < 0) {
    *failed = 1;
    return;
  }
  size_t n = (size_t)sp__mpi.size;
  int64_t *zeros = calloc(n + 1, sizeof *zeros);
  if (!zeros) *failed = 1;
  const int64_t *off = sp__mpi.clock_offsets ? sp__mpi.clock_offsets : zeros;
  const int64_t *err = sp__mpi.clock_errors ? sp__mpi.clock_errors : zeros;
  if (zeros) {
    write_i64s(g, "clock_offsets_ns", off, n, failed);
    write_i64s(g, "clock_offset_errors_ns", err, n, failed);
    sp__h5_attr_num(g, "clock_offsets_time_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, &sp__mpi.clock_time, failed);
    if (sp__mpi.have_sync && sp__mpi.sync_offsets) {
      write_i64s(g, "sync_clock_offsets_ns", sp__mpi.sync_offsets, n, failed);
      write_i64s(g, "sync_clock_offset_errors_ns", sp__mpi.sync_errors, n, failed);
      sp__h5_attr_num(g, "sync_clock_offsets_time_ns", H5T_STD_I64LE, H5T_NATIVE_INT64, &sp__mpi.sync_time, failed);
    }
  }
  if (sp__mpi.hosts) write_strs(g, "hostnames", (const char *const *)sp__mpi.hosts, n, failed);
  free(zeros);
  H5Gclose(g);
}

/*====== direct ======*/

/* Serial access to the job's file: the token (or the collective close
 * before rank 0 reopens it) already makes access exclusive, and flock only
 * fails on shared filesystems that lack it. */
static hid_t direct_fapl(void) {
  hid_t fapl = sp__h5_file_access();
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl, 0, 1);
#endif
  return fapl;
}

static sp_status write_direct(const struct sp_run *run, const struct sp_config *cfg, const char *path,
                              const struct sp_mpi_layout *L, const struct sp_mpi_place *mine,
                              const struct sp_delta *d) {
  MPI_Comm comm = sp__mpi.comm;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  struct token tok;
  memset(&tok, 0, sizeof tok);
  sp_status st = SP_OK;
  char *tmp = NULL;
  int failed = 0;
  hid_t fapl = direct_fapl();
  if (rank == 0) {
    st = sp__h5_tmp_create(path, &tmp);
    if (st == SP_OK && strlen(tmp) >= sizeof tok.tmp)
      st = sp__set_error(SP_ERR_LIMIT, "MPI: the output path %s is too long", path);
    if (st == SP_OK) {
      snprintf(tok.tmp, sizeof tok.tmp, "%s", tmp);
      hid_t f = -1;
      unlink(tmp); /* created afresh with O_EXCL: never through a planted symlink */
      H5E_BEGIN_TRY {
        f = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
        if (f >= 0) {
          job_head(f, L, &run->meta, &failed);
          job_create(f, L, cfg, W_NUMERIC | W_STRINGS, &failed);
          if (!failed) job_part(f, L, mine, run, d, 0, H5P_DEFAULT, W_NUMERIC | W_STRINGS, &failed);
          if (!failed) sp__h5_write_aux(f, run->aux, run->naux, &failed);
          if (H5Fclose(f) < 0) failed = 1;
        }
      }
      H5E_END_TRY;
      if (f < 0 || failed)
        st = sp__set_error(SP_ERR_IO, "HDF5 could not %s %s (disk full or I/O error?)", f < 0 ? "create" : "write",
                           path);
    }
    tok.status = (int32_t)st;
    tok.failed_rank = st != SP_OK ? 0 : -1;
    if (size > 1) {
      PMPI_Send(&tok, (int)sizeof tok, MPI_BYTE, 1, SP_MPI_TAG_TOKEN, comm);
      PMPI_Recv(&tok, (int)sizeof tok, MPI_BYTE, size - 1, SP_MPI_TAG_TOKEN, comm, MPI_STATUS_IGNORE);
    }
    /* A later rank's failure is reported by that rank's verdict. */
    if (tmp) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", sp_last_error());
      sp_status pub = sp__h5_publish(tmp, path, tok.status != SP_OK);
      if (st == SP_OK && tok.status == SP_OK) st = pub;
      else if (st != SP_OK) sp__set_error(st, "%s", msg);
    }
  } else {
    PMPI_Recv(&tok, (int)sizeof tok, MPI_BYTE, rank - 1, SP_MPI_TAG_TOKEN, comm, MPI_STATUS_IGNORE);
    if (tok.status == SP_OK) {
      hid_t f = -1;
      H5E_BEGIN_TRY {
        f = H5Fopen(tok.tmp, H5F_ACC_RDWR, fapl);
        if (f >= 0) {
          job_part(f, L, mine, run, d, (uint32_t)rank, H5P_DEFAULT, W_NUMERIC | W_STRINGS, &failed);
          if (!failed) sp__h5_write_aux(f, run->aux, run->naux, &failed);
          if (H5Fclose(f) < 0) failed = 1;
        }
      }
      H5E_END_TRY;
      /* The next rank may be on another node: flush past its cache. */
      if (f >= 0 && !failed && sp__h5_fsync_path(tok.tmp) != 0) failed = 1;
      if (f < 0)
        st = sp__set_error(SP_ERR_IO, "rank %d cannot open %s, which rank 0 created: output_mode=\"direct\" needs "
                           "file_path on a filesystem every rank shares", rank, tok.tmp);
      else if (failed)
        st = sp__set_error(SP_ERR_IO, "rank %d could not write its part of %s (disk full or I/O error?)", rank, path);
      if (st != SP_OK) {
        tok.status = (int32_t)st;
        tok.failed_rank = rank;
      }
    }
    PMPI_Send(&tok, (int)sizeof tok, MPI_BYTE, (rank + 1) % size, SP_MPI_TAG_TOKEN, comm);
  }
  H5Pclose(fapl);
  return st;
}

/*====== parallel ======*/

static sp_status write_parallel(const struct sp_run *run, const struct sp_config *cfg, const char *path,
                                const struct sp_mpi_layout *L, const struct sp_mpi_place *mine,
                                const struct sp_mpi_place *all, const struct sp_delta *d) {
#ifndef H5_HAVE_PARALLEL
  (void)run, (void)cfg, (void)path, (void)L, (void)mine, (void)all, (void)d;
  return verdict(sp__set_error(SP_ERR_UNSUPPORTED, "output_mode=\"parallel\" needs an HDF5 built with MPI; this "
                               "build has none: use output_mode=\"direct\""));
#else
  MPI_Comm comm = sp__mpi.comm;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  sp_status st = SP_OK;
  char *tmp = NULL;
  char name[PATH_MAX + 64] = "";
  if (rank == 0) {
    st = sp__h5_tmp_create(path, &tmp);
    if (st == SP_OK && strlen(tmp) >= sizeof name) st = sp__set_error(SP_ERR_LIMIT, "MPI: the output path %s is too long", path);
    if (st == SP_OK) snprintf(name, sizeof name, "%s", tmp);
    if (st == SP_OK) unlink(tmp); /* the collective create below makes it with O_EXCL */
  }
  st = verdict(st);
  if (st != SP_OK) {
    if (tmp) sp__h5_publish(tmp, path, 1);
    return st;
  }
  PMPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, comm);

  int failed = 0;
  hid_t fapl = sp__h5_file_access();
  H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  H5Pset_all_coll_metadata_ops(fapl, 1);
  H5Pset_coll_metadata_write(fapl, 1);
  hid_t f = -1;
  H5E_BEGIN_TRY { f = H5Fcreate(name, H5F_ACC_EXCL, H5P_DEFAULT, fapl); }
  H5E_END_TRY;
  H5Pclose(fapl);
  int bad = f < 0, anybad = 0;
  PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
  if (anybad) {
    if (f >= 0) H5Fclose(f);
    st = bad ? sp__set_error(SP_ERR_IO, "parallel HDF5 could not create %s on rank %d; is file_path on a "
                             "filesystem every rank shares? (output_mode=\"direct\" needs less)", path, rank)
             : SP_OK;
  } else {
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    H5E_BEGIN_TRY {
      job_create(f, L, cfg, W_NUMERIC, &failed);
      /* A failed create is a collective failure: skip the writes together. */
      int fc = failed, anyfc = 0;
      PMPI_Allreduce(&fc, &anyfc, 1, MPI_INT, MPI_MAX, comm);
      if (!anyfc) job_part(f, L, mine, run, d, (uint32_t)rank, dxpl, W_NUMERIC, &failed);
      else failed = 1;
      if (H5Fclose(f) < 0) failed = 1;
    }
    H5E_END_TRY;
    H5Pclose(dxpl);
    if (failed) st = sp__set_error(SP_ERR_IO, "rank %d could not write its part of %s through parallel HDF5", rank, path);
  }
  st = verdict(st);
  if (st != SP_OK) {
    if (rank == 0) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", sp_last_error());
      sp__h5_publish(tmp, path, 1); /* removes the temporary file */
      sp__set_error(st, "%s", msg);
    }
    return st;
  }

  /* The strings, through rank 0 (parallel HDF5 cannot write them). */
  struct sp_mbuf mine_s = {0};
  sp__mpi_run_pack(run, SP_PACK_STRINGS | SP_PACK_AUX, &mine_s);
  if (mine_s.oom) mine_s.n = 0;
  char *blob = NULL;
  size_t *sizes = NULL;
  st = sp__mpi_gather_bytes(&mine_s, &blob, &sizes);
  sp__mb_free(&mine_s);
  if (rank == 0) {
    failed = st != SP_OK;
    hid_t f0 = -1;
    hid_t fa = direct_fapl();
    H5E_BEGIN_TRY {
      if (!failed) f0 = H5Fopen(name, H5F_ACC_RDWR, fa);
      if (f0 >= 0) {
        job_head(f0, L, &run->meta, &failed);
        job_create(f0, L, cfg, W_STRINGS, &failed);
        size_t off = 0;
        for (int r = 0; r < size && !failed; r++) {
          struct sp_mrbuf rb = {blob + off, sizes[r], 0, 0};
          off += sizes[r];
          struct sp_run part;
          if (sizes[r] == 0 || sp__mpi_run_unpack(&rb, SP_PACK_STRINGS | SP_PACK_AUX, &part) != SP_OK) {
            failed = 1;
            break;
          }
          job_part(f0, L, &all[r], &part, NULL, (uint32_t)r, H5P_DEFAULT, W_STRINGS, &failed);
          if (!failed) sp__h5_write_aux(f0, part.aux, part.naux, &failed);
          sp__run_free(&part);
        }
        if (H5Fclose(f0) < 0) failed = 1;
      } else {
        failed = 1;
      }
    }
    H5E_END_TRY;
    H5Pclose(fa);
    if (st == SP_OK) st = sp__h5_publish(tmp, path, failed);
    else sp__h5_publish(tmp, path, 1);
  }
  free(blob);
  free(sizes);
  return verdict(st);
#endif
}

/* A streamed run (run->fill_events: its events live in a staging file and
 * a callback writes them into full-size datasets) is read into arrays
 * first: the job writers place each rank's events at an offset, which the
 * callback cannot do. *use is a shallow copy of run; free with unmaterialize. */
static sp_status materialize(const struct sp_run *run, struct sp_run *use) {
  *use = *run;
  if (!run->fill_events) return SP_OK;
  use->fill_events = NULL;
  use->start = use->end = use->call_id = use->parent_id = NULL;
  use->extra = NULL;
  size_t n = run->nevents, nd = 4 + run->nextra;
  int failed = 0;
  struct sp_column *extra = calloc(run->nextra + 1, sizeof *extra);
  hid_t *ds = calloc(nd, sizeof *ds);
  hid_t fapl = sp__h5_file_access();
  H5Pset_fapl_core(fapl, 1 << 20, 0);
  hid_t f = -1;
  H5E_BEGIN_TRY {
    f = extra && ds ? H5Fcreate("scope_profiler_stream.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
    hsize_t dims = n;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    for (size_t i = 0; f >= 0 && i < nd; i++) {
      char name[32];
      snprintf(name, sizeof name, "c%zu", i);
      int u32 = i >= 4 && run->extra[i - 4].type == SP_COL_U32;
      ds[i] = H5Dcreate2(f, name, u32 ? H5T_STD_U32LE : H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      if (ds[i] < 0) failed = 1;
    }
    H5Sclose(space);
    if (f < 0 || failed || run->fill_events(run->fill_ctx, ds, nd, 0) != SP_OK) failed = 1;
    int64_t **base[4] = {&use->start, &use->end, &use->call_id, &use->parent_id};
    for (size_t i = 0; !failed && i < nd; i++) {
      int u32 = i >= 4 && run->extra[i - 4].type == SP_COL_U32;
      void *d = malloc((n ? n : 1) * (u32 ? 4 : 8));
      if (!d || (n && H5Dread(ds[i], u32 ? H5T_NATIVE_UINT32 : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, d) < 0))
        failed = 1;
      if (i < 4) {
        *base[i] = d;
      } else {
        extra[i - 4] = run->extra[i - 4]; /* the name is borrowed */
        extra[i - 4].data = d;
      }
    }
    for (size_t i = 0; ds && i < nd; i++)
      if (ds[i] > 0) H5Dclose(ds[i]);
    if (f >= 0) H5Fclose(f);
  }
  H5E_END_TRY;
  H5Pclose(fapl);
  free(ds);
  use->extra = extra;
  if (failed || !extra) {
    free(use->start), free(use->end), free(use->call_id), free(use->parent_id);
    for (size_t i = 0; extra && i < run->nextra; i++) free(extra[i].data);
    free(extra);
    *use = *run;
    return sp__set_error(SP_ERR_IO, "MPI: could not read this rank's streamed events back (out of memory?)");
  }
  return SP_OK;
}

static void unmaterialize(const struct sp_run *run, struct sp_run *use) {
  if (!run->fill_events) return;
  free(use->start), free(use->end), free(use->call_id), free(use->parent_id);
  for (size_t i = 0; i < run->nextra; i++) free(use->extra[i].data);
  free(use->extra);
}

/* Schema 3 for a job: every rank's events are coded on that rank (rows
 * never span ranks), in widths agreed from the summed counts, and each rank
 * learns where its overflow entries start. Collective. */
static sp_status plan_coding(const struct sp_run *run, const struct sp_config *cfg, struct sp_mpi_layout *L,
                             struct sp_mpi_place *mine, struct sp_delta *d) {
  MPI_Comm comm = sp__mpi.comm;
  int want = cfg->hdf5_schema == 2 ? 2 : 3, agreed = 3;
  PMPI_Allreduce(&want, &agreed, 1, MPI_INT, MPI_MIN, comm); /* one rank asking for 2 gets 2 */
  L->schema = agreed;
  if (agreed != 3) return SP_OK;
  struct sp_delta_hist mineh, sum;
  sp_status st = sp__delta_count(run, &mineh);
  if (st != SP_OK) memset(&mineh, 0, sizeof mineh);
  PMPI_Allreduce(mineh.n, sum.n, SP_DELTA_NCOLS * 4, MPI_UINT64_T, MPI_SUM, comm);
  sp__delta_widths(&sum, L->width);
  if (st == SP_OK) st = sp__delta_encode_widths(run, L->width, d);
  uint64_t nov[SP_DELTA_NCOLS] = {0}, before[SP_DELTA_NCOLS] = {0};
  for (int c = 0; st == SP_OK && c < SP_DELTA_NCOLS; c++) nov[c] = d->col[c].nov;
  PMPI_Exscan(nov, before, SP_DELTA_NCOLS, MPI_UINT64_T, MPI_SUM, comm);
  PMPI_Allreduce(nov, L->nov, SP_DELTA_NCOLS, MPI_UINT64_T, MPI_SUM, comm);
  for (int c = 0; c < SP_DELTA_NCOLS; c++) mine->ov0[c] = sp__mpi.rank == 0 ? 0 : before[c];
  return verdict(st);
}

sp_status sp__mpi_write(const struct sp_run *src, const struct sp_config *cfg, const char *path) {
  sp__mpi.last_write_ok = 0;
  sp_status st = sp__mpi_ready();
  if (st != SP_OK) return st;
  st = verdict(sp__filters_check(cfg));
  if (st != SP_OK) return st;
  struct sp_run use;
  sp_status mine_ok = materialize(src, &use);
  st = verdict(mine_ok);
  if (st != SP_OK) {
    if (mine_ok == SP_OK) unmaterialize(src, &use);
    return st;
  }
  const struct sp_run *run = &use;
  struct sp_mpi_layout L;
  struct sp_mpi_place mine, *all = NULL;
  st = sp__mpi_layout_exchange(run, &L, &mine, &all);
  if (st != SP_OK) {
    unmaterialize(src, &use);
    return st;
  }
  struct sp_delta d;
  memset(&d, 0, sizeof d);
  st = plan_coding(run, cfg, &L, &mine, &d);
  if (st != SP_OK) {
    /* every rank learnt it from the verdict in plan_coding */
  } else if (sp__mpi.mode == SP__OUTPUT_MODE_PARALLEL) {
    st = write_parallel(run, cfg, path, &L, &mine, all, L.schema == 3 ? &d : NULL);
  } else {
    st = verdict(write_direct(run, cfg, path, &L, &mine, L.schema == 3 ? &d : NULL));
  }
  sp__delta_free(&d);
  sp__mpi.last_write_ok = st == SP_OK;
  unmaterialize(src, &use);
  sp__mpi_layout_free(&L);
  sp__mpi_place_free(&mine);
  for (int r = 0; all && r < sp__mpi.size; r++) sp__mpi_place_free(&all[r]);
  free(all);
  return st;
}

/*====== results ======*/

static sp_status read_file(const char *path, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return sp__set_error(SP_ERR_IO, "cannot read back %s: %s", path, strerror(errno));
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n == cap) {
      char *b = realloc(buf, cap * 2);
      if (!b) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = b;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (!buf || err) {
    free(buf);
    return sp__set_error(buf ? SP_ERR_IO : SP_ERR_NO_MEMORY, "cannot read back %s", path);
  }
  *data = buf;
  *size = n;
  return SP_OK;
}

/* Results of a run with no rows: what ranks other than 0 get. */
static sp_status empty_results(const struct sp_run *run, const struct sp_config *cfg, sp_results **out) {
  struct sp_run e;
  memset(&e, 0, sizeof e);
  e.layout = run->layout;
  e.meta = run->meta; /* borrowed */
  void *image = NULL;
  size_t size = 0;
  sp_status st = sp__h5_write_image(&e, cfg, &image, &size);
  if (st == SP_OK) st = sp_results_open_image(image, size, out);
  free(image);
  return st;
}

/* Rank 0: every part written into an in-memory file. */
static sp_status gathered_image(const struct sp_run *run, const struct sp_config *cfg, const char *blob,
                                const size_t *sizes, void **image, size_t *isize) {
  int size = sp__mpi.size;
  sp_status st = SP_OK;
  struct sp_run *parts = calloc((size_t)size, sizeof *parts);
  struct sp_mpi_place *places = calloc((size_t)size, sizeof *places);
  struct sp_mpi_layout L;
  memset(&L, 0, sizeof L);
  if (!parts || !places) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory gathering the job's results");
  size_t off = 0;
  for (int r = 0; r < size && st == SP_OK; r++) {
    struct sp_mrbuf rb = {blob + off, sizes[r], 0, 0};
    off += sizes[r];
    if (sizes[r] == 0) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: rank %d ran out of memory packing its part", r);
    else st = sp__mpi_run_unpack(&rb, SP_PACK_ALL, &parts[r]);
  }
  if (st == SP_OK) st = sp__mpi_layout_build(parts, size, &L, places);
  /* schema 3 as the job's file would have it: widths from every part's
   * counts, overflow entries rank after rank */
  struct sp_delta *deltas = calloc((size_t)size, sizeof *deltas);
  if (!deltas && st == SP_OK) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory");
  L.schema = cfg->hdf5_schema == 2 ? 2 : 3;
  if (st == SP_OK && L.schema == 3) {
    struct sp_delta_hist sum, h;
    memset(&sum, 0, sizeof sum);
    for (int r = 0; r < size && st == SP_OK; r++) {
      st = sp__delta_count(&parts[r], &h);
      for (int c = 0; st == SP_OK && c < SP_DELTA_NCOLS; c++)
        for (int b = 0; b < 4; b++) sum.n[c][b] += h.n[c][b];
    }
    if (st == SP_OK) sp__delta_widths(&sum, L.width);
    for (int r = 0; r < size && st == SP_OK; r++) {
      st = sp__delta_encode_widths(&parts[r], L.width, &deltas[r]);
      for (int c = 0; st == SP_OK && c < SP_DELTA_NCOLS; c++) {
        places[r].ov0[c] = L.nov[c];
        L.nov[c] += deltas[r].col[c].nov;
      }
    }
  }
  if (st == SP_OK) {
    int failed = 0;
    hid_t fapl = sp__h5_file_access();
    H5Pset_fapl_core(fapl, 1 << 20, 0); /* memory only */
    hid_t f = -1;
    H5E_BEGIN_TRY {
      f = H5Fcreate("scope_profiler_job_results.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
      if (f >= 0) {
        job_head(f, &L, &run->meta, &failed);
        job_create(f, &L, cfg, W_NUMERIC | W_STRINGS, &failed);
        for (int r = 0; r < size && !failed; r++) {
          job_part(f, &L, &places[r], &parts[r], L.schema == 3 ? &deltas[r] : NULL, (uint32_t)r, H5P_DEFAULT,
                   W_NUMERIC | W_STRINGS, &failed);
          if (!failed) sp__h5_write_aux(f, parts[r].aux, parts[r].naux, &failed);
        }
        H5Fflush(f, H5F_SCOPE_GLOBAL);
        ssize_t n = failed ? -1 : H5Fget_file_image(f, NULL, 0);
        if (n > 0 && (*image = malloc((size_t)n)) && H5Fget_file_image(f, *image, (size_t)n) == n) *isize = (size_t)n;
        else failed = 1;
        H5Fclose(f);
      }
    }
    H5E_END_TRY;
    H5Pclose(fapl);
    if (f < 0 || failed) {
      free(*image);
      *image = NULL;
      st = sp__set_error(SP_ERR_IO, "building the job's in-memory results failed (out of memory?)");
    }
  }
  for (int r = 0; parts && r < size; r++) sp__run_free(&parts[r]);
  for (int r = 0; places && r < size; r++) sp__mpi_place_free(&places[r]);
  for (int r = 0; deltas && r < size; r++) sp__delta_free(&deltas[r]);
  free(deltas);
  free(parts);
  free(places);
  sp__mpi_layout_free(&L);
  return st;
}

sp_status sp__mpi_results(const struct sp_run *run, const struct sp_config *cfg, sp_results **out) {
  *out = NULL;
  sp_status st = sp__mpi_ready();
  if (st != SP_OK) return st;
  int rank = sp__mpi.rank;
  void *image = NULL;
  size_t isize = 0;
  if (!cfg->deactivate_file_output && sp__mpi.last_write_ok) {
    /* The job's file is published: rank 0 reads it back, no one talks. */
    if (rank != 0) return empty_results(run, cfg, out);
    st = read_file(cfg->file_path, &image, &isize);
  } else {
    struct sp_mbuf b = {0};
    struct sp_run use;
    if (materialize(run, &use) == SP_OK) {
      sp__mpi_run_pack(&use, SP_PACK_ALL, &b);
      unmaterialize(run, &use);
    } else {
      b.oom = 1; /* rank 0 reports this rank's part as missing */
    }
    if (b.oom) b.n = 0;
    char *blob = NULL;
    size_t *sizes = NULL;
    st = sp__mpi_gather_bytes(&b, &blob, &sizes);
    sp__mb_free(&b);
    if (st == SP_OK && rank == 0) st = gathered_image(run, cfg, blob, sizes, &image, &isize);
    free(blob);
    free(sizes);
    st = verdict(st);
    if (st != SP_OK) {
      free(image);
      return st;
    }
    if (rank != 0) return empty_results(run, cfg, out);
  }
  if (st == SP_OK) st = sp_results_open_image(image, isize, out);
  free(image);
  return st;
}

/*====== summary ======*/

struct merged {
  struct sp_summary s;
  uint64_t calls;
  int64_t excl;
};

void sp__mpi_summary(const struct sp_run *run, const struct sp_config *cfg, FILE *out) {
  if (sp__mpi_ready() != SP_OK) return;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  int agg = strcmp(run->layout, "aggregate") == 0;
  /* Durations and counts only: no timestamps leave the rank. */
  struct sp_mbuf b = {0};
  sp__mb_u64(&b, run->nrows);
  for (size_t i = 0; i < run->nrows; i++) {
    const struct sp_row *r = &run->rows[i];
    struct sp_summary s = r->stats;
    s.start_minimum = s.end_maximum = 0;
    sp__mb_str(&b, run->names[r->region]);
    sp__mb_u64(&b, agg ? (uint64_t)r->aggregate_count : r->count);
    sp__mb_u64(&b, (uint64_t)r->exclusive_total);
    sp__mb_bytes(&b, &s, sizeof s);
  }
  if (b.oom) b.n = 0;
  char *blob = NULL;
  size_t *sizes = NULL;
  sp_status st = sp__mpi_gather_bytes(&b, &blob, &sizes);
  sp__mb_free(&b);
  if (st != SP_OK || rank != 0) {
    free(blob);
    free(sizes);
    return;
  }
  /* Rank 0: combine the rows of each region over the ranks (Chan). */
  struct sp_run job;
  memset(&job, 0, sizeof job);
  job.layout = run->layout;
  size_t cap = 0, off = 0;
  struct merged *mg = NULL;
  for (int r = 0; r < size; r++) {
    struct sp_mrbuf rb = {blob + off, sizes[r], 0, 0};
    off += sizes[r];
    uint64_t n = sp__mr_u64(&rb);
    for (uint64_t i = 0; i < n && !rb.bad; i++) {
      char *name = sp__mr_str(&rb);
      uint64_t calls = sp__mr_u64(&rb);
      int64_t excl = (int64_t)sp__mr_u64(&rb);
      const struct sp_summary *s = sp__mr_bytes(&rb, sizeof *s);
      if (!name || !s) {
        free(name);
        break;
      }
      struct sp_summary sv;
      memcpy(&sv, s, sizeof sv);
      size_t k = 0;
      while (k < job.nnames && strcmp(job.names[k], name) != 0) k++;
      if (k == job.nnames) {
        if (k == cap) {
          cap = cap ? cap * 2 : 32;
          char **nn = realloc(job.names, cap * sizeof *nn);
          struct merged *nm = nn ? realloc(mg, cap * sizeof *nm) : NULL;
          if (nn) job.names = nn;
          if (!nn || !nm) {
            free(name);
            goto done;
          }
          mg = nm;
        }
        job.names[k] = name;
        job.nnames++;
        memset(&mg[k], 0, sizeof mg[k]);
        mg[k].s = sv;
        mg[k].calls = calls;
        mg[k].excl = excl;
        continue;
      }
      free(name);
      struct merged *m = &mg[k];
      if (calls == 0) continue;
      double na = (double)m->calls, nb = (double)calls, delta = sv.mean - m->s.mean;
      if (m->calls == 0) {
        m->s = sv;
      } else {
        m->s.mean += delta * nb / (na + nb);
        m->s.m2 += sv.m2 + delta * delta * na * nb / (na + nb);
        m->s.total += sv.total;
        if (sv.minimum < m->s.minimum) m->s.minimum = sv.minimum;
        if (sv.maximum > m->s.maximum) m->s.maximum = sv.maximum;
      }
      m->calls += calls;
      m->excl += excl;
    }
  }
  job.rows = calloc(job.nnames + 1, sizeof *job.rows);
  if (!job.rows) goto done;
  job.nrows = job.nnames;
  for (size_t k = 0; k < job.nnames; k++) {
    job.rows[k].region = (uint32_t)k;
    job.rows[k].count = mg[k].calls;
    job.rows[k].stats = mg[k].s;
    job.rows[k].exclusive_total = mg[k].excl;
    job.nevents += mg[k].calls;
  }
  {
    char *label = sp__asprintf("%s (%d rank%s)", cfg->display_label ? cfg->display_label : "", size,
                               size == 1 ? "" : "s");
    /* Rank 0's calibrated cost per call stands for every rank's. */
    const struct sp_meta_item *ovh = sp__meta_get(&run->meta, "overhead_ns_per_call");
    sp__summary_print(out, &job, label ? label : cfg->display_label,
                      ovh && ovh->type == SP_META_F64 ? ovh->d : -1.0);
    free(label);
  }
done:
  for (size_t k = 0; k < job.nnames; k++) free(job.names[k]);
  free(job.names);
  free(job.rows);
  free(mg);
  free(blob);
  free(sizes);
}
