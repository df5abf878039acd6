/* read_tree.c - call stacks and call-path trees.
 *
 * A rank's calls are nested either by the call and parent ids the writer
 * recorded, or, when it recorded none (upstream's C writer, hierarchical
 * files), by interval containment exactly as upstream's flame chart does:
 * sort by (start, longer first), pop the stack while its top has ended, the
 * depth is the stack size and the parent the top. Containment runs per lane
 * (a thread, or an async task on a thread) because calls on different lanes
 * overlap without nesting.
 *
 * Parents are referred to by index, never by name, since names repeat under
 * recursion. Filtering a region out re-attaches its children to the nearest
 * kept ancestor, which is what containment over only the kept regions gives.
 *
 * A recorded parent on another lane (a call another thread opened: an OpenMP
 * worker's call under the call that opened the parallel region) does not
 * nest the lane: the call is a root of its own lane with `xparent` naming
 * that parent, so each lane stays properly nested for timelines and own
 * times, while call-path trees hang it under the parent. Such a parent may
 * come later in the array (its thread may sort later), so whatever follows
 * the tree through xparent walks it in tree order (tree_order).
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"
#include "read/read_walk.h"

/* Tree sums of durations saturate: a hostile file's calls (each one's
 * times bounded by SP__TIME_LIMIT) can still add up past int64. */
static int64_t sat_add(int64_t a, int64_t b) {
  int64_t s;
  return __builtin_add_overflow(a, b, &s) ? (b > 0 ? INT64_MAX : INT64_MIN) : s;
}

#define BLOCK ((size_t)1 << 20)

struct ev {
  int64_t start, end, thread, task, call, parent;
  uint32_t region;
};

static int cmp_ev(const void *pa, const void *pb) {
  const struct ev *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->task != b->task) return a->task < b->task ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1; /* longer (the parent) first */
  if (a->call != b->call) return a->call < b->call ? -1 : 1;
  return (a->region > b->region) - (a->region < b->region);
}

static int cmp_call(const void *pa, const void *pb) {
  const sp_call *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->task != b->task) return a->task < b->task ? -1 : 1;
  if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
  if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1;
  return (a->region > b->region) - (a->region < b->region);
}

/* Containment nesting over calls already sorted by (lane, start, -end). */
static sp_status nest_sorted(sp_call *calls, size_t n, size_t *overlaps) {
  size_t *stack = malloc((n ? n : 1) * sizeof *stack), top = 0, ov = 0;
  if (!stack) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory nesting %zu calls", n);
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && (calls[i].thread != calls[i - 1].thread || calls[i].task != calls[i - 1].task))
      top = 0;
    while (top > 0 && calls[stack[top - 1]].end_ns <= calls[i].start_ns) top--;
    calls[i].depth = (uint32_t)top;
    calls[i].parent = top ? (int64_t)stack[top - 1] : -1;
    if (top && calls[i].end_ns > calls[stack[top - 1]].end_ns) ov++;
    stack[top++] = i;
  }
  free(stack);
  if (overlaps) *overlaps = ov;
  return SP_OK;
}

