/* read_native.c - the inputs upstream writes that are not HDF5: JSON
 * profiles (format "scope-profiler-profile", format_version 1, plain or
 * gzip-compressed) and native traces (.spt versions 1 and 2, the files of
 * upstream's C and Fortran writers), read into an sp_results whose events
 * live in memory (read_events.c serves them like a file's).
 *
 * Both are recognised by content (sp_results_open): HDF5's signature, the
 * gzip magic, a JSON object, or "SCOPEPRF". Everything is validated before
 * it is trusted, as for HDF5 files: a wrong type, a count that promises
 * more than the file holds, a truncated record or trailing bytes give
 * SP_ERR_FORMAT with a message naming the place.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/error.h"
#include "output/plan.h"
#include "read/json_parse.h"
#include "read/read_internal.h"
#include "read/region_names.h"

#define NAME(r) ((r)->path ? (r)->path : "<input>")

/* ---- building the results ---------------------------------------------------- */

struct builder {
  sp_results *r;
  size_t cap_rows, cap_meta;
  struct sp__region_names names;
};

static sp_status region_id(struct builder *b, const char *name, uint32_t *id) {
  return sp__region_names_id(b->r, &b->names, name, NAME(b->r), id);
}

/* A new row of region `name` on `rank` (not seen before: a JSON profile or
 * a trace lists each pair once). */
static sp_status new_row(struct builder *b, const char *name, int64_t rank, const char *where,
                         struct sp__rrow **out) {
  sp_results *r = b->r;
  uint32_t id = 0;
  sp_status st = region_id(b, name, &id);
  if (st != SP_OK) return st;
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i].region == id && r->rows[i].rank == rank)
      return sp__set_error(SP_ERR_FORMAT, "%s: %s: region '%s' on rank %lld is listed twice", NAME(r), where, name,
                           (long long)rank);
  if (r->nrows >= SP__MAX_ROWS) return sp__set_error(SP_ERR_FORMAT, "%s: too many regions", NAME(r));
  if (r->nrows == b->cap_rows) {
    size_t cap = b->cap_rows ? b->cap_rows * 2 : 16;
    struct sp__rrow *v = realloc(r->rows, cap * sizeof *v);
    if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    r->rows = v;
    b->cap_rows = cap;
  }
  struct sp__rrow *w = &r->rows[r->nrows++];
  memset(w, 0, sizeof *w);
  w->region = id;
  w->rank = rank;
  w->source_line = -1;
  w->exclusive = -1;
  w->source_file = sp__strdup("");
  w->source_text = sp__strdup("");
  w->tags = sp__strdup("[]");
  if (!w->source_file || !w->source_text || !w->tags) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  *out = w;
  return SP_OK;
}

static struct sp__meta *new_meta(struct builder *b, const char *key) {
  sp_results *r = b->r;
  if (r->nmeta >= SP__MAX_META_ATTRS) return NULL;
  if (r->nmeta == b->cap_meta) {
    size_t cap = b->cap_meta ? b->cap_meta * 2 : 16;
    struct sp__meta *m = realloc(r->meta, cap * sizeof *m);
    if (!m) return NULL;
    r->meta = m;
    b->cap_meta = cap;
  }
  struct sp__meta *m = &r->meta[r->nmeta];
  memset(m, 0, sizeof *m);
  if (!(m->key = sp__strdup(key))) return NULL;
  r->nmeta++;
  return m;
}

static sp_status meta_int(struct builder *b, const char *key, int64_t v) {
  struct sp__meta *m = new_meta(b, key);
  if (!m || !(m->text = sp__asprintf("%lld", (long long)v))) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  m->e.kind = SP_VALUE_INT;
  m->e.i = v;
  return SP_OK;
}

static sp_status meta_str(struct builder *b, const char *key, const char *v) {
  struct sp__meta *m = new_meta(b, key);
  if (!m || !(m->s = sp__strdup(v)) || !(m->text = sp__strdup(v)))
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  m->e.kind = SP_VALUE_STRING;
  return SP_OK;
}

