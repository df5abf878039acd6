/* test-stream.c - bounded memory (max_buffer_bytes): long runs stream full
 * buffers to a staging file; the file must hold every event, memory must stay
 * under the budget, and the result must equal an unbounded run's. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/resource.h>

#include "core/core.h"
#include "core/stream.h"
#include "harness.h"
#include "h5util.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

/* Sanitizer builds map shadow memory and (ASan) keep freed blocks in
 * quarantine: their peak RSS says nothing of the budget, so only the RSS
 * bound is left out there; every other check still holds. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SP_TEST_RSS_INFLATED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SP_TEST_RSS_INFLATED 1
#endif
#endif

static long maxrss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static sp_manager *setup_with(const char *const *overrides) {
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = overrides}));
  return m;
}

/* The nesting a reader rebuilds when a file leaves the call ids out
 * (upstream's rule, docs/file-format.md): per lane (thread id), calls sorted
 * by (start, longer first), each inside the nearest enclosing call still
 * open. Returns ids 0..n-1 in *c and the parent's index (-1: a root) in *p. */
static const int64_t *by_s, *by_e, *by_lane;
static int by_start(const void *x, const void *y) {
  int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
  int64_t li = by_lane ? by_lane[i] : 0, lj = by_lane ? by_lane[j] : 0;
  if (li != lj) return li < lj ? -1 : 1;
  if (by_s[i] != by_s[j]) return by_s[i] < by_s[j] ? -1 : 1;
  int64_t di = by_e[i] - by_s[i], dj = by_e[j] - by_s[j];
  return (di < dj) - (di > dj);
}
static void rebuild(long long n, const int64_t *s, const int64_t *e, const int64_t *lane, int64_t **c, int64_t **p) {
  int64_t *order = malloc(((size_t)n + 1) * sizeof *order), *stack = malloc(((size_t)n + 1) * sizeof *stack);
  *c = malloc(((size_t)n + 1) * sizeof **c);
  *p = malloc(((size_t)n + 1) * sizeof **p);
  ASSERT(order && stack && *c && *p);
  for (long long i = 0; i < n; i++) order[i] = (*c)[i] = i;
  by_s = s, by_e = e, by_lane = lane;
  qsort(order, (size_t)n, sizeof *order, by_start);
  long long sp = 0;
  for (long long k = 0; k < n; k++) {
    int64_t i = order[k];
    if (k && lane && lane[order[k - 1]] != lane[i]) sp = 0;
    while (sp && e[stack[sp - 1]] <= s[i]) sp--;
    (*p)[i] = sp ? stack[sp - 1] : -1;
    stack[sp++] = i;
  }
  free(order);
  free(stack);
}

/* Checks the file's events without trusting our writer's own bookkeeping:
 * every row ordered by start, call ids unique, every parent a real call that
 * encloses its child; without call ids, the nesting rebuilt from the
 * intervals. Returns the number of events; *roots: calls without a parent. */
static long long check_file(const char *file, long long max_id, long long *roots) {
  long long n, k;
  int64_t *s = h5_i64(file, "/events/start_times", &n);
  int64_t *e = h5_i64(file, "/events/end_times", &n);
  int64_t *c = h5_i64(file, "/events/call_ids", &n), *p = NULL;
  if (c) {
    p = h5_i64(file, "/events/parent_ids", &n);
  } else {
    long long nt = 0;
    int64_t *lane = h5_i64(file, "/events/thread_ids", &nt);
    ASSERT(h5_len(file, "/events/parent_ids") < 0); /* the two come together */
    n = h5_len(file, "/events/start_times");
    ASSERT(!lane || nt == n);
    rebuild(n, s, e, lane, &c, &p);
    free(lane);
  }
  int64_t *off = h5_i64(file, "/rank_region_index/event_offsets", &k);
  int64_t *cnt = h5_i64(file, "/rank_region_index/event_counts", &k);
  ASSERT(s && e && c && p && off && cnt);
  *roots = 0;
  long long sum = 0;
  /* Each thread's calls of a row are in start order. Across threads they
   * are not when the blocks are the file's data (a row is its segments in
   * block order, docs/file-format.md "Staged blocks"). */
  long long nl = 0;
  int64_t *lanes = h5_i64(file, "/events/thread_ids", &nl);
  for (long long r = 0; r < k; r++) {
    ASSERT_EQ(off[r], sum);
    int64_t last[64];
    for (int t = 0; t < 64; t++) last[t] = INT64_MIN;
    for (int64_t j = off[r]; j < off[r] + cnt[r]; j++) {
      int64_t t = lanes ? lanes[j] : 0;
      ASSERT(t >= 0 && t < 64);
      ASSERT_GE(s[j], last[t]);
      last[t] = s[j];
    }
    sum += cnt[r];
  }
  free(lanes);
  ASSERT_EQ(sum, n);
  /* id -> event index, to check parents */
  int64_t *where = malloc((size_t)(max_id + 1) * sizeof *where);
  ASSERT(where);
  for (long long i = 0; i <= max_id; i++) where[i] = -1;
  for (long long i = 0; i < n; i++) {
    ASSERT(c[i] >= 0 && c[i] <= max_id);
    ASSERT_EQ(where[c[i]], -1); /* unique */
    where[c[i]] = i;
    ASSERT_GE(e[i], s[i]);
  }
  for (long long i = 0; i < n; i++) {
    if (p[i] < 0) {
      ++*roots;
      continue;
    }
    ASSERT(p[i] <= max_id);
    int64_t j = where[p[i]];
    ASSERT(j >= 0);
    ASSERT(s[j] <= s[i] && e[i] <= e[j]);
  }
  free(where); free(s); free(e); free(c); free(p); free(off); free(cnt);
  return n;
}

