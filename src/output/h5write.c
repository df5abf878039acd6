/* h5write.c - writes a run as an HDF5 file: upstream's schema 3 by default
 * (events as row-relative start deltas and durations), schema 2 with
 * hdf5_schema=2, in the columnar or aggregate layout, exactly as the dataset
 * plan declares it (plan.c; the datasets are made by h5plan.c, the same code
 * the MPI job writers use). Small runs get exact-size contiguous datasets;
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
#include "output/filters.h"
#include "output/h5common.h"
#include "output/h5direct.h"
#include "output/layout.h"
#include "output/output.h"

struct writer {
  hid_t file;
  const struct sp_config *cfg;
  int failed;
  /* a filler that failed for a cause of its own, not the write's, said
   * why (a streamed run's read-back: which file, what cause, what to do);
   * the publish's own "writing F failed (disk full?)" would hide it */
  sp_status fill_st;
  char fill_msg[1536];
};

/* The parts (one run, or the ranks of a merged job: import-native), each
 * at its place. A run streamed through a staging file (bounded memory), or
 * kept in memory and written as it is built (snapshot.c's filler), has no
 * event arrays: its filler writes the events through the sink, updating
 * the rows' statistics as it goes, which is why it runs before the index is
 * written (one part only). */
static void write_parts(struct writer *w, const struct sp_run *parts, int n) {
  int schema = w->cfg && w->cfg->hdf5_schema == 2 ? 2 : SP_SCHEMA_CURRENT;
  struct sp_layout L;
  struct sp_place *pl = calloc((size_t)(n > 0 ? n : 1), sizeof *pl);
  if (!pl || sp__layout_build(parts, n, schema, &L, pl) != SP_OK) {
    free(pl);
    w->failed = 1;
    return;
  }
  sp__plan_write_head(w->file, &L, &parts[0].meta, &w->failed);
  sp__plan_create(w->file, &L, w->cfg, SP_PW_ALL, &w->failed);
  for (int k = 0; k < n && !w->failed; k++) {
    const struct sp_run *run = &parts[k];
    uint32_t rank = run->nrows ? run->rows[0].rank : 0;
    unsigned what = SP_PW_ALL;
    if (run->fill_events && n == 1) {
      struct sp_event_sink *sink = sp__plan_sink_open(w->file, &L, run);
      sp_status fst = sink ? run->fill_events(run->fill_ctx, sink) : SP_ERR_NO_MEMORY;
      if (fst != SP_OK) {
        w->failed = 1;
        if (sink && !sp__sink_failed(sink) && w->fill_st == SP_OK) {
          w->fill_st = fst;
          snprintf(w->fill_msg, sizeof w->fill_msg, "%s", sp_last_error());
        }
      }
      sp__plan_sink_close(sink);
      what &= ~SP_PW_EVENTS;
    } else if (run->fill_events) {
      w->failed = 1; /* a streamed run is written alone */
    }
    if (!w->failed) sp__plan_write_part(w->file, &L, &pl[k], run, rank, H5P_DEFAULT, what, &w->failed);
  }
  sp__layout_free(&L);
  for (int k = 0; k < n; k++) sp__place_free(&pl[k]);
  free(pl);
}


static sp_status validate_filters(const struct sp_config *cfg) { return sp__filters_check(cfg); }

/* Files up to this size are built in memory by HDF5 and written out by us:
 * an I/O error (a full disk) then happens outside HDF5, which 1.10 cannot
 * recover from (a file whose close failed crashes it at exit). Larger runs,
 * and bounded-memory ones, are written by HDF5 directly. */
uint64_t sp__h5_image_max = (uint64_t)256 << 20;

static uint64_t estimated_size(const struct sp_run *parts, int n) {
  uint64_t s = 1u << 20;
  for (int k = 0; k < n; k++)
    s += (uint64_t)parts[k].nevents * (32 + 8 * (uint64_t)parts[k].nextra) + (uint64_t)parts[k].nrows * 512;
  return s;
}

/* An in-memory file's bytes: malloc'd, or (cap > 0) mapped page-aligned
 * memory, which is what lets its write to the file bypass the page cache. */
struct image {
  void *mem;
  size_t size, cap;
};
static sp_status image_of(const struct sp_run *parts, int n, const struct sp_config *cfg, int mapped,
                          struct image *im);
static void image_release(struct image *im) {
  if (im->cap) sp__direct_unmap(im->mem, im->cap);
  else free(im->mem);
  *im = (struct image){0};
}

