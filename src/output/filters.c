/* filters.c - the lzf and zstd HDF5 filters, their once-per-process
 * registration, and the dataset-creation properties of the event columns.
 *
 * lzf (32000) writes exactly what h5py's built-in lzf filter reads: a bare
 * liblzf stream per chunk, cd_values = {filter revision 4, LZF_VERSION, chunk
 * bytes} (the third is the decompression buffer size a reader allocates).
 * zstd (32015) writes what the common HDF5 zstd plugin reads: one zstd frame
 * per chunk with its content size in the header, cd_values[0] = level.
 *
 * Both are applied as optional filters: a chunk that would not shrink (or a
 * compressor that fails) is stored unfiltered and flagged in the chunk's
 * filter mask, which every HDF5 reader honours, so compression can never make
 * a write fail or a file grow.
 *
 * This file is also compiled into the plugin modules (src/output/plugin/),
 * which use only the two filter classes.
 */
#include "output/filters.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <lzf.h>
#include <zstd.h>

#include "common/error.h"

/* ---- lzf ------------------------------------------------------------------ */

/* h5py's lzf filter revision; readers ignore it but h5py writes it, and files
 * should look the same whoever wrote them. */
#define LZF_FILTER_REVISION 4
/* A corrupt chunk must not make the decoder grow its buffer without end. */
#define LZF_MAX_OUTPUT ((size_t)UINT_MAX)

static herr_t lzf_set_local(hid_t dcpl, hid_t type, hid_t space) {
  (void)space;
  unsigned flags = 0;
  size_t nvals = 8;
  unsigned vals[8] = {0};
  if (H5Pget_filter_by_id2(dcpl, SP_FILTER_LZF, &flags, &nvals, vals, 0, NULL, NULL) < 0)
    return -1;
  if (nvals < 3) nvals = 3;
  if (nvals > 8) nvals = 8;
  /* Keep values a caller set (a copied dataset keeps its revision). */
  if (vals[0] == 0) vals[0] = LZF_FILTER_REVISION;
  if (vals[1] == 0) vals[1] = LZF_VERSION;
  hsize_t dims[H5S_MAX_RANK];
  int nd = H5Pget_chunk(dcpl, H5S_MAX_RANK, dims);
  size_t esize = H5Tget_size(type);
  if (nd < 0 || esize == 0) return -1;
  unsigned long long bytes = esize;
  for (int i = 0; i < nd; i++) bytes *= dims[i];
  if (bytes > UINT_MAX) return -1; /* HDF5 chunks are below 4 GiB anyway */
  vals[2] = (unsigned)bytes;
  return H5Pmodify_filter(dcpl, SP_FILTER_LZF, flags, nvals, vals);
}

static size_t lzf_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[],
                         size_t nbytes, size_t *buf_size, void **buf) {
  if (!(flags & H5Z_FLAG_REVERSE)) {
    /* Room for one byte less than the input: output that does not shrink the
     * chunk is not worth storing, and lzf_compress then returns 0. */
    if (nbytes < 2 || nbytes > UINT_MAX) return 0;
    void *out = malloc(nbytes - 1);
    if (!out) return 0;
    unsigned n = lzf_compress(*buf, (unsigned)nbytes, out, (unsigned)(nbytes - 1));
    if (n == 0) {
      free(out);
      return 0;
    }
    free(*buf);
    *buf = out;
    *buf_size = nbytes - 1;
    return n;
  }
  if (nbytes > UINT_MAX) return 0;
  /* The chunk size recorded at creation is the exact output size; without it
   * (files of other writers) grow from the buffer HDF5 handed in. */
  size_t cap = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
  if (cap == 0) cap = nbytes ? nbytes : 1;
  for (;;) {
    void *out = malloc(cap);
    if (!out) return 0;
    errno = 0;
    unsigned n = lzf_decompress(*buf, (unsigned)nbytes, out, (unsigned)cap);
    if (n != 0) {
      free(*buf);
      *buf = out;
      *buf_size = cap;
      return n;
    }
    free(out);
    if (errno != E2BIG || cap >= LZF_MAX_OUTPUT) return 0; /* corrupt data */
    cap = cap > LZF_MAX_OUTPUT / 2 ? LZF_MAX_OUTPUT : cap * 2;
  }
}

const H5Z_class2_t sp__lzf_filter_class = {
    H5Z_CLASS_T_VERS, (H5Z_filter_t)SP_FILTER_LZF, 1, 1, "lzf", NULL, lzf_set_local, lzf_filter,
};

/* ---- zstd ----------------------------------------------------------------- */

/* Frames without a content size (streamed by some other writer) or several
 * frames in one chunk: decode incrementally into a growing buffer. */
