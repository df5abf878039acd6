/* test-budget.c - a streamed run stays within its memory budget
 * (max_buffer_bytes): the peak resident memory a run adds over what the
 * process held after setup, measured (VmHWM against VmRSS in
 * /proc/self/status), with a margin, never a time. Four threads recording
 * at once, with buffer_limit (each thread's first buffer) at 2^20 events:
 * taken whole, those first buffers were 96 MiB of a 64 MiB budget before
 * any of them streamed. Each case runs in a child of its own, so that the
 * peak is this run's. Skipped under AddressSanitizer and ThreadSanitizer
 * (their shadow memory is resident too).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "h5util.h"
#include "harness.h"
#include "scope_profiler.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SP_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SP_TEST_SANITIZED 1
#endif
#endif

#define BUDGET_MIB 64
#define THREADS 4
#define EVENTS 6000000L

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, n)) v = atol(line + n);
  if (f) fclose(f);
  return v;
}

static sp_manager *m;
static sp_region regs[16];
static void *record(void *arg) {
  (void)arg;
  for (long i = 0; i < EVENTS / THREADS; i += 16) {
    sp_region_begin(m, regs[0]);
    for (int k = 1; k < 16; k++) {
      sp_region_begin(m, regs[k]);
      sp_region_end(m, regs[k]);
    }
    sp_region_end(m, regs[0]);
  }
  return NULL;
}

/* Peaks (KiB over the RSS after setup) of recording and of the whole run
 * through finalize, from a child. */
static void peaks(const char *buffer_limit, long *rec_kib, long *all_kib) {
  int fd[2];
  ASSERT(pipe(fd) == 0);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    char mb[64];
    snprintf(mb, sizeof mb, "max_buffer_bytes=%d", BUDGET_MIB << 20);
    const char *ov[] = {"file_path=budget.h5", mb, buffer_limit, NULL};
    m = sp_manager_create();
    if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) _exit(3);
    for (int i = 0; i < 16; i++) {
      char name[16];
      snprintf(name, sizeof name, "r%02d", i);
      regs[i] = sp_region_intern(name);
    }
    long base = status_kib("VmRSS:");
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
      if (pthread_create(&th[i], NULL, record, NULL) != 0) _exit(4);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    long v[2] = {status_kib("VmHWM:") - base, 0};
    if (sp_manager_finalize(m, NULL, NULL) != SP_OK) _exit(5);
    v[1] = status_kib("VmHWM:") - base;
    if (write(fd[1], v, sizeof v) != (ssize_t)sizeof v) _exit(6);
    _exit(0);
  }
  close(fd[1]);
  long v[2] = {-1, -1};
  ssize_t got = read(fd[0], v, sizeof v);
  close(fd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0 && got == (ssize_t)sizeof v);
  *rec_kib = v[0];
  *all_kib = v[1];
  /* it did stream, and lost nothing */
  ASSERT_GE(h5_attr_i64("budget.h5", "/metadata", "streamed_blocks"), 2);
  ASSERT_EQ(h5_region_events("budget.h5", "r00"), EVENTS / THREADS / 16 * THREADS);
}

/* Recording within the budget plus a quarter (the allocator's slack, the
 * writer's HDF5 state); through finalize, plus the write-behind buffer of
 * the file written around the page cache (32 MiB, h5direct.c). */
static void within_budget(const char *buffer_limit) {
#ifdef SP_TEST_SANITIZED
  SKIP("resident memory under a sanitizer (its shadow memory) is not the run's");
#endif
  long rec = 0, all = 0;
  peaks(buffer_limit, &rec, &all);
  fprintf(stderr, "  %s: recording peak +%.1f MiB, through finalize +%.1f MiB, budget %d MiB\n",
          buffer_limit ? buffer_limit : "default buffer_limit", rec / 1024.0, all / 1024.0, BUDGET_MIB);
  if (rec > BUDGET_MIB * 1024L * 5 / 4)
    SP_FAIL_("recording took %.1f MiB over setup, budget %d MiB (+25%%)", rec / 1024.0, BUDGET_MIB);
  if (all > BUDGET_MIB * 1024L * 5 / 4 + 32 * 1024L)
    SP_FAIL_("the run took %.1f MiB through finalize, budget %d MiB (+25%%, +32 MiB write-behind)", all / 1024.0,
             BUDGET_MIB);
}

SP_TEST(four_threads_with_large_first_buffers_stay_within_the_budget) { within_budget("buffer_limit=1048576"); }

SP_TEST(four_threads_growing_their_buffers_stay_within_the_budget) { within_budget(NULL); }

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
