/* test-reader-clock.c - the reader puts every rank's times on rank 0's clock
 * using the per-rank offsets MPI runs store in /ranks/clock_offsets_ns. */
#include <stdlib.h>

#include "harness.h"
#include "scope_profiler/reader.h"
#include "scope_profiler/results.h"

/* Two ranks, one region each with one call; rank 1's clock runs 1000 ns
 * behind rank 0's, so +1000 aligns it. */
static const char make[] =
    SP_TEST_PYTHON " - <<'PY'\n"
    "import h5py, numpy as np\n"
    "f = h5py.File('clock.h5', 'w')\n"
    "f.attrs['scope_profiler_schema'] = np.int64(2)\n"
    "f.attrs['storage_layout'] = 'columnar'\n"
    "f.create_group('metadata').attrs['mpi_size'] = np.int64(2)\n"
    "s = h5py.string_dtype()\n"
    "f['region_table/names'] = np.array(['work'], dtype=object).astype(s)\n"
    "g = f.create_group('rank_region_index')\n"
    "g['region_ids'] = np.array([0, 0], np.uint32)\n"
    "g['ranks'] = np.array([0, 1], np.uint32)\n"
    "g['event_offsets'] = np.array([0, 1], np.uint64)\n"
    "g['event_counts'] = np.array([1, 1], np.uint64)\n"
    "g['source_lines'] = np.array([-1, -1], np.int64)\n"
    "g['exclusive_totals'] = np.array([-1, -1], np.int64)\n"
    "for k in ('source_files', 'source_texts'): g[k] = np.array(['', ''], dtype=object).astype(s)\n"
    "g['tags'] = np.array(['[]', '[]'], dtype=object).astype(s)\n"
    "dt = np.dtype([('total','<i8'),('minimum','<i8'),('maximum','<i8'),('first','<i8'),('last','<i8'),"
    "('start_minimum','<i8'),('end_maximum','<i8'),('gpu_count','<u8'),('gpu_total','<i8'),('mean','<f8'),('m2','<f8')])\n"
    "g['summary_statistics'] = np.array([(100,100,100,100,100,5000,5100,0,0,100.0,0.0),"
    "(50,50,50,50,50,4500,4550,0,0,50.0,0.0)], dtype=dt)\n"
    "e = f.create_group('events')\n"
    "e['start_times'] = np.array([5000, 4500], np.int64)\n"
    "e['end_times'] = np.array([5100, 4550], np.int64)\n"
    "e['call_ids'] = np.array([0, 0], np.int64)\n"
    "e['parent_ids'] = np.array([-1, -1], np.int64)\n"
    "f['ranks/clock_offsets_ns'] = np.array([0, 1000], np.int64)\n"
    "f.close()\n"
    "PY";

SP_TEST(ranks_aligned_on_rank0_clock) {
  if (sp_test_sh("\"" SP_TEST_PYTHON "\" -c 'import h5py' 2>/dev/null") != 0) SKIP("python3-h5py missing");
  ASSERT_EQ(sp_test_sh(make), 0);
  sp_results *r = NULL;
  ASSERT_OK(sp_results_open("clock.h5", &r));
  sp_events ev;
  ASSERT_OK(sp_results_events(r, 0, 1, &ev));
  ASSERT_EQ(ev.count, 1);
  ASSERT_EQ(ev.start_ns[0], 5500); /* 4500 on rank 1's clock */
  ASSERT_EQ(ev.end_ns[0], 5550);
  sp_events_free(&ev);
  ASSERT_OK(sp_results_events(r, 0, 0, &ev));
  ASSERT_EQ(ev.start_ns[0], 5000); /* rank 0 is the reference */
  sp_events_free(&ev);
  int64_t first;
  ASSERT_OK(sp_results_min_start(r, &first));
  ASSERT_EQ(first, 5000); /* not 4500: rank 1 started later once aligned */
  sp_region_stats st;
  ASSERT_OK(sp_results_region_stats(r, 0, NULL, 0, &st));
  ASSERT_EQ(st.first_start_ns, 5000);
  ASSERT_EQ(st.last_end_ns, 5550);
  ASSERT_EQ(st.total_ns, 150); /* durations unchanged */
  sp_results_free(r);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
