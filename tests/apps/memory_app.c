/* memory_app.c - a program for the memory capture tests: under
 * LD_PRELOAD=libscope_profiler_memory.so it starts a capture through the
 * interposer's API table (found with dlsym, so the program links nothing of
 * it), allocates known sizes in two named regions, leaks one block at a
 * known line (leak_here), and stops. Usage: app-memory_app CAPTURE [native]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler/memory.h"

static void *kept;

__attribute__((noinline)) static void leak_here(void) {
  kept = malloc(5000); /* the leak the tests look for */
  memset(kept, 0, 8);
}

__attribute__((noinline)) static void solve(void) {
  void *v[100];
  for (int i = 0; i < 100; i++) v[i] = malloc(1024); /* the peak */
  for (int i = 0; i < 100; i++) free(v[i]);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: app-memory_app CAPTURE [native]\n");
    return 2;
  }
  const struct sp_memory_api *api = dlsym(RTLD_DEFAULT, "sp_memory_api_v1");
  if (!api) {
    fprintf(stderr, "app-memory_app: run me under LD_PRELOAD=libscope_profiler_memory.so\n");
    return 2;
  }
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  o.path = argv[1];
  o.native_traces = argc > 2 && !strcmp(argv[2], "native");
  if (api->start(&o)) {
    fprintf(stderr, "app-memory_app: %s\n", api->error());
    return 1;
  }
  api->region_name(1, "solve");
  api->region_name(2, "io");
  struct sp_memory_counters *c = api->thread_counters();
  c->region = 1;
  solve();
  c->region = 2;
  leak_here();
  c->region = 0;
  return api->stop(NULL) ? 1 : 0;
}
