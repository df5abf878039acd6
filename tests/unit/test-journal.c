/* test-journal.c - a streamed run killed with SIGKILL (no handler runs, so
 * no spill) is recovered from its raw staging file's journal alone: the
 * journal's run, region, thread and anchor records (stream.c) give what
 * the spill would, and sp__journal_recover writes exactly the calls of the
 * staged blocks, times in order, recovery_complete 0 and
 * recovered_from_signal 9, keeping the crashed run's files. A journal whose
 * last record the kill cut short recovers the same calls.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "childutil.h"
#include "common/error.h"
#include "core/spill.h"
#include "core/stream.h"
#include "h5util.h"
#include "harness.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

/* The child: "top" open around n calls of "outer" each around one "inner",
 * then, once the writer has staged at least 3 blocks and has nothing in
 * hand, the staged calls of outer and inner on the pipe; it waits for the
 * kill. The calls still in its buffers are not staged. */
static void child(int wfd, long n) {
  const char *ov[] = {"file_path=run.h5", "max_buffer_bytes=16777216", "crash_spill=false", NULL};
  sp__stream_shed_wait_ms = 600000;
  sp_manager *m = sp_manager_create();
  if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) _exit(3);
  sp_region top = sp_region_intern("top"), outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  sp_region_begin(m, top);
  for (long i = 0; i < n; i++) {
    sp_region_begin(m, outer);
    sp_region_begin(m, inner);
    sp_region_end(m, inner);
    sp_region_end(m, outer);
  }
  uint64_t done = 0;
  while (sp__stream_in_flight(m, &done) != 0 || sp__stream_blocks_now(m) < 3)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  unsigned long long c[3] = {sp__stream_calls(m, outer & ~SP_I_REGION_SLOW_BIT),
                             sp__stream_calls(m, inner & ~SP_I_REGION_SLOW_BIT), sp__stream_blocks_now(m)};
  if (write(wfd, c, sizeof c) != (ssize_t)sizeof c) _exit(5);
  for (;;) pause();
}

/* Recovered calls of `name` in rec.h5, their starts checked in order and
 * every end at or after its start. */
static long long region_calls(sp_results *r, const char *name) {
  size_t reg;
  if (sp_results_find_region(r, name, &reg) != SP_OK) return 0;
  sp_events ev;
  ASSERT_OK(sp_results_events(r, reg, 0, &ev));
  for (size_t i = 0; i < ev.count; i++) {
    ASSERT(ev.end_ns[i] >= ev.start_ns[i]);
    if (i) ASSERT(ev.start_ns[i] >= ev.start_ns[i - 1]);
  }
  long long n = (long long)ev.count;
  sp_events_free(&ev);
  return n;
}

static void killed_run(unsigned long long c[3], char *journal, size_t len) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    child_no_core();
    child(p[1], 1200000);
  }
  close(p[1]);
  ASSERT_EQ(read(p[0], c, 3 * sizeof *c), (ssize_t)(3 * sizeof *c));
  close(p[0]);
  kill(pid, SIGKILL);
  int st = child_wait(pid);
  ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  ASSERT(!exists("run.h5.spill"));
  ASSERT(find_file(".run.h5.stage.", journal, len) == 0);
  ASSERT(journal[0]);
  fprintf(stderr, "  staged before the kill: %llu outer, %llu inner calls in %llu blocks\n", c[0], c[1], c[2]);
  ASSERT(c[0] > 0 && c[0] == c[1]);
}

static void check_recovered(const unsigned long long c[3], const char *journal, int want_torn) {
  struct sp_recover_info info;
  if (sp__journal_recover(journal, "rec.h5", &info) != SP_OK) SP_FAIL_("recover: %s", sp_last_error());
  ASSERT(info.journal);
  ASSERT(!info.complete);
  ASSERT_EQ(info.torn, want_torn);
  ASSERT_EQ(info.nfiles, (size_t)2); /* the journal and the staged file, kept by the CLI */
  sp__recover_info_free(&info);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("rec.h5", &r));
  long long outer = region_calls(r, "outer"), inner = region_calls(r, "inner"), top = region_calls(r, "top");
  sp_results_free(r);
  fprintf(stderr, "  recovered: %lld outer, %lld inner, %lld top\n", outer, inner, top);
  ASSERT_EQ(outer, (long long)c[0]);
  ASSERT_EQ(inner, (long long)c[1]);
  ASSERT_EQ(top, 0); /* open at the kill: in the thread's buffer, lost */
  ASSERT_EQ(h5_attr_i64("rec.h5", "/metadata", "recovery_complete"), 0);
  ASSERT_EQ(h5_attr_i64("rec.h5", "/metadata", "recovered_from_signal"), SIGKILL);
  ASSERT(exists(journal));
}

SP_TEST(a_sigkilled_streamed_run_recovers_its_staged_calls_from_the_journal) {
  unsigned long long c[3];
  char journal[512];
  killed_run(c, journal, sizeof journal);
  check_recovered(c, journal, 0);
}

/* A record the kill cut short (half of an anchor record appended) is
 * ignored: the same calls, and it says the journal was torn. */
SP_TEST(a_torn_last_record_is_ignored) {
  unsigned long long c[3];
  char journal[512];
  killed_run(c, journal, sizeof journal);
  int fd = open(journal, O_WRONLY | O_APPEND);
  ASSERT(fd >= 0);
  static const unsigned char half[20] = {'S', 'P', 'A', 'N', 'C', '0', '0', '1', 24};
  ASSERT_EQ(write(fd, half, sizeof half), (ssize_t)sizeof half);
  close(fd);
  check_recovered(c, journal, 1);
}

SP_TEST(a_file_that_is_not_a_journal_is_refused) {
  FILE *f = fopen(".x.h5.stage.abc", "w");
  ASSERT(f);
  fputs("hello world, not a journal", f);
  fclose(f);
  struct sp_recover_info info;
  ASSERT_EQ(sp__journal_recover(".x.h5.stage.abc", "rec.h5", &info), SP_ERR_FORMAT);
  ASSERT(strstr(sp_last_error(), "is not the journal of a staged run"));
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
