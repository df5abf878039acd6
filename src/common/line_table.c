/* line_table.c - line_profiler's table for one line-profile record (see
 * line_table.h). Lines from the function's first line to its last sampled
 * one are listed, with their text when the record carries its source or
 * the file is readable; lines without samples show only their text. A
 * function spanning more than MAX_SPAN lines lists its sampled lines only.
 * Rows without line information (code without debug info) are listed by
 * their address in the object, as "??".
 */
#include "common/line_table.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SPAN 400

struct lines {
  char **v; /* v[i] is line first+i, without its newline */
  size_t n;
  int64_t first;
  char *buf;
};

static void split_source(struct lines *l, const char *src, int64_t first) {
  memset(l, 0, sizeof *l);
  if (!src || first < 1) return;
  l->buf = strdup(src);
  if (!l->buf) return;
  size_t cap = 0;
  for (char *p = l->buf; *p;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    if (l->n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      char **nv = realloc(l->v, ncap * sizeof *nv);
      if (!nv) break;
      l->v = nv;
      cap = ncap;
    }
    l->v[l->n++] = p;
    if (!nl) break;
    p = nl + 1;
  }
  l->first = first;
}

/* Lines 1..last of a file on disk, as one stored source would be. */
static char *file_head(const char *path, int64_t last) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return NULL;
  size_t len = 0, cap = 4096;
  char *out = malloc(cap);
  int64_t no = 0;
  int c;
  while (out && no < last && (c = fgetc(f)) != EOF) {
    if (len + 2 > cap) {
      char *n = realloc(out, cap * 2);
      if (!n) {
        free(out);
        out = NULL;
        break;
      }
      out = n;
      cap *= 2;
    }
    out[len++] = (char)c;
    if (c == '\n') no++;
  }
  fclose(f);
  if (out) out[len] = 0;
  return out;
}

static const char *text_of(const struct lines *l, int64_t line) {
  if (!l->v || line < l->first || (uint64_t)(line - l->first) >= l->n) return "";
  return l->v[line - l->first];
}

void sp__line_table_header(FILE *out, double unit) { fprintf(out, "Timer unit: %g s\n\n", unit > 0 ? unit : 1.0); }

static void row(FILE *out, const char *line, int64_t hits, double time, double total, const char *text) {
  fprintf(out, "%6s %9lld %12.1f %8.1f %8.1f  %s\n", line, (long long)hits, time, hits ? time / (double)hits : 0.0,
          total > 0 ? 100.0 * time / total : 0.0, text);
}

/* The first and last line and the total time of a record. */
static double span(const struct sp_line_table *t, int64_t *lo_out, int64_t *hi_out) {
  double total = 0;
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < t->n; i++) {
    total += t->times[i];
    int64_t ln = t->line_numbers[i];
    if (ln <= 0) continue;
    if (!lo || ln < lo) lo = ln;
    if (ln > hi) hi = ln;
  }
  if (hi && t->first_lineno > 0 && t->first_lineno < lo) lo = t->first_lineno;
  *lo_out = lo;
  *hi_out = hi;
  return total;
}

double sp__line_table_rows(const struct sp_line_table *t, int read_source,
                           void (*fn)(void *ctx, const struct sp_line_row *row), void *ctx) {
  int64_t lo, hi;
  double total = span(t, &lo, &hi);
  int has_lines = hi > 0;
  struct lines src;
  char *disk = NULL;
  split_source(&src, t->source, t->source_first_lineno);
  if (!src.v && read_source && has_lines && (disk = file_head(t->filename, hi)) != NULL) split_source(&src, disk, 1);
  for (size_t i = 0; i < t->n; i++) /* code without line information, by address */
    if (t->line_numbers[i] <= 0) {
      struct sp_line_row r = {0, t->hits[i], t->times[i], "", t->addresses ? t->addresses[i] : 0, t->addresses != NULL};
      fn(ctx, &r);
    }
  /* The sampled lines, sorted and summed (a line may have several rows). */
  struct agg {
    int64_t line, hits;
    double time;
  } *a = malloc((t->n + 1) * sizeof *a);
  size_t na = 0;
  for (size_t i = 0; a && i < t->n; i++) {
    if (t->line_numbers[i] <= 0) continue;
    size_t k = 0;
    while (k < na && a[k].line != t->line_numbers[i]) k++;
    if (k == na) a[na++] = (struct agg){t->line_numbers[i], 0, 0};
    a[k].hits += t->hits[i];
    a[k].time += t->times[i];
  }
  for (size_t i = 1; a && i < na; i++) /* insertion sort: records are short */
    for (size_t k = i; k > 0 && a[k - 1].line > a[k].line; k--) {
      struct agg x = a[k];
      a[k] = a[k - 1];
      a[k - 1] = x;
    }
  int sparse = hi - lo > MAX_SPAN;
  size_t k = 0;
  for (int64_t ln = lo; a && has_lines && ln <= hi;) {
    struct sp_line_row r = {ln, -1, 0, text_of(&src, ln), 0, 0};
    if (k < na && a[k].line == ln) {
      r.hits = a[k].hits;
      r.time = a[k].time;
      k++;
    }
    fn(ctx, &r);
    if (!sparse) ln++;
    else if (k < na) ln = a[k].line;
    else break;
  }
  int nomem = a == NULL;
  free(a);
  free(src.v);
  free(src.buf);
  free(disk);
  return nomem ? -1 : total;
}

struct print_ctx {
  FILE *out;
  double total;
};

static void print_row(void *ctx, const struct sp_line_row *r) {
  const struct print_ctx *p = ctx;
  char num[32];
  if (r->line <= 0) {
    char text[96] = "";
    if (r->has_addr) snprintf(text, sizeof text, "at %#llx in the object", (unsigned long long)r->addr);
    row(p->out, "??", r->hits, r->time, p->total, text);
    return;
  }
  snprintf(num, sizeof num, "%lld", (long long)r->line);
  if (r->hits >= 0) row(p->out, num, r->hits, r->time, p->total, r->text);
  else fprintf(p->out, "%6s %9s %12s %8s %8s  %s\n", num, "", "", "", "", r->text);
}

void sp__line_table_print(FILE *out, const struct sp_line_table *t, int read_source) {
  double unit = t->unit > 0 ? t->unit : 1.0;
  int64_t lo, hi;
  double total = span(t, &lo, &hi);
  fprintf(out, "Region: %s\n", t->region ? t->region : "");
  fprintf(out, "Total time: %g s\n", total * unit);
  fprintf(out, "File: %s\n", t->filename ? t->filename : "??");
  if (hi > 0)
    fprintf(out, "Function: %s at line %lld\n", t->function ? t->function : "??", (long long)lo);
  else
    fprintf(out, "Function: %s (no line information%s%s)\n", t->function ? t->function : "??",
            t->module ? " in " : "", t->module ? t->module : "");
  for (size_t k = 0; k < t->ninlined; k++)
    fprintf(out, "%s %s\n", k ? "             " : "Inlined into:", t->inlined_into[k]);
  fprintf(out, "\n%6s %9s %12s %8s %8s  %s\n", "Line #", "Hits", "Time", "Per Hit", "% Time", "Line Contents");
  fprintf(out, "==============================================================\n");
  struct print_ctx p = {out, total};
  sp__line_table_rows(t, read_source, print_row, &p);
  fputc('\n', out);
}
