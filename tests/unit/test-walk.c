/* test-walk.c - the reader's streamed walk over a rank's calls
 * (src/read/read_walk.c) gives exactly the call-path trees and own times of
 * the sorted path it replaces, and refuses what it cannot take.
 *
 * Synthetic runs are written straight through the serial writer (sp_run):
 * several threads of nested calls with recursion, ties and zero-length calls,
 * with and without call ids, with parents on another thread, without stored
 * exclusive totals (so own times come from the calls), and then broken
 * on purpose (a row out of start order, a dangling parent, a repeated id,
 * sparse ids). Real runs come from the profiler: streamed through a small
 * budget and with OpenMP workers. Each file is read twice, walk on and off,
 * and every node and own time compared. */
#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "core/core.h"
#include "core/snapshot.h"
#include "core/stream.h"
#include "h5util.h"
#include "harness.h"
#include "output/output.h"
#include "output/plan.h"
#include "read/read_internal.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static uint64_t rng = 7;
static uint64_t rnd(void) { return sp_test_splitmix(&rng); }

#define NREG 6
enum {
  IDS = 1,
  THREADS = 2,
  XPARENT = 4,
  SHUFFLE = 8,
  DANGLE = 16,
  REPEAT = 32,
  SPARSE = 64,
  OVERLAP = 128,
  XENDED = 256, /* with XPARENT: one parent on thread 0 that ended before its child */
  NOIDS = 512,  /* every id -1 (upstream's fill for a rank without ids) */
  NEGID = 1024  /* one id -1 half way */
};

struct call {
  int64_t start, end, id, parent, thread;
  uint32_t region;
};

