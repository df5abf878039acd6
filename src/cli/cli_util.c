/* cli_util.c - helpers shared by the read-side commands: option scanning,
 * glob expansion, opening files with readable errors, the progress bar and
 * table formatting. See cli_util.h.
 */
#include "cli/cli_util.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sp_cli_strs_push(struct sp_cli_strs *s, const char *value) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    char **v = realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  char *copy = strdup(value);
  if (!copy) return -1;
  s->v[s->n++] = copy;
  return 0;
}

void sp_cli_strs_free(struct sp_cli_strs *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

int sp_cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "scope-profiler %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

int sp_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "scope-profiler %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nRun `scope-profiler %s --help` for usage and examples.\n", cmd);
  va_end(ap);
  return 2;
}

/* ---- options --------------------------------------------------------------- */

static int is_option(const char *s) {
  /* "-" alone is a positional (stdin/stdout); negative numbers are values */
  if (s[0] != '-' || s[1] == '\0') return 0;
  if ((s[1] >= '0' && s[1] <= '9') || s[1] == '.') return 0;
  return 1;
}

int sp_cli_positional(struct sp_cli_args *a) {
  const char *s = a->argv[a->i];
  if (a->only_positionals) return 1;
  if (!strcmp(s, "--")) {
    a->only_positionals = 1;
    return 0;
  }
  return !is_option(s);
}

int sp_cli_flag(struct sp_cli_args *a, const char *long_name, const char *short_name) {
  if (a->only_positionals) return 0;
  const char *s = a->argv[a->i];
  return (long_name && !strcmp(s, long_name)) || (short_name && !strcmp(s, short_name));
}

/* "--name=value" -> pointer to value; NULL otherwise. */
static const char *inline_value(const char *arg, const char *long_name) {
  size_t n = strlen(long_name);
  if (!strncmp(arg, long_name, n) && arg[n] == '=') return arg + n + 1;
  return NULL;
}

int sp_cli_value(struct sp_cli_args *a, const char *long_name, const char *short_name,
                 const char **value) {
  if (a->only_positionals) return 0;
  const char *s = a->argv[a->i];
  const char *v = long_name ? inline_value(s, long_name) : NULL;
  if (v) {
    *value = v;
    return 1;
  }
  if (!sp_cli_flag(a, long_name, short_name)) return 0;
  if (a->i + 1 >= a->argc || (is_option(a->argv[a->i + 1]) && strcmp(a->argv[a->i + 1], "-"))) {
    sp_cli_usage_error(a->cmd, "%s needs a value", s);
    return -1;
  }
  *value = a->argv[++a->i];
  return 1;
}

int sp_cli_list(struct sp_cli_args *a, const char *long_name, const char *short_name,
                struct sp_cli_strs *out) {
  if (a->only_positionals) return 0;
  const char *s = a->argv[a->i];
  const char *v = long_name ? inline_value(s, long_name) : NULL;
  if (v) {
    if (sp_cli_strs_push(out, v)) return -1;
    return 1;
  }
  if (!sp_cli_flag(a, long_name, short_name)) return 0;
  int taken = 0;
  while (a->i + 1 < a->argc && !is_option(a->argv[a->i + 1]) && strcmp(a->argv[a->i + 1], "--")) {
    if (sp_cli_strs_push(out, a->argv[++a->i])) return -1;
    taken++;
  }
  if (!taken) {
    sp_cli_usage_error(a->cmd, "%s needs at least one value", s);
    return -1;
  }
  return 1;
}

/* ---- files ------------------------------------------------------------------- */

static int has_magic(const char *p) { return strpbrk(p, "*?[") != NULL; }

static int push_unique(struct sp_cli_strs *files, const char *path) {
  for (size_t i = 0; i < files->n; i++)
    if (!strcmp(files->v[i], path)) return 0;
  return sp_cli_strs_push(files, path);
}

/* Every directory below `dir` (itself included), depth first, sorted. */
static int walk_dirs(const char *dir, struct sp_cli_strs *out, int depth) {
  if (depth > 64 || sp_cli_strs_push(out, dir)) return -1;
  struct dirent **list = NULL;
  int n = scandir(dir, &list, NULL, alphasort);
  for (int i = 0; i < n; i++) {
    const char *name = list[i]->d_name;
    if (strcmp(name, ".") && strcmp(name, "..") && name[0] != '.') {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/%s", dir, name);
      struct stat sb;
      if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) walk_dirs(path, out, depth + 1);
    }
    free(list[i]);
  }
  free(list);
  return 0;
}

