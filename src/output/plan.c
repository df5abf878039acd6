/* plan.c - the dataset plan's table (plan.h): upstream scope-profiler's
 * schema 2/3 layout, columnar and aggregate, with our additions marked, and
 * the declarations extensions add at setup.
 *
 * Built-in entries are a constant table indexed by enum sp_ds_id. Extension
 * columns and rank groups go into fixed-size arrays under a lock; an entry
 * is complete before the count that publishes it grows, so lookups by id
 * need no lock (entries never move or change once published).
 */
#include "output/plan.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

#define COL (SP_W_SCHEMAS | SP_W_COLUMNAR)                    /* columnar only */
#define SKEL (SP_W_SCHEMAS | SP_W_COLUMNAR | SP_W_EMPTY_AGG)   /* columnar; empty in aggregate */
#define BOTH (SP_W_SCHEMAS | SP_W_COLUMNAR | SP_W_AGGREGATE)  /* rows in both layouts */
#define AGG (SP_W_SCHEMAS | SP_W_AGGREGATE)                   /* aggregate only */
#define TBL (SP_W_SCHEMAS | SP_W_COLUMNAR | SP_W_AGGREGATE | SP_W_RECORDED)
#define R SP_W_REQUIRED

static const struct sp_plan_ds builtin[SP_DS_NBUILTIN] = {
    [SP_DS_NAMES] = {SP_GRP_REGION_TABLE, "names", SP_DT_STR, SP_LEN_NAMES, BOTH | R, SP_CODE_PLAIN, 0, "",
                     "region name of each region id (position); verbatim, a `/` stays part of the name"},

    [SP_DS_REGION_IDS] = {SP_GRP_INDEX, "region_ids", SP_DT_U32, SP_LEN_ROWS, BOTH | R, SP_CODE_PLAIN, 0, "",
                          "index into `/region_table/names`"},
    [SP_DS_RANKS] = {SP_GRP_INDEX, "ranks", SP_DT_U32, SP_LEN_ROWS, BOTH | R, SP_CODE_PLAIN, 0, "",
                     "MPI rank of the row (0 without MPI)"},
    [SP_DS_EVENT_OFFSETS] = {SP_GRP_INDEX, "event_offsets", SP_DT_U64, SP_LEN_ROWS, SKEL | R, SP_CODE_PLAIN, 0, "",
                             "first event of the row in `/events/*`"},
    [SP_DS_EVENT_COUNTS] = {SP_GRP_INDEX, "event_counts", SP_DT_U64, SP_LEN_ROWS, SKEL | R, SP_CODE_PLAIN, 0, "",
                            "number of events (calls) of the row"},
    [SP_DS_SOURCE_LINES] = {SP_GRP_INDEX, "source_lines", SP_DT_I64, SP_LEN_ROWS, SKEL, SP_CODE_PLAIN, -1, "",
                            "line of the region's definition; `-1` unknown"},
    [SP_DS_EXCLUSIVE_TOTALS] = {SP_GRP_INDEX, "exclusive_totals", SP_DT_I64, SP_LEN_ROWS, SKEL, SP_CODE_PLAIN, -1,
                                "ns", "sum over the row's calls of duration minus direct children's durations; `-1` not computed"},
    [SP_DS_SOURCE_FILES] = {SP_GRP_INDEX, "source_files", SP_DT_STR, SP_LEN_ROWS, SKEL, SP_CODE_PLAIN, 0, "",
                            "defining file; `\"\"` unknown"},
    [SP_DS_SOURCE_TEXTS] = {SP_GRP_INDEX, "source_texts", SP_DT_STR, SP_LEN_ROWS, SKEL, SP_CODE_PLAIN, 0, "",
                            "captured source text (`capture_region_source`); `\"\"` none"},
    [SP_DS_TAGS] = {SP_GRP_INDEX, "tags", SP_DT_STR, SP_LEN_ROWS, SKEL, SP_CODE_PLAIN, 0, "",
                    "JSON list of the region's tags, e.g. `[\"solver\", \"mpi\"]`; `[]` none"},
    [SP_DS_SUMMARY] = {SP_GRP_INDEX, "summary_statistics", SP_DT_SUMMARY, SP_LEN_ROWS, SKEL, SP_CODE_PLAIN, 0, "ns",
                       "the row's statistics, 11 fields (below)"},
    [SP_DS_AGG_COUNTS] = {SP_GRP_INDEX, "aggregate_counts", SP_DT_U64, SP_LEN_ROWS, AGG | R, SP_CODE_PLAIN, 0, "",
                          "calls of the row (aggregate layout)"},
    [SP_DS_AGG_TOTALS] = {SP_GRP_INDEX, "aggregate_totals", SP_DT_I64, SP_LEN_ROWS, AGG | R, SP_CODE_PLAIN, 0, "ns",
                          "sum of the row's durations (aggregate layout)"},
    [SP_DS_AGG_MINIMUMS] = {SP_GRP_INDEX, "aggregate_minimums", SP_DT_I64, SP_LEN_ROWS, AGG | R, SP_CODE_PLAIN, 0,
                            "ns", "shortest call (aggregate layout)"},
    [SP_DS_AGG_MAXIMUMS] = {SP_GRP_INDEX, "aggregate_maximums", SP_DT_I64, SP_LEN_ROWS, AGG | R, SP_CODE_PLAIN, 0,
                            "ns", "longest call (aggregate layout)"},
    [SP_DS_AGG_EXCLUSIVES] = {SP_GRP_INDEX, "aggregate_exclusives", SP_DT_I64, SP_LEN_ROWS, AGG | R, SP_CODE_PLAIN, 0,
                              "ns", "exclusive total (aggregate layout)"},
    [SP_DS_AGG_STATISTICS] = {SP_GRP_INDEX, "aggregate_statistics", SP_DT_SUMMARY, SP_LEN_ROWS, AGG | SP_W_OURS,
                              SP_CODE_PLAIN, 0, "ns",
                              "the row's full statistics (mean, m2, first, last, ...), as `summary_statistics`"},
    [SP_DS_AGG_SOURCE_FILES] = {SP_GRP_INDEX, "aggregate_source_files", SP_DT_STR, SP_LEN_ROWS, AGG | SP_W_OURS,
                                SP_CODE_PLAIN, 0, "", "as `source_files`, for the aggregate rows"},
    [SP_DS_AGG_SOURCE_LINES] = {SP_GRP_INDEX, "aggregate_source_lines", SP_DT_I64, SP_LEN_ROWS, AGG | SP_W_OURS,
                                SP_CODE_PLAIN, -1, "", "as `source_lines`, for the aggregate rows"},
    [SP_DS_AGG_SOURCE_TEXTS] = {SP_GRP_INDEX, "aggregate_source_texts", SP_DT_STR, SP_LEN_ROWS, AGG | SP_W_OURS,
                                SP_CODE_PLAIN, 0, "", "as `source_texts`, for the aggregate rows"},
    [SP_DS_AGG_TAGS] = {SP_GRP_INDEX, "aggregate_tags", SP_DT_STR, SP_LEN_ROWS, AGG | SP_W_OURS, SP_CODE_PLAIN, 0, "",
                        "as `tags`, for the aggregate rows"},

    [SP_DS_START_DELTAS] = {SP_GRP_EVENTS, "start_deltas", SP_DT_I64, SP_LEN_EVENTS,
                            SP_W_SCHEMA3 | SP_W_COLUMNAR | SP_W_EMPTY_AGG | R, SP_CODE_ROW_DELTA, 0, "ns",
                            "schema 3: a row's first start, then each start minus the previous one of the row"},
    [SP_DS_DURATIONS] = {SP_GRP_EVENTS, "durations", SP_DT_I64, SP_LEN_EVENTS,
                         SP_W_SCHEMA3 | SP_W_COLUMNAR | SP_W_EMPTY_AGG | R, SP_CODE_DURATION, 0, "ns",
                         "schema 3: end minus start"},
    [SP_DS_START_TIMES] = {SP_GRP_EVENTS, "start_times", SP_DT_I64, SP_LEN_EVENTS,
                           SP_W_SCHEMA2 | SP_W_COLUMNAR | SP_W_EMPTY_AGG | R, SP_CODE_PLAIN, 0, "ns",
                           "schema 2: start, CLOCK_MONOTONIC ns"},
    [SP_DS_END_TIMES] = {SP_GRP_EVENTS, "end_times", SP_DT_I64, SP_LEN_EVENTS,
                         SP_W_SCHEMA2 | SP_W_COLUMNAR | SP_W_EMPTY_AGG | R, SP_CODE_PLAIN, 0, "ns",
                         "schema 2: end, CLOCK_MONOTONIC ns"},
    [SP_DS_GPU_DURATIONS] = {SP_GRP_EVENTS, SP_PLAN_GPU_DURATIONS, SP_DT_I64, SP_LEN_EVENTS, COL | SP_W_RECORDED,
                             SP_CODE_PLAIN, -1, "ns", "device time of the call (`use_gpu_timing`, docs/gpu.md); `-1` none; absent when no "
                             "rank had a usable GPU backend; feeds `gpu_count`/`gpu_total` of the summary"},
    [SP_DS_CALL_IDS] = {SP_GRP_EVENTS, "call_ids", SP_DT_I64, SP_LEN_EVENTS, COL | SP_W_RECORDED, SP_CODE_PLAIN, -1,
                        "", "id of the call, unique per rank (exact nesting was recorded)"},
    [SP_DS_PARENT_IDS] = {SP_GRP_EVENTS, "parent_ids", SP_DT_I64, SP_LEN_EVENTS, COL | SP_W_RECORDED, SP_CODE_PLAIN,
                          -1, "", "call id of the enclosing call on the same thread and task; `-1` a root"},
    [SP_DS_THREAD_IDS] = {SP_GRP_EVENTS, "thread_ids", SP_DT_I64, SP_LEN_EVENTS, COL | SP_W_RECORDED, SP_CODE_PLAIN,
                          -1, "", "`track_threads`, or calls of several threads: the thread's `index` in `/thread_table`; `-1` unknown"},
    [SP_DS_TASK_IDS] = {SP_GRP_EVENTS, SP_PLAN_TASK_IDS, SP_DT_I64, SP_LEN_EVENTS, COL | SP_W_RECORDED, SP_CODE_PLAIN, -1,
                        "", "`track_async`: the task's `index` in `/task_table`; `-1` outside a task"},
    [SP_DS_AWAIT_NS] = {SP_GRP_EVENTS, SP_PLAN_AWAIT_NS, SP_DT_I64, SP_LEN_EVENTS, COL | SP_W_RECORDED, SP_CODE_PLAIN, 0,
                        "ns", "`track_async`: time the call's task was switched out while the call was open"},

    [SP_DS_THR_RANKS] = {SP_GRP_THREAD_TABLE, "ranks", SP_DT_U32, SP_LEN_TABLE, TBL | R, SP_CODE_PLAIN, 0, "",
                         "owning rank"},
    [SP_DS_THR_INDEX] = {SP_GRP_THREAD_TABLE, "index", SP_DT_I64, SP_LEN_TABLE, TBL | R, SP_CODE_PLAIN, -1, "",
                         "dense per-rank thread index, what `events/thread_ids` stores"},
    [SP_DS_THR_IDENT] = {SP_GRP_THREAD_TABLE, "ident", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                         "`pthread_self()` of the thread (what Python's `threading.get_ident()` returns); 0 none"},
    [SP_DS_THR_NATIVE_ID] = {SP_GRP_THREAD_TABLE, "native_id", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                             "OS thread id (`gettid()`); 0 none"},
    [SP_DS_THR_DAEMON] = {SP_GRP_THREAD_TABLE, "daemon", SP_DT_I8, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                          "0/1; C threads are never daemons (0)"},
    [SP_DS_THR_START_NS] = {SP_GRP_THREAD_TABLE, "start_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_RELATIVE_NS, -1,
                            "ns", "first activity, relative to the rank's `start_time_ns`"},
    [SP_DS_THR_END_NS] = {SP_GRP_THREAD_TABLE, "end_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_RELATIVE_NS, -1, "ns",
                          "thread exit, relative; `-1` still alive at finalize"},
    [SP_DS_THR_CPU_NS] = {SP_GRP_THREAD_TABLE, "cpu_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, -1, "ns",
                          "CPU time of the thread, read on it at exit; `-1` while it lives"},
    [SP_DS_THR_NAME] = {SP_GRP_THREAD_TABLE, "name", SP_DT_STR, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                        "thread name (`pthread_getname_np`)"},
    [SP_DS_THR_OMP_THREAD] = {SP_GRP_THREAD_TABLE, "omp_thread", SP_DT_I64, SP_LEN_TABLE, TBL | SP_W_OURS,
                              SP_CODE_PLAIN, -1, "",
                              "OpenMP thread number at registration; `-1` outside a parallel region"},

    [SP_DS_TASK_RANKS] = {SP_GRP_TASK_TABLE, "ranks", SP_DT_U32, SP_LEN_TABLE, TBL | R, SP_CODE_PLAIN, 0, "",
                          "owning rank"},
    [SP_DS_TASK_INDEX] = {SP_GRP_TASK_TABLE, "index", SP_DT_I64, SP_LEN_TABLE, TBL | R, SP_CODE_PLAIN, -1, "",
                          "dense per-rank task index, what `events/task_ids` stores"},
    [SP_DS_TASK_THREAD_INDEX] = {SP_GRP_TASK_TABLE, "thread_index", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, -1,
                                 "", "thread that last ran a step of the task"},
    [SP_DS_TASK_CREATED_NS] = {SP_GRP_TASK_TABLE, "created_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_RELATIVE_NS,
                               -1, "ns", "first switch to the task, relative to the rank's `start_time_ns`"},
    [SP_DS_TASK_DONE_NS] = {SP_GRP_TASK_TABLE, "done_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_RELATIVE_NS, -1,
                            "ns", "end of the task (`sp_task_done`), relative; `-1` not finished"},
    [SP_DS_TASK_STEPS] = {SP_GRP_TASK_TABLE, "steps", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                          "number of times the task was switched in"},
    [SP_DS_TASK_RUNNING_NS] = {SP_GRP_TASK_TABLE, "running_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "ns",
                               "time the task held its thread (a duration)"},
    [SP_DS_TASK_SUSPENDED_NS] = {SP_GRP_TASK_TABLE, "suspended_ns", SP_DT_I64, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0,
                                 "ns", "time between the task's steps (a duration)"},
    [SP_DS_TASK_KIND] = {SP_GRP_TASK_TABLE, "kind", SP_DT_STR, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                         "`\"task\"` (default), `\"greenlet\"` or the scheduler's word (`sp_manager_task_describe`)"},
    [SP_DS_TASK_NAME] = {SP_GRP_TASK_TABLE, "name", SP_DT_STR, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                         "task name (`sp_task_name`), `\"\"` none"},
    [SP_DS_TASK_CORO_NAME] = {SP_GRP_TASK_TABLE, "coro_name", SP_DT_STR, SP_LEN_TABLE, TBL, SP_CODE_PLAIN, 0, "",
                              "qualname of the coroutine or greenlet target (Python's track_async, `sp_manager_task_describe`); `\"\"` "
                              "not described"},
    [SP_DS_TASK_SWITCH_ID] = {SP_GRP_TASK_TABLE, "switch_id", SP_DT_I64, SP_LEN_TABLE, TBL | SP_W_OURS, SP_CODE_PLAIN,
                              -1, "", "the id the scheduler passed to `sp_task_switch()`"},

    [SP_DS_RANK_START_TIME_NS] = {SP_GRP_RANKS, "start_time_ns", SP_DT_I64, SP_LEN_TABLE, TBL | SP_W_OURS,
                                  SP_CODE_PLAIN, 0, "ns", "each rank's own `start_time_ns` (its table times' origin)"},
    [SP_DS_RANK_CLOCK_OFFSETS] = {SP_GRP_RANKS, "clock_offsets_ns", SP_DT_I64, SP_LEN_TABLE, TBL | SP_W_OURS,
                                  SP_CODE_PLAIN, 0, "ns",
                                  "add to rank `r`'s times to put them on rank 0's timeline; `0` for rank 0"},
    [SP_DS_RANK_CLOCK_ERRORS] = {SP_GRP_RANKS, "clock_offset_errors_ns", SP_DT_I64, SP_LEN_TABLE, TBL | SP_W_OURS,
                                 SP_CODE_PLAIN, 0, "ns", "bound on the error of each offset (half the best round trip)"},
    [SP_DS_RANK_SYNC_OFFSETS] = {SP_GRP_RANKS, "sync_clock_offsets_ns", SP_DT_I64, SP_LEN_TABLE,
                                 TBL | SP_W_OURS, SP_CODE_PLAIN, 0, "ns",
                                 "the same, measured by `sp_mpi_sync_clock()`, only if the program called it"},
    [SP_DS_RANK_SYNC_ERRORS] = {SP_GRP_RANKS, "sync_clock_offset_errors_ns", SP_DT_I64, SP_LEN_TABLE,
                                TBL | SP_W_OURS, SP_CODE_PLAIN, 0, "ns", "their error bounds"},
    [SP_DS_RANK_HOSTNAMES] = {SP_GRP_RANKS, "hostnames", SP_DT_STR, SP_LEN_TABLE, TBL | SP_W_OURS, SP_CODE_PLAIN, 0,
                              "", "`MPI_Get_processor_name` of each rank, only at `metadata_detail = \"full\"`"},

#define H1 (SP_W_SCHEMA1 | SP_W_COLUMNAR)
    [SP_DS_H1_START_TIMES] = {SP_GRP_HIER_REGION, "start_times", SP_DT_I64, SP_LEN_EVENTS, H1 | R, SP_CODE_PLAIN, 0,
                              "ns", "schema 1: the region's starts"},
    [SP_DS_H1_END_TIMES] = {SP_GRP_HIER_REGION, "end_times", SP_DT_I64, SP_LEN_EVENTS, H1 | R, SP_CODE_PLAIN, 0, "ns",
                            "schema 1: the region's ends"},
    [SP_DS_H1_GPU_DURATIONS] = {SP_GRP_HIER_REGION, "gpu_durations", SP_DT_I64, SP_LEN_EVENTS, H1 | SP_W_RECORDED,
                                SP_CODE_PLAIN, -1, "ns", "schema 1: device times (optional)"},
    [SP_DS_H1_CALL_IDS] = {SP_GRP_HIER_REGION, "call_ids", SP_DT_I64, SP_LEN_EVENTS, H1 | SP_W_RECORDED,
                           SP_CODE_PLAIN, -1, "", "schema 1: call ids (optional, with parent_ids)"},
    [SP_DS_H1_PARENT_IDS] = {SP_GRP_HIER_REGION, "parent_ids", SP_DT_I64, SP_LEN_EVENTS, H1 | SP_W_RECORDED,
                             SP_CODE_PLAIN, -1, "", "schema 1: parent ids (optional, with call_ids)"},
};

