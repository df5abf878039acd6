// overhead_cxx.cpp - the C++ front end's loops for bench/overhead.c: the
// same begin/end pair as its C cases, through scope_profiler.hpp, so the
// table shows C++ beside C in one run.
#include <scope_profiler.hpp>

#define BARRIER() __asm__ volatile("" ::: "memory")

extern "C" void bench_cxx_macro(sp_manager *m, long n);
extern "C" void bench_cxx_scope(sp_manager *m, long n);
extern "C" void bench_cxx_runtime_name(sp_manager *m, long n);

// SP_PROFILE_SCOPE_M: a static site per use, as SP_REGION_M in C.
extern "C" void bench_cxx_macro(sp_manager *m, long n) {
  for (long i = 0; i < n; i++) {
    SP_PROFILE_SCOPE_M(m, "bench");
    BARRIER();
  }
}

// An sp::Scope on a handle interned once.
extern "C" void bench_cxx_scope(sp_manager *m, long n) {
  const sp::Region r("bench");
  for (long i = 0; i < n; i++) {
    sp::Scope s(m, r);
    BARRIER();
  }
}

// A name given at run time: interned on every construction.
extern "C" void bench_cxx_runtime_name(sp_manager *m, long n) {
  const std::string name = "bench.interned";
  for (long i = 0; i < n; i++) {
#if __cplusplus >= 201703L
    sp::Scope s(m, std::string_view(name));
#else
    sp::Scope s(m, sp::Region(name));
#endif
    BARRIER();
  }
}