/* glob(3) with "**" meaning any number of directories (like Python's
 * glob(recursive=True)). Matches are appended to `out`. */
static int glob_recursive(const char *pattern, struct sp_cli_strs *out) {
  const char *star = strstr(pattern, "**");
  int at_component = star && (star == pattern || star[-1] == '/') &&
                     (star[2] == '\0' || star[2] == '/');
  if (!at_component) {
    glob_t g;
    int rc = glob(pattern, 0, NULL, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; i++) push_unique(out, g.gl_pathv[i]);
    globfree(&g);
    return 0;
  }
  char prefix[PATH_MAX];
  size_t plen = (size_t)(star - pattern);
  snprintf(prefix, sizeof prefix, "%.*s", (int)(plen ? plen - 1 : 0), pattern);
  const char *rest = star[2] == '/' ? star + 3 : "";
  struct sp_cli_strs bases = {0}, dirs = {0};
  if (plen == 0) sp_cli_strs_push(&bases, ".");
  else glob_recursive(prefix[0] ? prefix : "/", &bases);
  for (size_t b = 0; b < bases.n; b++) {
    struct stat sb;
    if (stat(bases.v[b], &sb) == 0 && S_ISDIR(sb.st_mode)) walk_dirs(bases.v[b], &dirs, 0);
  }
  for (size_t d = 0; d < dirs.n; d++) {
    char sub[PATH_MAX];
    const char *dir = dirs.v[d];
    if (plen == 0 && !strncmp(dir, "./", 2)) dir += 2;
    else if (plen == 0 && !strcmp(dir, ".")) dir = "";
    if (!rest[0]) {
      if (dir[0]) push_unique(out, dir);
      continue;
    }
    snprintf(sub, sizeof sub, "%s%s%s", dir, dir[0] ? "/" : "", rest);
    glob_recursive(sub, out);
  }
  sp_cli_strs_free(&bases);
  sp_cli_strs_free(&dirs);
  return 0;
}

int sp_cli_expand_files(const char *cmd, const struct sp_cli_strs *patterns,
                        struct sp_cli_strs *files) {
  for (size_t i = 0; i < patterns->n; i++) {
    const char *p = patterns->v[i];
    if (!has_magic(p)) {
      if (push_unique(files, p)) return sp_cli_error(cmd, "out of memory");
      continue;
    }
    struct sp_cli_strs found = {0};
    glob_recursive(p, &found);
    size_t matched = 0; /* counted before de-duplication: an earlier pattern may have them */
    for (size_t k = 0; k < found.n; k++) {
      struct stat sb;
      if (stat(found.v[k], &sb) == 0 && S_ISREG(sb.st_mode)) {
        matched++;
        push_unique(files, found.v[k]);
      }
    }
    sp_cli_strs_free(&found);
    if (!matched) return sp_cli_error(cmd, "No files matched pattern: %s", p);
  }
  return 0;
}

int sp_cli_open(const char *cmd, const char *path, sp_results **out) {
  sp_status st = sp_results_open(path, out);
  if (st == SP_OK) return 0;
  return sp_cli_error(cmd, "%s", sp_last_error());
}

int sp_cli_filter(const char *cmd, const struct sp_cli_strs *include,
                  const struct sp_cli_strs *exclude, const struct sp_cli_strs *ranks,
                  sp_filter **out) {
  sp_filter *f;
  if (sp_filter_create(&f) != SP_OK) return sp_cli_error(cmd, "out of memory");
  sp_status st = SP_OK;
  for (size_t i = 0; include && i < include->n && st == SP_OK; i++)
    st = sp_filter_include(f, include->v[i]);
  for (size_t i = 0; exclude && i < exclude->n && st == SP_OK; i++)
    st = sp_filter_exclude(f, exclude->v[i]);
  for (size_t i = 0; ranks && i < ranks->n && st == SP_OK; i++) st = sp_filter_ranks(f, ranks->v[i]);
  if (st != SP_OK) {
    sp_filter_free(f);
    return sp_cli_usage_error(cmd, "%s", sp_last_error());
  }
  *out = f;
  return 0;
}

int sp_cli_check_ranks(const char *cmd, const sp_filter *f, const sp_results *r) {
  if (sp_filter_check_ranks(f, r) == SP_OK) return 0;
  return sp_cli_error(cmd, "%s; pick ranks with --ranks, e.g. --ranks 0", sp_last_error());
}

