/* cli_util.h - helpers shared by the read-side commands (inspect, diff,
 * check, export): string lists, the option scanning under the options tables
 * of cli_opts.h (--opt VALUE, --opt=VALUE, list options that take every
 * following non-option argument), glob expansion of file arguments, opening profiles
 * with CLI-style error reporting, a progress bar for slow work, and number
 * formatting for tables.
 */
#ifndef SP_CLI_UTIL_H
#define SP_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scope_profiler/reader.h"

struct sp_cli_strs {
  char **v;
  size_t n, cap;
};
int sp_cli_strs_push(struct sp_cli_strs *s, const char *value); /* 0 or -1 (no memory) */
void sp_cli_strs_free(struct sp_cli_strs *s);

/* Error reporting. Both print "scope-profiler <cmd>: <message>" on stderr
 * and return 2; the usage variant adds where to find the help. */
int sp_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sp_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Argument scanning: argv[*i] is the argument under consideration. */
struct sp_cli_args {
  const char *cmd;
  int argc;
  char **argv;
  int i;
  int only_positionals; /* after "--" */
};

/* 1 when argv[i] is `long_name` or `short_name` (either may be NULL). */
int sp_cli_flag(struct sp_cli_args *a, const char *long_name, const char *short_name);
/* Matches an option taking one value ("--sort total", "--sort=total", "-s total").
 * Returns 1 and sets *value, 0 when argv[i] is another option, or -1 after
 * printing a usage error (missing value). */
int sp_cli_value(struct sp_cli_args *a, const char *long_name, const char *short_name,
                 const char **value);
/* An option taking one or more values (argparse nargs='+'): every following
 * argument up to the next option. Returns 1, 0 or -1 as above. */
int sp_cli_list(struct sp_cli_args *a, const char *long_name, const char *short_name,
                struct sp_cli_strs *out);
/* 1 when argv[i] is a positional argument (not an option). */
int sp_cli_positional(struct sp_cli_args *a);

/* Expand file arguments: patterns with *, ? or [ go through glob(3) (and a
 * "**" path component matches any number of directories); a pattern that
 * matches nothing is an error "No files matched pattern: X". Duplicates are
 * dropped, first occurrence kept. Returns 0, or 2 after printing the error. */
int sp_cli_expand_files(const char *cmd, const struct sp_cli_strs *patterns,
                        struct sp_cli_strs *files);

/* Open a profile; on failure print the reader's message and return 2. */
int sp_cli_open(const char *cmd, const char *path, sp_results **out);

/* A filter from --include/--exclude/--ranks values; 0 or 2 (printed). */
int sp_cli_filter(const char *cmd, const struct sp_cli_strs *include,
                  const struct sp_cli_strs *exclude, const struct sp_cli_strs *ranks,
                  sp_filter **out);
/* Check that every selected rank exists in r; 0 or 2 (printed). */
int sp_cli_check_ranks(const char *cmd, const sp_filter *f, const sp_results *r);

/* The absolute, symlink-resolved path (malloc'd); a copy of `path` when it
 * cannot be resolved. */
char *sp_cli_abspath(const char *path);

/* Progress on stderr, drawn only when stderr is a terminal and the work has
 * taken more than a second; usable as an sp_progress_fn. */
struct sp_cli_progress {
  const char *label;
  double start, last_draw;
  int enabled, drawn;
};
void sp_cli_progress_start(struct sp_cli_progress *p, const char *label);
void sp_cli_progress_cb(void *ctx, uint64_t done, uint64_t total);
void sp_cli_progress_end(struct sp_cli_progress *p);

/* Bytes with a binary unit: "512 B", "12.3 MiB". */
void sp_cli_fmt_bytes(char *buf, size_t size, int64_t bytes);
/* Seconds from nanoseconds with 6 significant digits ("-" for NaN). */
void sp_cli_fmt_seconds(char *buf, size_t size, double ns);
/* Display width of UTF-8 text (code points). */
size_t sp_cli_width(const char *s);
/* The same for the first n bytes. */
size_t sp_cli_width_n(const char *s, size_t n);
/* Print s padded with spaces to `width` columns, left or right aligned. */
void sp_cli_pad(FILE *out, const char *s, size_t width, int right);

