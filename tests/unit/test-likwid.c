/* test-likwid.c - use_likwid (src/probes/likwid/): the marker-file parser on
 * good and hostile files, the child's result stream, the run without
 * likwid-perfctr (a warning, timings as usual), and, on a LIKWID stand-in
 * (tests/mock_likwid), the forwarding order, the three result sources in
 * upstream's order with their HDF5 layout (rank<N>/likwid), an init that
 * would exit() the program, and the once-per-process close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "harness.h"
#include "h5util.h"
#include "probes/likwid/likwid_results.h"
#include "read/likwid_read.h"
#include "scope_profiler/reader.h"
#include "scope_profiler.h"

/* A 2-D float64 dataset ([rows][cols], malloc'd), or NULL. */
static double *h5_f64_2d(const char *file, const char *dset, long long *rows, long long *cols) {
  *rows = *cols = -1;
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = f >= 0 ? H5Dopen2(f, dset, H5P_DEFAULT) : -1;
  double *v = NULL;
  if (d >= 0) {
    hid_t s = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    if (H5Sget_simple_extent_ndims(s) == 2 && H5Sget_simple_extent_dims(s, dims, NULL) == 2) {
      *rows = (long long)dims[0];
      *cols = (long long)dims[1];
      v = malloc((dims[0] * dims[1] + 1) * sizeof *v);
      if (dims[0] * dims[1] > 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
        free(v);
        v = NULL;
      }
    }
    H5Sclose(s);
    H5Dclose(d);
  }
  if (f >= 0) H5Fclose(f);
  return v;
}

static struct sp_likwid_results parse_ok(const char *text) {
  struct sp_likwid_results r;
  char err[512] = "";
  if (sp__likwid_parse_marker_file(text, strlen(text), "FLOPS_DP|MEM", &r, err, sizeof err) != 0)
    SP_FAIL_("parse failed: %s", err);
  return r;
}

static void parse_bad(const char *text, size_t len, const char *needle) {
  struct sp_likwid_results r;
  char err[512] = "";
  int rc = sp__likwid_parse_marker_file(text, len, NULL, &r, err, sizeof err);
  if (rc == 0) SP_FAIL_("accepted a bad marker file: %.60s", text);
  ASSERT(r.r == NULL && r.n == 0);
  if (needle) ASSERT_CONTAINS(err, needle);
}

SP_TEST(marker_file_two_regions_two_threads_tags_with_dashes) {
  struct sp_likwid_results r = parse_ok("2 2 2\n"
                                        "0:halo-exchange-3-0\n"
                                        "1:solve-1\r\n"
                                        "0 0 4 10 1.500000e+00 2 1.000000e+03 2.000000e+03 \n"
                                        "0 0 5 12 1.250000e+00 2 3.0e3 nan\n"
                                        "1 1 4 1 5.0e-01 1 7.0\n"
                                        "1 1 5 0 0.0 1 0\n\n");
  ASSERT_EQ(r.n, 2);
  ASSERT_STR_EQ(r.r[0].tag, "halo-exchange-3"); /* the group id comes off the right */
  ASSERT_EQ(r.r[0].group_id, 0);
  ASSERT_STR_EQ(r.r[0].group_name, "FLOPS_DP");
  ASSERT_STR_EQ(r.r[0].source, "marker_file");
  ASSERT_EQ(r.r[0].nthreads, 2);
  ASSERT_EQ(r.r[0].nevents, 2);
  ASSERT_EQ(r.r[0].cpus[1], 5);
  ASSERT_EQ(r.r[0].counts[0], 10);
  ASSERT_NEAR(r.r[0].times[1], 1.25, 1e-12);
  ASSERT_NEAR(r.r[0].events[0 * 2 + 0], 1000, 1e-9); /* [event][thread] */
  ASSERT_NEAR(r.r[0].events[0 * 2 + 1], 3000, 1e-9);
  ASSERT(isnan(r.r[0].events[1 * 2 + 1]));
  ASSERT_STR_EQ(r.r[0].event_names[1], "event_1");
  ASSERT(r.r[0].counter_names == NULL);
  ASSERT_EQ(r.r[0].nmetrics, 0);
  ASSERT_STR_EQ(r.r[1].tag, "solve");
  ASSERT_EQ(r.r[1].group_id, 1);
  ASSERT_STR_EQ(r.r[1].group_name, "MEM");
  ASSERT_EQ(r.r[1].nevents, 1);
  sp__likwid_results_free(&r);
}

