/* cmd_inspect.c - `scope-profiler inspect`: a profile's metadata and one
 * statistics line per region, or its call tree, the captured source of a
 * region, region_statistics.json, or the metadata as JSON.
 *
 * The default columns come from the summary rows alone, so inspecting a file
 * of any size reads a few kilobytes; percentile columns, own time without
 * stored exclusive totals, and --tree read events (with a progress bar on a
 * terminal when that takes a while).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_lines.h"
#include "cli/cli_util.h"
#include "cli/cli_opts.h"
#include "cli/commands.h"
#include "common/overhead.h"
#include "output/plan.h"
#include "read/memcap_read.h"

#define CMD "inspect"
#define CLIP 80

static const char about[] =
    "Show a profile's metadata and per-region statistics (seconds, aggregated\n"
    "over the selected ranks). FILE may be a glob pattern (\"runs/*.h5\",\n"
    "\"runs/**/*.h5\"). Reads everything upstream scope-profiler writes, by\n"
    "content: HDF5 schemas 3, 2 (columnar and aggregate) and 1, JSON profiles\n"
    "(.json, .json.gz) and native traces (.spt).\n";

static const char epilog[] =
    "imbalance = slowest rank's total / mean rank total (ranks with the region);\n"
    "own = inclusive time minus the time of direct children.\n"
    "ovh = % of the region's time that is profiler overhead: calls x the cost of one\n"
    "begin/end pair measured at setup, warm (overhead_pair_ns) for calls under 20\n"
    "pairs, uncached (overhead_cold_pair_ns) from 40 on, linearly between; what the\n"
    "run paid once (fresh pages, growth: overhead_extra_ns) is no region's.\n"
    "\"!\" marks calls under 20x one pair (overhead_pair_ns, measured at setup).\n"
    "gpu = device time (use_gpu_timing) of the calls that have one, gpu_avg per such\n"
    "call, gpu_ratio = gpu / total (CPU time is enqueue-side); shown by default for\n"
    "files with GPU times.\n"
    "p50/p95/p99 read the region's events; the other columns use summary rows.\n"
    "alloc, freed, allocs, peak: memory while the region's calls were open (profiles\n"
    "written with use_memray): bytes allocated and freed, allocations (sums over\n"
    "calls and ranks) and the largest call's peak of live bytes above its entry;\n"
    "`--columns memory` shows them with region, calls and total.\n"
    "\n"
    "examples:\n"
    "  scope-profiler inspect profile.h5\n"
    "  scope-profiler inspect profile.h5 --columns region calls total p95 imbalance --sort p95\n"
    "  scope-profiler inspect 'runs/*.h5' --include solve --ranks 0-3 -q\n"
    "  scope-profiler inspect profile.h5 --tree\n"
    "  scope-profiler inspect profile.h5 --threads --ranks 0\n"
    "  scope-profiler inspect profile.h5 --source solve\n"
    "  scope-profiler inspect profile.h5 --json > region_statistics.json\n"
    "\n"
    "exit status: 0 success, 2 usage or input error.\n";

enum col {
  C_REGION, C_RANKS, C_CALLS, C_TOTAL, C_AVG, C_MIN, C_MAX, C_FIRST, C_LAST, C_STD,
  C_P50, C_P95, C_P99, C_IMBALANCE, C_OWN, C_OVH, C_MALLOC, C_MFREED, C_MCOUNT, C_MPEAK, C_GPU,
  C_GPU_AVG, C_GPU_RATIO, C_NAME, C_COUNT
};
#define C_MEMORY C_NAME /* --columns memory: the memory column set, not a column */
static const char *const col_names[] = {"region", "ranks", "calls", "total", "avg", "min",
                                        "max", "first", "last", "std", "p50", "p95", "p99",
                                        "imbalance", "own", "ovh", "alloc", "freed", "allocs",
                                        "peak", "gpu", "gpu_avg", "gpu_ratio", "name"};
static const char *const col_heads[] = {"region", "ranks", "calls", "total [s]", "avg [s]",
                                        "min [s]", "max [s]", "first [s]", "last [s]", "std [s]",
                                        "p50 [s]", "p95 [s]", "p99 [s]", "imbalance", "own [s]",
                                        "ovh %", "alloc", "freed", "allocs", "peak", "gpu [s]",
                                        "gpu avg [s]", "gpu/cpu", "region"};

static int col_index(const char *name) {
  for (int i = 0; i < C_COUNT; i++)
    if (!strcmp(name, col_names[i])) return i;
  return -1;
}

struct row {
  const char *name;
  sp_region_stats s;
  double ovh_ns;  /* files without overhead_pair_ns: their cost per call; NaN unknown */
  double flag_ns; /* the calibrated pair alone (files before it: ovh_ns), for "!" */
  double cold_ns; /* overhead_cold_pair_ns; NaN unknown */
  int has_mem;   /* use_memray figures (rank<N>/memory) */
  int64_t mem[4]; /* alloc, freed, allocs (sums), peak (the largest) */
  uint64_t gpu_count; /* calls with a device time (use_gpu_timing) */
  int64_t gpu_total;
};