/* The events arrays, grown to hold `n` events. */
static sp_status mem_grow(sp_results *r, size_t n, size_t *cap, int ncols) {
  if (n <= *cap) return SP_OK;
  size_t c = *cap ? *cap : 1024;
  while (c < n) c *= 2;
  int64_t **cols[] = {&r->mem_start,  &r->mem_end,  &r->mem_call, &r->mem_parent,
                      &r->mem_thread, &r->mem_task, &r->mem_gpu, &r->mem_await};
  for (int i = 0; i < ncols; i++) {
    int64_t *v = realloc(*cols[i], c * sizeof *v);
    if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory for %zu events", n);
    *cols[i] = v;
  }
  *cap = c;
  return SP_OK;
}

static void builder_done(struct builder *b) { sp__region_names_free(&b->names); }

/* ---- JSON profiles ------------------------------------------------------------ */

struct jctx {
  struct builder b;
  const char *where; /* "regions[3]" while a row is read */
  char wbuf[96];
};

static sp_status jerr(struct jctx *j, const char *key, const char *want, const struct sp_jval *v) {
  int top = !j->where[0];
  return sp__set_error(SP_ERR_FORMAT, "%s: %s%s%s must be %s, not %s; the JSON profile is malformed",
                       NAME(j->b.r), top ? "" : j->where, key && !top ? "." : "", key ? key : "", want,
                       v ? sp__json_type_name(v->type) : "missing");
}

/* An optional integer member; *out untouched when absent or null. */
static sp_status j_int(struct jctx *j, const struct sp_jval *o, const char *key, int64_t *out, int required) {
  const struct sp_jval *v = sp__json_get(o, key);
  if (!v || v->type == SP_J_NULL) return required ? jerr(j, key, "an integer", v) : SP_OK;
  if (v->type != SP_J_INT) return jerr(j, key, "an integer", v);
  *out = v->i;
  return SP_OK;
}

static sp_status j_str(struct jctx *j, const struct sp_jval *o, const char *key, const char **out, int required) {
  const struct sp_jval *v = sp__json_get(o, key);
  if (!v || v->type == SP_J_NULL) return required ? jerr(j, key, "a string", v) : SP_OK;
  if (v->type != SP_J_STRING) return jerr(j, key, "a string", v);
  *out = v->s;
  return SP_OK;
}

/* An array of integers (a column of a timeline row), or NULL when absent;
 * nulls in it read as `null_as`. */
static sp_status j_ints(struct jctx *j, const struct sp_jval *o, const char *key, const struct sp_jval **out) {
  const struct sp_jval *v = sp__json_get(o, key);
  *out = NULL;
  if (!v || v->type == SP_J_NULL) return SP_OK;
  if (v->type != SP_J_ARRAY) return jerr(j, key, "an array of integers", v);
  for (size_t i = 0; i < v->len; i++)
    if (v->items[i].type != SP_J_INT && v->items[i].type != SP_J_NULL) {
      char k[80];
      snprintf(k, sizeof k, "%s[%zu]", key, i);
      return jerr(j, k, "an integer", &v->items[i]);
    }
  *out = v;
  return SP_OK;
}

static sp_status json_metadata(struct jctx *j, const struct sp_jval *md) {
  sp_results *r = j->b.r;
  if (!md || md->type == SP_J_NULL) return SP_OK;
  j->where = "metadata";
  if (md->type != SP_J_OBJECT) return jerr(j, NULL, "an object", md);
  for (size_t i = 0; i < md->len; i++) {
    const struct sp_jval *v = &md->items[i];
    struct sp__meta *m = new_meta(&j->b, md->keys[i]);
    if (!m) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s's metadata", NAME(r));
    switch (v->type) {
    case SP_J_STRING:
      m->e.kind = SP_VALUE_STRING;
      m->s = sp__strdup(v->s);
      m->text = sp__strdup(v->s);
      break;
    case SP_J_INT:
      m->e.kind = SP_VALUE_INT;
      m->e.i = v->i;
      m->text = sp__asprintf("%lld", (long long)v->i);
      break;
    case SP_J_FLOAT: {
      char num[64];
      sp__format_double(num, sizeof num, v->f);
      m->e.kind = SP_VALUE_FLOAT;
      m->e.f = v->f;
      m->text = sp__strdup(num);
      break;
    }
    case SP_J_BOOL:
      m->e.kind = SP_VALUE_BOOL;
      m->e.i = v->b;
      m->text = sp__strdup(v->b ? "true" : "false");
      break;
    case SP_J_ARRAY: {
      int strs = 1, ints = 1;
      for (size_t k = 0; k < v->len; k++) {
        strs &= v->items[k].type == SP_J_STRING;
        ints &= v->items[k].type == SP_J_INT;
      }
      if (strs) { /* upstream's lists are lists of strings (modules) */
        m->e.kind = SP_VALUE_STRING_ARRAY;
        m->e.n = v->len;
        m->strings = calloc(v->len + 1, sizeof *m->strings);
        for (size_t k = 0; m->strings && k < v->len; k++)
          if (!(m->strings[k] = sp__strdup(v->items[k].s))) break;
        m->text = m->strings ? sp__json_list_text(m->strings, v->len) : NULL;
        break;
      }
      if (ints && v->len) {
        m->e.kind = SP_VALUE_INT_ARRAY;
        m->e.n = v->len;
        if ((m->ints = malloc(v->len * sizeof *m->ints)))
          for (size_t k = 0; k < v->len; k++) m->ints[k] = v->items[k].i;
        m->text = sp__json_render(v);
        break;
      }
      m->e.kind = SP_VALUE_OTHER; /* a mixed list is shown as JSON */
      m->text = sp__json_render(v);
      break;
    }
    default:
      m->e.kind = SP_VALUE_OTHER;
      m->text = sp__json_render(v);
      break;
    }
    if (!m->text || (m->e.kind == SP_VALUE_STRING && !m->s))
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s's metadata", NAME(r));
  }
  return SP_OK;
}

