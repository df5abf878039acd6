/* report_views.c - the report's views: sections of report.html that the
 * C side describes as data (one entry of the JSON blob's "views") and
 * report.js draws with the renderer the entry names. A probe adds its view
 * with one row in `views` below (an id, a title and a writer of its JSON)
 * plus, when the generic "table" renderer does not fit, a renderer in
 * report.js; docs/report.md says what each renderer takes.
 *
 * Views here:
 *  - threads: per rank and thread, the calls recorded, the first entry and
 *    the last exit (files that recorded thread ids, track_threads).
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define SLICE 65536

struct thread_row {
  int64_t rank, thread;
  uint64_t calls;
  int64_t first, last;
};

static int cmp_threads(const void *pa, const void *pb) {
  const struct thread_row *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->thread < b->thread ? -1 : a->thread > b->thread;
}

/* The calls of the kept regions of f on its selected ranks, per thread. */
static int thread_rows(struct rp_model *m, struct rp_file *f, const char *cmd,
                       struct thread_row **out, size_t *nout) {
  struct thread_row *v = NULL;
  size_t n = 0, cap = 0;
  int64_t *st = malloc(SLICE * sizeof *st), *en = malloc(SLICE * sizeof *en);
  int64_t *th = malloc(SLICE * sizeof *th);
  int rc = st && en && th ? 0 : -1;
  for (size_t w = 0; w < sp_results_num_rows(f->r) && !rc; w++) {
    sp_row_info info;
    if (sp_results_row_info(f->r, w, &info) != SP_OK || info.count == 0 ||
        f->gidx[info.region] == SIZE_MAX || !sp_filter_match_rank(m->f, info.rank))
      continue;
    size_t last = 0; /* the row's previous thread: calls of one thread come in runs */
    for (uint64_t done = 0; done < info.count && !rc;) {
      size_t k = info.count - done < SLICE ? (size_t)(info.count - done) : SLICE;
      if (sp_results_row_read(f->r, w, done, k, st, en, NULL, NULL, th) != SP_OK) {
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
              struct thread_row *nv = realloc(v, cap * sizeof *nv);
              if (!nv) {
                rc = -1;
                break;
              }
              v = nv;
            }
            v[n++] = (struct thread_row){info.rank, th[i], 0, st[i], en[i]};
          }
        }
        struct thread_row *t = &v[last];
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
  if (n) qsort(v, n, sizeof *v, cmp_threads);
  *out = v;
  *nout = n;
  return 0;
}

static int view_threads(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  struct thread_row **rows = calloc(m->nfiles ? m->nfiles : 1, sizeof *rows);
  size_t *nrows = calloc(m->nfiles ? m->nfiles : 1, sizeof *nrows), total = 0;
  int rc = rows && nrows ? 0 : -1;
  for (size_t fi = 0; fi < m->nfiles && !rc; fi++) {
    struct rp_file *f = &m->files[fi];
    if (f->has_events && sp_results_has_threads(f->r) && f->nregs)
      rc = thread_rows(m, f, cmd, &rows[fi], &nrows[fi]);
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
        const struct thread_row *t = &rows[fi][k];
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
