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
 *  - thread_table, tasks: the lane tables the run wrote (track_threads,
 *    track_async) as they are in the file;
 *  - memory, memory_time, memory_peak: use_memray's figures
 *    (report_memory.c);
 *  - counters: per rank and region, each perf_events counter's total and
 *    mean per call (upstream's rank<N>/perf_events groups);
 *  - lines: use_line_profiler's source view, line_profiler's tables with
 *    per-line heat (report_lines.c);
 *  - gpu: per rank and region, device time beside CPU time (files with
 *    GPU times, use_gpu_timing).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "output/plan.h"
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

/* The event names of every file's counter rows, in order of appearance. */
static int add_event_name(char ***names, size_t *n, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*names)[i], name)) return (int)i;
  char **nn = realloc(*names, (*n + 1) * sizeof *nn);
  if (!nn) return -1;
  *names = nn;
  nn[*n] = (char *)name;
  return (int)(*n)++;
}

static int view_counters(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  sp_counter_row **rows = calloc(m->nfiles ? m->nfiles : 1, sizeof *rows);
  size_t *nrows = calloc(m->nfiles ? m->nfiles : 1, sizeof *nrows), total = 0, nev = 0;
  char **events = NULL;
  int rc = rows && nrows ? 0 : -1;
  for (size_t fi = 0; fi < m->nfiles && !rc; fi++) {
    if (sp_results_counters(m->files[fi].r, &rows[fi], &nrows[fi]) != SP_OK) {
      rc = sp_cli_error(cmd, "%s", sp_last_error());
      break;
    }
    for (size_t k = 0; k < nrows[fi] && !rc; k++)
      for (size_t e = 0; e < rows[fi][k].nevents && !rc; e++)
        if (add_event_name(&events, &nev, rows[fi][k].event_names[e]) < 0) rc = -1;
    total += nrows[fi];
  }
  int written = 0;
  if (!rc && total && nev) {
    *notes = "Hardware and software counters per rank and region (perf_events), summed over the "
             "region's calls, and their mean per call. The rank selector filters the rows; a click "
             "highlights the region.";
    int several = m->nfiles > 1;
    fprintf(o, "{\"renderer\":\"table\",\"rank_column\":%d,\"region_column\":%d,\"columns\":[", several,
            several + 1);
    if (several) fputs("{\"key\":\"file\",\"label\":\"file\",\"text\":true},", o);
    fputs("{\"key\":\"rank\",\"label\":\"rank\"},{\"key\":\"region\",\"label\":\"region\",\"text\":true,\"region\":true},"
          "{\"key\":\"calls\",\"label\":\"calls\"}",
          o);
    for (size_t e = 0; e < nev; e++) {
      fputs(",{\"key\":", o);
      char key[32];
      snprintf(key, sizeof key, "e%zu", e);
      rp_json_str(o, key);
      fputs(",\"label\":", o);
      rp_json_str(o, events[e]);
      fputs("},{\"key\":", o);
      snprintf(key, sizeof key, "e%zu_call", e);
      rp_json_str(o, key);
      char label[300];
      snprintf(label, sizeof label, "%s per call", events[e]);
      fputs(",\"label\":", o);
      rp_json_str(o, label);
      fputc('}', o);
    }
    fputs("],\"rows\":[", o);
    for (size_t fi = 0; fi < m->nfiles; fi++) {
      const struct rp_file *f = &m->files[fi];
      for (size_t k = 0; k < nrows[fi]; k++) {
        const sp_counter_row *c = &rows[fi][k];
        size_t ri;
        if (!sp_filter_match_rank(m->f, c->rank) || sp_results_find_region(f->r, c->region, &ri) != SP_OK ||
            f->gidx[ri] == SIZE_MAX)
          continue;
        fputs(written++ ? ",[" : "[", o);
        if (several) {
          rp_json_str(o, f->label);
          fputc(',', o);
        }
        fprintf(o, "%lld,%zu,%lld", (long long)c->rank, f->gidx[ri], (long long)c->calls);
        for (size_t e = 0; e < nev; e++) {
          size_t j = 0;
          while (j < c->nevents && strcmp(c->event_names[j], events[e])) j++;
          if (j == c->nevents) {
            fputs(",null,null", o);
            continue;
          }
          fprintf(o, ",%llu,", (unsigned long long)c->values[j]);
          rp_json_num(o, c->calls ? (double)c->values[j] / (double)c->calls : 0);
        }
        fputc(']', o);
      }
    }
    fputs("]}", o);
  }
  for (size_t fi = 0; rows && fi < m->nfiles; fi++) sp_counter_rows_free(rows[fi], nrows[fi]);
  free(rows);
  free(nrows);
  free(events);
  return rc ? rc : written ? 1 : 0;
}

/* A JSON number, null for the -1 that lane tables store for "unknown". */
static void num_or_null(FILE *o, int64_t v) {
  if (v < 0) fputs("null", o);
  else fprintf(o, "%lld", (long long)v);
}

