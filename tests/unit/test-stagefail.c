/* test-stagefail.c - a streamed run whose finalize fails. Reading the staged
 * blocks back (the copy way) from a staged file that was truncated or changed
 * after the run wrote it gives a status whose message names the file, the
 * cause and what to do, and the file stays (review11 F9). A write that fails
 * (the output path became a directory) keeps the run: a crash afterwards
 * leaves a spill that `recover` turns into a file with every streamed call,
 * and a finalize once the cause is gone writes them all (review11 F8).
 */
#include <dirent.h>
#include <errno.h>
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
#include "output/output.h"
#include "probes/ext.h"
#include "scope_profiler.h"
#include "scope_profiler/lines.h"
#include "scope_profiler/reader.h"

/* The one file in "." whose name starts with `prefix` ("" none). */
/* n calls of "outer", each around one call of "inner". */
static void nested_calls(sp_manager *m, long n) {
  sp_region outer = sp_region_intern("outer"), inner = sp_region_intern("inner");
  for (long i = 0; i < n; i++) {
    sp_region_begin(m, outer);
    sp_region_begin(m, inner);
    sp_region_end(m, inner);
    sp_region_end(m, outer);
  }
}

/* The calls of a file that start and end at the run's earliest start: a
 * call read from a hole has start and end ticks 0, so one start, the
 * earliest, and no duration. *n: the calls in the file. */
static long long calls_at_earliest(const char *file, long long *n) {
  long long ne = 0, zeros = 0;
  int64_t *b = h5_i64(file, "/events/start_times", n), *e = h5_i64(file, "/events/end_times", &ne);
  int64_t lo = INT64_MAX;
  for (long long i = 0; b && i < *n; i++) lo = b[i] < lo ? b[i] : lo;
  for (long long i = 0; b && e && i < *n && i < ne; i++) zeros += b[i] == lo && e[i] == lo;
  free(b);
  free(e);
  return zeros;
}

/* F9: a run whose staging stopped after some blocks (too many segments for
 * its 2 MiB budget: stage_too_many) reads those blocks back from the staged
 * file at finalize, the copy way. The file is damaged before finalize reads
 * it: `how` 0 truncates it to half, 1 changes one staged duration of block
 * 0. Finalize fails, and says which file, what is wrong with it (`cause`)
 * and which block; the staged file stays, after the manager is gone too. */
static void damaged_staged_file(int how, const char *cause) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  const char *ov[] = {"file_path=out.h5", "max_buffer_bytes=2097152", NULL};
  sp__stream_shed_wait_ms = 600000;
  sp_manager *m = sp_manager_create();
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  nested_calls(m, 400000);
  char staged[256], path[300];
  ASSERT(find_file(".out.h5.tmp.", staged, sizeof staged) == 0);
  ASSERT(staged[0]);
  snprintf(path, sizeof path, "./%s", staged);
  struct stat sb;
  ASSERT(stat(staged, &sb) == 0);
  if (how == 0) {
    ASSERT(truncate(staged, sb.st_size / 2) == 0);
  } else { /* (staging stopped: the file is closed, and HDF5 may open it) */
    hid_t f = H5Fopen(staged, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f >= 0 ? H5Dopen2(f, "/staging/000000/durations", H5P_DEFAULT) : -1;
    haddr_t at = d >= 0 ? H5Dget_offset(d) : HADDR_UNDEF;
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    ASSERT(at != HADDR_UNDEF);
    int fd = open(staged, O_RDWR);
    int64_t v;
    ASSERT(fd >= 0 && pread(fd, &v, 8, (off_t)at + 40) == 8);
    v += 1;
    ASSERT(pwrite(fd, &v, 8, (off_t)at + 40) == 8);
    close(fd);
  }
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  char msg[4096];
  snprintf(msg, sizeof msg, "%s", sp_last_error());
  fprintf(stderr, "  finalize: %s\n", msg);
  ASSERT_EQ(st, SP_ERR_IO);
  ASSERT_CONTAINS(msg, "writing out.h5 failed, nothing was written");
  ASSERT_CONTAINS(msg, path); /* the file */
  ASSERT_CONTAINS(msg, cause); /* what is wrong with it */
  ASSERT_CONTAINS(msg, how == 0 ? "region \"" : "block 0, region \"");
  char kept[400];
  snprintf(kept, sizeof kept, "%s is kept as it is", path); /* what is left, and what to do */
  ASSERT_CONTAINS(msg, kept);
  ASSERT_CONTAINS(msg, "Keep other programs");
  ASSERT(exists(staged));
  ASSERT(!exists("out.h5"));
  sp_manager_destroy(m);
  ASSERT(exists(staged)); /* (not removed for the user later either) */
}

