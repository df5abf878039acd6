/* output.h - a finished run in the columnar shape of schema 2 (absolute
 * int64 columns; the schema-3 writer codes them on the way out), as the core
 * hands it to the writers. The core builds it (src/core/snapshot.c); output/
 * writes it to a file or to an in-memory image and knows nothing of threads,
 * ticks or managers.
 */
#ifndef SP_OUTPUT_H
#define SP_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "config/config_internal.h"
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
  /* schema 3, set by a fill_events callback: the row's first start and call
   * id (the writer computes them itself for in-memory runs) */
  int64_t start_base, call_id_base;
};

/* An extra per-event column under /events (thread ids, probe values). */
enum sp_col_type { SP_COL_I64, SP_COL_U32 };
struct sp_column {
  char *name;
  enum sp_col_type type;
  void *data; /* nevents values */
  char *unit; /* attribute `units` on the dataset; NULL: none (extension columns have one) */
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

/* A per-rank table (threads, tasks): named columns of equal length. */
struct sp_table {
  char *name; /* group under the root, e.g. "threads" */
  size_t nrows;
  struct sp_column *cols;
  size_t ncols;
  char **str_cols_names; /* string columns */
  char ***str_cols;
  size_t nstr;
};

/* A group below rank<N>/ that an extension adds (rank<N>/perf_events/<region>,
 * rank<N>/likwid/...): attributes and 1-D or 2-D datasets. */
enum sp_aux_type { SP_AUX_I64, SP_AUX_U64, SP_AUX_F64, SP_AUX_STR };
struct sp_aux_dset {
  char *name;
  enum sp_aux_type type;
  int ndims;
  uint64_t dims[2];
  void *data; /* row-major; char ** for SP_AUX_STR */
};
struct sp_aux_group {
  char *path;    /* below rank<rank>/, components separated by '/' */
  uint32_t rank;
  struct sp_meta attrs;
  struct sp_aux_dset *dsets;
  size_t ndsets;
};
/* Write run->aux into an open file (h5common.c). */
void sp__h5_write_aux(int64_t file, const struct sp_aux_group *aux, size_t naux, int *failed);

struct sp_run {
  const char *layout; /* "columnar" or "aggregate" */
  char **names;
  size_t nnames;
  struct sp_row *rows;
  size_t nrows;
  int64_t *start, *end, *call_id, *parent_id;
  size_t nevents;
  struct sp_column *extra;
  size_t nextra;
  struct sp_table *tables;
  size_t ntables;
  struct sp_aux_group *aux;
  size_t naux;
  struct sp_meta meta;
  /* Bounded-memory runs: no event arrays; the writer creates the event
   * datasets (start, end, call ids, parent ids, then `extra` in order) with
   * nevents values each and this callback fills them. With `coded` the first
   * four are schema 3's uint32 start_gaps, durations, call_id_gaps and
   * parent_offsets, which the callback fills a row at a time through
   * sp__delta_code_piece, setting each row's start_base and call_id_base;
   * after `extra` come 8 more: each coded column's overflow index and
   * values, empty and extendible, which it appends to (sp__h5_append).
   * hid_t is int64_t. */
  sp_status (*fill_events)(void *ctx, const int64_t *dsets, size_t ndsets, int coded);
  void *fill_ctx;
};

/* Schema 3 coding of a row's calls as they stream by (delta.c), in 4-byte
 * columns: the codes of n calls (event numbers first, first+1, ...) go to
 * codes[0..3], the values that do not fit to the lists. A cursor starts
 * zeroed at each row and then holds the row's bases. -1: out of memory. */
struct sp_delta_cursor {
  int any;
  int64_t start, call;           /* the previous call's */
  int64_t start_base, call_base; /* the row's first call's */
};
struct sp_delta_lists {
  uint64_t *index[4];
  int64_t *value[4];
  size_t n[4], cap[4];
};
int sp__delta_code_piece(struct sp_delta_cursor *c, const int64_t *start, const int64_t *end,
                         const int64_t *call, const int64_t *parent, size_t n, uint64_t first,
                         uint32_t *const codes[4], struct sp_delta_lists *lists);
void sp__delta_lists_free(struct sp_delta_lists *l);

enum sp_slice_type { SP_SLICE_I64, SP_SLICE_U32, SP_SLICE_U64 };

/* Append n values to an extendible 1-D dataset the writer created. */
int sp__h5_append(int64_t dset, enum sp_slice_type type, uint64_t n, const void *data);

void sp__run_free(struct sp_run *run);

/* Metadata builders (copy their arguments). */
int sp__meta_str(struct sp_meta *m, const char *key, const char *value);
int sp__meta_i64(struct sp_meta *m, const char *key, int64_t v);
int sp__meta_f64(struct sp_meta *m, const char *key, double v);
int sp__meta_strlist(struct sp_meta *m, const char *key, char **values, size_t n);
const struct sp_meta_item *sp__meta_get(const struct sp_meta *m, const char *key);
void sp__meta_free(struct sp_meta *m);

/* Write `run` as a schema-3 file (schema 2 with hdf5_schema=2, or for a
 * fill_events run) at `path`: written to an exclusive temporary
 * sibling and renamed into place, so readers never see a partial file and a
 * failure leaves whatever was at `path` untouched. */
sp_status sp__h5_write_file(const struct sp_run *run, const struct sp_config *cfg, const char *path);

/* Write n values of one event column at `off` into a dataset created by the
 * writer for a run with fill_events; `data` holds int64, uint32 (the
 * thread_ids column) or uint64 (schema 3's codes) values. */
int sp__h5_write_slice(int64_t dset, enum sp_slice_type type, uint64_t off, uint64_t n, const void *data);

/* The same file as an in-memory image (malloc'd; free() it). */
sp_status sp__h5_write_image(const struct sp_run *run, const struct sp_config *cfg, void **image,
                             size_t *size);

#endif
