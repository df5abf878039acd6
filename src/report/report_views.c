/* report_views.c - the report's views: sections of report.html that the
 * C side describes as data (one entry of the JSON blob's "views") and
 * report.js draws with the renderer the entry names. A probe adds its view
 * with one row in `views` below (an id, a title and a writer of its JSON)
 * plus, when the generic "table" renderer does not fit, a renderer in
 * report.js; docs/report.md says what each renderer takes.
 *
 * Views here:
 *  - threads: per rank and thread, the calls recorded, the first entry and
 *    the last exit (files that recorded thread ids, track_threads);
 *  - memory, memory_time, memory_peak: use_memray's figures
 *    (report_memory.c).
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

static int view_threads(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  struct sp_cli_thread_row **rows = calloc(m->nfiles ? m->nfiles : 1, sizeof *rows);
  size_t *nrows = calloc(m->nfiles ? m->nfiles : 1, sizeof *nrows), total = 0;
  int rc = rows && nrows ? 0 : -1;
  for (size_t fi = 0; fi < m->nfiles && !rc; fi++) {
    struct rp_file *f = &m->files[fi];
    if (f->has_events && sp_results_has_threads(f->r) && f->nregs)
      rc = sp_cli_thread_rows(cmd, f->r, m->f, &rows[fi], &nrows[fi]);
    total += nrows[fi];
  }
  if (!rc && total) {
    *notes = "Calls of the selected regions per rank and thread (files that recorded thread ids: "
             "track_threads), with each thread's first entry and last exit, in seconds from the "
             "file's first region entry. The rank selector filters the rows.";
    int several = m->nfiles > 1;
    fprintf(o, "{\"renderer\":\"table\",\"rank_column\":%d,\"columns\":[", several);
    if (several) fputs("{\"key\":\"file\",\"label\":\"file\",\"text\":true},", o);
    fputs("{\"key\":\"rank\",\"label\":\"rank\"},{\"key\":\"thread\",\"label\":\"thread\"},"
          "{\"key\":\"calls\",\"label\":\"calls\"},"
          "{\"key\":\"first\",\"label\":\"first entry\",\"unit\":\"ns\"},"
          "{\"key\":\"last\",\"label\":\"last exit\",\"unit\":\"ns\"}],\"rows\":[",
          o);
    int first = 1;
    for (size_t fi = 0; fi < m->nfiles; fi++) {
      const struct rp_file *f = &m->files[fi];
      for (size_t k = 0; k < nrows[fi]; k++) {
        const struct sp_cli_thread_row *t = &rows[fi][k];
        fputs(first ? "[" : ",[", o);
        first = 0;
        if (several) {
          rp_json_str(o, f->label);
          fputc(',', o);
        }
        fprintf(o, "%lld,%lld,%llu,%lld,%lld]", (long long)t->rank, (long long)t->thread,
                (unsigned long long)t->calls, (long long)(t->first - f->origin),
                (long long)(t->last - f->origin));
      }
    }
    fputs("]}", o);
  }
  for (size_t fi = 0; rows && fi < m->nfiles; fi++) free(rows[fi]);
  free(rows);
  free(nrows);
  return rc ? rc : total ? 1 : 0;
}

struct rp_view {
  const char *id, *title;
  /* Writes the view's JSON object to o: 1 written, 0 nothing to show (the
   * view is left out of the page), -1 out of memory, 2 an error printed. */
  int (*write)(FILE *o, struct rp_model *m, const char *cmd, const char **notes);
};

static const struct rp_view views[] = {
    {"threads", "Threads", view_threads},
    {"memory", "Memory by region", rp_view_memory},
    {"memory_time", "Memory over time", rp_view_memory_time},
    {"memory_peak", "Memory live at the peak: flame graph", rp_view_memory_peak},
};

size_t rp_num_views(void) { return sizeof views / sizeof views[0]; }

int rp_views_build(struct rp_model *m, const char *cmd, struct rp_view_out *out) {
  for (size_t i = 0; i < rp_num_views(); i++) {
    struct rp_view_out *v = &out[i];
    memset(v, 0, sizeof *v);
    v->id = views[i].id;
    v->title = views[i].title;
    size_t len = 0;
    FILE *o = open_memstream(&v->json, &len);
    if (!o) return -1;
    int rc = views[i].write(o, m, cmd, &v->notes);
    if (fclose(o) != 0 && rc >= 0) rc = -1;
    if (rc != 1) {
      free(v->json);
      v->json = NULL;
    }
    if (rc < 0 || rc == 2) return rc;
  }
  return 0;
}

void rp_views_free(struct rp_view_out *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i].json);
}
