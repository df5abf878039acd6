/* read_walk.c - a rank's calls visited in start order, nested, without
 * holding or sorting them.
 *
 * Our writers store each (rank, region) row in start order (a thread's log
 * is in begin order; threads are merged by start), or, in a streamed run's
 * staged file, as (row, block) segments each in start order (the row is
 * not: threads sharing a region interleave by block); each segment is then
 * a piece of the merge, found from the virtual column's mappings
 * (sp__row_cuts). A k-way merge of the rank's rows (or pieces) by (start,
 * longer first, call id, region) is then exactly the
 * order read_tree.c sorts into, restricted to each lane; so the calls can be
 * nested as they stream past, with one stack of open calls per lane
 * (containment), or with the recorded ids. Memory is the rows' read buffers,
 * the lanes' stacks and, with ids, a bit per id (the repeat check), instead
 * of the 130-odd bytes per call of the sorted path.
 *
 * With ids, only a call that is still open can be a parent in a file a
 * profiler wrote (a child begins inside its parent), so the tags live in the
 * lanes' stacks, each frame with its id, and a parent is looked up there:
 * its own lane's stack from the top, then the parents found lately on
 * other lanes (an OpenMP team's first calls share one), then the other
 * lanes' stacks. A table of every call's tag by id (8 bytes per call) did
 * the same, but the first touch of its pages took a sixth of `report`'s
 * time on a 10M-event file.
 *
 * The walk accepts only what gives the sorted path's nesting exactly and
 * refuses the rest (the caller then takes the sorted path for that rank,
 * which gives the same result at its own cost): a row out of order, a
 * parent not found open when its child comes (dangling, one the order
 * gives later, one that has already ended, or one too far to look up
 * within the lookup budget), ids too sparse for the repeat check, and ids
 * that turn out negative or repeated after the walk began (the sorted path
 * then nests by containment). Which of the two rules applies (ids or
 * containment) is decided as read_tree.c decides it: ids when the file has
 * them, all non-negative and unique, and every parent found; a negative id
 * among each row's first block of calls decides containment before any
 * call is handed over.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"

int sp__walk_enabled = 1;
int sp__walk_last;
size_t sp__walk_last_buffers;

/* The column buffers of one row being merged. */
struct cursor {
  size_t row;
  uint64_t next, count; /* next event of the row to read; the row's events */
  size_t at, have; /* position in the buffers, values buffered */
  size_t block;    /* the buffers' room: the walk's block, or the row's calls when fewer */
  int64_t *start, *end, *call, *parent, *thread, *task;
  int64_t last_start, last_end, last_call; /* the previous event (the order check) */
  int any;
  int done; /* no more calls (a padding leaf of the merge from the start) */
  uint32_t region;
  /* schema 3: where this piece's start deltas stand (the row's decoding
   * state, swapped in around each read: a row's pieces are read in turn) */
  int own_state;
  uint64_t snext;
  int64_t sacc;
};

/* A leaf's key in the merge: its next call's start, INT64_MAX when it is
 * done (so that the common comparison of starts needs no test). */
struct tkey {
  int64_t start;
  uint32_t row;
};

struct lane {
  int64_t thread, task;
  struct frame *stk;
  size_t sp, cap;
  int active; /* ids: listed in walk.active */
};
struct frame {
  int64_t end;
  uint64_t tag;
  int64_t id; /* ids only */
};

/* A bit per call id seen, in pages of 2^15 ids found by page number. */
#define IDPAGE_BITS 15
#define XCACHE 256
struct idpage {
  uint64_t no; /* id >> IDPAGE_BITS */
  uint64_t *bits;
};