static int cmp_row_order(const void *pa, const void *pb) {
  const struct call *a = pa, *b = pb;
  if (a->region != b->region) return a->region < b->region ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* n calls on `threads` threads, each a random nest (depth up to 6, regions
 * repeating, so recursion), time steps of 0-3 ns: many ties. */
static void synth(const char *path, size_t n, int threads, unsigned opts) {
  struct call *c = calloc(n + 1, sizeof *c);
  ASSERT(c != NULL);
  size_t k = 0, n0 = 0;
  int64_t id = 0;
  int ended = 0;
  for (int t = 0; t < threads && k < n; t++) {
    if (t == 1) n0 = k;
    size_t want = t + 1 == threads ? n - k : n / (size_t)threads;
    size_t stack[8], sp = 0, made = 0;
    int64_t now = 1000 + (int64_t)(rnd() % 5);
    while (made < want || sp) {
      now += (int64_t)(rnd() % 4);
      if (sp && (sp == 6 || made == want || rnd() % 3 == 0)) {
        c[stack[--sp]].end = now;
        continue;
      }
      struct call *x = &c[k];
      x->start = now;
      x->region = (uint32_t)(rnd() % NREG);
      x->thread = t;
      x->id = id++;
      x->parent = sp ? c[stack[sp - 1]].id : -1;
      /* a root on a worker thread under a call of thread 0 still open at
       * its start (an OpenMP worker's call under the call that opened
       * the region, which began earlier), the thread-0 calls being c[0,
       * n0) in begin order */
      if (!sp && t > 0 && (opts & XPARENT) && rnd() % 2) {
        size_t lo = 0, hi = n0;
        while (lo < hi) {
          size_t mid = (lo + hi) / 2;
          if (c[mid].start <= x->start) lo = mid + 1;
          else hi = mid;
        }
        for (size_t j = lo, tries = 0; j-- > 0 && tries < 64; tries++)
          if (c[j].start < x->start && c[j].end >= x->start) {
            x->parent = c[j].id;
            break;
          }
        if ((opts & XENDED) && !ended && lo > 0 && c[lo - 1].end < x->start) {
          for (size_t j = 0; j < lo; j++)
            if (c[j].end < x->start) {
              x->parent = c[j].id; /* began first, ended before: the sorted path takes it */
              ended = 1;
              break;
            }
        }
      }
      stack[sp++] = k++;
      made++;
    }
  }
  n = k;
  if (opts &
      OVERLAP) /* calls that end after their parent: counted as overlaps (ids are indices here) */
    for (size_t i = 0; i < n; i++)
      if (c[i].parent >= 0 && c[c[i].parent].start < c[i].start && rnd() % 50 == 0) c[i].end += 7;
  if (opts & SPARSE)
    for (size_t i = 0; i < n; i++)
      c[i].id *= 1000, c[i].parent = c[i].parent < 0 ? -1 : c[i].parent * 1000;
  if (opts & DANGLE) c[n / 2].parent = id + 5;
  if (opts & REPEAT) c[n / 3].id = c[n / 3 + 1].id;
  if (opts & NOIDS)
    for (size_t i = 0; i < n; i++) c[i].id = c[i].parent = -1;
  if (opts & NEGID) { /* a leaf's id (no call names it as parent), half way through the run */
    for (size_t i = n / 4; i < n; i++) { /* thread 0's calls are c[0, n / 2) */
      int parent = 0;
      for (size_t j = 0; j < n && !parent; j++) parent = c[j].parent == c[i].id;
      if (!parent) {
        c[i].id = -1;
        break;
      }
    }
  }
  qsort(c, n, sizeof *c, cmp_row_order);
  if (opts & SHUFFLE) /* two calls of one row swapped */
    for (size_t i = n / 2; i + 1 < n; i++)
      if (c[i].region == c[i + 1].region && c[i].start != c[i + 1].start) {
        struct call tmp = c[i];
        c[i] = c[i + 1];
        c[i + 1] = tmp;
        break;
      }
  int64_t *start = malloc(n * 8 + 8), *end = malloc(n * 8 + 8), *cid = malloc(n * 8 + 8);
  int64_t *pid = malloc(n * 8 + 8), *thr = malloc(n * 8 + 8);
  ASSERT(start && end && cid && pid && thr);
  struct sp_row rows[NREG];
  static char *names[NREG] = {"a", "b", "c", "d", "e", "f"};
  size_t at = 0;
  for (uint32_t r = 0; r < NREG; r++) {
    rows[r] = (struct sp_row){.region = r,
                              .offset = at,
                              .source_line = -1,
                              .exclusive_total = -1,
                              .source_file = "",
                              .source_text = "",
                              .tags_json = "[]"};
    while (at < n && c[at].region == r) {
      start[at] = c[at].start;
      end[at] = c[at].end;
      cid[at] = c[at].id;
      pid[at] = c[at].parent;
      thr[at] = c[at].thread;
      at++;
    }
    rows[r].count = at - rows[r].offset;
    rows[r].aggregate_count = (int64_t)rows[r].count;
  }
  struct sp_column tcol = {SP_DS_THREAD_IDS, thr};
  struct sp_run run = {.layout = "columnar",
                       .names = names,
                       .nnames = NREG,
                       .rows = rows,
                       .nrows = NREG,
                       .start = start,
                       .end = end,
                       .nevents = n};
  if (opts & IDS) {
    run.call_id = cid;
    run.parent_id = pid;
  }
  if (opts & THREADS) {
    run.extra = &tcol;
    run.nextra = 1;
  }
  struct sp_config cfg;
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_setup_args a = {0};
  ASSERT_OK(sp__config_resolve(&cfg, &a));
  ASSERT_OK(sp__h5_write_file(&run, &cfg, path));
  sp__config_free(&cfg);
  free(start);
  free(end);
  free(cid);
  free(pid);
  free(thr);
  free(c);
}

/* The tree (and own times) of `path`, walk on or off; returns the walk's
 * verdict of the last rank (1 walked, 0 refused) when on. */
struct view {
  sp_tree_node *nodes;
  size_t n;
  sp_call *calls;
  size_t ncalls, overlaps;
  int calls_verdict;
  int64_t own[NREG + 64];
  size_t nreg;
};
static int view_of(const char *path, int walk, const char *exclude, struct view *v) {
  sp__walk_enabled = walk;
  sp__walk_last = -9;
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open(path, &r));
  sp_filter *f = NULL;
  if (exclude) {
    ASSERT_OK(sp_filter_create(&f));
    ASSERT_OK(sp_filter_exclude(f, exclude));
  }
  ASSERT_OK(sp_results_call_tree(r, f, &v->nodes, &v->n));
  int verdict = sp__walk_last;
  sp__walk_last = -9;
  ASSERT_OK(sp_results_call_stack(r, 0, f, &v->calls, &v->ncalls, &v->overlaps));
  v->calls_verdict = sp__walk_last;
  v->nreg = sp_results_num_regions(r);
  ASSERT(v->nreg <= sizeof v->own / sizeof v->own[0]);
  for (size_t i = 0; i < v->nreg; i++) {
    sp_region_stats s;
    ASSERT_OK(sp_results_region_stats(r, i, NULL, SP_STATS_OWN, &s));
    v->own[i] = s.own_ns;
  }
  sp_filter_free(f);
  sp_results_free(r);
  sp__walk_enabled = 1;
  return verdict;
}

/* Every field of a tree node (sp_tree_node) and of a call (sp_call) the two
 * paths must agree on; a failure names the field. */
#define NODE_FIELDS(X) X(region) X(parent) X(count) X(total_ns) X(children_ns) X(wall_ns) X(threads)
#define CALL_FIELDS(X) X(start_ns) X(end_ns) X(parent) X(xparent) X(thread) X(task) X(region) X(depth)
#define SAME_NODE_FIELD(f) ASSERT_EQ(a.nodes[i].f, b.nodes[i].f);
#define SAME_CALL_FIELD(f) ASSERT_EQ(a.calls[i].f, b.calls[i].f);

/* Walk and sorted path agree node for node, in the same order; returns the
 * walk's verdict. */
static int same_both_ways(const char *path, const char *exclude) {
  struct view a, b;
  int verdict = view_of(path, 1, exclude, &a);
  ASSERT_EQ(view_of(path, 0, exclude, &b), 0); /* walk off: every rank refused */
  ASSERT_EQ(a.n, b.n);
  ASSERT(a.n > 0);
  for (size_t i = 0; i < a.n; i++) {
    NODE_FIELDS(SAME_NODE_FIELD)
  }
  ASSERT_EQ(a.nreg, b.nreg);
  for (size_t i = 0; i < a.nreg; i++) ASSERT_EQ(a.own[i], b.own[i]);
  /* the call stacks too, field by field, and the walk took them when it took the tree */
  ASSERT_EQ(a.calls_verdict, verdict);
  ASSERT_EQ(a.ncalls, b.ncalls);
  ASSERT_EQ(a.overlaps, b.overlaps);
  for (size_t i = 0; i < a.ncalls; i++) {
    CALL_FIELDS(SAME_CALL_FIELD)
  }
  free(a.calls);
  free(b.calls);
  free(a.nodes);
  free(b.nodes);
  return verdict;
}