sp_status sp_call_stack_build(sp_call *calls, size_t n, size_t *overlaps) {
  if (overlaps) *overlaps = 0;
  if (!calls && n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_call_stack_build: NULL calls");
  if (n) qsort(calls, n, sizeof *calls, cmp_call);
  for (size_t i = 0; i < n; i++) calls[i].xparent = -1;
  return nest_sorted(calls, n, overlaps);
}

/* The parent of call i in the call-path tree: its lane parent, else the
 * parent on another lane, else -1. */
static int64_t tree_parent(const sp_call *c, size_t i) { return c[i].parent >= 0 ? c[i].parent : c[i].xparent; }

/* Depth of every call in the call-path tree (lane parents and cross-lane
 * parents alike), into td; -1 when following the parents loops (a corrupt
 * file). Walks each chain once: iterative, with the calls on the way kept in
 * `path`. */
static int tree_depths(const sp_call *c, size_t n, uint32_t *td, size_t *path) {
  const uint32_t todo = UINT32_MAX, busy = UINT32_MAX - 1;
  for (size_t i = 0; i < n; i++) td[i] = todo;
  for (size_t i = 0; i < n; i++) {
    size_t np = 0;
    int64_t x = (int64_t)i;
    while (x >= 0 && td[x] == todo) {
      td[x] = busy;
      path[np++] = (size_t)x;
      x = tree_parent(c, (size_t)x);
    }
    if (x >= 0 && td[x] == busy) return -1;
    uint32_t d = x < 0 ? 0 : td[x] + 1;
    while (np) td[path[--np]] = d++;
  }
  return 0;
}

/* Call indices in tree order (every call after its tree parent): by tree
 * depth, stable. NULL when out of memory or the parents loop. */
static size_t *tree_order(const sp_call *c, size_t n) {
  uint32_t *td = malloc((n ? n : 1) * sizeof *td);
  size_t *order = malloc((n ? n : 1) * sizeof *order), *path = order; /* the walk's stack, then the order */
  size_t *start = NULL;
  if (!td || !order || tree_depths(c, n, td, path) != 0) goto fail;
  uint32_t maxd = 0;
  for (size_t i = 0; i < n; i++)
    if (td[i] > maxd) maxd = td[i];
  start = calloc((size_t)maxd + 2, sizeof *start);
  if (!start) goto fail;
  for (size_t i = 0; i < n; i++) start[td[i] + 1]++;
  for (size_t d = 1; d <= maxd + 1; d++) start[d] += start[d - 1];
  for (size_t i = 0; i < n; i++) order[start[td[i]]++] = i;
  free(td);
  free(start);
  return order;
fail:
  free(td);
  free(order);
  free(start);
  return NULL;
}

struct idpos {
  int64_t id;
  size_t pos;
};
static int cmp_idpos(const void *a, const void *b) {
  int64_t x = ((const struct idpos *)a)->id, y = ((const struct idpos *)b)->id;
  return (x > y) - (x < y);
}

/* Nesting from recorded ids; 0 when the ids are missing, duplicated, dangling
 * or contradict the time order (the caller then falls back to containment). */
static int nest_by_ids(const struct ev *e, sp_call *calls, size_t n) {
  struct idpos *map = malloc((n ? n : 1) * sizeof *map);
  if (!map) return 0;
  for (size_t i = 0; i < n; i++) {
    if (e[i].call < 0) {
      free(map);
      return 0;
    }
    map[i].id = e[i].call;
    map[i].pos = i;
  }
  qsort(map, n, sizeof *map, cmp_idpos);
  int ok = 1, cross = 0;
  for (size_t i = 1; i < n && ok; i++)
    if (map[i].id == map[i - 1].id) ok = 0;
  for (size_t i = 0; i < n && ok; i++) {
    calls[i].parent = calls[i].xparent = -1;
    calls[i].depth = 0;
    if (e[i].parent < 0) continue;
    struct idpos key = {e[i].parent, 0};
    struct idpos *hit = bsearch(&key, map, n, sizeof *map, cmp_idpos);
    if (!hit) {
      ok = 0;
    } else if (e[hit->pos].thread == e[i].thread && e[hit->pos].task == e[i].task) {
      if (hit->pos >= i) ok = 0;
      calls[i].parent = (int64_t)hit->pos;
      calls[i].depth = calls[hit->pos].depth + 1;
    } else if (e[hit->pos].start > e[i].start) {
      ok = 0; /* a parent on another lane must have begun first */
    } else {
      calls[i].xparent = (int64_t)hit->pos;
      cross = 1;
    }
  }
  free(map);
  if (ok && cross) { /* cross-lane parents must not loop */
    size_t *order = tree_order(calls, n);
    ok = order != NULL;
    free(order);
  }
  return ok;
}

/* ---- a rank's calls by walking them (read_walk.c) -----------------------------
 * The walk visits calls in start order; each lane's calls are counted first
 * (a pass over the thread and task columns), so every call goes straight to
 * its place in (thread, task, start, longer first) order and its parent's
 * place is its tag: no sort, and nothing per call beyond the result. */

struct lane_count {
  int64_t thread, task;
  uint64_t base, seen;
};
struct calls_walk {
  sp_call *calls;
  struct lane_count *lanes;
  size_t nlanes;
  uint32_t *of_walk; /* the walk's lane index -> index into lanes */
  size_t nof;
  size_t overlaps;
};

static int cmp_lane_count(const void *pa, const void *pb) {
  const struct lane_count *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  return (a->task > b->task) - (a->task < b->task);
}

static struct lane_count *lane_find(struct calls_walk *w, int64_t thread, int64_t task) {
  size_t lo = 0, hi = w->nlanes;
  struct lane_count key = {thread, task, 0, 0};
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = cmp_lane_count(&w->lanes[mid], &key);
    if (c == 0) return &w->lanes[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static sp_status calls_visit(void *ctx, const struct sp__walk_call *c, const uint64_t *ptag,
                             uint64_t *tag) {
  struct calls_walk *w = ctx;
  if (c->lane >= w->nof) {
    size_t n = w->nof ? w->nof * 2 : 16;
    while (n <= c->lane) n *= 2;
    uint32_t *v = realloc(w->of_walk, n * sizeof *v);
    if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    for (size_t i = w->nof; i < n; i++) v[i] = UINT32_MAX;
    w->of_walk = v;
    w->nof = n;
  }
  if (w->of_walk[c->lane] == UINT32_MAX) {
    struct lane_count *l = lane_find(w, c->thread, c->task);
    if (!l)
      return sp__set_error(SP_ERR_FORMAT, "a call's thread changed between two reads of the file");
    w->of_walk[c->lane] = (uint32_t)(l - w->lanes);
  }
  struct lane_count *l = &w->lanes[w->of_walk[c->lane]];
  if (l->seen == (l + 1 < w->lanes + w->nlanes ? l[1].base : UINT64_MAX) - l->base)
    return sp__set_error(SP_ERR_FORMAT, "a lane has more calls than counted");
  uint64_t i = l->base + l->seen++;
  sp_call *x = &w->calls[i];
  x->start_ns = c->start;
  x->end_ns = c->end;
  x->thread = c->thread;
  x->task = c->task;
  x->region = c->region;
  x->parent = x->xparent = -1;
  x->depth = 0;
  if (ptag) {
    const sp_call *p = &w->calls[*ptag];
    if (p->thread == c->thread && p->task == c->task) {
      x->parent = (int64_t)*ptag;
      x->depth = p->depth + 1;
      if (!c->by_ids && c->end > p->end_ns) w->overlaps++;
    } else {
      x->xparent = (int64_t)*ptag;
    }
  }
  *tag = i;
  return SP_OK;
}

/* The rank's calls by walking; 1 done, 0 refused (nothing kept), -1 error. */
static int rank_calls_walked(sp_results *r, int64_t rank, const size_t *rows, size_t nrows,
                             sp_call **out, size_t *nout, size_t *overlaps, uint64_t total,
                             sp_status *st) {
  if (!sp__walk_enabled) return 0;
  struct calls_walk w;
  memset(&w, 0, sizeof w);
  size_t n = (size_t)total;
  int64_t *buf = malloc(2 * BLOCK * sizeof *buf);
  size_t cap = 16;
  w.lanes = malloc(cap * sizeof *w.lanes);
  int rc = buf && w.lanes ? 1 : -1;
  /* Calls per lane: the lanes in order, each one's first place. */
  for (size_t ri = 0; ri < nrows && rc == 1; ri++) {
    size_t i = rows[ri];
    const struct sp__rrow *row = &r->rows[i];
    for (uint64_t done = 0; done < row->count && rc == 1;) {
      size_t k = row->count - done < BLOCK ? (size_t)(row->count - done) : BLOCK;
      *st = sp__row_read(r, i, done, k, NULL, NULL, NULL, NULL, buf);
      if (*st == SP_OK) *st = sp__row_read_tasks(r, i, done, k, buf + BLOCK);
      if (*st != SP_OK) {
        rc = -2;
        break;
      }
      for (size_t j = 0; j < k && rc == 1; j++) {
        int64_t th = buf[j], tk = buf[BLOCK + j] < 0 ? -1 : buf[BLOCK + j];
        if (w.nlanes && w.lanes[w.nlanes - 1].thread == th && w.lanes[w.nlanes - 1].task == tk) {
          w.lanes[w.nlanes - 1].seen++;
          continue;
        }
        size_t q = 0;
        while (q < w.nlanes && !(w.lanes[q].thread == th && w.lanes[q].task == tk)) q++;
        if (q < w.nlanes) {
          w.lanes[q].seen++;
          /* keep the lane just seen last, where the next call most likely is */
          struct lane_count tmp = w.lanes[q];
          w.lanes[q] = w.lanes[w.nlanes - 1];
          w.lanes[w.nlanes - 1] = tmp;
          continue;
        }
        if (w.nlanes == cap) {
          if (cap >= 4096) { /* many async tasks: the sorted path */
            rc = 0;
            break;
          }
          struct lane_count *v = realloc(w.lanes, 2 * cap * sizeof *v);
          if (!v) {
            rc = -1;
            break;
          }
          w.lanes = v;
          cap *= 2;
        }
        w.lanes[w.nlanes++] = (struct lane_count){th, tk, 0, 1};
      }
      done += k;
    }
  }
  free(buf);
  if (rc == 1) {
    qsort(w.lanes, w.nlanes, sizeof *w.lanes, cmp_lane_count);
    uint64_t at = 0;
    for (size_t q = 0; q < w.nlanes; q++) {
      w.lanes[q].base = at;
      at += w.lanes[q].seen;
      w.lanes[q].seen = 0;
    }
    w.calls = malloc((n ? n : 1) * sizeof *w.calls);
    if (!w.calls) rc = -1;
  }
  if (rc == 1) {
    rc = sp__walk_calls(r, rank, calls_visit, &w, st);
    if (rc < 0) rc = -2; /* its error is set */
    for (size_t q = 0; rc == 1 && q < w.nlanes; q++)
      if (w.lanes[q].seen != (q + 1 < w.nlanes ? w.lanes[q + 1].base : n) - w.lanes[q].base) {
        *st = sp__set_error(SP_ERR_FORMAT, "a lane has fewer calls than counted");
        rc = -2;
      }
  }
  if (rc == -1)
    *st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory for the %zu calls of rank %lld", n,
                        (long long)rank);
  free(w.lanes);
  free(w.of_walk);
  if (rc != 1) {
    free(w.calls);
    return rc == 0 ? 0 : -1;
  }
  *out = w.calls;
  *nout = n;
  if (overlaps) *overlaps = w.overlaps;
  return 1;
}

sp_status sp__rank_calls(sp_results *r, int64_t rank, sp_call **out, size_t *nout,
                         size_t *overlaps) {
  *out = NULL;
  *nout = 0;
  if (overlaps) *overlaps = 0;
  if (r->aggregate)
    return sp__set_error(SP_ERR_UNSUPPORTED,
                         "%s was written in the aggregate layout, which stores no individual "
                         "calls; call trees, percentiles and traces need a columnar file",
                         r->path ? r->path : "the results");
  /* the rank's rows (a scan of every row for each rank was quadratic in
   * the ranks) */
  size_t *rows = NULL, nrows = 0;
  sp_status rst = sp__rank_rows(r, rank, &rows, &nrows);
  if (rst != SP_OK) return rst;
  uint64_t total = 0;
  for (size_t q = 0; q < nrows; q++) total += r->rows[rows[q]].count;
  if (total > ((uint64_t)1 << 34)) {
    free(rows);
    return sp__set_error(SP_ERR_LIMIT, "rank %lld has too many calls (%llu) to nest in memory",
                         (long long)rank, (unsigned long long)total);
  }
  sp_status wst = SP_OK;
  int walked = rank_calls_walked(r, rank, rows, nrows, out, nout, overlaps, total, &wst);
  if (walked) {
    free(rows);
    return walked < 0 ? wst : SP_OK;
  }
  size_t n = (size_t)total;
  struct ev *e = malloc((n ? n : 1) * sizeof *e);
  int64_t *buf = malloc(6 * BLOCK * sizeof *buf);
  if (!e || !buf) {
    free(e);
    free(buf);
    free(rows);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory for the %zu calls of rank %lld", n,
                         (long long)rank);
  }
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp__progress_begin(r, total);
  sp_status st = SP_OK;
  size_t at = 0;
  for (size_t ri = 0; ri < nrows && st == SP_OK; ri++) {
    size_t i = rows[ri];
    const struct sp__rrow *w = &r->rows[i];
    for (uint64_t done = 0; done < w->count && st == SP_OK;) {
      size_t k = w->count - done < BLOCK ? (size_t)(w->count - done) : BLOCK;
      st = sp__row_read(r, i, done, k, buf, buf + BLOCK, buf + 2 * BLOCK, buf + 3 * BLOCK,
                        buf + 4 * BLOCK);
      if (st == SP_OK) st = sp__row_read_tasks(r, i, done, k, buf + 5 * BLOCK);
      for (size_t j = 0; j < k && st == SP_OK; j++) {
        struct ev *x = &e[at + j];
        x->start = buf[j];
        x->end = buf[BLOCK + j];
        x->call = buf[2 * BLOCK + j];
        x->parent = buf[3 * BLOCK + j];
        x->thread = buf[4 * BLOCK + j];
        x->task = buf[5 * BLOCK + j] < 0 ? -1 : buf[5 * BLOCK + j];
        x->region = w->region;
      }
      done += k;
      at += k;
      sp__progress(r, k);
    }
  }
  sp__h5_quiet_end(&q);
  free(buf);
  free(rows);
  if (st != SP_OK) {
    free(e);
    return st;
  }
  qsort(e, n, sizeof *e, cmp_ev);
  sp_call *calls = malloc((n ? n : 1) * sizeof *calls);
  if (!calls) {
    free(e);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory for the %zu calls of rank %lld", n,
                         (long long)rank);
  }
  for (size_t i = 0; i < n; i++) {
    calls[i].start_ns = e[i].start;
    calls[i].end_ns = e[i].end;
    calls[i].thread = e[i].thread;
    calls[i].task = e[i].task;
    calls[i].region = e[i].region;
    calls[i].parent = calls[i].xparent = -1;
    calls[i].depth = 0;
  }
  int by_ids = r->ds_call >= 0 && nest_by_ids(e, calls, n);
  free(e);
  if (!by_ids) st = nest_sorted(calls, n, overlaps);
  if (st != SP_OK) {
    free(calls);
    return st;
  }
  *out = calls;
  *nout = n;
  return SP_OK;
}