SP_TEST(a_truncated_staged_file_is_named_with_the_cause) {
  damaged_staged_file(0, "were to be read, but the file ends at byte");
}

SP_TEST(a_changed_staged_file_is_named_with_the_cause) {
  damaged_staged_file(1, "the values read differ from the checksum the run took");
}


/* F8: n outer calls around one inner each, streamed (staged) in a 16 MiB
 * budget; then the output path becomes a directory, so the write fails. */
static char fail_msg[2048];
static const char *more_ov;
static int no_finalize; /* the path becomes a directory, and the program ends without a finalize */
static sp_manager *streamed_run_whose_write_fails(long n) {
  const char *ov[] = {"file_path=pub.h5", "max_buffer_bytes=16777216", "crash_spill=true", more_ov, NULL};
  sp__stream_shed_wait_ms = 600000; /* a loaded machine must not make it shed its staging */
  sp_manager *m = sp_manager_create();
  ASSERT(m);
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  nested_calls(m, n);
  ASSERT_EQ(mkdir("pub.h5", 0755), 0);
  if (no_finalize) return m;
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  snprintf(fail_msg, sizeof fail_msg, "%s", sp_last_error());
  fprintf(stderr, "  finalize: %s\n", fail_msg);
  ASSERT_EQ(st, SP_ERR_IO);
  return m;
}

/* The child crashes after that finalize; the parent recovers its spill. */
SP_TEST(a_crash_after_a_failed_finalize_recovers_the_streamed_calls) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  long n = 600000;
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    signal(SIGSEGV, SIG_DFL); /* (the spill handler chains to it) */
    streamed_run_whose_write_fails(n);
    raise(SIGSEGV);
    _exit(4);
  }
  int st = child_wait(pid);
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) SP_FAIL_("the child did not crash (status 0x%x)", st);
  ASSERT(exists("pub.h5.spill"));
  struct sp_recover_info info;
  const char *spills[] = {"pub.h5.spill"};
  if (sp__spill_recover_run(spills, 1, "rec.h5", &info) != SP_OK) SP_FAIL_("recover: %s", sp_last_error());
  long long got_outer = h5_region_events("rec.h5", "outer"), got_inner = h5_region_events("rec.h5", "inner");
  fprintf(stderr, "  recovered: %lld outer, %lld inner calls of %ld, complete %d\n", got_outer, got_inner, n,
          info.complete);
  ASSERT_EQ(got_outer, n);
  ASSERT_EQ(got_inner, n);
  ASSERT(info.complete);
  ASSERT_EQ(h5_attr_i64("rec.h5", "/metadata", "recovery_complete"), 1);
  ASSERT_EQ(h5_attr_i64("rec.h5", "/metadata", "recovered_from_signal"), SIGSEGV);
  sp__recover_info_free(&info);
}

/* Once the cause is gone, finalize writes the kept run whole, with the
 * calls made since. */