SP_TEST(marker_file_edge_cases_that_are_fine) {
  struct sp_likwid_results r = parse_ok("4 0 1\n"); /* no region */
  ASSERT_EQ(r.n, 0);
  sp__likwid_results_free(&r);
  r = parse_ok("1 1 1\n0:no_group_suffix\n0 0 0 3 1e-3 0\n");
  ASSERT_EQ(r.n, 1);
  ASSERT_STR_EQ(r.r[0].tag, "no_group_suffix");
  ASSERT_EQ(r.r[0].group_id, 0); /* from the data line */
  sp__likwid_results_free(&r);
  r = parse_ok("2 1 1\n0:-5\n0 5 1 1 1 1 1\n"); /* a tag of just "-5": no label to split off */
  ASSERT_STR_EQ(r.r[0].tag, "-5");
  ASSERT_EQ(r.r[0].counts[1], 0); /* the thread without a line */
  ASSERT_EQ(r.r[0].cpus[1], -1);
  sp__likwid_results_free(&r);
  r = parse_ok("1 1 1\n0:a b c/d-0\n0 0 0 1 1 1 inf\n"); /* spaces and '/' in tags, inf values */
  ASSERT_STR_EQ(r.r[0].tag, "a b c/d");
  ASSERT(isinf(r.r[0].events[0]));
  sp__likwid_results_free(&r);
}

SP_TEST(hostile_marker_files_are_errors_not_crashes) {
  parse_bad("", 0, "empty");
  parse_bad("x y z\n", 6, "line 1");
  parse_bad("1 1\n", 4, "line 1");
  parse_bad("1 1 1 7\n", 8, "line 1");
  parse_bad("-1 1 1\n", 7, "line 1");
  parse_bad("1 99999999 1\n", 13, "holds"); /* counts the bytes cannot hold */
  parse_bad("65537 1 1\n0:a-0\n", 16, "line 1");
  parse_bad("1 2 1\n0:a-0\n", 12, NULL);
  parse_bad("1 1 1\n0:a-0\n0:b-0\n", 18, NULL);
  parse_bad("1 2 1\n0:a-0\n0:b-0\n0 0 0 0 0 0\n", 30, "new id");
  parse_bad("1 1 1\n5:a-0\n", 12, "new id");
  parse_bad("1 1 1\nnocolon\n", 14, "new id");
  parse_bad("1 1 1\n0:a-0\n0 0 0 1 1 2 5\n", 26, "fewer");
  parse_bad("1 1 1\n0:a-0\n0 0 0 1 1 1 5 6\n", 28, "more than");
  parse_bad("1 1 1\n0:a-0\n0 0 0 1 1 1 5\n0 0 0 1 1 1 5\n", 40, "more than 1 thread");
  parse_bad("1 1 1\n0:a-0\n3 0 0 1 1 1 5\n", 26, "line 3");
  parse_bad("1 1 1\n0:a-0\n0 0 0 -1 1 1 5\n", 27, "line 3");
  parse_bad("1 1 1\n0:a-0\n0 0 0 1 abc 1 5\n", 28, "line 3");
  parse_bad("1 1 1\n0:a-0\n0 0 0 1 1 99999 5\n", 30, "line 3");
  parse_bad("2 1 1\n0:a-0\n0 0 0 1 1 1 5\n0 0 0 1 1 2 5 6\n", 42, "had 1 events");
  parse_bad("1 1 1\n0:a-0\n0 0 0 1 1 1000 5\n", 29, "cannot fit");
  /* every prefix of a good file: parsed or refused, never more */
  const char *good = "2 2 1\n0:x-0\n1:y-0\n0 0 1 2 3 2 4 5\n0 0 1 2 3 2 4 5\n1 0 1 2 3 1 4\n1 0 1 2 3 1 4\n";
  for (size_t n = 0; n <= strlen(good); n++) {
    char *copy = malloc(n + 1);
    memcpy(copy, good, n); /* no terminator: the parser goes by length */
    struct sp_likwid_results r;
    char err[256];
    if (sp__likwid_parse_marker_file(copy, n, NULL, &r, err, sizeof err) == 0) sp__likwid_results_free(&r);
    free(copy);
  }
}

