/* test-compression.c - compressed output: every hdf5_compression filter
 * round-trips through plain HDF5 reads, the lzf and zstd chunks are exactly
 * what h5py's lzf filter and the common HDF5 zstd plugin decode (checked by
 * decoding raw chunks with liblzf/libzstd as those filters do, and by encoding
 * chunks as they do and reading them through ours), hdf5_chunk_size chunks
 * even uncompressed, levels reach the file, and "auto" compresses only above
 * its threshold. */
#include <hdf5.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "config/config_internal.h"
#include "core/core.h"
#include "harness.h"
#include "h5util.h"
#include "output/filters.h"
#include "output/output.h"
#include "scope_profiler.h"

/* liblzf's API (its header lives in a distribution-specific folder). */
unsigned int lzf_compress(const void *in, unsigned int in_len, void *out, unsigned int out_len);
unsigned int lzf_decompress(const void *in, unsigned int in_len, void *out, unsigned int out_len);

/*====== Helpers ======*/

static uint64_t rng = 7;
static uint64_t rnd(void) { return sp_test_splitmix(&rng); }

struct events {
  size_t n;
  int64_t *start, *end, *cid, *pid;
  int64_t *tid;
};

/* Jittered time steps (compressible, like real timelines) or, with `noise`,
 * uniformly random values that no compressor shrinks. */
static struct events make_events(size_t n, int noise) {
  struct events e = {n, malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 8 + 8), malloc(n * 8 + 8),
                     malloc(n * 8 + 8)};
  ASSERT(e.start && e.end && e.cid && e.pid && e.tid);
  int64_t t = INT64_C(259200000000000);
  for (size_t i = 0; i < n; i++) {
    t += 1000 + (int64_t)(rnd() % 256);
    e.start[i] = noise ? (int64_t)(rnd() >> 1) : t;
    e.end[i] = noise ? (int64_t)(rnd() >> 1) : t + 300 + (int64_t)(rnd() % 64);
    e.cid[i] = noise ? (int64_t)rnd() : (int64_t)i * 3;
    e.pid[i] = noise ? (int64_t)rnd() : (i % 4 ? (int64_t)i * 3 - 1 : -1);
    e.tid[i] = noise ? (int64_t)(rnd() >> 1) : (int64_t)(i % 3);
  }
  return e;
}

static void free_events(struct events *e) {
  free(e->start); free(e->end); free(e->cid); free(e->pid); free(e->tid);
}

/* These tests check the filters on schema 2's int64 event columns (raw
 * chunk bytes, shuffle of 8-byte values); test-schema3.c covers the filters
 * on schema 3's (the same filters on start deltas and durations). */
static void resolve(struct sp_config *c, const char *const *ovr) {
  setenv("SCOPE_PROFILER_HDF5_SCHEMA", "2", 1);
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION");
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION_LEVEL");
  unsetenv("SCOPE_PROFILER_HDF5_CHUNK_SIZE");
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_setup_args a = {.overrides = ovr};
  if (sp__config_resolve(c, &a) != SP_OK) SP_FAIL_("resolve: %s", sp_last_error());
}

/* One region, one row: `e` as the whole /events group (plus thread_ids). */
static sp_status write_run(const char *path, const struct sp_config *c, const struct events *e) {
  char *names[] = {"r"};
  struct sp_row row = {.offset = 0, .count = e->n, .source_line = -1, .source_file = "",
                       .source_text = "", .tags_json = "[]"};
  struct sp_column tid = {SP_DS_THREAD_IDS, e->tid};
  struct sp_run run = {.layout = "columnar", .names = names, .nnames = 1, .rows = &row,
                       .nrows = 1, .start = e->start, .end = e->end, .call_id = e->cid,
                       .parent_id = e->pid, .nevents = e->n, .extra = &tid, .nextra = 1};
  return sp__h5_write_file(&run, c, path);
}