SP_TEST(a_failed_finalize_keeps_a_streamed_run_for_the_next) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  long n = 600000;
  sp_manager *m = streamed_run_whose_write_fails(n);
  ASSERT_EQ(rmdir("pub.h5"), 0);
  sp_region outer = sp_region_intern("outer");
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, outer);
    sp_region_end(m, outer);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  long long got_outer = h5_region_events("pub.h5", "outer"), got_inner = h5_region_events("pub.h5", "inner");
  fprintf(stderr, "  written: %lld outer, %lld inner calls\n", got_outer, got_inner);
  ASSERT_EQ(got_outer, n + 10);
  ASSERT_EQ(got_inner, n);
  /* and the failed finalize said what happened to the run */
  ASSERT_CONTAINS(fail_msg, "pub.h5 is a directory");
  ASSERT_CONTAINS(fail_msg, "The run is kept as it was");
  /* nothing of the run is left beside it */
  DIR *d = opendir(".");
  ASSERT(d);
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] == '.' && strstr(e->d_name, "pub.h5")) SP_FAIL_("%s was left", e->d_name);
  closedir(d);
}

/* The raw staging file (schema 2: a streamed run's segments are copied
 * there, not staged) cut to half its length: before finalize (`at` 0;
 * finalize's hand-offs then write past the cut, leaving a hole), or once
 * finalize has handed off the last calls, as it writes the file (1). */
static char raw_staging[256];
static void cut_raw_staging(void) {
  struct stat sb;
  ASSERT(stat(raw_staging, &sb) == 0);
  ASSERT(truncate(raw_staging, sb.st_size / 2) == 0);
  fprintf(stderr, "  staging file cut from %lld to %lld bytes\n", (long long)sb.st_size, (long long)sb.st_size / 2);
}
static void cut_at_write(int step) {
  if (step == SP_PUB_WRITE) cut_raw_staging();
}
static void raw_staging_cut_short(int at) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  const char *ov[] = {"file_path=raw.h5", "hdf5_schema=2", "max_buffer_bytes=2097152", NULL};
  sp_manager *m = sp_manager_create();
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region outer = sp_region_intern("outer");
  nested_calls(m, 400000);
  ASSERT(find_file(".raw.h5.stage.", raw_staging, sizeof raw_staging) == 0);
  ASSERT(raw_staging[0]);
  if (at == 0) cut_raw_staging();
  else sp__h5_test_publish_hook = cut_at_write;
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  sp__h5_test_publish_hook = NULL;
  char msg[4096];
  snprintf(msg, sizeof msg, "%s", sp_last_error());
  fprintf(stderr, "  finalize: %s\n", msg);
  if (st == SP_OK) {
    long long n = 0, zeros = calls_at_earliest("raw.h5", &n);
    fprintf(stderr,
            "  written: %lld outer, %lld inner calls, %lld of %lld starting and ending at the run's earliest start\n",
            h5_region_events("raw.h5", "outer"), h5_region_events("raw.h5", "inner"), zeros, n);
  }
  ASSERT_EQ(st, SP_ERR_IO);
  char path[300];
  snprintf(path, sizeof path, "./%s", raw_staging);
  ASSERT_CONTAINS(msg, path); /* the file */
  ASSERT_CONTAINS(msg, at == 0 ? "has a hole" : "were to be read, but the file ends at byte"); /* the cause */
  ASSERT_CONTAINS(msg, "the calls streamed there are lost"); /* what is left */
  ASSERT(!exists("raw.h5"));
  /* as it says: emptied, and the next run is written */
  struct stat sb;
  ASSERT(stat(raw_staging, &sb) == 0);
  ASSERT_EQ(sb.st_size, 0);
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, outer);
    sp_region_end(m, outer);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("raw.h5", "outer"), 10);
  sp_manager_destroy(m);
}

SP_TEST(a_raw_staging_file_cut_short_before_finalize_is_not_written_as_zeros) { raw_staging_cut_short(0); }
SP_TEST(a_raw_staging_file_cut_short_during_finalize_says_its_calls_are_lost) { raw_staging_cut_short(1); }

/* The same cut, then more hand-offs and a crash: recovery reads the
 * segments before the hole and stops there, said incomplete; none of its
 * calls comes from the hole. The segment the cut falls in had its header
 * before the cut and the tail of its parent column in the hole: recovery
 * took it whole, those calls with parent 0 (a call only the first call's
 * child has), and finalize's check does not see the private copy's zeros. */
