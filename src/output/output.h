/* output.h - a finished run as the core hands it to the writers: rows of
 * (rank, region), absolute int64 event columns, the optional per-call
 * columns, tables and per-rank groups it recorded, and its metadata. The
 * core builds it (src/core/snapshot.c, stream.c); output/ writes it, to a
 * file or an in-memory image, in the layout the dataset plan declares
 * (output/plan.h), and knows nothing of threads, ticks or managers.
 */
#ifndef SP_OUTPUT_H
#define SP_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "config/config_internal.h"
#include "output/plan.h"
#include "scope_profiler/status.h"

/* The 11 fields of /rank_region_index/summary_statistics, in file order. */
struct sp_summary {
  int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
  uint64_t gpu_count;
  int64_t gpu_total;
  double mean, m2;
};

struct sp_row {
  uint32_t region;     /* index into run->names */
  uint32_t rank;
  uint64_t offset, count;
  int64_t source_line; /* -1 unknown */
  int64_t exclusive_total;
  char *source_file;   /* "" unknown */
  char *source_text;   /* "" none */
  char *tags_json;     /* "[]" */
  struct sp_summary stats;
  int64_t aggregate_count;
};

/* An optional per-call column under /events: thread ids, task ids, await
 * time, GPU time, an extension's values. `id` is the plan's (a built-in
 * SP_DS_* or what sp__plan_add_event_column returned); data holds nevents
 * 8-byte values, int64/uint64/double as the plan's dtype says. */
struct sp_column {
  int id;
  void *data;
};

enum sp_meta_type { SP_META_STR, SP_META_I64, SP_META_F64, SP_META_STRLIST };
struct sp_meta_item {
  char *key;
  enum sp_meta_type type;
  char *s;
  int64_t i;
  double d;
  char **list; /* NULL-terminated (STRLIST) */
};
struct sp_meta {
  struct sp_meta_item *items;
  size_t n, cap;
};

/* A table group (SP_GRP_THREAD_TABLE, SP_GRP_TASK_TABLE, SP_GRP_RANKS):
 * cols[k] holds the rows of the group's k-th plan column (plan order,
 * sp__plan_table_columns): nrows 8-byte numbers (int64; uint64/double for
 * such dtypes), or nrows char * for strings; NULL: not recorded, written
 * as the plan's fill value. attrs: the group's attributes. */
struct sp_table {
  enum sp_group group;
  size_t nrows;
  void **cols;
  size_t ncols;
  struct sp_meta attrs;
};

/* A node of a per-rank group tree (rank<N>/<group>/...): attributes,
 * datasets of 1 or 2 dimensions, child groups. A dataset's data is
 * dims[0] (x dims[1]) 8-byte numbers by dtype (int64 for I8/U32/I64), or
 * char * for strings. Names are link names; '/' is not allowed in them. */
struct sp_node_ds {
  char *name;
  enum sp_dtype dtype;
  int ndims;
  uint64_t dims[2];
  void *data;
};
struct sp_node {
  char *name;
  struct sp_meta attrs;
  struct sp_node_ds *ds; /* a pointer into it is valid until the next dataset is added */
  size_t nds;
  struct sp_node **kids; /* each allocated on its own: pointers to nodes stay valid */
  size_t nkids;
};

/* Where a run's filler puts its calls: batches of one row or of rows one
 * after another (a row's batches in order, rows in any order), with start,
 * end, and for each of the
 * run's call/parent ids and `extra` columns (in run->extra order) the
 * values of the batch. The sink codes them as the plan says (schema 3's
 * row deltas and durations) and writes them. */
struct sp_event_batch {
  const int64_t *start, *end, *call_id, *parent_id;
  const void *const *extra; /* run->nextra arrays of 8-byte values */
};
struct sp_event_sink;
struct sp_run;
/* 0, or -1 on an HDF5 error or out of memory. */
int sp__sink_put(struct sp_event_sink *s, uint64_t off, size_t n, const struct sp_event_batch *b);
/* 1 once a put failed: a filler that failed otherwise (a streamed run
 * reading its staged blocks back) has its own message to give. */
int sp__sink_failed(const struct sp_event_sink *s);
/* A sink that reads a bounded-memory run `src` into event arrays of `dst`
 * (a shallow copy of src without arrays; the MPI writers place a rank's
 * events themselves). Close keeps the arrays in dst; discard frees them. */