static const struct sp_plan_attr attrs[SP_AT_NBUILTIN] = {
    [SP_AT_SCHEMA] = {SP_GRP_ROOT, "scope_profiler_schema", SP_DT_I64, SP_W_SCHEMAS | SP_W_LAYOUTS,
                      "`3`, or `2` with `hdf5_schema = 2` (absent: schema 1)"},
    [SP_AT_STORAGE_LAYOUT] = {SP_GRP_ROOT, "storage_layout", SP_DT_STR, SP_W_SCHEMAS | SP_W_LAYOUTS,
                              "`\"columnar\"`, or `\"aggregate\"` in aggregation mode"},
    [SP_AT_CLOCK_TIME] = {SP_GRP_RANKS, "clock_offsets_time_ns", SP_DT_I64, SP_W_SCHEMAS | SP_W_LAYOUTS | SP_W_OURS,
                          "rank 0's clock when the offsets were measured (at finalize)"},
    [SP_AT_SYNC_CLOCK_TIME] = {SP_GRP_RANKS, "sync_clock_offsets_time_ns", SP_DT_I64,
                               SP_W_SCHEMAS | SP_W_LAYOUTS | SP_W_OURS | SP_W_RECORDED,
                               "rank 0's clock at the `sp_mpi_sync_clock()` measurement"},
    [SP_AT_UNITS] = {SP_GRP_EVENTS, "units", SP_DT_STR, SP_W_SCHEMAS | SP_W_COLUMNAR | SP_W_OURS,
                     "on an extension's `/events` column: its unit (`count`, `ns`, `bytes`, `index`)"},
    [SP_AT_H1_SOURCE_FILE] = {SP_GRP_HIER_REGION, "source_file", SP_DT_STR, SP_W_SCHEMA1, "schema 1: defining file"},
    [SP_AT_H1_SOURCE_LINENO] = {SP_GRP_HIER_REGION, "source_lineno", SP_DT_I64, SP_W_SCHEMA1, "schema 1: line"},
    [SP_AT_H1_SOURCE_TEXT] = {SP_GRP_HIER_REGION, "source_text", SP_DT_STR, SP_W_SCHEMA1, "schema 1: source text"},
    [SP_AT_H1_TAGS] = {SP_GRP_HIER_REGION, "tags", SP_DT_STR, SP_W_SCHEMA1, "schema 1: tags, a 1-D string array"},
};

