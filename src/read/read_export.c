/* read_export.c - writing results in other tools' formats: Chrome's Trace
 * Event JSON, speedscope's evented profiles, folded stacks for flamegraph.pl,
 * upstream's plot-data CSV files (gantt, flame, durations) and upstream's
 * region_statistics.json and metadata JSON.
 *
 * The Chrome trace and the gantt CSV stream each row's events in blocks, so
 * their memory does not grow with the file; a file without thread ids is the
 * exception for the Chrome trace, which then nests each rank's calls in
 * memory to give calls that overlap without nesting tracks of their own. Speedscope, flame CSV and folded
 * stacks need nesting, which needs one rank's calls in memory at a time.
 * CSV follows Python's csv module (minimal quoting, CRLF line ends) and
 * floats are written as Python's repr(), so output matches upstream's.
 */
#include <math.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"
#include "scope_profiler.h"

#define BLOCK ((size_t)1 << 16)

static void csv_field(FILE *f, const char *s) {
  if (strpbrk(s, ",\"\r\n")) {
    fputc('"', f);
    for (; *s; s++) {
      if (*s == '"') fputc('"', f);
      fputc(*s, f);
    }
    fputc('"', f);
  } else {
    fputs(s, f);
  }
}

static void put_double(FILE *f, double v) {
  char buf[64];
  sp__format_double(buf, sizeof buf, v);
  fputs(buf, f);
}

/* Filtered regions ordered by their earliest start over the selected ranks
 * (upstream's get_regions order); regions without calls go last, by index. */
struct region_order {
  size_t region;
  int has;
  int64_t first;
};
static int cmp_order(const void *pa, const void *pb) {
  const struct region_order *a = pa, *b = pb;
  if (a->has != b->has) return a->has ? -1 : 1;
  if (a->has && a->first != b->first) return a->first < b->first ? -1 : 1;
  return (a->region > b->region) - (a->region < b->region);
}