static sp_status json_aggregate(struct jctx *j, const struct sp_jval *a, struct sp__rrow *w) {
  if (a->type != SP_J_OBJECT) return jerr(j, "aggregate", "an object", a);
  int64_t count = 0;
  struct sp__summary *s = &w->sum;
  const char *where = j->where;
  snprintf(j->wbuf, sizeof j->wbuf, "%s.aggregate", where);
  j->where = j->wbuf;
  sp_status st = j_int(j, a, "count", &count, 1);
  if (st == SP_OK) st = j_int(j, a, "total", &s->total, 1);
  if (st == SP_OK) st = j_int(j, a, "minimum", &s->minimum, 0);
  if (st == SP_OK) st = j_int(j, a, "maximum", &s->maximum, 0);
  if (st == SP_OK) st = j_int(j, a, "exclusive", &w->exclusive, 0);
  const struct sp_jval *mean = sp__json_get(a, "mean"), *m2 = sp__json_get(a, "m2");
  if (st == SP_OK && count < 0) st = sp__set_error(SP_ERR_FORMAT, "%s: %s.count is negative", NAME(j->b.r), j->where);
  if (st != SP_OK) return st;
  s->count = (uint64_t)count;
  s->mean = count ? (double)s->total / (double)count : 0;
  if (mean && m2 && (mean->type == SP_J_FLOAT || mean->type == SP_J_INT) &&
      (m2->type == SP_J_FLOAT || m2->type == SP_J_INT)) {
    s->mean = mean->type == SP_J_INT ? (double)mean->i : mean->f;
    s->m2 = m2->type == SP_J_INT ? (double)m2->i : m2->f;
    w->has_spread = 1;
  }
  if (count > 0 && (s->minimum < 0 || s->maximum < s->minimum || s->total < s->maximum))
    return sp__set_error(SP_ERR_FORMAT, "%s: %s is inconsistent (minimum %lld, maximum %lld, total %lld)",
                         NAME(j->b.r), j->where, (long long)s->minimum, (long long)s->maximum, (long long)s->total);
  w->has_summary = 1;
  j->where = where;
  return SP_OK;
}

/* JSON columns of a timeline row, and where they go (mem_col's order). */
static const char *const jcols[] = {"start_times_ns", "end_times_ns", "call_ids", "parent_ids", "thread_ids",
                                    "task_ids",       "gpu_durations_ns", "await_ns"};
enum { NJCOLS = 8 };

static int64_t **mem_col(sp_results *r, int c) {
  int64_t **cols[] = {&r->mem_start,  &r->mem_end,  &r->mem_call, &r->mem_parent,
                      &r->mem_thread, &r->mem_task, &r->mem_gpu, &r->mem_await};
  return cols[c];
}

/* One lane-table row's keys into row (an sp_thread_info or sp_task_info
 * holding the defaults), numbers before strings; a string is copied into
 * r->lanes.strings. */
