/* report_internal.h - what the parts of `scope-profiler report` share: the
 * options, the per-file model built from the reader (kept regions, their
 * statistics, Gantt lanes, time series, flame chart rows and the merged call
 * tree, all already reduced to what can be seen at the chart's resolution),
 * the SVG writer and the chart and page writers.
 *
 * Files: cmd_report.c (options, orchestration, output files), report_data.c
 * (reading: one walk of each rank's calls, in start order, for the flame
 * chart, the call-path tree and, when it can, the Gantt lanes and time
 * series; the statistics and percentiles from the reader),
 * report_svg.c (XML escaping, numbers, axes, palettes, chart frames),
 * report_charts.c (Gantt, flame chart, flame graph, time series),
 * report_scaling.c (durations, speedup, efficiency, imbalance),
 * report_views.c (sections drawn by the page's script from the JSON blob) and
 * report_html.c (the page, from the template and assets in assets/).
 *
 * All times in the model are int64 nanoseconds of the file's clock; charts
 * show seconds-based units relative to the file's first region entry.
 */
#ifndef SP_REPORT_INTERNAL_H
#define SP_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/cli_util.h"
#include "scope_profiler/reader.h"

/* ---- options ---------------------------------------------------------------------- */

enum rp_metric { RP_AVG, RP_MIN, RP_MAX, RP_TOTAL, RP_NMETRICS };
enum rp_palette { RP_PAL_TAB20, RP_PAL_TAB10, RP_PAL_HUES, RP_NPALETTES };

struct rp_opts {
  const char *title;
  const char *x_field;    /* speedup x: num_ranks (default), num_nodes, ... */
  int metrics[RP_NMETRICS];
  size_t nmetrics;
  int palette;
  int width;              /* chart width in px */
  size_t max_bars;        /* SVG marks per chart before level-of-detail folding */
  const char *flame_ranks; /* NULL: the lowest selected rank; "all"; or a rank spec */
  const char *memory;      /* allocation capture for the memory flame graph; NULL: the profile's */
};

/* ---- the model -------------------------------------------------------------------- */

/* One drawn mark: an exact call (n == 1) or the calls merged into one pixel
 * column (n > 1): extent [s, e), summed duration, shortest and longest. For a
 * time-series mark s and e are the first and last start in the column. */
struct rp_mark {
  int64_t s, e, sum, dmin, dmax;
  uint64_t n;
  uint32_t region; /* file-local region index (flame chart: the longest call's) */
  int64_t gpu;     /* device time of its calls that have one (use_gpu_timing) */
  uint64_t ngpu;   /* how many have one */
};

struct rp_marks {
  struct rp_mark *v;
  size_t n, cap;
  int64_t lastb; /* the last mark's pixel column + 1 while adding calls; 0: not known */
  int64_t colend; /* with lastb: the first time past that column (INT64_MIN: not known) */
};

/* A Gantt lane: one region on one thread of one rank. */
struct rp_lane {
  size_t region;
  int64_t rank, thread;
  uint64_t calls;
  struct rp_marks m;
};

/* A time series: every call of one region on one rank. */
struct rp_series {
  size_t region;
  int64_t rank;
  uint64_t calls;
  struct rp_marks m;
};

/* A flame chart row: calls at one depth of one lane (thread or async task). */
struct rp_frow {
  int64_t thread, task;
  uint32_t vlane;         /* > 0: overlapping roots of an unrecorded thread */
  uint32_t depth;
  uint64_t calls;
  struct rp_marks m;
};

struct rp_fpanel { /* the flame chart of one rank */
  int64_t rank;
  struct rp_frow *rows;
  size_t nrows;
  uint64_t deep_calls; /* deeper than RP_MAX_DEPTH, not drawn */
  size_t overlaps;
};

struct rp_tnode { /* call-path tree merged over the selected ranks */
  uint32_t region;
  int64_t parent;
  uint64_t count;
  int64_t total_ns;
};

struct rp_region_row {
  size_t region;          /* file-local */
  size_t g;               /* global (colour) index */
  sp_region_stats s;      /* over the selected ranks, with percentiles and own time */
};

