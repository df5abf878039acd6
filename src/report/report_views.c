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
    fputs("{\"key\":\"rank\",\"label\":\"rank\"},{\"key\":\"region\",\"label\":\"region\",\"region\":true},"
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

/* Columns of a table view: each "key:label[:ns|:text]". */
static void table_head(FILE *o, int several, const char *const *cols) {
  fputs("{\"renderer\":\"table\",\"rank_column\":", o);
  fprintf(o, "%d,\"columns\":[", several);
  if (several) fputs("{\"key\":\"file\",\"label\":\"file\",\"text\":true},", o);
  for (size_t c = 0; cols[c]; c++) {
    char key[64], label[64], kind[16] = "";
    if (sscanf(cols[c], "%63[^:]:%63[^:]:%15s", key, label, kind) < 2) continue;
    fprintf(o, "%s{\"key\":\"%s\",\"label\":\"%s\"%s}", c ? "," : "", key, label,
            !strcmp(kind, "ns") ? ",\"unit\":\"ns\"" : !strcmp(kind, "text") ? ",\"text\":true" : "");
  }
  fputs("],\"rows\":[", o);
}

/* The file's thread table (track_threads): names, OS ids, times, CPU. */
static int view_thread_table(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  (void)cmd;
  static const char *const cols[] = {"rank:rank", "index:thread", "native_id:OS thread id",
                                     "omp_thread:OpenMP thread", "start:start:ns", "end:end:ns",
                                     "cpu:CPU time:ns", "name:name:text", NULL};
  int several = m->nfiles > 1, any = 0;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const sp_thread_info *t;
    size_t n = 0;
    if (sp_results_thread_table(m->files[fi].r, &t, &n) != SP_OK) continue;
    for (size_t i = 0; i < n; i++) {
      if (!sp_filter_match_rank(m->f, t[i].rank)) continue;
      if (!any) table_head(o, several, cols);
      fputs(any ? ",[" : "[", o);
      any = 1;
      if (several) {
        rp_json_str(o, m->files[fi].label);
        fputc(',', o);
      }
      fprintf(o, "%lld,%lld,", (long long)t[i].rank, (long long)t[i].index);
      num_or_null(o, t[i].native_id);
      fputc(',', o);
      num_or_null(o, t[i].omp_thread);
      fputc(',', o);
      num_or_null(o, t[i].start_ns);
      fputc(',', o);
      num_or_null(o, t[i].end_ns);
      fputc(',', o);
      num_or_null(o, t[i].cpu_ns);
      fputc(',', o);
      rp_json_str(o, t[i].name);
      fputc(']', o);
    }
  }
  if (!any) return 0;
  fputs("]}", o);
  *notes = "The thread table the run recorded (track_threads): times from the rank's start "
           "(end empty: alive at finalize), CPU time of the thread.";
  return 1;
}

/* The file's task table (track_async). */
static int view_tasks(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  (void)cmd;
  static const char *const cols[] = {"rank:rank", "index:task", "thread:thread", "kind:kind:text",
                                     "created:created:ns", "done:done:ns", "steps:steps",
                                     "running:running:ns", "suspended:suspended:ns",
                                     "name:name:text", NULL};
  int several = m->nfiles > 1, any = 0;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    const sp_task_info *k;
    size_t n = 0;
    if (sp_results_task_table(m->files[fi].r, &k, &n) != SP_OK) continue;
    for (size_t i = 0; i < n; i++) {
      if (!sp_filter_match_rank(m->f, k[i].rank)) continue;
      if (!any) table_head(o, several, cols);
      fputs(any ? ",[" : "[", o);
      any = 1;
      if (several) {
        rp_json_str(o, m->files[fi].label);
        fputc(',', o);
      }
      fprintf(o, "%lld,%lld,", (long long)k[i].rank, (long long)k[i].index);
      num_or_null(o, k[i].thread_index);
      fputc(',', o);
      rp_json_str(o, k[i].kind);
      fputc(',', o);
      num_or_null(o, k[i].created_ns);
      fputc(',', o);
      num_or_null(o, k[i].done_ns);
      fprintf(o, ",%lld,", (long long)k[i].steps);
      num_or_null(o, k[i].running_ns);
      fputc(',', o);
      num_or_null(o, k[i].suspended_ns);
      fputc(',', o);
      rp_json_str(o, k[i].name && k[i].name[0] ? k[i].name : k[i].coro_name);
      fputc(']', o);
    }
  }
  if (!any) return 0;
  fputs("]}", o);
  *notes = "The task table the run recorded (track_async): times from the rank's start (done "
           "empty: not finished), time running and suspended, scheduling steps.";
  return 1;
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
