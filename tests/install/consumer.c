/* consumer.c - a tiny outside program built against an installed
 * scope-profiler, once through find_package(ScopeProfiler) and once through
 * pkg-config (tests/integration/test_install.sh). */
#include <stdio.h>

#include "scope_profiler.h"

int main(void) {
  sp_setup_args a = {0};
  if (sp_setup(&a) != SP_OK) {
    fprintf(stderr, "setup: %s\n", sp_last_error());
    return 1;
  }
  for (int i = 0; i < 3; i++) {
    SP_REGION("consumer");
  }
  if (sp_finalize(NULL, NULL) != SP_OK) {
    fprintf(stderr, "finalize: %s\n", sp_last_error());
    return 1;
  }
  printf("consumer ok (%s)\n", sp_version_string());
  return 0;
}