static sp_status lane_row(struct jctx *j, const struct sp_jval *o, int tasks, char *row) {
  sp_results *r = j->b.r;
  size_t nkeys;
  const struct sp__lane_key *keys = sp__lane_keys(tasks, &nkeys);
  sp_status st = SP_OK;
  for (int strings = 0; strings < 2; strings++)
    for (size_t i = 0; i < nkeys && st == SP_OK; i++) {
      const struct sp__lane_key *lk = &keys[i];
      if ((lk->kind == 's') != strings) continue;
      if (lk->kind == 'i') {
        int64_t v;
        memcpy(&v, row + lk->off, sizeof v);
        st = j_int(j, o, lk->key, &v, lk->required);
        memcpy(row + lk->off, &v, sizeof v);
      } else if (lk->kind == 'b') { /* upstream writes a bool; an integer is taken too */
        int64_t v = 0;
        const struct sp_jval *d = sp__json_get(o, lk->key);
        if (d && d->type == SP_J_BOOL) v = d->b;
        else if (d && d->type != SP_J_NULL) st = j_int(j, o, lk->key, &v, 0);
        int b = v != 0;
        memcpy(row + lk->off, &b, sizeof b);
      } else {
        const char *s = "";
        if ((st = j_str(j, o, lk->key, &s, 0)) != SP_OK) break;
        char *copy = r->lanes.strings[r->lanes.nstrings++] = sp__strdup(s);
        if (!copy) st = SP_ERR_NO_MEMORY;
        memcpy(row + lk->off, &copy, sizeof copy);
      }
    }
  return st;
}

static sp_status json_lanes(struct jctx *j, const struct sp_jval *doc) {
  sp_results *r = j->b.r;
  for (int pass = 0; pass < 2; pass++) {
    const char *key = pass ? "tasks" : "threads";
    const struct sp_jval *t = sp__json_get(doc, key);
    if (!t || t->type == SP_J_NULL) continue;
    j->where = key;
    if (t->type != SP_J_OBJECT) return jerr(j, NULL, "an object of rank -> rows", t);
    size_t total = 0;
    for (size_t i = 0; i < t->len; i++) {
      if (t->items[i].type != SP_J_ARRAY) return jerr(j, t->keys[i], "an array of rows", &t->items[i]);
      total += t->items[i].len;
    }
    if (total > SP__MAX_ROWS) return sp__set_error(SP_ERR_FORMAT, "%s: %s has too many rows", NAME(r), key);
    void *rows = calloc(total + 1, pass ? sizeof(sp_task_info) : sizeof(sp_thread_info));
    char **strings = realloc(r->lanes.strings, (r->lanes.nstrings + 3 * total + 1) * sizeof *strings);
    if (!rows || !strings) {
      free(rows);
      if (strings) r->lanes.strings = strings;
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    }
    r->lanes.strings = strings;
    if (pass) r->lanes.tasks = rows;
    else r->lanes.threads = rows;
    size_t k = 0;
    for (size_t i = 0; i < t->len; i++) {
      char *endp = NULL;
      long long rank = strtoll(t->keys[i], &endp, 10);
      if (!t->keys[i][0] || *endp || rank < 0 || rank > SP__MAX_RANK)
        return sp__set_error(SP_ERR_FORMAT, "%s: %s has the key '%s', which is not a rank", NAME(r), key, t->keys[i]);
      for (size_t q = 0; q < t->items[i].len; q++, k++) {
        const struct sp_jval *o = &t->items[i].items[q];
        snprintf(j->wbuf, sizeof j->wbuf, "%s[\"%s\"][%zu]", key, t->keys[i], q);
        j->where = j->wbuf;
        if (o->type != SP_J_OBJECT) return jerr(j, NULL, "an object", o);
        char *row = (char *)rows + k * (pass ? sizeof(sp_task_info) : sizeof(sp_thread_info));
        if (!pass) r->lanes.threads[k] = (sp_thread_info){rank, -1, 0, 0, 0, -1, -1, -1, -1, ""};
        else r->lanes.tasks[k] = (sp_task_info){rank, -1, -1, -1, -1, 0, 0, 0, -1, "", "", ""};
        sp_status st = lane_row(j, o, pass, row);
        if (st == SP_ERR_NO_MEMORY) return sp__set_error(st, "out of memory");
        if (st != SP_OK) return st;
        if (pass) r->lanes.ntasks = k + 1;
        else r->lanes.nthreads = k + 1;
      }
    }
  }
  return SP_OK;
}