#define UP 0u
const struct sp_plan_meta sp__plan_meta[] = {
    {SP_META_TIMESTAMP, SP_MK_STR, UP, "UTC wall time of the finalize, `%Y-%m-%dT%H:%M:%S+00:00`"},
    {SP_META_HOSTNAME, SP_MK_STR, UP, "host name (`metadata_detail = \"full\"` only)"},
    {SP_META_PLATFORM, SP_MK_STR, UP, "`sysname-release-machine` from uname"},
    {SP_META_UNAME, SP_MK_STR, UP, "all uname fields (full only: it names the host)"},
    {SP_META_CHIP, SP_MK_STR, UP, "CPU model from `/proc/cpuinfo`"},
    {SP_META_VERSION, SP_MK_STR, UP, "version of the writing scope-profiler"},
    {SP_META_CWD, SP_MK_STR, UP, "working directory (full only)"},
    {SP_META_USER, SP_MK_STR, UP, "user name (full only)"},
    {SP_META_OMP_THREADS, SP_MK_INT, UP, "`omp_get_max_threads()` when the program uses OpenMP, else `OMP_NUM_THREADS`, else 1"},
    {SP_META_MPI_SIZE, SP_MK_INT, UP, "ranks"},
    {SP_META_TOTAL_CORES, SP_MK_INT, UP, "`mpi_size * omp_num_threads` (an MPI job: the sum over its ranks)"},
    {SP_META_MODULES, SP_MK_STRLIST, UP, "`LOADEDMODULES` as a list (full only)"},
    {SP_META_START_TIME_NS, SP_MK_INT, UP, "CLOCK_MONOTONIC ns at setup (or at the previous finalize): the timeline origin"},
    {SP_META_FINALIZE_TIME_NS, SP_MK_INT, UP, "CLOCK_MONOTONIC ns at the finalize that wrote the file"},
    {SP_META_LABEL, SP_MK_STR, UP, "the `label` setting, or the output file's stem"},
    {SP_META_MEMORY_PROFILE_PATH, SP_MK_STR, UP, "the memory profile written beside the file, when one was"},
    {SP_META_SOURCE, SP_MK_STR, UP, "`\"native\"` (as upstream's C writer and `import-native`)"},
    {SP_META_TRACE_FORMAT_VERSION, SP_MK_INT, UP, "`2`: the native trace format the run's data corresponds to"},
    {SP_META_SOURCE_LANGUAGE, SP_MK_STR, UP, "`\"c\"`"},
    {SP_META_MPI_RANK, SP_MK_INT, UP, "the rank of a one-rank file (`import-native` inputs)"},
    {SP_META_HDF5_VERSION, SP_MK_STR, SP_W_OURS, "HDF5 library version of the writer"},
    {SP_META_COMPILER, SP_MK_STR, SP_W_OURS, "compiler that built the writing library"},
    {SP_META_CLOCK, SP_MK_STR, SP_W_OURS, "`\"tsc\"` (calibrated invariant TSC, mapped onto CLOCK_MONOTONIC) or `\"clock_gettime\"`"},
    {SP_META_DETAIL, SP_MK_STR, SP_W_OURS, "`\"minimal\"` or `\"full\"`"},
    {SP_META_SETTINGS, SP_MK_STR, SP_W_OURS, "JSON object of every resolved setting (docs/configuration.md)"},
    {SP_META_OVERHEAD, SP_MK_FLOAT, SP_W_OURS, "the run's profiler cost per call, ns: `overhead_total_ns` over the calls"},
    {SP_META_OVERHEAD_PAIR, SP_MK_FLOAT, SP_W_OURS, "cost of one begin/end pair measured at setup in the run's mode, its lines cached (calls back to back), ns"},
    {SP_META_OVERHEAD_COLD_PAIR, SP_MK_FLOAT, SP_W_OURS, "cost of one begin/end pair measured at setup with none of its data lines cached (calls after long work), ns"},
    {SP_META_OVERHEAD_TOTAL, SP_MK_FLOAT, SP_W_OURS, "what the run paid, ns: every call at the pair cost its duration implies (warm under 20 pairs, cold from 40) plus `overhead_extra_ns`"},
    {SP_META_OVERHEAD_EXTRA, SP_MK_FLOAT, SP_W_OURS, "beyond the pairs, paid by few calls or once: out-of-line calls, first touches of fresh buffer pages, growth, hand-offs and thread registration, ns"},
    {SP_META_OVERHEAD_SLOW_CALLS, SP_MK_INT, SP_W_OURS, "begins and ends the run took out of line"},
    {SP_META_OVERHEAD_FRESH_BYTES, SP_MK_INT, SP_W_OURS, "bytes of fresh event-buffer memory the run allocated"},
    {SP_META_RECOVERED, SP_MK_INT, SP_W_OURS, "the signal on which the run was written (`signals`), or -1"},
    {SP_META_RECOVERY_COMPLETE, SP_MK_INT, SP_W_OURS, "1 when that write saw every thread's calls"},
    {SP_META_STREAMED_BLOCKS, SP_MK_INT, SP_W_OURS, "blocks a bounded-memory run streamed to its staging file"},
    {SP_META_DROPPED_EVENTS, SP_MK_INT, SP_W_OURS, "calls a bounded-memory run could not keep"},
    {SP_META_DROPPED_BY_REGION, SP_MK_STR, SP_W_OURS, "JSON object: those calls per region"},
    {SP_META_NUM_NODES, SP_MK_INT, SP_W_OURS, "MPI: distinct host names"},
    {SP_META_MPI_LIBRARY, SP_MK_STR, SP_W_OURS, "MPI: `MPI_Get_library_version`"},
    {SP_META_MPI_STANDARD, SP_MK_STR, SP_W_OURS, "MPI: the standard version, e.g. `\"3.1\"`"},
    {SP_META_MPI_WRITER, SP_MK_STR, SP_W_OURS, "MPI: `\"direct\"`, `\"parallel\"`, or `\"memory\"` (results without a file)"},
    {SP_META_PROBLEMS_UNMATCHED, SP_MK_INT, SP_W_OURS, "ends that matched no open call of their thread, since setup (docs/reliability.md)"},
    {SP_META_PROBLEMS_INVALID, SP_MK_INT, SP_W_OURS, "begins and ends refused for an invalid region handle, since setup"},
    {SP_META_PROBLEMS_LEFT_OPEN, SP_MK_INT, SP_W_OURS, "calls still open when their session or run ended, since setup"},
    {SP_META_OPEN_AT_FINALIZE, SP_MK_INT, SP_W_OURS, "calls open at this finalize (kept open for the next, unless cut short)"},
    {SP_META_CUT_SHORT, SP_MK_STR, SP_W_OURS, "what cut the run short (a termination signal, the exit hook, a recovered crash); absent otherwise"},
    {SP_META_CUT_SHORT_CALLS, SP_MK_INT, SP_W_OURS, "calls written ending at the cut or at their session's end, not at their own"},
    {SP_META_CUT_SHORT_CALL_IDS, SP_MK_STR, SP_W_OURS, "JSON list: the `call_ids` of those calls (the file then keeps the ids)"},
};
const size_t sp__plan_nmeta = sizeof sp__plan_meta / sizeof sp__plan_meta[0];