/* Value of a column for sorting and printing; NaN when unknown. */
static double col_value(const struct row *r, int c) {
  const sp_region_stats *s = &r->s;
  int empty = s->count == 0;
  switch (c) {
  case C_RANKS: return (double)s->ranks;
  case C_CALLS: return (double)s->count;
  case C_TOTAL: return empty ? NAN : (double)s->total_ns;
  case C_AVG: return empty ? NAN : s->mean_ns;
  case C_MIN: return empty ? NAN : (double)s->min_ns;
  case C_MAX: return empty ? NAN : (double)s->max_ns;
  case C_FIRST: return empty ? NAN : (double)s->first_ns;
  case C_LAST: return empty ? NAN : (double)s->last_ns;
  case C_STD: return empty ? NAN : s->std_ns;
  case C_P50: return s->has_percentiles ? s->p50_ns : NAN;
  case C_P95: return s->has_percentiles ? s->p95_ns : NAN;
  case C_P99: return s->has_percentiles ? s->p99_ns : NAN;
  case C_IMBALANCE: return s->imbalance;
  case C_OWN: return s->has_own ? (double)s->own_ns : NAN;
  case C_MALLOC:
  case C_MFREED:
  case C_MCOUNT:
  case C_MPEAK: return r->has_mem ? (double)r->mem[c - C_MALLOC] : NAN;
  /* share of the region's time spent in the profiler: its calls times the
   * pair cost their length implies (the pairs measured at setup, warm and
   * uncached: common/overhead.h, as the summary finalize prints) */
  case C_OVH: {
    double per = isnan(r->ovh_ns) ? sp__ovh_call_ns(s->mean_ns, r->flag_ns, r->cold_ns) : r->ovh_ns;
    if (empty || isnan(r->flag_ns) || per < 0 || s->total_ns <= 0) return NAN;
    return fmin(100.0, 100.0 * (double)s->count * per / (double)s->total_ns);
  }
  /* device time: over the calls that have one; the ratio compares it with
   * the CPU (enqueue-side) time of all calls */
  case C_GPU: return r->gpu_count ? (double)r->gpu_total : NAN;
  case C_GPU_AVG: return r->gpu_count ? (double)r->gpu_total / (double)r->gpu_count : NAN;
  case C_GPU_RATIO:
    return r->gpu_count && !empty && s->total_ns > 0 ? (double)r->gpu_total / (double)s->total_ns : NAN;
  default: return NAN;
  }
}

static void col_text(const struct row *r, int c, char *buf, size_t size) {
  double v = col_value(r, c);
  if (c == C_REGION) snprintf(buf, size, "%s", r->name);
  else if (isnan(v)) snprintf(buf, size, "-");
  else if (c == C_RANKS) snprintf(buf, size, "%zu", r->s.ranks);
  else if (c == C_CALLS) snprintf(buf, size, "%llu", (unsigned long long)r->s.count);
  else if (c == C_IMBALANCE || c == C_GPU_RATIO) snprintf(buf, size, "%.2f", v);
  else if (c == C_MCOUNT) snprintf(buf, size, "%lld", (long long)r->mem[2]);
  else if (c >= C_MALLOC && c <= C_MPEAK) sp_cli_fmt_bytes(buf, size, r->mem[c - C_MALLOC]);
  /* "!": calls so short that the profiler's cost is a large part of them */
  else if (c == C_OVH) snprintf(buf, size, "%.1f%s", v, r->s.mean_ns < 20 * r->flag_ns ? "!" : "");
  else sp_cli_fmt_seconds(buf, size, v);
}

static int sort_key;
static int cmp_rows(const void *pa, const void *pb) {
  const struct row *a = pa, *b = pb;
  if (sort_key != C_NAME) {
    double x = col_value(a, sort_key), y = col_value(b, sort_key);
    if (isnan(x) != isnan(y)) return isnan(x) ? 1 : -1; /* unknown values last */
    if (!isnan(x) && x != y) return x > y ? -1 : 1;     /* largest first */
  }
  return strcmp(a->name, b->name);
}

struct opts {
  struct sp_cli_strs files, include, exclude, ranks, sources, lines;
  struct sp_cli_choices columns;
  const char *export_metadata;
  int sort, full, quiet, metadata_only, regions_only, tree, json, threads;
};

static const char *const sort_keys[] = {"total", "calls", "avg", "min", "max", "first",
                                        "last", "std", "p50", "p95", "p99", "imbalance",
                                        "own", "alloc", "freed", "allocs", "peak", "gpu",
                                        "gpu_avg", "gpu_ratio", "name", NULL};
/* the columns, in enum col order */
static const char *const column_names[] = {"region", "ranks", "calls", "total", "avg", "min",
                                           "max", "first", "last", "std", "p50", "p95", "p99",
                                           "imbalance", "own", "ovh", "alloc", "freed", "allocs",
                                           "peak", "gpu", "gpu_avg", "gpu_ratio", "memory", NULL};