SP_TEST(twenty_million_events_in_an_8_mib_budget) {
  const char *ov[] = {"file_path=big.h5", "max_buffer_bytes=8388608", NULL};
  sp_manager *m = setup_with(ov);
  enum { NREG = 24 };
  sp_region r[NREG];
  char name[32];
  for (int i = 0; i < NREG; i++) {
    snprintf(name, sizeof name, "r%02d", i);
    r[i] = sp_region_intern(name);
  }
  long rss0 = maxrss_kib();
  const long total = 20000000;
  long done = 0;
  sp_region_begin(m, r[0]); /* open for the whole run: carried by every block */
  done++;
  for (long step = 0; done < total; step++) {
    sp_region_begin(m, r[1]);
    for (int k = 0; k < 48 && done + 2 < total; k++) {
      sp_region_begin(m, r[2 + (k + step) % (NREG - 2)]);
      sp_region_end(m, r[2 + (k + step) % (NREG - 2)]);
      done++;
    }
    sp_region_end(m, r[1]);
    done++;
  }
  sp_region_end(m, r[0]);
  long rss_rec = maxrss_kib();
  ASSERT_EQ(sp_manager_num_calls(m, r[0]), 1);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long rss1 = maxrss_kib();
  fprintf(stderr, "  peak RSS grew by %.1f MiB while recording, %.1f MiB in all, for %ld events (budget 8 MiB)\n",
          (rss_rec - rss0) / 1024.0, (rss1 - rss0) / 1024.0, done);
#ifndef SP_TEST_RSS_INFLATED
  ASSERT_LT((rss1 - rss0) * 1024L, 8L * 1048576 + 24L * 1048576); /* budget + a fixed allowance */
#else
  fprintf(stderr, "  (the RSS bound is not judged in a sanitizer build)\n");
#endif
  ASSERT_EQ(h5_len("big.h5", "/events/start_times"), total);
  ASSERT_EQ(h5_region_events("big.h5", "r00"), 1);
  ASSERT_GT(h5_attr_i64("big.h5", "/metadata", "streamed_blocks"), 10);
  ASSERT_EQ(h5_attr_i64("big.h5", "/metadata", "dropped_events"), 0);
  sp_manager_destroy(m);
  /* one thread, nothing open at finalize: the intervals give the tree
   * unless two begins were closer than the clock map resolves (the real
   * clock: that is up to the machine; streamed_without_ids_equals_in_memory
   * pins it down on the manual clock), and either way the tree has the one
   * root the run recorded */
  fprintf(stderr, "  call ids %s\n", h5_len("big.h5", "/events/call_ids") < 0 ? "left out" : "written");
  long long roots = 0;
  ASSERT_EQ(check_file("big.h5", total + 16, &roots), total);
  ASSERT_EQ(roots, 1);
}

/* The same calls, at the same (manual) instants, into a bounded and an
 * unbounded manager: the two files must hold the same events. */
static sp_manager *a, *b;
static void both_begin(sp_region r) { sp_region_begin(a, r); sp_region_begin(b, r); }
static void both_end(sp_region r) { sp_region_end(b, r); sp_region_end(a, r); }

/* leaf_min: the shortest leaf call in ticks of the manual clock, which is
 * also the gap between two begins; 0 makes ties, which need the ids. */
