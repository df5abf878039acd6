/* snapshot.c - turns the per-thread event logs of a manager into one run in
 * schema 2's columnar shape (struct sp_run).
 *
 * Every thread logs its calls in begin order with their depth, which makes the
 * call tree exact without any timestamp guessing: a call's parent is the
 * nearest earlier call of the same thread with a smaller depth that is still
 * on the reconstruction stack. Call ids are unique per rank (thread by thread,
 * in begin order), exclusive time is each call's duration minus its direct
 * children's, and events are grouped into one row per region, ordered by
 * start time within the row (longer first, then call id, on a tie: the
 * order readers nest by). Calls still open are left out (they complete
 * into the next run).
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/core.h"
#include "core/metadata.h"
#include "core/snapshot.h"
#include "core/source.h"

#define MANY_THREADS (UINT32_MAX - 1)

/* Call-tree reconstruction stacks, one per lane (the thread context and each
 * task): a call's parent is the nearest open call of its own lane. An entry
 * keeps the call's index, call id (-1 while open) and row, so children can
 * name their parent and take their time out of its exclusive total. */
struct frame {
  uint64_t i;
  int64_t callid;
  int64_t pending; /* ns of completed children, while the call is open */
  uint32_t region;
  uint32_t depth;
  int done;
  struct sp_gap_frame gf; /* the stream writer's gaps (struct sp_gaps) */
};
/* Whether the file needs call and parent ids: upstream's readers (and
 * ours) rebuild nesting from each lane's intervals alone, sorted by (start,
 * longer first) and nested by containment. When that gives exactly the
 * recorded tree for every written call, the ids add nothing and are left
 * out, as upstream's native writers leave them out (half the bytes of an
 * uncompressed file). Each lane replays that rebuild over its completed
 * calls in begin order: a tie (equal start and duration), starts out of
 * order, or a different parent marks the run as needing the ids. */
struct ivl {
  int64_t *end, *id; /* completed calls still enclosing, innermost last */
  uint32_t sp, cap;
  int64_t last_start, last_dur;
  int any;
};
struct lanes {
  struct frame **stk;
  uint32_t *sp, *cap;
  uint32_t n;
  struct ivl *iv; /* per lane; NULL: not checked (ids kept) */
  int need_ids;
  struct sp_gaps *gaps; /* the stream writer's tick gaps; NULL: none */
  const struct sp_i_event *ev;
  int64_t s0, e0; /* the call being emitted, in ns (the stream writer's staged emit reads them: struct sp_gaps) */
  /* Regions past the count finalize read (interned later, while threads
   * still record) have no row and no slot in the by-region arrays: their
   * calls are passed over like region 0's. */
  uint32_t maxid;
};

static inline void gap_note(struct sp_gaps *g, uint64_t lo, uint64_t hi) {
  if (hi <= lo) g->need_ids = 1;
  else if (hi - lo < g->min) g->min = hi - lo;
}

/* A completed call leaves the stack: its end against its last child's
 * start, and against its first child either the start or the end apart. */
static inline void gap_pop(struct lanes *l, const struct frame *f) {
  if (!l->gaps || !f->done || !f->gf.has_child) return;
  uint64_t s = l->ev[f->i].start, e = l->ev[f->i].end;
  gap_note(l->gaps, f->gf.lcs, e);
  uint64_t a = f->gf.fcs - s, b = f->gf.fce_set && e > f->gf.fce ? e - f->gf.fce : 0;
  gap_note(l->gaps, 0, a > b ? a : b);
}

void sp__snapshot_ticks_ns(const struct sp_clock_map *c, const uint64_t *t, size_t n, int64_t *ns) {
  struct sp_tcur q;
  sp__tcur_init(c, &q);
  for (size_t i = 0; i < n; i++) ns[i] = sp__tcur_ns(c, &q, t[i]);
}

static int lanes_init(struct lanes *l, uint32_t n) {
  memset(l, 0, sizeof *l);
  l->n = n;
  l->maxid = UINT32_MAX;
  l->stk = calloc(n, sizeof *l->stk);
  l->sp = calloc(n, sizeof *l->sp);
  l->cap = calloc(n, sizeof *l->cap);
  return l->stk && l->sp && l->cap ? 0 : -1;
}

static void lanes_free(struct lanes *l) {
  for (uint32_t i = 0; l->iv && i < l->n; i++) {
    free(l->iv[i].end);
    free(l->iv[i].id);
  }
  free(l->iv);
  for (uint32_t i = 0; l->stk && i < l->n; i++) free(l->stk[i]);
  free(l->stk);
  free(l->sp);
  free(l->cap);
  memset(l, 0, sizeof *l);
}

static void lanes_reset(struct lanes *l) {
  memset(l->sp, 0, l->n * sizeof *l->sp);
  for (uint32_t i = 0; l->iv && i < l->n; i++) {
    l->iv[i].sp = 0;
    l->iv[i].any = 0;
  }
}

/* Room for one more enclosing call on an interval stack; out of line (once
 * per doubling). 0, or -1 out of memory. */
__attribute__((noinline, cold)) static int ivl_grow(struct ivl *v) {
  uint32_t cap = v->cap ? v->cap * 2 : 64;
  int64_t *ne = realloc(v->end, cap * sizeof *ne);
  if (ne) v->end = ne;
  int64_t *ni = ne ? realloc(v->id, cap * sizeof *ni) : NULL;
  if (ni) v->id = ni;
  if (!ne || !ni) return -1;
  v->cap = cap;
  return 0;
}

/* The rebuild from intervals for one completed call [s, e] of lane L whose
 * recorded parent in the file is `want` (-1: a root, or a parent still
 * open, which is not written). */
static inline void interval_check(struct lanes *l, uint32_t L, int64_t s, int64_t e, int64_t id, int64_t want) {
  if (!l->iv || l->need_ids) return;
  struct ivl *v = &l->iv[L < l->n ? L : 0];
  int64_t dur = e - s;
  if (v->any && !(v->last_start < s || (v->last_start == s && v->last_dur > dur))) l->need_ids = 1;
  v->any = 1;
  v->last_start = s;
  v->last_dur = dur;
  while (v->sp && v->end[v->sp - 1] <= s) v->sp--;
  if ((v->sp ? v->id[v->sp - 1] : -1) != want) l->need_ids = 1;
  if (v->sp == v->cap && ivl_grow(v) != 0) {
    l->need_ids = 1; /* out of memory: keep the ids, which need no check */
    return;
  }
  v->end[v->sp] = e;
  v->id[v->sp++] = id;
}

__attribute__((noinline, cold)) static int lane_grow(struct lanes *l, uint32_t L) {
  uint32_t cap = l->cap[L] ? l->cap[L] * 2 : 64;
  struct frame *n = realloc(l->stk[L], cap * sizeof *n);
  if (!n) return -1;
  l->stk[L] = n;
  l->cap[L] = cap;
  return 0;
}

/* Pops the calls of lane L that cannot enclose a call at `depth`, and
 * returns a slot on top for it (NULL when out of memory); *parent is the
 * enclosing frame or NULL. */
static inline __attribute__((always_inline)) struct frame *lane_push(struct lanes *l, uint32_t L, uint32_t depth,
                                                                    struct frame **parent, const int nogaps) {
  if (L >= l->n) L = 0;
  uint32_t sp = l->sp[L];
  struct frame *st = l->stk[L];
  if (nogaps)
    while (sp && st[sp - 1].depth >= depth) sp--;
  else
    while (sp && st[sp - 1].depth >= depth) gap_pop(l, &st[--sp]);
  if (sp == l->cap[L]) {
    if (lane_grow(l, L) != 0) return NULL;
    st = l->stk[L];
  }
  *parent = sp ? &st[sp - 1] : NULL;
  l->sp[L] = sp + 1;
  return &st[sp];
}

/* One thread's log, walked once in begin order: the exact call tree and the
 * exclusive-time bookkeeping shared by finalize and the bounded-memory stream
 * writer. Every call takes a call id (carried-over calls keep theirs);
 * `emit` gets each completed call with its id and its parent's; a completed
 * call's duration is added to its region's exclusive total and taken out of
 * its parent's (or parked on the parent while that one is open, and carried
 * with it). The calls still open are returned in *carry, by log index. */
sp_status sp__thread_pass(struct sp_manager *m, sp_thread_rec *t, const struct sp_i_event *ev, uint64_t n,
                          const struct sp_clock_map *cm, struct lanes *lanes, int64_t *excl, emit_fn emit,
                          void *ctx, struct sp_carry **carry, size_t *ncarry);