static const char *const group_names[SP_NGROUPS] = {
    [SP_GRP_ROOT] = "",
    [SP_GRP_METADATA] = "metadata",
    [SP_GRP_REGION_TABLE] = "region_table",
    [SP_GRP_INDEX] = "rank_region_index",
    [SP_GRP_EVENTS] = "events",
    [SP_GRP_THREAD_TABLE] = SP_PLAN_THREAD_TABLE,
    [SP_GRP_TASK_TABLE] = SP_PLAN_TASK_TABLE,
    [SP_GRP_RANKS] = "ranks",
    [SP_GRP_HIER_REGION] = "regions",
};

/* ---- declarations added at run time --------------------------------------- */

static pthread_mutex_t decl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_plan_ds ext[SP_PLAN_MAX_EXT_COLUMNS];
static char ext_names[SP_PLAN_MAX_EXT_COLUMNS][64];
static char ext_units[SP_PLAN_MAX_EXT_COLUMNS][16];
static char ext_docs[SP_PLAN_MAX_EXT_COLUMNS][160];
static int next; /* published count (atomic) */

static struct sp_plan_group_decl groups[SP_PLAN_MAX_RANK_GROUPS] = {
    [SP_RG_LIKWID] = {"likwid", "LIKWID results: attributes, then regions/<tag>/{cpus, times, call_counts, events, metrics}"},
    [SP_RG_PERF_EVENTS] = {"perf_events", "perf-event totals: <region>/values uint64 [E], attributes calls and event_names"},
    [SP_RG_LINE_PROFILE] = {"line_profile", "line profiles: <i>/{line_numbers, hits, times} with region/file attributes"},
    [SP_RG_MEMORY] = {"memory", "ours (use_memray): per-region allocation sums, memory over time, capture attributes"},
};
static char group_names_own[SP_PLAN_MAX_RANK_GROUPS][64];
static char group_docs_own[SP_PLAN_MAX_RANK_GROUPS][160];
static int ngroups = SP_RG_NBUILTIN;