static sp_status write_image_file(const struct sp_run *parts, int n, const struct sp_config *cfg, const char *path) {
  struct image im;
  sp_status st = image_of(parts, n, cfg, 1, &im);
  if (st != SP_OK) return st;
  char *tmp = NULL;
  if ((st = sp__h5_tmp_create(path, &tmp)) != SP_OK) {
    image_release(&im);
    return st;
  }
  /* Created afresh with O_EXCL: never through a symlink planted at the name,
   * and with the mode the umask gives. */
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  int failed = fd < 0;
  if (!failed) {
    struct sp_direct d;
    sp__direct_init(&d, fd, tmp);
    failed = sp__direct_pwrite(&d, im.mem, im.size, 0) != 0;
    sp__direct_end(&d);
  }
  int e = errno;
  if (fd >= 0 && close(fd) != 0) failed = 1;
  image_release(&im);
  if (failed && fd < 0) {
    free(tmp);
    return sp__set_error(SP_ERR_IO,
                         "could not create the temporary file for %s: %s (something appeared at its name, "
                         "e.g. a planted symlink); nothing was written through it",
                         path, strerror(e));
  }
  return sp__h5_publish(tmp, path, failed);
}

sp_status sp__h5_write_file(const struct sp_run *run, const struct sp_config *cfg, const char *path) {
  return sp__h5_write_parts(run, 1, cfg, path);
}

sp_status sp__h5_write_parts(const struct sp_run *run, int n, const struct sp_config *cfg, const char *path) {
  sp_status st = validate_filters(cfg);
  if (st != SP_OK) return st;
  if (n < 1) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "no part to write to %s", path);
  if (n == 1 && run->staged) {
    int declined = 0;
    if (sp__stage_publish(run, cfg, path, &declined) == SP_OK) {
      if (!sp__h5_stage_copy_too) return SP_OK;
      struct sp_run copy = *run;
      copy.staged = NULL;
      return sp__h5_write_parts(&copy, 1, cfg, sp__h5_stage_copy_too);
    }
    /* declined, or failed (its staged file kept): the same run the copy way */
  }
  if ((!run->fill_events || run->fill_any_size) && estimated_size(run, n) <= sp__h5_image_max)
    return write_image_file(run, n, cfg, path);
  char *tmp = NULL;
  if ((st = sp__h5_tmp_create(path, &tmp)) != SP_OK) return st;

  /* HDF5 opens the file by name: with H5F_ACC_TRUNC it would follow a
   * symlink planted at the reserved name and overwrite its target. Free the
   * name and let HDF5 create it with O_CREAT|O_EXCL instead, which never
   * follows a symlink (a planted one makes the create fail) and applies the
   * umask itself. */
  unlink(tmp);
  hid_t fapl = sp__h5_file_access();
  sp__direct_fapl(fapl); /* raw data around the page cache (h5direct.c) */
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
  H5E_BEGIN_TRY { write_parts(&w, run, n); }
  H5E_END_TRY;
  if (H5Fclose(w.file) < 0) w.failed = 1;
  st = sp__h5_publish(tmp, path, w.failed);
  if (st != SP_OK && w.fill_st != SP_OK)
    return sp__set_error(w.fill_st, "writing %s failed, nothing was written (a file already there is untouched): %s",
                         path, w.fill_msg);
  return st;
}

sp_status sp__h5_write_image(const struct sp_run *run, const struct sp_config *cfg, void **image, size_t *size) {
  struct image im;
  sp_status st = image_of(run, 1, cfg, 0, &im); /* the callers free() it */
  *image = im.mem;
  *size = im.size;
  return st;
}

/* The in-memory file's buffer, allocated through HDF5's file image
 * callbacks, so that the image is handed out without a copy (H5Fget_file_image
 * copies the whole file into as much fresh memory again: a third of the
 * CPU of a 5M-call finalize here). */
int sp__h5_image_copied;
void *sp__h5_image_copy;
size_t sp__h5_image_copy_size;
struct img {
  void *mem;
  size_t size;
  size_t cap; /* mem is mapped, cap bytes (mapped: the image is written to a file) */
  int mapped;
  int keep; /* handed out: not freed at close */
};
/* The file's buffer starts empty and grows through img_realloc, 1 MiB at a
 * time: mapped memory grows by mremap, which keeps it page-aligned for
 * O_DIRECT and moves no bytes (realloc would lose the alignment, and an
 * aligned copy at each step would be quadratic). */