SP_TEST(containment_without_ids_walks_and_matches) {
  for (int seed = 1; seed <= 6; seed++) {
    rng = (uint64_t)seed;
    synth("w.h5", 20000, 1 + seed % 3, THREADS);
    ASSERT_EQ(same_both_ways("w.h5", NULL), 1);
    ASSERT_EQ(same_both_ways("w.h5", "^c$"), 1);
  }
  rng = 99;
  synth("w.h5", 5000, 1, 0); /* no thread column at all */
  ASSERT_EQ(same_both_ways("w.h5", NULL), 1);
  rng = 98;
  synth("w.h5", 20000, 2, THREADS | OVERLAP);
  ASSERT_EQ(same_both_ways("w.h5", NULL), 1);
  ASSERT_EQ(same_both_ways("w.h5", "^e$"), 1);
}

SP_TEST(ids_walk_and_match_with_parents_on_other_threads) {
  for (int seed = 1; seed <= 6; seed++) {
    rng = (uint64_t)seed * 31;
    synth("w.h5", 20000, 2 + seed % 3, IDS | THREADS | XPARENT);
    int v = same_both_ways("w.h5", NULL);
    /* parents open on the other thread, begun before: found in its stack */
    ASSERT_EQ(v, 1);
    ASSERT_EQ(same_both_ways("w.h5", "^(a|d)$"), v);
  }
  rng = 6;
  synth("w.h5", 20000, 2, IDS | THREADS | OVERLAP); /* the ids nest: no overlaps counted */
  ASSERT_EQ(same_both_ways("w.h5", NULL), 1);
  rng = 5;
  synth("w.h5", 20000, 3, IDS | THREADS);
  ASSERT_EQ(same_both_ways("w.h5", NULL), 1);
  ASSERT_EQ(same_both_ways("w.h5", "^b$"), 1);
}

SP_TEST(what_the_walk_cannot_take_goes_to_the_sorted_path) {
  static const struct {
    uint64_t seed;
    size_t n;
    int flags, walked; /* walked: the walk's verdict, 0 handed to the sorted path */
  } cases[] = {
      {3, 8000, THREADS | SHUFFLE, 0}, /* a row out of start order */
      {3, 8000, IDS | THREADS | SHUFFLE, 0},
      {4, 8000, IDS | THREADS | DANGLE, 0}, /* the sorted path nests by containment */
      /* a repeated id, a negative one, seen once the walk began (past the
       * rows' first blocks of 16384 calls): the sorted path nests by containment */
      {4, 8000, IDS | THREADS | REPEAT, 0},
      {4, 200000, IDS | THREADS | NEGID, 0},
      /* a negative id among the first calls: the walk nests by containment */
      {4, 8000, IDS | THREADS | NEGID, 1},
      {4, 8000, IDS | THREADS | NOIDS, 1},
      {4, 8000, IDS | THREADS | SPARSE, 0}, /* too sparse for the repeat check's pages */
      /* a parent on another thread that ended before its child began */
      {5, 8000, IDS | THREADS | XPARENT | XENDED, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rng = cases[i].seed;
    synth("w.h5", cases[i].n, 2, cases[i].flags);
    int v = same_both_ways("w.h5", NULL);
    if (v != cases[i].walked)
      SP_FAIL_("case %zu (flags %d): verdict %d, expected %d", i, cases[i].flags, v, cases[i].walked);
  }
}

/* Percentiles read each row's durations column alone once the walk has
 * checked all its times (schema 3), and give what reading starts and ends
 * gives on a fresh open. */
SP_TEST(percentiles_after_the_walk_read_durations_alone) {
  rng = 12;
  synth("w.h5", 20000, 2, IDS | THREADS);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("w.h5", &r));
  ASSERT_EQ(sp_results_schema(r), 3);
  size_t nreg = sp_results_num_regions(r);
  sp_region_stats before[NREG];
  ASSERT(nreg <= NREG);
  for (size_t i = 0; i < nreg; i++)
    ASSERT_OK(sp_results_region_stats(r, i, NULL, SP_STATS_PERCENTILES, &before[i]));
  for (size_t i = 0; i < r->nrows; i++) r->rows[i].checked = 0; /* as if freshly opened */
  sp_tree_node *nodes = NULL;
  size_t n = 0;
  sp__walk_last = -9;
  ASSERT_OK(sp_results_call_tree(r, NULL, &nodes, &n));
  ASSERT_EQ(sp__walk_last, 1);
  free(nodes);
  for (size_t i = 0; i < r->nrows; i++) ASSERT_EQ(r->rows[i].checked, r->rows[i].count);
  for (size_t i = 0; i < nreg; i++) {
    sp_region_stats after;
    ASSERT_OK(sp_results_region_stats(r, i, NULL, SP_STATS_PERCENTILES, &after));
    ASSERT(after.has_percentiles && before[i].has_percentiles);
    ASSERT_EQ(after.p50_ns, before[i].p50_ns);
    ASSERT_EQ(after.p95_ns, before[i].p95_ns);
    ASSERT_EQ(after.p99_ns, before[i].p99_ns);
  }
  sp_results_free(r);
}