SP_TEST(result_stream_round_trip_and_damage) {
  struct sp_likwid_results r = parse_ok("2 1 1\n0:k-0\n0 0 1 2 3 2 4 5\n0 0 2 3 4 2 6 7\n");
  r.r[0].counter_names = calloc(3, sizeof(char *));
  r.r[0].counter_names[0] = strdup("PMC0");
  r.r[0].counter_names[1] = strdup("PMC1");
  size_t len;
  unsigned char *buf = sp__likwid_encode(&r, &len);
  ASSERT(buf != NULL);
  struct sp_likwid_results back;
  char err[256];
  ASSERT_EQ(sp__likwid_decode(buf, len, &back, err, sizeof err), 0);
  ASSERT_EQ(back.n, 1);
  ASSERT_STR_EQ(back.r[0].tag, "k");
  ASSERT_STR_EQ(back.r[0].source, "full_api");
  ASSERT_STR_EQ(back.r[0].counter_names[1], "PMC1");
  ASSERT_NEAR(back.r[0].events[1 * 2 + 1], 7, 1e-12);
  ASSERT_EQ(back.r[0].cpus[1], 2);
  sp__likwid_results_free(&back);
  for (size_t n = 0; n < len; n++) { /* every truncation is refused */
    ASSERT_EQ(sp__likwid_decode(buf, n, &back, err, sizeof err), -1);
    ASSERT(back.r == NULL);
  }
  buf[len - 9] ^= 0x40; /* a flipped bit in the last value: still a valid stream */
  if (sp__likwid_decode(buf, len, &back, err, sizeof err) == 0) sp__likwid_results_free(&back);
  buf[20] = 0xff; /* an absurd count */
  ASSERT_EQ(sp__likwid_decode(buf, len, &back, err, sizeof err), -1);
  free(buf);
  sp__likwid_results_free(&r);
}

/*====== The probe ======*/

static int run_app(const char *file, int calls) {
  char fp[256];
  snprintf(fp, sizeof fp, "file_path=%s", file);
  const char *ov[] = {"use_likwid=1", fp, "likwid_library=" SP_TEST_MOCK_LIKWID, NULL};
  sp_setup_args a = {.overrides = ov};
  if (sp_setup(&a) != SP_OK) return -1;
  sp_region solve = sp_region_intern("solve-phase-2"), io = sp_region_intern("io/write");
  for (int i = 0; i < calls; i++) {
    sp_begin(solve);
    sp_begin(io);
    sp_end(io);
    sp_end(solve);
  }
  return sp_finalize(NULL, NULL);
}

static void likwid_env(void) {
  setenv("LIKWID_MODE", "1", 1);
  setenv("LIKWID_FILEPATH", "likwid_marker.out", 1);
  setenv("LIKWID_EVENTS", "MOCK_GROUP", 1);
  setenv("LIKWID_THREADS", "0", 1);
  setenv("MOCK_LIKWID_LOG", "likwid.log", 1);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("");
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return strdup(buf);
}