static void assert_same_events(const char *path, const struct events *e) {
  const char *dsets[] = {"/events/start_times", "/events/end_times", "/events/call_ids",
                         "/events/parent_ids", "/events/thread_ids"};
  const int64_t *want[] = {e->start, e->end, e->cid, e->pid, NULL};
  for (int d = 0; d < 5; d++) {
    long long n;
    int64_t *got = h5_i64(path, dsets[d], &n);
    if (!got) SP_FAIL_("%s: cannot read %s", path, dsets[d]);
    ASSERT_EQ(n, (long long)e->n);
    for (size_t i = 0; i < e->n; i++) {
      int64_t w = want[d] ? want[d][i] : e->tid[i];
      if (got[i] != w) SP_FAIL_("%s[%zu] = %lld, wrote %lld", dsets[d], i, (long long)got[i], (long long)w);
    }
    free(got);
  }
}

/* What the writer put in a dataset's creation properties. */
struct layout {
  H5D_layout_t layout;
  hsize_t chunk;
  int nfilters;
  H5Z_filter_t ids[4];
  unsigned flags[4];
  size_t ncd[4];
  unsigned cd[4][8];
  hsize_t storage;
};

static struct layout get_layout(const char *path, const char *dset) {
  struct layout l;
  memset(&l, 0, sizeof l);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT(f >= 0);
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  ASSERT(d >= 0);
  hid_t p = H5Dget_create_plist(d);
  l.layout = H5Pget_layout(p);
  if (l.layout == H5D_CHUNKED) H5Pget_chunk(p, 1, &l.chunk);
  l.nfilters = H5Pget_nfilters(p);
  for (int i = 0; i < l.nfilters && i < 4; i++) {
    l.ncd[i] = 8;
    char name[64];
    l.ids[i] = H5Pget_filter2(p, (unsigned)i, &l.flags[i], &l.ncd[i], l.cd[i], sizeof name, name, NULL);
  }
  l.storage = H5Dget_storage_size(d);
  H5Pclose(p);
  H5Dclose(d);
  H5Fclose(f);
  return l;
}

/* The raw (still filtered) bytes of chunk `idx` of a 1-D dataset. */
static void *raw_chunk(const char *path, const char *dset, hsize_t idx, hsize_t chunk_len,
                       uint32_t *mask, hsize_t *size) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
  hsize_t off = idx * chunk_len;
  ASSERT(H5Dget_chunk_storage_size(d, &off, size) >= 0);
  void *buf = malloc(*size);
  ASSERT(buf != NULL);
  ASSERT(H5Dread_chunk(d, H5P_DEFAULT, &off, mask, buf) >= 0);
  H5Dclose(d);
  H5Fclose(f);
  return buf;
}

/* HDF5's byte-shuffle of `n` int64 values. */
static void shuffle8(const int64_t *v, size_t n, unsigned char *out) {
  const unsigned char *b = (const unsigned char *)v;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) out[(size_t)k * n + i] = b[i * 8 + (size_t)k];
}

/*====== Round trips ======*/

SP_TEST(gzip_round_trip) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=gzip", NULL};
  resolve(&c, ovr);
  struct events e = make_events(100000, 0);
  ASSERT_OK(write_run("g.h5", &c, &e));
  assert_same_events("g.h5", &e);
  struct layout l = get_layout("g.h5", "/events/start_times");
  ASSERT_EQ(l.layout, H5D_CHUNKED);
  ASSERT_EQ(l.nfilters, 2);
  ASSERT_EQ(l.ids[0], H5Z_FILTER_SHUFFLE);
  ASSERT_EQ(l.ids[1], H5Z_FILTER_DEFLATE);
  ASSERT_EQ(l.cd[1][0], SP_GZIP_DEFAULT_LEVEL);
  ASSERT_LT(l.storage, e.n * 8 / 3);
  /* The optional columns (int64, as upstream's) are filtered alike. */
  struct layout t = get_layout("g.h5", "/events/thread_ids");
  ASSERT_EQ(t.ids[0], H5Z_FILTER_SHUFFLE);
  ASSERT_EQ(t.cd[0][0], 8);
  free_events(&e);
  sp__config_free(&c);
}