static const struct sp_cli_opt opt_rows[] = {
    SP_CLI_OPT_FILTERS(struct opts, "ranks to aggregate, e.g. 0,2,4-7 (default: all)"),
    {"--sort", NULL, "KEY", SP_OPT_CHOICE, offsetof(struct opts, sort), "{choices}",
     .choices = sort_keys, .def = "total", .what = "--sort key"},
    {"--columns", NULL, "COL...", SP_OPT_CHOICES, offsetof(struct opts, columns),
     "region, ranks, calls, total, avg, min, max, first, last, std, p50, p95, p99, imbalance, "
     "own, ovh, alloc, freed, allocs, peak, gpu, gpu_avg, gpu_ratio, or the set memory\n"
     "(default: region ranks calls total avg; gpu gpu_avg gpu_ratio for files with GPU "
     "times, ovh for files that measured the profiler's overhead, alloc and peak for files "
     "written with use_memray)",
     .choices = column_names, .what = "column"},
    {"--tree", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, tree),
     .help = "the call tree with % of the session and (own) rows"},
    {"--threads", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, threads),
     .help = "calls, first entry and last exit per rank and thread (files with thread ids)"},
    {"--source", NULL, "NAME...", SP_OPT_LIST, offsetof(struct opts, sources),
     .help = "print where a region is declared and its source"},
    {"--lines", NULL, "REGION...", SP_OPT_LIST, offsetof(struct opts, lines),
     .help = "the region's line profile (use_line_profiler) as line_profiler's tables"},
    {"--json", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, json),
     .help = "print region_statistics.json to stdout"},
    {"--export-metadata", NULL, "F", SP_OPT_STR, offsetof(struct opts, export_metadata),
     .help = "write {\"files\":[{file_path,num_ranks,metadata}]} to F"},
    {"--full", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, full),
     .help = "do not clip long metadata values"},
    {"--metadata-only", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, metadata_only),
     .help = "only the metadata"},
    {"--regions-only", NULL, NULL, SP_OPT_FLAG, offsetof(struct opts, regions_only),
     .help = "only the region statistics"},
    {"--quiet", "-q", NULL, SP_OPT_FLAG, offsetof(struct opts, quiet),
     .help = "no file header and no metadata"},
};

static const struct sp_cli_spec spec = {CMD, "FILE... [options]", about, opt_rows,
                                        SP_CLI_NROWS(opt_rows), offsetof(struct opts, files),
                                        "no FILE given", epilog};

/* A metadata value on one line: newlines shown as \n, clipped unless --full. */
static void print_meta_value(const char *text, int full) {
  size_t w = 0;
  for (const char *p = text; *p; p++) {
    if (((unsigned char)*p & 0xC0) != 0x80) w++;
    if (!full && w > CLIP - 3) {
      fputs("...", stdout);
      return;
    }
    if (*p == '\n') fputs("\\n", stdout);
    else if (*p == '\r' || *p == '\t') fputc(' ', stdout);
    else fputc(*p, stdout);
  }
}

static void print_header(sp_results *r, const char *path) {
  size_t nr = sp_results_num_ranks(r);
  printf("file: %s\n", path);
  const char *fmt = sp_results_source_format(r);
  if (!strcmp(fmt, "json"))
    printf("  label: %s | JSON profile v%d (%s) | ranks: %zu", sp_results_display_label(r), sp_results_schema(r),
           sp_results_layout(r), nr);
  else if (!strcmp(fmt, "native"))
    printf("  label: %s | native trace v%d | ranks: %zu", sp_results_display_label(r), sp_results_schema(r), nr);
  else
    printf("  label: %s | schema %d (%s) | ranks: %zu", sp_results_display_label(r), sp_results_schema(r),
           sp_results_layout(r), nr);
  if (nr > 0) {
    printf(" (%lld", (long long)sp_results_rank(r, 0));
    if (nr > 1) printf("-%lld", (long long)sp_results_rank(r, nr - 1));
    printf(")");
  }
  printf(" | regions: %zu", sp_results_num_regions(r));
  if (sp_results_has_events(r)) printf(" | events: %llu", (unsigned long long)sp_results_num_events(r));
  printf("\n");
}

static void print_metadata(sp_results *r, int full) {
  size_t n = sp_results_num_metadata(r), kw = 0;
  printf("metadata:\n");
  if (n == 0) printf("  (none)\n");
  for (size_t i = 0; i < n; i++) {
    size_t w = sp_cli_width(sp_results_metadata_at(r, i)->key);
    if (w > kw) kw = w;
  }
  if (kw > 28) kw = 28;
  for (size_t i = 0; i < n; i++) {
    const sp_metadata_entry *e = sp_results_metadata_at(r, i);
    fputs("  ", stdout);
    sp_cli_pad(stdout, e->key, kw, 0);
    fputs("  ", stdout);
    print_meta_value(e->text, full);
    fputc('\n', stdout);
  }
}

