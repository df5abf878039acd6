/* test-spillwriter.c - a crash spill taken while the stream writer is in a
 * block. The writer's pass rewrites the block's thread's kept calls (the
 * ids of the calls open across the hand-off), the next call id and the
 * cross-thread contexts, which the spill reads; a spill that read them
 * mid-block (no happens-before: ThreadSanitizer reports it) recorded ids
 * that do not belong to the buffer it spilled, and the block in hand was
 * in neither the spill nor the staging journal, so recovery came out
 * partial. Now the spill waits for the block in hand, and the writer begins
 * none while a spill is under way: the recovered file has every call. The
 * writer is held right after its pass (sp__stream_test_pass_hook) until the
 * spill has begun, and a while longer; the spill is a SIGSEGV the recording
 * thread raises meanwhile, in a forked child; recovery runs in the parent.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/spill.h"
#include "core/stream.h"
#include "childutil.h"
#include "h5util.h"
#include "harness.h"
#include "scope_profiler.h"

static int in_pass;
static void hold_pass(struct sp_manager *m, uint64_t block) {
  if (block != 1) return; /* the second block: the first left kept calls */
  __atomic_store_n(&in_pass, 1, __ATOMIC_RELAXED); /* (no happens-before: the spill must make its own) */
  for (int i = 0; i < 30000 && !__atomic_load_n(&m->spilling, __ATOMIC_SEQ_CST); i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  nanosleep(&(struct timespec){0, 200000000}, NULL); /* a spill that does not wait reads meanwhile */
}

static void outer_inner(sp_manager *m, sp_region outer, sp_region inner) {
  sp_region_begin(m, outer);
  sp_region_begin(m, inner);
  sp_region_end(m, inner);
  sp_region_end(m, outer);
}

/* The child: "main" open throughout, outer calls each around an inner one,
 * until the writer is held in its second block, then ten more; their count
 * to calls.txt, then the crash. */
static void crash_in_block(const char *schema) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    signal(SIGSEGV, SIG_DFL); /* (the spill handler chains to it) */
    const char *ov[] = {"file_path=sw.h5", schema, "max_buffer_bytes=2097152", "crash_spill=true", NULL};
    sp__stream_shed_wait_ms = 600000;
    sp_manager *m = sp_manager_create();
    if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) _exit(3);
    sp_region main_r = sp_region_intern("main"), outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
    sp__stream_test_pass_hook = hold_pass;
    sp_region_begin(m, main_r);
    long n = 0;
    uint64_t done = 0;
    /* until the second block is handed over (the live buffer then holds
     * "main", kept, and what comes after), then the writer held in it */
    while (n < 20000000 && sp__stream_in_flight(m, &done) + done < 2) {
      outer_inner(m, outer, inner);
      n++;
    }
    for (int i = 0; i < 30000 && !__atomic_load_n(&in_pass, __ATOMIC_RELAXED); i++)
      nanosleep(&(struct timespec){0, 1000000}, NULL);
    for (int i = 0; i < 10; i++, n++) outer_inner(m, outer, inner);
    FILE *f = fopen("calls.txt", "w");
    if (!f) _exit(3);
    fprintf(f, "%ld\n", n);
    fclose(f);
    raise(SIGSEGV);
    _exit(4);
  }
  int st = child_wait(pid);
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) SP_FAIL_("the child did not crash (status 0x%x)", st);
  long n = 0;
  FILE *f = fopen("calls.txt", "r");
  ASSERT(f && fscanf(f, "%ld", &n) == 1);
  fclose(f);
  ASSERT(exists("sw.h5.spill"));
  struct sp_recover_info info;
  const char *spills[] = {"sw.h5.spill"};
  if (sp__spill_recover_run(spills, 1, "rec.h5", &info) != SP_OK) SP_FAIL_("recover: %s", sp_last_error());
  long long outer = h5_region_events("rec.h5", "outer"), inner = h5_region_events("rec.h5", "inner");
  long long mainc = h5_region_events("rec.h5", "main");
  fprintf(stderr, "  %s: recovered %lld outer, %lld inner of %ld, main %lld, complete %d\n", schema, outer, inner, n,
          mainc, info.complete);
  ASSERT(info.complete);
  ASSERT_EQ(outer, n);
  ASSERT_EQ(inner, n);
  ASSERT_EQ(mainc, 1);
  /* call ids are unique (ids the spill took mid-block were another buffer's) */
  long long ni = 0;
  int64_t *id = h5_i64("rec.h5", "/events/call_ids", &ni);
  if (id) {
    ASSERT_EQ(ni, 2 * n + 1);
    int64_t *seen = calloc((size_t)(4 * n + 16), sizeof *seen);
    ASSERT(seen);
    for (long long i = 0; i < ni; i++) {
      ASSERT(id[i] >= 0 && id[i] < 4 * n + 16);
      if (seen[id[i]]++) SP_FAIL_("call id %lld twice in the recovered file", (long long)id[i]);
    }
    free(seen);
    free(id);
  }
  sp__recover_info_free(&info);
}

SP_TEST(a_spill_while_the_writer_stages_a_block_recovers_every_call) { crash_in_block("hdf5_schema=3"); }
SP_TEST(a_spill_while_the_writer_copies_a_block_recovers_every_call) { crash_in_block("hdf5_schema=2"); }

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
