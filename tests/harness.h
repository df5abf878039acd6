/* tests/harness.h - the unit-test harness: SP_TEST cases, typed asserts, and
 * a runner that executes every case in its own forked process with a timeout
 * and prints TAP. One test file is one executable; CTest runs each.
 *
 *   SP_TEST(name) { ASSERT_EQ(1, 1); }
 *   int main(int argc, char **argv) { return sp_test_main(argc, argv); }
 *
 * Run one case: ./test-core name. Timeout: 180 s x SP_TEST_TIMEOUT_MULTIPLIER
 * (a hang detector: the slowest case takes ~9 s alone and ~70 s on a
 * loaded two-core machine; CTest gives each executable 600 s).
 * Each case runs in a fresh temporary working directory, $TMPDIR/sp-test-*
 * (/tmp without TMPDIR), which the runner removes once the case has ended,
 * however it ended. A failed case leaves its small files there for a look
 * (the runner says where); files over 1 MiB go (a streaming case writes
 * hundreds of MiB, and failures must not fill the disk).
 */
#ifndef SP_TEST_HARNESS_H
#define SP_TEST_HARNESS_H

#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*sp_test_fn)(void);
struct sp_test_case { const char *name; sp_test_fn fn; };

#define SP_TEST_MAX 512
static struct sp_test_case sp_test_cases[SP_TEST_MAX];
static int sp_test_count;

#define SP_TEST(name)                                                         \
  static void sp_test_##name(void);                                           \
  __attribute__((constructor)) static void sp_test_register_##name(void) {    \
    if (sp_test_count < SP_TEST_MAX)                                          \
      sp_test_cases[sp_test_count++] = (struct sp_test_case){#name, sp_test_##name}; \
  }                                                                           \
  static void sp_test_##name(void)

#define SP_FAIL_(...)                                                         \
  do {                                                                        \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                         \
    fprintf(stderr, __VA_ARGS__);                                             \
    fprintf(stderr, "\n");                                                    \
    fflush(stderr);                                                           \
    _exit(1);                                                                 \
  } while (0)

#define ASSERT(c) do { if (!(c)) SP_FAIL_("assertion failed: %s", #c); } while (0)
#define ASSERT_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) SP_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_NE(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ == b_) SP_FAIL_("%s != %s: both %lld", #a, #b, a_); } while (0)
#define ASSERT_GT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ > b_)) SP_FAIL_("%s > %s: %lld <= %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_GE(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ >= b_)) SP_FAIL_("%s >= %s: %lld < %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_LT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ < b_)) SP_FAIL_("%s < %s: %lld >= %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_LE(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ <= b_)) SP_FAIL_("%s <= %s: %lld > %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_OK(s) do { long long s_ = (long long)(s); \
    if (s_ != 0) SP_FAIL_("%s: status %lld (%s)", #s, s_, sp_test_last_error()); } while (0)
#define ASSERT_STR_EQ(a, b) do { const char *a_ = (a), *b_ = (b); \
    if (!a_ || !b_ || strcmp(a_, b_) != 0) SP_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } while (0)
#define ASSERT_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); \
    if (!h_ || !strstr(h_, n_)) SP_FAIL_("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_); } while (0)
#define ASSERT_NEAR(a, b, tol) do { double a_ = (double)(a), b_ = (double)(b); \
    if (!(a_ - b_ <= (tol) && b_ - a_ <= (tol))) SP_FAIL_("%s ~= %s: %g vs %g (tol %g)", #a, #b, a_, b_, (double)(tol)); } while (0)
#define SKIP(...) do { fprintf(stderr, "  skip: " __VA_ARGS__); fprintf(stderr, "\n"); _exit(77); } while (0)

/* Tests that link the library get its message; others see "". */
__attribute__((weak)) const char *sp_last_error(void);
static inline const char *sp_test_last_error(void) { return sp_last_error ? sp_last_error() : ""; }

static inline int sp_test_file_exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

/* The next number of a seeded sequence (splitmix64): synthetic inputs that
 * are the same on every run and every machine. */
static inline uint64_t sp_test_splitmix(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Run a shell command, return its exit status (or -1). */
static inline int sp_test_sh(const char *cmd) {
  int rc = system(cmd);
  if (rc == -1 || !WIFEXITED(rc)) return -1;
  return WEXITSTATUS(rc);
}

/* The case's directory once it has ended: removed after a pass or a skip;
 * after a failure only its files over 1 MiB are removed, and it is named. */
static void sp_test_clean(const char *dir, int failed) {
  char cmd[4200];
  if (!failed)
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s' 2>/dev/null", dir);
  else
    snprintf(cmd, sizeof cmd, "find '%s' -type f -size +1024k -delete 2>/dev/null", dir);
  if (sp_test_sh(cmd) < 0) { /* best effort */ }
  if (failed) fprintf(stderr, "  its directory: %s (files over 1 MiB removed)\n", dir);
}

static int sp_test_run_one(const struct sp_test_case *tc, unsigned timeout) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/sp-test-XXXXXX", tmp && *tmp && !strchr(tmp, '\'') ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "  cannot create a directory for the case (%s): is TMPDIR writable?\n", dir);
    return 1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    sp_test_clean(dir, 0);
    return 1;
  }
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(2);
    alarm(timeout);
    tc->fn();
    fflush(stdout);
    fflush(stderr);
    _exit(0);
  }
  int st = 0, rc;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) {
    rc = WEXITSTATUS(st);
  } else {
    fprintf(stderr, "  killed by signal %d%s\n", WTERMSIG(st), WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
    rc = 1;
  }
  sp_test_clean(dir, rc != 0 && rc != 77);
  return rc;
}

static inline int sp_test_main(int argc, char **argv) {
  unsigned timeout = 180;
  const char *mul = getenv("SP_TEST_TIMEOUT_MULTIPLIER");
  if (mul && atoi(mul) > 0) timeout *= (unsigned)atoi(mul);
  int selected = 0, failed = 0, skipped = 0;
  for (int i = 0; i < sp_test_count; i++)
    if (argc < 2 || strcmp(argv[1], sp_test_cases[i].name) == 0) selected++;
  printf("1..%d\n", selected);
  int k = 0;
  for (int i = 0; i < sp_test_count; i++) {
    if (argc >= 2 && strcmp(argv[1], sp_test_cases[i].name) != 0) continue;
    int rc = sp_test_run_one(&sp_test_cases[i], timeout);
    k++;
    if (rc == 77) { printf("ok %d - %s # SKIP\n", k, sp_test_cases[i].name); skipped++; }
    else if (rc == 0) printf("ok %d - %s\n", k, sp_test_cases[i].name);
    else { printf("not ok %d - %s\n", k, sp_test_cases[i].name); failed++; }
    fflush(stdout);
  }
  if (argc >= 2 && selected == 0) { fprintf(stderr, "no test named %s\n", argv[1]); return 2; }
  printf("# %d passed, %d failed, %d skipped\n", selected - failed - skipped, failed, skipped);
  return failed ? 1 : 0;
}

#endif
