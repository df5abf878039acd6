/* export_profile.c - upstream's JSON profile (format_version 1) of a
 * profile (sp_write_json_profile), the document `scope-profiler export
 * json` writes and read_native.c reads back: the same keys, the same row
 * order (regions in region-table order, ranks ascending within a region),
 * absolute int64 ns times (never delta-coded), the optional columns only
 * where the file has them, and Python's separators on one line. Events are
 * read and written a block at a time, so a large file exports in bounded
 * memory.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "output/plan.h"
#include "read/json_parse.h"
#include "read/read_internal.h"
#include "scope_profiler.h"

#define BLOCK ((size_t)1 << 16)

/* Tags text of a row as a JSON list of strings, or NULL when it is none
 * (or not such a list: a hand-made file). */
static struct sp_jval *tags_of(const char *text) {
  char err[128];
  struct sp_jval *v = text && strcmp(text, "[]") ? sp__json_parse(text, strlen(text), err, sizeof err) : NULL;
  int ok = v && v->type == SP_J_ARRAY && v->len > 0;
  for (size_t i = 0; ok && i < v->len; i++) ok = v->items[i].type == SP_J_STRING;
  if (!ok && v) {
    sp__json_free(v);
    free(v);
    v = NULL;
  }
  return v;
}

/* One int64 column of the row's events (which: 0 start, 1 end, 2 call,
 * 3 parent, 4 thread, 5 task), block by block. */
static sp_status write_column(sp_results *r, size_t row, int which, struct sp__json *j, int64_t *buf) {
  uint64_t n = r->rows[row].count;
  sp__json_begin_array(j);
  sp_status st = SP_OK;
  for (uint64_t at = 0; at < n && st == SP_OK; at += BLOCK) {
    size_t k = n - at < BLOCK ? (size_t)(n - at) : BLOCK;
    if (which == 5)
      st = sp__row_read_tasks(r, row, at, k, buf);
    else if (which == 6)
      st = sp__row_read_gpu(r, row, at, k, buf);
    else if (which == 7)
      st = sp__row_read_await(r, row, at, k, buf);
    else
      st = sp__row_read(r, row, at, k, which == 0 ? buf : NULL, which == 1 ? buf : NULL, which == 2 ? buf : NULL,
                        which == 3 ? buf : NULL, which == 4 ? buf : NULL);
    for (size_t i = 0; st == SP_OK && i < k; i++) sp__json_int(j, buf[i]);
  }
  sp__json_end_array(j);
  return st;
}

/* Upstream's keys are our rows' field names, so each list names a field
 * once, in upstream's key order: its kind, 1 where the reader requires it. */
#define THREAD_KEYS(X)                                                                               \
  X('i', 1, index) X('s', 0, name) X('i', 0, ident) X('i', 0, native_id) X('b', 0, daemon)          \
  X('i', 0, start_ns) X('i', 0, end_ns) X('i', 0, cpu_ns)
#define TASK_KEYS(X)                                                                                 \
  X('i', 1, index) X('s', 0, kind) X('s', 0, name) X('s', 0, coro_name) X('i', 0, thread_index)     \
  X('i', 0, created_ns) X('i', 0, done_ns) X('i', 0, steps) X('i', 0, running_ns) X('i', 0, suspended_ns)
#define THREAD_KEY(kind, required, f) {#f, kind, required, offsetof(sp_thread_info, f)},
#define TASK_KEY(kind, required, f) {#f, kind, required, offsetof(sp_task_info, f)},

static const struct sp__lane_key thread_keys[] = {THREAD_KEYS(THREAD_KEY)};
static const struct sp__lane_key task_keys[] = {TASK_KEYS(TASK_KEY)};

const struct sp__lane_key *sp__lane_keys(int tasks, size_t *n) {
  *n = tasks ? sizeof task_keys / sizeof task_keys[0] : sizeof thread_keys / sizeof thread_keys[0];
  return tasks ? task_keys : thread_keys;
}

static void write_lane_row(struct sp__json *j, const struct sp__lane_key *keys, size_t nkeys, const char *row) {
  sp__json_begin_object(j);
  for (size_t i = 0; i < nkeys; i++) {
    const struct sp__lane_key *k = &keys[i];
    sp__json_key(j, k->key);
    if (k->kind == 'i') {
      int64_t v;
      memcpy(&v, row + k->off, sizeof v);
      sp__json_int(j, v);
    } else if (k->kind == 'b') {
      int v;
      memcpy(&v, row + k->off, sizeof v);
      sp__json_bool(j, v);
    } else {
      const char *s;
      memcpy(&s, row + k->off, sizeof s);
      sp__json_string(j, s);
    }
  }
  sp__json_end_object(j);
}

static void write_lanes(sp_results *r, struct sp__json *j, const sp_filter *f) {
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? r->lanes.ntasks : r->lanes.nthreads, nkeys;
    if (!n) continue;
    const struct sp__lane_key *keys = sp__lane_keys(pass, &nkeys);
    const char *rows = pass ? (const char *)r->lanes.tasks : (const char *)r->lanes.threads;
    size_t stride = pass ? sizeof(sp_task_info) : sizeof(sp_thread_info);
    sp__json_key(j, pass ? "tasks" : "threads");
    sp__json_begin_object(j);
    /* rows grouped by rank, ranks in the order they come (ascending) */
    for (size_t i = 0; i < n;) {
      int64_t rank = pass ? r->lanes.tasks[i].rank : r->lanes.threads[i].rank;
      size_t e = i;
      while (e < n && (pass ? r->lanes.tasks[e].rank : r->lanes.threads[e].rank) == rank) e++;
      if (sp_filter_match_rank(f, rank)) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)rank);
        sp__json_key(j, key);
        sp__json_begin_array(j);
        for (size_t k = i; k < e; k++) write_lane_row(j, keys, nkeys, rows + k * stride);
        sp__json_end_array(j);
      }
      i = e;
    }
    sp__json_end_object(j);
  }
}