SP_TEST(lzf_round_trip_and_h5py_layout) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=lzf", NULL};
  resolve(&c, ovr);
  struct events e = make_events(150000, 0);
  ASSERT_OK(write_run("l.h5", &c, &e));
  assert_same_events("l.h5", &e);
  struct layout l = get_layout("l.h5", "/events/start_times");
  ASSERT_EQ(l.layout, H5D_CHUNKED);
  ASSERT_EQ(l.nfilters, 2);
  ASSERT_EQ(l.ids[0], H5Z_FILTER_SHUFFLE);
  ASSERT_EQ(l.ids[1], SP_FILTER_LZF);
  ASSERT(l.flags[1] & H5Z_FLAG_OPTIONAL);
  /* h5py's own lzf writes {revision 4, LZF_VERSION 0x0105, chunk bytes}. */
  ASSERT_EQ(l.ncd[1], 3);
  ASSERT_EQ(l.cd[1][0], 4);
  ASSERT_EQ(l.cd[1][1], 0x0105);
  ASSERT_EQ(l.cd[1][2], l.chunk * 8);
  ASSERT_LT(l.storage, e.n * 8 / 2);
  /* A chunk is a bare lzf stream of the shuffled bytes, what h5py decodes. */
  uint32_t mask = 0;
  hsize_t size = 0;
  void *raw = raw_chunk("l.h5", "/events/start_times", 1, l.chunk, &mask, &size);
  ASSERT_EQ(mask, 0);
  unsigned char *want = malloc(l.chunk * 8), *got = malloc(l.cd[1][2]);
  shuffle8(e.start + l.chunk, l.chunk, want);
  ASSERT_EQ(lzf_decompress(raw, (unsigned)size, got, l.cd[1][2]), l.chunk * 8);
  ASSERT(memcmp(want, got, l.chunk * 8) == 0);
  free(raw); free(want); free(got);
  free_events(&e);
  sp__config_free(&c);
}

SP_TEST(zstd_round_trip_and_plugin_format) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=zstd", "hdf5_compression_level=5", NULL};
  resolve(&c, ovr);
  struct events e = make_events(150000, 0);
  ASSERT_OK(write_run("z.h5", &c, &e));
  assert_same_events("z.h5", &e);
  struct layout l = get_layout("z.h5", "/events/end_times");
  ASSERT_EQ(l.layout, H5D_CHUNKED);
  ASSERT_EQ(l.nfilters, 2);
  ASSERT_EQ(l.ids[0], H5Z_FILTER_SHUFFLE);
  ASSERT_EQ(l.ids[1], SP_FILTER_ZSTD);
  ASSERT_EQ(l.ncd[1], 1);
  ASSERT_EQ(l.cd[1][0], 5);
  ASSERT_LT(l.storage, e.n * 8 / 2);
  /* The common plugin's decoder: one frame whose header holds the size. */
  uint32_t mask = 0;
  hsize_t size = 0;
  void *raw = raw_chunk("z.h5", "/events/end_times", 0, l.chunk, &mask, &size);
  ASSERT_EQ(mask, 0);
  ASSERT_EQ(ZSTD_getFrameContentSize(raw, size), l.chunk * 8);
  ASSERT_EQ(ZSTD_findFrameCompressedSize(raw, size), size);
  unsigned char *want = malloc(l.chunk * 8), *got = malloc(l.chunk * 8);
  shuffle8(e.end, l.chunk, want);
  ASSERT_EQ(ZSTD_decompress(got, l.chunk * 8, raw, size), l.chunk * 8);
  ASSERT(memcmp(want, got, l.chunk * 8) == 0);
  free(raw); free(want); free(got);
  free_events(&e);
  sp__config_free(&c);
}

/* Streamed zstd: a frame that does not record its size, or two frames. */
static size_t zstd_streamed(void *dst, size_t cap, const void *src, size_t n, int two_frames) {
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (!two_frames) ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
  size_t out = 0, half = two_frames ? n / 2 : n;
  for (int part = 0; part < (two_frames ? 2 : 1); part++) {
    ZSTD_inBuffer in = {(const char *)src + (part ? half : 0), part ? n - half : half, 0};
    ZSTD_outBuffer ob = {(char *)dst + out, cap - out, 0};
    size_t left;
    do left = ZSTD_compressStream2(cc, &ob, &in, ZSTD_e_end);
    while (left != 0 && !ZSTD_isError(left));
    ASSERT(!ZSTD_isError(left));
    out += ob.pos;
  }
  ZSTD_freeCCtx(cc);
  return out;
}