static size_t zstd_decode_stream(const void *in, size_t nbytes, size_t hint, void **outp,
                                 size_t *out_cap) {
  ZSTD_DStream *ds = ZSTD_createDStream();
  if (!ds) return 0;
  size_t cap = hint > nbytes ? hint : nbytes * 4 + 64;
  char *out = malloc(cap);
  ZSTD_inBuffer ib = {in, nbytes, 0};
  ZSTD_outBuffer ob = {out, cap, 0};
  size_t last = 1;
  while (out) {
    last = ZSTD_decompressStream(ds, &ob, &ib);
    if (ZSTD_isError(last)) break;
    if (ib.pos == ib.size && last == 0) break; /* every frame complete */
    if (ob.pos == ob.size) {
      size_t ncap = cap * 2;
      char *grown = ncap > cap ? realloc(out, ncap) : NULL;
      if (!grown) {
        free(out);
        out = NULL;
        break;
      }
      out = grown;
      cap = ncap;
      ob.dst = out;
      ob.size = cap;
    } else if (ib.pos == ib.size) {
      last = 1; /* input ended inside a frame: truncated chunk */
      break;
    }
  }
  ZSTD_freeDStream(ds);
  if (!out || last != 0) {
    free(out);
    return 0;
  }
  *outp = out;
  *out_cap = cap;
  return ob.pos;
}

static size_t zstd_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[],
                          size_t nbytes, size_t *buf_size, void **buf) {
  if (!(flags & H5Z_FLAG_REVERSE)) {
    /* As the common plugin: level 0 (or none given) is zstd's default. */
    int level = cd_nelmts > 0 ? (int)cd_values[0] : 0;
    if (level > ZSTD_maxCLevel()) level = ZSTD_maxCLevel();
    size_t cap = ZSTD_compressBound(nbytes);
    void *out = malloc(cap);
    if (!out) return 0;
    size_t n = ZSTD_compress(out, cap, *buf, nbytes, level);
    if (ZSTD_isError(n) || n >= nbytes) { /* the chunk is stored as it is */
      free(out);
      return 0;
    }
    free(*buf);
    *buf = out;
    *buf_size = cap;
    return n;
  }
  unsigned long long size = ZSTD_getFrameContentSize(*buf, nbytes);
  if (size == ZSTD_CONTENTSIZE_ERROR) return 0;
  void *out = NULL;
  size_t cap = 0, n = 0;
  if (size != ZSTD_CONTENTSIZE_UNKNOWN && size <= (unsigned long long)SIZE_MAX) {
    cap = size ? (size_t)size : 1;
    out = malloc(cap);
    if (!out) return 0;
    n = ZSTD_decompress(out, cap, *buf, nbytes);
    if (ZSTD_isError(n)) { /* e.g. more frames follow the first */
      free(out);
      out = NULL;
    }
  }
  if (!out) {
    n = zstd_decode_stream(*buf, nbytes, cap, &out, &cap);
    if (!out) return 0;
  }
  free(*buf);
  *buf = out;
  *buf_size = cap;
  return n;
}

const H5Z_class2_t sp__zstd_filter_class = {
    H5Z_CLASS_T_VERS, (H5Z_filter_t)SP_FILTER_ZSTD, 1, 1,
    "Zstandard compression: http://www.zstd.net", NULL, NULL, zstd_filter,
};

/* ---- registration --------------------------------------------------------- */

static pthread_once_t register_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

static void register_filters(void) {
  H5E_BEGIN_TRY {
    H5Zregister(&sp__lzf_filter_class);
    H5Zregister(&sp__zstd_filter_class);
  }
  H5E_END_TRY;
}

/* 1 when `id` is registered in this process. Unlike H5Zfilter_avail, never
 * searches the plugin path. */
static int registered(H5Z_filter_t id) {
  unsigned cfg = 0;
  herr_t rc;
  H5E_BEGIN_TRY { rc = H5Zget_filter_info(id, &cfg); }
  H5E_END_TRY;
  return rc >= 0 && (cfg & H5Z_FILTER_CONFIG_ENCODE_ENABLED) &&
         (cfg & H5Z_FILTER_CONFIG_DECODE_ENABLED);
}

int sp__filters_register(void) {
  pthread_once(&register_once, register_filters);
  if (registered(SP_FILTER_LZF) && registered(SP_FILTER_ZSTD)) return 0;
  /* H5close() drops registrations; a later run registers them again. */
  pthread_mutex_lock(&register_lock);
  register_filters();
  int ok = registered(SP_FILTER_LZF) && registered(SP_FILTER_ZSTD);
  pthread_mutex_unlock(&register_lock);
  return ok ? 0 : -1;
}

/* ---- dataset creation ------------------------------------------------------- */

enum method { M_NONE, M_GZIP, M_LZF, M_ZSTD };

static int deflate_encoder(void) {
  unsigned cfg = 0;
  herr_t rc;
  H5E_BEGIN_TRY { rc = H5Zget_filter_info(H5Z_FILTER_DEFLATE, &cfg); }
  H5E_END_TRY;
  return rc >= 0 && (cfg & H5Z_FILTER_CONFIG_ENCODE_ENABLED);
}