SP_TEST(a_crash_after_the_raw_staging_file_was_cut_recovers_what_is_before_the_cut) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    child_no_core();
    signal(SIGSEGV, SIG_DFL);
    const char *ov[] = {"file_path=raw.h5", "hdf5_schema=2", "max_buffer_bytes=2097152", "crash_spill=true", NULL};
    sp_manager *m = sp_manager_create();
    ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
    nested_calls(m, 400000);
    ASSERT(find_file(".raw.h5.stage.", raw_staging, sizeof raw_staging) == 0);
    cut_raw_staging();
    nested_calls(m, 200000);
    raise(SIGSEGV);
    _exit(4);
  }
  int st = child_wait(pid);
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) SP_FAIL_("the child did not crash (status 0x%x)", st);
  ASSERT(exists("raw.h5.spill"));
  struct sp_recover_info info;
  const char *spills[] = {"raw.h5.spill"};
  sp_status rs = sp__spill_recover_run(spills, 1, "rec.h5", &info);
  if (rs != SP_OK) SP_FAIL_("recover: %s", sp_last_error());
  long long n = 0, zeros = calls_at_earliest("rec.h5", &n);
  long long np = 0, parent0 = 0;
  int64_t *par = h5_i64("rec.h5", "/events/parent_ids", &np);
  for (long long i = 0; par && i < np; i++) parent0 += par[i] == 0;
  free(par);
  fprintf(stderr,
          "  recovered: %lld outer, %lld inner of 600000, complete %d; %lld calls at the earliest start with no "
          "duration, %lld with parent 0\n",
          h5_region_events("rec.h5", "outer"), h5_region_events("rec.h5", "inner"), info.complete, zeros, parent0);
  ASSERT(!info.complete);
  ASSERT(zeros <= 1);
  ASSERT(parent0 <= 1);
  ASSERT_GT(h5_region_events("rec.h5", "outer"), 0);
  sp__recover_info_free(&info);
}

/*====== A kept run at exit ======*/

/* The exit hook's retry fails as well (the path is still a directory): the
 * process ends with a run whose calls are only in its staging files. */
static void to_file(sp_message_level level, const char *text, void *user) {
  (void)user;
  FILE *f = fopen("exit-msg.txt", "a");
  if (f) {
    fprintf(f, "%s: %s\n", level == SP_MESSAGE_ERROR ? "error" : "warning", text);
    fclose(f);
  }
}
static void read_text(const char *path, char *out, size_t len) {
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(out, 1, len - 1, f);
  out[n] = 0;
  fclose(f);
}
static void kept_at_exit(int spill_blocked, const char *extra, char *msg, size_t len) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    if (spill_blocked) ASSERT_EQ(mkdir("pub.h5.spill", 0755), 0); /* the spill cannot be written either */
    sp_set_message_handler(to_file, NULL);
    more_ov = extra;
    streamed_run_whose_write_fails(600000);
    exit(0); /* the exit hook finalizes again, into the same directory */
  }
  int st = child_wait(pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) SP_FAIL_("the child failed (status 0x%x)", st);
  read_text("exit-msg.txt", msg, len);
  fprintf(stderr, "  at exit: %s", msg);
}

/* A spill is written at exit, the staging files stay for it, and the
 * message says where they are and how to recover them. */
