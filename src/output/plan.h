/* plan.h - the dataset plan: every group, dataset and attribute a
 * scope-profiler file holds, declared once (plan.c), with its dtype, length
 * rule, coding and when it is present. The serial writer (h5write.c), both
 * MPI job writers (src/mpi/), the reader's validation (src/read/) and the
 * docs test go through it; no other file spells a dataset name.
 *
 * The layout is upstream scope-profiler's (schemas 2 and 3, columnar and
 * aggregate; docs/file-format.md). Entries marked SP_W_OURS are additions
 * upstream's readers ignore.
 *
 * Extensions declare what they add here, in one place each:
 *   - a per-call column under /events: sp__plan_add_event_column() (name,
 *     dtype, unit, fill value); the run then carries a struct sp_column with
 *     the returned id and every writer creates, fills (the fill value for a
 *     rank that lacks it) and the reader validates it;
 *   - a per-rank group rank<N>/<name>/...: sp__plan_add_rank_group(); the run
 *     carries a struct sp_node tree with that id, written under rank<N>/ by
 *     every writer.
 *
 * This header is plain data (no HDF5): src/read/ may include it, so that
 * reader and writers agree by construction. Ids of built-in entries are the
 * enum values below; extension ids follow them.
 */
#ifndef SP_OUTPUT_PLAN_H
#define SP_OUTPUT_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* Names of upstream's optional event columns that extensions provide (the
 * async lanes, GPU timing): they name their columns with these, so the
 * file has upstream's name and the plan's dtype and fill. */
#define SP_PLAN_TASK_IDS "task_ids"
#define SP_PLAN_AWAIT_NS "await_ns"
#define SP_PLAN_GPU_DURATIONS "gpu_durations"
/* Retired: the first column of our narrow delta coding (removed; BENCHMARKS.md
 * says why). Only looked for, so that the reader can refuse such a file by
 * name. */
#define SP_PLAN_RETIRED_START_GAPS "start_gaps"
/* The lane-table groups' names, for what is named after them (the report's
 * thread_table view). */
#define SP_PLAN_THREAD_TABLE "thread_table"
#define SP_PLAN_TASK_TABLE "task_table"
/* The group of a streamed run's staged blocks (docs/file-format.md,
 * "Staged blocks"): /staging/<block, 6 digits>/<event column name>, the
 * sources of the virtual /events columns. */
#define SP_PLAN_STAGING "staging"

/* Value types as stored (little-endian, as h5py writes them on x86). */
enum sp_dtype {
  SP_DT_I8,      /* int8 (upstream's bool-ish thread_table/daemon) */
  SP_DT_U32,     /* uint32 */
  SP_DT_I64,     /* int64 */
  SP_DT_U64,     /* uint64 */
  SP_DT_F64,     /* float64 */
  SP_DT_STR,     /* variable-length UTF-8 string */
  SP_DT_SUMMARY  /* the 11-field summary_statistics compound */
};

/* Groups under the root. rank<N> groups are declared separately
 * (sp__plan_add_rank_group). */
enum sp_group {
  SP_GRP_ROOT,
  SP_GRP_METADATA,
  SP_GRP_REGION_TABLE,
  SP_GRP_INDEX,        /* rank_region_index: one row per (rank, region) */
  SP_GRP_EVENTS,       /* one value per call */
  SP_GRP_THREAD_TABLE, /* one row per (rank, thread) */
  SP_GRP_TASK_TABLE,   /* one row per (rank, task) */
  SP_GRP_RANKS,        /* ours: one row per MPI rank */
  SP_GRP_HIER_REGION,  /* schema 1 (read only): /rank<N>/regions/<name>/ */
  SP_NGROUPS
};

/* How long a dataset is. */
enum sp_len {
  SP_LEN_NAMES,  /* distinct region names */
  SP_LEN_ROWS,   /* index rows (0 for SP_W_EMPTY_AGG entries in the aggregate layout) */
  SP_LEN_EVENTS, /* calls (0 in the aggregate layout) */
  SP_LEN_TABLE   /* rows of its table group */
};

