/* mpi_write.c - one schema-3 file (or schema 2, hdf5_schema=2) for the whole
 * job, and the job's results and summary on rank 0.
 *
 * All writers go through the dataset plan (output/plan.h): the layout
 * (output/layout.h, agreed in mpi_layout.c) says which datasets the file has
 * and how long they are, each rank's place says where its rows, events and
 * table rows go, and output/h5plan.c creates the datasets and writes a
 * part, for these writers exactly as for the serial one, so the same run
 * gives the same content whichever wrote it:
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
 *             strings, per-rank groups: gathered, never events) with serial
 *             HDF5 and publishes.
 *   memory    Results with deactivate_file_output (or after a failed write):
 *             every part is gathered to rank 0 and written into an in-memory
 *             HDF5 file, which the reader opens.
 *
 * A rank without some event or table column (settings differ between
 * ranks) gets the plan's fill value there (-1 for ids); the "ranks" column
 * of a table always holds the rank.
 */
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/overhead.h"
#include "core/summary.h"
#include "mpi/mpi_internal.h"
#include "output/filters.h"
#include "output/h5common.h"


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

/*====== The job's datasets ======*/

/* Rank 0's head (root attributes, /metadata, the region table) and every
 * dataset at its final size; `what` as for sp__plan_create. */
static void job_head(hid_t file, const struct sp_layout *L, const struct sp_meta *meta, int *failed) {
  sp__plan_write_head(file, L, meta, failed);
}

/* The ranks table (/ranks, ours): each rank's clock offset to rank 0, its
 * start_time_ns and, at metadata_detail=full, its host, measured at
 * finalize (docs/mpi.md). Rank 0's part carries it. */
static sp_status add_ranks_table(const struct sp_run *run, struct sp_run *use, struct sp_table **added) {
  *use = *run;
  *added = NULL;
  if (sp__mpi.rank != 0) return SP_OK;
  size_t n = (size_t)sp__mpi.size;
  struct sp_table *tabs = calloc(run->ntables + 1, sizeof *tabs);
  if (!tabs) return sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory");
  if (run->ntables) memcpy(tabs, run->tables, run->ntables * sizeof *tabs);
  struct sp_run tmp;
  memset(&tmp, 0, sizeof tmp);
  struct sp_table *t = sp__run_add_table(&tmp, SP_GRP_RANKS, n);
  if (!t) {
    free(tabs);
    return sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory");
  }
  int64_t *off = sp__table_i64(t, SP_DS_RANK_CLOCK_OFFSETS), *err = sp__table_i64(t, SP_DS_RANK_CLOCK_ERRORS);
  int64_t *st = sp__table_i64(t, SP_DS_RANK_START_TIME_NS);
  for (size_t r = 0; r < n; r++) {
    off[r] = sp__mpi.clock_offsets ? sp__mpi.clock_offsets[r] : 0;
    err[r] = sp__mpi.clock_errors ? sp__mpi.clock_errors[r] : 0;
    st[r] = sp__mpi.start_times ? sp__mpi.start_times[r] : 0;
  }
  int first = 0, nc = 0;
  sp__plan_table_columns(SP_GRP_RANKS, &first, &nc);
  int ok = sp__meta_i64(&t->attrs, sp__plan_attr(SP_AT_CLOCK_TIME)->name, sp__mpi.clock_time) == 0;
  if (sp__mpi.have_sync && sp__mpi.sync_offsets) {
    memcpy(sp__table_i64(t, SP_DS_RANK_SYNC_OFFSETS), sp__mpi.sync_offsets, n * 8);
    memcpy(sp__table_i64(t, SP_DS_RANK_SYNC_ERRORS), sp__mpi.sync_errors, n * 8);
    ok &= sp__meta_i64(&t->attrs, sp__plan_attr(SP_AT_SYNC_CLOCK_TIME)->name, sp__mpi.sync_time) == 0;
  } else {
    /* not measured: the columns are left out, not zero */
    free(t->cols[SP_DS_RANK_SYNC_OFFSETS - first]);
    free(t->cols[SP_DS_RANK_SYNC_ERRORS - first]);
    t->cols[SP_DS_RANK_SYNC_OFFSETS - first] = t->cols[SP_DS_RANK_SYNC_ERRORS - first] = NULL;
  }
  char **hosts = sp__table_str(t, SP_DS_RANK_HOSTNAMES);
  if (sp__mpi.hosts) {
    for (size_t r = 0; r < n && ok; r++) ok = (hosts[r] = sp__strdup(sp__mpi.hosts[r])) != NULL;
  } else {
    free(t->cols[SP_DS_RANK_HOSTNAMES - first]);
    t->cols[SP_DS_RANK_HOSTNAMES - first] = NULL;
  }
  tabs[run->ntables] = *t;
  free(tmp.tables);
  use->tables = tabs;
  use->ntables = run->ntables + 1;
  *added = &tabs[run->ntables];
  if (!ok) return sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory");
  return SP_OK;
}