struct sp_event_sink *sp__mem_sink_open(struct sp_run *dst, const struct sp_run *src);
void sp__mem_sink_close(struct sp_event_sink *s);
void sp__mem_sink_discard(struct sp_event_sink *s, struct sp_run *dst);

/* A streamed run's blocks staged in the run's own HDF5 file as they stream
 * (h5stage.c): each block's calls in their final form (start deltas of
 * their rows, durations, ids, parents, threads), so that publishing writes
 * the index and makes /events virtual over the blocks instead of copying
 * the events again. The writer thread is the only one that touches the
 * file until finalize publishes it. */
#define SP_STAGE_NCOLS 5 /* start delta, duration, call id, parent id, thread */
struct sp_stage;
/* The staging file beside `path`, or NULL when the staged way cannot apply
 * to this run (*why says why; the caller streams the copy way). */
struct sp_stage *sp__stage_open(const struct sp_config *cfg, const char *path, const char **why);
/* Block `block`'s datasets, n calls each; its thread ids only `with_threads`
 * (a block without them is all one thread's: struct sp_staged). 0 or -1. */
int sp__stage_block(struct sp_stage *g, uint32_t block, uint64_t n, int with_threads);
/* Values [off, off+n) of staged column `col` of the current block. */
int sp__stage_put(struct sp_stage *g, int col, uint64_t off, uint64_t n, const int64_t *v);
/* The block is whole: its datasets closed, the file flushed; off[c] is the
 * file offset of column c's first value (contiguous storage, fixed once
 * written: crash recovery reads the values there, stream.c's journal), or
 * UINT64_MAX for a column with no storage (an empty block). */
int sp__stage_end_block(struct sp_stage *g, uint64_t off[SP_STAGE_NCOLS]);
/* One value of an earlier block (cross-thread parents, known at finalize). */
int sp__stage_patch(struct sp_stage *g, uint32_t block, int col, uint64_t at, int64_t v);
/* The staging file's name (until it is published or removed). */
const char *sp__stage_path(const struct sp_stage *g);
/* Closes and removes the staging file (nothing when it was published);
 * with `keep`, closes it and leaves it where it is (its blocks are still
 * the data of the run, read back through the caller's own descriptor). */
void sp__stage_discard(struct sp_stage *g);
void sp__stage_close(struct sp_stage *g, int keep);
/* The staging file was removed by name (by the caller): from now on its
 * name is not used again, neither to remove it nor to open it nor to
 * rename it into place, since another run's mkstemp may have taken it. */
void sp__stage_forget(struct sp_stage *g);
/* One (row, block) segment: `count` calls at `src` of the block's datasets
 * are events [dst, dst+count) of the file. */
struct sp_stage_map {
  uint32_t block;
  uint64_t src, dst, count;
};
struct sp_staged {
  struct sp_stage *stage;
  const struct sp_stage_map *map; /* in event order, covering every event */
  size_t nmap;
  int64_t thread0; /* the thread of every block staged without thread ids */
};
/* Tests: where a staged publish also writes the same run the copy way. */
extern const char *sp__h5_stage_copy_too;
/* Tests: called at each step of publishing a file (SP_PUB_*), so that a
 * test can crash the process exactly there and recover its spill
 * (tests/unit/test-crashpub.c). NULL in every real run. */
enum { SP_PUB_WRITE = 1, SP_PUB_FSYNC, SP_PUB_RENAME, SP_PUB_RENAMED, SP_PUB_WRITTEN, SP_PUB_RESET, SP_PUB_STEPS };
extern void (*sp__h5_test_publish_hook)(int step);