static sp_status json_doc(sp_results *r, const struct sp_jval *doc) {
  struct jctx j;
  memset(&j, 0, sizeof j);
  j.b.r = r;
  j.where = "";
  if (doc->type != SP_J_OBJECT)
    return sp__set_error(SP_ERR_FORMAT, "%s is JSON but not a scope-profiler profile (it is %s, not an object)",
                         NAME(r), sp__json_type_name(doc->type));
  const struct sp_jval *fmt = sp__json_get(doc, "format");
  if (!fmt || fmt->type != SP_J_STRING || strcmp(fmt->s, "scope-profiler-profile") != 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s is JSON but not a scope-profiler profile: its \"format\" must be "
                         "\"scope-profiler-profile\" (found %s)",
                         NAME(r), fmt && fmt->type == SP_J_STRING ? fmt->s : fmt ? sp__json_type_name(fmt->type) : "none");
  int64_t version = 0;
  sp_status st = j_int(&j, doc, "format_version", &version, 0);
  if (st != SP_OK) return st;
  if (version > 1 || version < 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: JSON profile format_version %lld; this reader supports versions through 1. Upgrade "
                         "scope-profiler to read this file",
                         NAME(r), (long long)version);
  r->format = "json";
  r->schema = (int)version;
  r->layout = "columnar";
  const struct sp_jval *eda = sp__json_get(doc, "event_data_available");
  if (eda && eda->type != SP_J_BOOL && eda->type != SP_J_NULL) return jerr(&j, "event_data_available", "a boolean", eda);
  st = json_metadata(&j, sp__json_get(doc, "metadata"));
  const struct sp_jval *regions = sp__json_get(doc, "regions");
  j.where = "";
  if (st == SP_OK && regions && regions->type != SP_J_ARRAY && regions->type != SP_J_NULL)
    st = jerr(&j, "regions", "an array", regions);
  size_t nreg = regions && regions->type == SP_J_ARRAY ? regions->len : 0;
  /* first pass: which optional columns exist, how many events */
  int has[NJCOLS] = {1, 1, 0, 0, 0, 0, 0, 0};
  size_t total = 0, timeline = 0;
  for (size_t i = 0; st == SP_OK && i < nreg; i++) {
    const struct sp_jval *o = &regions->items[i];
    snprintf(j.wbuf, sizeof j.wbuf, "regions[%zu]", i);
    j.where = j.wbuf;
    if (o->type != SP_J_OBJECT) {
      st = jerr(&j, NULL, "an object", o);
      break;
    }
    const struct sp_jval *cols[NJCOLS];
    for (int c = 0; c < NJCOLS && st == SP_OK; c++) st = j_ints(&j, o, jcols[c], &cols[c]);
    if (st != SP_OK) break;
    if (!cols[0] != !cols[1]) {
      st = sp__set_error(SP_ERR_FORMAT, "%s: %s has %s but not %s", NAME(r), j.where, jcols[cols[0] ? 0 : 1],
                         jcols[cols[0] ? 1 : 0]);
      break;
    }
    if (!cols[0]) continue;
    timeline++;
    size_t n = cols[0]->len;
    for (int c = 1; c < NJCOLS && st == SP_OK; c++)
      if (cols[c] && cols[c]->len != n)
        st = sp__set_error(SP_ERR_FORMAT, "%s: %s.%s has %zu values but start_times_ns has %zu", NAME(r), j.where,
                           jcols[c], cols[c]->len, n);
    for (int c = 2; c < NJCOLS; c++) has[c] |= cols[c] != NULL;
    total += n;
    if (total > SP__MAX_EVENTS) st = sp__set_error(SP_ERR_FORMAT, "%s: too many events", NAME(r));
  }
  if (st == SP_OK && nreg && !timeline) {
    /* rows with aggregate bodies only: the aggregate layout */
    int any_agg = 0;
    for (size_t i = 0; i < nreg; i++) any_agg |= sp__json_get(&regions->items[i], "aggregate") != NULL;
    if (any_agg) {
      r->aggregate = 1;
      r->layout = "aggregate";
    }
  }
  has[3] = has[2] = has[2] && has[3]; /* explicit nesting needs both */
  size_t cap = 0;
  int ncols = NJCOLS;
  if (st == SP_OK && total) st = mem_grow(r, total, &cap, ncols);
  for (int c = 0; st == SP_OK && c < NJCOLS; c++)
    if (!has[c] && total) {
      free(*mem_col(r, c));
      *mem_col(r, c) = NULL;
    }
  /* second pass: the rows */
  size_t at = 0;
  for (size_t i = 0; st == SP_OK && i < nreg; i++) {
    const struct sp_jval *o = &regions->items[i];
    snprintf(j.wbuf, sizeof j.wbuf, "regions[%zu]", i);
    j.where = j.wbuf;
    const char *name = NULL, *file = NULL, *text = NULL;
    int64_t rank = 0, line = -1;
    st = j_str(&j, o, "name", &name, 1);
    if (st == SP_OK) st = j_int(&j, o, "rank", &rank, 1);
    if (st == SP_OK && (rank < 0 || rank > SP__MAX_RANK))
      st = sp__set_error(SP_ERR_FORMAT, "%s: %s.rank is %lld, not a rank", NAME(r), j.where, (long long)rank);
    if (st == SP_OK) st = j_str(&j, o, "source_file", &file, 0);
    if (st == SP_OK) st = j_int(&j, o, "source_lineno", &line, 0);
    if (st == SP_OK) st = j_str(&j, o, "source_text", &text, 0);
    const struct sp_jval *tags = sp__json_get(o, "tags");
    if (st == SP_OK && tags && tags->type != SP_J_NULL) {
      int ok = tags->type == SP_J_ARRAY;
      for (size_t k = 0; ok && k < tags->len; k++) ok = tags->items[k].type == SP_J_STRING;
      if (!ok) st = jerr(&j, "tags", "an array of strings", tags);
    }
    struct sp__rrow *w = NULL;
    char where[96];
    snprintf(where, sizeof where, "%s", j.where);
    if (st == SP_OK) st = new_row(&j.b, name, rank, where, &w);
    if (st != SP_OK) break;
    j.where = where;
    w->source_line = line < 0 ? -1 : line;
    if (file) {
      free(w->source_file);
      w->source_file = sp__strdup(file);
    }
    if (text) {
      free(w->source_text);
      w->source_text = sp__strdup(text);
    }
    if (tags && tags->type == SP_J_ARRAY) {
      char **v = calloc(tags->len + 1, sizeof *v);
      for (size_t k = 0; v && k < tags->len; k++) v[k] = tags->items[k].s;
      free(w->tags);
      w->tags = v ? sp__json_list_text(v, tags->len) : NULL;
      free(v);
    }
    if (!w->source_file || !w->source_text || !w->tags) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      break;
    }
    if ((st = j_int(&j, o, "exclusive_total_ns", &w->exclusive, 0)) != SP_OK) break;
    const struct sp_jval *cols[NJCOLS];
    for (int c = 0; c < NJCOLS; c++) j_ints(&j, o, jcols[c], &cols[c]);
    const struct sp_jval *agg = sp__json_get(o, "aggregate");
    if (!cols[0]) {
      if (agg && agg->type != SP_J_NULL) st = json_aggregate(&j, agg, w);
      else if (!r->aggregate) { /* a row without calls */
        w->has_summary = 1;
      }
      continue;
    }
    size_t n = cols[0]->len;
    w->offset = at;
    w->count = n;
    for (int c = 0; c < NJCOLS; c++) {
      int64_t *dst = *mem_col(r, c);
      if (!dst) continue;
      for (size_t k = 0; k < n; k++) {
        const struct sp_jval *v = cols[c] ? &cols[c]->items[k] : NULL;
        if (c < 2 && (!v || v->type != SP_J_INT)) {
          char key[80];
          snprintf(key, sizeof key, "%s[%zu]", jcols[c], k);
          st = jerr(&j, key, "an integer", v);
          break;
        }
        dst[at + k] = v && v->type == SP_J_INT ? v->i : -1;
      }
      if (st != SP_OK) break;
    }
    at += n;
  }
  r->nevents = at;
  if (st == SP_OK) st = json_lanes(&j, doc);
  sp__meta_fix_pointers(r);
  builder_done(&j.b);
  return st;
}