static sp_status pass_carry(struct lanes *lanes, struct sp_carry **carry, size_t *ncarry);

static int cmp_carry(const void *a, const void *b) {
  const struct sp_carry *x = a, *y = b;
  return (x->i > y->i) - (x->i < y->i);
}

sp_status sp__thread_pass(struct sp_manager *m, sp_thread_rec *t, const struct sp_i_event *ev, uint64_t n,
                          const struct sp_clock_map *cm, struct lanes *lanes, int64_t *excl, emit_fn emit,
                          void *ctx, struct sp_carry **carry, size_t *ncarry) {
  lanes_reset(lanes);
  lanes->ev = ev;
  struct sp_gaps *g = lanes->gaps;
  if (g && t->nkept && g->nkept != t->nkept) g->need_ids = 1; /* kept calls of an earlier file */
  *carry = NULL;
  *ncarry = 0;
  struct sp_tcur hint;
  sp__tcur_init(cm, &hint);
  for (uint64_t i = 0; i < n; i++) {
    /* Region 0 is no region: a spilled event recovery refused. Skipped, so
     * the calls inside it nest under its parent; as are calls of a region
     * interned after finalize's count (lanes->maxid). */
    if (!ev[i].region || ev[i].region > lanes->maxid) continue;

    uint32_t depth = sp__ev_depth(ev[i].depth);
    struct frame *parent, *f = lane_push(lanes, sp__event_lane(m, t, i), depth, &parent, 0);
    if (!f) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory rebuilding call trees");
    f->i = i;
    f->depth = depth;
    f->region = ev[i].region;
    f->callid = i < t->nkept ? t->kept_ids[i] : m->next_callid++;
    if (ev[i].depth & SP__DEPTH_TARGET) sp__xctx_resolve(m, t->index, ev[i].start, depth, f->callid);
    /* a kept call brings the time of its children already written */
    f->pending = i < t->nkept ? t->kept_child[i] : 0;
    f->done = ev[i].end != 0;
    if (g) {
      f->gf = i < t->nkept && i < g->nkept ? g->kept[i] : (struct sp_gap_frame){0};
      if (i >= t->nkept) { /* a new begin (kept calls were met in their block) */
        if (parent && !parent->gf.has_child) {
          parent->gf.has_child = 1;
          parent->gf.fcs = ev[i].start;
          f->gf.is_first = 1;
        } else if (g->any) {
          gap_note(g, g->prev_start, ev[i].start);
        }
        if (parent) parent->gf.lcs = ev[i].start;
        g->prev_start = ev[i].start;
        g->any = 1;
        if (ev[i].depth & (SP__DEPTH_XPARENT | SP__DEPTH_CUT)) g->need_ids = 1;
      }
      if (f->done && f->gf.is_first && parent) {
        parent->gf.fce = ev[i].end;
        parent->gf.fce_set = 1;
      }
    }
    if (!f->done) continue;
    int64_t s0 = sp__tcur_ns(cm, &hint, ev[i].start), e0 = sp__tcur_ns(cm, &hint, ev[i].end);
    if (e0 < s0) e0 = s0; /* as emit_row writes it */
    int64_t d = e0 - s0;
    /* a parent still open, or a call carried over from an earlier file:
     * the ids link this file's calls to another file's, which intervals
     * cannot */
    if ((parent && !parent->done) || i < t->nkept) lanes->need_ids = 1;
    interval_check(lanes, sp__event_lane(m, t, i), s0, e0, f->callid, parent ? parent->callid : -1);
    excl[ev[i].region] += d - f->pending;
    if (parent) {
      if (parent->done)
        excl[parent->region] -= d;
      else
        parent->pending += d;
    }
    /* A cross-thread parent is not known yet (its thread may come later):
     * a placeholder, resolved after every pass. Its time is not taken out
     * of the parent's: the call ran beside it. */
    int64_t pid = ev[i].depth & SP__DEPTH_XPARENT ? SP__XPARENT_ID(ev[i].depth & SP__DEPTH_MASK)
                  : parent                         ? parent->callid
                                                   : -1;
    if (ev[i].depth & SP__DEPTH_CUT) sp__cut_note(m, f->callid);
    lanes->s0 = s0;
    lanes->e0 = e0;
    emit(ctx, i, f->callid, pid, ev[i].region);
  }
  return pass_carry(lanes, carry, ncarry);
}

/* The calls still open at the end of a pass, by log index, in *carry. */
static sp_status pass_carry(struct lanes *lanes, struct sp_carry **carry, size_t *ncarry) {
  size_t open = 0;
  for (uint32_t L = 0; L < lanes->n; L++)
    for (uint32_t k = 0; k < lanes->sp[L]; k++) {
      open += !lanes->stk[L][k].done;
      gap_pop(lanes, &lanes->stk[L][k]);
    }
  if (!open) return SP_OK;
  *carry = malloc(open * sizeof **carry);
  if (!*carry) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory rebuilding call trees");
  for (uint32_t L = 0; L < lanes->n; L++)
    for (uint32_t k = 0; k < lanes->sp[L]; k++) {
      const struct frame *f = &lanes->stk[L][k];
      if (!f->done) (*carry)[(*ncarry)++] = (struct sp_carry){f->i, f->callid, f->pending, f->gf};
    }
  qsort(*carry, *ncarry, sizeof **carry, cmp_carry);
  return SP_OK;
}

/* sp__thread_pass with its own single-lane stacks (the stream writer). */
sp_status sp__thread_pass_alone(struct sp_manager *m, sp_thread_rec *t, const struct sp_i_event *ev, uint64_t n,
                                const struct sp_clock_map *cm, int64_t *excl, emit_fn emit, void *ctx,
                                struct sp_carry **carry, size_t *ncarry, struct sp_gaps *gaps) {
  struct lanes l;
  if (lanes_init(&l, 1) != 0) {
    lanes_free(&l);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory rebuilding call trees");
  }
  l.gaps = gaps;
  if (gaps) gaps->s0 = &l.s0, gaps->e0 = &l.e0;
  sp_status st = sp__thread_pass(m, t, ev, n, cm, &l, excl, emit, ctx, carry, ncarry);
  lanes_free(&l);
  return st;
}

/* Make the retained calls (now at log indices 0..k-1, taken in ascending old
 * index order from `old`) the thread's kept calls, with ids and pending time
 * from the carry list. */
int sp__thread_keep(struct sp_manager *m, sp_thread_rec *t, const uint64_t *old, uint32_t k) {
  if (k > t->kept_cap) {
    int64_t *ids = realloc(t->kept_ids, k * sizeof *ids);
    if (ids) t->kept_ids = ids;
    int64_t *ch = realloc(t->kept_child, k * sizeof *ch);
    if (ch) t->kept_child = ch;
    if (!ids || !ch) return -1;
    t->kept_cap = k;
  }
  size_t c = 0;
  for (uint32_t j = 0; j < k; j++) {
    while (c < t->ncarry && t->carry[c].i < old[j]) c++;
    if (c < t->ncarry && t->carry[c].i == old[j]) {
      t->kept_ids[j] = t->carry[c].id;
      t->kept_child[j] = t->carry[c].pending;
    } else { /* not seen by a snapshot yet: it takes an id now */
      t->kept_ids[j] = m->next_callid++;
      t->kept_child[j] = 0;
    }
  }
  t->nkept = k;
  free(t->carry);
  t->carry = NULL;
  t->ncarry = 0;
  return 0;
}

/* Fill a row's source columns from the region registry. */
int sp__row_source(struct sp_manager *m, struct sp_row *row, const struct sp_region_info *ri,
                   sp_source_cache *cache) {
  int full = m->cfg.metadata_detail == SP__METADATA_FULL;
  row->source_line = ri->file ? ri->line : -1;
  row->source_file = sp__source_path_for(ri->file, full);
  row->source_text = NULL;
  if (m->cfg.capture_region_source && ri->file)
    row->source_text = sp__source_text(cache, ri->file, ri->line, ri->kind == SP_SITE_FUNCTION, ri->func);
  if (!row->source_text) row->source_text = sp__strdup("");
  return row->source_file && row->source_text ? 0 : -1;
}

/* A row of several threads is stored in the order readers nest by (start,
 * longer first, then call id: read_tree.c's sort and read_walk.c's merge),
 * not by start alone with ties in thread order: an OpenMP team's calls
 * that begin at the same instant were written shorter first when the
 * shorter one's thread came first, and the reader's walk refused such a
 * rank for the sorted path. */
struct placed {
  int64_t start, end, id;
  uint64_t pos;
};

