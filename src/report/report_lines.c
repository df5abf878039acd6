/* report_lines.c - the report's source view (view "lines"), for profiles
 * written with use_line_profiler (docs/line-profiles.md): per file, rank,
 * region and function, the function's lines with their samples and CPU
 * time (rank<N>/line_profile records), the text of each line from the
 * record's stored source or the file on disk, the hottest records first.
 * report.js draws it with the "source" renderer: line_profiler's table with
 * each line's share of its record's time as heat behind the line.
 */
#include <stdlib.h>
#include <string.h>

#include "common/line_table.h"
#include "report/report_internal.h"

#define MAX_RECORDS 60 /* the hottest; the rest are named in the notes */

struct pick {
  const struct rp_file *f;
  const sp_line_profile *p;
  size_t ri; /* global region index, SIZE_MAX when the record names none we show */
  double total_s;
};

static int by_total(const void *a, const void *b) {
  const struct pick *x = a, *y = b;
  return (x->total_s < y->total_s) - (x->total_s > y->total_s);
}

struct row_ctx {
  FILE *o;
  double unit;
  int first;
};

static void put_row(void *ctx, const struct sp_line_row *r) {
  struct row_ctx *c = ctx;
  fputs(c->first ? "[" : ",[", c->o);
  c->first = 0;
  if (r->line > 0) fprintf(c->o, "%lld,", (long long)r->line);
  else fputs("null,", c->o);
  if (r->hits >= 0) {
    fprintf(c->o, "%lld,", (long long)r->hits);
    rp_json_num(c->o, r->time * c->unit);
  } else {
    fputs("null,null", c->o);
  }
  fputc(',', c->o);
  if (r->line <= 0 && r->has_addr) {
    char text[96];
    snprintf(text, sizeof text, "?? at %#llx in the object", (unsigned long long)r->addr);
    rp_json_str(c->o, text);
  } else {
    rp_json_str(c->o, r->line <= 0 ? "??" : r->text);
  }
  fputc(']', c->o);
}

int rp_view_lines(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  struct pick *v = NULL;
  size_t n = 0, cap = 0;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const struct rp_file *f = &m->files[fi];
    const sp_line_profile *p;
    size_t np;
    if (sp_results_line_profiles(f->r, &p, &np) != SP_OK) {
      free(v);
      return sp_cli_error(cmd, "%s: %s", f->path, sp_last_error());
    }
    for (size_t k = 0; k < np; k++) {
      size_t ri = SIZE_MAX;
      if (!sp_filter_match_rank(m->f, p[k].rank)) continue;
      if (p[k].region && sp_results_find_region(f->r, p[k].region, &ri) == SP_OK) {
        if (f->gidx[ri] == SIZE_MAX) continue; /* a region the filters leave out */
        ri = f->gidx[ri];
      } else {
        ri = SIZE_MAX;
      }
      if (n == cap) {
        size_t nc = cap ? cap * 2 : 64;
        struct pick *nv = realloc(v, nc * sizeof *nv);
        if (!nv) {
          free(v);
          return -1;
        }
        v = nv;
        cap = nc;
      }
      double t = 0;
      for (size_t i = 0; i < p[k].n; i++) t += p[k].times[i];
      v[n++] = (struct pick){f, &p[k], ri, t * (p[k].unit > 0 ? p[k].unit : 1.0)};
    }
  }
  if (!n) {
    free(v);
    return 0;
  }
  qsort(v, n, sizeof *v, by_total);
  size_t shown = n < MAX_RECORDS ? n : MAX_RECORDS;
  static char note[400];
  snprintf(note, sizeof note,
           "Line profiles (use_line_profiler): per rank, region and function, the CPU time of the samples "
           "taken at each line (self time: a call line does not include its callee), hottest records first%s. "
           "The shade behind a line is its share of the record's time. The rank selector filters the lines; "
           "a click highlights the region.",
           n > shown ? "; the coolest ones are left out (scope-profiler inspect --lines REGION shows them)" : "");
  *notes = note;
  int several = m->nfiles > 1;
  fprintf(o, "{\"renderer\":\"source\",\"records_in_files\":%zu,\"records\":[", n);
  for (size_t k = 0; k < shown; k++) {
    const sp_line_profile *p = v[k].p;
    fputs(k ? ",{" : "{", o);
    if (several) {
      fputs("\"file\":", o);
      rp_json_str(o, v[k].f->label);
      fputc(',', o);
    }
    fprintf(o, "\"rank\":%lld,\"ri\":%lld,\"region\":", (long long)p->rank,
            v[k].ri == SIZE_MAX ? -1LL : (long long)v[k].ri);
    rp_json_str(o, p->region ? p->region : "");
    fputs(",\"function\":", o);
    rp_json_str(o, p->function ? p->function : "??");
    fputs(",\"filename\":", o);
    rp_json_str(o, p->filename ? p->filename : "??");
    fputs(",\"total\":", o);
    rp_json_num(o, v[k].total_s);
    fputs(",\"inlined_into\":[", o);
    for (size_t i = 0; i < p->ninlined; i++) {
      if (i) fputc(',', o);
      rp_json_str(o, p->inlined_into[i]);
    }
    fputs("],\"rows\":[", o);
    struct sp_line_table t = {p->region, p->filename, p->function, p->first_lineno, p->unit, p->n,
                              p->line_numbers, p->hits, p->times, p->addresses, p->module, p->source,
                              p->source_first_lineno, p->inlined_into, p->ninlined};
    struct row_ctx c = {o, p->unit > 0 ? p->unit : 1.0, 1};
    if (sp__line_table_rows(&t, 1, put_row, &c) < 0) {
      free(v);
      return -1;
    }
    fputs("]}", o);
  }
  fputs("]}", o);
  free(v);
  return 1;
}