char *sp_cli_abspath(const char *path) {
  char *p = realpath(path, NULL);
  return p ? p : strdup(path);
}

/* ---- progress ------------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sp_cli_progress_start(struct sp_cli_progress *p, const char *label) {
  memset(p, 0, sizeof *p);
  p->label = label;
  p->start = now_s();
  p->enabled = isatty(STDERR_FILENO);
}

void sp_cli_progress_cb(void *ctx, uint64_t done, uint64_t total) {
  struct sp_cli_progress *p = ctx;
  if (!p || !p->enabled) return;
  double t = now_s();
  if (t - p->start < 1.0 || (t - p->last_draw < 0.1 && done < total)) return;
  p->last_draw = t;
  p->drawn = 1;
  double frac = total ? (double)done / (double)total : 1.0;
  if (frac > 1) frac = 1;
  char bar[31];
  int fill = (int)(frac * 30);
  for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
  bar[30] = '\0';
  fprintf(stderr, "\r%s [%s] %3d%% (%llu/%llu events, %.0f s)", p->label, bar, (int)(frac * 100),
          (unsigned long long)done, (unsigned long long)total, t - p->start);
  fflush(stderr);
}

void sp_cli_progress_end(struct sp_cli_progress *p) {
  if (p->drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  p->drawn = 0;
}

/* ---- formatting -------------------------------------------------------------------- */

void sp_cli_fmt_bytes(char *buf, size_t size, int64_t bytes) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = fabs((double)bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%lld B", (long long)bytes);
  else
    snprintf(buf, size, "%s%.1f %s", bytes < 0 ? "-" : "", v, unit[u]);
}

void sp_cli_fmt_seconds(char *buf, size_t size, double ns) {
  if (isnan(ns)) snprintf(buf, size, "-");
  else snprintf(buf, size, "%.6g", ns / 1e9);
}

size_t sp_cli_width(const char *s) {
  size_t w = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xC0) != 0x80) w++;
  return w;
}

size_t sp_cli_width_n(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n && s[i]; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
  return w;
}

void sp_cli_pad(FILE *out, const char *s, size_t width, int right) {
  size_t w = sp_cli_width(s);
  if (right)
    for (size_t i = w; i < width; i++) fputc(' ', out);
  fputs(s, out);
  if (!right)
    for (size_t i = w; i < width; i++) fputc(' ', out);
}

/* ---- threads --------------------------------------------------------------------- */

#define THREAD_SLICE 65536

static int cmp_thread_rows(const void *pa, const void *pb) {
  const struct sp_cli_thread_row *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->thread < b->thread ? -1 : a->thread > b->thread;
}

int sp_cli_thread_rows(const char *cmd, sp_results *r, const sp_filter *f,
                       struct sp_cli_thread_row **out, size_t *nout) {
  struct sp_cli_thread_row *v = NULL;
  size_t n = 0, cap = 0;
  *out = NULL;
  *nout = 0;
  if (!sp_results_has_events(r) || !sp_results_has_threads(r)) return 0;
  int64_t *st = malloc(THREAD_SLICE * sizeof *st), *en = malloc(THREAD_SLICE * sizeof *en);
  int64_t *th = malloc(THREAD_SLICE * sizeof *th);
  int rc = st && en && th ? 0 : -1;
  for (size_t w = 0; w < sp_results_num_rows(r) && !rc; w++) {
    sp_row_info info;
    if (sp_results_row_info(r, w, &info) != SP_OK || info.count == 0 ||
        !sp_filter_match_region(f, sp_results_region_name(r, info.region)) ||
        !sp_filter_match_rank(f, info.rank))
      continue;
    size_t last = 0; /* the previous call's thread: calls of one thread come in runs */
    for (uint64_t done = 0; done < info.count && !rc;) {
      size_t k = info.count - done < THREAD_SLICE ? (size_t)(info.count - done) : THREAD_SLICE;
      if (sp_results_row_read(r, w, done, k, st, en, NULL, NULL, th) != SP_OK) {
        rc = sp_cli_error(cmd, "%s", sp_last_error());
        break;
      }
      for (size_t i = 0; i < k && !rc; i++) {
        if (!(last < n && v[last].rank == info.rank && v[last].thread == th[i])) {
          for (last = 0; last < n && !(v[last].rank == info.rank && v[last].thread == th[i]);)
            last++;
          if (last == n) {
            if (n == cap) {
              cap = cap ? cap * 2 : 16;
              struct sp_cli_thread_row *nv = realloc(v, cap * sizeof *nv);
              if (!nv) {
                rc = -1;
                break;
              }
              v = nv;
            }
            v[n++] = (struct sp_cli_thread_row){info.rank, th[i], 0, st[i], en[i]};
          }
        }
        struct sp_cli_thread_row *t = &v[last];
        t->calls++;
        if (st[i] < t->first) t->first = st[i];
        if (en[i] > t->last) t->last = en[i];
      }
      done += k;
    }
  }
  free(st);
  free(en);
  free(th);
  if (rc) {
    free(v);
    return rc;
  }
  if (n) qsort(v, n, sizeof *v, cmp_thread_rows);
  *out = v;
  *nout = n;
  return 0;
}

