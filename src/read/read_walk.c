/* read_walk.c - a rank's calls visited in start order, nested, without
 * holding or sorting them.
 *
 * Our writers store each (rank, region) row in start order (a thread's log
 * is in begin order; threads are merged by start). A k-way merge of the
 * rank's rows by (start, longer first, call id, region) is then exactly the
 * order read_tree.c sorts into, restricted to each lane; so the calls can be
 * nested as they stream past, with one stack of open calls per lane
 * (containment), or with the recorded ids. Memory is the rows' read buffers
 * plus, with ids, 8 bytes per call (the visited calls' tags by id), instead
 * of the 130-odd bytes per call of the sorted path.
 *
 * The walk accepts only what gives the sorted path's nesting exactly and
 * refuses the rest before the caller uses anything: a row out of order, ids
 * that are sparse, or a parent not yet seen when its child comes (dangling,
 * or one the sorted path also refuses, or the rare cross-thread parent with
 * the same start that sorts later). The caller then takes the sorted path
 * for that rank. Which of the two rules applies (ids or containment) is
 * decided as read_tree.c decides it: ids when the file has them, all
 * non-negative and unique, and every parent found.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bigmem.h"
#include "common/error.h"
#include "read/read_internal.h"

int sp__walk_enabled = 1;
int sp__walk_last;

/* The column buffers of one row being merged. */
struct cursor {
  size_t row;
  uint64_t next, count; /* next event of the row to read; the row's events */
  size_t at, have; /* position in the buffers, values buffered */
  int64_t *start, *end, *call, *parent, *thread, *task;
  int64_t last_start, last_end, last_call; /* the previous event (the order check) */
  int any;
};

/* A row's next call in the merge, its key copied so that comparing two
 * touches nothing else; done: the row has no more (its start then
 * INT64_MAX, so that the common comparison of starts needs no test). */
struct head {
  int64_t start, end, call;
  uint32_t region, done;
};

struct lane {
  int64_t thread, task;
  struct frame *stk;
  size_t sp, cap;
};
struct frame {
  int64_t end;
  uint64_t tag;
};

struct walk {
  sp_results *r;
  sp_status err;
  struct cursor *cur;
  size_t ncur, block;
  /* A loser tree over the rows (padded to a power of two with rows that
   * are done): node 0 holds the row whose call comes next, node i > 0 the
   * loser of the match under it; taking a call replays one leaf-to-root
   * path, log2(rows) comparisons where a heap's sift-down made twice as
   * many and moved the keys. */
  struct head *hd;
  uint32_t *tree;
  size_t nleaf;
  int ids; /* nest by the recorded ids */
  int has_tasks; /* read the task column */
  int has_call; /* the file records call ids (the order's tie-break) */
  /* ids: the tag of each visited call by id - id0, and a bit per visited id */
  int64_t id0;
  uint64_t idspan;
  uint64_t *idtag;   /* sp__big_calloc'd: idspan of them */
  uint64_t *visited; /* a bit per id */
  /* lanes by (thread, task), open addressing */
  struct lane *lanes;
  size_t nlanes, lanes_cap;
  uint32_t *lslot;
  size_t nlslot;
};

static int oom(struct walk *w) {
  w->err = sp__set_error(SP_ERR_NO_MEMORY, "out of memory walking a rank's calls");
  return -1;
}

/* Row a's next call comes before row b's: (start, longer first, call id,
 * region), then the row, for a strict order; a row that is done last. */
static int beats_tie(const struct head *hd, uint32_t a, uint32_t b) {
  const struct head *x = &hd[a], *y = &hd[b];
  if (x->done | y->done) return x->done == y->done ? a < b : !x->done;
  if (x->end != y->end) return x->end > y->end;
  if (x->call != y->call) return x->call < y->call;
  if (x->region != y->region) return x->region < y->region;
  return a < b;
}

static inline int beats(const struct head *hd, uint32_t a, uint32_t b) {
  if (hd[a].start != hd[b].start) return hd[a].start < hd[b].start;
  return beats_tie(hd, a, b);
}

/* Row k's key changed: replay its path to the root. */
static void replay(struct walk *w, uint32_t k) {
  uint32_t *t = w->tree;
  for (size_t node = (k + w->nleaf) >> 1; node; node >>= 1)
    if (beats(w->hd, t[node], k)) {
      uint32_t x = t[node];
      t[node] = k;
      k = x;
    }
  t[0] = k;
}