struct rp_file {
  sp_results *r;
  const char *path;
  char *abs;
  char *label;
  int has_events;
  int64_t origin, end;    /* first region entry; last exit over kept regions */
  int64_t *ranks;         /* selected ranks the file has, ascending */
  size_t nranks;
  size_t *gidx;           /* file region -> global region, SIZE_MAX when filtered out */
  struct rp_region_row *regs; /* kept regions with calls, in order of first call */
  size_t nregs;
  size_t *reg_of_g; /* global region -> its index in regs, SIZE_MAX: none (rp_assign_regions) */
  /* Gantt and time series */
  struct rp_lane *lanes;
  size_t nlanes;
  int64_t *gantt_ranks;   /* ranks whose lanes are kept (lane cap) */
  size_t ngantt_ranks;
  struct rp_series *series;
  size_t nseries;
  uint64_t lanes_dropped;   /* calls on lanes past the lane cap */
  /* flame */
  struct rp_fpanel *fpanels;
  size_t nfpanels;
  struct rp_tnode *tree;
  size_t ntree;
  size_t overlaps;
  /* what rp_load_events left to the walk of rp_load_flame (report_data.c) */
  struct rp_defer *defer;
};

struct rp_region { /* a region over all inputs, by name: its colour */
  char *name;
  char color[8];
  int dark;               /* text on it should be white */
};

struct rp_model {
  struct rp_opts *o;
  const sp_filter *f;
  struct rp_file *files;
  size_t nfiles;
  struct rp_region *regions; /* sorted by name */
  size_t nregions;
  int64_t *all_ranks;        /* union of the files' selected ranks */
  size_t nall_ranks;
  struct sp_cli_progress *prog;
  uint64_t pdone, ptotal;    /* one progress bar over every phase, in events */
  FILE *chart_spill;         /* where each finished chart's text moves (rp_svg_finish); NULL: kept in memory */
};

#define RP_MAX_DEPTH 64
#define RP_MIN_COLS 24

/* Layout shared by the charts with a time axis. */
#define RP_LEFT 200
#define RP_RIGHT 24
#define RP_PLOT_W(m) ((double)(m)->o->width - RP_LEFT - RP_RIGHT)

/* report_data.c: fill the model; each returns 0, or 2 after printing an error. */
int rp_load_file(struct rp_model *m, struct rp_file *f, const char *cmd); /* ranks, stats */
int rp_assign_regions(struct rp_model *m, const char *cmd); /* global regions, colours */
int rp_load_events(struct rp_model *m, struct rp_file *f, const char *cmd); /* Gantt, series */
int rp_load_flame(struct rp_model *m, struct rp_file *f, const char *cmd); /* stacks, tree */
int rp_load_table(struct rp_model *m, struct rp_file *f, const char *cmd); /* percentiles, own */
uint64_t rp_work(const struct rp_model *m, const struct rp_file *f); /* events the above read */
void rp_free_file(struct rp_file *f);
/* Re-bucket marks so that there are at most `cols` pixel columns over
 * [origin, origin + span): marks starting in the same column merge. */
void rp_marks_fold(struct rp_marks *m, int64_t origin, int64_t span, size_t cols);
size_t rp_global_region(const struct rp_model *m, const char *name);

/* ---- SVG -------------------------------------------------------------------------- */

/* XML-escape UTF-8 text for element content and attribute values; invalid
 * UTF-8 and control characters become U+FFFD, which keeps the file valid XML. */
void rp_xml(FILE *o, const char *s);
/* The same, clipped to `max` code points with an ellipsis. */
void rp_xml_clip(FILE *o, const char *s, size_t max);
/* A JSON string (UTF-8 kept, invalid bytes as U+FFFD, "<", ">" and "&"
 * escaped so that the text can sit inside a <script> element). */
void rp_json_str(FILE *o, const char *s);
/* A JSON number; null for NaN and infinities. */
void rp_json_num(FILE *o, double v);
/* A coordinate: at most two decimals, no trailing zeros. */
void rp_px(FILE *o, double v);
/* <line class="cls" .../> from (x1, y1) to (x2, y2), coordinates as rp_px. */
void rp_line(FILE *o, const char *cls, double x1, double y1, double x2, double y2);
/* The start tag <text class="cls" x=.. y=.. text-anchor="anchor" (none when
 * NULL), left open so that the caller can add attributes before its '>'. */