static int print_table(sp_results *r, const sp_filter *f, const int *cols, size_t ncols,
                       unsigned flags, int auto_cols) {
  size_t nreg = sp_results_num_regions(r);
  struct row *rows = calloc(nreg ? nreg : 1, sizeof *rows);
  if (!rows) return sp_cli_error(CMD, "out of memory");
  size_t n = 0;
  /* Files with the calibrated pairs get each region's estimate from them;
   * older ones had one cost per call for every region. */
  const sp_metadata_entry *ovh = sp_results_metadata(r, "overhead_ns_per_call");
  double ovh_ns = ovh && (ovh->kind == SP_VALUE_FLOAT || ovh->kind == SP_VALUE_INT)
                      ? (ovh->kind == SP_VALUE_FLOAT ? ovh->f : (double)ovh->i)
                      : NAN;
  const sp_metadata_entry *pair = sp_results_metadata(r, "overhead_pair_ns"),
                          *cold = sp_results_metadata(r, "overhead_cold_pair_ns");
  double flag_ns = pair && pair->kind == SP_VALUE_FLOAT ? pair->f : ovh_ns;
  double cold_ns = cold && cold->kind == SP_VALUE_FLOAT ? cold->f : NAN;
  if (pair && pair->kind == SP_VALUE_FLOAT) ovh_ns = NAN;
  struct sp_memory_table mt;
  if (sp__results_memory(r, &mt) != SP_OK) {
    free(rows);
    return sp_cli_error(CMD, "%s", sp_last_error());
  }
  /* The default columns gain the GPU columns for files with device times,
   * "ovh %" for files that measured their overhead, and alloc and peak for
   * files with memory figures. */
  int cols_auto[C_COUNT * 2 + 6];
  if (auto_cols && ncols <= C_COUNT * 2) {
    memcpy(cols_auto, cols, ncols * sizeof *cols);
    if (sp_results_has_gpu(r)) {
      cols_auto[ncols++] = C_GPU;
      cols_auto[ncols++] = C_GPU_AVG;
      cols_auto[ncols++] = C_GPU_RATIO;
    }
    if (!isnan(flag_ns)) cols_auto[ncols++] = C_OVH;
    if (mt.n) {
      cols_auto[ncols++] = C_MALLOC;
      cols_auto[ncols++] = C_MPEAK;
    }
    cols = cols_auto;
  }
  struct sp_cli_progress prog;
  sp_cli_progress_start(&prog, "reading events");
  sp_results_set_progress(r, sp_cli_progress_cb, &prog);
  for (size_t i = 0; i < nreg; i++) {
    const char *name = sp_results_region_name(r, i);
    if (!sp_filter_match_region(f, name)) continue;
    sp_region_stats s;
    if (sp_results_region_stats(r, i, f, flags, &s) != SP_OK) {
      sp_cli_progress_end(&prog);
      free(rows);
      sp__memory_table_free(&mt);
      return sp_cli_error(CMD, "%s", sp_last_error());
    }
    if (s.ranks == 0) continue; /* not on the selected ranks */
    rows[n].name = name;
    rows[n].s = s;
    rows[n].ovh_ns = ovh_ns;
    rows[n].flag_ns = flag_ns;
    rows[n].cold_ns = cold_ns;
    for (size_t k = 0; k < mt.n; k++) {
      const struct sp_memory_row *x = &mt.rows[k];
      if (strcmp(x->region, name) || !sp_filter_match_rank(f, x->rank)) continue;
      rows[n].has_mem = 1;
      rows[n].mem[0] += x->alloc_bytes;
      rows[n].mem[1] += x->freed_bytes;
      rows[n].mem[2] += x->alloc_count;
      if (x->peak_bytes > rows[n].mem[3]) rows[n].mem[3] = x->peak_bytes;
    }
    if (sp_results_region_gpu(r, i, f, &rows[n].gpu_count, &rows[n].gpu_total) != SP_OK) {
      sp_cli_progress_end(&prog);
      free(rows);
      sp__memory_table_free(&mt);
      return sp_cli_error(CMD, "%s", sp_last_error());
    }
    n++;
  }
  sp_cli_progress_end(&prog);
  sp_results_set_progress(r, NULL, NULL);
  if (n == 0) {
    printf("(no regions match the selected filters)\n");
    free(rows);
    sp__memory_table_free(&mt);
    return 0;
  }
  qsort(rows, n, sizeof *rows, cmp_rows);
  size_t width[C_COUNT * 2 + 6];
  char buf[256];
  for (size_t c = 0; c < ncols; c++) {
    width[c] = sp_cli_width(col_heads[cols[c]]);
    for (size_t i = 0; i < n; i++) {
      col_text(&rows[i], cols[c], buf, sizeof buf);
      if (sp_cli_width(buf) > width[c]) width[c] = sp_cli_width(buf);
    }
  }
  for (size_t c = 0; c < ncols; c++) {
    if (c) fputs("  ", stdout);
    sp_cli_pad(stdout, col_heads[cols[c]], c + 1 == ncols && cols[c] == C_REGION ? 0 : width[c],
               cols[c] != C_REGION);
  }
  fputc('\n', stdout);
  for (size_t i = 0; i < n; i++) {
    for (size_t c = 0; c < ncols; c++) {
      if (c) fputs("  ", stdout);
      col_text(&rows[i], cols[c], buf, sizeof buf);
      sp_cli_pad(stdout, buf, c + 1 == ncols && cols[c] == C_REGION ? 0 : width[c],
                 cols[c] != C_REGION);
    }
    fputc('\n', stdout);
  }
  free(rows);
  sp__memory_table_free(&mt);
  int rc = sp_cli_print_counters(CMD, r, f);
  return rc ? rc : sp_cli_print_likwid(CMD, r, f);
}

/* ---- --tree ------------------------------------------------------------------------ */