/* Parents on another thread looked up past the budget of the walk (here
 * two, each at the bottom of a deep stack, taking turns under one slot of
 * the lookup cache): the rank goes to the sorted path, with the same tree. */
SP_TEST(parent_lookups_past_the_budget_go_to_the_sorted_path) {
  enum { DEPTH = 3000, WORKER = 12000 };
  size_t n = DEPTH + 256 + WORKER;
  int64_t *start = malloc(n * 8), *end = malloc(n * 8), *cid = malloc(n * 8), *pid = malloc(n * 8);
  int64_t *thr = malloc(n * 8);
  ASSERT(start && end && cid && pid && thr);
  /* thread 0: ids 0..255 roots side by side at the start... then one chain
   * of DEPTH nested calls from id 256 (id 0 and id 256 share a cache slot),
   * open over the whole run; thread 1: WORKER calls, children of 0 or 256 */
  size_t k = 0;
  for (int i = 0; i < 256; i++, k++)
    start[k] = 1000 + i, end[k] = i == 0 ? 10000000 : 1000 + i, cid[k] = i, pid[k] = -1, thr[k] = 0;
  for (int i = 0; i < DEPTH; i++, k++)
    start[k] = 2000 + i, end[k] = 9000000 - i, cid[k] = 256 + i, pid[k] = i ? 256 + i - 1 : -1,
    thr[k] = 0;
  for (int i = 0; i < WORKER; i++, k++)
    start[k] = 10000 + 2 * i, end[k] = 10001 + 2 * i, cid[k] = 256 + DEPTH + i,
    pid[k] = i % 2 ? 256 : 0, thr[k] = 1;
  /* one row per region: 0 the roots, 1 the chain, 2 the workers' calls */
  struct sp_row rows[3];
  static char *names[3] = {"roots", "chain", "work"};
  size_t off[4] = {0, 256, 256 + DEPTH, n};
  for (uint32_t g = 0; g < 3; g++)
    rows[g] = (struct sp_row){.region = g,
                              .offset = off[g],
                              .count = off[g + 1] - off[g],
                              .aggregate_count = (int64_t)(off[g + 1] - off[g]),
                              .source_line = -1,
                              .exclusive_total = -1,
                              .source_file = "",
                              .source_text = "",
                              .tags_json = "[]"};
  struct sp_column tcol = {SP_DS_THREAD_IDS, thr};
  struct sp_run run = {.layout = "columnar", .names = names, .nnames = 3, .rows = rows, .nrows = 3,
                       .start = start, .end = end, .nevents = n, .call_id = cid, .parent_id = pid,
                       .extra = &tcol, .nextra = 1};
  struct sp_config cfg;
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_setup_args a = {0};
  ASSERT_OK(sp__config_resolve(&cfg, &a));
  ASSERT_OK(sp__h5_write_file(&run, &cfg, "b.h5"));
  sp__config_free(&cfg);
  free(start), free(end), free(cid), free(pid), free(thr);
  ASSERT_EQ(same_both_ways("b.h5", NULL), 0);
}

SP_TEST(streamed_run_walks_and_matches) {
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ov[] = {"file_path=s.h5", "max_buffer_bytes=1048576", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region reg[5];
  const char *nm[5] = {"step", "solve", "halo", "io", "post"};
  for (int i = 0; i < 5; i++) reg[i] = sp_region_intern(nm[i]);
  sp_region_begin(m, reg[0]);
  for (int i = 0; i < 60000; i++) {
    sp_region_begin(m, reg[1 + i % 2]);
    sp_region_begin(m, reg[3]);
    if (i % 7 == 0) {
      sp_region_begin(m, reg[1 + i % 2]); /* recursion */
      sp_region_end(m, reg[1 + i % 2]);
    }
    sp_region_end(m, reg[3]);
    sp_region_end(m, reg[1 + i % 2]);
  }
  sp_region_end(m, reg[0]);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("s.h5", &r));
  const sp_metadata_entry *blocks = sp_results_metadata(r, "streamed_blocks");
  ASSERT(blocks != NULL);
  sp_results_free(r);
  ASSERT_EQ(same_both_ways("s.h5", NULL), 1);
  ASSERT_EQ(same_both_ways("s.h5", "^io$"), 1);
}

/* A streamed run whose blocks are the file's data (docs/file-format.md
 * "Staged blocks"): /events virtual over per-(row, block) segments, so the
 * rows of regions shared by three threads, and of one recursing across
 * hand-offs, are out of start order while each segment is in it. The walk
 * merges the segments (before, it refused the rank: the sorted path) and
 * gives, field by field, the tree, own times and stacks of the same run
 * written the copy way; its buffers stay within the walk's budget (2^18
 * calls of the columns read, a segment's 64 at least) whatever the run's
 * size. */