void rp_text_open(FILE *o, const char *cls, double x, double y, const char *anchor);
/* A duration in seconds with a readable unit: "12.3 ms". */
void rp_fmt_dur(char *buf, size_t size, double seconds);

/* An axis: value range, scale, ticks and the unit used for the labels. */
struct rp_axis {
  double lo, hi;          /* in data units (seconds for time axes) */
  int log;                /* log10 scale */
  int zero;               /* log scale with a band for 0 below its first decade */
  double unit_div;        /* label = value / unit_div */
  const char *unit;       /* "s", "ms", "µs", "ns", or "" */
  double ticks[24];
  size_t nticks;
};
void rp_axis_time(struct rp_axis *a, double lo, double hi);
void rp_axis_value(struct rp_axis *a, double lo, double hi, int log, int time_unit);
/* Give a log axis a band for the value 0 under its first decade, with a "0"
 * tick: durations of 0 ns (two clock reads one tick apart) are real and must
 * stay visible. No effect on a linear axis. */
void rp_axis_log_zero(struct rp_axis *a);
double rp_axis_map(const struct rp_axis *a, double v, double p0, double p1);
void rp_axis_label(const struct rp_axis *a, double v, char *buf, size_t size);

/* A chart being written: a stack of blocks (header, panels, legend) laid out
 * top to bottom. Blocks with a rank are what the page's rank selector hides
 * (the page's script re-stacks the remaining blocks). */
struct rp_chart {
  char id[64];
  const char *kind;
  char *title;
  int width;
  double y;               /* height of the blocks so far */
  uint64_t bars;          /* marks of class "bar" (what data-bars counts) */
  FILE *body;
  char *buf;
  size_t len;
  /* the body written straight to the model's scratch file (from body_off)
   * instead of memory; NULL: in memory (buf, len) */
  FILE *spill;
  long long body_off;
  struct sp_cli_strs notes;
  unsigned char *used;    /* global regions drawn (legend); NULL: no region legend */
  size_t nused;
  int rank_mode;          /* 0 none, 1 panels per rank, 2 marks carry ranks */
};

int rp_chart_begin(struct rp_chart *c, const struct rp_model *m, const char *id, const char *kind,
                   const char *title);