static int load_count(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* A link name every HDF5 reader and h5py take as it is: letters, digits and
 * _ - . : = (perf_events names its columns after the events, e.g.
 * perf_task-clock, perf_PAPI_TOT_CYC, perf_cpu:u), not "." or "..". */
static int name_ok(const char *s) {
  if (!s || !s[0] || strlen(s) >= 64 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return 0;
  for (const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == ':' || c == '='))
      return 0;
  }
  return 1;
}

const struct sp_plan_ds *sp__plan(int id) {
  if (id < 0) return NULL;
  if (id < SP_DS_NBUILTIN) return &builtin[id];
  int k = id - SP_DS_NBUILTIN;
  return k < load_count(&next) ? &ext[k] : NULL;
}

int sp__plan_count(void) { return SP_DS_NBUILTIN + load_count(&next); }

int sp__plan_find(enum sp_group g, const char *name) {
  if (!name) return -1;
  int n = sp__plan_count();
  for (int i = 0; i < n; i++) {
    const struct sp_plan_ds *d = sp__plan(i);
    if (d->group == g && strcmp(d->name, name) == 0) return i;
  }
  return -1;
}

const char *sp__plan_group_name(enum sp_group g) { return (unsigned)g < SP_NGROUPS ? group_names[g] : "?"; }