/* When an entry is present (flags). */
#define SP_W_SCHEMA2 0x001u   /* in schema-2 files */
#define SP_W_SCHEMA3 0x002u   /* in schema-3 files */
#define SP_W_COLUMNAR 0x004u  /* in the columnar layout */
#define SP_W_AGGREGATE 0x008u /* in the aggregate layout, with its rows */
#define SP_W_EMPTY_AGG 0x010u /* in the aggregate layout at length 0 (upstream's skeleton) */
#define SP_W_RECORDED 0x020u  /* only when the run recorded it; absence is data */
#define SP_W_OURS 0x040u      /* ours; upstream's readers ignore it */
#define SP_W_REQUIRED 0x080u  /* the reader refuses a file of that layout without it */
#define SP_W_SCHEMA1 0x100u   /* upstream's hierarchical schema 1, which we read but never write */
#define SP_W_SCHEMAS (SP_W_SCHEMA2 | SP_W_SCHEMA3)
#define SP_W_LAYOUTS (SP_W_COLUMNAR | SP_W_AGGREGATE | SP_W_EMPTY_AGG)

/* How a dataset's values are derived from the run (writers) and read back. */
enum sp_coding {
  SP_CODE_PLAIN,       /* stored as recorded */
  SP_CODE_ROW_DELTA,   /* start_deltas: a row's first start, then start[i] - start[i-1] within the row */
  SP_CODE_DURATION,    /* durations: end - start */
  SP_CODE_RELATIVE_NS  /* a time relative to the rank's start_time_ns; -1 stays -1 */
};

struct sp_plan_ds {
  enum sp_group group;
  const char *name; /* link name in its group (or a rank group's name) */
  enum sp_dtype dtype;
  enum sp_len len;
  unsigned when;
  enum sp_coding coding;
  int64_t fill;     /* value written where a call, row or rank has none */
  const char *unit; /* "ns", "bytes", "" */
  const char *doc;  /* one line, as docs/file-format.md lists it */
};

/* Built-in entries, in file order within each group. */
enum sp_ds_id {
  /* region_table */
  SP_DS_NAMES,
  /* rank_region_index */
  SP_DS_REGION_IDS,
  SP_DS_RANKS,
  SP_DS_EVENT_OFFSETS,
  SP_DS_EVENT_COUNTS,
  SP_DS_SOURCE_LINES,
  SP_DS_EXCLUSIVE_TOTALS,
  SP_DS_SOURCE_FILES,
  SP_DS_SOURCE_TEXTS,
  SP_DS_TAGS,
  SP_DS_SUMMARY,
  SP_DS_AGG_COUNTS,
  SP_DS_AGG_TOTALS,
  SP_DS_AGG_MINIMUMS,
  SP_DS_AGG_MAXIMUMS,
  SP_DS_AGG_EXCLUSIVES,
  SP_DS_AGG_STATISTICS,   /* ours */
  SP_DS_AGG_SOURCE_FILES, /* ours */
  SP_DS_AGG_SOURCE_LINES, /* ours */
  SP_DS_AGG_SOURCE_TEXTS, /* ours */
  SP_DS_AGG_TAGS,         /* ours */
  /* events */
  SP_DS_START_DELTAS,
  SP_DS_DURATIONS,
  SP_DS_START_TIMES,
  SP_DS_END_TIMES,
  SP_DS_GPU_DURATIONS,
  SP_DS_CALL_IDS,
  SP_DS_PARENT_IDS,
  SP_DS_THREAD_IDS,
  SP_DS_TASK_IDS,
  SP_DS_AWAIT_NS,
  /* thread_table */
  SP_DS_THR_RANKS,
  SP_DS_THR_INDEX,
  SP_DS_THR_IDENT,
  SP_DS_THR_NATIVE_ID,
  SP_DS_THR_DAEMON,
  SP_DS_THR_START_NS,
  SP_DS_THR_END_NS,
  SP_DS_THR_CPU_NS,
  SP_DS_THR_NAME,
  SP_DS_THR_OMP_THREAD, /* ours */
  /* task_table */
  SP_DS_TASK_RANKS,
  SP_DS_TASK_INDEX,
  SP_DS_TASK_THREAD_INDEX,
  SP_DS_TASK_CREATED_NS,
  SP_DS_TASK_DONE_NS,
  SP_DS_TASK_STEPS,
  SP_DS_TASK_RUNNING_NS,
  SP_DS_TASK_SUSPENDED_NS,
  SP_DS_TASK_KIND,
  SP_DS_TASK_NAME,
  SP_DS_TASK_CORO_NAME,
  SP_DS_TASK_SWITCH_ID, /* ours */
  /* ranks (ours) */
  SP_DS_RANK_START_TIME_NS,
  SP_DS_RANK_CLOCK_OFFSETS,
  SP_DS_RANK_CLOCK_ERRORS,
  SP_DS_RANK_SYNC_OFFSETS,
  SP_DS_RANK_SYNC_ERRORS,
  SP_DS_RANK_HOSTNAMES,
  /* schema 1's region groups (read only) */
  SP_DS_H1_START_TIMES,
  SP_DS_H1_END_TIMES,
  SP_DS_H1_GPU_DURATIONS,
  SP_DS_H1_CALL_IDS,
  SP_DS_H1_PARENT_IDS,
  SP_DS_NBUILTIN
};