/* Open a block of height h; rank < 0: not rank-specific. */
void rp_block_begin(struct rp_chart *c, double h, int64_t rank, const char *cls);
void rp_block_end(struct rp_chart *c, double h);
void rp_chart_note(struct rp_chart *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Finish a chart drawn in memory: header with title and notes, blocks,
 * legend; the whole SVG is malloc'd into *svg. Frees the chart. 0 or -1
 * (no memory). (rp_svg_finish finishes one drawn into the scratch file.) */
int rp_chart_end(struct rp_chart *c, const struct rp_model *m, char **svg, size_t *len);
void rp_chart_discard(struct rp_chart *c);

/* CSS for region classes r<i> (fill) and t<i> (label colour). */
void rp_region_css(FILE *o, const struct rp_model *m);
/* Horizontal axis with ticks below a plot at (x, y), width w. */
void rp_draw_xaxis(FILE *o, const struct rp_axis *a, double x, double y, double w,
                   const char *title);
/* Horizontal grid lines across a plot at (x, y), w x h, one per tick of the
 * vertical axis a. */
void rp_draw_ygrid(FILE *o, const struct rp_axis *a, double x, double y, double w, double h);
/* Vertical axis with ticks left of a plot at (x, y), height h. */
void rp_draw_yaxis(FILE *o, const struct rp_axis *a, double x, double y, double h,
                   const char *title);
/* Common attributes of a drawn call: data-region, data-rank, data-start,
 * data-dur (seconds relative to the origin) and data-ri (global index). */
void rp_mark_attrs(FILE *o, const struct rp_model *m, const struct rp_file *f,
                   const struct rp_mark *k, int64_t rank);
void rp_mark_title(FILE *o, const struct rp_model *m, const struct rp_file *f,
                   const struct rp_mark *k, int64_t rank, int64_t thread, const char *extra);

/* Colours. */
int rp_palette_parse(const char *name);
const char *rp_palette_name(int palette);
void rp_palette_color(int palette, size_t i, size_t n, char out[8]);
int rp_color_is_dark(const char *hex);

/* ---- charts ----------------------------------------------------------------------- */

/* Each returns 0 and a malloc'd SVG (NULL when the chart does not apply;
 * *why then says why), or -1 when out of memory. */
struct rp_svg {
  char id[64];
  char file[64];          /* file name in the output directory */
  char *title;
  char *svg;
  size_t len;
  char *why;              /* why it was not drawn */
  /* drawn and moved out of memory (rp_svg_spill): its len bytes at
   * spill_off in spill (svg NULL); or drawn there (rp_chart_begin with a
   * scratch file): the header's len bytes at spill_off, then the body's
   * body_len at body_off, then the closing tags */
  FILE *spill;
  long long spill_off;
  long long body_off;
  size_t body_len;
  int streamed;
};

/* rp_svg_finish (and the chart that returns it): the chart could not be
 * written to the scratch file; drawn again without one, it is held in
 * memory (cmd_report.c). */
#define RP_SCRATCH_FAILED 3

/* Whether c was drawn (its text in memory or spilled). */
int rp_svg_drawn(const struct rp_svg *c);
/* Writes the chart's text to o, from memory or its spill; 0 or -1. */
int rp_svg_put(const struct rp_svg *c, FILE *o);

/* Finish chart c as out (id, file name, title, SVG); 0 or -1 (no memory,
 * the chart is freed either way). */
int rp_svg_finish(struct rp_chart *c, const struct rp_model *m, struct rp_svg *out, const char *id,
                  const char *file);
/* out as a chart that does not apply, with the reason; 0 or -1. */
int rp_svg_not_drawn(struct rp_svg *out, const char *id, const char *file, const char *title,
                     const char *why);

int rp_chart_gantt(struct rp_model *m, struct rp_svg *out);
int rp_chart_flame(struct rp_model *m, struct rp_svg *out);
int rp_chart_flamegraph(struct rp_model *m, struct rp_svg *out);
int rp_chart_timeseries(struct rp_model *m, struct rp_svg *out);
int rp_chart_durations(struct rp_model *m, int metric, struct rp_svg *out);
/* 0, -1 no memory, 2 an error printed (x field not found). */
int rp_chart_scaling(struct rp_model *m, const char *cmd, struct rp_svg *speedup,
                     struct rp_svg *efficiency);
int rp_chart_imbalance(struct rp_model *m, struct rp_svg *out);

/* report_export.c: the flame graph of r alone as a standalone SVG to out
 * (export flamegraph); *calls = the calls it covers. 0, or 2 after printing
 * an error. */
int rp_export_flamegraph(sp_results *r, const char *path, const sp_filter *f, int width,
                         const char *cmd, FILE *out, uint64_t *calls);

/* report_views.c: sections report.js draws from the JSON blob. */
struct rp_view_out {
  const char *id, *title;
  const char *notes;      /* a line under the title, or NULL */
  char *json;             /* the view's entry in the blob; NULL: nothing to show */
};
size_t rp_num_views(void);
/* report_memory.c: the use_memray views (view writers, as in report_views.c). */
int rp_view_memory(FILE *o, struct rp_model *m, const char *cmd, const char **notes);
int rp_view_memory_time(FILE *o, struct rp_model *m, const char *cmd, const char **notes);
int rp_view_memory_peak(FILE *o, struct rp_model *m, const char *cmd, const char **notes);
/* use_line_profiler's source view (report_lines.c). */
int rp_view_lines(FILE *o, struct rp_model *m, const char *cmd, const char **notes);
/* Fill out[0..rp_num_views()); 0, -1 no memory, 2 an error printed. */
int rp_views_build(struct rp_model *m, const char *cmd, struct rp_view_out *out);
void rp_views_free(struct rp_view_out *v, size_t n);

/* report_html.c: the page. */
int rp_write_html(FILE *o, const struct rp_model *m, const struct rp_svg *charts, size_t ncharts,
                  const struct rp_view_out *views, size_t nviews);

extern const char *const rp_metric_names[RP_NMETRICS + 1];

#endif