static sp_status gunzip(sp_results *r, const char *data, size_t size, char **out, size_t *outsize) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  size_t cap = size * 4 + 4096, n = 0;
  char *buf = malloc(cap);
  int rc = Z_OK;
  z.next_in = (Bytef *)data;
  z.avail_in = (uInt)(size > UINT32_MAX ? UINT32_MAX : size);
  while (buf && rc != Z_STREAM_END) {
    if (n == cap) {
      /* a JSON profile compresses well, but not beyond reason */
      if (cap >= ((size_t)1 << 34)) break;
      char *b = realloc(buf, cap * 2);
      if (!b) break;
      buf = b;
      cap *= 2;
    }
    z.next_out = (Bytef *)buf + n;
    z.avail_out = (uInt)(cap - n > UINT32_MAX ? UINT32_MAX : cap - n);
    rc = inflate(&z, Z_NO_FLUSH);
    n = (size_t)((char *)z.next_out - buf);
    if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && z.avail_out == 0)) break;
  }
  inflateEnd(&z);
  if (!buf || rc != Z_STREAM_END) {
    free(buf);
    return sp__set_error(SP_ERR_FORMAT, "%s is gzip-compressed but %s; a .json.gz profile must decompress whole",
                         NAME(r), !buf ? "memory ran out" : rc == Z_DATA_ERROR ? "its data is corrupt" : "it is truncated");
  }
  *out = buf;
  *outsize = n;
  return SP_OK;
}