/* Attributes outside /metadata (root and ours). */
enum sp_attr_id {
  SP_AT_SCHEMA,          /* / scope_profiler_schema */
  SP_AT_STORAGE_LAYOUT,  /* / storage_layout */
  SP_AT_CLOCK_TIME,      /* /ranks clock_offsets_time_ns */
  SP_AT_SYNC_CLOCK_TIME, /* /ranks sync_clock_offsets_time_ns */
  SP_AT_UNITS,           /* an extension's /events column: units */
  SP_AT_H1_SOURCE_FILE,  /* schema 1 region group attributes (read only) */
  SP_AT_H1_SOURCE_LINENO,
  SP_AT_H1_SOURCE_TEXT,
  SP_AT_H1_TAGS,
  SP_AT_NBUILTIN
};
struct sp_plan_attr {
  enum sp_group group;
  const char *name;
  enum sp_dtype dtype;
  unsigned when;
  const char *doc;
};

/* /metadata keys with a fixed meaning (upstream's, then ours); writers use
 * these names, the reader and docs the table. Variables copied from the
 * environment at metadata_detail=full keep their own names. */
#define SP_META_TIMESTAMP "timestamp"
#define SP_META_HOSTNAME "hostname"
#define SP_META_PLATFORM "platform"
#define SP_META_UNAME "uname"
#define SP_META_CHIP "chip_information"
#define SP_META_VERSION "scope_profiler_version"
#define SP_META_CWD "working_directory"
#define SP_META_USER "user"
#define SP_META_OMP_THREADS "omp_num_threads"
#define SP_META_MPI_SIZE "mpi_size"
#define SP_META_TOTAL_CORES "total_cores"
#define SP_META_MODULES "modules"
#define SP_META_START_TIME_NS "start_time_ns"
#define SP_META_FINALIZE_TIME_NS "finalize_time_ns"
#define SP_META_LABEL "label"
#define SP_META_MEMORY_PROFILE_PATH "memory_profile_path"
#define SP_META_SOURCE "source"
#define SP_META_TRACE_FORMAT_VERSION "trace_format_version"
#define SP_META_SOURCE_LANGUAGE "source_language"
#define SP_META_MPI_RANK "mpi_rank"
/* ours */
#define SP_META_HDF5_VERSION "hdf5_version"
#define SP_META_COMPILER "compiler"
#define SP_META_CLOCK "clock"
#define SP_META_DETAIL "metadata_detail"
#define SP_META_SETTINGS "settings"
#define SP_META_OVERHEAD "overhead_ns_per_call"
#define SP_META_OVERHEAD_PAIR "overhead_pair_ns"
#define SP_META_OVERHEAD_COLD_PAIR "overhead_cold_pair_ns"
#define SP_META_OVERHEAD_TOTAL "overhead_total_ns"
#define SP_META_OVERHEAD_EXTRA "overhead_extra_ns"
#define SP_META_OVERHEAD_SLOW_CALLS "overhead_slow_calls"
#define SP_META_OVERHEAD_FRESH_BYTES "overhead_fresh_bytes"
#define SP_META_RECOVERED "recovered_from_signal"
#define SP_META_RECOVERY_COMPLETE "recovery_complete"
#define SP_META_STREAMED_BLOCKS "streamed_blocks"
#define SP_META_DROPPED_EVENTS "dropped_events"
#define SP_META_DROPPED_BY_REGION "dropped_by_region"
#define SP_META_NUM_NODES "num_nodes"
#define SP_META_MPI_LIBRARY "mpi_library_version"
#define SP_META_MPI_STANDARD "mpi_standard_version"
#define SP_META_MPI_WRITER "mpi_writer"
#define SP_META_PROBLEMS_UNMATCHED "problems_unmatched_ends"
#define SP_META_PROBLEMS_INVALID "problems_invalid_handles"
#define SP_META_PROBLEMS_LEFT_OPEN "problems_left_open"
#define SP_META_OPEN_AT_FINALIZE "open_at_finalize"
#define SP_META_CUT_SHORT "cut_short"
#define SP_META_CUT_SHORT_CALLS "cut_short_calls"
#define SP_META_CUT_SHORT_CALL_IDS "cut_short_call_ids"