struct tree_ctx {
  sp_results *r;
  sp_tree_node *nodes;
  size_t n;
  size_t **kids; /* children of each node, by total descending */
  size_t *nkids;
  double denom;
  size_t name_w;
  char prefix[1024];
};

/* What a node's % measures: its total, or for calls of several threads the
 * time they covered, so a region that ran on 8 threads at once for the whole
 * session shows 100%, not 800%. */
static double node_share(const sp_tree_node *x) {
  return x->threads > 1 && x->wall_ns > 0 ? (double)x->wall_ns : (double)x->total_ns;
}

/* `share` is what the % column measures: the time the calls covered, so a
 * region that ran on 8 threads at once for the whole session shows 100%. */
static void tree_line(const struct tree_ctx *t, const char *label, const char *calls, double total,
                      double avg, double share) {
  char line[2048], pct[32], tot[64], av[64];
  snprintf(line, sizeof line, "%s%s", t->prefix, label);
  snprintf(pct, sizeof pct, "%.1f%%", t->denom > 0 ? 100.0 * share / t->denom : 0.0);
  sp_cli_fmt_seconds(tot, sizeof tot, total);
  sp_cli_fmt_seconds(av, sizeof av, avg);
  sp_cli_pad(stdout, line, t->name_w, 0);
  printf("  %8s  %9s  %12s", calls, pct, tot);
  if (avg >= 0) printf("  %12s", av);
  fputc('\n', stdout);
}

/* Widest "prefix + name" in the subtree. */
static size_t tree_width(const struct tree_ctx *t, size_t node, size_t indent) {
  size_t w = indent + sp_cli_width(sp_results_region_name(t->r, t->nodes[node].region));
  if (t->nodes[node].threads > 1) w += (size_t)snprintf(NULL, 0, " [%u threads]", t->nodes[node].threads);
  if (t->nkids[node] && indent + 3 + 5 > w) w = indent + 3 + 5;
  for (size_t k = 0; k < t->nkids[node]; k++) {
    size_t c = tree_width(t, t->kids[node][k], indent + 3);
    if (c > w) w = c;
  }
  return w;
}

static void tree_print(struct tree_ctx *t, size_t node, const char *branch, const char *cont) {
  const sp_tree_node *x = &t->nodes[node];
  char label[1200], calls[32];
  snprintf(label, sizeof label, "%s%s", branch, sp_results_region_name(t->r, x->region));
  snprintf(calls, sizeof calls, "%llu", (unsigned long long)x->count);
  if (x->threads > 1) /* summed over threads: say over how many */
    snprintf(label + strlen(label), sizeof label - strlen(label), " [%u threads]", x->threads);
  tree_line(t, label, calls, (double)x->total_ns, (double)x->total_ns / (double)x->count, node_share(x));
  size_t plen = strlen(t->prefix);
  if (plen + strlen(cont) + 8 >= sizeof t->prefix) return;
  strcat(t->prefix, cont);
  size_t nk = t->nkids[node];
  if (nk) {
    /* the parent's time outside its children comes first */
    snprintf(label, sizeof label, "%s(own)", "├─ ");
    /* own time summed over threads: its share scaled like the node's */
    double own = (double)(x->total_ns - x->children_ns);
    tree_line(t, label, "", own, -1, x->total_ns > 0 ? own * node_share(x) / (double)x->total_ns : own);
  }
  for (size_t k = 0; k < nk; k++)
    tree_print(t, t->kids[node][k], k + 1 == nk ? "└─ " : "├─ ", k + 1 == nk ? "   " : "│  ");
  t->prefix[plen] = '\0';
}

static int print_tree(sp_results *r, const sp_filter *f) {
  struct tree_ctx t;
  memset(&t, 0, sizeof t);
  t.r = r;
  struct sp_cli_progress prog;
  sp_cli_progress_start(&prog, "building the call tree");
  sp_results_set_progress(r, sp_cli_progress_cb, &prog);
  sp_status st = sp_results_call_tree(r, f, &t.nodes, &t.n);
  sp_cli_progress_end(&prog);
  sp_results_set_progress(r, NULL, NULL);
  if (st != SP_OK) return sp_cli_error(CMD, "--tree: %s", sp_last_error());
  if (t.n == 0) {
    printf("(no calls match the selected filters)\n");
    free(t.nodes);
    return 0;
  }
  t.kids = calloc(t.n, sizeof *t.kids);
  t.nkids = calloc(t.n, sizeof *t.nkids);
  size_t *roots = malloc(t.n * sizeof *roots), nroots = 0;
  size_t *all = malloc(t.n * sizeof *all);
  if (!t.kids || !t.nkids || !roots || !all) return sp_cli_error(CMD, "out of memory");
  for (size_t i = 0; i < t.n; i++)
    if (t.nodes[i].parent >= 0) t.nkids[t.nodes[i].parent]++;
  size_t off = 0;
  for (size_t i = 0; i < t.n; i++) {
    t.kids[i] = all + off;
    off += t.nkids[i];
    t.nkids[i] = 0;
  }
  double session = 0, roots_total = 0;
  int has_session = 0;
  for (size_t i = 0; i < t.n; i++) {
    if (t.nodes[i].parent >= 0) {
      size_t p = (size_t)t.nodes[i].parent;
      t.kids[p][t.nkids[p]++] = i;
    } else {
      roots[nroots++] = i;
      roots_total += node_share(&t.nodes[i]);
      if (!strcmp(sp_results_region_name(r, t.nodes[i].region), "scope_profiler.session")) {
        session += (double)t.nodes[i].total_ns;
        has_session = 1;
      }
    }
  }
  t.denom = has_session ? session : roots_total;
  for (size_t i = 0; i < t.n; i++) sp_cli_sort_tree_nodes(r, t.nodes, t.kids[i], t.nkids[i]);
  sp_cli_sort_tree_nodes(r, t.nodes, roots, nroots);
  t.name_w = 6;
  for (size_t i = 0; i < nroots; i++) {
    size_t w = tree_width(&t, roots[i], 0);
    if (w > t.name_w) t.name_w = w;
  }
  sp_cli_pad(stdout, "region", t.name_w, 0);
  printf("  %8s  %9s  %12s  %12s\n", "n", "% session", "total [s]", "avg [s]");
  for (size_t i = 0; i < nroots; i++) tree_print(&t, roots[i], "", "");
  free(roots);
  free(all);
  free(t.kids);
  free(t.nkids);
  free(t.nodes);
  return 0;
}