static inline int row_before(int64_t s1, int64_t e1, int64_t i1, int64_t s2, int64_t e2, int64_t i2) {
  if (s1 != s2) return s1 < s2;
  if (e1 != e2) return e1 > e2;
  return i1 < i2;
}

static int cmp_start(const void *a, const void *b) {
  const struct placed *x = a, *y = b;
  if (row_before(x->start, x->end, x->id, y->start, y->end, y->id)) return -1;
  if (row_before(y->start, y->end, y->id, x->start, x->end, x->id)) return 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos; /* stable: thread order */
}

/* Reorder the events of one row slice by (start, longer first, call id). */
static int sort_slice(struct sp_run *run, uint64_t off, uint64_t n) {
  struct placed *p = malloc(n * sizeof *p);
  int64_t *tmp = malloc(n * sizeof *tmp);
  if (!p || !tmp) {
    free(p);
    free(tmp);
    return -1;
  }
  for (uint64_t i = 0; i < n; i++)
    p[i] = (struct placed){run->start[off + i], run->end[off + i], run->call_id[off + i], off + i};
  qsort(p, n, sizeof *p, cmp_start);
  int64_t *cols[] = {run->start, run->end, run->call_id, run->parent_id};
  for (size_t c = 0; c < 4; c++) {
    for (uint64_t i = 0; i < n; i++) tmp[i] = cols[c][p[i].pos];
    memcpy(cols[c] + off, tmp, n * sizeof *tmp);
  }
  for (size_t c = 0; c < run->nextra; c++) {
    int64_t *d = run->extra[c].data;
    for (uint64_t i = 0; i < n; i++) tmp[i] = d[p[i].pos];
    memcpy(d + off, tmp, n * sizeof *tmp);
  }
  free(p);
  free(tmp);
  return 0;
}

/* The statistics that need the row complete and in start order: first,
 * last, mean and m2 (a second pass, as upstream's writer does). */
static void row_stats(struct sp_run *run, struct sp_row *row) {
  struct sp_summary *s = &row->stats;
  uint64_t n = row->count, off = row->offset;
  if (n == 0) return;
  s->first = run->end[off] - run->start[off];
  s->last = run->end[off + n - 1] - run->start[off + n - 1];
  s->mean = (double)s->total / (double)n;
  double m2 = 0;
  for (uint64_t i = off; i < off + n; i++) {
    double dv = (double)(run->end[i] - run->start[i]) - s->mean;
    m2 += dv * dv;
  }
  s->m2 = m2;
}

/* A completed call's start and end in ns, as the file has them. */
static inline void event_ns(const struct sp_clock_map *cm, struct sp_tcur *hint, const struct sp_i_event *e, int64_t *s0,
                            int64_t *e0) {
  *s0 = sp__tcur_ns(cm, hint, e->start);
  *e0 = sp__tcur_ns(cm, hint, e->end);
  if (*e0 < *s0) *e0 = *s0; /* cross-core TSC skew of a few ticks must not give negative durations */
}

static inline void stats_init(struct sp_summary *s) {
  s->minimum = INT64_MAX;
  s->maximum = INT64_MIN;
  s->start_minimum = INT64_MAX;
  s->end_maximum = INT64_MIN;
}

/* A call [s0, e0] (ns) into its row's statistics that need no mean. */
static inline void stats_add(struct sp_summary *su, int64_t s0, int64_t e0) {
  int64_t d = e0 - s0;
  su->total += d;
  if (d < su->minimum) su->minimum = d;
  if (d > su->maximum) su->maximum = d;
  if (s0 < su->start_minimum) su->start_minimum = s0;
  if (e0 > su->end_maximum) su->end_maximum = e0;
}

/* The run's rows, in region-id order (deterministic, and the interning
 * order): one per region with calls, count[id] of them each, one after
 * another; row_of[id] is the region's row. 0, or -1 out of memory. */
static int rows_setup(struct sp_manager *m, struct sp_run *run, uint32_t rank, const uint64_t *count,
                      uint32_t *row_of, uint32_t maxid, sp_source_cache *cache) {
  uint32_t r = 0;
  uint64_t off = 0;
  for (uint32_t id = 1; id <= maxid; id++) {
    if (!count[id]) continue;
    const struct sp_region_info *ri = sp__region_info(id);
    row_of[id] = r;
    run->names[r] = sp__strdup(ri->name);
    struct sp_row *row = &run->rows[r];
    row->region = r;
    row->rank = rank;
    row->offset = off;
    row->count = count[id];
    row->tags_json = sp__region_tags_json(id);
    row->aggregate_count = (int64_t)count[id];
    if (!run->names[r] || !row->tags_json || sp__row_source(m, row, ri, cache) != 0) return -1;
    stats_init(&row->stats);
    off += count[id];
    r++;
  }
  return 0;
}

struct place_ctx {
  struct sp_manager *m;
  struct sp_run *run;
  const struct sp_clock_map *cm;
  const uint32_t *row_of;
  uint64_t *cursor;
  uint32_t *last_thread;
  sp_thread_rec *t;
  int track_threads;
  double scale;
  struct sp_tcur hint;
};

static void emit_row(void *ctx, uint64_t i, int64_t id, int64_t parent_id, uint32_t region) {
  struct place_ctx *c = ctx;
  const struct sp_i_event *e = &c->t->hot.ev[i];
  struct sp_run *run = c->run;
  struct sp_manager *m = c->m;
  uint32_t row = c->row_of[region];
  /* a call that ended after the count (a thread still inside end when a
   * signal's finalize runs, docs/reliability.md) has no place: it would
   * take the next row's, or one past the columns for the last row */
  if (row == UINT32_MAX || c->cursor[row] >= run->rows[row].offset + run->rows[row].count) return;
  uint64_t pos = c->cursor[row]++;
  int64_t s0, e0;
  event_ns(c->cm, &c->hint, e, &s0, &e0);
  run->start[pos] = s0;
  run->end[pos] = e0;
  run->call_id[pos] = id;
  run->parent_id[pos] = parent_id;
  struct sp_summary *su = &run->rows[row].stats;
  stats_add(su, s0, e0);
  size_t col = 0;
  if (c->track_threads) ((int64_t *)run->extra[col++].data)[pos] = c->t->index;
  if (m->ext_nout) {
    const int64_t *block = c->t->cols + i * (uint64_t)m->ext_stride;
    for (int k = 0; k < m->ext_nout; k++, col++) {
      int64_t v = sp__ext_out_value(m, block, k, c->scale);
      ((int64_t *)run->extra[col].data)[pos] = v;
      if (k == m->ext_gpu_out && v >= 0) {
        su->gpu_count++;
        su->gpu_total += v;
      }
    }
  }
  if (c->last_thread[row] == UINT32_MAX)
    c->last_thread[row] = c->t->index;
  else if (c->last_thread[row] != c->t->index)
    c->last_thread[row] = MANY_THREADS; /* rows fed by several threads need a sort */
}

int sp__run_event_columns(struct sp_manager *m, struct sp_run *run, int track_threads) {
  if (track_threads && !sp__run_add_column(run, SP_DS_THREAD_IDS)) return -1;
  return sp__ext_out_columns(m, run);
}

