// consumer.cpp - a tiny outside C++ program built against an installed
// scope-profiler through find_package (ScopeProfiler::cxx, ::cxx_mpi) and
// pkg-config (scope_profiler_cxx) by tests/integration/test_install_frontends.sh.
#include <scope_profiler.hpp>

#include <cstdio>

int main() {
  sp::Session session; // settings from SCOPE_PROFILER_* (the file path)
  if (session.status() != SP_OK) {
    std::fprintf(stderr, "setup: %s\n", sp::last_error());
    return 1;
  }
  for (int i = 0; i < 3; i++) {
    SP_PROFILE_SCOPE("consumer");
  }
  if (session.end() != SP_OK) {
    std::fprintf(stderr, "finalize: %s\n", sp::last_error());
    return 1;
  }
  std::printf("consumer_cxx ok (%s)\n", sp_version_string());
  return 0;
}