static void drop_ranks_table(struct sp_run *use, struct sp_table *added) {
  if (!added) return;
  struct sp_run tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.tables = malloc(sizeof *tmp.tables);
  if (tmp.tables) {
    tmp.tables[0] = *added;
    tmp.ntables = 1;
    sp__run_free(&tmp); /* frees the table's columns and attributes */
  }
  free(use->tables);
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
                              const struct sp_layout *L, const struct sp_place *mine) {
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
          sp__plan_create(f, L, cfg, SP_PW_ALL, &failed);
          if (!failed) sp__plan_write_part(f, L, mine, run, 0, H5P_DEFAULT, SP_PW_ALL, &failed);
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
          sp__plan_write_part(f, L, mine, run, (uint32_t)rank, H5P_DEFAULT, SP_PW_ALL, &failed);
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
                                const struct sp_layout *L, const struct sp_place *mine, const struct sp_place *all) {
#ifndef H5_HAVE_PARALLEL
  (void)run, (void)cfg, (void)path, (void)L, (void)mine, (void)all;
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
      sp__plan_create(f, L, cfg, SP_PW_EVENTS | SP_PW_NUMERIC, &failed);
      /* A failed create is a collective failure: skip the writes together. */
      int fc = failed, anyfc = 0;
      PMPI_Allreduce(&fc, &anyfc, 1, MPI_INT, MPI_MAX, comm);
      if (!anyfc) sp__plan_write_part(f, L, mine, run, (uint32_t)rank, dxpl, SP_PW_EVENTS | SP_PW_NUMERIC, &failed);
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

  /* The strings and the per-rank groups, through rank 0 (parallel HDF5
   * cannot write variable-length strings). */
  struct sp_mbuf mine_s = {0};
  sp__mpi_run_pack(run, SP_PACK_STRINGS, &mine_s);
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
        sp__plan_create(f0, L, cfg, SP_PW_STRINGS, &failed);
        size_t off = 0;
        for (int r = 0; r < size && !failed; r++) {
          struct sp_mrbuf rb = {blob + off, sizes[r], 0, 0};
          off += sizes[r];
          struct sp_run part;
          if (sizes[r] == 0 || sp__mpi_run_unpack(&rb, SP_PACK_STRINGS, &part) != SP_OK) {
            failed = 1;
            break;
          }
          sp__plan_write_part(f0, L, &all[r], &part, (uint32_t)r, H5P_DEFAULT, SP_PW_STRINGS | SP_PW_GROUPS, &failed);
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
 * a callback writes them through a sink) is read into arrays first: the
 * job writers place each rank's events at an offset, which the callback
 * cannot do. *use is a shallow copy of run; free with unmaterialize. */
static sp_status materialize(const struct sp_run *run, struct sp_run *use) {
  *use = *run;
  if (!run->fill_events) return SP_OK;
  use->fill_events = NULL;
  use->start = use->end = use->call_id = use->parent_id = NULL;
  use->extra = NULL;
  struct sp_event_sink *sink = sp__mem_sink_open(use, run);
  if (!sink || run->fill_events(run->fill_ctx, sink) != SP_OK) {
    sp__mem_sink_discard(sink, use);
    *use = *run;
    return sp__set_error(SP_ERR_IO, "MPI: could not read this rank's streamed events back (out of memory?)");
  }
  sp__mem_sink_close(sink);
  return SP_OK;
}

static void unmaterialize(const struct sp_run *run, struct sp_run *use) {
  if (!run->fill_events) return;
  free(use->start), free(use->end), free(use->call_id), free(use->parent_id);
  for (size_t i = 0; i < run->nextra; i++) free(use->extra[i].data);
  free(use->extra);
}

/* The schema every rank writes: one rank asking for 2 gets 2 for all. */
static int agreed_schema(const struct sp_config *cfg) {
  int want = cfg->hdf5_schema == 2 ? 2 : SP_SCHEMA_CURRENT, agreed = want;
  PMPI_Allreduce(&want, &agreed, 1, MPI_INT, MPI_MIN, sp__mpi.comm);
  return agreed;
}

sp_status sp__mpi_write(const struct sp_run *src, const struct sp_config *cfg, const char *path) {
  sp__mpi.last_write_ok = 0;
  sp_status st = sp__mpi_ready();
  if (st != SP_OK) return st;
  st = verdict(sp__filters_check(cfg));
  if (st != SP_OK) return st;
  struct sp_run use0, use;
  sp_status mine_ok = materialize(src, &use0);
  struct sp_table *added = NULL;
  if (mine_ok == SP_OK) mine_ok = add_ranks_table(&use0, &use, &added);
  st = verdict(mine_ok);
  if (st != SP_OK) {
    drop_ranks_table(&use, added);
    unmaterialize(src, &use0);
    return st;
  }
  const struct sp_run *run = &use;
  struct sp_layout L;
  struct sp_place mine, *all = NULL;
  st = sp__mpi_layout_exchange(run, agreed_schema(cfg), &L, &mine, &all);
  if (st == SP_OK) {
    if (sp__mpi.mode == SP__OUTPUT_MODE_PARALLEL) st = write_parallel(run, cfg, path, &L, &mine, all);
    else st = verdict(write_direct(run, cfg, path, &L, &mine));
    sp__mpi.last_write_ok = st == SP_OK;
    sp__layout_free(&L);
    sp__place_free(&mine);
    for (int r = 0; all && r < sp__mpi.size; r++) sp__place_free(&all[r]);
    free(all);
  }
  drop_ranks_table(&use, added);
  unmaterialize(src, &use0);
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

/* Rank 0: every part written into an in-memory file, laid out as the
 * job's file would be. */
static sp_status gathered_image(const struct sp_run *run, const struct sp_config *cfg, int schema, const char *blob,
                                const size_t *sizes, void **image, size_t *isize) {
  int size = sp__mpi.size;
  sp_status st = SP_OK;
  struct sp_run *parts = calloc((size_t)size, sizeof *parts);
  struct sp_place *places = calloc((size_t)size, sizeof *places);
  struct sp_layout L;
  memset(&L, 0, sizeof L);
  if (!parts || !places) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory gathering the job's results");
  size_t off = 0;
  for (int r = 0; r < size && st == SP_OK; r++) {
    struct sp_mrbuf rb = {blob + off, sizes[r], 0, 0};
    off += sizes[r];
    if (sizes[r] == 0) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: rank %d ran out of memory packing its part", r);
    else st = sp__mpi_run_unpack(&rb, SP_PACK_ALL, &parts[r]);
  }
  if (st == SP_OK) st = sp__layout_build(parts, size, schema, &L, places);
  if (st == SP_OK) {
    int failed = 0;
    hid_t fapl = sp__h5_file_access();
    H5Pset_fapl_core(fapl, 1 << 20, 0); /* memory only */
    hid_t f = -1;
    H5E_BEGIN_TRY {
      f = H5Fcreate("scope_profiler_job_results.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
      if (f >= 0) {
        job_head(f, &L, &run->meta, &failed);
        sp__plan_create(f, &L, cfg, SP_PW_ALL, &failed);
        for (int r = 0; r < size && !failed; r++)
          sp__plan_write_part(f, &L, &places[r], &parts[r], (uint32_t)r, H5P_DEFAULT, SP_PW_ALL, &failed);
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
  for (int r = 0; places && r < size; r++) sp__place_free(&places[r]);
  free(parts);
  free(places);
  sp__layout_free(&L);
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
    int schema = agreed_schema(cfg);
    struct sp_mbuf b = {0};
    struct sp_run use0, use;
    struct sp_table *added = NULL;
    if (materialize(run, &use0) == SP_OK) {
      if (add_ranks_table(&use0, &use, &added) == SP_OK) sp__mpi_run_pack(&use, SP_PACK_ALL, &b);
      else b.oom = 1;
      drop_ranks_table(&use, added);
      unmaterialize(run, &use0);
    } else {
      b.oom = 1; /* rank 0 reports this rank's part as missing */
    }
    if (b.oom) b.n = 0;
    char *blob = NULL;
    size_t *sizes = NULL;
    st = sp__mpi_gather_bytes(&b, &blob, &sizes);
    sp__mb_free(&b);
    if (st == SP_OK && rank == 0) st = gathered_image(run, cfg, schema, blob, sizes, &image, &isize);
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
    /* Rank 0's calibrated pair costs stand for every rank's; its total and
     * one-off costs are its own, so the job's head line leaves them out. */
    const struct sp_meta_item *pair = sp__meta_get(&run->meta, SP_META_OVERHEAD_PAIR),
                              *cold = sp__meta_get(&run->meta, SP_META_OVERHEAD_COLD_PAIR);
    struct sp_ovh_figures ovh = {pair && pair->type == SP_META_F64 ? pair->d : -1,
                                 cold && cold->type == SP_META_F64 ? cold->d : -1, -1, -1};
    sp__summary_print(out, &job, label ? label : cfg->display_label, ovh.pair_ns >= 0 ? &ovh : NULL);
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