static char paths[SP_DS_NBUILTIN + SP_PLAN_MAX_EXT_COLUMNS][96];
static pthread_once_t paths_once = PTHREAD_ONCE_INIT;

static void builtin_paths(void) {
  for (int i = 0; i < SP_DS_NBUILTIN; i++)
    snprintf(paths[i], sizeof paths[i], "/%s/%s", group_names[builtin[i].group], builtin[i].name);
}

const char *sp__plan_path(int id) {
  pthread_once(&paths_once, builtin_paths);
  return sp__plan(id) ? paths[id] : "?";
}

const struct sp_plan_attr *sp__plan_attr(int id) { return id >= 0 && id < SP_AT_NBUILTIN ? &attrs[id] : NULL; }

int sp__plan_in_file(const struct sp_plan_ds *d, int schema, int aggregate, int *empty) {
  int e = 0;
  if (!(d->when & (schema == 2 ? SP_W_SCHEMA2 : SP_W_SCHEMA3))) return 0;
  if (aggregate) {
    if (d->when & SP_W_AGGREGATE) e = 0;
    else if (d->when & SP_W_EMPTY_AGG) e = 1;
    else return 0;
  } else if (!(d->when & SP_W_COLUMNAR)) {
    return 0;
  }
  if (empty) *empty = e;
  return 1;
}

