/* test-watchspill.c - the signal watcher against the program's finalize.
 * Under MPI a termination signal makes each rank spill (finalize is
 * collective); the watcher's spill must neither race a finalize that is
 * rewriting the buffers (a spill of half-compacted buffers recovers as a
 * "complete" run missing its calls) nor give up on a finalize stuck in a
 * collective the dying job never completes (then the spill is all there
 * is). MPI is a stand-in ops table here (sp__mpi_ops: in use, one rank,
 * the serial writer), the finalize's progress held at a publish step by the
 * test hook. And after the watcher's cut outside MPI (the run published,
 * the process about to die of the signal) recording stays off.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/mpi_hooks.h"
#include "core/spill.h"
#include "childutil.h"
#include "h5util.h"
#include "harness.h"
#include "output/output.h"
#include "scope_profiler.h"

static int fake_rank;
static int fake_in_use(void) { return 1; }
static int fake_rank_of(void) { return fake_rank; }
static int fake_size(void) { return 2; }
static sp_status fake_metadata(struct sp_meta *meta, const struct sp_config *cfg) {
  (void)meta;
  (void)cfg;
  return SP_OK;
}
static sp_status fake_write(const struct sp_run *run, const struct sp_config *cfg, const char *path) {
  return sp__h5_write_file(run, cfg, path);
}
static const struct sp_mpi_ops fake_mpi = {
    .in_use = fake_in_use, .rank = fake_rank_of, .size = fake_size, .metadata = fake_metadata, .write = fake_write};

/* At `hold_step` finalize's thread sends itself SIGTERM and then stays
 * there (a collective that never completes), until the watcher ends the
 * process. */
static int hold_step;
static void hold_at(int step) {
  if (step != hold_step) return;
  raise(SIGTERM);
  for (;;) sleep(60);
}

/* A manager set up under the stand-in MPI as rank `rank`, with n calls of
 * "work" recorded; NULL when it cannot be set up. */
static sp_manager *recorded_run(long n, int rank) {
  sp__mpi_ops = &fake_mpi;
  fake_rank = rank;
  const char *ov[] = {"file_path=job.h5", NULL};
  sp_manager *m = sp_manager_create();
  if (!m) return NULL;
  if (sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) {
    sp_manager_destroy(m);
    return NULL;
  }
  sp_region r = sp_region_intern("work");
  for (long i = 0; i < n; i++) {
    sp_region_begin(m, r);
    sp_region_end(m, r);
  }
  return m;
}

/* Recovers job.h5.spill into rec.h5; the calls of "work" it holds (0 for
 * none at all). */
static long long recover_job(struct sp_recover_info *info) {
  const char *spills[] = {"job.h5.spill"};
  ASSERT_OK(sp__spill_recover_run(spills, 1, "rec.h5", info));
  long long got = h5_region_events("rec.h5", "work");
  return got < 0 ? 0 : got;
}

/* A child recording n calls under the stand-in MPI, finalizing into the
 * hold; its wait status. */
static int held_run(long n, int rank, int step) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    sp_manager *m = recorded_run(n, rank);
    if (!m) _exit(3);
    hold_step = step;
    sp__h5_test_publish_hook = hold_at;
    sp_manager_finalize(m, NULL, NULL);
    _exit(4);
  }
  return child_wait(pid);
}

/* A finalize stuck before its write (a collective with dead peers): the
 * watcher waits a bounded time, then spills, and the spill holds the run. */
SP_TEST(mpi_spill_does_not_wait_forever_for_a_stuck_finalize) {
  int st = held_run(5000, 0, SP_PUB_WRITE);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  ASSERT(!exists("job.h5"));
  ASSERT(exists("job.h5.spill"));
  struct sp_recover_info info;
  ASSERT_EQ(recover_job(&info), 5000);
  ASSERT(!info.published && info.complete);
  sp__recover_info_free(&info);
}

/* A finalize past its write, rewriting the buffers (rank 1: its part is
 * written, the job's file is rank 0's to publish): the watcher does not
 * spill the half-rewritten buffers; its spill says it left them out, and
 * how many calls they held. It must never recover as a "complete" run
 * without its calls. */
SP_TEST(mpi_spill_leaves_out_the_buffers_finalize_rewrites) {
  int st = held_run(5000, 1, SP_PUB_RESET);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  ASSERT_EQ(h5_region_events("job.h5", "work"), 5000); /* this rank's part, as written */
  ASSERT(exists("job.h5.spill"));
  struct sp_recover_info info;
  long long got = recover_job(&info);
  if (info.published) got = h5_region_events("job.h5", "work");
  if (info.complete && got != 5000)
    SP_FAIL_("a spill taken while finalize rewrote the buffers: %lld of 5000 calls, said complete", got);
  ASSERT(!info.published && !info.complete);
  ASSERT_EQ(info.rewritten, 1);
  ASSERT_EQ(info.calls_lost, 5000);
  sp__recover_info_free(&info);
}

/* The other order: a spill under way when finalize reaches its rewrite.
 * Finalize (rank 1: its part written, the buffers read from the spill)
 * raises SIGTERM at its write and goes on once the watcher's spill, past
 * its bounded wait for the lock, has begun; the spill holds before it reads
 * the buffers until finalize has said it rewrites them, and a while longer:
 * a finalize that did not wait for it would compact them under it, and the
 * spill would recover "complete" with none of the run's calls. */
