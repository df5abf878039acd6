/* test-nvtx.c - NVTX ranges as a tool sees them: our recording tool
 * (tests/nvtx_tool, loaded by NVTX3 from NVTX_INJECTION64_PATH) logs every
 * domain, registered string, push and pop, and the cases check names,
 * nesting, colours and counts, from one thread and from several, with and
 * without string registration, and with no tool at all. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "probes/nvtx.h"

static void need_tool(void) {
  if (!sp__nvtx_available()) SKIP("built without NVTX3 headers");
  const char *tool = getenv("SP_NVTX_TOOL"); /* CTest's; else this build's */
  if (!tool || !*tool) tool = SP_TEST_BINARY_DIR "/tests/nvtx_tool/libsp_nvtx_record.so";
  if (!sp_test_file_exists(tool)) SP_FAIL_("the NVTX recording tool %s is not built", tool);
  setenv("NVTX_INJECTION64_PATH", tool, 1);
  setenv("SP_NVTX_RECORD", "rec.txt", 1);
}

static const char *names[] = {"step", "solve", "halo exchange", "io/write"};
static const char *name_of(uint32_t id) { return id >= 1 && id <= 4 ? names[id - 1] : NULL; }

struct rec {
  char kind;
  long tid;
  int dom, depth;
  unsigned colour;
  char how[8];
  char text[512];
};

static int load(struct rec *r, int max) {
  FILE *f = fopen("rec.txt", "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    struct rec *x = &r[n];
    memset(x, 0, sizeof *x);
    x->kind = line[0];
    int off = 0;
    if (x->kind == 'P') {
      if (sscanf(line, "P %ld %d %d %x %7s %n", &x->tid, &x->dom, &x->depth, &x->colour, x->how, &off) < 5)
        continue;
      snprintf(x->text, sizeof x->text, "%s", line + off);
    } else if (x->kind == 'O') {
      if (sscanf(line, "O %ld %d %d", &x->tid, &x->dom, &x->depth) != 3) continue;
    } else if (x->kind == 'D' || x->kind == 'S') {
      snprintf(x->text, sizeof x->text, "%s", line + 2);
    } else {
      continue;
    }
    n++;
  }
  fclose(f);
  return n;
}

static struct rec recs[40000];

SP_TEST(pushes_and_pops_nest_with_registered_names) {
  need_tool();
  char why[256];
  struct sp__nvtx *n = sp__nvtx_open("scope-profiler", name_of, why, sizeof why);
  ASSERT(n != NULL);
  for (uint32_t id = 1; id <= 3; id++) ASSERT_EQ(sp__nvtx_region(n, id, names[id - 1]), 0);
  ASSERT_EQ(sp__nvtx_region(n, 2, "solve"), 0); /* idempotent */
  for (int k = 0; k < 10; k++) {
    sp__nvtx_push(n, 1);
    sp__nvtx_push(n, 2);
    sp__nvtx_push(n, 3);
    sp__nvtx_pop(n);
    sp__nvtx_pop(n);
    sp__nvtx_push(n, 4); /* never registered: registered on its first push */
    sp__nvtx_pop(n);
    sp__nvtx_pop(n);
  }
  sp__nvtx_close(n);
  int nr = load(recs, 1000);
  ASSERT_GT(nr, 0);
  ASSERT_EQ(recs[0].kind, 'D');
  ASSERT_STR_EQ(recs[0].text, "1 scope-profiler");
  int nstr = 0, push[5] = {0}, pops = 0;
  unsigned col[5] = {0};
  for (int i = 0; i < nr; i++) {
    struct rec *x = &recs[i];
    if (x->kind == 'S') nstr++;
    if (x->kind == 'O') {
      ASSERT_EQ(x->dom, 1);
      ASSERT_GT(x->depth, 0);
      pops++;
    }
    if (x->kind != 'P') continue;
    ASSERT_EQ(x->dom, 1);
    ASSERT_STR_EQ(x->how, "reg");
    int id = 0;
    for (int k = 0; k < 4; k++)
      if (!strcmp(x->text, names[k])) id = k + 1;
    ASSERT(id != 0);
    push[id]++;
    /* nesting: step at 0, solve at 1, halo at 2, io/write at 1 */
    ASSERT_EQ(x->depth, id == 1 ? 0 : id == 2 ? 1 : id == 3 ? 2 : 1);
    if (col[id]) ASSERT_EQ(x->colour, col[id]); /* one colour per name */
    col[id] = x->colour;
    ASSERT((x->colour >> 24) == 0xFF);
  }
  ASSERT_EQ(nstr, 4); /* each name registered exactly once */
  for (int id = 1; id <= 4; id++) ASSERT_EQ(push[id], 10);
  ASSERT_EQ(pops, 40);
}