sp_status sp__open_json(sp_results *r, const char *data, size_t size) {
  char *plain = NULL;
  size_t psize = 0;
  if (size >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b) {
    sp_status st = gunzip(r, data, size, &plain, &psize);
    if (st != SP_OK) return st;
    data = plain;
    size = psize;
  }
  char err[300];
  struct sp_jval *doc = sp__json_parse(data, size, err, sizeof err);
  free(plain);
  if (!doc) return sp__set_error(SP_ERR_FORMAT, "%s is not valid JSON: %s", NAME(r), err);
  sp_status st = json_doc(r, doc);
  sp__json_free(doc);
  free(doc);
  return st;
}

/* ---- native traces (.spt) ------------------------------------------------------- */

struct spt {
  const unsigned char *p;
  size_t n, pos;
  int big; /* big-endian file */
};

static int spt_take(struct spt *t, void *out, size_t k) {
  if (k > t->n - t->pos) return -1;
  const unsigned char *s = t->p + t->pos;
  unsigned char *d = out;
  for (size_t i = 0; i < k; i++) d[i] = t->big ? s[k - 1 - i] : s[i]; /* to little-endian */
  t->pos += k;
  return 0;
}

static uint64_t le(const unsigned char *b, size_t k) {
  uint64_t v = 0;
  for (size_t i = k; i-- > 0;) v = (v << 8) | b[i];
  return v;
}

static int spt_i32(struct spt *t, int32_t *v) {
  unsigned char b[4];
  if (spt_take(t, b, 4) != 0) return -1;
  *v = (int32_t)(uint32_t)le(b, 4);
  return 0;
}

static int spt_i64(struct spt *t, int64_t *v) {
  unsigned char b[8];
  if (spt_take(t, b, 8) != 0) return -1;
  *v = (int64_t)le(b, 8);
  return 0;
}

/* Length-prefixed bytes: a malloc'd string. */
static sp_status spt_str(sp_results *r, struct spt *t, const char *what, size_t rec, char **out) {
  int32_t len = 0;
  size_t at = t->pos;
  if (spt_i32(t, &len) != 0)
    return sp__set_error(SP_ERR_FORMAT, "%s: region record %zu is truncated in its %s length (byte %zu)", NAME(r),
                         rec, what, at);
  if (len < 0 || (size_t)len > t->n - t->pos)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: region record %zu claims a %s of %d bytes at byte %zu, but %zu bytes are left; the "
                         "trace is truncated or corrupt",
                         NAME(r), rec, what, (int)len, at, t->n - t->pos);
  char *s = sp__strndup((const char *)t->p + t->pos, (size_t)len);
  if (!s) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  if (!sp__utf8_valid(s, (size_t)len)) {
    free(s);
    return sp__set_error(SP_ERR_FORMAT, "%s: the %s of region record %zu is not valid UTF-8", NAME(r), what, rec);
  }
  t->pos += (size_t)len;
  *out = s;
  return SP_OK;
}