sp_status sp__filters_check(const struct sp_config *cfg) {
  enum sp__hdf5_compression c = cfg ? cfg->hdf5_compression : SP__COMPRESSION_NONE;
  switch (c) {
  case SP__COMPRESSION_NONE:
  case SP__COMPRESSION_AUTO: /* auto never fails */
    return SP_OK;
  case SP__COMPRESSION_GZIP:
    if (deflate_encoder()) return SP_OK;
    return sp__set_error(SP_ERR_UNSUPPORTED, "hdf5_compression=\"gzip\" needs an HDF5 built with "
                         "zlib (deflate), which this one lacks; use \"lzf\", \"zstd\" or \"auto\"");
  case SP__COMPRESSION_LZF:
  case SP__COMPRESSION_ZSTD: {
    H5Z_filter_t id = c == SP__COMPRESSION_LZF ? SP_FILTER_LZF : SP_FILTER_ZSTD;
    sp__filters_register();
    if (registered(id)) return SP_OK;
    return sp__set_error(SP_ERR_UNSUPPORTED, "the %s HDF5 filter (id %d) could not be registered "
                         "with this HDF5 library; use \"gzip\" or \"auto\"",
                         SP__ENUM_WORD(hdf5_compression, c), (int)id);
  }
  }
  return sp__set_error(SP_ERR_INVALID_VALUE, "hdf5_compression has no filter %d", (int)c);
}

static enum method pick(const struct sp_config *cfg, size_t n, int schema, int *level) {
  enum sp__hdf5_compression c = cfg->hdf5_compression;
  int set = cfg->hdf5_compression_level != SP_INT_NONE;
  int lv = set ? (int)cfg->hdf5_compression_level : 0;
  if (c == SP__COMPRESSION_NONE) return M_NONE;
  if (c == SP__COMPRESSION_GZIP) {
    *level = set ? lv : SP_GZIP_DEFAULT_LEVEL;
    return M_GZIP;
  }
  if (c == SP__COMPRESSION_LZF) return M_LZF;
  if (c == SP__COMPRESSION_ZSTD) {
    *level = set ? lv : SP_ZSTD_DEFAULT_LEVEL;
    return M_ZSTD;
  }
  if (c == SP__COMPRESSION_AUTO && n >= SP_AUTO_MIN_EVENTS && deflate_encoder()) {
    /* deflate, because every HDF5 reads it without a plugin. */
    (void)schema;
    *level = set ? lv : SP_AUTO_DEFAULT_LEVEL;
    return M_GZIP;
  }
  return M_NONE;
}

hid_t sp__event_dcpl(const struct sp_config *cfg, size_t nvalues, size_t elem_size, size_t run_events,
                     int schema) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl < 0 || !cfg || nvalues == 0 || elem_size == 0) return dcpl;
  int level = 0;
  enum method m = pick(cfg, run_events, schema, &level);
  if ((m == M_LZF || m == M_ZSTD) && sp__filters_register() != 0) {
    H5Pclose(dcpl);
    return H5I_INVALID_HID;
  }
  unsigned long long chunk = cfg->hdf5_chunk_size != SP_INT_NONE
                                 ? (unsigned long long)cfg->hdf5_chunk_size
                                 : (m != M_NONE ? SP_DEFAULT_CHUNK_EVENTS : 0);
  if (!chunk) return dcpl;
  /* A chunk may not exceed the dataset nor 4 GiB. */
  if (chunk > nvalues) chunk = nvalues;
  unsigned long long max_chunk = (UINT_MAX - 1) / elem_size;
  if (chunk > max_chunk) chunk = max_chunk;
  /* The last chunk is stored whole: share the values evenly among the chunks
   * so its padding stays below one value per chunk (uncompressed, a 65536
   * chunk would otherwise add up to 512 KiB to an int64 column). */
  unsigned long long nchunks = (nvalues + chunk - 1) / chunk;
  chunk = (nvalues + nchunks - 1) / nchunks;
  hsize_t cd = (hsize_t)chunk;
  herr_t rc = H5Pset_chunk(dcpl, 1, &cd);
  if (m != M_NONE && elem_size > 1 && rc >= 0) rc = H5Pset_shuffle(dcpl);
  if (rc >= 0) {
    switch (m) {
    case M_NONE: break;
    case M_GZIP: rc = H5Pset_deflate(dcpl, (unsigned)level); break;
    case M_LZF: rc = H5Pset_filter(dcpl, SP_FILTER_LZF, H5Z_FLAG_OPTIONAL, 0, NULL); break;
    case M_ZSTD: {
      unsigned cd_level = (unsigned)level;
      rc = H5Pset_filter(dcpl, SP_FILTER_ZSTD, H5Z_FLAG_OPTIONAL, 1, &cd_level);
      break;
    }
    }
  }
  if (rc < 0) {
    H5Pclose(dcpl);
    return H5I_INVALID_HID;
  }
  return dcpl;
}