sp_status sp__snapshot_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                             struct sp_run *run, uint64_t *open_calls) {
  memset(run, 0, sizeof *run);
  run->layout = "columnar";
  *open_calls = 0;
  uint32_t maxid = sp__region_max_id();
  uint64_t *count = calloc((size_t)maxid + 1, sizeof *count);
  uint32_t *row_of = calloc((size_t)maxid + 1, sizeof *row_of);
  uint32_t *last_thread = NULL;
  uint64_t *cursor = NULL;
  struct lanes lanes = {0};
  int64_t *excl = NULL;
  sp_source_cache *cache = NULL;
  sp_status st = SP_ERR_NO_MEMORY;
  if (!count || !row_of) goto fail;

  uint32_t busy_threads = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    uint64_t done = 0;
    for (uint64_t i = 0; i < t->hot.n; i++) {
      const struct sp_i_event *e = &t->hot.ev[i];
      if (e->region > maxid) continue; /* interned after the count began: no row (struct lanes) */
      if (e->end) {
        count[e->region]++;
        done++;
      } else if (e->region) {
        (*open_calls)++;
      }
    }
    run->nevents += done;
    busy_threads += done != 0;
  }

  for (uint32_t id = 1; id <= maxid; id++)
    if (count[id]) run->nrows++;
  run->nnames = run->nrows;
  run->names = calloc(run->nnames + 1, sizeof *run->names);
  run->rows = calloc(run->nrows + 1, sizeof *run->rows);
  last_thread = calloc(run->nrows + 1, sizeof *last_thread);
  cursor = calloc(run->nrows + 1, sizeof *cursor);
  size_t ne = run->nevents ? run->nevents : 1;
  run->start = malloc(ne * sizeof *run->start);
  run->end = malloc(ne * sizeof *run->end);
  run->call_id = malloc(ne * sizeof *run->call_id);
  run->parent_id = malloc(ne * sizeof *run->parent_id);
  if (!run->names || !run->rows || !last_thread || !cursor || !run->start || !run->end ||
      !run->call_id || !run->parent_id)
    goto fail;

  /* Calls of several threads always carry their thread: calls of two
   * threads overlap without nesting, and a parent may be on another thread,
   * which readers and exporters must be able to tell. */
  int track_threads = m->cfg.track_threads || busy_threads > 1;
  if (sp__run_event_columns(m, run, track_threads) != 0) goto fail;

  cache = sp__source_cache_new();
  memset(row_of, 0xff, ((size_t)maxid + 1) * sizeof *row_of); /* UINT32_MAX: no row (emit_row) */
  if (!cache || rows_setup(m, run, rank, count, row_of, maxid, cache) != 0) goto fail;
  for (uint32_t r = 0; r < run->nrows; r++) {
    last_thread[r] = UINT32_MAX;
    cursor[r] = run->rows[r].offset;
  }

  if (lanes_init(&lanes, m->lane_col >= 0 ? m->ntasks + 1 : 1) != 0) goto fail;
  lanes.maxid = maxid;
  /* Without thread ids a reader sees every thread as one lane, and with
   * tasks a lane is a task (which may move between threads): the ids are
   * kept then. Otherwise each lane's intervals are checked. */
  size_t busy = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) busy += t->hot.n > 0;
  if (m->lane_col < 0 && (track_threads || busy <= 1) && !(lanes.iv = calloc(lanes.n, sizeof *lanes.iv)))
    goto fail;
  /* a parent on another thread (OpenMP, an adopted context) is a link the
   * intervals of one lane cannot give */
  lanes.need_ids = !lanes.iv || m->nxctx;
  double scale = (double)cm->mult / 4294967296.0;

  /* One pass per thread (sp__thread_pass); emit_row places each completed
   * call in its row and gathers the statistics that need no mean. */
  excl = calloc((size_t)maxid + 1, sizeof *excl);
  if (!excl) goto fail;
  struct place_ctx pc = {m, run, cm, row_of, cursor, last_thread, NULL, track_threads, scale, {0}};
  sp__tcur_init(cm, &pc.hint);
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    pc.t = t;
    free(t->carry);
    if ((st = sp__thread_pass(m, t, t->hot.ev, t->hot.n, cm, &lanes, excl, emit_row, &pc, &t->carry, &t->ncarry)) !=
        SP_OK)
      goto fail;
  }
  st = SP_ERR_NO_MEMORY;
  /* calls cut short (noted by the pass) are named by their call ids in the
   * metadata (cut_short_call_ids): the file keeps the ids then */
  run->ids_redundant = !lanes.need_ids && !m->ncut;
  for (uint32_t id = 1; id <= maxid; id++)
    if (count[id]) run->rows[row_of[id]].exclusive_total = excl[id];
  if (m->nxctx)
    for (size_t i = 0; i < run->nevents; i++) run->parent_id[i] = sp__xctx_parent(m, run->parent_id[i]);

  for (size_t i = 0; i < run->nrows; i++) {
    if (last_thread[i] == MANY_THREADS && sort_slice(run, run->rows[i].offset, run->rows[i].count) != 0)
      goto fail;
    row_stats(run, &run->rows[i]);
  }
  st = SP_OK;
fail:
  if (st != SP_OK) {
    sp__run_free(run);
    sp__set_error(st, "out of memory while collecting the run's events");
  }
  sp__source_cache_free(cache);
  free(count);
  free(row_of);
  free(last_thread);
  free(cursor);
  free(excl);
  lanes_free(&lanes);
  return st;
}

/*====== A run kept in memory, written chunk by chunk ======*/

/* sp__snapshot_build makes whole-run columns (32 bytes per call and more)
 * and the writer then codes them into more: on machines where memory
 * touched for the first time is slow, those fresh pages cost more than the
 * rest of finalize together. Here finalize instead gives the writer a
 * filler, as a streamed run does: the same per-thread passes emit each call
 * into a small buffer of its row, and a full buffer goes through the sink
 * (which codes and writes it at the row's place) and is reused. The file
 * gets the same values in the same places.
 *
 * Two things sp__snapshot_build knows only at the end are needed before
 * the first write. Each row's mean (for m2, summed in row order, as
 * row_stats does) comes from a first pass that counts and totals the
 * calls. Whether the file needs call ids (struct ivl) is foretold by that
 * pass from what decides it in practice (starts out of order or tied, calls
 * carried over, an open call with a completed child); when the passes disagree, the filler says so and
 * finalize writes the file again with the right answer
 * (sp__snapshot_fill_retry).
 *
 * A row fed by several threads (a region an OpenMP team shares), or with
 * calls whose parent is on another thread (a worker's outermost calls), is
 * held: buffered whole, and written once every pass has run, with its
 * parents resolved and its threads' calls merged in start order (each
 * thread's are in order already), as sp__snapshot_build sorts such rows.
 * Runs this cannot write the same way take sp__snapshot_build: calls cut
 * short (named in the metadata, which is made before the file),
 * extensions' columns, task lanes, skipped regions, chunked or compressed
 * event columns. */

int sp__snapshot_fill_enabled = 1;
/* atomic: two managers may finalize at once on two threads */
_Atomic unsigned long sp__snapshot_fills;

/* Buffered calls per row: enough that a write is large, few enough that the
 * buffers of many rows stay small and warm. The budget is what the rows'
 * buffers share, not a bound: each keeps at least min(its calls, 256), so
 * past 1024 busy rows they take more (never more than the columns' way). */
#define FILL_ROW_CALLS 8192
#define FILL_BUDGET_BYTES ((size_t)8 << 20)
/* Values between a row's columns: without them every column of every row
 * starts at a multiple of 64 KiB (8192 values), so that the 4-5 store
 * streams of all rows fall into the same cache sets of L1 and L2 and evict
 * each other at every call (a fifth of finalize's CPU went there). One
 * cache line apart, the streams spread over the sets. */
#define FILL_SKEW 8

/* A row's buffer and the statistics it gathers as its calls go by. */
struct fill_row {
  int64_t *buf;       /* ncols arrays of cap values, stride apart */
  uint32_t n, cap;    /* calls buffered, room */
  uint32_t stride;    /* cap + FILL_SKEW */
  uint64_t written;   /* the row's next event in the file */
  uint64_t end;       /* the event after the row's last */
  double m2;
  struct sp_summary *su; /* the run's row */
  uint32_t region;
  /* Held: the whole row is buffered (its own allocation) and written at
   * the end, sorted by start when several threads fed it, with parents on
   * other threads resolved, as sp__snapshot_build writes such rows. */
  int held;
  uint32_t feeder;      /* a held row's current feeder (thread index) */
  uint32_t *runs;       /* a held row's calls come one thread's after another's: where each begins */
  uint32_t nruns, runs_cap;
  int runs_lost;        /* out of memory noting them: sorted the slow way */
};

/* A held row's calls of another thread begin (each thread's pass comes
 * once: a run per thread). */
__attribute__((noinline, cold)) static void held_run(struct fill_row *w, uint32_t thread, uint32_t at) {
  w->feeder = thread;
  if (w->nruns == w->runs_cap) {
    uint32_t cap = w->runs_cap ? w->runs_cap * 2 : 8;
    uint32_t *nr = realloc(w->runs, cap * sizeof *nr);
    if (nr) w->runs = nr, w->runs_cap = cap;
  }
  if (w->nruns < w->runs_cap)
    w->runs[w->nruns++] = at;
  else
    w->runs_lost = 1;
}

struct snap_fill {
  struct sp_manager *m;
  struct sp_run *run;
  struct sp_clock_map cm;
  uint32_t maxid;
  struct fill_row *rows;   /* per row */
  size_t nrows;
  size_t nheld;            /* rows held whole */
  struct fill_row **of;    /* per region id: its row */
  int64_t *slab;
  int64_t *excl;      /* per region */
  uint64_t *logged;   /* per thread (list order): its log's length the first pass saw */
  size_t nthreads;    /* the threads it saw (a later one is appended) */
  int ncols;          /* start, end, call id, parent id[, thread id] */
  int track_threads;
  int64_t callid0;    /* the first call id, for a second fill */
  /* What the first pass saw, for the calls finalize counts as done after
   * the write (sp__snapshot_fill_done_calls): the completed calls per region
   * and, per thread, the calls still open then (log indices), which may
   * have ended since. */
  uint64_t *count;
  uint64_t *opens;
  size_t nopens, opens_cap;
  size_t *open_at;    /* per thread: its first entry in opens; nthreads + 1 */
  int opens_lost;     /* out of memory noting them: the count reads the logs */
  int known_ids;      /* the ids are kept whatever the calls are */
  int mispredicted;
  int failed;
  int ran;
  struct lanes lanes;
  struct sp_event_sink *sink;
  sp_thread_rec *t;
};

