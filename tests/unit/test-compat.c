/* test-compat.c - everything upstream wrote reads through the reader
 * library: its compatibility fixtures (tests/fixtures/upstream: HDF5 schemas
 * 1, 2 and 3, the JSON profile v1, native traces v1 and v2), all describing
 * rank 0, one region "solve", starts 10, 20, 40, ends 15, 33, 55, source
 * line 7 and tag "golden" where the format has them, recognised by content
 * (copies under other names read the same); each round-trips through our
 * JSON profile export; hostile variants of the new inputs are format
 * errors that say what is wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "harness.h"
#include "read/read_internal.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

#define FIX(name) SP_TEST_SOURCE_DIR "/tests/fixtures/upstream/" name

struct expect {
  const char *file;
  int line, tags;     /* source line 7 known; tag "golden" stored */
  const char *source; /* source file, "" when the format has none */
};

static const struct expect fixtures[] = {
    {"hdf5-schema-1.h5", 1, 1, "solver.py"}, {"hdf5-schema-2.h5", 1, 1, "solver.py"},
    {"hdf5-schema-3.h5", 1, 1, "solver.py"}, {"json-v1.json", 1, 1, "solver.py"},
    {"native-v1.spt", 0, 0, ""},             {"native-v2.spt", 1, 0, "solver.c"},
};

static void check_golden(sp_results *r, const struct expect *x) {
  ASSERT_EQ(sp_results_num_regions(r), 1);
  ASSERT_STR_EQ(sp_results_region_name(r, 0), "solve");
  ASSERT_EQ(sp_results_num_ranks(r), 1);
  ASSERT_EQ(sp_results_rank(r, 0), 0);
  sp_events e;
  ASSERT_OK(sp_results_events(r, 0, 0, &e));
  ASSERT_EQ(e.count, 3);
  static const int64_t s[3] = {10, 20, 40}, en[3] = {15, 33, 55};
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(e.start_ns[i], s[i]);
    ASSERT_EQ(e.end_ns[i], en[i]);
  }
  sp_events_free(&e);
  const char *file = NULL, *text = NULL;
  int64_t line = 0;
  ASSERT_OK(sp_results_region_source(r, 0, &file, &line, &text));
  ASSERT_EQ(line, x->line ? 7 : -1);
  ASSERT_STR_EQ(file, x->source);
  ASSERT_STR_EQ(sp_results_region_tags(r, 0), x->tags ? "[\"golden\"]" : "[]");
  sp_region_stats st;
  ASSERT_OK(sp_results_region_stats(r, 0, NULL, SP_STATS_OWN | SP_STATS_PERCENTILES, &st));
  ASSERT_EQ(st.count, 3);
  ASSERT_EQ(st.total_ns, 5 + 13 + 15);
  ASSERT_EQ(st.min_ns, 5);
  ASSERT_EQ(st.max_ns, 15);
  ASSERT_EQ(st.own_ns, 33); /* one region, no nesting: all its own */
}

/* A copy of a file under another name (recognition is by content). */
static void copy(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  ASSERT(a && b);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
  fclose(a);
  fclose(b);
}

SP_TEST(every_fixture_reads_with_its_values) {
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, FIX("%s"), fixtures[i].file);
    sp_results *r = NULL;
    if (sp_results_open(path, &r) != SP_OK) SP_FAIL_("%s: %s", fixtures[i].file, sp_last_error());
    check_golden(r, &fixtures[i]);
    sp_results_free(r);
    copy(path, "renamed.dat");
    ASSERT_OK(sp_results_open("renamed.dat", &r));
    check_golden(r, &fixtures[i]);
    sp_results_free(r);
  }
}

