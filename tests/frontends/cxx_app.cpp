// cxx_app.cpp - the C++ front end under the cases that break naive RAII
// profilers, checked in the process (results in memory, the problem counts)
// and afterwards from the file by h5py (tests/frontends/run.sh cxx):
//
//   exceptions   thrown through 3 nested regions and caught outside, 50
//                times; rethrown from a catch inside a region; scopes ended
//                early with end() before a throw: 0 unmatched ends
//   templates    one SP_PROFILE_FUNCTION per instantiation (3 types), all
//                under the function's name; a class template's member
//   threads      4 std::threads, each with its own nested regions and a
//                throw, on the default manager
//   run time     names built at run time (std::string, std::string_view)
//   managers     an independent sp::Manager recording at the same time, with
//                its results handed back in memory
//   session      sp::Session around it all: the root scope_profiler.session
//
// Usage: cxx_app FILE.h5   (exit 0 when every in-process check held)
#include <scope_profiler.hpp>
#include <scope_profiler/reader.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static int failures = 0;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "cxx_app:%d: check failed: %s\n", __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)

struct boom : std::runtime_error {
  boom() : std::runtime_error("boom") {}
};

static void deepest(int i) {
  SP_PROFILE_SCOPE("deepest");
  if (i >= 0) throw boom();
}
static void middle(int i) {
  SP_PROFILE_FUNCTION(); // "middle"
  SP_PROFILE_SCOPE("middle.inner");
  deepest(i);
}

// Caught inside a region, rethrown from the handler: the handler's scope
// ends during the second unwinding.
static void rethrower() {
  SP_PROFILE_SCOPE("rethrower");
  try {
    middle(1);
  } catch (const boom &) {
    SP_PROFILE_SCOPE("rethrower.handler");
    throw;
  }
}

template <class T> static T accumulate(const std::vector<T> &v) {
  SP_PROFILE_FUNCTION(); // "accumulate" for every T
  T s = T();
  for (const T &x : v) s += x;
  return s;
}

template <class T> struct Grid {
  std::vector<T> cells;
  explicit Grid(std::size_t n) : cells(n, T(1)) {}
  T smooth() {
    SP_PROFILE_SCOPE("Grid.smooth");
    T s = T();
    for (std::size_t i = 1; i + 1 < cells.size(); i++) s += (cells[i - 1] + cells[i + 1]) / T(2);
    return s;
  }
};

static void worker(int id) {
  SP_PROFILE_SCOPE("worker");
  for (int i = 0; i < 100; i++) {
    SP_PROFILE_SCOPE("worker.step");
    if (i % 10 == 0) {
      try {
        middle(id);
      } catch (const boom &) {
      }
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cxx_app FILE.h5\n");
    return 2;
  }
  sp::Manager side; // independent: its own calls, results in memory
  CHECK(side.setup(sp::Settings().set("deactivate_file_output", true)) == SP_OK);
  {
    sp::Session session(sp::Settings().set("file_path", argv[1]).set("track_threads", true));
    CHECK(session.status() == SP_OK);
    if (session.status() != SP_OK) std::fprintf(stderr, "setup: %s\n", sp::last_error());

    int caught = 0;
    for (int i = 0; i < 50; i++) {
      try {
        SP_PROFILE_SCOPE("outer");
        middle(i);
      } catch (const boom &) {
        caught++;
      }
    }
    CHECK(caught == 50);
    try {
      rethrower();
    } catch (const boom &) {
      caught++;
    }
    CHECK(caught == 51);

    // end() early, then leave by an exception: the destructor does nothing.
    try {
      sp::Region early("early");
      sp::Scope s(early);
      CHECK(s.is_open());
      CHECK(s.end() == 0);
      CHECK(!s.is_open());
      throw boom();
    } catch (const boom &) {
    }

    CHECK(accumulate(std::vector<int>{1, 2, 3}) == 6);
    CHECK(accumulate(std::vector<double>{0.5, 0.5}) == 1.0);
    CHECK(accumulate(std::vector<long>{4}) == 4);
    CHECK(Grid<float>(8).smooth() == 6.0f);
    CHECK(Grid<double>(4).smooth() == 2.0);

    for (int i = 0; i < 3; i++) {
      std::string name = "dynamic." + std::to_string(i);
      sp::Scope d(name);
#if __cplusplus >= 201703L
      sp::Scope v(std::string_view(name.data(), 7)); // "dynamic"
#endif
    }

    {
      sp::Region hot("side.hot");
      for (int i = 0; i < 10; i++) {
        sp::Scope s(side, hot);
        SP_PROFILE_SCOPE_M(side.get(), "side.macro");
      }
      CHECK(side.num_calls(hot) == 10);
    }

    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) threads.emplace_back(worker, t);
    for (std::thread &t : threads) t.join();

    sp_problem_counts p = sp_manager_problems(SP_DEFAULT);
    CHECK(p.unmatched_ends == 0);
    CHECK(p.invalid_regions == 0);
    CHECK(p.dropped_events == 0);
    CHECK(session.end() == SP_OK);
  }

  sp::Results res;
  CHECK(side.finalize(res) == SP_OK);
  CHECK(res);
  if (res) {
    std::size_t region = 0;
    CHECK(sp_results_find_region(res.get(), "side.hot", &region) == SP_OK);
    CHECK(sp_results_find_region(res.get(), "side.macro", &region) == SP_OK);
    CHECK(sp_results_find_region(res.get(), "outer", &region) != SP_OK); // the default manager's
  }
  CHECK(side.problems().unmatched_ends == 0);
  if (failures) std::fprintf(stderr, "cxx_app: %d checks failed\n", failures);
  return failures ? 1 : 0;
}
