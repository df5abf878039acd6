// mixed_main.cpp - C++, Fortran and C recording into one manager, one
// process, one file (tests/frontends/run.sh mixed): the C++ driver calls a
// Fortran kernel (mixed_kernel.f90, bind(C)), which calls a C helper
// (mixed_helper.c), which calls back into C++; each opens regions with its
// own front end, nested across the languages:
//   driver (C++) > fortran.kernel (Fortran) > c.helper (C) > cxx.leaf (C++)
// and "shared" is begun by name in Fortran and ended by handle in C: one
// name is one region whatever the language.
//
// Usage: mixed FILE.h5
#include <scope_profiler.hpp>

#include <cstdio>

extern "C" void mixed_fortran_kernel(int steps); // mixed_kernel.f90
extern "C" int mixed_c_shared_end(void);         // mixed_helper.c

extern "C" void mixed_cxx_leaf(void) { SP_PROFILE_SCOPE("cxx.leaf"); }

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  sp::Session session(sp::Settings().set("file_path", argv[1]));
  if (session.status() != SP_OK) {
    std::fprintf(stderr, "mixed: setup: %s\n", sp::last_error());
    return 1;
  }
  for (int i = 0; i < 3; i++) {
    SP_PROFILE_SCOPE("driver");
    mixed_fortran_kernel(2);
  }
  sp_problem_counts p = sp_manager_problems(SP_DEFAULT);
  if (p.unmatched_ends || p.invalid_regions) {
    std::fprintf(stderr, "mixed: %llu unmatched ends, %llu invalid handles\n",
                 (unsigned long long)p.unmatched_ends, (unsigned long long)p.invalid_regions);
    return 1;
  }
  return session.end() == SP_OK ? 0 : 1;
}