SP_TEST(formats_and_schemas_are_told_apart) {
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open(FIX("hdf5-schema-3.h5"), &r));
  ASSERT_EQ(sp_results_schema(r), 3);
  ASSERT_STR_EQ(sp_results_source_format(r), "hdf5");
  ASSERT(!sp_results_has_call_ids(r)); /* upstream's native-style file: nesting from intervals */
  sp_results_free(r);
  ASSERT_OK(sp_results_open(FIX("hdf5-schema-1.h5"), &r));
  ASSERT_EQ(sp_results_schema(r), 1);
  ASSERT_STR_EQ(sp_results_layout(r), "hierarchical");
  sp_results_free(r);
  ASSERT_OK(sp_results_open(FIX("json-v1.json"), &r));
  ASSERT_STR_EQ(sp_results_source_format(r), "json");
  ASSERT_EQ(sp_results_schema(r), 1);
  const sp_metadata_entry *m = sp_results_metadata(r, "mpi_size");
  ASSERT(m && m->kind == SP_VALUE_INT && m->i == 1);
  sp_results_free(r);
  ASSERT_OK(sp_results_open(FIX("native-v2.spt"), &r));
  ASSERT_STR_EQ(sp_results_source_format(r), "native");
  ASSERT_EQ(sp_results_schema(r), 2);
  m = sp_results_metadata(r, "trace_format_version");
  ASSERT(m && m->i == 2);
  sp_results_free(r);
}

/* The JSON profile of r, read back (through memory, by content). */
static sp_results *round_trip(sp_results *r, char **text) {
  size_t len = 0;
  FILE *f = open_memstream(text, &len);
  ASSERT(f != NULL);
  ASSERT_OK(sp_write_json_profile(r, NULL, f));
  fclose(f);
  sp_results *back = NULL;
  if (sp__results_open_bytes(*text, len, "round-trip.json", &back) != SP_OK)
    SP_FAIL_("our JSON does not read back: %s\n%s", sp_last_error(), *text);
  return back;
}

SP_TEST(every_fixture_round_trips_through_json) {
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, FIX("%s"), fixtures[i].file);
    sp_results *r = NULL;
    ASSERT_OK(sp_results_open(path, &r));
    char *t1 = NULL, *t2 = NULL;
    sp_results *back = round_trip(r, &t1);
    check_golden(back, &fixtures[i]);
    /* and again: the second export is the first, byte for byte */
    sp_results *again = round_trip(back, &t2);
    ASSERT_STR_EQ(t2, t1);
    ASSERT_CONTAINS(t1, "\"start_times_ns\": [10, 20, 40], \"end_times_ns\": [15, 33, 55]");
    sp_results_free(again);
    sp_results_free(back);
    sp_results_free(r);
    free(t1);
    free(t2);
  }
}

SP_TEST(gzip_json_reads_like_plain) {
  FILE *in = fopen(FIX("json-v1.json"), "rb");
  ASSERT(in != NULL);
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, in);
  fclose(in);
  gzFile z = gzopen("p.json.gz", "wb");
  ASSERT(z != NULL);
  ASSERT_EQ(gzwrite(z, buf, (unsigned)n), (int)n);
  gzclose(z);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("p.json.gz", &r));
  check_golden(r, &fixtures[3]);
  sp_results_free(r);
  /* a cut gzip stream is an error, not a shorter profile */
  FILE *g = fopen("p.json.gz", "rb");
  char gz[4096];
  size_t gn = fread(gz, 1, sizeof gz, g);
  fclose(g);
  FILE *c = fopen("cut.json.gz", "wb");
  fwrite(gz, 1, gn / 2, c);
  fclose(c);
  ASSERT_EQ(sp_results_open("cut.json.gz", &r), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "gzip-compressed but it is truncated");
}

static void expect_error(const void *data, size_t n, const char *needle) {
  sp_results *r = (sp_results *)1;
  sp_status st = sp__results_open_bytes(data, n, "hostile", &r);
  if (st != SP_ERR_FORMAT) SP_FAIL_("status %d for a hostile input (%s)", st, sp_last_error());
  ASSERT(r == NULL);
  ASSERT_CONTAINS(sp_last_error(), needle);
}