int sp__plan_table_columns(enum sp_group g, int *first, int *n) {
  int f = -1, c = 0;
  for (int i = 0; i < SP_DS_NBUILTIN; i++)
    if (builtin[i].group == g) {
      if (f < 0) f = i;
      c++;
    }
  if (first) *first = f;
  if (n) *n = c;
  return f >= 0 ? 0 : -1;
}

int sp__plan_meta_kind(const char *key) {
  for (size_t i = 0; key && i < sp__plan_nmeta; i++)
    if (strcmp(sp__plan_meta[i].key, key) == 0) return (int)sp__plan_meta[i].kind;
  return -1;
}

int sp__plan_add_event_column(const struct sp_plan_col_decl *d) {
  if (!d || !name_ok(d->name)) {
    sp__set_error(SP_ERR_INVALID_ARGUMENT, "an event column needs a name of 1-63 characters A-Z, a-z, 0-9 or _ - . : = (got '%s')",
                  d && d->name ? d->name : "(null)");
    return -1;
  }
  if (d->dtype != SP_DT_I64 && d->dtype != SP_DT_U64 && d->dtype != SP_DT_F64) {
    sp__set_error(SP_ERR_INVALID_ARGUMENT, "event column %s: the dtype must be int64, uint64 or float64", d->name);
    return -1;
  }
  pthread_mutex_lock(&decl_lock);
  int id = sp__plan_find(SP_GRP_EVENTS, d->name), rc = id;
  if (id >= 0 && (id < SP_DS_NBUILTIN || sp__plan(id)->dtype != d->dtype)) {
    sp__set_error(SP_ERR_CONFLICT, "event column %s is already declared %s", d->name,
                  id < SP_DS_NBUILTIN ? "by the file format" : "with another dtype");
    rc = -1;
  } else if (id < 0) {
    int k = next;
    if (k >= SP_PLAN_MAX_EXT_COLUMNS) {
      sp__set_error(SP_ERR_LIMIT, "more than %d extension event columns", SP_PLAN_MAX_EXT_COLUMNS);
      rc = -1;
    } else {
      snprintf(ext_names[k], sizeof ext_names[k], "%s", d->name);
      snprintf(ext_units[k], sizeof ext_units[k], "%s", d->unit ? d->unit : "");
      snprintf(ext_docs[k], sizeof ext_docs[k], "%s", d->doc ? d->doc : "");
      snprintf(paths[SP_DS_NBUILTIN + k], sizeof paths[0], "/%s/%s", group_names[SP_GRP_EVENTS], d->name);
      ext[k] = (struct sp_plan_ds){SP_GRP_EVENTS, ext_names[k], d->dtype, SP_LEN_EVENTS,
                                   COL | SP_W_RECORDED | SP_W_OURS, SP_CODE_PLAIN, d->fill, ext_units[k],
                                   ext_docs[k]};
      __atomic_store_n(&next, k + 1, __ATOMIC_RELEASE);
      rc = SP_DS_NBUILTIN + k;
    }
  }
  pthread_mutex_unlock(&decl_lock);
  return rc;
}