enum sp_meta_kind { SP_MK_STR, SP_MK_INT, SP_MK_FLOAT, SP_MK_STRLIST };
struct sp_plan_meta {
  const char *key;
  enum sp_meta_kind kind;
  unsigned when; /* SP_W_OURS for ours */
  const char *doc;
};
extern const struct sp_plan_meta sp__plan_meta[];
extern const size_t sp__plan_nmeta;
/* The declared kind of a metadata key; -1 when the key is not declared. */
int sp__plan_meta_kind(const char *key);

/* The newest schema written and read; what files get by default. */
#define SP_SCHEMA_CURRENT 3
#define SP_SCHEMA_MIN_WRITE 2

/* Room for extension declarations. */
#define SP_PLAN_MAX_EXT_COLUMNS 64
#define SP_PLAN_MAX_RANK_GROUPS 32

/* The entry of dataset `id` (built-in or extension); NULL when unknown. */
const struct sp_plan_ds *sp__plan(int id);
/* Number of ids in use (built-in plus declared); ids are 0..count-1. */
int sp__plan_count(void);
/* The id of the dataset `name` in group g, or -1. */
int sp__plan_find(enum sp_group g, const char *name);
/* Group names under the root ("" for the root). */
const char *sp__plan_group_name(enum sp_group g);
/* The full path of dataset `id` ("/rank_region_index/region_ids"); static
 * storage per id. */
const char *sp__plan_path(int id);
/* Attributes. */
const struct sp_plan_attr *sp__plan_attr(int id);
/* 1 when dataset `id` is in a file of `schema` (2 or 3) and `aggregate`
 * layout, before SP_W_RECORDED is considered. *empty: present at length 0. */
int sp__plan_in_file(const struct sp_plan_ds *d, int schema, int aggregate, int *empty);
/* The first id of table group g and how many built-in columns it has. */
int sp__plan_table_columns(enum sp_group g, int *first, int *n);

/* An event column an extension adds under /events, one value per call. The
 * name must not clash with a built-in one; a second declaration with the
 * same name and dtype returns the same id (probes may be set up more than
 * once). Values are 8 bytes each in memory (int64, uint64 or double, by
 * dtype). Returns the id, or -1 with sp_last_error() set (a clash, a bad
 * dtype or name, or more than SP_PLAN_MAX_EXT_COLUMNS columns). */
struct sp_plan_col_decl {
  const char *name;
  enum sp_dtype dtype; /* SP_DT_I64, SP_DT_U64 or SP_DT_F64 */
  const char *unit;    /* "ns", "bytes", "count", ... */
  int64_t fill;        /* for calls (and ranks) without a value; -1 is the convention */
  const char *doc;
};
int sp__plan_add_event_column(const struct sp_plan_col_decl *d);

/* A per-rank group rank<N>/<name> (LIKWID results, perf-event totals, line
 * profiles, ...) an extension contributes as a struct sp_node tree. Same
 * rules as columns; returns an id usable with sp__plan_rank_group(). */
struct sp_plan_group_decl {
  const char *name;
  const char *doc;
};
int sp__plan_add_rank_group(const struct sp_plan_group_decl *d);
/* The declaration of rank group `id` (NULL when unknown), their count and a
 * lookup by name (-1). Upstream's own likwid, perf_events and line_profile,
 * and our memory, are declared from the start (SP_RG_*). */
const struct sp_plan_group_decl *sp__plan_rank_group(int id);
int sp__plan_rank_group_count(void);
int sp__plan_find_rank_group(const char *name);
enum { SP_RG_LIKWID, SP_RG_PERF_EVENTS, SP_RG_LINE_PROFILE, SP_RG_MEMORY, SP_RG_NBUILTIN };
/* The prefix of per-rank group names: "rank" + decimal rank, no padding. */
#define SP_PLAN_RANK_PREFIX "rank"
/* Schema 1: the group of region groups under each rank<N>. */
#define SP_PLAN_H1_REGIONS "regions"

#endif