static sp_status ordered_regions(sp_results *r, const sp_filter *f, size_t **out, size_t *n) {
  struct region_order *o = malloc((r->nregions ? r->nregions : 1) * sizeof *o);
  *out = malloc((r->nregions ? r->nregions : 1) * sizeof **out);
  if (!o || !*out) {
    free(o);
    free(*out);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  size_t k = 0;
  sp_status st = SP_OK;
  for (size_t i = 0; i < r->nregions && st == SP_OK; i++) {
    if (!sp_filter_match_region(f, r->names[i])) continue;
    sp_region_stats s;
    st = sp_results_region_stats(r, i, f, 0, &s);
    if (st == SP_OK && s.ranks == 0) continue; /* named in the table, never recorded here */
    o[k].region = i;
    o[k].has = s.count > 0;
    o[k].first = s.first_start_ns;
    k++;
  }
  qsort(o, k, sizeof *o, cmp_order);
  for (size_t i = 0; i < k; i++) (*out)[i] = o[i].region;
  free(o);
  *n = k;
  if (st != SP_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

/* ---- Chrome trace ------------------------------------------------------------ */

/* Chrome lanes: a thread, or an async task (tid TASK_TID + task) so that
 * interleaved tasks on one thread do not draw as overlapping slices. */
#define TASK_TID 1000000
struct lane {
  int64_t rank, tid, thread, task;
};
static int cmp_lane(const void *pa, const void *pb) {
  const struct lane *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return (a->tid > b->tid) - (a->tid < b->tid);
}

static void chrome_x(FILE *out, int *first, const char *name, int64_t ts, int64_t dur, int64_t pid, int64_t tid) {
  fputs(*first ? "" : ",\n", out);
  *first = 0;
  fputs("{\"name\":", out);
  sp__json_write_string(out, name);
  /* microseconds with exact nanosecond decimals; ts >= 0 and dur >= 0 */
  fprintf(out,
          ",\"cat\":\"region\",\"ph\":\"X\",\"ts\":%lld.%03lld,\"dur\":%lld.%03lld,"
          "\"pid\":%lld,\"tid\":%lld}",
          (long long)(ts / 1000), (long long)(ts % 1000), (long long)(dur / 1000), (long long)(dur % 1000),
          (long long)pid, (long long)tid);
}

/* Tracks for one lane's calls c[lo..hi) (sorted by start, longer first), so
 * that no two calls on a track overlap without one containing the other: a
 * call goes on its lane parent's track when it fits there, else on the first
 * track where it fits (the track's innermost open call contains it, or
 * nothing is open there), else on a new one. Files without thread ids put
 * every thread's calls in one lane; this is what keeps them apart. */
struct track {
  int64_t *end; /* open calls' ends, innermost last */
  size_t n, cap;
};
static int track_fits(struct track *k, const sp_call *c) {
  while (k->n && k->end[k->n - 1] <= c->start_ns) k->n--;
  return k->n == 0 || k->end[k->n - 1] >= c->end_ns;
}
static sp_status assign_tracks(const sp_call *c, size_t lo, size_t hi, uint32_t *track, uint32_t *ntracks) {
  struct track *k = NULL;
  uint32_t nk = 0, capk = 0;
  sp_status st = SP_OK;
  for (size_t i = lo; i < hi && st == SP_OK; i++) {
    uint32_t t = UINT32_MAX;
    if (c[i].parent >= 0 && track_fits(&k[track[c[i].parent]], &c[i])) t = track[c[i].parent];
    for (uint32_t j = 0; t == UINT32_MAX && j < nk; j++)
      if (track_fits(&k[j], &c[i])) t = j;
    if (t == UINT32_MAX) {
      if (nk == capk) {
        capk = capk ? capk * 2 : 8;
        struct track *nkp = realloc(k, capk * sizeof *k);
        if (!nkp) {
          st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
          break;
        }
        k = nkp;
      }
      memset(&k[nk], 0, sizeof k[nk]);
      t = nk++;
    }
    if (k[t].n == k[t].cap) {
      size_t cap = k[t].cap ? k[t].cap * 2 : 16;
      int64_t *e = realloc(k[t].end, cap * sizeof *e);
      if (!e) {
        st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
        break;
      }
      k[t].end = e;
      k[t].cap = cap;
    }
    k[t].end[k[t].n++] = c[i].end_ns;
    track[i] = t;
  }
  for (uint32_t j = 0; j < nk; j++) free(k[j].end);
  free(k);
  *ntracks = nk;
  return st;
}

/* The Chrome trace of a file without thread ids: each rank's calls in memory,
 * on tracks that nest (tid = track), instead of one tid where the calls of
 * several threads would overlap. */
static sp_status chrome_trace_tracks(sp_results *r, const sp_filter *f, FILE *out, sp_export_stats *xs,
                                     int64_t origin) {
  sp_status st = SP_OK;
  int first = 1;
  fputs("{\"traceEvents\":[\n", out);
  for (size_t ri = 0; ri < r->nranks && st == SP_OK; ri++) {
    int64_t rank = r->ranks[ri];
    if (!sp_filter_match_rank(f, rank)) continue;
    sp_call *c;
    size_t n;
    st = sp_results_call_stack(r, rank, f, &c, &n, NULL);
    if (st != SP_OK) break;
    uint32_t *track = malloc((n ? n : 1) * sizeof *track), ntracks = 0;
    if (!track) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    if (st == SP_OK) st = assign_tracks(c, 0, n, track, &ntracks);
    for (size_t i = 0; i < n && st == SP_OK; i++)
      chrome_x(out, &first, r->names[c[i].region], c[i].start_ns - origin, c[i].end_ns - c[i].start_ns, rank,
               track[i]);
    if (st == SP_OK && n) {
      fprintf(out,
              "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":0,"
              "\"args\":{\"name\":\"rank %lld\"}}",
              first ? "" : ",\n", (long long)rank, (long long)rank);
      first = 0;
      fprintf(out,
              ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%lld,\"tid\":0,"
              "\"args\":{\"sort_index\":%lld}}",
              (long long)rank, (long long)rank);
      for (uint32_t k = 0; k < ntracks; k++)
        fprintf(out,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%u,"
                "\"args\":{\"name\":\"track %u (threads not recorded)\"}}",
                (long long)rank, k, k);
    }
    xs->events += n;
    free(track);
    free(c);
  }
  if (st != SP_OK) return st;
  fputs("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"exporter\":", out);
  sp__json_write_string(out, "scope-profiler " SP_VERSION_STRING);
  fputs(",\"label\":", out);
  sp__json_write_string(out, r->display_label);
  fputs("}}\n", out);
  return SP_OK;
}

/* Device time (use_gpu_timing) goes on a GPU track per rank: one async slice
 * per timed call ("cat":"gpu", ids unique in the file), since device
 * intervals of nested or concurrent calls need not nest. A slice starts at
 * its call's CPU start (device timestamps are not on the CPU clock; with
 * enqueue-side regions the device ran it later) and lasts its device time. */
static sp_status chrome_trace(sp_results *r, const sp_filter *f, FILE *out, sp_export_stats *xs) {
  int64_t origin;
  sp_status st = sp_results_min_start(r, &origin);
  if (st != SP_OK) return st;
  int gpu = sp_results_has_gpu(r);
  uint64_t gpu_id = 0;
  /* Calls of one recorded thread (or task) nest: they stream. Files without
   * thread ids go on nesting tracks, except files with GPU times, which keep
   * one track per rank (their writer records thread ids whenever several
   * threads made calls, so such a file is one thread per rank). */
  if (!sp_results_has_threads(r) && !sp_results_has_tasks(r) && !gpu)
    return chrome_trace_tracks(r, f, out, xs, origin);
  int64_t *buf = malloc((gpu ? 5 : 4) * BLOCK * sizeof *buf);
  struct lane *lanes = NULL;
  size_t nlanes = 0, cap = 0;
  if (!buf) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  uint64_t total = 0;
  for (size_t i = 0; i < r->nrows; i++)
    if (sp_filter_match_rank(f, r->rows[i].rank) &&
        sp_filter_match_region(f, r->names[r->rows[i].region]))
      total += r->rows[i].count;
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp__progress_begin(r, total);
  fputs("{\"traceEvents\":[\n", out);
  int first = 1;
  for (size_t i = 0; i < r->nrows && st == SP_OK; i++) {
    const struct sp__rrow *w = &r->rows[i];
    if (!sp_filter_match_rank(f, w->rank) || !sp_filter_match_region(f, r->names[w->region]))
      continue;
    int64_t last_tid = INT64_MIN;
    for (uint64_t done = 0; done < w->count && st == SP_OK;) {
      size_t n = w->count - done < BLOCK ? (size_t)(w->count - done) : BLOCK;
      st = sp__row_read(r, i, done, n, buf, buf + BLOCK, NULL, NULL, buf + 2 * BLOCK);
      if (st == SP_OK) st = sp__row_read_tasks(r, i, done, n, buf + 3 * BLOCK);
      if (st == SP_OK && gpu) st = sp__row_read_gpu(r, i, done, n, buf + 4 * BLOCK);
      for (size_t k = 0; k < n && st == SP_OK; k++) {
        int64_t thread = buf[2 * BLOCK + k] < 0 ? 0 : buf[2 * BLOCK + k];
        int64_t task = buf[3 * BLOCK + k];
        int64_t tid = task >= 0 ? TASK_TID + task : thread;
        if (tid != last_tid) {
          struct lane l = {w->rank, tid, thread, task};
          if (!lfind(&l, lanes, &nlanes, sizeof l, cmp_lane)) {
            if (nlanes == cap) {
              cap = cap ? cap * 2 : 16;
              struct lane *nl = realloc(lanes, cap * sizeof *nl);
              if (!nl) {
                st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
                break;
              }
              lanes = nl;
            }
            lanes[nlanes++] = l;
          }
          last_tid = tid;
        }
        int64_t ts = buf[k] - origin, dur = buf[BLOCK + k] - buf[k];
        chrome_x(out, &first, r->names[w->region], ts, dur, w->rank, tid);
        int64_t g = gpu ? buf[4 * BLOCK + k] : -1;
        if (g >= 0) {
          int64_t te = ts + g;
          for (int ph = 0; ph < 2; ph++) {
            fputs(",\n{\"name\":", out);
            sp__json_write_string(out, r->names[w->region]);
            fprintf(out,
                    ",\"cat\":\"gpu\",\"ph\":\"%c\",\"id\":%llu,\"ts\":%lld.%03lld,\"pid\":%lld,"
                    "\"tid\":%lld%s",
                    ph ? 'e' : 'b', (unsigned long long)gpu_id, (long long)((ph ? te : ts) / 1000),
                    (long long)((ph ? te : ts) % 1000), (long long)w->rank, (long long)tid,
                    ph ? "}" : "");
            if (!ph) fprintf(out, ",\"args\":{\"device_ns\":%lld,\"cpu_ns\":%lld}}", (long long)g, (long long)dur);
          }
          gpu_id++;
        }
      }
      done += n;
      xs->events += n;
      sp__progress(r, n);
    }
  }
  sp__h5_quiet_end(&q);
  free(buf);
  if (st == SP_OK) {
    if (nlanes) qsort(lanes, nlanes, sizeof *lanes, cmp_lane);
    int64_t last_rank = -1;
    for (size_t i = 0; i < nlanes; i++) {
      if (lanes[i].rank != last_rank) {
        fprintf(out,
                "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":0,"
                "\"args\":{\"name\":\"rank %lld\"}}",
                first ? "" : ",\n", (long long)lanes[i].rank, (long long)lanes[i].rank);
        first = 0;
        fprintf(out,
                ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%lld,\"tid\":0,"
                "\"args\":{\"sort_index\":%lld}}",
                (long long)lanes[i].rank, (long long)lanes[i].rank);
        last_rank = lanes[i].rank;
      }
      if (lanes[i].task >= 0)
        fprintf(out,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,"
                "\"args\":{\"name\":\"task %lld (thread %lld)\"}}",
                (long long)lanes[i].rank, (long long)lanes[i].tid, (long long)lanes[i].task,
                (long long)lanes[i].thread);
      else
        fprintf(out,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,"
                "\"args\":{\"name\":\"thread %lld\"}}",
                (long long)lanes[i].rank, (long long)lanes[i].tid, (long long)lanes[i].tid);
    }
    fputs("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"exporter\":", out);
    sp__json_write_string(out, "scope-profiler " SP_VERSION_STRING);
    fputs(",\"label\":", out);
    sp__json_write_string(out, r->display_label);
    fputs("}}\n", out);
  }
  free(lanes);
  return st;
}

/* ---- speedscope ---------------------------------------------------------------- */

#define MAX_VLANES 64

static sp_status speedscope(sp_results *r, const sp_filter *f, FILE *out, sp_export_stats *xs) {
  int64_t origin;
  sp_status st = sp_results_min_start(r, &origin);
  if (st != SP_OK) return st;
  fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", out);
  fputs("\"shared\":{\"frames\":[", out);
  for (size_t i = 0; i < r->nregions; i++) {
    const char *file, *text;
    int64_t line;
    sp_results_region_source(r, i, &file, &line, &text);
    fputs(i ? ",\n" : "\n", out);
    fputs("{\"name\":", out);
    sp__json_write_string(out, r->names[i]);
    if (file[0]) {
      fputs(",\"file\":", out);
      sp__json_write_string(out, file);
      if (line >= 0) fprintf(out, ",\"line\":%lld", (long long)line);
    }
    fputc('}', out);
  }
  fputs("]},\n\"profiles\":[", out);
  int nprof = 0;
  size_t *stack = NULL;
  int64_t *eff_end = NULL;
  uint8_t *vlane = NULL;
  for (size_t ri = 0; ri < r->nranks && st == SP_OK; ri++) {
    int64_t rank = r->ranks[ri];
    if (!sp_filter_match_rank(f, rank)) continue;
    sp_call *c;
    size_t n, ov = 0;
    st = sp_results_call_stack(r, rank, f, &c, &n, NULL);
    if (st != SP_OK) break;
    free(stack);
    free(eff_end);
    free(vlane);
    stack = malloc((n ? n : 1) * sizeof *stack);
    eff_end = malloc((n ? n : 1) * sizeof *eff_end);
    vlane = malloc(n ? n : 1);
    if (!stack || !eff_end || !vlane) {
      free(c);
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      break;
    }
    for (size_t lo = 0; lo < n && st == SP_OK;) {
      size_t hi = lo;
      while (hi < n && c[hi].thread == c[lo].thread && c[hi].task == c[lo].task) hi++;
      /* Recorded ids can make a root overlap calls still open in the same
       * lane (threads were not recorded, so other threads' calls share it).
       * Such a root and its subtree get their own profile instead of being
       * drawn late. Containment nesting never needs this. */
      int64_t busy[MAX_VLANES];
      size_t nv = 0;
      for (size_t i = lo; i < hi; i++) {
        if (c[i].parent >= 0) {
          vlane[i] = vlane[c[i].parent];
          continue;
        }
        size_t l = 0;
        while (l < nv && busy[l] > c[i].start_ns) l++;
        if (l == nv) {
          if (nv < MAX_VLANES) busy[nv++] = c[i].end_ns;
          else l = nv - 1;
        }
        vlane[i] = (uint8_t)l;
        if (c[i].end_ns > busy[l]) busy[l] = c[i].end_ns;
      }
      for (size_t l = 0; l < nv; l++) {
        /* one profile per lane; events sorted and properly nested */
        fputs(nprof ? ",\n" : "\n", out);
        nprof++;
        fputs("{\"type\":\"evented\",\"name\":", out);
        char name[128];
        int len = snprintf(name, sizeof name, "rank %lld", (long long)rank);
        if (c[lo].thread >= 0)
          len += snprintf(name + len, sizeof name - (size_t)len, " thread %lld",
                          (long long)c[lo].thread);
        if (c[lo].task >= 0)
          len += snprintf(name + len, sizeof name - (size_t)len, " task %lld",
                          (long long)c[lo].task);
        if (l > 0) snprintf(name + len, sizeof name - (size_t)len, " (overlapping #%zu)", l + 1);
        sp__json_write_string(out, name);
        /* startValue/endValue precede the events, so compute them first */
        int64_t start_at = INT64_MAX, end_at = INT64_MIN;
        for (size_t i = lo; i < hi; i++) {
          if (vlane[i] != l) continue;
          if (c[i].start_ns - origin < start_at) start_at = c[i].start_ns - origin;
          if (c[i].end_ns - origin > end_at) end_at = c[i].end_ns - origin;
        }
        int64_t last_at = start_at;
        fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%lld,\"endValue\":%lld,\"events\":[",
                (long long)start_at, (long long)end_at);
        size_t top = 0;
        int ev = 0;
        for (size_t i = lo; i <= hi; i++) {
          if (i < hi && vlane[i] != l) continue;
          /* close what is not an ancestor of call i (everything at the end) */
          int64_t want = i < hi ? c[i].parent : -2;
          while (top > 0 && (int64_t)stack[top - 1] != want) {
            size_t x = stack[--top];
            int64_t at = eff_end[x] - origin;
            if (at < last_at) at = last_at;
            fprintf(out, "%s{\"type\":\"C\",\"frame\":%u,\"at\":%lld}", ev++ ? ",\n" : "\n",
                    c[x].region, (long long)at);
            last_at = at;
          }
          if (i == hi) break;
          eff_end[i] = c[i].end_ns;
          if (top > 0 && eff_end[i] > eff_end[stack[top - 1]]) {
            eff_end[i] = eff_end[stack[top - 1]]; /* ends after its parent: clipped */
            ov++;
          }
          int64_t at = c[i].start_ns - origin;
          if (at < last_at) {
            at = last_at; /* overlaps a closed sibling: drawn late, not out of order */
            ov++;
          }
          fprintf(out, "%s{\"type\":\"O\",\"frame\":%u,\"at\":%lld}", ev++ ? ",\n" : "\n",
                  c[i].region, (long long)at);
          last_at = at;
          stack[top++] = i;
        }
        fputs("]}", out);
      }
      lo = hi;
    }
    xs->events += n;
    xs->overlaps += ov;
    free(c);
  }
  free(stack);
  free(eff_end);
  free(vlane);
  if (st != SP_OK) return st;
  fputs("],\n\"name\":", out);
  sp__json_write_string(out, r->display_label);
  fputs(",\n\"activeProfileIndex\":0,\n\"exporter\":", out);
  sp__json_write_string(out, "scope-profiler " SP_VERSION_STRING);
  fputs("}\n", out);
  return SP_OK;
}

/* ---- folded stacks --------------------------------------------------------------- */

static int cmp_strp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void folded_name(FILE *f, const char *s) {
  for (; *s; s++) fputc(*s == ';' ? ',' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static sp_status folded(sp_results *r, const sp_filter *f, FILE *out, sp_export_stats *xs) {
  sp_tree_node *nodes;
  size_t n;
  sp_status st = sp_results_call_tree(r, f, &nodes, &n);
  if (st != SP_OK) return st;
  char **lines = calloc(n ? n : 1, sizeof *lines);
  size_t nl = 0;
  if (!lines) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  size_t *path = malloc((n ? n : 1) * sizeof *path);
  if (!path) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < n && st == SP_OK; i++) {
    int64_t self = nodes[i].total_ns - nodes[i].children_ns;
    xs->events += nodes[i].count;
    if (self <= 0) continue;
    size_t depth = 0;
    for (int64_t p = (int64_t)i; p >= 0; p = nodes[p].parent) path[depth++] = (size_t)p;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      break;
    }
    for (size_t k = depth; k-- > 0;) {
      folded_name(m, r->names[nodes[path[k]].region]);
      if (k) fputc(';', m);
    }
    fprintf(m, " %lld", (long long)self);
    fclose(m);
    lines[nl++] = buf;
  }
  free(path);
  free(nodes);
  if (st == SP_OK) {
    qsort(lines, nl, sizeof *lines, cmp_strp);
    for (size_t i = 0; i < nl; i++) fprintf(out, "%s\n", lines[i]);
  }
  for (size_t i = 0; i < nl; i++) free(lines[i]);
  free(lines);
  return st;
}

/* ---- plot-data CSV ----------------------------------------------------------------- */

static sp_status gantt_csv(sp_results *r, const sp_filter *f, const char *label, int header,
                           FILE *out, sp_export_stats *xs) {
  int64_t origin_ns;
  sp_status st = sp_results_min_start(r, &origin_ns);
  if (st != SP_OK) return st;
  /* Relative times are subtracted in nanoseconds, then scaled: upstream's
   * (start_ns / 1e9) - (origin_ns / 1e9) prints float noise such as
   * 0.30000000000000004 for 300 ms. */
  size_t *order, nreg;
  st = ordered_regions(r, f, &order, &nreg);
  if (st != SP_OK) return st;
  int64_t *buf = malloc(2 * BLOCK * sizeof *buf);
  if (!buf) {
    free(order);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  if (header) fputs("file,rank,region,start_seconds,end_seconds\r\n", out);
  uint64_t total = 0;
  for (size_t i = 0; i < r->nrows; i++)
    if (sp_filter_match_rank(f, r->rows[i].rank) &&
        sp_filter_match_region(f, r->names[r->rows[i].region]))
      total += r->rows[i].count;
  sp__progress_begin(r, total);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  for (size_t oi = 0; oi < nreg && st == SP_OK; oi++) {
    size_t region = order[oi];
    for (size_t k = r->region_row_start[region]; k < r->region_row_start[region + 1] && st == SP_OK;
         k++) {
      size_t row = r->region_rows[k];
      const struct sp__rrow *w = &r->rows[row];
      if (!sp_filter_match_rank(f, w->rank)) continue;
      for (uint64_t done = 0; done < w->count && st == SP_OK;) {
        size_t n = w->count - done < BLOCK ? (size_t)(w->count - done) : BLOCK;
        st = sp__row_read(r, row, done, n, buf, buf + BLOCK, NULL, NULL, NULL);
        for (size_t i = 0; i < n && st == SP_OK; i++) {
          csv_field(out, label);
          fprintf(out, ",%lld,", (long long)w->rank);
          csv_field(out, r->names[region]);
          fputc(',', out);
          put_double(out, (double)(buf[i] - origin_ns) / 1e9);
          fputc(',', out);
          put_double(out, (double)(buf[BLOCK + i] - origin_ns) / 1e9);
          fputs("\r\n", out);
        }
        done += n;
        xs->events += n;
        sp__progress(r, n);
      }
    }
  }
  sp__h5_quiet_end(&q);
  free(buf);
  free(order);
  return st;
}

static sp_status flame_csv(sp_results *r, const sp_filter *f, const char *label, int header,
                           FILE *out, sp_export_stats *xs) {
  if (header) fputs("file,rank,region,depth,start_seconds,end_seconds\r\n", out);
  sp_status st = SP_OK;
  /* upstream's flame chart defaults to rank 0 (here: the lowest rank) */
  int all = sp_filter_num_ranks(f) > 0;
  for (size_t ri = 0; ri < r->nranks && st == SP_OK; ri++) {
    int64_t rank = r->ranks[ri];
    if (all ? !sp_filter_match_rank(f, rank) : ri > 0) continue;
    sp_call *c;
    size_t n, ov = 0;
    st = sp_results_call_stack(r, rank, f, &c, &n, &ov);
    if (st != SP_OK) break;
    for (size_t i = 0; i < n; i++) {
      csv_field(out, label);
      fprintf(out, ",%lld,", (long long)rank);
      csv_field(out, r->names[c[i].region]);
      fprintf(out, ",%u,", c[i].depth);
      put_double(out, (double)c[i].start_ns / 1e9);
      fputc(',', out);
      put_double(out, (double)c[i].end_ns / 1e9);
      fputs("\r\n", out);
    }
    xs->events += n;
    xs->overlaps += ov;
    free(c);
  }
  return st;
}

/* Labels as upstream makes them: the display label, repeats as "x (2)". */
static char **unique_labels(sp_results *const *rs, size_t n, const char *const *given) {
  char **v = calloc(n ? n : 1, sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < n; i++) {
    const char *base = given && given[i] ? given[i] : sp_results_display_label(rs[i]);
    int dup = 1;
    for (size_t k = 0; k < i; k++)
      if (!strcmp(given && given[k] ? given[k] : sp_results_display_label(rs[k]), base)) dup++;
    v[i] = dup > 1 ? sp__asprintf("%s (%d)", base, dup) : sp__strdup(base);
    if (!v[i]) {
      sp__free_strings(v, n);
      return NULL;
    }
  }
  return v;
}

/* Regions present in every file, in the first file's order. */
static sp_status common_regions(sp_results *const *rs, size_t n, const sp_filter *f, size_t **out,
                                size_t *nout) {
  size_t *order, k;
  *out = NULL;
  *nout = 0;
  if (n == 0) return SP_OK;
  sp_status st = ordered_regions(rs[0], f, &order, &k);
  if (st != SP_OK) return st;
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    int everywhere = 1;
    size_t idx;
    for (size_t j = 1; j < n && everywhere; j++) {
      sp_region_stats s;
      everywhere = sp_results_find_region(rs[j], rs[0]->names[order[i]], &idx) == SP_OK &&
                   sp_results_region_stats(rs[j], idx, f, 0, &s) == SP_OK && s.ranks > 0;
    }
    if (everywhere) order[m++] = order[i];
  }
  sp__clear_error();
  *out = order;
  *nout = m;
  return SP_OK;
}

static sp_status durations_csv(sp_results *const *results, size_t n, const char *const *labels,
                               const sp_filter *f, int header, FILE *out);

sp_status sp_write_durations_csv(sp_results *const *results, size_t n, const char *const *labels,
                                 const sp_filter *f, FILE *out) {
  if (!results || !out)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_write_durations_csv: NULL argument");
  return durations_csv(results, n, labels, f, 1, out);
}

static sp_status durations_csv(sp_results *const *results, size_t n, const char *const *labels,
                               const sp_filter *f, int header, FILE *out) {
  static const char *const metrics[] = {"avg", "min", "max", "total"};
  char **lab = unique_labels(results, n, labels);
  size_t *common, nc;
  if (!lab) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  sp_status st = common_regions(results, n, f, &common, &nc);
  if (st == SP_OK && header) fputs("file,region,metric,value_seconds\r\n", out);
  for (size_t m = 0; m < 4 && st == SP_OK; m++)
    for (size_t i = 0; i < nc && st == SP_OK; i++) {
      const char *name = results[0]->names[common[i]];
      for (size_t j = 0; j < n && st == SP_OK; j++) {
        size_t region;
        sp_region_stats s;
        st = sp_results_find_region(results[j], name, &region);
        if (st == SP_OK) st = sp_results_region_stats(results[j], region, f, 0, &s);
        if (st != SP_OK) break;
        double v = NAN;
        if (s.count > 0)
          v = m == 0   ? s.mean_ns / 1e9
              : m == 1 ? (double)s.min_ns / 1e9
              : m == 2 ? (double)s.max_ns / 1e9
                       : (double)s.total_ns / 1e9;
        csv_field(out, lab[j]);
        fputc(',', out);
        csv_field(out, name);
        fprintf(out, ",%s,", metrics[m]);
        if (isnan(v)) fputs("nan", out);
        else put_double(out, v);
        fputs("\r\n", out);
      }
    }
  free(common);
  sp__free_strings(lab, n);
  return st;
}

sp_status sp_results_export(sp_results *r, sp_export_format format, const sp_filter *f,
                            const char *label, FILE *out, sp_export_stats *stats) {
  sp_export_stats xs = {0, 0};
  int header = !((unsigned)format & SP_EXPORT_NO_HEADER);
  format = (sp_export_format)((unsigned)format & ~(unsigned)SP_EXPORT_NO_HEADER);
  if (!r || !out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_export: NULL argument");
  if (!label) label = r->display_label;
  sp_status st;
  int needs_events = format != SP_EXPORT_DURATIONS_CSV;
  if (needs_events && r->aggregate)
    return sp__set_error(SP_ERR_UNSUPPORTED,
                         "%s was written in the aggregate layout, which stores no individual "
                         "calls; only the json, region-statistics and durations exports work for it",
                         r->path ? r->path : "the results");
  switch (format) {
  case SP_EXPORT_CHROME_TRACE: st = chrome_trace(r, f, out, &xs); break;
  case SP_EXPORT_SPEEDSCOPE: st = speedscope(r, f, out, &xs); break;
  case SP_EXPORT_FOLDED: st = folded(r, f, out, &xs); break;
  case SP_EXPORT_GANTT_CSV: st = gantt_csv(r, f, label, header, out, &xs); break;
  case SP_EXPORT_FLAME_CSV: st = flame_csv(r, f, label, header, out, &xs); break;
  case SP_EXPORT_DURATIONS_CSV: {
    const char *labels[1] = {label};
    st = durations_csv(&r, 1, labels, f, header, out);
    break;
  }
  default: st = sp__set_error(SP_ERR_INVALID_ARGUMENT, "unknown export format %d", (int)format);
  }
  if (stats) *stats = xs;
  if (st == SP_OK && ferror(out))
    st = sp__set_error(SP_ERR_IO, "writing the export failed (disk full?)");
  return st;
}

/* ---- region_statistics.json ------------------------------------------------------- */

static void stats_fields(struct sp__json *j, const sp_region_stats *s) {
  int empty = s->count == 0;
  sp__json_key(j, "count");
  sp__json_uint(j, s->count);
  sp__json_key(j, "average_duration_seconds");
  if (empty) sp__json_null(j);
  else sp__json_double(j, s->mean_ns / 1e9);
  sp__json_key(j, "min_duration_seconds");
  if (empty) sp__json_null(j);
  else sp__json_double(j, (double)s->min_ns / 1e9);
  sp__json_key(j, "max_duration_seconds");
  if (empty) sp__json_null(j);
  else sp__json_double(j, (double)s->max_ns / 1e9);
  sp__json_key(j, "std_duration_seconds");
  if (empty) sp__json_null(j);
  else sp__json_double(j, s->std_ns / 1e9);
  sp__json_key(j, "total_duration_seconds");
  if (empty) sp__json_null(j);
  else sp__json_double(j, (double)s->total_ns / 1e9);
}

sp_status sp_write_region_statistics_json(sp_results *const *results, size_t n,
                                          const char *const *labels, const char *const *paths,
                                          const sp_filter *f, FILE *out) {
  if (!results || !out)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_write_region_statistics_json: NULL argument");
  char **lab = unique_labels(results, n, labels);
  if (!lab) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  struct sp__json j;
  sp__json_init(&j, out, 2);
  sp__json_begin_object(&j);
  sp__json_key(&j, "units");
  sp__json_begin_object(&j);
  sp__json_key(&j, "durations");
  sp__json_string(&j, "seconds");
  sp__json_end_object(&j);
  sp__json_key(&j, "filters");
  sp__json_begin_object(&j);
  sp__json_key(&j, "include");
  if (sp_filter_num_includes(f) == 0) sp__json_null(&j);
  else {
    sp__json_begin_array(&j);
    for (size_t i = 0; i < sp_filter_num_includes(f); i++)
      sp__json_string(&j, sp_filter_include_at(f, i));
    sp__json_end_array(&j);
  }
  sp__json_key(&j, "exclude");
  if (sp_filter_num_excludes(f) == 0) sp__json_null(&j);
  else {
    sp__json_begin_array(&j);
    for (size_t i = 0; i < sp_filter_num_excludes(f); i++)
      sp__json_string(&j, sp_filter_exclude_at(f, i));
    sp__json_end_array(&j);
  }
  sp__json_key(&j, "ranks");
  if (sp_filter_num_ranks(f) == 0) sp__json_null(&j);
  else {
    sp__json_begin_array(&j);
    for (size_t i = 0; i < sp_filter_num_ranks(f); i++)
      sp__json_int(&j, sp_filter_rank_list(f)[i]);
    sp__json_end_array(&j);
  }
  sp__json_end_object(&j);
  size_t *common, nc;
  sp_status st = common_regions(results, n, f, &common, &nc);
  if (st == SP_OK) {
    sp__json_key(&j, "common_regions");
    sp__json_begin_array(&j);
    for (size_t i = 0; i < nc; i++) sp__json_string(&j, results[0]->names[common[i]]);
    sp__json_end_array(&j);
    free(common);
    sp__json_key(&j, "files");
    sp__json_begin_array(&j);
  }
  for (size_t fi = 0; fi < n && st == SP_OK; fi++) {
    sp_results *r = results[fi];
    sp__json_begin_object(&j);
    sp__json_key(&j, "label");
    sp__json_string(&j, lab[fi]);
    sp__json_key(&j, "file_path");
    sp__json_string(&j, paths && paths[fi] ? paths[fi] : r->path ? r->path : "");
    sp__json_key(&j, "num_ranks");
    sp__json_uint(&j, r->nranks);
    sp__json_key(&j, "region_statistics");
    sp__json_begin_object(&j);
    size_t *order = NULL, nreg = 0;
    st = ordered_regions(r, f, &order, &nreg);
    for (size_t oi = 0; oi < nreg && st == SP_OK; oi++) {
      size_t region = order[oi];
      sp_region_stats s;
      st = sp_results_region_stats(r, region, f, 0, &s);
      if (st != SP_OK) break;
      sp__json_key(&j, r->names[region]);
      sp__json_begin_object(&j);
      stats_fields(&j, &s);
      sp__json_key(&j, "per_rank");
      sp__json_begin_object(&j);
      int64_t last = -1;
      for (size_t k = r->region_row_start[region];
           k < r->region_row_start[region + 1] && st == SP_OK; k++) {
        int64_t rank = r->rows[r->region_rows[k]].rank;
        if (rank == last || !sp_filter_match_rank(f, rank)) continue;
        last = rank;
        sp_region_stats rs;
        st = sp_results_region_rank_stats(r, region, rank, 0, &rs);
        if (st != SP_OK) break;
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)rank);
        sp__json_key(&j, key);
        sp__json_begin_object(&j);
        stats_fields(&j, &rs);
        sp__json_end_object(&j);
      }
      sp__json_end_object(&j);
      sp__json_end_object(&j);
    }
    free(order);
    sp__json_end_object(&j);
    sp__json_end_object(&j);
  }
  if (st == SP_OK) {
    sp__json_end_array(&j);
    sp__json_end_object(&j);
    fputc('\n', out);
  }
  sp__free_strings(lab, n);
  if (st == SP_OK && ferror(out)) st = sp__set_error(SP_ERR_IO, "writing the JSON failed");
  return st;
}

/* ---- metadata JSON ------------------------------------------------------------------ */

void sp__json_meta_value(struct sp__json *j, const sp_metadata_entry *e) {
  switch (e->kind) {
  case SP_VALUE_INT: sp__json_int(j, e->i); break;
  case SP_VALUE_FLOAT: sp__json_double(j, e->f); break;
  case SP_VALUE_STRING: sp__json_string(j, e->s); break;
  case SP_VALUE_BOOL: sp__json_bool(j, (int)e->i); break;
  case SP_VALUE_INT_ARRAY:
    sp__json_begin_array(j);
    for (size_t i = 0; i < e->n; i++) sp__json_int(j, e->ints[i]);
    sp__json_end_array(j);
    break;
  case SP_VALUE_FLOAT_ARRAY:
    sp__json_begin_array(j);
    for (size_t i = 0; i < e->n; i++) sp__json_double(j, e->floats[i]);
    sp__json_end_array(j);
    break;
  case SP_VALUE_STRING_ARRAY:
    sp__json_begin_array(j);
    for (size_t i = 0; i < e->n; i++) sp__json_string(j, e->strings[i]);
    sp__json_end_array(j);
    break;
  default: sp__json_string(j, e->text); break;
  }
}

void sp__json_metadata(struct sp__json *j, const sp_results *r) {
  sp__json_key(j, "metadata");
  sp__json_begin_object(j);
  for (size_t i = 0; i < r->nmeta; i++) {
    sp__json_key(j, r->meta[i].key);
    sp__json_meta_value(j, &r->meta[i].e);
  }
  sp__json_end_object(j);
}

sp_status sp_write_metadata_json(sp_results *const *results, size_t n, const char *const *paths,
                                 FILE *out) {
  if (!results || !out)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_write_metadata_json: NULL argument");
  struct sp__json j;
  sp__json_init(&j, out, 2);
  sp__json_begin_object(&j);
  sp__json_key(&j, "files");
  sp__json_begin_array(&j);
  for (size_t fi = 0; fi < n; fi++) {
    sp_results *r = results[fi];
    sp__json_begin_object(&j);
    sp__json_key(&j, "file_path");
    sp__json_string(&j, paths && paths[fi] ? paths[fi] : r->path ? r->path : "");
    sp__json_key(&j, "num_ranks");
    sp__json_uint(&j, r->nranks);
    sp__json_metadata(&j, r);
    sp__json_end_object(&j);
  }
  sp__json_end_array(&j);
  sp__json_end_object(&j);
  fputc('\n', out);
  return ferror(out) ? sp__set_error(SP_ERR_IO, "writing the metadata JSON failed") : SP_OK;
}