/* ---- call trees -------------------------------------------------------------------- */

static const sp_results *tree_r;
static const sp_tree_node *tree_nodes;
static int cmp_tree_nodes(const void *pa, const void *pb) {
  const sp_tree_node *a = &tree_nodes[*(const size_t *)pa];
  const sp_tree_node *b = &tree_nodes[*(const size_t *)pb];
  if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
  return strcmp(sp_results_region_name(tree_r, a->region),
                sp_results_region_name(tree_r, b->region));
}

void sp_cli_sort_tree_nodes(const sp_results *r, const sp_tree_node *nodes, size_t *idx, size_t n) {
  if (n < 2) return;
  tree_r = r;
  tree_nodes = nodes;
  qsort(idx, n, sizeof *idx, cmp_tree_nodes);
}

/* ---- metrics and comparisons ------------------------------------------------------ */

const char *const sp_cli_metric_names[SP_CLI_NMETRICS + 1] = {
    "total", "avg", "min", "max", "p50", "p95", "p99", "imbalance", "calls", NULL};
#define metric_names sp_cli_metric_names

int sp_cli_metric_parse(const char *name) {
  for (int i = 0; i < SP_CLI_NMETRICS; i++)
    if (!strcmp(name, metric_names[i])) return i;
  return -1;
}

const char *sp_cli_metric_name(int metric) { return metric_names[metric]; }

const char *sp_cli_metric_unit(int metric) {
  return metric == SP_CLI_IMBALANCE || metric == SP_CLI_CALLS ? "" : " [s]";
}

void sp_cli_metric_fmt(char *buf, size_t size, int metric, double v, int sign) {
  if (isnan(v)) snprintf(buf, size, "-");
  else if (v == 0) snprintf(buf, size, "0");
  else if (metric == SP_CLI_CALLS) snprintf(buf, size, sign ? "%+.0f" : "%.0f", v);
  else if (metric == SP_CLI_IMBALANCE) snprintf(buf, size, sign ? "%+.2f" : "%.2f", v);
  else snprintf(buf, size, sign ? "%+.6g" : "%.6g", v / 1e9);
}

static double metric_value(const sp_region_stats *s, int m) {
  if (m == SP_CLI_CALLS) return (double)s->count;
  if (s->count == 0) return 0;
  switch (m) {
  case SP_CLI_TOTAL: return (double)s->total_ns;
  case SP_CLI_AVG: return s->mean_ns;
  case SP_CLI_MIN: return (double)s->min_ns;
  case SP_CLI_MAX: return (double)s->max_ns;
  case SP_CLI_P50: return s->has_percentiles ? s->p50_ns : NAN;
  case SP_CLI_P95: return s->has_percentiles ? s->p95_ns : NAN;
  case SP_CLI_P99: return s->has_percentiles ? s->p99_ns : NAN;
  case SP_CLI_IMBALANCE: return s->imbalance;
  default: return NAN;
  }
}

/* The metric of region `name` in r; *present 0 when r lacks it on the
 * selected ranks. 0, or 2 after printing an error. */
static int side_value(const char *cmd, sp_results *r, const char *name, const sp_filter *f,
                      int metric, int *present, double *v) {
  size_t region;
  *present = 0;
  *v = 0;
  if (sp_results_find_region(r, name, &region) != SP_OK) return 0;
  sp_region_stats s;
  unsigned flags = metric >= SP_CLI_P50 && metric <= SP_CLI_P99 ? SP_STATS_PERCENTILES : 0;
  if (sp_results_region_stats(r, region, f, flags, &s) != SP_OK)
    return sp_cli_error(cmd, "%s", sp_last_error());
  if (s.ranks == 0) return 0;
  *present = 1;
  *v = metric_value(&s, metric);
  if (isnan(*v))
    return sp_cli_error(cmd,
                        "metric %s needs the individual calls, but %s was written in the "
                        "aggregate layout; compare it on total, avg, min, max, imbalance or calls",
                        metric_names[metric], sp_results_path(r) ? sp_results_path(r) : "a file");
  return 0;
}