/* The lane tables' views (thread_table, tasks): one column list per table
 * gives both the table's head and where each row's cell is, so a column is
 * added in one place. */
struct lane_col {
  const char *head; /* "key:label[:ns|:text]" */
  char cell;        /* 'i' an int64, 'n' an int64 shown empty when -1 (unknown), 's' a string */
  size_t off, alt;  /* the field; for 's', alt: a second string shown when the first is empty */
};

struct lane_table {
  int tasks; /* the table: 0 threads (sp_results_thread_table), 1 tasks */
  size_t stride, ncols;
  const struct lane_col *cols;
  const char *notes;
};

#define THREAD_COLS(X)                                                                                  \
  X("rank:rank", 'i', rank) X("index:thread", 'i', index) X("native_id:OS thread id", 'n', native_id) \
  X("omp_thread:OpenMP thread", 'n', omp_thread) X("start:start:ns", 'n', start_ns)                   \
  X("end:end:ns", 'n', end_ns) X("cpu:CPU time:ns", 'n', cpu_ns) X("name:name:text", 's', name)
#define TASK_COLS(X)                                                                                     \
  X("rank:rank", 'i', rank) X("index:task", 'i', index) X("thread:thread", 'n', thread_index)          \
  X("kind:kind:text", 's', kind) X("created:created:ns", 'n', created_ns) X("done:done:ns", 'n', done_ns) \
  X("steps:steps", 'i', steps) X("running:running:ns", 'n', running_ns)                                 \
  X("suspended:suspended:ns", 'n', suspended_ns)
#define THREAD_COL(head, cell, f) {head, cell, offsetof(sp_thread_info, f), 0},
#define TASK_COL(head, cell, f) {head, cell, offsetof(sp_task_info, f), 0},

static const struct lane_col thread_cols[] = {THREAD_COLS(THREAD_COL)};
static const struct lane_col task_cols[] = {
    TASK_COLS(TASK_COL)
    /* a task named only by its coroutine shows that name */
    {"name:name:text", 's', offsetof(sp_task_info, name), offsetof(sp_task_info, coro_name)},
};

static void lane_head(FILE *o, int several, const struct lane_table *t) {
  fputs("{\"renderer\":\"table\",\"rank_column\":", o);
  fprintf(o, "%d,\"columns\":[", several);
  if (several) fputs("{\"key\":\"file\",\"label\":\"file\",\"text\":true},", o);
  for (size_t c = 0; c < t->ncols; c++) {
    char key[64], label[64], kind[16] = "";
    if (sscanf(t->cols[c].head, "%63[^:]:%63[^:]:%15s", key, label, kind) < 2) continue;
    fprintf(o, "%s{\"key\":\"%s\",\"label\":\"%s\"%s}", c ? "," : "", key, label,
            !strcmp(kind, "ns") ? ",\"unit\":\"ns\"" : !strcmp(kind, "text") ? ",\"text\":true" : "");
  }
  fputs("],\"rows\":[", o);
}

static void lane_cell(FILE *o, const struct lane_col *k, const char *row) {
  if (k->cell == 's') {
    const char *s, *alt;
    memcpy(&s, row + k->off, sizeof s);
    if (k->alt && !(s && s[0])) {
      memcpy(&alt, row + k->alt, sizeof alt);
      s = alt;
    }
    rp_json_str(o, s);
    return;
  }
  int64_t v;
  memcpy(&v, row + k->off, sizeof v);
  if (k->cell == 'n') num_or_null(o, v);
  else fprintf(o, "%lld", (long long)v);
}

/* Every file's rows of the table, of the ranks the filter keeps; 0 (the
 * view left out) when there are none. */
static int lane_view(FILE *o, struct rp_model *m, const struct lane_table *t, const char **notes) {
  int several = m->nfiles > 1, any = 0;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const sp_thread_info *th = NULL;
    const sp_task_info *tk = NULL;
    size_t n = 0;
    sp_status st = t->tasks ? sp_results_task_table(m->files[fi].r, &tk, &n)
                            : sp_results_thread_table(m->files[fi].r, &th, &n);
    if (st != SP_OK) continue;
    const char *rows = t->tasks ? (const char *)tk : (const char *)th;
    for (size_t i = 0; i < n; i++) {
      const char *row = rows + i * t->stride;
      int64_t rank;
      memcpy(&rank, row + t->cols[0].off, sizeof rank); /* the first column is the rank */
      if (!sp_filter_match_rank(m->f, rank)) continue;
      if (!any) lane_head(o, several, t);
      fputs(any ? ",[" : "[", o);
      any = 1;
      if (several) {
        rp_json_str(o, m->files[fi].label);
        fputc(',', o);
      }
      for (size_t c = 0; c < t->ncols; c++) {
        if (c) fputc(',', o);
        lane_cell(o, &t->cols[c], row);
      }
      fputc(']', o);
    }
  }
  if (!any) return 0;
  fputs("]}", o);
  *notes = t->notes;
  return 1;
}