static void kept_run_spilled_at_exit(const char *extra) {
  char msg[8192], staging[256], staged[256];
  kept_at_exit(0, extra, msg, sizeof msg);
  ASSERT(find_file(".pub.h5.stage.", staging, sizeof staging) == 0);
  ASSERT(find_file(".pub.h5.tmp.", staged, sizeof staged) == 0);
  fprintf(stderr, "  left: spill %d, staging file '%s', staged file '%s'\n", exists("pub.h5.spill"), staging, staged);
  ASSERT(exists("pub.h5.spill"));
  ASSERT(staging[0] && staged[0]);
  ASSERT_CONTAINS(msg, "pub.h5 is a directory"); /* the cause */
  ASSERT_CONTAINS(msg, "pub.h5.spill");
  ASSERT_CONTAINS(msg, staging);
  ASSERT_CONTAINS(msg, staged);
  ASSERT_CONTAINS(msg, "scope-profiler recover pub.h5.spill");
  ASSERT_EQ(rmdir("pub.h5"), 0);
  struct sp_recover_info info;
  const char *spills[] = {"pub.h5.spill"};
  if (sp__spill_recover_run(spills, 1, "rec.h5", &info) != SP_OK) SP_FAIL_("recover: %s", sp_last_error());
  long long got_outer = h5_region_events("rec.h5", "outer"), got_inner = h5_region_events("rec.h5", "inner");
  fprintf(stderr, "  recovered: %lld outer, %lld inner calls of 600000, complete %d\n", got_outer, got_inner,
          info.complete);
  ASSERT_EQ(got_outer, 600000);
  ASSERT_EQ(got_inner, 600000);
  ASSERT(info.complete);
  ASSERT_EQ(h5_attr_i64("rec.h5", "/metadata", "recovered_from_signal"), -1); /* (no signal: the exit) */
  char *cut = h5_attr_str("rec.h5", "/metadata", "cut_short");
  fprintf(stderr, "  cut_short: %s\n", cut ? cut : "(none)");
  ASSERT(cut != NULL);
  ASSERT_STR_EQ(cut, "exit");
  free(cut);
  sp__recover_info_free(&info);
}
SP_TEST(a_kept_run_whose_exit_retry_fails_leaves_a_spill_and_says_so) { kept_run_spilled_at_exit(NULL); }
/* The exit hook's finalize is the run's first, and fails. */
SP_TEST(a_run_whose_only_finalize_at_exit_fails_leaves_a_spill_and_says_so) {
  no_finalize = 1;
  kept_run_spilled_at_exit(NULL);
}
/* And when that finalize at exit writes the file, it has every call (the
 * program exits right after the last: HDF5's own exit handler, which ran
 * first, failed the blocks the writer had in flight, and 131,072 calls
 * were dropped), and nothing of the run is left beside it (the staging
 * files go once the exit hook has written). */
SP_TEST(a_streamed_run_written_at_exit_leaves_nothing_beside_its_file) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    no_finalize = 1;
    streamed_run_whose_write_fails(600000);
    ASSERT_EQ(rmdir("pub.h5"), 0);
    exit(0);
  }
  int st = child_wait(pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) SP_FAIL_("the child failed (status 0x%x)", st);
  fprintf(stderr, "  written at exit: %lld outer, %lld inner; dropped %lld, cut short %lld\n",
          h5_region_events("pub.h5", "outer"), h5_region_events("pub.h5", "inner"),
          h5_attr_i64("pub.h5", "/metadata", "dropped_events"), h5_attr_i64("pub.h5", "/metadata", "cut_short_calls"));
  ASSERT_EQ(h5_region_events("pub.h5", "outer"), 600000);
  ASSERT_EQ(h5_region_events("pub.h5", "inner"), 600000);
  ASSERT(!exists("pub.h5.spill"));
  DIR *d = opendir(".");
  ASSERT(d);
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] == '.' && strstr(e->d_name, "pub.h5")) SP_FAIL_("%s was left", e->d_name);
  closedir(d);
}

/* The same at exit without the exit hook (the program did not retry). */
SP_TEST(a_kept_run_with_no_exit_hook_leaves_a_spill_at_exit_and_says_so) {
  kept_run_spilled_at_exit("finalize_on_exit=false");
}

/* With no spill possible, nothing can recover the staging files: they are
 * removed, and the message says the calls are lost. */
