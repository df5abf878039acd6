/* test-stagefail.c - a streamed run whose finalize fails: reading the staged
 * blocks back (the copy way) from a staged file that was truncated or changed
 * after the run wrote it gives a status whose message names the file, the
 * cause and what to do, and the file stays (review11 F9); a crash after a
 * finalize that failed to publish still leaves a spill that `recover` turns
 * into a file holding the streamed calls (review11 F8).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "childutil.h"
#include "core/spill.h"
#include "core/stream.h"
#include "h5util.h"
#include "harness.h"
#include "output/output.h"
#include "scope_profiler.h"

/* The one file in "." whose name starts with `prefix` ("" none). */
static void find_file(const char *prefix, char *out, size_t len) {
  out[0] = 0;
  DIR *d = opendir(".");
  ASSERT(d);
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix))) snprintf(out, len, "%s", e->d_name);
  closedir(d);
}

/* F8: the child streams n outer calls around one inner each, its finalize
 * fails to publish (the output path became a directory meanwhile), then it
 * crashes with crash_spill on. */
static int crash_after_failed_finalize(long n) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    signal(SIGSEGV, SIG_DFL);
    const char *ov[] = {"file_path=pub.h5", "max_buffer_bytes=16777216", "crash_spill=true", NULL};
    sp__stream_shed_wait_ms = 600000;
    sp_manager *m = sp_manager_create();
    if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) _exit(3);
    sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
    for (long i = 0; i < n; i++) {
      sp_region_begin(m, outer);
      sp_region_begin(m, inner);
      sp_region_end(m, inner);
      sp_region_end(m, outer);
    }
    if (mkdir("pub.h5", 0755) != 0) _exit(5);
    sp_status st = sp_manager_finalize(m, NULL, NULL);
    fprintf(stderr, "  child: finalize: %d %s\n", (int)st, sp_last_error());
    if (st == SP_OK) _exit(6);
    raise(SIGSEGV);
    _exit(4);
  }
  return child_wait(pid);
}

SP_TEST(a_crash_after_a_failed_finalize_recovers_the_streamed_calls) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  long n = 600000;
  int st = crash_after_failed_finalize(n);
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) SP_FAIL_("the child did not crash (status 0x%x)", st);
  system("ls -la . >&2");
  ASSERT(exists("pub.h5.spill"));
  struct sp_recover_info info;
  const char *spills[] = {"pub.h5.spill"};
  sp_status rs = sp__spill_recover_run(spills, 1, "rec.h5", &info);
  if (rs != SP_OK) SP_FAIL_("recover: %s", sp_last_error());
  fprintf(stderr, "  recovered: complete %d, outer %lld inner %lld\n", info.complete, h5_region_events("rec.h5", "outer"),
          h5_region_events("rec.h5", "inner"));
  ASSERT_EQ(h5_region_events("rec.h5", "outer"), n);
  ASSERT_EQ(h5_region_events("rec.h5", "inner"), n);
  sp__recover_info_free(&info);
}


/* F9: a run whose staging stopped after some blocks (too many segments for
 * its budget: stage_too_many) reads those blocks back from the staged file
 * at finalize. The file damaged before finalize reads it: `how` 0 truncates
 * it to half, 1 changes one byte of a block's data. */
static void damaged_staged_file(int how) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  const char *ov[] = {"file_path=out.h5", "max_buffer_bytes=2097152", NULL};
  sp__stream_shed_wait_ms = 600000;
  sp_manager *m = sp_manager_create();
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  for (long i = 0; i < 400000; i++) {
    sp_region_begin(m, outer);
    sp_region_begin(m, inner);
    sp_region_end(m, inner);
    sp_region_end(m, outer);
  }
  char staged[256];
  find_file(".out.h5.tmp.", staged, sizeof staged);
  ASSERT(staged[0]);
  struct stat sb;
  ASSERT(stat(staged, &sb) == 0);
  fprintf(stderr, "  staged file %s, %lld bytes\n", staged, (long long)sb.st_size);
  if (how == 0) ASSERT(truncate(staged, sb.st_size / 2) == 0);
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  const char *msg = sp_last_error();
  fprintf(stderr, "  finalize: %d: %s\n", (int)st, msg);
  ASSERT_EQ(st, SP_ERR_IO);
  ASSERT_CONTAINS(msg, staged);
  ASSERT(exists(staged));
  sp_manager_destroy(m);
}

SP_TEST(a_truncated_staged_file_is_named_with_the_cause) { damaged_staged_file(0); }

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
