/* tui_model.h - what `scope-profiler tui` shows, computed from the reader
 * without any terminal code (so it can be tested and timed alone): the
 * region table and its sort orders, the call tree with its folds, and per
 * region the calls over time (sparkline buckets), per rank and per thread.
 *
 * Everything that reads events is lazy: opening a 10M-event file reads the
 * summary rows only; the call tree is built when first shown; a region's
 * detail when it is first selected, and then kept.
 */
#ifndef SP_TUI_MODEL_H
#define SP_TUI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/reader.h"

enum tui_sort { TUI_SORT_TOTAL, TUI_SORT_OWN, TUI_SORT_CALLS, TUI_NSORTS };

struct tui_rank_row {
  int64_t rank;
  sp_region_stats s;
};

struct tui_thread_row {
  int64_t rank, thread;
  uint64_t calls;
  int64_t total_ns;
};

#define TUI_SPARK_MAX 512

struct tui_detail {        /* one region, read from its events */
  int loaded;
  size_t nbuckets;
  double mean_ns[TUI_SPARK_MAX]; /* mean duration of the calls starting in the bucket; <0 none */
  uint64_t calls[TUI_SPARK_MAX];
  struct tui_rank_row *ranks;
  size_t nranks;
  struct tui_thread_row *threads; /* empty when the file has no thread ids */
  size_t nthreads;
};

struct tui_region {
  size_t region;           /* file region index */
  const char *name;
  sp_region_stats s;       /* over the selected ranks; own time when known */
  struct tui_detail d;
};

struct tui_node {          /* a call-tree node as shown */
  size_t tree;             /* index in nodes */
  size_t depth;
};

struct tui_model {
  sp_results *r;
  const sp_filter *f;
  const char *path;
  int64_t t0, t1;          /* first entry, last exit over the kept regions */
  struct tui_region *regs; /* kept regions with calls */
  size_t nregs;
  size_t *order;           /* regs in the current sort order */
  enum tui_sort sort;
  /* call tree */
  int tree_loaded;
  sp_tree_node *nodes;
  size_t nnodes;
  size_t *kid_start, *kids;   /* children of node i: kids[kid_start[i]..kid_start[i+1]) by total */
  size_t *roots;
  size_t nroots;
  unsigned char *open;        /* node unfolded */
  double session_ns;          /* 100% of the tree's "% session" */
  struct tui_node *visible;   /* the unfolded tree, in display order */
  size_t nvisible;
};

/* Open: summary statistics of every kept region (own time from the stored
 * exclusive totals when the file has them). 0, or SP_ERR_* with sp_last_error(). */
sp_status tui_model_open(struct tui_model *m, sp_results *r, const char *path, const sp_filter *f);
void tui_model_free(struct tui_model *m);
void tui_model_sort(struct tui_model *m, enum tui_sort sort);
const char *tui_sort_name(enum tui_sort sort);
/* Build the call tree (first use); roots unfolded. */
sp_status tui_model_tree(struct tui_model *m);
/* Rebuild the visible list after a fold changed. */
void tui_model_relist(struct tui_model *m);
/* Unfold every ancestor of node so it is visible. */
void tui_model_reveal(struct tui_model *m, size_t node);
/* The region's detail with `buckets` sparkline buckets (first use or a new width). */
sp_status tui_model_detail(struct tui_model *m, size_t reg, size_t buckets);
/* Index in regs of file region `region`; SIZE_MAX when not kept. */
size_t tui_model_find(const struct tui_model *m, size_t region);
/* Next region (in sort order, after position `from`, wrapping) whose name
 * contains `needle` (case-insensitive); SIZE_MAX when none. */
size_t tui_model_search(const struct tui_model *m, const char *needle, size_t from);
/* Next visible-or-hidden tree node after node `from` in display order of the
 * fully unfolded tree whose region name contains `needle`; SIZE_MAX when none. */
size_t tui_model_search_tree(const struct tui_model *m, const char *needle, size_t from);
/* The sparkline of a detail as UTF-8 (or ASCII) text, one cell per bucket. */
void tui_sparkline(const struct tui_detail *d, int utf8, char *out, size_t size);

#endif