/* Out of line: once per buffer of calls, and inlined into fill_emit it
 * makes every call save and restore six registers. */
__attribute__((noinline)) static void fill_flush(struct snap_fill *f, struct fill_row *w) {
  if (!w->n) return;
  size_t st = w->stride;
  const void *extra[1] = {w->buf + 4 * st};
  struct sp_event_batch batch = {w->buf, w->buf + st, w->buf + 2 * st, w->buf + 3 * st, extra};
  if (f->sink && !f->failed && sp__sink_put(f->sink, w->written, w->n, &batch) != 0) f->failed = 1;
  w->written += w->n;
  w->n = 0;
}

/* A completed call [s0, e0] (ns) into its row. `any`: rows may be
 * held (two copies: the run without held rows, the common one, does not
 * pay for their tests). */
static inline __attribute__((always_inline)) void emit_to(struct snap_fill *f, int64_t id, int64_t parent_id,
                                                          uint32_t region, int64_t s0, int64_t e0, const int any) {
  struct fill_row *w = f->of[region];
  /* a call that ended after the first pass (a thread still inside end
   * when a signal's finalize runs, docs/reliability.md) has no place */
  if (!w || w->written + w->n >= w->end) return;
  int64_t d = e0 - s0;
  struct sp_summary *su = w->su;
  int held = any && w->held;
  if (!held) { /* first, last and m2 in row order: a held row's once it is sorted */
    if (su->minimum == INT64_MAX) su->first = d; /* the row's first call: none has a smaller duration */
    su->last = d;
    double dv = (double)d - su->mean;
    w->m2 += dv * dv;
  }
  stats_add(su, s0, e0);
  int64_t *b = w->buf;
  size_t st = w->stride, k = w->n;
  b[k] = s0;
  b[st + k] = e0;
  b[2 * st + k] = id;
  b[3 * st + k] = parent_id;
  if (f->track_threads) b[4 * st + k] = f->t->index;
  w->n = (uint32_t)k + 1;
  /* what may follow is a tail call: nothing kept around it */
  if (held) {
    uint32_t ti = f->t->index;
    if (__builtin_expect(k == 0 || w->feeder != ti, 0)) held_run(w, ti, (uint32_t)k);
  } else if (k + 1 == w->cap) {
    fill_flush(f, w);
  }
}

/* sp__thread_pass for the filler, which finalize takes only with one lane,
 * no gaps and no tasks (sp__snapshot_fill_build): the same steps, with the
 * stacks' and the interval check's state and the next call id in locals
 * and the emitter inlined. Through the shared pass, reloads of that state
 * after every store (any of them might alias it), the indirect call and
 * the tests for lanes and gaps were half of its instructions. `any`: rows
 * may be held. unit/test-finalize compares this with the columns' way,
 * which takes the shared pass, file by file. */
static inline __attribute__((always_inline)) sp_status fill_pass_body(struct snap_fill *f, sp_thread_rec *t,
                                                                      uint64_t n, const int any) {
  struct sp_manager *m = f->m;
  struct lanes *lanes = &f->lanes;
  const struct sp_clock_map *cm = &f->cm;
  const struct sp_i_event *ev = t->hot.ev;
  lanes_reset(lanes);
  lanes->ev = ev;
  t->carry = NULL;
  t->ncarry = 0;
  const uint32_t maxid = lanes->maxid;
  const uint64_t nkept = t->nkept;
  int64_t *excl = f->excl;
  int64_t next = m->next_callid;
  struct frame *st = lanes->stk[0];
  uint32_t sp = 0, cap = lanes->cap[0];
  int need = lanes->need_ids;
  struct ivl *v = lanes->iv; /* NULL: not checked */
  int64_t *vend = v ? v->end : NULL, *vid = v ? v->id : NULL;
  uint32_t vsp = 0, vcap = v ? v->cap : 0;
  int vany = 0;
  int64_t vls = 0, vld = 0;
  struct sp_tcur hint;
  sp__tcur_init(cm, &hint);
  for (uint64_t i = 0; i < n; i++) {
    const struct sp_i_event *e = &ev[i];
    uint32_t region = e->region, dw = e->depth;
    if (!region || region > maxid) continue;
    uint32_t depth = sp__ev_depth(dw);
    while (sp && st[sp - 1].depth >= depth) sp--;
    if (__builtin_expect(sp == cap, 0)) {
      if (lane_grow(lanes, 0) != 0) {
        m->next_callid = next;
        return sp__set_error(SP_ERR_NO_MEMORY, "out of memory rebuilding call trees");
      }
      st = lanes->stk[0];
      cap = lanes->cap[0];
    }
    struct frame *parent = sp ? &st[sp - 1] : NULL, *fr = &st[sp++];
    const int kept = i < nkept;
    int64_t id = kept ? t->kept_ids[i] : next++;
    fr->i = i;
    fr->depth = depth;
    fr->region = region;
    fr->callid = id;
    if (__builtin_expect(dw & SP__DEPTH_TARGET, 0)) {
      m->next_callid = next;
      sp__xctx_resolve(m, t->index, e->start, depth, id);
    }
    int64_t pending = kept ? t->kept_child[i] : 0;
    fr->pending = pending;
    fr->done = e->end != 0;
    if (!e->end) continue;
    int64_t s0 = sp__tcur_ns(cm, &hint, e->start), e0 = sp__tcur_ns(cm, &hint, e->end);
    if (e0 < s0) e0 = s0;
    int64_t d = e0 - s0;
    if ((parent && !parent->done) || kept) need = 1;
    int64_t want = parent ? parent->callid : -1;
    if (v && !need) { /* interval_check */
      if (vany && !(vls < s0 || (vls == s0 && vld > d))) need = 1;
      vany = 1;
      vls = s0;
      vld = d;
      while (vsp && vend[vsp - 1] <= s0) vsp--;
      if ((vsp ? vid[vsp - 1] : -1) != want) need = 1;
      if (__builtin_expect(vsp == vcap, 0)) {
        v->sp = vsp;
        if (ivl_grow(v) != 0) {
          need = 1;
          goto checked;
        }
        vend = v->end;
        vid = v->id;
        vcap = v->cap;
      }
      vend[vsp] = e0;
      vid[vsp++] = id;
    }
  checked:
    excl[region] += d - pending;
    if (parent) {
      if (parent->done)
        excl[parent->region] -= d;
      else
        parent->pending += d;
    }
    int64_t pid = dw & SP__DEPTH_XPARENT ? SP__XPARENT_ID(dw & SP__DEPTH_MASK) : want;
    if (__builtin_expect(dw & SP__DEPTH_CUT, 0)) {
      m->next_callid = next;
      sp__cut_note(m, id);
    }
    emit_to(f, id, pid, region, s0, e0, any);
  }
  m->next_callid = next;
  lanes->sp[0] = sp;
  lanes->need_ids = need;
  if (v) {
    v->sp = vsp;
    v->any = vany;
    v->last_start = vls;
    v->last_dur = vld;
  }
  return pass_carry(lanes, &t->carry, &t->ncarry);
}

static sp_status fill_pass(struct snap_fill *f, sp_thread_rec *t, uint64_t n) { return fill_pass_body(f, t, n, 0); }
static sp_status fill_pass_any(struct snap_fill *f, sp_thread_rec *t, uint64_t n) {
  return fill_pass_body(f, t, n, 1);
}

/* The order of a held row's calls by (start, longer first, call id, then
 * feeding order), as sort_slice's stable sort gives it, in perm. Each
 * thread's calls are in its begin order, which is that order on one thread
 * (of two calls begun at the same instant the first encloses the second):
 * the runs are merged pairwise (full ties to the earlier run), O(n log
 * threads); a run out of order (a clock that stepped back) takes the sort.
 * b holds the row's columns, st apart (start, end, call id). -1 out of
 * memory. */