SP_TEST(a_kept_run_with_no_spill_at_exit_removes_its_staging_files_and_says_so) {
  char msg[8192], staging[256], staged[256];
  kept_at_exit(1, NULL, msg, sizeof msg);
  ASSERT(find_file(".pub.h5.stage.", staging, sizeof staging) == 0);
  ASSERT(find_file(".pub.h5.tmp.", staged, sizeof staged) == 0);
  fprintf(stderr, "  left: staging file '%s', staged file '%s'\n", staging, staged);
  ASSERT(!staging[0]);
  ASSERT(!staged[0]);
  ASSERT_CONTAINS(msg, "pub.h5 is a directory");
  ASSERT_CONTAINS(msg, "pub.h5.spill: Is a directory");
  ASSERT_CONTAINS(msg, "are lost");
}

/* The staged file of a kept run removed by name (at exit, with no spill to
 * keep it: kept_at_exit) is gone for the run: a later removal through the
 * same manager, or its destroy, must not take the file another run's
 * mkstemp made under that name since (mkstemp hands out a free name, and
 * this one is free again). */
static void removed_staged_name(int retry) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  sp_manager *m = streamed_run_whose_write_fails(600000);
  const char *name = sp__stream_staged_name(m);
  ASSERT(name);
  char staged[4096];
  snprintf(staged, sizeof staged, "%s", name);
  ASSERT(exists(staged));
  sp__stream_unlink_staged(m);
  ASSERT(!exists(staged));
  int fd = open(staged, O_WRONLY | O_CREAT | O_EXCL, 0600); /* another run's, as its mkstemp made it */
  ASSERT(fd >= 0);
  ASSERT_EQ(write(fd, "other run", 9), 9);
  close(fd);
  sp__stream_unlink_staged(m);
  fprintf(stderr, "  after a second removal: %s %s\n", staged, exists(staged) ? "is there" : "is gone");
  ASSERT(exists(staged));
  ASSERT(sp__stream_staged_name(m) == NULL); /* (a crash spill names no staged file) */
  /* a retry that writes the run does not rename that file into place */
  ASSERT_EQ(rmdir("pub.h5"), 0);
  if (!retry) { /* the manager's destroy closes the stage, which knows the name too */
    sp_manager_destroy(m);
    fprintf(stderr, "  after the manager's destroy: %s %s\n", staged, exists(staged) ? "is there" : "is gone");
    ASSERT(exists(staged));
    return;
  }
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  fprintf(stderr, "  retry: %s; %s %s; pub.h5 has %lld outer calls\n", st == SP_OK ? "written" : sp_last_error(),
          staged, exists(staged) ? "is there" : "is gone", h5_region_events("pub.h5", "outer"));
  ASSERT(exists(staged));
  ASSERT_EQ(st, SP_OK);
  ASSERT_EQ(h5_region_events("pub.h5", "outer"), 600000);
  sp_manager_destroy(m);
  fprintf(stderr, "  after the manager's destroy: %s %s\n", staged, exists(staged) ? "is there" : "is gone");
  ASSERT(exists(staged));
  struct stat sb;
  ASSERT(stat(staged, &sb) == 0);
  ASSERT_EQ(sb.st_size, 9);
}

SP_TEST(a_removed_staged_file_name_is_not_removed_again) { removed_staged_name(1); }
SP_TEST(a_removed_staged_file_name_is_not_removed_by_the_destroy) { removed_staged_name(0); }

/*====== An extension's state on a kept run ======*/

/* A column probe that counts one per call of outer and inner each (its
 * column sums to the calls), and whose emit writes one group per region
 * with the calls and that sum: upstream's per-region totals, as perf's. */