struct sp_run {
  const char *layout; /* "columnar" or "aggregate" */
  char **names;
  size_t nnames;
  struct sp_row *rows;
  size_t nrows;
  /* call_id and parent_id are NULL when nesting was not recorded (files
   * then lack the columns: a column of -1 would collapse the call tree) */
  int64_t *start, *end, *call_id, *parent_id;
  size_t nevents;
  int has_ids; /* a fill_events run: it writes call and parent ids */
  /* the ids say nothing the intervals do not: each lane's calls, sorted by
   * (start, longer first) and nested by containment, give the recorded
   * tree; the file then leaves them out (unless another rank needs them) */
  int ids_redundant;
  struct sp_column *extra;
  size_t nextra;
  struct sp_table *tables;
  size_t ntables;
  /* per-rank groups, written under rank<rank>/<name> (each name declared
   * with sp__plan_add_rank_group) */
  struct sp_node **groups;
  size_t ngroups;
  struct sp_meta meta;
  /* Bounded-memory runs: no event arrays; the writer creates the event
   * datasets and the callback writes every call through the sink, updating
   * the rows' statistics as it goes (the index is written after it). */
  sp_status (*fill_events)(void *ctx, struct sp_event_sink *sink);
  void *fill_ctx;
  /* the filler may run into an in-memory image as well (a run kept in
   * memory); small runs are then built in memory as the others are */
  int fill_any_size;
  /* a streamed run whose blocks were staged in its own file: published by
   * making /events virtual over them (the filler stays the fallback) */
  const struct sp_staged *staged;
};

void sp__run_free(struct sp_run *run);

/* Builders that keep names in the plan (they allocate; NULL / -1 when out
 * of memory). A column of nevents values for plan id `id` (the same column
 * twice is refused); a table of nrows rows for a table group, its columns
 * allocated (strings empty); groups, child nodes and datasets of a node. */
void *sp__run_add_column(struct sp_run *run, int id);
struct sp_table *sp__run_add_table(struct sp_run *run, enum sp_group group, size_t nrows);
/* The k-th column (plan order) of a table as int64 / string array. */
int64_t *sp__table_i64(struct sp_table *t, int id);
char **sp__table_str(struct sp_table *t, int id);
/* The run's group of a declared rank group, made on first use. */
struct sp_node *sp__run_add_group(struct sp_run *run, int rank_group_id);
/* The child called `name`, made when missing. */
struct sp_node *sp__node_add_child(struct sp_node *n, const char *name);
struct sp_node_ds *sp__node_add_ds(struct sp_node *n, const char *name, enum sp_dtype dtype, int ndims,
                                   const uint64_t *dims);
void sp__node_free(struct sp_node *n);

/* Metadata builders (copy their arguments). */
int sp__meta_str(struct sp_meta *m, const char *key, const char *value);
int sp__meta_i64(struct sp_meta *m, const char *key, int64_t v);
int sp__meta_f64(struct sp_meta *m, const char *key, double v);
int sp__meta_strlist(struct sp_meta *m, const char *key, char **values, size_t n);
const struct sp_meta_item *sp__meta_get(const struct sp_meta *m, const char *key);
void sp__meta_free(struct sp_meta *m);

/* Write `run` as a schema-3 file (schema 2 with hdf5_schema=2) at `path`:
 * written to an exclusive temporary sibling and renamed into place, so
 * readers never see a partial file and a failure leaves whatever was at
 * `path` untouched. */
sp_status sp__h5_write_file(const struct sp_run *run, const struct sp_config *cfg, const char *path);

/* One file of several parts (the ranks of a job merged after the fact:
 * import-native), laid out as the MPI writers lay out a job: rows and
 * events part after part, region names numbered in order of first
 * appearance, metadata the first part's. */
sp_status sp__h5_write_parts(const struct sp_run *parts, int n, const struct sp_config *cfg, const char *path);

/* Files estimated up to this size (256 MiB) are built as an in-memory
 * image and written out by us (h5write.c says why); larger ones by HDF5.
 * Tests lower it to take the second way with small runs. */
extern uint64_t sp__h5_image_max;
/* Tests: 1 also takes H5Fget_file_image's copy of the same file into
 * sp__h5_image_copy (malloc'd, the caller frees it), which must be the
 * bytes handed out; 2 hands out that copy instead of the file's own buffer
 * (the way taken when the buffer cannot be kept). Two writes of one run do
 * not give the same bytes: object headers carry their creation second. */
extern int sp__h5_image_copied;
extern void *sp__h5_image_copy;
extern size_t sp__h5_image_copy_size;

/* The same file as an in-memory image (malloc'd; free() it). */
sp_status sp__h5_write_image(const struct sp_run *run, const struct sp_config *cfg, void **image,
                             size_t *size);

#endif