static inline void head_load(struct walk *w, uint32_t k) {
  const struct cursor *c = &w->cur[k];
  /* The rows' buffers are read a call at a time, 32-odd rows and six
   * columns apart: too many streams for the hardware's prefetcher, so a
   * call that enters a cache line asks for the lines two ahead in each
   * column (the rank's walk spent a third of its time waiting for them). */
  if ((c->at & 7) == 0 && c->at + 16 < c->have) {
    __builtin_prefetch(c->start + c->at + 16);
    __builtin_prefetch(c->end + c->at + 16);
    __builtin_prefetch(c->call + c->at + 16);
    __builtin_prefetch(c->parent + c->at + 16);
    __builtin_prefetch(c->thread + c->at + 16);
    __builtin_prefetch(c->task + c->at + 16);
  }
  w->hd[k] = (struct head){c->start[c->at], c->end[c->at], c->call[c->at], w->r->rows[c->row].region, 0};
}

/* Buffer the cursor's next block; 0 at the row's end, 1 read, -1 error, -2
 * the row is not in (start, longer first, call) order. */
static int cursor_fill(struct walk *w, struct cursor *c) {
  if (c->next >= c->count) return 0;
  size_t k = c->count - c->next < w->block ? (size_t)(c->count - c->next) : w->block;
  sp_status st = sp__row_read(w->r, c->row, c->next, k, c->start, c->end,
                              w->has_call ? c->call : NULL, w->ids ? c->parent : NULL, c->thread);
  if (st == SP_OK && w->has_tasks) st = sp__row_read_tasks(w->r, c->row, c->next, k, c->task);
  if (st != SP_OK) {
    w->err = st;
    return -1;
  }
  if (!w->has_call)
    for (size_t i = 0; i < k; i++) c->call[i] = -1;
  if (!w->has_tasks)
    for (size_t i = 0; i < k; i++) c->task[i] = -1;
  else
    for (size_t i = 0; i < k; i++)
      if (c->task[i] < 0) c->task[i] = -1;
  for (size_t i = 0; i < k; i++) {
    int64_t s = c->start[i], e = c->end[i], id = c->call[i];
    if (c->any &&
        (s < c->last_start ||
         (s == c->last_start && (e > c->last_end || (e == c->last_end && id < c->last_call)))))
      return -2;
    c->any = 1;
    c->last_start = s;
    c->last_end = e;
    c->last_call = id;
  }
  c->next += k;
  c->have = k;
  c->at = 0;
  sp__progress(w->r, k);
  return 1;
}