struct walk {
  sp_results *r;
  sp_status err;
  struct cursor *cur;
  size_t ncur, block;
  /* A loser tree over the rows (padded to a power of two with rows that
   * are done): node 0 holds the row whose call comes next, node i > 0 the
   * loser of the match under it, each with its start; taking a call
   * replays one leaf-to-root path, log2(rows) comparisons of starts where
   * a heap's sift-down made twice as many and moved the keys. */
  struct tkey *tree;
  size_t nleaf;
  int ids; /* nest by the recorded ids */
  int has_tasks; /* read the task column */
  int has_call; /* the file records call ids (the order's tie-break) */
  int has_threads; /* read the thread column */
  /* a block of -1: the column of every row that the file does not have
   * (one buffer for all, kept in cache, instead of each row's copy) */
  int64_t *none;
  int64_t *bufs; /* the rows' column buffers, one after the other */
  /* ids: the pages of seen ids (open addressing by page number), the last
   * page used, how many pages the rank may have */
  struct idpage *pages;
  size_t npages, pages_cap, max_pages;
  uint64_t last_no;
  uint64_t *last_bits;
  /* ids: frames looked at beyond each lane's top, and how many the rank may
   * take (so that a hostile file cannot make the lookups quadratic) */
  uint64_t looked, budget;
  /* ids: the lanes that may have frames (for parents on another lane), and
   * the parents found there lately by id (an OpenMP team's calls share one) */
  uint32_t *active;
  size_t nactive, active_cap;
  struct xcache {
    int64_t id; /* -1: empty */
    uint64_t tag;
  } xc[XCACHE];
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

/* Row a's next call comes before row b's when their starts tie: longer
 * first, then call id, region and row, for a strict order; a row that is
 * done last. */
static int beats_tie(const struct walk *w, uint32_t a, uint32_t b) {
  const struct cursor *x = &w->cur[a], *y = &w->cur[b];
  if (x->done | y->done) return x->done == y->done ? a < b : !x->done;
  int64_t xe = x->end[x->at], ye = y->end[y->at], xc = x->call[x->at], yc = y->call[y->at];
  if (xe != ye) return xe > ye;
  if (xc != yc) return xc < yc;
  if (x->region != y->region) return x->region < y->region;
  return a < b;
}

static inline int beats(const struct walk *w, struct tkey a, struct tkey b) {
  if (a.start != b.start) return a.start < b.start;
  return beats_tie(w, a.row, b.row);
}

static inline struct tkey key_of(const struct walk *w, uint32_t k) {
  const struct cursor *c = &w->cur[k];
  return (struct tkey){c->done ? INT64_MAX : c->start[c->at], k};
}

/* Row k's key changed: replay its path to the root. */
static void replay(struct walk *w, uint32_t k) {
  struct tkey *t = w->tree, cur = key_of(w, k);
  for (size_t node = (k + w->nleaf) >> 1; node; node >>= 1)
    if (beats(w, t[node], cur)) {
      struct tkey x = t[node];
      t[node] = cur;
      cur = x;
    }
  t[0] = cur;
}

/* The rows' buffers are read a call at a time, 32-odd rows and six columns
 * apart: too many streams for the hardware's prefetcher, so a call that
 * enters a cache line asks for the lines two ahead in each column (the
 * rank's walk spent a third of its time waiting for them). */
static inline void ahead(const struct cursor *c) {
  if ((c->at & 7) == 0 && c->at + 16 < c->have) {
    __builtin_prefetch(c->start + c->at + 16);
    __builtin_prefetch(c->end + c->at + 16);
    __builtin_prefetch(c->call + c->at + 16);
    __builtin_prefetch(c->parent + c->at + 16);
    __builtin_prefetch(c->thread + c->at + 16);
    __builtin_prefetch(c->task + c->at + 16);
  }
}

/* Buffer the cursor's next block; 0 at the row's end, 1 read, -1 error, -2
 * the row is not in (start, longer first, call) order. */
static int cursor_fill(struct walk *w, struct cursor *c) {
  if (c->next >= c->count) return 0;
  size_t k = c->count - c->next < c->block ? (size_t)(c->count - c->next) : c->block;
  struct sp__rrow *rw = &w->r->rows[c->row];
  if (c->own_state) {
    rw->start_next = c->snext;
    rw->start_acc = c->sacc;
  }
  sp_status st = sp__row_read(w->r, c->row, c->next, k, c->start, c->end,
                              w->has_call ? c->call : NULL, w->ids ? c->parent : NULL,
                              w->has_threads ? c->thread : NULL);
  c->own_state = 1;
  c->snext = rw->start_next;
  c->sacc = rw->start_acc;
  if (st == SP_OK && w->has_tasks) st = sp__row_read_tasks(w->r, c->row, c->next, k, c->task);
  if (st != SP_OK) {
    w->err = st;
    return -1;
  }
  if (w->has_tasks)
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

/* Marks id as seen: 1 new, 0 seen before (a repeat) or the rank's ids
 * too sparse for the pages it may have, -1 out of memory. */
static int id_mark(struct walk *w, uint64_t id) {
  uint64_t no = id >> IDPAGE_BITS;
  if (no != w->last_no || !w->last_bits) {
    if ((w->npages + 1) * 2 > w->pages_cap) {
      size_t cap = w->pages_cap ? w->pages_cap * 2 : 64;
      struct idpage *v = calloc(cap, sizeof *v);
      if (!v) return oom(w);
      for (size_t i = 0; i < w->pages_cap; i++) {
        if (!w->pages[i].bits) continue;
        size_t h = (size_t)lane_hash((int64_t)w->pages[i].no, 0) & (cap - 1);
        while (v[h].bits) h = (h + 1) & (cap - 1);
        v[h] = w->pages[i];
      }
      free(w->pages);
      w->pages = v;
      w->pages_cap = cap;
    }
    size_t h = (size_t)lane_hash((int64_t)no, 0) & (w->pages_cap - 1);
    while (w->pages[h].bits && w->pages[h].no != no) h = (h + 1) & (w->pages_cap - 1);
    if (!w->pages[h].bits) {
      if (w->npages == w->max_pages) return 0;
      if (!(w->pages[h].bits = calloc((size_t)1 << (IDPAGE_BITS - 6), sizeof(uint64_t))))
        return oom(w);
      w->pages[h].no = no;
      w->npages++;
    }
    w->last_no = no;
    w->last_bits = w->pages[h].bits;
  }
  uint64_t *word = &w->last_bits[(id & (((uint64_t)1 << IDPAGE_BITS) - 1)) >> 6];
  uint64_t bit = (uint64_t)1 << (id & 63);
  if (*word & bit) return 0;
  *word |= bit;
  return 1;
}

/* The tag of the open call `pid`, the parent of a call of lane l starting
 * at `start`, when it is not on top of l's stack: deeper in l's stack, a
 * parent found lately on another lane, or the other lanes' stacks (whose
 * ended tops go on the way: a call that ended before `start` cannot be
 * the parent of a later call either). 1 found, 0 not (or past the lookup
 * budget: the walk refuses the rank). */
static int find_parent(struct walk *w, const struct lane *l, int64_t pid, int64_t start,
                       uint64_t *tag) {
  for (size_t i = l->sp; i-- > 0;) {
    if (l->stk[i].id == pid) {
      *tag = l->stk[i].tag;
      return 1;
    }
    w->looked++;
  }
  struct xcache *x = &w->xc[(uint64_t)pid % XCACHE];
  if (x->id == pid) {
    *tag = x->tag;
    return 1;
  }
  for (size_t k = 0; k < w->nactive && w->looked <= w->budget;) {
    struct lane *o = &w->lanes[w->active[k]];
    while (o->sp && o->stk[o->sp - 1].end < start) o->sp--;
    if (!o->sp) { /* off the list until it has frames again */
      o->active = 0;
      w->active[k] = w->active[--w->nactive];
      continue;
    }
    if (o != l)
      for (size_t i = o->sp; i-- > 0;) {
        w->looked++;
        if (o->stk[i].id == pid) {
          x->id = pid;
          x->tag = *tag = o->stk[i].tag;
          return 1;
        }
      }
    k++;
  }
  return 0;
}

static void walk_free(struct walk *w) {
  free(w->bufs);
  free(w->none);
  free(w->cur);
  free(w->tree);
  for (size_t i = 0; i < w->pages_cap; i++) free(w->pages[i].bits);
  free(w->pages);
  free(w->active);
  for (size_t i = 0; i < w->nlanes; i++) free(w->lanes[i].stk);
  free(w->lanes);
  free(w->lslot);
}

size_t sp__region_rank_first(const sp_results *r, size_t region, int64_t rank) {
  size_t lo = r->region_row_start[region], hi = r->region_row_start[region + 1];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->rows[r->region_rows[mid]].rank < rank) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

sp_status sp__rank_rows(const sp_results *r, int64_t rank, size_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t k = 0, cap = 0;
  size_t *v = NULL;
  for (size_t g = 0; g < r->nregions; g++) {
    size_t end = r->region_row_start[g + 1];
    for (size_t j = sp__region_rank_first(r, g, rank); j < end && r->rows[r->region_rows[j]].rank == rank; j++) {
      if (k == cap) {
        cap = cap ? cap * 2 : 16;
        size_t *nv = realloc(v, cap * sizeof *nv);
        if (!nv) {
          free(v);
          return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
        }
        v = nv;
      }
      v[k++] = r->region_rows[j];
    }
  }
  if (k > 1) qsort(v, k, sizeof *v, cmp_size);
  *out = v;
  *n = k;
  return SP_OK;
}

int sp__walk_calls(sp_results *r, int64_t rank, sp__walk_fn fn, void *ctx, sp_status *err) {
  if (!sp__walk_enabled || r->aggregate) return sp__walk_last = 0;
  struct walk w;
  memset(&w, 0, sizeof w);
  w.r = r;
  uint64_t total = 0;
  size_t nrows = 0, *rows = NULL;
  if ((*err = sp__rank_rows(r, rank, &rows, &nrows)) != SP_OK) return -1;
  size_t kept = 0;
  for (size_t i = 0; i < nrows; i++)
    if (r->rows[rows[i]].count) total += r->rows[rows[i]].count, rows[kept++] = rows[i];
  nrows = kept;
  if (total > ((uint64_t)1 << 34)) {
    free(rows);
    return sp__walk_last = 0;
  }
  /* The merge's pieces: each row, or each stored piece of a row that the
   * file keeps in several (a staged file's (row, block) segments: each in
   * start order, the row not), so that such a row is merged from its
   * pieces instead of refused (the sorted path: 130-odd B per call). More
   * pieces than a 256th of the rank's calls, or 4096 if that is more (each
   * a leaf and 64 calls of buffers at least), are not worth it: the row is
   * taken whole, and refused if it is out of order. */
  struct piece {
    size_t row;
    uint64_t lo, hi;
  } *pieces = NULL;
  size_t npieces = 0, pieces_cap = 0;
  uint64_t max_pieces = total / 256 > 4096 ? total / 256 : 4096;
  for (size_t i = 0; i < nrows; i++) {
    uint64_t *cuts = NULL;
    size_t ncuts = 0;
    if (npieces < max_pieces && (*err = sp__row_cuts(r, rows[i], &cuts, &ncuts)) != SP_OK) {
      free(pieces);
      free(rows);
      return -1;
    }
    if (npieces + ncuts + 1 > max_pieces) ncuts = 0;
    if (npieces + ncuts + 1 > pieces_cap) {
      size_t cap = pieces_cap ? pieces_cap : 64;
      while (cap < npieces + ncuts + 1) cap *= 2;
      struct piece *v = realloc(pieces, cap * sizeof *v);
      if (!v) {
        free(cuts);
        free(pieces);
        free(rows);
        *err = sp__set_error(SP_ERR_NO_MEMORY, "out of memory walking a rank's calls");
        return -1;
      }
      pieces = v;
      pieces_cap = cap;
    }
    uint64_t lo = 0;
    for (size_t k = 0; k <= ncuts; k++) {
      uint64_t hi = k < ncuts ? cuts[k] : r->rows[rows[i]].count;
      if (hi > lo) pieces[npieces++] = (struct piece){rows[i], lo, hi};
      lo = hi;
    }
    free(cuts);
  }
  /* Buffers for about 2^18 calls in all (4-12 MiB: 2 to 6 columns), 64 to
   * 16384 per row, and no more than the row has: a row of 2 calls took
   * 16384 calls of buffers (768 KiB of 6 columns) before, and the rank's
   * buffers were allocated and touched anew for every rank. */
  w.block = npieces ? ((size_t)1 << 18) / npieces : 1;
  if (w.block > 16384) w.block = 16384;
  if (w.block < 64) w.block = 64;
  size_t room = 0; /* the rows' buffers, in calls */
  for (size_t k = 0; k < npieces; k++)
    room += pieces[k].hi - pieces[k].lo < w.block ? (size_t)(pieces[k].hi - pieces[k].lo) : w.block;
  w.has_call = r->ds_call >= 0 || r->mem_call;
  w.has_tasks = r->ds_task >= 0 || r->mem_task;
  w.has_threads = r->ds_thread >= 0 || r->mem_thread;
  int rc = 1;
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  if (r->ds_call >= 0) {
    w.ids = 1;
    /* at most a page of seen ids per 2048 calls (2 bits per call) beyond
     * the first 64 pages; frames looked at: 16 per call beyond 2^16 */
    w.max_pages = (size_t)(total / 2048) + 64;
    w.budget = 16 * total + 65536;
    w.last_no = UINT64_MAX;
    for (size_t i = 0; i < XCACHE; i++) w.xc[i].id = -1;
  }
  sp__progress_begin(r, total);
  w.nleaf = 1;
  while (w.nleaf < npieces) w.nleaf *= 2;
  w.cur = calloc(w.nleaf, sizeof *w.cur);
  w.tree = malloc(3 * w.nleaf * sizeof *w.tree);
  w.none = malloc(w.block * sizeof *w.none);
  if (rc == 1 && (!w.cur || !w.tree || !w.none)) rc = oom(&w);
  for (size_t i = 0; w.none && i < w.block; i++) w.none[i] = -1;
  /* the columns each row reads: start, end, and those the file has */
  size_t ncol = 2 + (size_t)w.has_call + (size_t)w.ids + (size_t)w.has_threads + (size_t)w.has_tasks;
  sp__walk_last_buffers = room * ncol * sizeof *w.bufs;
  if (rc == 1 && !(w.bufs = malloc((room ? room : 1) * ncol * sizeof *w.bufs))) rc = oom(&w);
  for (size_t k = 0; w.cur && k < w.nleaf; k++) w.cur[k].done = 1;
  for (size_t k = 0, at = 0; k < npieces && rc == 1; k++) {
    struct cursor *c = &w.cur[w.ncur++];
    c->row = pieces[k].row;
    c->region = r->rows[c->row].region;
    c->next = pieces[k].lo;
    c->count = pieces[k].hi;
    size_t b = c->block = c->count - c->next < w.block ? (size_t)(c->count - c->next) : w.block;
    c->start = w.bufs + at;
    at += ncol * b;
    int64_t *col = c->start + b;
    c->end = col;
    c->call = w.has_call ? (col += b) : w.none;
    c->parent = w.ids ? (col += b) : w.none;
    c->thread = w.has_threads ? (col += b) : w.none;
    c->task = w.has_tasks ? (col += b) : w.none;
    int f = cursor_fill(&w, c);
    if (f < 0) rc = f == -1 ? -1 : 0;
    if (f == 1) c->done = 0;
    /* a negative id: the ids do not decide the nesting (read_tree.c's
     * rule), known here before any call is handed over */
    for (size_t i = 0; f == 1 && w.ids && i < c->have; i++)
      if (c->call[i] < 0) w.ids = 0;
  }
  if (rc == 1) { /* the matches, bottom up; win[]: each node's winner (leaves from nleaf) */
    struct tkey *t = w.tree, *win = w.tree + w.nleaf;
    for (size_t k = 0; k < w.nleaf; k++) win[w.nleaf + k] = key_of(&w, (uint32_t)k);
    for (size_t node = w.nleaf - 1; node >= 1; node--) {
      struct tkey x = win[2 * node], y = win[2 * node + 1];
      int xw = beats(&w, x, y);
      win[node] = xw ? x : y;
      t[node] = xw ? y : x;
    }
    t[0] = w.nleaf > 1 ? win[1] : win[w.nleaf];
  }
  struct lane *last = NULL;
  uint32_t last_lane = 0;
  while (rc == 1 && !w.cur[w.tree[0].row].done) {
    uint32_t k = w.tree[0].row;
    struct cursor *c = &w.cur[k];
    struct sp__walk_call x = {c->start[c->at],
                              c->end[c->at],
                              c->thread[c->at],
                              c->task[c->at],
                              c->call[c->at],
                              INT64_MIN,
                              c->region,
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
    uint64_t ptag = 0;
    int has_parent = 0;
    if (w.ids) {
      /* the lane's ended calls go (a call that begins at a parent's end
       * may still be its child here), then the parent is looked up */
      while (l->sp && l->stk[l->sp - 1].end < x.start) l->sp--;
      int64_t pid = c->parent[c->at];
      if (pid >= 0) {
        if (l->sp && l->stk[l->sp - 1].id == pid) {
          ptag = l->stk[l->sp - 1].tag;
        } else if (!find_parent(&w, l, pid, x.start, &ptag) || w.looked > w.budget) {
          rc = 0; /* dangling, later, ended, or too far: the sorted path decides */
          break;
        }
        has_parent = 1;
      }
      int seen = x.call < 0 ? 0 : id_mark(&w, (uint64_t)x.call);
      if (seen <= 0) {
        rc = seen; /* negative, repeated or too sparse: the sorted path nests by containment */
        break;
      }
      if (!l->active) {
        if (w.nactive == w.active_cap) {
          size_t cap = w.active_cap ? w.active_cap * 2 : 16;
          uint32_t *v = realloc(w.active, cap * sizeof *v);
          if (!v) {
            rc = oom(&w);
            break;
          }
          w.active = v;
          w.active_cap = cap;
        }
        w.active[w.nactive++] = li;
        l->active = 1;
      }
    } else {
      while (l->sp && l->stk[l->sp - 1].end <= x.start) l->sp--;
      if (l->sp) {
        ptag = l->stk[l->sp - 1].tag;
        x.parent_end = l->stk[l->sp - 1].end;
        has_parent = 1;
      }
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
    struct frame *self = &l->stk[l->sp++];
    self->end = x.end;
    self->id = x.call;
    if ((w.err = fn(ctx, &x, has_parent ? &ptag : NULL, &self->tag)) != SP_OK) {
      rc = -1;
      break;
    }
    if (++c->at == c->have) {
      int f = cursor_fill(&w, c);
      if (f < 0) {
        rc = f == -1 ? -1 : 0;
        break;
      }
      c->done = f == 0;
    }
    ahead(c);
    replay(&w, k);
  }
  sp__h5_quiet_end(&q);
  /* every call was read with its start and end and passed the checks,
   * whatever order the pieces were read in (the durations alone then do) */
  for (size_t k = 0; rc == 1 && k < nrows; k++) r->rows[rows[k]].checked = r->rows[rows[k]].count;
  walk_free(&w);
  free(pieces);
  free(rows);
  if (rc < 0) *err = w.err;
  sp__walk_last = rc;
  return rc;
}