/* Calls per rank and thread, read from the events (files with thread ids):
 * the regions and ranks f keeps; first entry and last exit in the file's
 * clock. Sorted by rank, then thread. 0 rows without thread ids. free() *out.
 * 0, -1 (no memory), or 2 after printing an error. */
struct sp_cli_thread_row {
  int64_t rank, thread;
  uint64_t calls;
  int64_t first, last;
};
int sp_cli_thread_rows(const char *cmd, sp_results *r, const sp_filter *f,
                       struct sp_cli_thread_row **out, size_t *n);

/* Sort node indexes of a call tree (sp_results_call_tree) the way every
 * tree view shows siblings: total time descending, then region name. */
void sp_cli_sort_tree_nodes(const sp_results *r, const sp_tree_node *nodes, size_t *idx, size_t n);

/* Metrics compared by diff and check. Values are ns for times, a ratio for
 * imbalance, a count for calls. */
enum sp_cli_metric {
  SP_CLI_TOTAL, SP_CLI_AVG, SP_CLI_MIN, SP_CLI_MAX, SP_CLI_P50, SP_CLI_P95, SP_CLI_P99,
  SP_CLI_IMBALANCE, SP_CLI_CALLS, SP_CLI_NMETRICS
};
/* The names, in enum order, NULL-terminated (an options table's choices). */
extern const char *const sp_cli_metric_names[SP_CLI_NMETRICS + 1];
int sp_cli_metric_parse(const char *name); /* -1 when unknown */
const char *sp_cli_metric_name(int metric);
const char *sp_cli_metric_unit(int metric); /* " [s]" or "" */
/* Format a metric value; `sign` adds + to positive numbers. */
void sp_cli_metric_fmt(char *buf, size_t size, int metric, double v, int sign);

/* One region compared between two profiles. */
struct sp_cli_cmp {
  const char *name;
  int in_a, in_b;
  double a, b;     /* 0 on the side where the region is missing */
  double delta;    /* b - a */
  double pct;      /* 100 * delta / a; -100 when only in a; NaN when only in b */
};
/* Compare the regions `f` keeps (union of both files) on `metric`. Rows in
 * a's region order, then b's new regions. 0, or 2 after printing an error. */
int sp_cli_compare(const char *cmd, sp_results *a, sp_results *b, const sp_filter *f, int metric,
                   struct sp_cli_cmp **rows, size_t *n);

/* Two profiles compared region by region (diff, check): both arguments of
 * `pos` (each a pattern that must name exactly one file) opened, every rank
 * the filter selects present in both, and their rows from sp_cli_compare.
 * One place, so that the two commands refuse the same inputs alike. */
struct sp_cli_pair {
  struct sp_cli_strs files; /* the two paths, after expansion */
  sp_results *a, *b;
  sp_filter *f;
  struct sp_cli_cmp *rows;
  size_t n;
};
/* pos holds exactly two arguments (the command says what they are when it
 * does not). 0, or 2 after printing the error; sp_cli_pair_free either way. */
int sp_cli_pair_open(const char *cmd, const struct sp_cli_strs *pos, const struct sp_cli_strs *include,
                     const struct sp_cli_strs *exclude, const struct sp_cli_strs *ranks, int metric,
                     struct sp_cli_pair *p);
void sp_cli_pair_free(struct sp_cli_pair *p);

/* inspect's perf_events table (cli_counters.c): nothing when the file has
 * no counters; 0, or 2 with a message. */
int sp_cli_print_counters(const char *cmd, sp_results *r, const sp_filter *f);
/* inspect's LIKWID tables (rank<N>/likwid/regions); nothing when the file has none. */
int sp_cli_print_likwid(const char *cmd, sp_results *r, const sp_filter *f);

#endif