sp_status sp__filter_calls(sp_results *r, const sp_filter *f, sp_call *calls, size_t *n) {
  if (!sp__filter_has_patterns(f)) return SP_OK;
  size_t nc = *n;
  unsigned char *keep_region = malloc(r->nregions ? r->nregions : 1);
  int64_t *eff = malloc((nc ? nc : 1) * sizeof *eff), *newidx = malloc((nc ? nc : 1) * sizeof *newidx);
  size_t *order = tree_order(calls, nc);
  if (!keep_region || !eff || !newidx || !order) {
    free(keep_region);
    free(eff);
    free(newidx);
    free(order);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < r->nregions; i++) keep_region[i] = (unsigned char)sp_filter_match_region(f, r->names[i]);
  /* eff[i]: the nearest kept ancestor in the call-path tree (old index), or
   * -1; tree order puts every parent first. */
  for (size_t k = 0; k < nc; k++) {
    size_t i = order[k];
    int64_t p = tree_parent(calls, i);
    eff[i] = p < 0 ? -1 : keep_region[calls[p].region] ? p : eff[p];
  }
  size_t kept = 0;
  for (size_t i = 0; i < nc; i++) {
    newidx[i] = keep_region[calls[i].region] ? (int64_t)kept++ : -1;
    /* the lane test needs the old calls, which the loop below overwrites */
    int64_t e = eff[i];
    if (e >= 0 && !(calls[e].thread == calls[i].thread && calls[e].task == calls[i].task)) eff[i] = -2 - e;
  }
  /* Kept calls keep their order (lanes stay sorted). An ancestor on the same
   * lane stays the lane parent, which comes earlier; one on another lane
   * becomes the cross-lane parent. */
  kept = 0;
  for (size_t i = 0; i < nc; i++) {
    if (!keep_region[calls[i].region]) continue;
    sp_call c = calls[i];
    int64_t e = eff[i]; /* >= 0: same lane; <= -2: -2 - (ancestor on another lane) */
    c.parent = e >= 0 ? newidx[e] : -1;
    c.xparent = e <= -2 ? newidx[-2 - e] : -1;
    c.depth = c.parent < 0 ? 0 : calls[c.parent].depth + 1;
    calls[kept++] = c; /* kept <= i, and c.parent < kept: already rewritten */
  }
  *n = kept;
  free(keep_region);
  free(eff);
  free(newidx);
  free(order);
  return SP_OK;
}