enum { STG_NT = 3, STG_PER_THREAD = 400000 };
static sp_manager *stg_m;
static sp_region stg_reg[4];
static sp_context stg_ctx;
static void *stg_worker(void *arg) {
  (void)arg;
  sp_context_adopt(stg_m, stg_ctx);
  for (int i = 0; i < STG_PER_THREAD; i += 4) {
    sp_region_begin(stg_m, stg_reg[0]);
    sp_region_begin(stg_m, stg_reg[1 + (i & 1)]);
    sp_region_begin(stg_m, stg_reg[3]);
    if (i % 1024 == 0) /* recursing, open across a hand-off now and then */
      for (int j = 0; j < 64; j++) {
        sp_region_begin(stg_m, stg_reg[3]);
        sp_region_end(stg_m, stg_reg[3]);
      }
    sp_region_end(stg_m, stg_reg[3]);
    sp_region_end(stg_m, stg_reg[1 + (i & 1)]);
    sp_region_end(stg_m, stg_reg[0]);
  }
  return NULL;
}


SP_TEST(staged_run_walks_its_segments_and_matches_the_copy_way) {
  unsetenv("SCOPE_PROFILER_CONFIG");
  unsetenv("SCOPE_PROFILER_CLOCK");
  stg_m = sp_manager_create();
  ASSERT(stg_m != NULL);
  const char *ov[] = {"file_path=staged.h5", "max_buffer_bytes=67108864", NULL};
  /* three threads stage thread ids: a loaded machine must not make the
   * run shed its staging (a hand-off kept waiting 1 s), or there is no
   * staged file to walk */
  sp__stream_shed_wait_ms = 60000;
  ASSERT_OK(sp_manager_setup(stg_m, &(sp_setup_args){.overrides = ov}));
  const char *nm[4] = {"outer", "even", "odd", "rec"};
  for (int i = 0; i < 4; i++) stg_reg[i] = sp_region_intern(nm[i]);
  sp_region main_r = sp_region_intern("main");
  sp_region_begin(stg_m, main_r);
  stg_ctx = sp_context_capture(stg_m);
  pthread_t th[STG_NT];
  for (int i = 0; i < STG_NT; i++) ASSERT_EQ(pthread_create(&th[i], NULL, stg_worker, NULL), 0);
  for (int i = 0; i < STG_NT; i++) pthread_join(th[i], NULL);
  sp_region_end(stg_m, main_r);
  sp__h5_stage_copy_too = "copy.h5";
  ASSERT_OK(sp_manager_finalize(stg_m, NULL, NULL));
  sp__h5_stage_copy_too = NULL;
  sp_manager_destroy(stg_m);
  sp__stream_shed_wait_ms = 1000;
  ASSERT_EQ(h5_is_virtual("staged.h5", "/events/start_deltas"), 1);
  ASSERT_EQ(h5_is_virtual("copy.h5", "/events/start_deltas"), 0);
  /* the staged rows are out of start order: a row taken whole is refused */
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("staged.h5", &r));
  int unsorted = 0;
  uint64_t total = 0;
  for (size_t row = 0; row < r->nrows; row++) {
    uint64_t n = r->rows[row].count;
    total += n;
    int64_t *st = malloc((n ? n : 1) * sizeof *st);
    ASSERT(st != NULL);
    ASSERT_OK(sp__row_read(r, row, 0, (size_t)n, st, NULL, NULL, NULL, NULL));
    for (uint64_t i = 1; i < n; i++) unsorted |= st[i] < st[i - 1];
    free(st);
  }
  sp_results_free(r);
  ASSERT(unsorted);
  ASSERT_EQ(total, (uint64_t)STG_NT * (STG_PER_THREAD / 4) * 3 + STG_NT * 64 * ((STG_PER_THREAD + 1023) / 1024) + 1);
  sp__walk_last_buffers = 0;
  ASSERT_EQ(same_both_ways("staged.h5", NULL), 1);
  ASSERT_GT(sp__walk_last_buffers, (size_t)0);
  /* six columns at most, 2^18 calls or 64 per piece */
  ASSERT(sp__walk_last_buffers <= (size_t)6 * 8 * ((1u << 18) + 64 * 4096));
  ASSERT_EQ(same_both_ways("staged.h5", "^even$"), 1);
  /* and the copy way's file, node for node and call for call */
  struct view a, b;
  ASSERT_EQ(view_of("staged.h5", 1, NULL, &a), 1);
  ASSERT_EQ(a.calls_verdict, 1);
  /* the copy way's rows are in start order, so the walk takes them too
   * (before, a thread's segments were read one after the other: a `rec`
   * call open across a hand-off came after the calls inside it and the
   * walk refused the rank) */
  ASSERT_EQ(view_of("copy.h5", 1, NULL, &b), 1);
  ASSERT_EQ(a.n, b.n);
  for (size_t i = 0; i < a.n; i++) {
    NODE_FIELDS(SAME_NODE_FIELD)
  }
  ASSERT_EQ(a.nreg, b.nreg);
  for (size_t i = 0; i < a.nreg; i++) ASSERT_EQ(a.own[i], b.own[i]);
  ASSERT_EQ(a.ncalls, b.ncalls);
  ASSERT_EQ((uint64_t)a.ncalls, total);
  for (size_t i = 0; i < a.ncalls; i++) {
    CALL_FIELDS(SAME_CALL_FIELD)
  }
  free(a.calls), free(b.calls), free(a.nodes), free(b.nodes);
}