static void stream_vs_memory(uint64_t leaf_min) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  const char *oa[] = {"file_path=streamed.h5", "max_buffer_bytes=1048576", "buffer_limit=64", NULL};
  const char *ob[] = {"file_path=memory.h5", NULL};
  a = setup_with(oa);
  b = setup_with(ob);
  sp_region root = sp_region_intern("root"), mid = sp_region_intern("mid"), leaf = sp_region_intern("leaf");
  both_begin(root);
  sp__clock_manual_advance(leaf_min);
  for (int i = 0; i < 60000; i++) {
    both_begin(mid);
    sp__clock_manual_advance(3 + (uint64_t)(i % 7));
    for (int j = 0; j < 3; j++) {
      both_begin(leaf);
      sp__clock_manual_advance(leaf_min + (uint64_t)((i * 31 + j) % 5));
      /* now and then a call of 5 s: beyond 32 bits, as int64 stores it */
      if (i % 10000 == 5 && j == 1) sp__clock_manual_advance(UINT64_C(5000000000));
      both_end(leaf);
    }
    both_end(mid);
  }
  both_end(root);
  ASSERT_OK(sp_manager_finalize(a, NULL, NULL));
  ASSERT_OK(sp_manager_finalize(b, NULL, NULL));
  ASSERT_GT(h5_attr_i64("streamed.h5", "/metadata", "streamed_blocks"), 2);
  ASSERT_EQ(h5_attr_i64("streamed.h5", "/", "scope_profiler_schema"), 3);
  /* the same layout as a run that stayed in memory: upstream's schema 3,
   * byte for byte the same columns, call ids in both or in neither (the
   * stream writer proves them redundant from its gaps in ticks, the memory
   * run from the intervals in ns: with every gap 5 ticks or more both
   * leave them out, with ties both keep them), and both nest the same */
  const char *cols[] = {"/events/start_deltas", "/events/durations", "/events/start_times", "/events/end_times",
                        "/rank_region_index/event_counts", "/rank_region_index/exclusive_totals"};
  for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
    long long na, nb;
    int64_t *va = h5_i64("streamed.h5", cols[c], &na), *vb = h5_i64("memory.h5", cols[c], &nb);
    ASSERT_EQ(na, nb);
    for (long long i = 0; i < na; i++)
      if (va[i] != vb[i]) SP_FAIL_("%s[%lld]: streamed %lld, in memory %lld", cols[c], i, (long long)va[i], (long long)vb[i]);
    free(va);
    free(vb);
  }
  int ids = h5_len("streamed.h5", "/events/call_ids") > 0;
  ASSERT_EQ(ids, leaf_min == 0);
  ASSERT_EQ(h5_len("memory.h5", "/events/call_ids") > 0, ids);
  if (ids) {
    long long na, nb;
    int64_t *va = h5_i64("streamed.h5", "/events/call_ids", &na), *vb = h5_i64("memory.h5", "/events/call_ids", &nb);
    ASSERT(na == nb && memcmp(va, vb, (size_t)na * 8) == 0);
    free(va);
    free(vb);
  }
  sp_results *ra = NULL, *rb = NULL;
  ASSERT_OK(sp_results_open("streamed.h5", &ra));
  ASSERT_OK(sp_results_open("memory.h5", &rb));
  sp_call *ca = NULL, *cb = NULL;
  size_t nca = 0, ncb = 0;
  ASSERT_OK(sp_results_call_stack(ra, 0, NULL, &ca, &nca, NULL));
  ASSERT_OK(sp_results_call_stack(rb, 0, NULL, &cb, &ncb, NULL));
  ASSERT_EQ(nca, ncb);
  for (size_t i = 0; i < nca; i++) {
    ASSERT_EQ(ca[i].start_ns, cb[i].start_ns);
    ASSERT_EQ(ca[i].parent, cb[i].parent);
    ASSERT_EQ(ca[i].depth, cb[i].depth);
  }
  free(ca);
  free(cb);
  /* the same statistics, summed while assembling the streamed file and in
   * two passes over the columns in memory: exact but for rounding */
  ASSERT_EQ(sp_results_num_regions(ra), sp_results_num_regions(rb));
  for (size_t g = 0; g < sp_results_num_regions(ra); g++) {
    size_t h;
    ASSERT_OK(sp_results_find_region(rb, sp_results_region_name(ra, g), &h));
    sp_region_stats x, y;
    ASSERT_OK(sp_results_region_stats(ra, g, NULL, 0, &x));
    ASSERT_OK(sp_results_region_stats(rb, h, NULL, 0, &y));
    ASSERT(x.count == y.count && x.total_ns == y.total_ns && x.min_ns == y.min_ns && x.max_ns == y.max_ns);
    ASSERT(x.first_ns == y.first_ns && x.last_ns == y.last_ns);
    if (fabs(x.mean_ns - y.mean_ns) > 1e-9 * fabs(y.mean_ns) || fabs(x.std_ns - y.std_ns) > 1e-6 * y.std_ns + 1e-9)
      SP_FAIL_("%s: streamed mean %.17g std %.17g, in memory %.17g %.17g", sp_results_region_name(ra, g),
               x.mean_ns, x.std_ns, y.mean_ns, y.std_ns);
  }
  sp_results_free(ra);
  sp_results_free(rb);
  /* the same bytes per call, give or take the metadata */
  struct stat sa, sb;
  ASSERT(stat("streamed.h5", &sa) == 0 && stat("memory.h5", &sb) == 0);
  ASSERT_LT(sa.st_size, sb.st_size + sb.st_size / 20 + 65536);
  sp_manager_destroy(a);
  sp_manager_destroy(b);
}