SP_TEST(names_go_by_value_when_the_tool_registers_none) {
  need_tool();
  setenv("SP_NVTX_RECORD_NO_STRINGS", "1", 1);
  char why[256];
  struct sp__nvtx *n = sp__nvtx_open("scope-profiler", name_of, why, sizeof why);
  ASSERT(n != NULL);
  ASSERT_EQ(sp__nvtx_region(n, 3, names[2]), 0);
  sp__nvtx_push(n, 3);
  sp__nvtx_pop(n);
  sp__nvtx_push(n, 99); /* unknown to name_of as well: a placeholder name */
  sp__nvtx_pop(n);
  sp__nvtx_close(n);
  int nr = load(recs, 100), seen = 0;
  for (int i = 0; i < nr; i++)
    if (recs[i].kind == 'P') {
      ASSERT_STR_EQ(recs[i].how, "ascii");
      ASSERT_STR_EQ(recs[i].text, seen == 0 ? "halo exchange" : "scope-profiler region");
      seen++;
    }
  ASSERT_EQ(seen, 2);
}

#define NT 4
#define ROUNDS 2000
static struct sp__nvtx *shared;
static void *worker(void *arg) {
  uint32_t me = (uint32_t)(uintptr_t)arg;
  for (int k = 0; k < ROUNDS; k++) {
    sp__nvtx_push(shared, 1);
    sp__nvtx_push(shared, 1 + (me % 3) + 1);
    sp__nvtx_pop(shared);
    sp__nvtx_pop(shared);
  }
  return NULL;
}

SP_TEST(threads_nest_independently) {
  need_tool();
  char why[256];
  shared = sp__nvtx_open("scope-profiler", name_of, why, sizeof why);
  ASSERT(shared != NULL);
  pthread_t th[NT];
  /* Regions 2..4 are registered lazily, concurrently, by the threads. */
  ASSERT_EQ(sp__nvtx_region(shared, 1, names[0]), 0);
  for (int i = 0; i < NT; i++) ASSERT_EQ(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i), 0);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  sp__nvtx_close(shared);
  int nr = load(recs, (int)(sizeof recs / sizeof recs[0]));
  long tids[NT] = {0};
  int depth[NT] = {0}, pushes[NT] = {0}, nstr = 0;
  for (int i = 0; i < nr; i++) {
    struct rec *x = &recs[i];
    if (x->kind == 'S') nstr++;
    if (x->kind != 'P' && x->kind != 'O') continue;
    int t = 0;
    while (t < NT && tids[t] && tids[t] != x->tid) t++;
    ASSERT(t < NT);
    tids[t] = x->tid;
    ASSERT_EQ(x->depth, depth[t]); /* each thread's own stack */
    if (x->kind == 'P') {
      pushes[t]++;
      ASSERT_STR_EQ(x->text, depth[t] == 0 ? "step" : x->text);
      depth[t]++;
    } else {
      depth[t]--;
    }
  }
  for (int t = 0; t < NT; t++) {
    ASSERT(tids[t] != 0);
    ASSERT_EQ(pushes[t], 2 * ROUNDS);
    ASSERT_EQ(depth[t], 0);
  }
  ASSERT_EQ(nstr, 4); /* lazy registration raced, yet once per name */
}

SP_TEST(without_a_tool_pushes_do_nothing) {
  if (!sp__nvtx_available()) SKIP("built without NVTX3 headers");
  unsetenv("NVTX_INJECTION64_PATH");
  setenv("SP_NVTX_RECORD", "rec.txt", 1);
  char why[256];
  struct sp__nvtx *n = sp__nvtx_open("scope-profiler", name_of, why, sizeof why);
  ASSERT(n != NULL);
  ASSERT_EQ(sp__nvtx_region(n, 1, names[0]), 0);
  for (int k = 0; k < 1000; k++) {
    sp__nvtx_push(n, 1);
    sp__nvtx_pop(n);
  }
  sp__nvtx_close(n);
  ASSERT(!sp_test_file_exists("rec.txt"));
}

SP_TEST(unavailable_build_says_how_to_fix) {
  if (sp__nvtx_available()) SKIP("this build has NVTX");
  char why[256];
  ASSERT(sp__nvtx_open("scope-profiler", name_of, why, sizeof why) == NULL);
  ASSERT_CONTAINS(why, "-DSP_WITH_NVTX=ON");
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