/* Chunks encoded as the common zstd plugin and h5py's lzf encode them read
 * back through our filters, and so do zstd chunks that plugin cannot read
 * (streamed frames without their size, several frames). */
SP_TEST(foreign_chunks_decode) {
  ASSERT_EQ(sp__filters_register(), 0);
  enum { N = 4096 };
  static const char *const dsets[] = {"/zstd", "/lzf", "/zstd_nosize", "/zstd_2frames"};
  struct events e = make_events(N, 0);
  unsigned char *sh = malloc(N * 8);
  shuffle8(e.start, N, sh);
  hid_t f = H5Fcreate("foreign.h5", H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims = N, off = 0;
  for (int which = 0; which < 4; which++) {
    hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(p, 1, &dims);
    H5Pset_shuffle(p);
    unsigned level = 3;
    if (which != 1) ASSERT(H5Pset_filter(p, SP_FILTER_ZSTD, H5Z_FLAG_MANDATORY, 1, &level) >= 0);
    else ASSERT(H5Pset_filter(p, SP_FILTER_LZF, H5Z_FLAG_OPTIONAL, 0, NULL) >= 0);
    hid_t s = H5Screate_simple(1, &dims, NULL);
    hid_t d = H5Dcreate2(f, dsets[which], H5T_STD_I64LE, s, H5P_DEFAULT, p, H5P_DEFAULT);
    ASSERT(d >= 0);
    size_t cap = ZSTD_compressBound(N * 8) + 64;
    void *enc = malloc(cap);
    size_t n = which == 0   ? ZSTD_compress(enc, cap, sh, N * 8, 3)
               : which == 1 ? lzf_compress(sh, N * 8, enc, N * 8) /* h5py: buffer = chunk size */
                            : zstd_streamed(enc, cap, sh, N * 8, which == 3);
    ASSERT(n > 0 && !ZSTD_isError(n));
    if (which == 2) ASSERT_EQ(ZSTD_getFrameContentSize(enc, n), ZSTD_CONTENTSIZE_UNKNOWN);
    ASSERT(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &off, n, enc) >= 0);
    free(enc);
    H5Dclose(d);
    H5Sclose(s);
    H5Pclose(p);
  }
  H5Fclose(f);
  long long n;
  for (int which = 0; which < 4; which++) {
    int64_t *got = h5_i64("foreign.h5", dsets[which], &n);
    ASSERT(got != NULL);
    ASSERT_EQ(n, N);
    ASSERT(memcmp(got, e.start, N * 8) == 0);
    free(got);
  }
  free(sh);
  free_events(&e);
}

/* A file h5py compressed with its built-in lzf reads through our filter. */
SP_TEST(h5py_lzf_file_reads_here) {
  if (!sp_test_file_exists(SP_TEST_PYTHON)) SKIP("no %s", SP_TEST_PYTHON);
  if (sp_test_sh(SP_TEST_PYTHON " -c 'import h5py, numpy as np; f = h5py.File(\"py.h5\", \"w\"); "
                 "f.create_dataset(\"x\", data=np.arange(100000, dtype=np.int64) * 977 + 5, "
                 "chunks=(8192,), compression=\"lzf\", shuffle=True)' 2>/dev/null") != 0)
    SKIP("h5py cannot write lzf here");
  ASSERT_EQ(sp__filters_register(), 0);
  long long n;
  int64_t *v = h5_i64("py.h5", "/x", &n);
  ASSERT(v != NULL);
  ASSERT_EQ(n, 100000);
  for (long long i = 0; i < n; i++) ASSERT_EQ(v[i], i * 977 + 5);
  free(v);
}

/* Data no filter can shrink: the write succeeds, the chunk is stored as it
 * is and flagged in its filter mask, and it reads back. */