#define HELD_BEFORE(i, j) row_before(start[i], end[i], id[i], start[j], end[j], id[j])
static int held_order(const struct fill_row *w, const int64_t *b, size_t st, uint32_t *perm) {
  const int64_t *start = b, *end = b + st, *id = b + 2 * st;
  uint32_t n = w->n, nr = w->nruns;
  int sorted = !w->runs_lost && nr && w->runs[0] == 0;
  for (uint32_t r = 0; sorted && r < nr; r++) {
    uint32_t lo = w->runs[r], hi = r + 1 < nr ? w->runs[r + 1] : n;
    for (uint32_t i = lo + 1; sorted && i < hi; i++) sorted = !HELD_BEFORE(i, i - 1);
  }
  if (!sorted) {
    struct placed *p = malloc((size_t)n * sizeof *p);
    if (!p) return -1;
    for (uint32_t i = 0; i < n; i++) p[i] = (struct placed){start[i], end[i], id[i], i};
    qsort(p, n, sizeof *p, cmp_start);
    for (uint32_t i = 0; i < n; i++) perm[i] = (uint32_t)p[i].pos;
    free(p);
    return 0;
  }
  uint32_t *other = malloc((size_t)n * sizeof *other), *bound = malloc(((size_t)nr + 1) * sizeof *bound);
  if (!other || !bound) {
    free(other);
    free(bound);
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) perm[i] = i;
  memcpy(bound, w->runs, nr * sizeof *bound);
  bound[nr] = n;
  uint32_t *src = perm, *dst = other;
  while (nr > 1) {
    uint32_t k = 0;
    for (uint32_t r = 0; r < nr; r += 2) {
      /* runs r and r + 1 (bound[nr] is n); an odd one out is copied */
      uint32_t a = bound[r], am = bound[r + 1], bm = r + 1 < nr ? bound[r + 2] : am;
      uint32_t x = a, y = am, o = a;
      while (x < am && y < bm) dst[o++] = HELD_BEFORE(src[y], src[x]) ? src[y++] : src[x++];
      while (x < am) dst[o++] = src[x++];
      while (y < bm) dst[o++] = src[y++];
      bound[k++] = a;
    }
    bound[k] = n;
    nr = k;
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != perm) memcpy(perm, src, (size_t)n * sizeof *perm);
  free(other);
  free(bound);
  return 0;
}
#undef HELD_BEFORE

/* A held row, complete: ordered by (start, longer first, call id) when
 * several threads fed it (sort_slice's order), its parents on other threads
 * resolved (every pass has run), then first, last and m2 in that order
 * (row_stats), and written. -1 out of memory. */
static int held_finish(struct snap_fill *f, struct fill_row *w) {
  int64_t *b = w->buf;
  size_t n = w->n, st = w->stride;
  if (f->m->nxctx)
    for (size_t i = 0; i < n; i++) b[3 * st + i] = sp__xctx_parent(f->m, b[3 * st + i]);
  /* several threads fed it (sp__snapshot_build's MANY_THREADS) */
  if ((w->nruns > 1 || w->runs_lost) && n > 1) {
    uint32_t *perm = malloc(n * sizeof *perm);
    int64_t *tmp = malloc(n * sizeof *tmp);
    if (!perm || !tmp || held_order(w, b, st, perm) != 0) {
      free(perm);
      free(tmp);
      return -1;
    }
    for (int c = 0; c < f->ncols; c++) {
      int64_t *col = b + (size_t)c * st;
      for (size_t i = 0; i < n; i++) tmp[i] = col[perm[i]];
      memcpy(col, tmp, n * sizeof *tmp);
    }
    free(perm);
    free(tmp);
  }
  struct sp_summary *su = w->su;
  if (n) {
    su->first = b[st] - b[0];
    su->last = b[st + n - 1] - b[n - 1];
  }
  double m2 = 0;
  for (size_t i = 0; i < n; i++) {
    double dv = (double)(b[st + i] - b[i]) - su->mean;
    m2 += dv * dv;
  }
  w->m2 = m2;
  fill_flush(f, w);
  return 0;
}

static sp_status snap_fill(void *ctx, struct sp_event_sink *sink) {
  struct snap_fill *f = ctx;
  struct sp_manager *m = f->m;
  struct sp_run *run = f->run;
  /* a second fill (the ids foretold wrongly) numbers the calls again */
  m->next_callid = f->callid0;
  if (sink) sp__snapshot_fills++;
  f->sink = sink;
  f->failed = 0;
  f->ran = 1;
  for (size_t r = 0; r < run->nrows; r++) {
    struct sp_row *rw = &run->rows[r];
    double mean = rw->stats.mean;
    memset(&rw->stats, 0, sizeof rw->stats);
    stats_init(&rw->stats);
    rw->stats.mean = mean;
    f->rows[r].written = rw->offset;
    f->rows[r].n = 0;
    f->rows[r].nruns = 0;
    f->rows[r].runs_lost = 0;
    f->rows[r].m2 = 0;
  }
  memset(f->excl, 0, ((size_t)f->maxid + 1) * sizeof *f->excl);
  f->lanes.need_ids = f->known_ids;
  size_t k = 0;
  for (sp_thread_rec *t = m->threads; t && k < f->nthreads; t = t->next, k++) {
    f->t = t;
    free(t->carry);
    t->carry = NULL;
    t->ncarry = 0;
    sp_status st = f->nheld ? fill_pass_any(f, t, f->logged[k]) : fill_pass(f, t, f->logged[k]);
    if (st != SP_OK) return st;
  }
  for (uint32_t r = 0; r < run->nrows; r++) {
    if (!f->rows[r].held)
      fill_flush(f, &f->rows[r]);
    else if (held_finish(f, &f->rows[r]) != 0)
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory sorting a row of several threads");
    run->rows[r].exclusive_total = f->excl[f->rows[r].region];
    run->rows[r].stats.m2 = f->rows[r].m2;
  }
  int redundant = !f->lanes.need_ids && !m->ncut;
  if (redundant != run->ids_redundant) {
    f->mispredicted = 1;
    return sp__set_error(SP_ERR_IO, "the file's call ids were foretold wrongly; it is written again");
  }
  return f->failed ? sp__set_error(SP_ERR_IO, "writing the run's events failed") : SP_OK;
}

static void fill_free(struct snap_fill *f) {
  if (!f) return;
  lanes_free(&f->lanes);
  for (size_t r = 0; f->rows && r < f->nrows; r++)
    if (f->rows[r].held) {
      free(f->rows[r].buf);
      free(f->rows[r].runs);
    }
  free(f->rows);
  free(f->of);
  free(f->slab);
  free(f->excl);
  free(f->logged);
  free(f->count);
  free(f->opens);
  free(f->open_at);
  free(f);
}

void sp__snapshot_fill_free(void *fill_ctx) { fill_free(fill_ctx); }

int sp__snapshot_fill_retry(void *fill_ctx) {
  struct snap_fill *f = fill_ctx;
  if (!f || !f->mispredicted) return 0;
  f->mispredicted = 0;
  f->run->ids_redundant = !f->run->ids_redundant;
  return 1;
}

void sp__snapshot_fill_settle(void *fill_ctx) {
  struct snap_fill *f = fill_ctx;
  if (f && !f->ran) snap_fill(f, NULL);
}

/* A call the first pass saw open (sp__snapshot_fill_done_calls). */
static void note_open(struct snap_fill *f, uint64_t i) {
  if (f->nopens == f->opens_cap) {
    size_t cap = f->opens_cap ? f->opens_cap * 2 : 64;
    uint64_t *o = f->opens_lost ? NULL : realloc(f->opens, cap * sizeof *o);
    if (!o) {
      f->opens_lost = 1;
      return;
    }
    f->opens = o;
    f->opens_cap = cap;
  }
  f->opens[f->nopens++] = i;
}

int sp__snapshot_fill_done_calls(void *fill_ctx, struct sp_manager *m, uint64_t *done, uint32_t maxid) {
  struct snap_fill *f = fill_ctx;
  /* a region interned since the first pass: its calls in the part of the
   * logs that pass read were not counted */
  if (!f || !f->count || f->opens_lost || maxid != f->maxid) return -1;
  for (uint32_t id = 1; id <= maxid; id++) done[id] += f->count[id];
  size_t k = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next, k++) {
    const struct sp_i_event *ev = t->hot.ev;
    uint64_t from = 0;
    if (k < f->nthreads) {
      for (size_t j = f->open_at[k]; j < f->open_at[k + 1]; j++) /* ended since */
        if (ev[f->opens[j]].end && ev[f->opens[j]].region <= maxid) done[ev[f->opens[j]].region]++;
      from = f->logged[k];
    }
    for (uint64_t i = from; i < t->hot.n; i++) /* recorded since */
      if (ev[i].end && ev[i].region <= maxid) done[ev[i].region]++;
  }
  return 0;
}