SP_TEST(without_likwid_perfctr_one_warning_and_timings_as_usual) {
  unsetenv("LIKWID_MODE");
  unsetenv("LIKWID_FILEPATH");
  setenv("MOCK_LIKWID_LOG", "likwid.log", 1);
  ASSERT_OK(run_app("plain.h5", 3));
  ASSERT_EQ(h5_region_events("plain.h5", "solve-phase-2"), 3);
  ASSERT(h5_attr_exists("plain.h5", "/metadata", "warnings"));
  char *w = h5_attr_str("plain.h5", "/metadata", "warnings");
  (void)w; /* a list: present is what matters; its text is checked below */
  free(w);
  ASSERT_EQ(h5_raw_len("plain.h5", "/rank0/likwid/regions/solve-phase-2/times"), -1);
  char *log = slurp("likwid.log");
  ASSERT_STR_EQ(log, ""); /* LIKWID was never called */
  free(log);
}

SP_TEST(under_likwid_the_full_api_results_land_in_upstreams_layout) {
  likwid_env();
  ASSERT_OK(run_app("full.h5", 4));
  /* forwarded: init (the child's probe, then ours), thread init, start/stop pairs, one close */
  char *log = slurp("likwid.log");
  ASSERT_CONTAINS(log, "start solve-phase-2");
  ASSERT_CONTAINS(log, "stop io/write");
  ASSERT(strstr(log, "close") && !strstr(strstr(log, "close") + 5, "close"));
  ASSERT(!strstr(log, "scope_profiler.calibration"));
  free(log);
  const char *g = "/rank0/likwid/regions/solve-phase-2";
  char *src = h5_attr_str("full.h5", g, "source");
  if (strcmp(src, "full_api") != 0) fprintf(stderr, "  why: %s\n", h5_attr_str("full.h5", "/rank0/likwid", "sources_not_used"));
  ASSERT_STR_EQ(src, "full_api");
  free(src);
  char *tag = h5_attr_str("full.h5", g, "tag");
  ASSERT_STR_EQ(tag, "solve-phase-2");
  free(tag);
  char *gn = h5_attr_str("full.h5", g, "group_name");
  ASSERT_STR_EQ(gn, "MOCK_GROUP");
  free(gn);
  ASSERT_EQ(h5_attr_i64("full.h5", g, "group_id"), 0);
  long long n;
  int64_t *cc = h5_i64("full.h5", "/rank0/likwid/regions/solve-phase-2/call_counts", &n);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(cc[0], 4);
  free(cc);
  long long rows, cols;
  double *ev = h5_f64_2d("full.h5", "/rank0/likwid/regions/solve-phase-2/events", &rows, &cols);
  ASSERT_EQ(rows, 2); /* [events, threads] */
  ASSERT_EQ(cols, 1);
  ASSERT_NEAR(ev[0], 4000, 1e-6);
  ASSERT_GT(ev[1], 0);
  free(ev);
  double *met = h5_f64_2d("full.h5", "/rank0/likwid/regions/solve-phase-2/metrics", &rows, &cols);
  ASSERT_EQ(rows, 1);
  ASSERT_EQ(cols, 1);
  free(met);
  /* '/' in a tag becomes '|' in the group name; the tag attribute keeps it */
  char *iot = h5_attr_str("full.h5", "/rank0/likwid/regions/io|write", "tag");
  ASSERT_STR_EQ(iot, "io/write");
  free(iot);
  char *mode = h5_attr_str("full.h5", "/rank0/likwid", "LIKWID_MODE");
  ASSERT_STR_EQ(mode, "1");
  free(mode);
  ASSERT_EQ(h5_attr_i64("full.h5", "/rank0/likwid", "num_regions"), 2);
  /* what the probe wrote reads back as inspect shows it */
  sp_results *res;
  ASSERT_OK(sp_results_open("full.h5", &res));
  struct sp_likwid_row *lr;
  size_t nl;
  ASSERT_OK(sp__results_likwid(res, &lr, &nl));
  ASSERT_EQ(nl, 2);
  int seen = 0;
  for (size_t i = 0; i < nl; i++) {
    ASSERT_EQ(lr[i].rank, 0);
    ASSERT_STR_EQ(lr[i].source, "full_api");
    ASSERT_STR_EQ(lr[i].group_name, "MOCK_GROUP");
    ASSERT_EQ(lr[i].nevents, 2);
    if (strcmp(lr[i].region, "solve-phase-2") == 0) {
      seen |= 1;
      ASSERT_EQ(lr[i].calls, 4);
      ASSERT_EQ(lr[i].nthreads, 1);
      ASSERT_NEAR(lr[i].events[0], 4000, 1e-6);
    } else if (strcmp(lr[i].region, "io/write") == 0)
      seen |= 2;
  }
  ASSERT_EQ(seen, 3);
  sp__likwid_rows_free(lr, nl);
  sp_results_free(res);
  /* A second finalize collects nothing (the marker API is closed) */
  sp_region r = sp_region_intern("after");
  sp_begin(r);
  sp_end(r);
  ASSERT_OK(sp_finalize(NULL, NULL));
  ASSERT_EQ(h5_attr_i64("full.h5", "/rank0/likwid", "num_regions"), -1); /* the file of run 2 has no group */
}

