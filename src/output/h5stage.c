/* h5stage.c - a streamed run's blocks staged in its own HDF5 file, and the
 * file published by making /events virtual over them (output.h, struct
 * sp_stage; BENCHMARKS.md "Round 3" measured the design, docs/file-format.md
 * "Staged blocks" describes the file).
 *
 * The stream's writer thread creates the file beside the output under the
 * same exclusive temporary name a plain write uses, and writes each block's
 * calls, already in their final form, into /staging/<block>/<column>
 * (contiguous), flushing after each block; the raw data goes around the
 * page cache (h5direct.c's driver, O_DIRECT where the file system takes it:
 * a fresh page costs this VM's kernel 3-4 ns a byte, BENCHMARKS "Round 5").
 * Publishing writes the head, the
 * index and the tables as any write does, then each /events column as a
 * virtual dataset whose sources are this file's block datasets (source file
 * ".", so the file still opens after a move or rename), one mapping per
 * (row, block) segment in row order: no event is copied again. Where the
 * staged way cannot apply (a schema-2 file, compression or chunks, a
 * destination that is not a regular file, an HDF5 built without thread
 * safety, more mappings than a reader should walk), nothing is staged or the
 * publish declines, and the run is written the copy way (stream.c), reading
 * the blocks staged so far back from this file. Crash recovery reads them
 * here too, at the offsets stream.c's journal took from sp__stage_end_block.
 */
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dest.h"
#include "common/error.h"
#include "output/filters.h"
#include "output/h5common.h"
#include "output/h5direct.h"
#include "output/layout.h"
#include "output/output.h"

const char *sp__h5_stage_copy_too;

/* Past this many (row, block) segments the copy way is cheaper for every
 * later reader than the mappings are (each VDS read walks them all:
 * BENCHMARKS.md, 2.6 ms per 4096 values at 12288 mappings). */
#define STAGE_MAX_MAPS 20000u

struct sp_stage {
  hid_t file, grp;
  char *tmp, *path;
  hid_t ds[SP_STAGE_NCOLS];
  uint32_t cur; /* the block being written */
  uint64_t *len; /* calls of each block */
  unsigned char *thr; /* whether each block has its thread ids */
  uint32_t nblocks, cap;
  int fd; /* the file again, to start its write-back after each block */
  int gone; /* removed by name (sp__stage_forget): the name may be another run's now */
};

/* The plan's column each staged column is the source of. */
static const int stage_ids[SP_STAGE_NCOLS] = {SP_DS_START_DELTAS, SP_DS_DURATIONS, SP_DS_CALL_IDS, SP_DS_PARENT_IDS,
                                              SP_DS_THREAD_IDS};

static int stage_col(int id) {
  for (int c = 0; c < SP_STAGE_NCOLS; c++)
    if (stage_ids[c] == id) return c;
  return -1;
}

static void src_name(char *buf, size_t n, uint32_t block, int col) {
  snprintf(buf, n, "%s/%06u/%s", SP_PLAN_STAGING, block, sp__plan(stage_ids[col])->name);
}

/* 1 when the plan would store event columns of a run of n events
 * contiguous and unfiltered (what the staged datasets are). */
static int contiguous_events(const struct sp_config *cfg, uint64_t n) {
  hid_t dcpl = sp__event_dcpl(cfg, (size_t)n, 8, (size_t)n, 3);
  int ok = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0;
  if (dcpl >= 0) H5Pclose(dcpl);
  return ok;
}