int sp_cli_compare(const char *cmd, sp_results *a, sp_results *b, const sp_filter *f, int metric,
                   struct sp_cli_cmp **rows, size_t *n) {
  size_t na = sp_results_num_regions(a), nb = sp_results_num_regions(b);
  struct sp_cli_cmp *v = calloc(na + nb + 1, sizeof *v);
  if (!v) return sp_cli_error(cmd, "out of memory");
  size_t k = 0;
  struct sp_cli_progress prog;
  sp_cli_progress_start(&prog, "reading events");
  sp_results_set_progress(a, sp_cli_progress_cb, &prog);
  sp_results_set_progress(b, sp_cli_progress_cb, &prog);
  int rc = 0;
  for (size_t side = 0; side < 2 && !rc; side++) {
    sp_results *r = side ? b : a;
    for (size_t i = 0; i < (side ? nb : na) && !rc; i++) {
      const char *name = sp_results_region_name(r, i);
      if (!sp_filter_match_region(f, name)) continue;
      size_t dummy;
      if (side && sp_results_find_region(a, name, &dummy) == SP_OK) {
        /* already compared from a's side, unless absent on a's selected ranks */
        int seen = 0;
        for (size_t j = 0; j < k && !seen; j++) seen = !strcmp(v[j].name, name);
        if (seen) continue;
      }
      struct sp_cli_cmp *c = &v[k];
      c->name = name;
      rc = side_value(cmd, a, name, f, metric, &c->in_a, &c->a);
      if (!rc) rc = side_value(cmd, b, name, f, metric, &c->in_b, &c->b);
      if (rc || (!c->in_a && !c->in_b)) continue;
      c->delta = c->b - c->a;
      if (c->in_a && c->in_b) c->pct = c->a != 0 ? 100.0 * c->delta / c->a : c->b == 0 ? 0 : INFINITY;
      else c->pct = c->in_a ? -100.0 : NAN;
      k++;
    }
  }
  sp_cli_progress_end(&prog);
  sp_results_set_progress(a, NULL, NULL);
  sp_results_set_progress(b, NULL, NULL);
  if (rc) {
    free(v);
    return rc;
  }
  *rows = v;
  *n = k;
  return 0;
}

int sp_cli_pair_open(const char *cmd, const struct sp_cli_strs *pos, const struct sp_cli_strs *include,
                     const struct sp_cli_strs *exclude, const struct sp_cli_strs *ranks, int metric,
                     struct sp_cli_pair *p) {
  memset(p, 0, sizeof *p);
  /* each side may be a pattern, but must name exactly one file */
  for (size_t side = 0; side < 2; side++) {
    struct sp_cli_strs one = {0}, got = {0};
    sp_cli_strs_push(&one, pos->v[side]);
    int rc = sp_cli_expand_files(cmd, &one, &got);
    sp_cli_strs_free(&one);
    if (!rc && got.n != 1)
      rc = sp_cli_usage_error(cmd, "'%s' matches %zu files; %s compares exactly two", pos->v[side], got.n, cmd);
    if (!rc) sp_cli_strs_push(&p->files, got.v[0]);
    sp_cli_strs_free(&got);
    if (rc) return rc;
  }
  int rc;
  if ((rc = sp_cli_filter(cmd, include, exclude, ranks, &p->f))) return rc;
  if ((rc = sp_cli_open(cmd, p->files.v[0], &p->a)) || (rc = sp_cli_open(cmd, p->files.v[1], &p->b))) return rc;
  if ((rc = sp_cli_check_ranks(cmd, p->f, p->a)) || (rc = sp_cli_check_ranks(cmd, p->f, p->b))) return rc;
  return sp_cli_compare(cmd, p->a, p->b, p->f, metric, &p->rows, &p->n);
}

void sp_cli_pair_free(struct sp_cli_pair *p) {
  free(p->rows);
  sp_results_free(p->a);
  sp_results_free(p->b);
  sp_filter_free(p->f);
  sp_cli_strs_free(&p->files);
  memset(p, 0, sizeof *p);
}