SP_TEST(incompressible_chunks_stored_unfiltered) {
  const char *comps[] = {"hdf5_compression=lzf", "hdf5_compression=zstd"};
  for (int k = 0; k < 2; k++) {
    struct sp_config c;
    const char *ovr[] = {comps[k], "hdf5_chunk_size=1000", NULL};
    resolve(&c, ovr);
    struct events e = make_events(5000, 1);
    ASSERT_OK(write_run("r.h5", &c, &e));
    assert_same_events("r.h5", &e);
    struct layout l = get_layout("r.h5", "/events/start_times");
    ASSERT_EQ(l.chunk, 1000);
    uint32_t mask = 0;
    hsize_t size = 0;
    free(raw_chunk("r.h5", "/events/start_times", 2, l.chunk, &mask, &size));
    ASSERT_EQ(mask, 1u << 1); /* pipeline position 1 (after shuffle) skipped */
    ASSERT_EQ(size, 8000);
    free_events(&e);
    sp__config_free(&c);
  }
}

/*====== Chunking ======*/

SP_TEST(chunk_size_chunks_uncompressed) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_chunk_size=1000", NULL};
  resolve(&c, ovr);
  struct events e = make_events(2500, 0);
  ASSERT_OK(write_run("c.h5", &c, &e));
  assert_same_events("c.h5", &e);
  struct layout l = get_layout("c.h5", "/events/call_ids");
  ASSERT_EQ(l.layout, H5D_CHUNKED);
  ASSERT_EQ(l.nfilters, 0);
  /* At most 1000 per chunk, spread evenly over the 3 chunks needed. */
  ASSERT_EQ(l.chunk, 834);
  ASSERT_LE(l.storage, 3 * 834 * 8);
  /* Summary datasets stay contiguous. */
  ASSERT_EQ(get_layout("c.h5", "/rank_region_index/event_counts").layout, H5D_CONTIGUOUS);
  free_events(&e);
  sp__config_free(&c);
}

SP_TEST(default_is_contiguous_and_chunk_clamped) {
  struct sp_config c;
  resolve(&c, NULL);
  struct events e = make_events(3000, 0);
  ASSERT_OK(write_run("d.h5", &c, &e));
  struct layout l = get_layout("d.h5", "/events/start_times");
  ASSERT_EQ(l.layout, H5D_CONTIGUOUS);
  ASSERT_EQ(l.storage, 3000 * 8);
  sp__config_free(&c);
  const char *ovr[] = {"hdf5_chunk_size=1000000", NULL};
  resolve(&c, ovr);
  ASSERT_OK(write_run("d2.h5", &c, &e));
  assert_same_events("d2.h5", &e);
  l = get_layout("d2.h5", "/events/start_times");
  ASSERT_EQ(l.layout, H5D_CHUNKED);
  ASSERT_EQ(l.chunk, 3000);
  free_events(&e);
  sp__config_free(&c);
}

SP_TEST(empty_run_with_compression) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=zstd", "hdf5_chunk_size=10", NULL};
  resolve(&c, ovr);
  struct events e = make_events(0, 0);
  ASSERT_OK(write_run("e.h5", &c, &e));
  ASSERT_EQ(h5_len("e.h5", "/events/start_times"), 0);
  free_events(&e);
  sp__config_free(&c);
}

/*====== Levels ======*/

static sp_status resolve_status(const char *a, const char *b) {
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION");
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION_LEVEL");
  const char *ovr[] = {a, b, NULL};
  sp_setup_args args = {.overrides = ovr};
  struct sp_config c;
  sp_status st = sp__config_resolve(&c, &args);
  if (st == SP_OK) sp__config_free(&c);
  return st;
}