static int64_t ticks;
static int emits;
static const struct sp_ext_col tick_cols[] = {{"test_ticks", "count", 0, SP_EXT_FOLD_SUM, -1}};
static int tick_wanted(const struct sp_config *c) {
  (void)c;
  return 1;
}
static sp_status tick_setup(struct sp_ext_setup *s, void **proc) {
  *proc = &ticks;
  s->cols = tick_cols;
  s->ncols = 1;
  return SP_OK;
}
static int tick_attach(void *proc, const struct sp_ext_thread *th, void **thr) {
  (void)proc;
  (void)th;
  *thr = NULL;
  return 0;
}
static void tick_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  c->cols[0] = 0;
}
static void tick_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  c->cols[0] = 1;
}
static int tick_takes(void *proc, uint32_t id, const struct sp_ext_region *r) {
  (void)proc;
  (void)id;
  return strcmp(r->name, "outer") == 0 || strcmp(r->name, "inner") == 0;
}
static sp_status tick_emit(void *proc, struct sp_ext_emit *out) {
  (void)proc;
  emits++;
  const struct sp_ext_totals *t = sp_ext_totals(out);
  for (size_t i = 0; i < t->n; i++) {
    const char *rn = sp_region_name(t->region[i]);
    if (strcmp(rn, "outer") != 0 && strcmp(rn, "inner") != 0) continue;
    char path[64];
    snprintf(path, sizeof path, "test_ticks/%s", rn);
    struct sp_ext_group *g = sp_ext_group(out, path);
    uint64_t one = 1;
    int64_t v = t->values[i];
    if (!g || sp_ext_group_attr_i64(g, "calls", (int64_t)t->calls[i]) ||
        sp_ext_group_attr_i64(g, "taken", (int64_t)t->taken[i]) ||
        sp_ext_group_dset(g, "values", SP_EXT_I64, 1, &one, &v))
      return sp__set_error(SP_ERR_NO_MEMORY, "test_ticks: out of memory");
  }
  return SP_OK;
}
static const struct sp_ext tick_ext = {
    .abi = SP_EXT_ABI,
    .name = "test_ticks",
    .kind = SP_EXT_COLUMNS,
    .wanted = tick_wanted,
    .setup = tick_setup,
    .thread_attach = tick_attach,
    .region_added = tick_takes,
    .enter = tick_enter,
    .exit = tick_exit,
    .emit = tick_emit,
};

/* The failed finalize folded the streamed calls into the per-region totals
 * and emitted them with a run that was never written; the retry writes each
 * region's group once, with the totals of the whole run: the calls before
 * the failure and the 10 after it. */
SP_TEST(a_kept_run_writes_its_extension_totals_once_for_the_whole_run) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  ASSERT_EQ(sp__ext_register(&tick_ext), 0);
  long n = 600000;
  sp_manager *m = streamed_run_whose_write_fails(n);
  ASSERT_EQ(emits, 1);
  ASSERT_EQ(rmdir("pub.h5"), 0);
  sp_region outer = sp_region_intern("outer");
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, outer);
    sp_region_end(m, outer);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  ASSERT_EQ(emits, 2);
  long long calls_o = h5_attr_i64("pub.h5", "/rank0/test_ticks/outer", "calls");
  long long calls_i = h5_attr_i64("pub.h5", "/rank0/test_ticks/inner", "calls");
  long long ko = 0, ki = 0;
  int64_t *vo = h5_i64("pub.h5", "/rank0/test_ticks/outer/values", &ko);
  int64_t *vi = h5_i64("pub.h5", "/rank0/test_ticks/inner/values", &ki);
  fprintf(stderr, "  written: outer %lld calls, %lld ticks; inner %lld calls, %lld ticks (of %ld + 10, %ld)\n",
          calls_o, vo && ko == 1 ? (long long)vo[0] : -1, calls_i, vi && ki == 1 ? (long long)vi[0] : -1, n, n);
  ASSERT(vo && ko == 1 && vi && ki == 1);
  ASSERT_EQ(calls_o, n + 10);
  ASSERT_EQ(vo[0], n + 10);
  ASSERT_EQ(calls_i, n);
  ASSERT_EQ(vi[0], n);
  ASSERT_EQ(h5_region_events("pub.h5", "outer"), n + 10);
  free(vo);
  free(vi);
}

/* A source: the line profiler's samples, drained and its sampler stopped
 * by the failed finalize, and a record handed in before it; the retry
 * writes both, once each. */