static void *img_malloc(size_t size, H5FD_file_image_op_t op, void *u) {
  (void)op;
  struct img *g = u;
  if (g->mapped && !g->mem) {
    void *p = sp__direct_map(size, &g->cap);
    if (p) g->mem = p, g->size = size;
    return p;
  }
  void *p = malloc(size);
  if (p && !g->mem) g->mem = p, g->size = size;
  return p;
}
static void *img_memcpy(void *d, const void *s, size_t n, H5FD_file_image_op_t op, void *u) {
  (void)op, (void)u;
  return memcpy(d, s, n);
}
static void *img_realloc(void *p, size_t size, H5FD_file_image_op_t op, void *u) {
  struct img *g = u;
  if (g->mapped && (p ? p == g->mem : !g->mem)) {
    void *n = p ? sp__direct_remap(p, size, &g->cap) : sp__direct_map(size, &g->cap);
    if (n) g->mem = n, g->size = size;
    return n;
  }
  if (!p && g->mapped) return img_malloc(size, op, u);
  void *n = realloc(p, size);
  if (n && (p == g->mem || !g->mem)) g->mem = n, g->size = size;
  return n;
}
static herr_t img_free(void *p, H5FD_file_image_op_t op, void *u) {
  (void)op;
  struct img *g = u;
  if (p && p == g->mem && g->keep) return 0;
  if (p && p == g->mem && g->cap) {
    sp__direct_unmap(p, g->cap);
    g->mem = NULL, g->size = 0, g->cap = 0;
    return 0;
  }
  if (p == g->mem) g->mem = NULL, g->size = 0;
  free(p);
  return 0;
}
static void *img_udata_copy(void *u) { return u; }
static herr_t img_udata_free(void *u) {
  (void)u;
  return 0;
}

/* `mapped`: the buffer is mapped memory (written to a file with O_DIRECT by
 * write_image_file); else malloc'd, as sp__h5_write_image's callers free it. */
static sp_status image_of(const struct sp_run *run, int nparts, const struct sp_config *cfg, int mapped,
                          struct image *im) {
  *im = (struct image){0};
  sp_status st = validate_filters(cfg);
  if (st != SP_OK) return st;
  /* On the heap: HDF5 holds it (and the buffer) for as long as the file is
   * open, which a failed close may leave it. */
  struct img *g = calloc(1, sizeof *g);
  if (!g) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory building the in-memory results");
  g->mapped = mapped;
  hid_t fapl = sp__h5_file_access();
  H5Pset_fapl_core(fapl, 1 << 20, 0); /* memory only, nothing touches disk */
  H5FD_file_image_callbacks_t cb = {img_malloc, img_memcpy, img_realloc, img_free, img_udata_copy, img_udata_free, g};
  int own = H5Pset_file_image_callbacks(fapl, &cb) >= 0;
  struct writer w = {.cfg = cfg};
  /* A name of its own: HDF5 would refuse (or share) a second in-memory
   * file of the same name created while another is open. */
  static _Atomic unsigned long serial;
  char name[64];
  snprintf(name, sizeof name, "scope_profiler_results-%lu.h5", ++serial);
  H5E_BEGIN_TRY { w.file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl); }
  H5E_END_TRY;
  H5Pclose(fapl);
  if (w.file < 0) {
    if (!g->mem) free(g); /* else HDF5 may still hold it: left to it */
    return sp__set_error(SP_ERR_IO, "HDF5 could not create an in-memory file");
  }
  ssize_t n = -1;
  int closed = 0, alone = 0;
  H5E_BEGIN_TRY {
    write_parts(&w, run, nparts);
    H5Fflush(w.file, H5F_SCOPE_GLOBAL);
    n = H5Fget_file_image(w.file, NULL, 0);
    alone = H5Fget_obj_count(w.file, H5F_OBJ_ALL) == 1;
    /* With nothing but the file open, closing it ends the in-memory file and
     * leaves its buffer as H5Fget_file_image would copy it (the close clears
     * the superblock's open-for-writing flag, which the copy clears too). */
    if (n > 0 && own && alone && sp__h5_image_copied != 2) g->keep = 1;
    if (n > 0 && (!g->keep || sp__h5_image_copied == 1)) {
      void *copy = malloc((size_t)n);
      if (copy && H5Fget_file_image(w.file, copy, (size_t)n) == n) {
        if (g->keep) { /* the tests' copy of the same file */
          free(sp__h5_image_copy);
          sp__h5_image_copy = copy;
          sp__h5_image_copy_size = (size_t)n;
        } else {
          im->mem = copy;
          im->size = (size_t)n;
        }
      } else {
        free(copy);
        w.failed = 1;
      }
    } else if (n <= 0) {
      w.failed = 1;
    }
    closed = H5Fclose(w.file) >= 0;
  }
  H5E_END_TRY;
  if (!closed || !alone) {
    /* The file may still be open (a failed close, or objects left open
     * keep it so): its buffer and g are HDF5's until it closes it, which
     * frees the buffer through img_free. A kept buffer is not ours either. */
    g->keep = 0;
    if (!closed) w.failed = 1;
  } else if (g->keep) {
    if (g->mem && (size_t)n <= g->size) {
      im->mem = g->mem;
      im->size = (size_t)n;
      im->cap = g->cap;
    } else {
      struct image mine = {g->mem, g->size, g->cap};
      image_release(&mine);
      w.failed = 1;
    }
    free(g);
  } else {
    free(g);
  }
  if (w.failed) {
    image_release(im);
    if (w.fill_st != SP_OK) return sp__set_error(w.fill_st, "building the in-memory results: %s", w.fill_msg);
    return sp__set_error(SP_ERR_IO, "building the in-memory results failed (out of memory?)");
  }
  return SP_OK;
}