/* ---- lane tables ---------------------------------------------------------------------- */

/* Print rows of cells (row 0 = the header) aligned: text columns left, the
 * others right. cells[r * ncols + c]. */
static void print_cells(char (*cells)[48], size_t nrows, size_t ncols, const int *text) {
  size_t w[16] = {0};
  for (size_t r = 0; r < nrows; r++)
    for (size_t c = 0; c < ncols && c < 16; c++)
      if (sp_cli_width(cells[r * ncols + c]) > w[c]) w[c] = sp_cli_width(cells[r * ncols + c]);
  for (size_t r = 0; r < nrows; r++) {
    fputs("  ", stdout);
    for (size_t c = 0; c < ncols && c < 16; c++) {
      if (c) fputs("  ", stdout);
      sp_cli_pad(stdout, cells[r * ncols + c], c + 1 == ncols && text[c] ? 0 : w[c], !text[c]);
    }
    fputc('\n', stdout);
  }
}

static void fmt_rel(char *buf, size_t size, int64_t ns, const char *unknown) {
  if (ns < 0) snprintf(buf, size, "%s", unknown);
  else sp_cli_fmt_seconds(buf, size, (double)ns);
}

/* The thread table (track_threads) and the task table (track_async) of the
 * selected ranks, when the file has them. */
static int print_lane_tables(sp_results *r, const sp_filter *f) {
  const sp_thread_info *t;
  size_t nt = 0;
  if (sp_results_thread_table(r, &t, &nt) != SP_OK) return sp_cli_error(CMD, "%s", sp_last_error());
  size_t keep = 0;
  for (size_t i = 0; i < nt; i++) keep += sp_filter_match_rank(f, t[i].rank);
  if (keep) {
    enum { NC = 8 };
    static const int text[NC] = {0, 0, 0, 0, 0, 0, 0, 1};
    char (*cells)[48] = calloc((keep + 1) * NC, sizeof *cells);
    if (!cells) return sp_cli_error(CMD, "out of memory");
    /* the file's field names, from the dataset plan */
    const char *const heads[NC] = {"rank", "index", sp__plan(SP_DS_THR_NATIVE_ID)->name,
                                   sp__plan(SP_DS_THR_OMP_THREAD)->name, "start [s]", "end [s]", "cpu [s]", "name"};
    for (size_t c = 0; c < NC; c++) snprintf(cells[c], 48, "%s", heads[c]);
    size_t row = 1;
    for (size_t i = 0; i < nt; i++) {
      if (!sp_filter_match_rank(f, t[i].rank)) continue;
      char (*x)[48] = cells + row++ * NC;
      snprintf(x[0], 48, "%lld", (long long)t[i].rank);
      snprintf(x[1], 48, "%lld", (long long)t[i].index);
      snprintf(x[2], 48, "%lld", (long long)t[i].native_id);
      if (t[i].omp_thread >= 0) snprintf(x[3], 48, "%lld", (long long)t[i].omp_thread);
      else snprintf(x[3], 48, "-");
      fmt_rel(x[4], 48, t[i].start_ns, "-");
      fmt_rel(x[5], 48, t[i].end_ns, "alive");
      fmt_rel(x[6], 48, t[i].cpu_ns, "-");
      snprintf(x[7], 48, "%.47s", t[i].name ? t[i].name : "");
    }
    printf("threads (%zu; times from the rank's start):\n", keep);
    print_cells(cells, keep + 1, NC, text);
    free(cells);
  }
  const sp_task_info *k;
  size_t nk = 0;
  if (sp_results_task_table(r, &k, &nk) != SP_OK) return sp_cli_error(CMD, "%s", sp_last_error());
  keep = 0;
  for (size_t i = 0; i < nk; i++) keep += sp_filter_match_rank(f, k[i].rank);
  if (keep) {
    enum { NC = 10 };
    static const int text[NC] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 1};
    char (*cells)[48] = calloc((keep + 1) * NC, sizeof *cells);
    if (!cells) return sp_cli_error(CMD, "out of memory");
    static const char *const heads[NC] = {"rank", "index", "thread", "kind", "created [s]",
                                          "done [s]", "steps", "running [s]", "suspended [s]",
                                          "name"};
    for (size_t c = 0; c < NC; c++) snprintf(cells[c], 48, "%s", heads[c]);
    size_t row = 1;
    for (size_t i = 0; i < nk; i++) {
      if (!sp_filter_match_rank(f, k[i].rank)) continue;
      char (*x)[48] = cells + row++ * NC;
      snprintf(x[0], 48, "%lld", (long long)k[i].rank);
      snprintf(x[1], 48, "%lld", (long long)k[i].index);
      if (k[i].thread_index >= 0) snprintf(x[2], 48, "%lld", (long long)k[i].thread_index);
      else snprintf(x[2], 48, "-");
      snprintf(x[3], 48, "%.47s", k[i].kind ? k[i].kind : "");
      fmt_rel(x[4], 48, k[i].created_ns, "-");
      fmt_rel(x[5], 48, k[i].done_ns, "running");
      snprintf(x[6], 48, "%lld", (long long)k[i].steps);
      fmt_rel(x[7], 48, k[i].running_ns, "-");
      fmt_rel(x[8], 48, k[i].suspended_ns, "-");
      snprintf(x[9], 48, "%.47s", k[i].name && k[i].name[0] ? k[i].name : k[i].coro_name ? k[i].coro_name : "");
    }
    printf("tasks (%zu; times from the rank's start):\n", keep);
    print_cells(cells, keep + 1, NC, text);
    free(cells);
  }
  return 0;
}