static const struct lane_table lane_tables[] = {
    /* the file's thread table (track_threads): names, OS ids, times, CPU */
    {0, sizeof(sp_thread_info), sizeof thread_cols / sizeof thread_cols[0], thread_cols,
     "The thread table the run recorded (track_threads): times from the rank's start (end empty: "
     "alive at finalize), CPU time of the thread."},
    /* the file's task table (track_async) */
    {1, sizeof(sp_task_info), sizeof task_cols / sizeof task_cols[0], task_cols,
     "The task table the run recorded (track_async): times from the rank's start (done empty: "
     "not finished), time running and suspended, scheduling steps."},
};

static int view_thread_table(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  (void)cmd;
  return lane_view(o, m, &lane_tables[0], notes);
}

static int view_tasks(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  (void)cmd;
  return lane_view(o, m, &lane_tables[1], notes);
}

/* Device time beside CPU time, per file, rank and region (summary rows only). */
static int view_gpu(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  size_t rows = 0;
  int several = m->nfiles > 1;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    if (!sp_results_has_gpu(f->r)) continue;
    for (size_t k = 0; k < f->nregs; k++)
      for (size_t ri = 0; ri < f->nranks; ri++) {
        size_t reg = f->regs[k].region;
        sp_region_stats s;
        uint64_t gn;
        int64_t gt;
        if (sp_results_region_rank_stats(f->r, reg, f->ranks[ri], 0, &s) != SP_OK ||
            sp_results_region_rank_gpu(f->r, reg, f->ranks[ri], &gn, &gt) != SP_OK)
          return sp_cli_error(cmd, "%s", sp_last_error());
        if (s.count == 0) continue;
        if (rows++ == 0) {
          fprintf(o, "{\"renderer\":\"table\",\"rank_column\":%d,\"region_column\":%d,\"columns\":[",
                  several, several + 1);
          if (several) fputs("{\"key\":\"file\",\"label\":\"file\",\"text\":true},", o);
          fputs("{\"key\":\"rank\",\"label\":\"rank\"},"
                "{\"key\":\"region\",\"label\":\"region\",\"text\":true,\"region\":true},"
                "{\"key\":\"calls\",\"label\":\"calls\"},"
                "{\"key\":\"cpu\",\"label\":\"CPU total\",\"unit\":\"ns\"},"
                "{\"key\":\"gpu_calls\",\"label\":\"calls with GPU time\"},"
                "{\"key\":\"gpu\",\"label\":\"GPU total\",\"unit\":\"ns\"},"
                "{\"key\":\"gpu_mean\",\"label\":\"GPU mean\",\"unit\":\"ns\"},"
                "{\"key\":\"ratio\",\"label\":\"GPU / CPU\"}],\"rows\":[",
                o);
        }
        fputs(rows > 1 ? ",[" : "[", o);
        if (several) {
          rp_json_str(o, f->label);
          fputc(',', o);
        }
        fprintf(o, "%lld,%zu,%llu,%lld,%llu,", (long long)f->ranks[ri], f->gidx[reg],
                (unsigned long long)s.count, (long long)s.total_ns, (unsigned long long)gn);
        if (gn) {
          fprintf(o, "%lld,", (long long)gt);
          rp_json_num(o, (double)gt / (double)gn);
          fputc(',', o);
          rp_json_num(o, s.total_ns > 0 ? (double)gt / (double)s.total_ns : NAN);
        } else {
          fputs("null,null,null", o);
        }
        fputc(']', o);
      }
  }
  if (!rows) return 0;
  fputs("]}", o);
  *notes = "Device time (use_gpu_timing) of each region's calls beside their CPU time, per rank: "
           "the CPU side is enqueue-side unless the run used gpu_sync_on_exit, so a GPU / CPU "
           "above 1 marks asynchronous work the region launched. GPU mean is over the calls that "
           "have a device time. The rank selector filters the rows.";
  return 1;
}

struct rp_view {
  const char *id, *title;
  /* Writes the view's JSON object to o: 1 written, 0 nothing to show (the
   * view is left out of the page), -1 out of memory, 2 an error printed. */
  int (*write)(FILE *o, struct rp_model *m, const char *cmd, const char **notes);
};

static const struct rp_view views[] = {
    {"threads", "Threads", view_threads},
    {SP_PLAN_THREAD_TABLE, "Thread table", view_thread_table}, /* named after the group it shows */
    {"tasks", "Task table", view_tasks},
    {"memory", "Memory by region", rp_view_memory},
    {"memory_time", "Memory over time", rp_view_memory_time},
    {"memory_peak", "Memory live at the peak: flame graph", rp_view_memory_peak},
    {"counters", "Counters", view_counters},
    {"lines", "Hot lines (line profiles)", rp_view_lines},
    {"gpu", "GPU time", view_gpu},
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