sp_status sp__open_spt(sp_results *r, const unsigned char *data, size_t size) {
  if (size < 24)
    return sp__set_error(SP_ERR_FORMAT, "%s is a native trace of only %zu bytes; its header alone needs 24", NAME(r),
                         size);
  if (memcmp(data, "SCOPEPRF", 8) != 0)
    return sp__set_error(SP_ERR_FORMAT, "%s is not a native trace (no SCOPEPRF magic)", NAME(r));
  struct spt t = {data, size, 8, 0};
  int32_t version = 0, rank = 0;
  spt_i32(&t, &version);
  if (version != 1 && version != 2) { /* written on a machine of the other byte order */
    t.pos = 8;
    t.big = 1;
    spt_i32(&t, &version);
  }
  if (version != 1 && version != 2)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: native trace version %u; this reader knows versions 1 and 2. Upgrade scope-profiler",
                         NAME(r), (unsigned)le(data + 8, 4));
  int64_t nreg = 0;
  spt_i32(&t, &rank);
  spt_i64(&t, &nreg);
  if (rank < 0) return sp__set_error(SP_ERR_FORMAT, "%s: the trace's rank is %d", NAME(r), (int)rank);
  /* every record takes at least 12 bytes (v1: name length and count) */
  if (nreg < 0 || (uint64_t)nreg > (size - 24) / 12)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: the trace claims %lld regions, more than its %zu bytes can hold; it is truncated or "
                         "corrupt",
                         NAME(r), (long long)nreg, size);
  r->format = "native";
  r->schema = version;
  r->layout = "columnar";
  struct builder b;
  memset(&b, 0, sizeof b);
  b.r = r;
  sp_status st = SP_OK;
  size_t cap = 0;
  for (int64_t k = 0; k < nreg && st == SP_OK; k++) {
    char *name = NULL, *file = NULL;
    int32_t line = -1;
    int64_t n = 0;
    st = spt_str(r, &t, "name", (size_t)k, &name);
    if (st == SP_OK && version == 2) st = spt_str(r, &t, "source path", (size_t)k, &file);
    if (st == SP_OK && version == 2 && spt_i32(&t, &line) != 0)
      st = sp__set_error(SP_ERR_FORMAT, "%s: region record %lld is truncated in its source line", NAME(r),
                         (long long)k);
    size_t at = t.pos;
    if (st == SP_OK && spt_i64(&t, &n) != 0)
      st = sp__set_error(SP_ERR_FORMAT, "%s: region record %lld is truncated in its call count", NAME(r), (long long)k);
    if (st == SP_OK && (n < 0 || (uint64_t)n > (t.n - t.pos) / 16))
      st = sp__set_error(SP_ERR_FORMAT,
                         "%s: region record %lld ('%s') claims %lld calls at byte %zu, but only %zu bytes are left "
                         "(16 per call); the trace is truncated or corrupt",
                         NAME(r), (long long)k, name, (long long)n, at, t.n - t.pos);
    struct sp__rrow *w = NULL;
    char where[64];
    snprintf(where, sizeof where, "region record %lld", (long long)k);
    if (st == SP_OK) st = new_row(&b, name, rank, where, &w);
    if (st == SP_OK && file && file[0]) {
      free(w->source_file);
      w->source_file = file;
      file = NULL;
    }
    if (st == SP_OK) {
      w->source_line = line < 0 ? -1 : line;
      w->offset = r->nevents;
      w->count = (uint64_t)n;
      st = mem_grow(r, r->nevents + (size_t)n, &cap, 2);
    }
    for (int64_t i = 0; st == SP_OK && i < n; i++) spt_i64(&t, &r->mem_start[r->nevents + (size_t)i]);
    for (int64_t i = 0; st == SP_OK && i < n; i++) spt_i64(&t, &r->mem_end[r->nevents + (size_t)i]);
    if (st == SP_OK) r->nevents += (size_t)n;
    free(name);
    free(file);
  }
  if (st == SP_OK && t.pos != t.n)
    st = sp__set_error(SP_ERR_FORMAT,
                       "%s: %zu byte(s) follow the trace's last region record; the file is not one native trace",
                       NAME(r), t.n - t.pos);
  if (st == SP_OK) st = meta_str(&b, SP_META_SOURCE, "native");
  if (st == SP_OK) st = meta_int(&b, SP_META_TRACE_FORMAT_VERSION, version);
  if (st == SP_OK) st = meta_int(&b, SP_META_MPI_RANK, rank);
  sp__meta_fix_pointers(r);
  builder_done(&b);
  return st;
}