/* ---- --threads ------------------------------------------------------------------------- */

static int print_threads(sp_results *r, const sp_filter *f) {
  if (!sp_results_has_events(r))
    return sp_cli_error(CMD, "--threads: %s was written in the aggregate layout, which stores no "
                             "individual calls",
                        sp_results_path(r) ? sp_results_path(r) : "the file");
  if (!sp_results_has_threads(r)) {
    printf("(no thread ids in this file: record them with track_threads = true)\n");
    return 0;
  }
  struct sp_cli_thread_row *v;
  size_t n;
  struct sp_cli_progress prog;
  sp_cli_progress_start(&prog, "reading events");
  sp_results_set_progress(r, sp_cli_progress_cb, &prog);
  int rc = sp_cli_thread_rows(CMD, r, f, &v, &n);
  sp_cli_progress_end(&prog);
  sp_results_set_progress(r, NULL, NULL);
  if (rc) return rc < 0 ? sp_cli_error(CMD, "out of memory") : rc;
  if (n == 0) {
    printf("(no calls match the selected filters)\n");
    return 0;
  }
  int64_t origin = 0;
  sp_results_min_start(r, &origin);
  printf("%6s  %6s  %10s  %16s  %14s\n", "rank", "thread", "calls", "first entry [s]",
         "last exit [s]");
  for (size_t i = 0; i < n; i++) {
    char a[64], b[64];
    sp_cli_fmt_seconds(a, sizeof a, (double)(v[i].first - origin));
    sp_cli_fmt_seconds(b, sizeof b, (double)(v[i].last - origin));
    printf("%6lld  %6lld  %10llu  %16s  %14s\n", (long long)v[i].rank, (long long)v[i].thread,
           (unsigned long long)v[i].calls, a, b);
  }
  free(v);
  return 0;
}

/* ---- --source -------------------------------------------------------------------------- */

static int print_source(sp_results *r, const char *path, const char *name, int several) {
  size_t region;
  if (sp_results_find_region(r, name, &region) != SP_OK) {
    fprintf(stderr, "scope-profiler inspect: no region named '%s' in %s; regions:", name, path);
    for (size_t i = 0; i < sp_results_num_regions(r); i++)
      fprintf(stderr, "%s %s", i ? "," : "", sp_results_region_name(r, i));
    fputc('\n', stderr);
    return 2;
  }
  const char *file, *text;
  int64_t line;
  sp_results_region_source(r, region, &file, &line, &text);
  if (several) printf("%s: ", path);
  if (file[0] && line >= 0) printf("%s (%s:%lld)\n", name, file, (long long)line);
  else if (file[0]) printf("%s (%s)\n", name, file);
  else if (line >= 0) printf("%s (line %lld)\n", name, (long long)line);
  else printf("%s\n", name);
  if (text[0]) {
    fputs(text, stdout);
    if (text[strlen(text) - 1] != '\n') fputc('\n', stdout);
  } else {
    printf("source not captured\n");
  }
  return 0;
}

/* ---- main ------------------------------------------------------------------------------- */

static int parse(int argc, char **argv, struct opts *o) {
  int rc = sp_cli_parse(&spec, argc, argv, o);
  if (rc) return rc == SP_CLI_HELP ? -1 : rc;
  if (o->metadata_only && o->regions_only)
    return sp_cli_usage_error(CMD, "--metadata-only and --regions-only exclude each other");
  if (o->json && (o->tree || o->sources.n || o->threads || o->lines.n))
    return sp_cli_usage_error(CMD, "--json cannot be combined with --tree, --threads, --source or --lines");
  if (o->tree && o->threads)
    return sp_cli_usage_error(CMD, "--tree and --threads exclude each other; run them one by one");
  return 0;
}