static int spill_begun;
static void spill_hold(struct sp_manager *m) {
  __atomic_store_n(&spill_begun, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < 10000 && !__atomic_load_n(&m->fin_rewriting, __ATOMIC_SEQ_CST); i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  nanosleep(&(struct timespec){0, 300000000}, NULL);
}
static void go_on_once_spilling(int step) {
  if (step != SP_PUB_WRITE) return;
  raise(SIGTERM);
  for (int i = 0; i < 10000 && !__atomic_load_n(&spill_begun, __ATOMIC_SEQ_CST); i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
}

SP_TEST(finalize_waits_for_a_spill_under_way_before_it_rewrites_the_buffers) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    sp_manager *m = recorded_run(5000, 1);
    if (!m) _exit(3);
    sp__spill_test_hook = spill_hold;
    sp__h5_test_publish_hook = go_on_once_spilling;
    sp_manager_finalize(m, NULL, NULL);
    for (;;) sleep(60); /* the watcher ends the process once its spill is written */
  }
  int st = child_wait(pid);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  ASSERT_EQ(h5_region_events("job.h5", "work"), 5000); /* this rank's part, as written */
  ASSERT(exists("job.h5.spill"));
  struct sp_recover_info info;
  long long got = recover_job(&info);
  ASSERT(!info.published);
  if (got != 5000)
    SP_FAIL_("the spill under way when finalize rewrote the buffers holds %lld of 5000 calls (%s)", got,
             info.complete ? "said complete" : "said partial");
  ASSERT(info.complete);
  sp__recover_info_free(&info);
}

/* Reported: a rank>0 spill written after finalize had compacted the
 * buffers recovered "complete". A fatal signal in finalize once it has
 * compacted them, before the run ends (its last publish step): the crash
 * handler spills what finalize left, the open calls only. Rank 1: its part
 * is written, the job's file is rank 0's to publish, so the spill is all a
 * recovery of this rank has; it must say partial, and how many calls. */
static void crash_at_reset(int step) {
  if (step == SP_PUB_RESET) abort();
}

SP_TEST(crash_spill_after_finalize_compacted_the_buffers_is_partial) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    sp_manager *m = recorded_run(5000, 1);
    if (!m) _exit(3);
    sp__h5_test_publish_hook = crash_at_reset;
    sp_manager_finalize(m, NULL, NULL);
    _exit(4);
  }
  int st = child_wait(pid);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
  ASSERT(exists("job.h5.spill"));
  struct sp_recover_info info;
  long long got = recover_job(&info);
  ASSERT(!info.published);
  if (info.complete && got != 5000) SP_FAIL_("recovered %lld of 5000 calls, said complete", got);
  ASSERT(!info.complete);
  ASSERT_EQ(info.rewritten, 1);
  ASSERT_EQ(info.calls_lost, 5000); /* all of them: none was still open */
  ASSERT_EQ(got, 0);
  sp__recover_info_free(&info);
}

/* The watcher's spill past its bounded wait may come once that finalize has
 * ended the run (compacted and all): the buffers hold the next run's open
 * calls at most, and a spill of them would recover as a "complete" run
 * without the calls the file has. It writes nothing. */
SP_TEST(spill_after_the_finalize_ended_the_run_writes_nothing) {
  sp_manager *m = recorded_run(5000, 1);
  ASSERT(m);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("job.h5", "work"), 5000);
  int rc = sp__spill_write(m, SIGTERM);
  if (exists("job.h5.spill")) {
    struct sp_recover_info info;
    long long got = recover_job(&info);
    SP_FAIL_("a spill after the run ended was written (rc %d): %lld of 5000 calls, said %s", rc, got,
             info.complete ? "complete" : "partial");
  }
  ASSERT(rc != 0);
  sp_manager_destroy(m);
  sp__mpi_ops = NULL;
}

/* Outside MPI the watcher publishes the run cut short and lets the signal
 * end the process; recording stays off meanwhile (review11 F3: it armed the
 * manager again, which a destroy waiting for the cut then freed with
 * threads recording into it). SIGTERM blocked everywhere once the handler
 * ran keeps the watcher's kill pending, so the process lives to look. */
SP_TEST(watcher_cut_leaves_recording_off) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    /* the watcher thread setup starts inherits the mask: SIGTERM blocked */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    const char *ov[] = {"file_path=cut.h5", NULL};
    sp_manager *m = sp_manager_create();
    if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) _exit(3);
    sp_region r = sp_region_intern("work");
    for (int i = 0; i < 100; i++) {
      sp_region_begin(m, r);
      sp_region_end(m, r);
    }
    pthread_sigmask(SIG_UNBLOCK, &term, NULL);
    raise(SIGTERM); /* our handler runs here and tells the watcher */
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    for (int i = 0; i < 6000; i++) {
      sigset_t pend;
      sigpending(&pend);
      if (sigismember(&pend, SIGTERM)) break;
      nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    sigset_t pend;
    sigpending(&pend);
    if (!sigismember(&pend, SIGTERM)) _exit(5); /* the watcher never let the signal go */
    _exit(sp_manager_is_active(m) ? 6 : 0);
  }
  int st = child_wait(pid);
  if (WIFSIGNALED(st)) SKIP("the watcher's kill reached a thread that did not block SIGTERM (signal %d)", WTERMSIG(st));
  ASSERT(WIFEXITED(st));
  if (WEXITSTATUS(st) == 6) SP_FAIL_("the manager records again after the watcher's cut");
  ASSERT_EQ(WEXITSTATUS(st), 0);
  ASSERT_EQ(h5_region_events("cut.h5", "work"), 100);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