SP_TEST(marker_file_is_the_fallback_when_the_api_read_back_fails) {
  likwid_env();
  setenv("MOCK_LIKWID_CRASH_READ", "1", 1); /* the child crashes: the program does not */
  ASSERT_OK(run_app("file.h5", 2));
  char *src = h5_attr_str("file.h5", "/rank0/likwid/regions/solve-phase-2", "source");
  ASSERT_STR_EQ(src, "marker_file");
  free(src);
  char *why = h5_attr_str("file.h5", "/rank0/likwid", "sources_not_used");
  /* "crashed (Segmentation fault)", or under ASan, whose handler catches it, "exited with status 1" */
  ASSERT(strstr(why, "full_api: it crashed") || strstr(why, "full_api: it exited"));
  free(why);
  long long n;
  int64_t *cc = h5_i64("file.h5", "/rank0/likwid/regions/solve-phase-2/call_counts", &n);
  ASSERT_EQ(cc[0], 2);
  free(cc);
}

SP_TEST(marker_api_snapshot_when_there_is_no_file) {
  likwid_env();
  setenv("MOCK_LIKWID_NO_PERFMON", "1", 1);
  setenv("MOCK_LIKWID_NO_FILE", "1", 1);
  ASSERT_OK(run_app("snap.h5", 5));
  char *src = h5_attr_str("snap.h5", "/rank0/likwid/regions/io|write", "source");
  ASSERT_STR_EQ(src, "marker_api");
  free(src);
  long long n;
  int64_t *cc = h5_i64("snap.h5", "/rank0/likwid/regions/io|write/call_counts", &n);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(cc[0], 5);
  free(cc);
}

SP_TEST(an_init_that_would_exit_the_program_is_tried_in_a_child) {
  likwid_env();
  setenv("MOCK_LIKWID_INIT", "exit", 1);
  ASSERT_OK(run_app("exit.h5", 2)); /* still alive */
  ASSERT_EQ(h5_region_events("exit.h5", "solve-phase-2"), 2);
  ASSERT_EQ(h5_raw_len("exit.h5", "/rank0/likwid/regions/solve-phase-2/times"), -1);
}

SP_TEST(a_missing_library_is_a_warning) {
  likwid_env();
  const char *ov[] = {"use_likwid=1", "file_path=nolib.h5", "likwid_library=/nonexistent/liblikwid.so", NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_setup(&a));
  sp_region r = sp_region_intern("x");
  sp_begin(r);
  sp_end(r);
  ASSERT_OK(sp_finalize(NULL, NULL));
  ASSERT_EQ(h5_region_events("nolib.h5", "x"), 1);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