int sp_cmd_inspect(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct sp_cli_strs files = {0};
  sp_results **rs = NULL;
  sp_filter *f = NULL;
  char **abs = NULL;
  int cols[C_COUNT * 2];
  size_t ncols = 0;
  unsigned flags = 0;
  int rc = parse(argc, argv, &o);
  if (rc) {
    rc = rc < 0 ? 0 : rc;
    goto out;
  }
  sort_key = col_index(sort_keys[o.sort]);
  if (o.columns.n == 0) {
    static const int def[] = {C_REGION, C_RANKS, C_CALLS, C_TOTAL, C_AVG};
    memcpy(cols, def, sizeof def);
    ncols = 5;
  }
  for (size_t i = 0; i < o.columns.n && ncols < C_COUNT * 2; i++) {
    if (o.columns.v[i] != C_MEMORY) {
      cols[ncols++] = o.columns.v[i];
      continue;
    }
    static const int memset_cols[] = {C_REGION, C_CALLS, C_TOTAL, C_MALLOC, C_MFREED, C_MCOUNT, C_MPEAK};
    for (size_t k = 0; k < sizeof memset_cols / sizeof memset_cols[0] && ncols < C_COUNT * 2; k++)
      cols[ncols++] = memset_cols[k];
  }
  for (size_t i = 0; i < ncols; i++) {
    if (cols[i] == C_P50 || cols[i] == C_P95 || cols[i] == C_P99) flags |= SP_STATS_PERCENTILES;
    if (cols[i] == C_OWN) flags |= SP_STATS_OWN;
  }
  if (sort_key == C_P50 || sort_key == C_P95 || sort_key == C_P99) flags |= SP_STATS_PERCENTILES;
  if (sort_key == C_OWN) flags |= SP_STATS_OWN;
  if ((rc = sp_cli_expand_files(CMD, &o.files, &files))) goto out;
  if ((rc = sp_cli_filter(CMD, &o.include, &o.exclude, &o.ranks, &f))) goto out;
  rs = calloc(files.n, sizeof *rs);
  abs = calloc(files.n, sizeof *abs);
  if (!rs || !abs) {
    rc = sp_cli_error(CMD, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < files.n; i++) {
    if ((rc = sp_cli_open(CMD, files.v[i], &rs[i]))) goto out;
    if ((rc = sp_cli_check_ranks(CMD, f, rs[i]))) goto out;
    abs[i] = sp_cli_abspath(files.v[i]);
  }
  if (o.export_metadata) {
    FILE *mf = fopen(o.export_metadata, "w");
    if (!mf) {
      rc = sp_cli_error(CMD, "cannot write %s: %s", o.export_metadata, strerror(errno));
      goto out;
    }
    sp_status st = sp_write_metadata_json(rs, files.n, (const char *const *)abs, mf);
    if (fclose(mf) != 0 && st == SP_OK) st = SP_ERR_IO;
    if (st != SP_OK) {
      rc = sp_cli_error(CMD, "cannot write %s: %s", o.export_metadata, sp_last_error());
      goto out;
    }
  }
  if (o.json) {
    if (sp_write_region_statistics_json(rs, files.n, NULL, (const char *const *)abs, f, stdout) !=
        SP_OK)
      rc = sp_cli_error(CMD, "%s", sp_last_error());
    goto out;
  }
  if (o.lines.n) {
    for (size_t s = 0; s < o.lines.n; s++)
      for (size_t i = 0; i < files.n; i++) {
        if (files.n > 1) printf("file: %s\n", files.v[i]);
        if ((rc = sp_cli_print_lines(stdout, rs[i], o.lines.v[s], CMD))) goto out;
      }
    goto out;
  }
  if (o.sources.n) {
    for (size_t s = 0; s < o.sources.n; s++)
      for (size_t i = 0; i < files.n; i++)
        if ((rc = print_source(rs[i], files.v[i], o.sources.v[s], files.n > 1))) goto out;
    goto out;
  }
  for (size_t i = 0; i < files.n; i++) {
    if (i) fputc('\n', stdout);
    if (!o.quiet) {
      print_header(rs[i], files.v[i]);
      if (!o.regions_only) print_metadata(rs[i], o.full);
      if (!o.regions_only && (rc = print_lane_tables(rs[i], f))) goto out;
      if (!o.metadata_only) fputc('\n', stdout);
    }
    if (o.quiet && files.n > 1) printf("file: %s\n", files.v[i]); /* which table is which */
    if (o.quiet && o.metadata_only) print_metadata(rs[i], o.full);
    if (o.metadata_only) continue;
    if ((rc = o.tree      ? print_tree(rs[i], f)
              : o.threads ? print_threads(rs[i], f)
                          : print_table(rs[i], f, cols, ncols, flags, o.columns.n == 0)))
      goto out;
  }
out:
  fflush(stdout);
  for (size_t i = 0; rs && i < files.n; i++) sp_results_free(rs[i]);
  for (size_t i = 0; abs && i < files.n; i++) free(abs[i]);
  free(rs);
  free(abs);
  sp_filter_free(f);
  sp_cli_strs_free(&files);
  sp_cli_opts_free(&spec, &o);
  return rc;
}