static volatile uint64_t spin_sink;
static void spin_ns(int64_t ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  do {
    for (int i = 0; i < 1000; i++) spin_sink += (uint64_t)i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < ns);
}
SP_TEST(a_kept_run_writes_its_line_profiles_once) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  const char *ov[] = {"file_path=pub.h5", "max_buffer_bytes=16777216", "use_line_profiler=1", "quiet=1", NULL};
  sp__stream_shed_wait_ms = 600000;
  sp_manager *m = sp_manager_create();
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region outer = sp_region_intern("outer"), work = sp_region_intern("work");
  for (long i = 0; i < 600000; i++) {
    sp_region_begin(m, outer);
    sp_region_end(m, outer);
  }
  sp_region_begin(m, work);
  spin_ns(300000000);
  sp_region_end(m, work);
  const int64_t lines[] = {11, 12}, hits[] = {1, 5};
  const double times[] = {100.0, 5000.5};
  sp_line_profile rec = {.region = "work", .filename = "/nonexistent/mod.py", .function = "py_fn",
                         .first_lineno = 10, .unit = 1e-9, .n = 2, .line_numbers = lines, .hits = hits,
                         .times = times};
  ASSERT_OK(sp_manager_add_line_records(m, &rec, 1));
  ASSERT_EQ(mkdir("pub.h5", 0755), 0);
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_IO);
  ASSERT_CONTAINS(sp_last_error(), "The run is kept as it was");
  ASSERT_EQ(rmdir("pub.h5"), 0);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("pub.h5", &r));
  const sp_line_profile *p;
  size_t n;
  ASSERT_OK(sp_results_line_profiles(r, &p, &n));
  int sampled = 0, handed = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(p[i].function, "py_fn")) handed++;
    else if (!strcmp(p[i].region, "work")) sampled++;
  }
  sp_results_free(r);
  long long samples = h5_attr_i64("pub.h5", "/metadata", "line_profile_samples");
  fprintf(stderr, "  written: %zu line records, %d sampled in work, %d handed in; line_profile_samples %lld\n", n,
          sampled, handed, samples);
  ASSERT(samples > 0);
  ASSERT(sampled > 0);
  ASSERT_EQ(handed, 1);
}

/* The failed finalize drained the line samples; the run is kept and goes
 * on recording, and so does its sampler: a region that runs only after
 * the failure has its lines sampled in the retry's file. */
SP_TEST(a_kept_run_samples_the_lines_of_calls_after_the_failed_finalize) {
  unsetenv("SCOPE_PROFILER_CLOCK");
  const char *ov[] = {"file_path=pub.h5", "max_buffer_bytes=16777216", "use_line_profiler=1", "quiet=1", NULL};
  sp__stream_shed_wait_ms = 600000;
  sp_manager *m = sp_manager_create();
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region before = sp_region_intern("before"), late = sp_region_intern("late");
  nested_calls(m, 600000);
  sp_region_begin(m, before);
  spin_ns(300000000);
  sp_region_end(m, before);
  ASSERT_EQ(mkdir("pub.h5", 0755), 0);
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_IO);
  ASSERT_CONTAINS(sp_last_error(), "The run is kept as it was");
  ASSERT_EQ(rmdir("pub.h5"), 0);
  sp_region_begin(m, late);
  spin_ns(300000000);
  sp_region_end(m, late);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("pub.h5", &r));
  const sp_line_profile *p;
  size_t n;
  ASSERT_OK(sp_results_line_profiles(r, &p, &n));
  int64_t hits_before = 0, hits_late = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < p[i].n; j++) {
      if (!strcmp(p[i].region, "before")) hits_before += p[i].hits[j];
      if (!strcmp(p[i].region, "late")) hits_late += p[i].hits[j];
    }
  sp_results_free(r);
  fprintf(stderr, "  written: %zu line records; samples in before %lld, in late (after the failed finalize) %lld\n", n,
          (long long)hits_before, (long long)hits_late);
  ASSERT_GT(hits_before, 0);
  ASSERT_GT(hits_late, 0);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
