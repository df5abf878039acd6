// use_all.cpp - every public header, scope_profiler.hpp and its macros in one
// translation unit, compiled by tests/headers/check.sh with g++ and clang++
// in C++11, 14, 17 and 20 with -Wall -Wextra -Wpedantic -Werror, profiling on
// and compiled out (-DSP_DISABLE_PROFILING, linked without the library).
#include <scope_profiler.hpp>
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

#include <string>

template <class T> static T twice(T v) {
  SP_PROFILE_FUNCTION();
  return v + v;
}

static int c_macros(int x) {
  SP_FUNCTION();
  { SP_REGION("use_all.c_region"); }
  return SP_CALL("use_all.c_call", x + 1);
}

int main() {
  // in every standard mode: SP_OPTIONS_INIT is an inline function's result in C++, not designated initialisers
  sp_options o = SP_OPTIONS_INIT;
  (void)o;
  int x = 0;
  {
    sp::Session session(sp::Settings().set("deactivate_file_output", true).set("buffer_limit", 1000));
    SP_PROFILE_SCOPE("use_all.scope");
    SP_PROFILE_SCOPE_TAGS("use_all.tagged", "headers");
    sp::Region r("use_all.handle");
    { sp::Scope a(r); }
    { sp::Scope b(std::string("use_all.") + "dynamic"); }
#if __cplusplus >= 201703L
    { sp::Scope c(std::string_view("use_all.view")); }
#endif
    x = twice(1) + static_cast<int>(twice(1.0)) + c_macros(0);
    if (session.status() != SP_OK) x = -1;
  }
  sp::Manager m;
  m.setup(sp::Settings().set("deactivate_file_output", true));
  { SP_PROFILE_SCOPE_M(m.get(), "use_all.other"); }
  sp::Results res;
  m.finalize(res);
  return x == 5 ? 0 : 1;
}