static uint64_t lane_hash(int64_t thread, int64_t task) {
  uint64_t h = (uint64_t)thread * 0x9E3779B97F4A7C15ull ^ ((uint64_t)task + 0x632BE59BD9B4E019ull);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

/* The lane of (thread, task), created when new; NULL out of memory. */
static struct lane *lane_of(struct walk *w, int64_t thread, int64_t task, uint32_t *index) {
  if ((w->nlanes + 1) * 2 > w->nlslot) {
    size_t ns = w->nlslot ? w->nlslot * 2 : 64;
    uint32_t *s = malloc(ns * sizeof *s);
    if (!s) return NULL;
    for (size_t i = 0; i < ns; i++) s[i] = UINT32_MAX;
    for (size_t i = 0; i < w->nlanes; i++) {
      size_t h = (size_t)lane_hash(w->lanes[i].thread, w->lanes[i].task) & (ns - 1);
      while (s[h] != UINT32_MAX) h = (h + 1) & (ns - 1);
      s[h] = (uint32_t)i;
    }
    free(w->lslot);
    w->lslot = s;
    w->nlslot = ns;
  }
  size_t h = (size_t)lane_hash(thread, task) & (w->nlslot - 1);
  while (w->lslot[h] != UINT32_MAX) {
    struct lane *l = &w->lanes[w->lslot[h]];
    if (l->thread == thread && l->task == task) {
      *index = w->lslot[h];
      return l;
    }
    h = (h + 1) & (w->nlslot - 1);
  }
  if (w->nlanes == w->lanes_cap) {
    size_t cap = w->lanes_cap ? w->lanes_cap * 2 : 16;
    struct lane *v = realloc(w->lanes, cap * sizeof *v);
    if (!v) return NULL;
    w->lanes = v;
    w->lanes_cap = cap;
  }
  struct lane *l = &w->lanes[w->nlanes];
  memset(l, 0, sizeof *l);
  l->thread = thread;
  l->task = task;
  w->lslot[h] = (uint32_t)w->nlanes;
  *index = (uint32_t)w->nlanes++;
  return l;
}

/* Ids pass: 1 when the ids decide the nesting and fit a table indexed by id,
 * 0 when containment decides it (an id < 0 or repeated), -1 error, -2 ids
 * too sparse for the table (the caller sorts). */
static int ids_check(struct walk *w, const size_t *rows, size_t nrows, uint64_t n) {
  sp_results *r = w->r;
  int64_t *buf = malloc(w->block * sizeof *buf);
  if (!buf) return oom(w);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  uint64_t *seen = NULL; /* pass 1: a bit per id (an eighth of a byte per call, cached) */
  int rc = 1;
  for (int pass = 0; pass < 2 && rc == 1; pass++) {
    for (size_t k = 0; k < nrows && rc == 1; k++) {
      const struct sp__rrow *row = &r->rows[rows[k]];
      for (uint64_t done = 0; done < row->count && rc == 1;) {
        size_t m = row->count - done < w->block ? (size_t)(row->count - done) : w->block;
        if ((w->err = sp__row_read(r, rows[k], done, m, NULL, NULL, buf, NULL, NULL)) != SP_OK) {
          rc = -1;
          break;
        }
        for (size_t i = 0; i < m && rc == 1; i++) {
          if (pass == 0) {
            if (buf[i] < 0) rc = 0;
            if (buf[i] < lo) lo = buf[i];
            if (buf[i] > hi) hi = buf[i];
          } else {
            uint64_t x = (uint64_t)(buf[i] - w->id0), bit = (uint64_t)1 << (x & 63);
            if (seen[x >> 6] & bit) rc = 0; /* repeated */
            seen[x >> 6] |= bit;
          }
        }
        done += m;
      }
    }
    if (pass == 0 && rc == 1 && n) {
      uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
      if (span > 2 * n + 1024) {
        rc = -2;
        break;
      }
      w->id0 = lo;
      w->idspan = span;
      w->idtag = sp__big_calloc((size_t)span * sizeof *w->idtag);
      w->visited = calloc((size_t)(span / 64 + 1), sizeof *w->visited);
      seen = calloc((size_t)(span / 64 + 1), sizeof *seen);
      if (!w->idtag || !w->visited || !seen) {
        w->err = sp__set_error(SP_ERR_NO_MEMORY, "out of memory for the call ids of %llu calls",
                               (unsigned long long)n);
        rc = -1;
        break;
      }
    }
  }
  free(seen);
  free(buf);
  return rc;
}

static void walk_free(struct walk *w) {
  for (size_t i = 0; i < w->ncur; i++) free(w->cur[i].start);
  free(w->cur);
  free(w->hd);
  free(w->tree);
  sp__big_free(w->idtag, (size_t)w->idspan * sizeof *w->idtag);
  free(w->visited);
  for (size_t i = 0; i < w->nlanes; i++) free(w->lanes[i].stk);
  free(w->lanes);
  free(w->lslot);
}

int sp__walk_calls(sp_results *r, int64_t rank, sp__walk_fn fn, void *ctx, sp_status *err) {
  if (!sp__walk_enabled || r->aggregate) return sp__walk_last = 0;
  struct walk w;
  memset(&w, 0, sizeof w);
  w.r = r;
  uint64_t total = 0;
  size_t nrows = 0;
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i].rank == rank && r->rows[i].count) total += r->rows[i].count, nrows++;
  if (total > ((uint64_t)1 << 34)) return sp__walk_last = 0;
  size_t *rows = malloc((nrows ? nrows : 1) * sizeof *rows);
  if (!rows) return *err = sp__set_error(SP_ERR_NO_MEMORY, "out of memory"), -1;
  nrows = 0;
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i].rank == rank && r->rows[i].count) rows[nrows++] = i;
  /* Buffers for about 2^18 calls in all (12 MiB), 64 to 16384 per row. */
  w.block = nrows ? ((size_t)1 << 18) / nrows : 1;
  if (w.block > 16384) w.block = 16384;
  if (w.block < 64) w.block = 64;
  w.has_call = r->ds_call >= 0 || r->mem_call;
  w.has_tasks = r->ds_task >= 0 || r->mem_task;
  int rc = 1;
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  if (r->ds_call >= 0) {
    w.ids = 1;
    int ok = ids_check(&w, rows, nrows, total);
    if (ok == 0) {
      w.ids = 0;
      sp__big_free(w.idtag, (size_t)w.idspan * sizeof *w.idtag);
      free(w.visited);
      w.idtag = NULL;
      w.visited = NULL;
    }
    if (ok < 0) rc = ok == -1 ? -1 : 0;
  }
  sp__progress_begin(r, total);
  w.cur = calloc(nrows ? nrows : 1, sizeof *w.cur);
  w.nleaf = 1;
  while (w.nleaf < nrows) w.nleaf *= 2;
  w.hd = malloc(w.nleaf * sizeof *w.hd);
  w.tree = malloc(3 * w.nleaf * sizeof *w.tree);
  if (rc == 1 && (!w.cur || !w.hd || !w.tree)) rc = oom(&w);
  for (size_t k = 0; w.hd && k < w.nleaf; k++) w.hd[k] = (struct head){INT64_MAX, 0, 0, 0, 1};
  for (size_t k = 0; k < nrows && rc == 1; k++) {
    struct cursor *c = &w.cur[w.ncur++];
    c->row = rows[k];
    c->count = r->rows[rows[k]].count;
    c->start = malloc(6 * w.block * sizeof *c->start);
    if (!c->start) {
      rc = oom(&w);
      break;
    }
    c->end = c->start + w.block;
    c->call = c->end + w.block;
    c->parent = c->call + w.block;
    c->thread = c->parent + w.block;
    c->task = c->thread + w.block;
    for (size_t i = 0; i < w.block; i++) c->parent[i] = -1;
    int f = cursor_fill(&w, c);
    if (f < 0) rc = f == -1 ? -1 : 0;
    if (f == 1) head_load(&w, (uint32_t)k);
  }
  if (rc == 1) { /* the matches, bottom up; win[]: each node's winner (leaves from nleaf) */
    uint32_t *t = w.tree, *win = w.tree + w.nleaf;
    for (size_t k = 0; k < w.nleaf; k++) win[w.nleaf + k] = (uint32_t)k;
    for (size_t node = w.nleaf - 1; node >= 1; node--) {
      uint32_t x = win[2 * node], y = win[2 * node + 1];
      int xw = beats(w.hd, x, y);
      win[node] = xw ? x : y;
      t[node] = xw ? y : x;
    }
    t[0] = w.nleaf > 1 ? win[1] : 0;
  }
  struct lane *last = NULL;
  uint32_t last_lane = 0;
  while (rc == 1 && !w.hd[w.tree[0]].done) {
    uint32_t k = w.tree[0];
    struct cursor *c = &w.cur[k];
    struct sp__walk_call x = {c->start[c->at],
                              c->end[c->at],
                              c->thread[c->at],
                              c->task[c->at],
                              c->call[c->at],
                              INT64_MIN,
                              r->rows[c->row].region,
                              0,
                              (uint32_t)w.ids,
                              c->row};
    uint32_t li = last_lane;
    struct lane *l = last;
    if (!l || l->thread != x.thread || l->task != x.task) {
      if (!(l = lane_of(&w, x.thread, x.task, &li))) {
        rc = oom(&w);
        break;
      }
    }
    last = l; /* lanes do not move until lane_of adds one */
    last_lane = li;
    x.lane = li;
    uint64_t ptag = 0, *self;
    int has_parent = 0;
    if (w.ids) {
      int64_t pid = c->parent[c->at];
      if (pid >= 0) {
        uint64_t px = (uint64_t)pid - (uint64_t)w.id0;
        if (pid < w.id0 || px >= w.idspan || !(w.visited[px >> 6] >> (px & 63) & 1)) {
          rc = 0; /* dangling, or a parent the order gives later */
          break;
        }
        ptag = w.idtag[px];
        has_parent = 1;
      }
      uint64_t me = (uint64_t)x.call - (uint64_t)w.id0;
      w.visited[me >> 6] |= (uint64_t)1 << (me & 63);
      self = &w.idtag[me];
    } else {
      while (l->sp && l->stk[l->sp - 1].end <= x.start) l->sp--;
      if (l->sp) {
        ptag = l->stk[l->sp - 1].tag;
        x.parent_end = l->stk[l->sp - 1].end;
        has_parent = 1;
      }
      if (l->sp == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct frame *v = realloc(l->stk, cap * sizeof *v);
        if (!v) {
          rc = oom(&w);
          break;
        }
        l->stk = v;
        l->cap = cap;
      }
      l->stk[l->sp].end = x.end;
      self = &l->stk[l->sp].tag;
      l->sp++;
    }
    if ((w.err = fn(ctx, &x, has_parent ? &ptag : NULL, self)) != SP_OK) {
      rc = -1;
      break;
    }
    if (++c->at == c->have) {
      int f = cursor_fill(&w, c);
      if (f < 0) {
        rc = f == -1 ? -1 : 0;
        break;
      }
      if (f == 0) {
        w.hd[k] = (struct head){INT64_MAX, 0, 0, 0, 1};
        replay(&w, k);
        continue;
      }
    }
    head_load(&w, k);
    replay(&w, k);
  }
  sp__h5_quiet_end(&q);
  walk_free(&w);
  free(rows);
  if (rc < 0) *err = w.err;
  sp__walk_last = rc;
  return rc;
}
