/* use_all.c - every public header and every macro of the C API in one
 * translation unit, compiled by tests/headers/check.sh in each strict and GNU
 * standard mode with -Wall -Wextra -Wpedantic -Werror, profiling on and
 * compiled out (-DSP_DISABLE). It is run too: the regions must be recorded
 * (or, compiled out, the program must link without the library). */
#include <scope_profiler.h>
#include <scope_profiler/config.h>
#include <scope_profiler/detail.h>
#include <scope_profiler/export.h>
#include <scope_profiler/gpu.h>
#include <scope_profiler/memory.h>
#include <scope_profiler/mpi.h>
#include <scope_profiler/reader.h>
#include <scope_profiler/results.h>
#include <scope_profiler/settings.h>
#include <scope_profiler/status.h>

static int work(int x) {
  SP_FUNCTION();
  {
    SP_REGION("use_all.inner");
    x += 1;
  }
  {
    SP_REGION_TAGS("use_all.tagged", "headers");
    x += 1;
  }
  return SP_CALL("use_all.call", x + 1);
}

int main(void) {
  sp_options o = SP_OPTIONS_INIT;
  (void)o;
  int x = 0;
  SP_SESSION(s, NULL, NULL, NULL) {
    sp_region r = sp_region_intern("use_all.handle");
    sp_begin(r);
    sp_end(r);
    sp_scope sc = sp_scope_begin(SP_DEFAULT, r);
    sp_scope_end(&sc);
    x = work(1);
  }
  return x == 4 ? 0 : 1;
}