const struct sp_plan_group_decl *sp__plan_rank_group(int id) {
  return id >= 0 && id < load_count(&ngroups) ? &groups[id] : NULL;
}

int sp__plan_rank_group_count(void) { return load_count(&ngroups); }

int sp__plan_find_rank_group(const char *name) {
  int n = sp__plan_rank_group_count();
  for (int i = 0; name && i < n; i++)
    if (strcmp(groups[i].name, name) == 0) return i;
  return -1;
}

int sp__plan_add_rank_group(const struct sp_plan_group_decl *d) {
  if (!d || !name_ok(d->name)) {
    sp__set_error(SP_ERR_INVALID_ARGUMENT, "a rank group needs a name of 1-63 characters A-Z, a-z, 0-9 or _ - . : = (got '%s')",
                  d && d->name ? d->name : "(null)");
    return -1;
  }
  pthread_mutex_lock(&decl_lock);
  int id = sp__plan_find_rank_group(d->name);
  if (id < 0) {
    int k = ngroups;
    if (k >= SP_PLAN_MAX_RANK_GROUPS) {
      sp__set_error(SP_ERR_LIMIT, "more than %d rank groups", SP_PLAN_MAX_RANK_GROUPS);
    } else {
      snprintf(group_names_own[k], sizeof group_names_own[k], "%s", d->name);
      snprintf(group_docs_own[k], sizeof group_docs_own[k], "%s", d->doc ? d->doc : "");
      groups[k] = (struct sp_plan_group_decl){group_names_own[k], group_docs_own[k]};
      __atomic_store_n(&ngroups, k + 1, __ATOMIC_RELEASE);
      id = k;
    }
  }
  pthread_mutex_unlock(&decl_lock);
  return id;
}