sp_status sp__snapshot_fill_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                                  struct sp_run *run, uint64_t *open_calls, void **fill_ctx) {
  memset(run, 0, sizeof *run);
  *fill_ctx = NULL;
  *open_calls = 0;
  /* Chunks (compressed or not) would be written a row's piece at a time,
   * read back and rewritten: the columns' way writes each chunk once. */
  if (!sp__snapshot_fill_enabled || m->ext_nout || m->lane_col >= 0 ||
      m->cfg.hdf5_compression != SP__COMPRESSION_NONE || m->cfg.hdf5_chunk_size != SP_INT_NONE)
    return SP_OK;
  uint32_t maxid = sp__region_max_id();
  uint64_t *count = calloc((size_t)maxid + 1, sizeof *count);
  int64_t *total = calloc((size_t)maxid + 1, sizeof *total);
  uint32_t *owner = calloc((size_t)maxid + 1, sizeof *owner); /* thread index + 1, UINT32_MAX: held */
  struct snap_fill *f = calloc(1, sizeof *f);
  sp_source_cache *cache = NULL;
  sp_status st = SP_ERR_NO_MEMORY;
  size_t nthreads = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next) nthreads++;
  if (!count || !total || !owner || !f || !(f->logged = calloc(nthreads + 1, sizeof *f->logged)) ||
      !(f->open_at = calloc(nthreads + 1, sizeof *f->open_at)))
    goto out;

  /* The first pass: counts, totals, and what foretells the ids. */
  int ok = 1, foretold = 0;
  uint32_t busy_threads = 0;
  size_t busy = 0;
  uint64_t open = 0, nev = 0;
  size_t k = 0;
  for (sp_thread_rec *t = m->threads; t && ok && k < nthreads; t = t->next, k++) {
    const struct sp_i_event *ev = t->hot.ev;
    uint64_t done = 0, n = f->logged[k] = t->hot.n;
    int any = 0;
    int64_t ls = 0, ld = 0;
    struct sp_tcur hint;
    sp__tcur_init(cm, &hint);
    /* An open call needs the ids only when a completed call is its child
     * (sp__thread_pass: the parent still open). The calls after an open
     * one (depth od) are inside it; such a call is its direct child when
     * no call since the open one had a smaller depth (mind). One that is
     * not inside it (a log the pass may nest otherwise) foretells the ids. */
    uint32_t od = UINT32_MAX, mind = UINT32_MAX;
    const uint32_t tix = t->index + 1; /* owner's mark of this thread */
    busy += n > 0;
    if (t->nkept) foretold = 1;
    f->open_at[k] = f->nopens;
    for (uint64_t i = 0; i < n; i++) {
      const struct sp_i_event *e = &ev[i];
      if (e->region > maxid) continue; /* interned after the count began: no row (struct lanes) */
      if (!e->end) {
        note_open(f, i);
        if (e->region) {
          open++;
          od = sp__ev_depth(e->depth);
          mind = UINT32_MAX;
        }
        continue;
      }
      uint32_t r = e->region;
      /* a skipped call, a call cut short (the metadata, written first,
       * names those) */
      if (!r || (e->depth & SP__DEPTH_CUT)) {
        ok = 0;
        break;
      }
      if (od != UINT32_MAX) {
        uint32_t dj = sp__ev_depth(e->depth);
        if (dj <= od || dj <= mind) foretold = 1;
        if (dj < mind) mind = dj;
      }
      /* a row of several threads, or with a parent on another thread: held */
      uint32_t o = owner[r];
      if (__builtin_expect(o != tix, 0)) {
        if ((e->depth & SP__DEPTH_XPARENT) || o)
          owner[r] = UINT32_MAX;
        else
          owner[r] = tix;
      } else if (e->depth & SP__DEPTH_XPARENT) {
        owner[r] = UINT32_MAX;
      }
      int64_t s0, e0;
      event_ns(cm, &hint, e, &s0, &e0);
      int64_t d = e0 - s0;
      count[r]++;
      total[r] += d;
      done++;
      /* struct ivl's first test, in log order */
      if (any && !(ls < s0 || (ls == s0 && ld > d))) foretold = 1;
      any = 1;
      ls = s0;
      ld = d;
    }
    busy_threads += done != 0;
    nev += done;
  }
  f->nthreads = k;
  f->open_at[k] = f->nopens;
  if (!ok || !nev) {
    st = SP_OK; /* sp__snapshot_build's way */
    goto out;
  }
  *open_calls = open;
  int track_threads = m->cfg.track_threads || busy_threads > 1;
  /* as sp__snapshot_build decides whether intervals are checked at all, and
   * a parent on another thread is a link the intervals cannot give */
  f->known_ids = !(track_threads || busy <= 1) || m->nxctx;

  for (uint32_t id = 1; id <= maxid; id++) run->nrows += count[id] != 0;
  run->layout = "columnar";
  run->nnames = run->nrows;
  run->names = calloc(run->nnames + 1, sizeof *run->names);
  run->rows = calloc(run->nrows + 1, sizeof *run->rows);
  uint32_t *row_of = calloc((size_t)maxid + 1, sizeof *row_of);
  f->rows = calloc(run->nrows + 1, sizeof *f->rows);
  f->nrows = f->rows ? run->nrows : 0;
  f->of = calloc((size_t)maxid + 1, sizeof *f->of);
  f->excl = calloc((size_t)maxid + 1, sizeof *f->excl);
  cache = sp__source_cache_new();
  int built = run->names && run->rows && row_of && f->rows && f->of && f->excl && cache &&
              rows_setup(m, run, rank, count, row_of, maxid, cache) == 0;
  for (uint32_t id = 1; built && id <= maxid; id++)
    if (count[id]) f->of[id] = &f->rows[row_of[id]];
  free(row_of);
  if (!built) goto out;
  if (sp__run_event_columns(m, run, track_threads) != 0) goto out;
  for (size_t i = 0; i < run->nextra; i++) { /* the filler writes them: no arrays */
    free(run->extra[i].data);
    run->extra[i].data = NULL;
  }
  run->nevents = nev;
  f->ncols = 4 + track_threads;
  size_t nown = 0;
  for (uint32_t id = 1; id <= maxid; id++) nown += count[id] && owner[id] != UINT32_MAX;
  size_t per = nown ? FILL_BUDGET_BYTES / (nown * (size_t)f->ncols * 8) : 0, slots = 0;
  if (per > FILL_ROW_CALLS) per = FILL_ROW_CALLS;
  if (per < 256) per = 256;
  for (uint32_t id = 1; id <= maxid; id++) {
    struct fill_row *w = f->of[id];
    if (!w) continue;
    w->region = id;
    w->end = run->rows[w - f->rows].offset + count[id];
    w->su = &run->rows[w - f->rows].stats;
    w->su->mean = (double)total[id] / (double)count[id];
    if (owner[id] == UINT32_MAX) { /* the whole row, at once */
      w->held = 1;
      f->nheld++;
      w->cap = w->stride = (uint32_t)count[id];
      if (count[id] > UINT32_MAX / 2) { /* too long to hold: the columns' way */
        st = SP_OK;
        goto out;
      }
      if (!(w->buf = malloc(count[id] * (size_t)f->ncols * sizeof *w->buf))) goto out;
      continue;
    }
    w->cap = (uint32_t)(count[id] < per ? count[id] : per);
    w->stride = w->cap + FILL_SKEW;
    slots += w->stride;
  }
  if (!(f->slab = malloc((slots ? slots : 1) * (size_t)f->ncols * sizeof *f->slab))) goto out;
  for (size_t r = 0, at = 0; r < run->nrows; r++) {
    if (f->rows[r].held) continue;
    f->rows[r].buf = f->slab + at;
    at += (size_t)f->rows[r].stride * (size_t)f->ncols;
  }
  if (lanes_init(&f->lanes, 1) != 0 || (!f->known_ids && !(f->lanes.iv = calloc(1, sizeof *f->lanes.iv)))) goto out;
  f->lanes.maxid = maxid;
  f->m = m;
  f->run = run;
  f->cm = *cm;
  f->maxid = maxid;
  f->track_threads = track_threads;
  f->callid0 = m->next_callid;
  run->has_ids = 1;
  run->ids_redundant = !(f->known_ids || foretold);
  f->count = count;
  count = NULL;
  run->fill_events = snap_fill;
  run->fill_ctx = f;
  run->fill_any_size = 1;
  *fill_ctx = f;
  f = NULL;
  st = SP_OK;