/* One thread, streamed through a small budget: a `rec` call open across
 * several hand-offs (100000 calls of `rec` inside it) is kept at the front
 * of each next block until it ends, so its segment comes after the
 * segments of the calls inside it. The budget's few mappings send the run
 * the copy way (stage_too_many), whose row is still in start order (each
 * segment merged, not each thread's segments read in turn: before, each
 * outer call came after the calls inside it and the walk refused the
 * rank), and the walk takes it and matches the sorted path. */
SP_TEST(call_open_across_handoffs_copy_way_in_start_order) {
  unsetenv("SCOPE_PROFILER_CONFIG");
  unsetenv("SCOPE_PROFILER_CLOCK");
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ov[] = {"file_path=open.h5", "max_buffer_bytes=1048576", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region rec = sp_region_intern("rec"), top = sp_region_intern("top");
  sp_region_begin(m, top);
  for (int k = 0; k < 3; k++) {
    sp_region_begin(m, rec);
    for (int i = 0; i < 100000; i++) {
      sp_region_begin(m, rec);
      sp_region_end(m, rec);
    }
    sp_region_end(m, rec);
  }
  sp_region_end(m, top);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  ASSERT_EQ(h5_is_virtual("open.h5", "/events/start_deltas"), 0);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("open.h5", &r));
  ASSERT(sp_results_metadata(r, "streamed_blocks") != NULL);
  int rows = 0;
  for (size_t row = 0; row < r->nrows; row++) {
    uint64_t n = r->rows[row].count;
    if (n < 2) continue;
    rows++;
    ASSERT_EQ(n, (uint64_t)3 * 100001);
    int64_t *st = malloc(n * sizeof *st), *en = malloc(n * sizeof *en);
    ASSERT(st != NULL && en != NULL);
    ASSERT_OK(sp__row_read(r, row, 0, (size_t)n, st, en, NULL, NULL, NULL));
    size_t out = 0;
    for (uint64_t i = 1; i < n; i++) out += st[i] < st[i - 1] || (st[i] == st[i - 1] && en[i] > en[i - 1]);
    ASSERT_EQ(out, (size_t)0);
    free(st), free(en);
  }
  sp_results_free(r);
  ASSERT_EQ(rows, 1);
  ASSERT_EQ(same_both_ways("open.h5", NULL), 1);
}

/* A file of ranks written out of order (2, 0, 1, as parts of one job; rank
 * 2's rows in reverse region order), each with rows of a few calls: the rows of a rank are found through each
 * region's rows (sp__rank_rows: every row of the rank, ascending, as a scan
 * of all rows gives them; before, every walk and report pass scanned all
 * rows for each rank), and the per-rank statistics are the rank's rows'
 * sums. */