SP_TEST(streamed_equals_in_memory) { stream_vs_memory(0); }

SP_TEST(streamed_without_ids_equals_in_memory) { stream_vs_memory(5); }

#define NT 4
static sp_manager *tm;
static sp_region tr[3];
static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 400000; i++) {
    sp_region_begin(tm, tr[0]);
    sp_region_begin(tm, tr[1 + (i & 1)]);
    sp_region_end(tm, tr[1 + (i & 1)]);
    sp_region_end(tm, tr[0]);
  }
  return NULL;
}

SP_TEST(threads_stream_and_merge_by_start) {
  const char *ov[] = {"file_path=threads.h5", "max_buffer_bytes=2097152", "track_threads=1", NULL};
  tm = setup_with(ov);
  tr[0] = sp_region_intern("outer");
  tr[1] = sp_region_intern("even");
  tr[2] = sp_region_intern("odd");
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) ASSERT_EQ(pthread_create(&th[i], NULL, worker, NULL), 0);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  ASSERT_EQ(sp_manager_num_calls(tm, tr[0]), NT * 400000);
  ASSERT_OK(sp_manager_finalize(tm, NULL, NULL));
  ASSERT_GT(h5_attr_i64("threads.h5", "/metadata", "streamed_blocks"), NT);
  ASSERT_EQ(h5_region_events("threads.h5", "outer"), NT * 400000);
  ASSERT_EQ(h5_region_events("threads.h5", "even"), NT * 200000);
  long long n;
  int64_t *tid = h5_i64("threads.h5", "/events/thread_ids", &n);
  ASSERT_EQ(n, NT * 800000);
  long long per[NT] = {0};
  for (long long i = 0; i < n; i++) {
    ASSERT(tid[i] >= 0 && tid[i] < NT);
    per[tid[i]]++;
  }
  for (int i = 0; i < NT; i++) ASSERT_EQ(per[i], 800000);
  free(tid);
  long long roots = 0;
  ASSERT_EQ(check_file("threads.h5", NT * 800000 + 16, &roots), NT * 800000);
  ASSERT_EQ(roots, NT * 400000); /* the outer calls, ids or not */
  sp_manager_destroy(tm);
}

/* One streamed run of `n` leaf calls on this thread, written to `file`. */
static void stream_run(sp_manager *m, sp_region r, int n) {
  for (int i = 0; i < n; i++) {
    sp_region_begin(m, r);
    sp_region_end(m, r);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
}

/* A manager that lives on after a streamed finalize gives the writer's
 * recycled buffers back (it may record little more), and the overhead
 * estimate counts every fresh buffer a recording thread takes at a
 * hand-off: the first one of each run always is (the writer has none yet,
 * or gave them back), so overhead_fresh_bytes is at least one hand-off's
 * (plus the buffer grown, in the first run), and at most one more per
 * block. */
SP_TEST(recycled_buffers_freed_and_fresh_ones_counted) {
  const char *ov[] = {"file_path=recycle.h5", "max_buffer_bytes=1048576", NULL};
  sp_manager *m = setup_with(ov);
  ASSERT(m->overhead_ns >= 0); /* calibrated at setup: the figures below are written */
  sp_region r = sp_region_intern("leaf");
  for (int run = 0; run < 2; run++) {
    stream_run(m, r, 150000);
    ASSERT_EQ(sp__stream_spare_bytes(m), 0);
    long long blocks = h5_attr_i64("recycle.h5", "/metadata", "streamed_blocks");
    long long fresh = h5_attr_i64("recycle.h5", "/metadata", "overhead_fresh_bytes");
    ASSERT_GT(blocks, 2);
    ASSERT_EQ(h5_region_events("recycle.h5", "leaf"), 150000);
    const sp_thread_rec *t = m->threads;
    ASSERT(t != NULL && t->next == NULL);
    long long buf = (long long)(t->hot.cap * sizeof(struct sp_i_event));
    /* the first run also grew its buffer to `buf` (counted before too);
     * the second starts in the buffer the drain gave it (fresh: counted
     * for it; a recycled one: not) */
    if (fresh < (run == 0 ? 2 : 1) * buf || fresh > (blocks + 2) * buf)
      SP_FAIL_("run %d: overhead_fresh_bytes %lld, buffer %lld B, %lld blocks", run, fresh, buf, blocks);
  }
  sp_manager_destroy(m);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