out:
  if (st != SP_OK || !*fill_ctx) {
    sp__run_free(run);
    memset(run, 0, sizeof *run);
    if (st != SP_OK) sp__set_error(st, "out of memory while collecting the run's events");
  }
  fill_free(f);
  sp__source_cache_free(cache);
  free(count);
  free(total);
  free(owner);
  return st;
}

/* Every stack that holds indices into thread t's log: the live one, the
 * thread context's while a task runs, and those of its switched-out tasks. */
static size_t stacks_of(struct sp_manager *m, sp_thread_rec *t, uint64_t **s[], uint32_t *d[], size_t max) {
  size_t n = 0;
  s[n] = &t->hot.stack;
  d[n++] = &t->hot.depth;
  if (t->cur_task && t->ctx_stack) {
    s[n] = &t->ctx_stack;
    d[n++] = &t->ctx_depth;
  }
  for (uint32_t k = 0; k < m->ntasks && n < max; k++)
    if (m->tasks[k]->thread == t && m->tasks[k]->stack) {
      s[n] = &m->tasks[k]->stack;
      d[n++] = &m->tasks[k]->depth;
    }
  return n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = **(uint64_t *const *)a, y = **(uint64_t *const *)b;
  return (x > y) - (x < y);
}

void sp__snapshot_compact(struct sp_manager *m) {
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    if (m->ntasks == 0) { /* one stack: its open calls are already in log order */
      uint64_t k = 0;
      uint64_t *old = malloc(((size_t)t->hot.depth + 1) * sizeof *old);
      for (uint32_t d = 0; d < t->hot.depth; d++) {
        uint64_t i = t->hot.stack[d];
        if (i & SP_I_GHOST_BIT) continue;
        if (old) old[k] = i;
        t->hot.ev[k] = t->hot.ev[i];
        if (m->ext_stride)
          memmove(t->cols + k * (uint64_t)m->ext_stride, t->cols + i * (uint64_t)m->ext_stride,
                  (size_t)m->ext_stride * sizeof *t->cols);
        t->hot.stack[d] = k++;
      }
      sp__ext_fill(m, t->cols, k, t->hot.n); /* the freed slots read "not taken" again */
      t->hot.n = k;
      if (old) sp__thread_keep(m, t, old, (uint32_t)k);
      free(old);
      continue;
    }
    /* Several stacks: keep every referenced call, in log order (begin
     * order, which the call-tree rebuild relies on), and renumber. */
    size_t cap = m->ntasks + 2, nref = 0;
    uint64_t **ss[cap];
    uint32_t *dd[cap];
    size_t ns = stacks_of(m, t, ss, dd, cap);
    for (size_t k = 0; k < ns; k++) nref += *dd[k];
    uint64_t **refs = malloc((nref + 1) * sizeof *refs);
    if (!refs) continue; /* out of memory: keep the log as it is (written again next time) */
    nref = 0;
    for (size_t k = 0; k < ns; k++)
      for (uint32_t d = 0; d < *dd[k]; d++)
        if (!((*ss[k])[d] & SP_I_GHOST_BIT)) refs[nref++] = &(*ss[k])[d];
    qsort(refs, nref, sizeof *refs, cmp_u64);
    uint64_t k = 0, prev = UINT64_MAX;
    uint64_t *old = malloc((nref + 1) * sizeof *old);
    for (size_t r = 0; r < nref; r++) {
      uint64_t i = *refs[r];
      if (i != prev) {
        if (old) old[k] = i;
        t->hot.ev[k] = t->hot.ev[i];
        if (m->ext_stride)
          memmove(t->cols + k * (uint64_t)m->ext_stride, t->cols + i * (uint64_t)m->ext_stride,
                  (size_t)m->ext_stride * sizeof *t->cols);
        k++;
        prev = i;
      }
      *refs[r] = k - 1;
    }
    sp__ext_fill(m, t->cols, k, t->hot.n);
    t->hot.n = k;
    free(refs);
    if (old) sp__thread_keep(m, t, old, (uint32_t)k);
    free(old);
  }
}

/*====== Aggregation mode ======*/

/* Per-thread accumulators are merged with Chan's parallel update; their
 * shifted sums give each thread's mean and m2 without cancellation. Durations
 * are scaled from ticks to ns (the map is linear), absolute times mapped. */
sp_status sp__snapshot_build_aggregate(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                                       struct sp_run *run, uint64_t *open_calls) {
  memset(run, 0, sizeof *run);
  run->layout = "aggregate";
  *open_calls = 0;
  for (sp_thread_rec *t = m->threads; t; t = t->next)
    for (uint32_t i = 0; i < sp__agg_nopen(&t->hot); i++)
      if (t->hot.open[i].region) (*open_calls)++;
  uint32_t maxid = sp__region_max_id();
  double scale = (double)cm->mult / 4294967296.0;
  sp_source_cache *cache = sp__source_cache_new();
  size_t nrows = 0;
  for (uint32_t id = 1; id <= maxid; id++)
    for (sp_thread_rec *t = m->threads; t; t = t->next)
      if (id < t->hot.acc_cap && t->hot.acc[id].count) {
        nrows++;
        break;
      }
  run->names = calloc(nrows + 1, sizeof *run->names);
  run->rows = calloc(nrows + 1, sizeof *run->rows);
  run->start = malloc(sizeof *run->start);
  run->end = malloc(sizeof *run->end);
  run->call_id = malloc(sizeof *run->call_id);
  run->parent_id = malloc(sizeof *run->parent_id);
  if (!cache || !run->names || !run->rows || !run->start || !run->end || !run->call_id || !run->parent_id)
    goto oom;
  size_t r = 0;
  for (uint32_t id = 1; id <= maxid && r < nrows; id++) {
    uint64_t n = 0;
    int64_t total = 0, excl = 0, mn = INT64_MAX, mx = INT64_MIN, first = 0, last = 0;
    uint64_t smin = UINT64_MAX, lstart = 0, emax = 0;
    double mean = 0, m2 = 0;
    for (sp_thread_rec *t = m->threads; t; t = t->next) {
      if (id >= t->hot.acc_cap || !t->hot.acc[id].count) continue;
      const struct sp_i_agg *a = &t->hot.acc[id];
      double nb = (double)a->count;
      double mean_b = (double)a->total / nb;
      double m2_b = sp__agg_m2(a);
      if (n == 0) {
        mean = mean_b;
        m2 = m2_b;
      } else {
        double na = (double)n, delta = mean_b - mean;
        mean += delta * nb / (na + nb);
        m2 += m2_b + delta * delta * na * nb / (na + nb);
      }
      n += a->count;
      total += a->total;
      excl += a->excl;
      if (a->min < mn) mn = a->min;
      if (a->max > mx) mx = a->max;
      if (a->start_min < smin) {
        smin = a->start_min;
        first = a->first;
      }
      if (a->last_start >= lstart) {
        lstart = a->last_start;
        last = a->last;
      }
      if (a->end_max > emax) emax = a->end_max;
    }
    if (!n) continue;
    const struct sp_region_info *ri = sp__region_info(id);
    struct sp_row *row = &run->rows[r];
    run->names[r] = sp__strdup(ri->name);
    row->region = (uint32_t)r;
    row->rank = rank;
    row->offset = 0;
    row->count = 0; /* no events in this layout; the call count is aggregate_count */
    row->aggregate_count = (int64_t)n;
    row->tags_json = sp__region_tags_json(id);
    if (!run->names[r] || !row->tags_json || sp__row_source(m, row, ri, cache) != 0) goto oom;
    row->exclusive_total = (int64_t)((double)excl * scale);
    struct sp_summary *s = &row->stats;
    s->total = (int64_t)((double)total * scale);
    s->minimum = (int64_t)((double)mn * scale);
    s->maximum = (int64_t)((double)mx * scale);
    s->first = (int64_t)((double)first * scale);
    s->last = (int64_t)((double)last * scale);
    s->start_minimum = sp__ticks_to_ns(cm, smin);
    s->end_maximum = sp__ticks_to_ns(cm, emax);
    s->mean = mean * scale;
    s->m2 = m2 * scale * scale;
    r++;
  }
  run->nrows = r;
  run->nnames = r;
  sp__source_cache_free(cache);
  return SP_OK;
oom:
  sp__source_cache_free(cache);
  sp__run_free(run);
  return sp__set_error(SP_ERR_NO_MEMORY, "out of memory while collecting the aggregated regions");
}

void sp__snapshot_compact_aggregate(struct sp_manager *m) {
  for (sp_thread_rec *t = m->threads; t; t = t->next) sp__agg_reset(t->hot.acc, t->hot.acc_cap);
}