static size_t load(const char *name, unsigned char *buf, size_t cap) {
  FILE *f = fopen(name, "rb");
  ASSERT(f != NULL);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

SP_TEST(hostile_native_traces_are_format_errors) {
  unsigned char b[256];
  size_t n = load(FIX("native-v2.spt"), b, sizeof b);
  ASSERT_EQ(n, 105);
  for (size_t cut = 0; cut < n; cut += 7)
    expect_error(b, cut, cut < 8 ? "not an HDF5 file" : cut < 24 ? "header alone needs 24" : "truncated");
  unsigned char t[256];
  memcpy(t, b, n);
  t[n] = 0;
  expect_error(t, n + 1, "1 byte(s) follow the trace's last region record");
  memcpy(t, b, n);
  t[8] = 9; /* version */
  expect_error(t, n, "native trace version 9");
  memcpy(t, b, n);
  t[16] = 0xff; /* 255 regions in 105 bytes */
  expect_error(t, n, "claims 255 regions");
  memcpy(t, b, n);
  t[0x31] = 0x40; /* 64 calls, 48 bytes left */
  expect_error(t, n, "claims 64 calls");
  memcpy(t, b, n);
  t[0x1a] = 0x7f; /* name length far beyond the file */
  expect_error(t, n, "claims a name of");
  memcpy(t, b, n);
  t[0] = 'X';
  expect_error(t, n, "not an HDF5 file, a JSON profile or a native trace");
  /* a trace ending before it starts reads, but its events are refused */
  memcpy(t, b, n);
  t[0x51] = 0x01, t[0x59] = 0x00; /* end 1 < start 10 */
  sp_results *r = NULL;
  ASSERT_OK(sp__results_open_bytes(t, n, "t.spt", &r));
  sp_events e;
  ASSERT_EQ(sp_results_events(r, 0, 0, &e), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), "ends (1) before it starts (10)");
  sp_results_free(r);
}

SP_TEST(hostile_json_profiles_are_format_errors) {
  static const struct {
    const char *doc, *needle;
  } cases[] = {
      {"{\"format\": \"other\"}", "its \"format\" must be \"scope-profiler-profile\""},
      {"{\"format_version\": 1}", "its \"format\" must be"},
      {"[1, 2]", "not an HDF5 file, a JSON profile"},
      {"{\"format\": \"scope-profiler-profile\", \"format_version\": 2}", "format_version 2; this reader supports"},
      {"{\"format\": \"scope-profiler-profile\", \"format_version\": \"1\"}", "format_version must be an integer"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": {}}", "regions must be an array"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"rank\": 0}]}", "regions[0].name must be a string"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": \"0\"}]}",
       "regions[0].rank must be an integer, not a string"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": -3}]}",
       "rank is -3, not a rank"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1, "
       "\"x\"], \"end_times_ns\": [2, 3]}]}",
       "start_times_ns[1] must be an integer"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1], "
       "\"end_times_ns\": [2, 3]}]}",
       "end_times_ns has 2 values but start_times_ns has 1"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1]}]}",
       "has start_times_ns but not end_times_ns"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": 0}, {\"name\": \"a\", "
       "\"rank\": 0}]}",
       "listed twice"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": 0, \"aggregate\": "
       "{\"count\": 2}}]}",
       "aggregate.total must be an integer"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"a\", \"rank\": 0, \"tags\": [1]}]}",
       "tags must be an array of strings"},
      {"{\"format\": \"scope-profiler-profile\", \"threads\": {\"x\": []}}", "'x', which is not a rank"},
      {"{\"format\": \"scope-profiler-profile\", \"metadata\": [1]}", "metadata must be an object"},
      {"{\"format\": \"scope-profiler-profile\", \"regions\": [}", "line 1, column 50: expected a value, found '}'"},
      {"{\"format\": \"scope-profiler-profile\"} x", "unexpected 'x' after the document"},
      {"{\"format\": \"scope-profiler-profile\", \"n\": NaN}", "NaN and Infinity are not JSON"},
      {"{\"format\": \"scope-profiler-profile\", \"s\": \"\\ud800\"}", "surrogate"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_error(cases[i].doc, strlen(cases[i].doc), cases[i].needle);
  /* nesting beyond the limit is refused, not a stack overflow */
  char deep[4096] = "{\"format\": \"scope-profiler-profile\", \"x\": ";
  size_t k = strlen(deep);
  for (; k < 2000; k++) deep[k] = '[';
  expect_error(deep, k, "nest deeper than");
}

int main(int c, char **v) { return sp_test_main(c, v); }