SP_TEST(level_bounds) {
  ASSERT_OK(resolve_status("hdf5_compression=gzip", "hdf5_compression_level=0"));
  ASSERT_OK(resolve_status("hdf5_compression=gzip", "hdf5_compression_level=9"));
  ASSERT_NE(resolve_status("hdf5_compression=gzip", "hdf5_compression_level=10"), SP_OK);
  ASSERT_NE(resolve_status("hdf5_compression=zstd", "hdf5_compression_level=0"), SP_OK);
  ASSERT_OK(resolve_status("hdf5_compression=zstd", "hdf5_compression_level=1"));
  ASSERT_OK(resolve_status("hdf5_compression=zstd", "hdf5_compression_level=22"));
  ASSERT_NE(resolve_status("hdf5_compression=zstd", "hdf5_compression_level=23"), SP_OK);
  ASSERT_NE(resolve_status("hdf5_compression=lzf", "hdf5_compression_level=1"), SP_OK);
  ASSERT_NE(resolve_status("hdf5_compression=auto", "hdf5_compression_level=0"), SP_OK);
  ASSERT_OK(resolve_status("hdf5_compression=auto", "hdf5_compression_level=9"));
  ASSERT_NE(resolve_status("hdf5_compression=none", "hdf5_compression_level=3"), SP_OK);
}

SP_TEST(extreme_levels_reach_the_file) {
  const char *cases[][3] = {{"hdf5_compression=gzip", "hdf5_compression_level=0", "0"},
                            {"hdf5_compression=gzip", "hdf5_compression_level=9", "9"},
                            {"hdf5_compression=zstd", "hdf5_compression_level=1", "1"},
                            {"hdf5_compression=zstd", "hdf5_compression_level=22", "22"}};
  struct events e = make_events(20000, 0);
  for (int k = 0; k < 4; k++) {
    struct sp_config c;
    const char *ovr[] = {cases[k][0], cases[k][1], NULL};
    resolve(&c, ovr);
    ASSERT_OK(write_run("v.h5", &c, &e));
    assert_same_events("v.h5", &e);
    struct layout l = get_layout("v.h5", "/events/parent_ids");
    ASSERT_EQ(l.nfilters, 2);
    ASSERT_EQ(l.cd[1][0], atoi(cases[k][2]));
    sp__config_free(&c);
  }
  free_events(&e);
}

/*====== auto ======*/

SP_TEST(auto_below_threshold_is_plain) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=auto", NULL};
  resolve(&c, ovr);
  struct events e = make_events(SP_AUTO_MIN_EVENTS - 1, 0);
  ASSERT_OK(write_run("a.h5", &c, &e));
  assert_same_events("a.h5", &e);
  struct layout l = get_layout("a.h5", "/events/start_times");
  ASSERT_EQ(l.layout, H5D_CONTIGUOUS);
  ASSERT_EQ(l.nfilters, 0);
  free_events(&e);
  sp__config_free(&c);
}

SP_TEST(auto_above_threshold_compresses) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=auto", NULL};
  resolve(&c, ovr);
  struct events e = make_events(SP_AUTO_MIN_EVENTS, 0);
  ASSERT_OK(write_run("a.h5", &c, &e));
  assert_same_events("a.h5", &e);
  struct layout l = get_layout("a.h5", "/events/start_times");
  ASSERT_EQ(l.layout, H5D_CHUNKED);
  ASSERT_EQ(l.nfilters, 2);
  ASSERT_EQ(l.ids[0], H5Z_FILTER_SHUFFLE);
  ASSERT_EQ(l.ids[1], H5Z_FILTER_DEFLATE); /* readable by every HDF5, no plugin */
  ASSERT_EQ(l.cd[1][0], SP_AUTO_DEFAULT_LEVEL);
  ASSERT_LT(l.storage, e.n * 8 / 3);
  sp__config_free(&c);
  const char *ovr6[] = {"hdf5_compression=auto", "hdf5_compression_level=6", NULL};
  resolve(&c, ovr6);
  ASSERT_OK(write_run("a6.h5", &c, &e));
  ASSERT_EQ(get_layout("a6.h5", "/events/start_times").cd[1][0], 6);
  free_events(&e);
  sp__config_free(&c);
}

/*====== Registration and the public path ======*/