sp_status sp_write_json_profile(sp_results *r, const sp_filter *f, FILE *out) {
  if (!r || !out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_write_json_profile: NULL argument");
  int64_t *buf = malloc(BLOCK * sizeof *buf);
  if (!buf) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  struct sp__json j;
  sp__json_init(&j, out, 0);
  sp__json_begin_object(&j);
  sp__json_key(&j, "format"), sp__json_string(&j, "scope-profiler-profile");
  sp__json_key(&j, "format_version"), sp__json_int(&j, 1);
  sp__json_key(&j, "exporter"), sp__json_string(&j, "scope-profiler@" SP_VERSION_STRING);
  sp__json_key(&j, "time_unit"), sp__json_string(&j, "nanoseconds");
  /* as upstream counts them: the metadata's mpi_size, or past the highest rank */
  int64_t nranks = 0;
  const sp_metadata_entry *ms = sp_results_metadata(r, SP_META_MPI_SIZE);
  if (ms && ms->kind == SP_VALUE_INT && ms->i > 0) nranks = ms->i;
  if (r->nranks && r->ranks[r->nranks - 1] + 1 > nranks) nranks = r->ranks[r->nranks - 1] + 1;
  sp__json_key(&j, "num_ranks"), sp__json_int(&j, nranks);
  sp__json_key(&j, "event_data_available"), sp__json_bool(&j, !r->aggregate);
  sp__json_metadata(&j, r);
  sp__json_key(&j, "regions");
  sp__json_begin_array(&j);
  sp_status st = SP_OK;
  int ids = sp_results_has_call_ids(r), threads = sp_results_has_threads(r), tasks = sp_results_has_tasks(r),
      gpu = sp_results_has_gpu(r), awaits = sp_results_has_await(r);
  for (size_t reg = 0; reg < r->nregions && st == SP_OK; reg++) {
    if (!sp_filter_match_region(f, r->names[reg])) continue;
    for (size_t k = r->region_row_start[reg]; k < r->region_row_start[reg + 1] && st == SP_OK; k++) {
      size_t row = r->region_rows[k];
      const struct sp__rrow *w = &r->rows[row];
      if (!sp_filter_match_rank(f, w->rank)) continue;
      sp__json_begin_object(&j);
      sp__json_key(&j, "name"), sp__json_string(&j, r->names[reg]);
      sp__json_key(&j, "rank"), sp__json_int(&j, w->rank);
      if (w->source_file[0]) sp__json_key(&j, "source_file"), sp__json_string(&j, w->source_file);
      if (w->source_line >= 0) sp__json_key(&j, "source_lineno"), sp__json_int(&j, w->source_line);
      if (w->source_text[0]) sp__json_key(&j, "source_text"), sp__json_string(&j, w->source_text);
      struct sp_jval *tags = tags_of(w->tags);
      if (tags) {
        sp__json_key(&j, "tags");
        sp__json_begin_array(&j);
        for (size_t t = 0; t < tags->len; t++) sp__json_string(&j, tags->items[t].s);
        sp__json_end_array(&j);
        sp__json_free(tags);
        free(tags);
      }
      if (r->aggregate) {
        const struct sp__summary *s = NULL;
        st = sp__row_summary(r, row, &s);
        if (st != SP_OK) break;
        sp__json_key(&j, "aggregate");
        sp__json_begin_object(&j);
        sp__json_key(&j, "count"), sp__json_uint(&j, s->count);
        sp__json_key(&j, "total"), sp__json_int(&j, s->total);
        sp__json_key(&j, "minimum"), sp__json_int(&j, s->minimum);
        sp__json_key(&j, "maximum"), sp__json_int(&j, s->maximum);
        sp__json_key(&j, "exclusive"), sp__json_int(&j, w->exclusive >= 0 ? w->exclusive : 0);
        if (w->has_spread) {
          sp__json_key(&j, "mean"), sp__json_double(&j, s->mean);
          sp__json_key(&j, "m2"), sp__json_double(&j, s->m2);
        }
        sp__json_end_object(&j);
      } else {
        /* upstream's order: the device times right after the timeline */
        static const char *const keys[] = {"start_times_ns", "end_times_ns", "call_ids", "parent_ids", "thread_ids",
                                           "task_ids",       "gpu_durations_ns", "await_ns"};
        static const int order[] = {0, 1, 6, 2, 3, 4, 5, 7};
        int want[] = {1, 1, ids, ids, threads, tasks, gpu, awaits};
        for (int o = 0; o < 8 && st == SP_OK; o++) {
          int c = order[o];
          if (!want[c]) continue;
          sp__json_key(&j, keys[c]);
          st = write_column(r, row, c, &j, buf);
        }
        if (w->exclusive >= 0) sp__json_key(&j, "exclusive_total_ns"), sp__json_int(&j, w->exclusive);
      }
      sp__json_end_object(&j);
    }
  }
  sp__json_end_array(&j);
  if (st == SP_OK) write_lanes(r, &j, f);
  sp__json_end_object(&j);
  fputc('\n', out);
  sp__h5_quiet_end(&q);
  free(buf);
  if (st == SP_OK && ferror(out)) st = sp__set_error(SP_ERR_IO, "writing the JSON profile failed (disk full?)");
  return st;
}