sp_status sp_results_call_stack(sp_results *r, int64_t rank, const sp_filter *f, sp_call **calls,
                                size_t *n, size_t *overlaps) {
  if (!r || !calls || !n)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_call_stack: NULL argument");
  sp_status st = sp__rank_calls(r, rank, calls, n, overlaps);
  if (st == SP_OK) st = sp__filter_calls(r, f, *calls, n);
  if (st != SP_OK) {
    free(*calls);
    *calls = NULL;
    *n = 0;
  }
  return st;
}

/* ---- call-path tree --------------------------------------------------------- */

struct tree {
  sp_tree_node *nodes;
  size_t n, cap;
  size_t *slots, nslots; /* (parent, region) -> node */
};

static uint64_t mix(int64_t parent, uint32_t region) {
  uint64_t h = (uint64_t)parent * 0x9E3779B97F4A7C15ull ^ ((uint64_t)region + 0x632BE59BD9B4E019ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

static sp_status tree_grow(struct tree *t) {
  size_t ns = t->nslots ? t->nslots * 2 : 256;
  size_t *slots = malloc(ns * sizeof *slots);
  if (!slots) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < ns; i++) slots[i] = SIZE_MAX;
  for (size_t i = 0; i < t->n; i++) {
    size_t s = mix(t->nodes[i].parent, t->nodes[i].region) & (ns - 1);
    while (slots[s] != SIZE_MAX) s = (s + 1) & (ns - 1);
    slots[s] = i;
  }
  free(t->slots);
  t->slots = slots;
  t->nslots = ns;
  return SP_OK;
}

static sp_status tree_node(struct tree *t, int64_t parent, uint32_t region, size_t *out) {
  if ((t->n + 1) * 2 > t->nslots) {
    sp_status st = tree_grow(t);
    if (st != SP_OK) return st;
  }
  size_t s = mix(parent, region) & (t->nslots - 1);
  while (t->slots[s] != SIZE_MAX) {
    sp_tree_node *x = &t->nodes[t->slots[s]];
    if (x->parent == parent && x->region == region) {
      *out = t->slots[s];
      return SP_OK;
    }
    s = (s + 1) & (t->nslots - 1);
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    sp_tree_node *v = realloc(t->nodes, cap * sizeof *v);
    if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    t->nodes = v;
    t->cap = cap;
  }
  sp_tree_node *x = &t->nodes[t->n];
  memset(x, 0, sizeof *x);
  x->region = region;
  x->parent = parent;
  t->slots[s] = t->n;
  *out = t->n++;
  return SP_OK;
}

struct span {
  size_t node;
  int64_t start, end, thread;
};
static int cmp_span(const void *pa, const void *pb) {
  const struct span *a = pa, *b = pb;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  return (a->start > b->start) - (a->start < b->start);
}
static int cmp_span_start(const void *pa, const void *pb) {
  const struct span *a = pa, *b = pb;
  return (a->start > b->start) - (a->start < b->start);
}

/* One rank's share of every node's wall time (the union of its calls'
 * intervals) and its thread count (threads that ran it; async tasks of one
 * thread count once). Calls of one node on one thread never overlap (a
 * recursive call is another node), so only nodes that ran on several
 * threads need their intervals sorted. */
static sp_status tree_wall(struct tree *t, const sp_call *c, size_t n, const size_t *node_of) {
  int64_t *first = malloc((t->n ? t->n : 1) * sizeof *first);
  unsigned char *many = calloc(t->n ? t->n : 1, 1);
  if (!first || !many) {
    free(first);
    free(many);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  for (size_t k = 0; k < t->n; k++) first[k] = INT64_MIN;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    size_t nd = node_of[i];
    if (first[nd] == INT64_MIN) first[nd] = c[i].thread;
    else if (first[nd] != c[i].thread) many[nd] = 1;
  }
  for (size_t i = 0; i < n; i++) {
    sp_tree_node *x = &t->nodes[node_of[i]];
    if (many[node_of[i]]) {
      m++;
      continue;
    }
    x->wall_ns = sat_add(x->wall_ns, c[i].end_ns - c[i].start_ns);
    if (x->threads < 1) x->threads = 1;
  }
  struct span *sp = m ? malloc(m * sizeof *sp) : NULL;
  if (m && !sp) {
    free(first);
    free(many);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (many[node_of[i]]) sp[k++] = (struct span){node_of[i], c[i].start_ns, c[i].end_ns, c[i].thread};
  if (m) qsort(sp, m, sizeof *sp, cmp_span);
  for (size_t lo = 0, hi; lo < m; lo = hi) {
    uint32_t threads = 0;
    for (hi = lo; hi < m && sp[hi].node == sp[lo].node; hi++)
      threads += hi == lo || sp[hi].thread != sp[hi - 1].thread;
    sp_tree_node *x = &t->nodes[sp[lo].node];
    if (threads > x->threads) x->threads = threads;
    qsort(sp + lo, hi - lo, sizeof *sp, cmp_span_start);
    const struct span *q = sp + lo, *qe = sp + hi;
    int64_t a0 = q->start, b0 = q->end;
    for (q++; q < qe; q++) {
      if (q->start > b0) {
        x->wall_ns = sat_add(x->wall_ns, b0 - a0);
        a0 = q->start;
      }
      if (q->end > b0) b0 = q->end;
    }
    x->wall_ns = sat_add(x->wall_ns, b0 - a0);
  }
  free(sp);
  free(first);
  free(many);
  return SP_OK;
}

/* ---- call-path tree of a rank by walking its calls (read_walk.c) ----------------
 * The same tree as the sorted path below, built as the calls stream past in
 * start order: a call's tag is its node and lane (or its nearest kept
 * ancestor's, for a call the filter drops), the wall time of a node is the
 * union of its calls' intervals kept as they come (starts never decrease),
 * and its threads are counted from (node, thread) pairs once it has run on a
 * second thread. The rank's nodes are then added to the merged tree in the
 * order the sorted path creates them: by depth, then by the first of their
 * calls in (thread, task, start, longer first, call id) order. */

#define NO_NODE UINT32_MAX

struct lnode {
  uint32_t depth, threads; /* threads: distinct ones, once `many` */
  int many;                /* calls on more than one thread */
  int64_t first_thread;
  int64_t ua, ub, uacc;    /* union of the intervals so far: [ua, ub) open, uacc closed */
  int64_t kthread, ktask, kstart, kend, kcall; /* first call in the sorted order */
};

struct wtree {
  struct tree t;
  struct lnode *aux;
  size_t auxcap;
  const unsigned char *keep; /* by region; NULL keeps all */
  uint64_t *pairs;           /* (node, thread) pairs seen: node + 1 (0: empty slot) */
  int64_t *pair_thread;
  size_t npairs, pslots;
};

static uint64_t pair_hash(uint64_t node, int64_t thread) {
  return mix((int64_t)node, (uint32_t)thread ^ (uint32_t)((uint64_t)thread >> 32));
}

/* Counts `thread` for `node` the first time the pair is seen. */
static sp_status pair_add(struct wtree *w, uint64_t node, int64_t thread) {
  if ((w->npairs + 1) * 2 > w->pslots) {
    size_t ns = w->pslots ? w->pslots * 2 : 256;
    uint64_t *p = malloc(ns * sizeof *p);
    int64_t *th = malloc(ns * sizeof *th);
    if (!p || !th) {
      free(p);
      free(th);
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < ns; i++) p[i] = 0;
    for (size_t i = 0; i < w->pslots; i++)
      if (w->pairs[i]) {
        size_t h = (size_t)pair_hash(w->pairs[i] - 1, w->pair_thread[i]) & (ns - 1);
        while (p[h]) h = (h + 1) & (ns - 1);
        p[h] = w->pairs[i];
        th[h] = w->pair_thread[i];
      }
    free(w->pairs);
    free(w->pair_thread);
    w->pairs = p;
    w->pair_thread = th;
    w->pslots = ns;
  }
  size_t h = (size_t)pair_hash(node, thread) & (w->pslots - 1);
  while (w->pairs[h]) {
    if (w->pairs[h] == node + 1 && w->pair_thread[h] == thread) return SP_OK;
    h = (h + 1) & (w->pslots - 1);
  }
  w->pairs[h] = node + 1;
  w->pair_thread[h] = thread;
  w->npairs++;
  w->aux[node].threads++;
  return SP_OK;
}

static sp_status tree_visit(void *ctx, const struct sp__walk_call *c, const uint64_t *ptag,
                            uint64_t *tag) {
  struct wtree *w = ctx;
  uint32_t pn = ptag ? (uint32_t)(*ptag >> 32) : NO_NODE, plane = ptag ? (uint32_t)*ptag : 0;
  if (w->keep && !w->keep[c->region]) {
    *tag = ptag ? *ptag : (uint64_t)NO_NODE << 32; /* its children hang under its kept ancestor */
    return SP_OK;
  }
  size_t before = w->t.n, node;
  sp_status st = tree_node(&w->t, pn == NO_NODE ? -1 : (int64_t)pn, c->region, &node);
  if (st != SP_OK) return st;
  if (node >= NO_NODE) return sp__set_error(SP_ERR_LIMIT, "too many call-tree nodes");
  if (w->t.n > before) {
    if (w->auxcap < w->t.cap) {
      struct lnode *a = realloc(w->aux, w->t.cap * sizeof *a);
      if (!a) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      w->aux = a;
      w->auxcap = w->t.cap;
    }
    struct lnode *a = &w->aux[node];
    memset(a, 0, sizeof *a);
    a->depth = pn == NO_NODE ? 0 : w->aux[pn].depth + 1;
    a->first_thread = c->thread;
    a->ua = c->start;
    a->ub = c->end;
    a->kthread = c->thread;
    a->ktask = c->task;
    a->kstart = c->start;
    a->kend = c->end;
    a->kcall = c->call;
  } else {
    struct lnode *a = &w->aux[node];
    if (c->start > a->ub) {
      a->uacc = sat_add(a->uacc, a->ub - a->ua);
      a->ua = c->start;
      a->ub = c->end;
    } else if (c->end > a->ub) {
      a->ub = c->end;
    }
    if (c->thread < a->kthread || (c->thread == a->kthread && c->task < a->ktask)) {
      a->kthread = c->thread;
      a->ktask = c->task;
      a->kstart = c->start;
      a->kend = c->end;
      a->kcall = c->call;
    }
    if (!a->many && c->thread != a->first_thread) {
      a->many = 1;
      if ((st = pair_add(w, node, a->first_thread)) != SP_OK) return st;
    }
    if (a->many && (st = pair_add(w, node, c->thread)) != SP_OK) return st;
  }
  int64_t d = c->end - c->start;
  w->t.nodes[node].count++;
  w->t.nodes[node].total_ns = sat_add(w->t.nodes[node].total_ns, d);
  /* a child on another lane ran beside its parent, not inside its time */
  if (pn != NO_NODE && plane == c->lane) w->t.nodes[pn].children_ns = sat_add(w->t.nodes[pn].children_ns, d);
  *tag = (uint64_t)node << 32 | c->lane;
  return SP_OK;
}

static const struct wtree *order_w;
static int cmp_lnode(const void *pa, const void *pb) {
  size_t i = *(const size_t *)pa, j = *(const size_t *)pb;
  const struct lnode *a = &order_w->aux[i], *b = &order_w->aux[j];
  if (a->depth != b->depth) return a->depth < b->depth ? -1 : 1;
  if (a->kthread != b->kthread) return a->kthread < b->kthread ? -1 : 1;
  if (a->ktask != b->ktask) return a->ktask < b->ktask ? -1 : 1;
  if (a->kstart != b->kstart) return a->kstart < b->kstart ? -1 : 1;
  if (a->kend != b->kend) return a->kend > b->kend ? -1 : 1;
  if (a->kcall != b->kcall) return a->kcall < b->kcall ? -1 : 1;
  uint32_t x = order_w->t.nodes[i].region, y = order_w->t.nodes[j].region;
  return (x > y) - (x < y);
}

/* The rank's tree by walking, merged into t; *done 0 when the walk refused
 * the rank (t untouched). */
static sp_status tree_rank_walked(sp_results *r, int64_t rank, const unsigned char *keep,
                                  struct tree *t, int *done) {
  struct wtree w;
  memset(&w, 0, sizeof w);
  w.keep = keep;
  *done = 0;
  sp_status st = SP_OK;
  int rc = sp__walk_calls(r, rank, tree_visit, &w, &st);
  size_t *ord = NULL, *map = NULL;
  if (rc == 1) {
    ord = malloc((w.t.n ? w.t.n : 1) * sizeof *ord);
    map = malloc((w.t.n ? w.t.n : 1) * sizeof *map);
    if (!ord || !map) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  if (rc == 1 && st == SP_OK) {
    for (size_t i = 0; i < w.t.n; i++) ord[i] = i;
    order_w = &w;
    qsort(ord, w.t.n, sizeof *ord, cmp_lnode);
    for (size_t k = 0; k < w.t.n && st == SP_OK; k++) {
      size_t i = ord[k];
      const sp_tree_node *x = &w.t.nodes[i];
      const struct lnode *a = &w.aux[i];
      st = tree_node(t, x->parent < 0 ? -1 : (int64_t)map[x->parent], x->region, &map[i]);
      if (st != SP_OK) break;
      sp_tree_node *g = &t->nodes[map[i]];
      g->count += x->count;
      g->total_ns = sat_add(g->total_ns, x->total_ns);
      g->children_ns = sat_add(g->children_ns, x->children_ns);
      g->wall_ns = sat_add(g->wall_ns, a->many ? sat_add(a->uacc, a->ub - a->ua) : x->total_ns);
      uint32_t threads = a->many ? a->threads : 1;
      if (threads > g->threads) g->threads = threads;
    }
    *done = st == SP_OK;
  }
  free(ord);
  free(map);
  free(w.t.nodes);
  free(w.t.slots);
  free(w.aux);
  free(w.pairs);
  free(w.pair_thread);
  return st;
}

sp_status sp_results_call_tree(sp_results *r, const sp_filter *f, sp_tree_node **nodes,
                               size_t *n) {
  if (!r || !nodes || !n)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_call_tree: NULL argument");
  *nodes = NULL;
  *n = 0;
  struct tree t = {0};
  unsigned char *keep = NULL;
  sp_status st = SP_OK;
  for (size_t ri = 0; ri < r->nranks && st == SP_OK; ri++) {
    int64_t rank = r->ranks[ri];
    if (!sp_filter_match_rank(f, rank)) continue;
    if (sp__filter_has_patterns(f) && !keep) {
      keep = malloc(r->nregions ? r->nregions : 1);
      if (!keep) {
        st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
        break;
      }
      for (size_t i = 0; i < r->nregions; i++)
        keep[i] = (unsigned char)sp_filter_match_region(f, r->names[i]);
    }
    int walked;
    st = tree_rank_walked(r, rank, keep, &t, &walked);
    if (st != SP_OK || walked) continue;
    sp_call *calls;
    size_t nc;
    st = sp_results_call_stack(r, rank, f, &calls, &nc, NULL);
    if (st != SP_OK) break;
    size_t *node_of = malloc((nc ? nc : 1) * sizeof *node_of), *order = tree_order(calls, nc);
    if (!node_of || !order) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    for (size_t k = 0; k < nc && st == SP_OK; k++) {
      size_t i = order[k];
      int64_t p = tree_parent(calls, i);
      int64_t pnode = p < 0 ? -1 : (int64_t)node_of[p];
      st = tree_node(&t, pnode, calls[i].region, &node_of[i]);
      if (st != SP_OK) break;
      int64_t d = calls[i].end_ns - calls[i].start_ns;
      t.nodes[node_of[i]].count++;
      t.nodes[node_of[i]].total_ns = sat_add(t.nodes[node_of[i]].total_ns, d);
      /* a child on another thread ran beside its parent, not inside its time */
      if (calls[i].parent >= 0) t.nodes[pnode].children_ns = sat_add(t.nodes[pnode].children_ns, d);
    }
    if (st == SP_OK) st = tree_wall(&t, calls, nc, node_of);
    free(order);
    free(node_of);
    free(calls);
  }
  free(t.slots);
  free(keep);
  if (st != SP_OK) {
    free(t.nodes);
    return st;
  }
  *nodes = t.nodes;
  *n = t.n;
  return SP_OK;
}