struct sp_stage *sp__stage_open(const struct sp_config *cfg, const char *path, const char **why) {
  hbool_t ts = 0;
  const char *kind_why = NULL;
  *why = NULL;
  if (H5is_library_threadsafe(&ts) < 0 || !ts) *why = "the HDF5 library is not thread-safe";
  else if (cfg->hdf5_schema == 2) *why = "schema 2 output";
  else if (sp__dest_kind(path, &kind_why) != SP_DEST_FILE) *why = "the destination is not a regular file";
  else if (!contiguous_events(cfg, (uint64_t)1 << 30)) *why = "compression or a chunk size was asked for";
  if (*why) return NULL;
  struct sp_stage *g = calloc(1, sizeof *g);
  if (g) g->fd = -1;
  if (!g || !(g->path = sp__strdup(path)) || sp__h5_tmp_create(path, &g->tmp) != SP_OK) {
    if (g) free(g->path);
    free(g);
    *why = "no temporary file could be made beside the output";
    return NULL;
  }
  unlink(g->tmp); /* HDF5 creates it with O_EXCL (h5write.c says why) */
  hid_t fapl = sp__h5_file_access();
  sp__direct_fapl(fapl); /* the blocks' raw data around the page cache (h5direct.c) */
  H5E_BEGIN_TRY {
    g->file = H5Fcreate(g->tmp, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    g->grp = g->file >= 0 ? H5Gcreate2(g->file, SP_PLAN_STAGING, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  }
  H5E_END_TRY;
  H5Pclose(fapl);
  for (int c = 0; c < SP_STAGE_NCOLS; c++) g->ds[c] = -1;
  g->fd = g->grp >= 0 ? open(g->tmp, O_RDONLY | O_CLOEXEC) : -1;
  if (g->grp < 0) {
    *why = "HDF5 could not create the staging file";
    sp__stage_discard(g);
    return NULL;
  }
  return g;
}

/* HDF5 closes every open file when the process exits (its atexit handler,
 * registered when the library first ran: after the profiler's exit hook
 * when staging was the first use, so it runs before that hook's finalize).
 * The staging file is then whole on disk but its ids are gone, or reused
 * for other objects: open it again by name. 0, or -1. */
static int revive(struct sp_stage *g) {
  char name[4096];
  ssize_t n = -1;
  H5E_BEGIN_TRY {
    if (g->file >= 0 && H5Iis_valid(g->file) > 0 && H5Iget_type(g->file) == H5I_FILE)
      n = H5Fget_name(g->file, name, sizeof name);
  }
  H5E_END_TRY;
  if (n > 0 && (size_t)n < sizeof name && strcmp(name, g->tmp) == 0) return 0;
  for (int c = 0; c < SP_STAGE_NCOLS; c++) g->ds[c] = -1; /* closed with the file */
  if (__atomic_load_n(&g->gone, __ATOMIC_ACQUIRE)) { /* (what the name opens now is not ours) */
    g->file = g->grp = -1;
    return -1;
  }
  hid_t fapl = sp__h5_file_access();
  sp__direct_fapl(fapl);
  H5E_BEGIN_TRY {
    g->file = H5Fopen(g->tmp, H5F_ACC_RDWR, fapl);
    g->grp = g->file >= 0 ? H5Gopen2(g->file, SP_PLAN_STAGING, H5P_DEFAULT) : -1;
  }
  H5E_END_TRY;
  H5Pclose(fapl);
  return g->grp >= 0 ? 0 : -1;
}

int sp__stage_block(struct sp_stage *g, uint32_t block, uint64_t n, int with_threads) {
  if (block != g->nblocks || !g->tmp || revive(g) != 0) return -1; /* blocks come numbered in order */
  if (g->nblocks == g->cap) {
    uint32_t cap = g->cap ? g->cap * 2 : 64;
    uint64_t *l = realloc(g->len, cap * sizeof *l);
    if (l) g->len = l;
    unsigned char *t = realloc(g->thr, cap);
    if (t) g->thr = t;
    if (!l || !t) return -1;
    g->cap = cap;
  }
  int failed = 0;
  char name[96];
  snprintf(name, sizeof name, "%06u", block);
  H5E_BEGIN_TRY {
    hid_t bg = H5Gcreate2(g->grp, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims = n;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    for (int c = 0; c < SP_STAGE_NCOLS; c++) {
      if (c == SP_STAGE_NCOLS - 1 && !with_threads) continue;
      g->ds[c] = bg >= 0 && space >= 0 ? H5Dcreate2(bg, sp__plan(stage_ids[c])->name, H5T_STD_I64LE, space,
                                                    H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                                       : -1;
      if (g->ds[c] < 0) failed = 1;
    }
    if (space >= 0) H5Sclose(space);
    if (bg >= 0) H5Gclose(bg);
  }
  H5E_END_TRY;
  g->thr[g->nblocks] = (unsigned char)(with_threads != 0);
  g->len[g->nblocks++] = n;
  g->cur = block;
  return failed ? -1 : 0;
}

static int write_at(hid_t ds, uint64_t off, uint64_t n, const int64_t *v) {
  hsize_t start = off, count = n;
  herr_t rc = -1;
  H5E_BEGIN_TRY {
    hid_t fs = H5Dget_space(ds);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    if (fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0)
      rc = H5Dwrite(ds, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, v);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
  }
  H5E_END_TRY;
  return rc < 0 ? -1 : 0;
}

int sp__stage_put(struct sp_stage *g, int col, uint64_t off, uint64_t n, const int64_t *v) {
  if (!n) return 0;
  if (col < 0 || col >= SP_STAGE_NCOLS || g->ds[col] < 0) return -1;
  return write_at(g->ds[col], off, n, v);
}

int sp__stage_end_block(struct sp_stage *g, uint64_t off[SP_STAGE_NCOLS]) {
  for (int c = 0; c < SP_STAGE_NCOLS; c++) off[c] = UINT64_MAX;
  if (revive(g) != 0) return -1;
  for (int c = 0; c < SP_STAGE_NCOLS; c++)
    if (g->ds[c] >= 0) {
      haddr_t a = HADDR_UNDEF;
      H5E_BEGIN_TRY { a = H5Dget_offset(g->ds[c]); }
      H5E_END_TRY;
      if (a != HADDR_UNDEF) off[c] = (uint64_t)a;
      H5Dclose(g->ds[c]);
      g->ds[c] = -1;
    }
  /* each block is on its way to the disk before the next one starts */
  herr_t rc = -1;
  H5E_BEGIN_TRY { rc = H5Fflush(g->file, H5F_SCOPE_LOCAL); }
  H5E_END_TRY;
  /* and on its way to the disk now, not when the kernel gets to it: the
   * fsync at publish then waits for the last blocks only, not for every
   * block still dirty in the page cache (gigabytes, in a long run) */
#ifdef SYNC_FILE_RANGE_WRITE
  if (g->fd >= 0) (void)sync_file_range(g->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
  return rc < 0 ? -1 : 0;
}

int sp__stage_patch(struct sp_stage *g, uint32_t block, int col, uint64_t at, int64_t v) {
  if (block >= g->nblocks || at >= g->len[block] || col < 0 || col >= SP_STAGE_NCOLS || revive(g) != 0) return -1;
  char name[160];
  src_name(name, sizeof name, block, col);
  int rc = -1;
  H5E_BEGIN_TRY {
    hid_t ds = H5Dopen2(g->file, name, H5P_DEFAULT);
    if (ds >= 0) {
      rc = write_at(ds, at, 1, &v);
      H5Dclose(ds);
    }
  }
  H5E_END_TRY;
  return rc;
}

const char *sp__stage_path(const struct sp_stage *g) { return g && g->tmp ? g->tmp : ""; }

void sp__stage_discard(struct sp_stage *g) { sp__stage_close(g, 0); }

void sp__stage_forget(struct sp_stage *g) {
  if (g) __atomic_store_n(&g->gone, 1, __ATOMIC_RELEASE);
}

void sp__stage_close(struct sp_stage *g, int keep) {
  if (!g) return;
  H5E_BEGIN_TRY {
    if (g->tmp) revive(g); /* ids of another file are not ours to close */
    for (int c = 0; c < SP_STAGE_NCOLS; c++)
      if (g->ds[c] >= 0) H5Dclose(g->ds[c]);
    if (g->grp >= 0) H5Gclose(g->grp);
    if (g->file >= 0) H5Fclose(g->file);
  }
  H5E_END_TRY;
  if (g->tmp && !keep && !__atomic_load_n(&g->gone, __ATOMIC_ACQUIRE)) unlink(g->tmp);
  if (g->fd >= 0) close(g->fd);
  free(g->tmp);
  free(g->path);
  free(g->len);
  free(g->thr);
  free(g);
}

/* Blocks staged before a second thread handed one over have no thread
 * ids (all their calls are one thread's: struct sp_staged): where the file
 * has the column, their segments map onto one dataset of that thread's
 * index, as long as the longest of them, written now. */
#define THREAD_FILL SP_PLAN_STAGING "/thread_fill"
static hsize_t thread_fill_len(const struct sp_stage *g, const struct sp_staged *st) {
  hsize_t n = 0;
  for (size_t k = 0; k < st->nmap; k++)
    if (!g->thr[st->map[k].block] && st->map[k].count > n) n = st->map[k].count;
  return n;
}

static void thread_fill(hid_t file, const struct sp_stage *g, const struct sp_staged *st, int *failed) {
  hsize_t n = thread_fill_len(g, st);
  if (!n) return;
  hid_t space = H5Screate_simple(1, &n, NULL);
  hid_t ds = space >= 0 ? H5Dcreate2(file, THREAD_FILL, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int64_t v[4096];
  for (size_t k = 0; k < 4096; k++) v[k] = st->thread0;
  for (uint64_t at = 0; ds >= 0 && at < n && !*failed; at += 4096)
    if (write_at(ds, at, n - at < 4096 ? n - at : 4096, v) != 0) *failed = 1;
  if (ds < 0) *failed = 1;
  else H5Dclose(ds);
  if (space >= 0) H5Sclose(space);
}

/* /events/<column> as a virtual dataset over the staged blocks. */
static void create_virtual(hid_t events, int id, int col, const struct sp_stage *g, const struct sp_staged *st,
                           uint64_t nevents, int *failed) {
  const struct sp_plan_ds *d = sp__plan(id);
  hsize_t n = nevents;
  hid_t vspace = H5Screate_simple(1, &n, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int64_t fill = d->fill;
  if (vspace < 0 || dcpl < 0 || H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill) < 0) *failed = 1;
  char name[160];
  hsize_t nfill = col == SP_STAGE_NCOLS - 1 ? thread_fill_len(g, st) : 0;
  for (size_t k = 0; k < st->nmap && !*failed; k++) {
    const struct sp_stage_map *mp = &st->map[k];
    hsize_t dst = mp->dst, cnt = mp->count, src = mp->src, blen = g->len[mp->block];
    src_name(name, sizeof name, mp->block, col);
    if (col == SP_STAGE_NCOLS - 1 && !g->thr[mp->block]) { /* thread_fill's first cnt values */
      snprintf(name, sizeof name, "%s", THREAD_FILL);
      src = 0;
      blen = nfill;
    }
    hid_t sspace = H5Screate_simple(1, &blen, NULL);
    if (sspace < 0 || H5Sselect_hyperslab(vspace, H5S_SELECT_SET, &dst, NULL, &cnt, NULL) < 0 ||
        H5Sselect_hyperslab(sspace, H5S_SELECT_SET, &src, NULL, &cnt, NULL) < 0 ||
        H5Pset_virtual(dcpl, vspace, ".", name, sspace) < 0)
      *failed = 1;
    if (sspace >= 0) H5Sclose(sspace);
  }
  if (vspace >= 0) H5Sselect_all(vspace);
  hid_t ds = !*failed ? H5Dcreate2(events, d->name, H5T_STD_I64LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
  if (ds < 0) *failed = 1;
  else H5Dclose(ds);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (vspace >= 0) H5Sclose(vspace);
}

sp_status sp__stage_publish(const struct sp_run *run, const struct sp_config *cfg, const char *path, int *declined) {
  const struct sp_staged *st = run->staged;
  struct sp_stage *g = st ? st->stage : NULL;
  *declined = 1;
  /* (a file removed by name is not renamed into place: the name may be
   * another run's; the copy way reads the blocks through the descriptor) */
  if (!g || !g->tmp || __atomic_load_n(&g->gone, __ATOMIC_ACQUIRE) || revive(g) != 0 || strcmp(g->path, path) != 0 || cfg->hdf5_schema == 2 || run->nevents == 0 ||
      st->nmap > STAGE_MAX_MAPS || !contiguous_events(cfg, run->nevents))
    return SP_ERR_IO;
  uint64_t covered = 0;
  for (size_t k = 0; k < st->nmap; k++) {
    const struct sp_stage_map *mp = &st->map[k];
    if (mp->block >= g->nblocks || mp->src + mp->count > g->len[mp->block] || mp->dst != covered) return SP_ERR_IO;
    covered += mp->count;
  }
  if (covered != run->nevents) return SP_ERR_IO;
  struct sp_layout L;
  struct sp_place pl;
  memset(&pl, 0, sizeof pl);
  if (sp__layout_build(run, 1, SP_SCHEMA_CURRENT, &L, &pl) != SP_OK) return SP_ERR_IO;
  int n = sp__plan_count(), ok = 1;
  for (int id = 0; id < n && ok; id++) {
    uint64_t len = 0;
    if (sp__plan(id)->group == SP_GRP_EVENTS && sp__plan_present(&L, id, &len))
      ok = stage_col(id) >= 0 && sp__plan(id)->dtype == SP_DT_I64 && len == run->nevents;
  }
  if (!ok) { /* a column the blocks do not hold */
    sp__layout_free(&L);
    sp__place_free(&pl);
    return SP_ERR_IO;
  }
  *declined = 0;
  int failed = 0;
  uint32_t rank = run->nrows ? run->rows[0].rank : 0;
  H5E_BEGIN_TRY {
    sp__plan_write_head(g->file, &L, &run->meta, &failed);
    sp__plan_create(g->file, &L, cfg, SP_PW_ALL & ~SP_PW_EVENTS, &failed);
    hid_t ev = H5Gcreate2(g->file, sp__plan_group_name(SP_GRP_EVENTS), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ev < 0) failed = 1;
    for (int id = 0; id < n && !failed; id++) {
      uint64_t len = 0;
      if (sp__plan(id)->group == SP_GRP_EVENTS && sp__plan_present(&L, id, &len)) {
        if (stage_col(id) == SP_STAGE_NCOLS - 1) thread_fill(g->file, g, st, &failed);
        create_virtual(ev, id, stage_col(id), g, st, run->nevents, &failed);
      }
    }
    if (ev >= 0) H5Gclose(ev);
    if (!failed) sp__plan_write_part(g->file, &L, &pl, run, rank, H5P_DEFAULT, SP_PW_ALL & ~SP_PW_EVENTS, &failed);
    H5Gclose(g->grp);
    g->grp = -1;
    if (H5Fclose(g->file) < 0) failed = 1;
    g->file = -1;
  }
  H5E_END_TRY;
  sp__layout_free(&L);
  sp__place_free(&pl);
  char *tmp = g->tmp;
  g->tmp = NULL; /* published and freed, or kept: */
  sp_status pst = sp__h5_publish_or_keep(tmp, path, failed);
  /* the blocks are the run's calls, at the offsets the journal names: the
   * copy way reads them back, a retry or a crash's recovery too (the run
   * stays after a write that failed: manager.c, review11 F8) */
  if (pst != SP_OK) g->tmp = tmp;
  return pst;
}