SP_TEST(filters_check) {
  struct sp_config c;
  const char *const names[] = {"hdf5_compression=lzf", "hdf5_compression=zstd",
                               "hdf5_compression=gzip", "hdf5_compression=auto", NULL};
  for (int k = 0; names[k]; k++) {
    const char *ovr[] = {names[k], NULL};
    resolve(&c, ovr);
    ASSERT_OK(sp__filters_check(&c));
    sp__config_free(&c);
  }
  ASSERT_OK(sp__filters_check(NULL));
  resolve(&c, NULL);
  /* a value outside the enumeration (memory gone bad) is refused, not used */
  c.hdf5_compression = (enum sp__hdf5_compression)77;
  ASSERT_EQ(sp__filters_check(&c), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "77");
  sp__config_free(&c);
}

/* H5close() drops registered filters; the next write registers them again. */
SP_TEST(survives_hdf5_reopen) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=zstd", NULL};
  resolve(&c, ovr);
  struct events e = make_events(1000, 0);
  ASSERT_OK(write_run("1.h5", &c, &e));
  H5close();
  ASSERT_OK(write_run("2.h5", &c, &e));
  assert_same_events("2.h5", &e);
  ASSERT_EQ(get_layout("2.h5", "/events/start_times").ids[1], SP_FILTER_ZSTD);
  free_events(&e);
  sp__config_free(&c);
}

SP_TEST(in_memory_image_compressed) {
  struct sp_config c;
  const char *ovr[] = {"hdf5_compression=lzf", NULL};
  resolve(&c, ovr);
  struct events e = make_events(70000, 0);
  char *names[] = {"r"};
  struct sp_row row = {.count = e.n, .source_line = -1, .source_file = "", .source_text = "",
                       .tags_json = "[]"};
  struct sp_run run = {.layout = "columnar", .names = names, .nnames = 1, .rows = &row, .nrows = 1,
                       .start = e.start, .end = e.end, .call_id = e.cid, .parent_id = e.pid,
                       .nevents = e.n};
  void *img = NULL;
  size_t size = 0;
  ASSERT_OK(sp__h5_write_image(&run, &c, &img, &size));
  ASSERT(img != NULL);
  ASSERT_LT(size, e.n * 32 / 2);
  FILE *f = fopen("img.h5", "wb");
  ASSERT(f && fwrite(img, 1, size, f) == size);
  fclose(f);
  free(img);
  long long n;
  int64_t *v = h5_i64("img.h5", "/events/start_times", &n);
  ASSERT(v && n == (long long)e.n && memcmp(v, e.start, e.n * 8) == 0);
  free(v);
  free_events(&e);
  sp__config_free(&c);
}

/* Setup, regions, finalize: the file written through the public API. */
SP_TEST(public_api_zstd_run) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  setenv("SCOPE_PROFILER_HDF5_SCHEMA", "2", 1);
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ovr[] = {"file_path=run.h5", "hdf5_compression=zstd", "hdf5_chunk_size=500", NULL};
  sp_setup_args a = {.overrides = ovr};
  ASSERT_OK(sp_manager_setup(m, &a));
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  for (int i = 0; i < 2000; i++) {
    sp_region_begin(m, outer);
    sp__clock_manual_advance(100 + (uint64_t)(i % 7));
    sp_region_begin(m, inner);
    sp__clock_manual_advance(50);
    sp_region_end(m, inner);
    sp__clock_manual_advance(10);
    sp_region_end(m, outer);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  ASSERT_EQ(h5_region_events("run.h5", "outer"), 2000);
  ASSERT_EQ(h5_region_events("run.h5", "inner"), 2000);
  struct layout l = get_layout("run.h5", "/events/start_times");
  ASSERT_EQ(l.ids[1], SP_FILTER_ZSTD);
  ASSERT_EQ(l.cd[1][0], SP_ZSTD_DEFAULT_LEVEL);
  ASSERT_EQ(l.chunk, 500);
  long long n, n2;
  int64_t *s = h5_i64("run.h5", "/events/start_times", &n);
  int64_t *e = h5_i64("run.h5", "/events/end_times", &n2);
  ASSERT(s && e && n == 4000 && n2 == 4000);
  for (long long i = 0; i < n; i++) ASSERT(e[i] - s[i] == 50 || e[i] - s[i] >= 160);
  free(s);
  free(e);
}

int main(int c, char **v) { return sp_test_main(c, v); }