SP_TEST(ranks_rows_found_through_regions) {
  enum { NR = 3, NG = 4 };
  static const uint32_t rank_of[NR] = {2, 0, 1};
  static char *names[NG] = {"a", "b", "c", "d"};
  struct sp_run parts[NR];
  struct sp_row rows[NR][NG];
  int64_t st[NR][2 * NG + 1], en[NR][2 * NG + 1];
  for (int p = 0; p < NR; p++) {
    /* region g has g % 2 + 1 calls (region 3 none on rank 1: a row fewer) */
    size_t at = 0, nr = 0;
    for (uint32_t q = 0; q < NG; q++) {
      uint32_t g = p == 0 ? NG - 1 - q : q; /* rank 2's rows in reverse region order */
      size_t k = g % 2 + 1;
      if (rank_of[p] == 1 && g == 3) continue;
      rows[p][nr] = (struct sp_row){.region = g, .rank = rank_of[p], .offset = at, .count = k,
                                    .aggregate_count = (int64_t)k, .source_line = -1,
                                    .exclusive_total = -1, .source_file = "", .source_text = "",
                                    .tags_json = "[]"};
      /* a region's source and tags on a row other than its first (rank 0's) */
      if (rank_of[p] == 1 && g == 1) rows[p][nr].source_file = "x.c", rows[p][nr].source_line = 7;
      if (rank_of[p] == 2 && g == 2) rows[p][nr].tags_json = "[\"io\"]";
      for (size_t j = 0; j < k; j++, at++) {
        st[p][at] = 100 * (int64_t)g + 10 * (int64_t)j + rank_of[p];
        en[p][at] = st[p][at] + 5 + (int64_t)g;
        rows[p][nr].stats.total += en[p][at] - st[p][at];
      }
      nr++;
    }
    parts[p] = (struct sp_run){.layout = "columnar", .names = names, .nnames = NG, .rows = rows[p],
                               .nrows = nr, .start = st[p], .end = en[p], .nevents = at};
  }
  struct sp_config cfg;
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_setup_args a = {0};
  ASSERT_OK(sp__config_resolve(&cfg, &a));
  ASSERT_OK(sp__h5_write_parts(parts, NR, &cfg, "ranks.h5"));
  sp__config_free(&cfg);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("ranks.h5", &r));
  size_t nrows = sp_results_num_rows(r);
  ASSERT_EQ(nrows, (size_t)(NR * NG - 1));
  const char *file = NULL, *text = NULL;
  int64_t line = 0;
  ASSERT_OK(sp_results_region_source(r, 1, &file, &line, &text));
  ASSERT_STR_EQ(file, "x.c");
  ASSERT_EQ(line, 7);
  ASSERT_OK(sp_results_region_source(r, 0, &file, &line, &text));
  ASSERT_STR_EQ(file, "");
  ASSERT_EQ(line, -1);
  ASSERT_STR_EQ(sp_results_region_tags(r, 2), "[\"io\"]");
  ASSERT_STR_EQ(sp_results_region_tags(r, 1), "[]");
  for (int64_t rank = 0; rank < NR + 1; rank++) {
    size_t want[NR * NG], nw = 0, *got = NULL, ng = 0;
    for (size_t w = 0; w < nrows; w++) {
      sp_row_info info;
      ASSERT_OK(sp_results_row_info(r, w, &info));
      if (info.rank == rank) want[nw++] = w;
    }
    ASSERT_OK(sp__rank_rows(r, rank, &got, &ng));
    ASSERT_EQ(ng, nw);
    for (size_t k = 0; k < nw; k++) ASSERT_EQ(got[k], want[k]);
    free(got);
    for (size_t g = 0; g < NG; g++) {
      sp_region_stats s;
      ASSERT_OK(sp_results_region_rank_stats(r, g, rank, 0, &s));
      int64_t total = 0;
      uint64_t count = 0;
      for (size_t k = 0; k < nw; k++) {
        sp_row_info info;
        ASSERT_OK(sp_results_row_info(r, want[k], &info));
        if (info.region != g) continue;
        count += info.count;
        int64_t s0[2], e0[2];
        ASSERT_OK(sp_results_row_read(r, want[k], 0, (size_t)info.count, s0, e0, NULL, NULL, NULL));
        for (size_t j = 0; j < info.count; j++) total += e0[j] - s0[j];
      }
      ASSERT_EQ(s.count, count);
      ASSERT_EQ(s.total_ns, total);
      /* the rank's events of the region: its rows' calls, not another rank's */
      sp_events ev;
      ASSERT_OK(sp_results_events(r, g, rank, &ev));
      ASSERT_EQ((uint64_t)ev.count, count);
      int64_t evtotal = 0;
      for (size_t j = 0; j < ev.count; j++) {
        ASSERT_EQ(ev.start_ns[j] % 10, rank);
        ASSERT_EQ(ev.start_ns[j] / 100, (int64_t)g);
        evtotal += ev.end_ns[j] - ev.start_ns[j];
      }
      ASSERT_EQ(evtotal, total);
      sp_events_free(&ev);
    }
  }
  sp_results_free(r);
  ASSERT_EQ(same_both_ways("ranks.h5", NULL), 1);
}

/* Each row's walk buffers hold no more calls than the row has (before,
 * every row got room for 16384 calls of every column read: 768 KiB of 6
 * columns for a row of 2 calls). Three rows of 1, 2 and 3 calls, start and
 * end read (no ids, threads or tasks in this file). */
SP_TEST(walk_buffers_sized_to_rows) {
  static char *names[3] = {"a", "b", "c"};
  struct sp_row rows[3];
  int64_t st[6], en[6];
  size_t at = 0;
  for (uint32_t g = 0; g < 3; g++) {
    rows[g] = (struct sp_row){.region = g, .offset = at, .count = g + 1, .aggregate_count = g + 1,
                              .source_line = -1, .exclusive_total = -1, .source_file = "",
                              .source_text = "", .tags_json = "[]"};
    for (uint32_t j = 0; j <= g; j++, at++) st[at] = 100 * g + 10 * j, en[at] = st[at] + 5;
  }
  struct sp_run run = {.layout = "columnar", .names = names, .nnames = 3, .rows = rows, .nrows = 3,
                       .start = st, .end = en, .nevents = at};
  struct sp_config cfg;
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_setup_args a = {0};
  ASSERT_OK(sp__config_resolve(&cfg, &a));
  ASSERT_OK(sp__h5_write_file(&run, &cfg, "small.h5"));
  sp__config_free(&cfg);
  sp__walk_last_buffers = 0;
  ASSERT_EQ(same_both_ways("small.h5", NULL), 1);
  ASSERT_EQ(sp__walk_last_buffers, (size_t)6 * 2 * sizeof(int64_t));
}

/* Two threads whose calls of one region begin at the same instant (the
 * manual clock), the later-registered thread's call the longer, or as long
 * with the later id, as an OpenMP team's first calls of a parallel region
 * begin together: the writer must store the row by (start, longer first,
 * call id), the walk's order, not by thread; the walk then takes the rank
 * (before, it refused it and the sorted path gave the tree). Written the
 * filler's way (held rows merged) and the columns' way (sorted slices). */
