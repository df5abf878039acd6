/* readme.c - the program of the README's "Using it" section, as a user
 * writes it: a session with no setup arguments (so the settings come from
 * the environment), regions, and no look at any status. The CLI tests of
 * tests/cli/setup/ run it with bad or unavailable settings to check that a
 * setup problem is said on stderr rather than silently losing the profile.
 */
#include "scope_profiler.h"

static double solve(int n) {
  SP_FUNCTION();
  volatile double x = 0;
  for (int i = 0; i < 1000 * (n + 1); i++) x += i * 0.5;
  return x;
}

int main(void) {
  sp_finalize_args fin = {.verbose = 1};
  SP_SESSION(s, NULL, &fin, NULL) {
    for (int step = 0; step < 10; step++) {
      SP_REGION("step");
      solve(step);
    }
  }
  return 0;
}