static int tie_steps;
static sp_manager *tie_m;
static sp_region tie_k, tie_in;
static pthread_mutex_t tie_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tie_cv = PTHREAD_COND_INITIALIZER;
static int tie_turn; /* 4 turns per step: t0 begin, t1 begin, the two ends */
static void tie_wait(int turn) {
  while (tie_turn != turn) pthread_cond_wait(&tie_cv, &tie_mu);
}
static void tie_next(void) {
  tie_turn++;
  pthread_cond_broadcast(&tie_cv);
}
static void *tie_worker(void *arg) {
  int w = (int)(intptr_t)arg;
  pthread_mutex_lock(&tie_mu);
  for (int s = 0; s < tie_steps; s++) {
    tie_wait(4 * s + w);
    sp_region_begin(tie_m, tie_k);
    if (w == 1 && s % 3 == 1) sp_region_begin(tie_m, tie_in); /* a child tied on start too */
    tie_next();
    /* the threads take turns ending first (the shorter call), but in
     * every third step both end at the same instant */
    int second = (s % 2) != w;
    tie_wait(4 * s + 2 + second);
    if (s % 3 != 2) sp__clock_manual_advance(1 + (uint64_t)second * 2);
    if (w == 1 && s % 3 == 1) sp_region_end(tie_m, tie_in);
    sp_region_end(tie_m, tie_k);
    if (second) sp__clock_manual_advance(5);
    tie_next();
  }
  pthread_mutex_unlock(&tie_mu);
  return NULL;
}

/* fill: the in-memory filler (1) or the columns' way (0); streamed: the
 * run streams (the smallest budget, enough steps to pass it) and is
 * assembled the copy way from the staging file (compression keeps it off
 * the staged blocks, whose rows are not merged across threads). */
static void ties_across_threads_case(int fill, int streamed) {
  unsetenv("SCOPE_PROFILER_CONFIG");
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  tie_steps = streamed ? 20000 : 300;
  tie_m = sp_manager_create();
  ASSERT(tie_m != NULL);
  const char *ov[] = {"file_path=tie.h5", NULL};
  const char *ovs[] = {"file_path=tie.h5", "max_buffer_bytes=1048576", "hdf5_compression=gzip", NULL};
  ASSERT_OK(sp_manager_setup(tie_m, &(sp_setup_args){.overrides = streamed ? ovs : ov}));
  tie_k = sp_region_intern("kernel");
  tie_in = sp_region_intern("inner");
  sp_region top = sp_region_intern("top");
  sp_region_begin(tie_m, top);
  sp__clock_manual_advance(3);
  pthread_t th[2];
  /* thread 0 registers first (its pass, and its run of the held row, come first) */
  for (int w = 0; w < 2; w++) {
    ASSERT_EQ(pthread_create(&th[w], NULL, tie_worker, (void *)(intptr_t)w), 0);
    if (w == 0) { /* registered once it began its first call */
      pthread_mutex_lock(&tie_mu);
      tie_wait(1);
      pthread_mutex_unlock(&tie_mu);
    }
  }
  for (int w = 0; w < 2; w++) ASSERT_EQ(pthread_join(th[w], NULL), 0);
  sp__clock_manual_advance(3);
  sp_region_end(tie_m, top);
  sp__snapshot_fill_enabled = fill;
  unsigned long f0 = sp__snapshot_fills;
  ASSERT_OK(sp_manager_finalize(tie_m, NULL, NULL));
  if (!streamed) ASSERT_EQ(sp__snapshot_fills - f0, (unsigned long)(fill ? 1 : 0));
  sp_manager_destroy(tie_m);
  sp__snapshot_fill_enabled = 1;
  if (streamed) {
    sp_results *r = NULL;
    ASSERT_OK(sp_results_open("tie.h5", &r));
    ASSERT(sp_results_metadata(r, "streamed_blocks") != NULL);
    sp_results_free(r);
    ASSERT_EQ(h5_is_virtual("tie.h5", "/events/durations"), 0); /* assembled, not the staged blocks */
  }
  ASSERT_EQ(same_both_ways("tie.h5", NULL), 1);
  ASSERT_EQ(same_both_ways("tie.h5", "^inner$"), 1);
}

SP_TEST(calls_tied_across_threads_walk_filler_way) { ties_across_threads_case(1, 0); }
SP_TEST(calls_tied_across_threads_walk_columns_way) { ties_across_threads_case(0, 0); }
SP_TEST(calls_tied_across_threads_walk_streamed_way) { ties_across_threads_case(1, 1); }

#ifdef _OPENMP
SP_TEST(openmp_workers_walk_and_match) {
  unsetenv("SCOPE_PROFILER_CONFIG");
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  const char *ov[] = {"file_path=o.h5", "track_threads=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region outer = sp_region_intern("outer"), work = sp_region_intern("work"),
            in = sp_region_intern("in");
  for (int step = 0; step < 20; step++) {
    sp_region_begin(m, outer);
#pragma omp parallel num_threads(3)
    {
      for (int i = 0; i < 200; i++) {
        sp_region_begin(m, work);
        sp_region_begin(m, in);
        sp_region_end(m, in);
        sp_region_end(m, work);
      }
    }
    sp_region_end(m, outer);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  int v = same_both_ways("o.h5", NULL);
  ASSERT(v == 1 || v == 0);
  ASSERT_EQ(same_both_ways("o.h5", "^work$"), v);
}
#endif

int main(int c, char **v) { return sp_test_main(c, v); }
