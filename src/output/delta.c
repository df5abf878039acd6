/* delta.c - schema 3's event encoding (delta.h, docs/file-format.md).
 *
 * Absolute nanosecond timestamps need 50-60 bits, and byte-shuffle + deflate
 * cannot do arithmetic, so schema 2's start and end columns cost about 2 bytes
 * each even compressed. Inside a row (one region on one rank, in start order)
 * the gap from one call's start to the next and each call's duration are a
 * few thousand to a few million ns, and call ids advance by small steps. So
 * each call is stored as: its start gap from the previous call of the row,
 * its duration, the zigzag-coded step of its call id, and the zigzag-coded
 * distance back to its parent's id (0 = no parent). Each column gets the
 * narrowest of 1, 2, 4 or 8 bytes that costs least once the values that do
 * not fit (stored as the type's maximum) are listed with their true values
 * in an overflow pair of 16 bytes each: one hour-long call must not widen a
 * million short ones.
 */
#include "output/delta.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

const char *const sp__delta_col_names[SP_DELTA_NCOLS] = {"start_gaps", "durations", "call_id_gaps",
                                                        "parent_offsets"};

/* Two's-complement differences: wrap instead of overflowing (signed overflow
 * is undefined), which the reader's wrapping sums undo exactly. */
static int64_t diff(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ ((uint64_t)0 - ((uint64_t)v >> 63)); }

/* The true value of column c for event i (first: the first event of its row)
 * and the unsigned code stored for it. The loops below inline these with a
 * constant column, so the per-event work is a few instructions. */
static inline __attribute__((always_inline)) int64_t true_value(const struct sp_run *run, int c, size_t i,
                                                                 int first) {
  switch (c) {
  case 0: return first ? 0 : diff(run->start[i], run->start[i - 1]);
  case 1: return diff(run->end[i], run->start[i]);
  case 2: return first ? 0 : diff(run->call_id[i], run->call_id[i - 1]);
  default: return run->parent_id[i] == -1 ? 0 : diff(run->call_id[i], run->parent_id[i]);
  }
}

static inline __attribute__((always_inline)) uint64_t code_of(int c, int64_t v) {
  return c >= 2 ? zigzag(v) : (uint64_t)v;
}

/* A parent at distance 0 cannot be coded (0 means "no parent"): such a
 * value always goes to the overflow list. */
static inline __attribute__((always_inline)) int must_escape(int c, int64_t v, int64_t parent_id) {
  return c == 3 && v == 0 && parent_id != -1;
}

static inline void put(void *data, unsigned width, size_t i, uint64_t v) {
  switch (width) {
  case 1: ((uint8_t *)data)[i] = (uint8_t)v; break;
  case 2: ((uint16_t *)data)[i] = (uint16_t)v; break;
  case 4: ((uint32_t *)data)[i] = (uint32_t)v; break;
  default: ((uint64_t *)data)[i] = v; break;
  }
}

/* Marks the first event of every row (the calls coded against the row's
 * bases) and fills the bases; NULL when out of memory. */
static unsigned char *row_starts(const struct sp_run *run, int64_t *start_bases, int64_t *call_id_bases) {
  size_t n = run->nevents;
  unsigned char *first = calloc(n ? n : 1, 1);
  if (!first) return NULL;
  if (n) first[0] = 1;
  for (size_t r = 0; r < run->nrows; r++) {
    const struct sp_row *w = &run->rows[r];
    int has = w->count > 0 && w->offset < n && w->count <= n - w->offset;
    if (start_bases) start_bases[r] = has ? run->start[w->offset] : 0;
    if (call_id_bases) call_id_bases[r] = has ? run->call_id[w->offset] : -1;
    if (has) first[w->offset] = 1;
  }
  return first;
}

static inline __attribute__((always_inline)) void count_col(const struct sp_run *run,
                                                             const unsigned char *first, int c, uint64_t h[4]) {
  for (size_t i = 0; i < run->nevents; i++) {
    int64_t v = true_value(run, c, i, first[i]);
    uint64_t u = code_of(c, v);
    h[must_escape(c, v, run->parent_id[i]) ? 3 : u < 0xFFu ? 0 : u < 0xFFFFu ? 1 : u < 0xFFFFFFFFu ? 2 : 3]++;
  }
}

sp_status sp__delta_count(const struct sp_run *run, struct sp_delta_hist *hist) {
  memset(hist, 0, sizeof *hist);
  unsigned char *first = row_starts(run, NULL, NULL);
  if (!first) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory encoding events for schema 3");
  count_col(run, first, 0, hist->n[0]);
  count_col(run, first, 1, hist->n[1]);
  count_col(run, first, 2, hist->n[2]);
  count_col(run, first, 3, hist->n[3]);
  free(first);
  return SP_OK;
}

void sp__delta_widths(const struct sp_delta_hist *hist, unsigned widths[SP_DELTA_NCOLS]) {
  static const unsigned w[] = {1, 2, 4};
  for (int c = 0; c < SP_DELTA_NCOLS; c++) {
    const uint64_t *h = hist->n[c];
    uint64_t n = h[0] + h[1] + h[2] + h[3];
    uint64_t fit = 0, best = 8 * n;
    widths[c] = 8;
    for (int k = 0; k < 3; k++) {
      fit += h[k];
      uint64_t cost = w[k] * n + 16 * (n - fit);
      if (cost < best) {
        best = cost;
        widths[c] = w[k];
      }
    }
  }
}

/* Appends (i, v) to an overflow list of *n entries, growing it. */
static int push_pair(uint64_t **index, int64_t **value, size_t *n, size_t *cap, uint64_t i, int64_t v) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 256;
    uint64_t *ix = realloc(*index, ncap * sizeof *ix);
    if (ix) *index = ix;
    int64_t *vx = ix ? realloc(*value, ncap * sizeof *vx) : NULL;
    if (vx) *value = vx;
    if (!ix || !vx) return -1;
    *cap = ncap;
  }
  (*index)[*n] = i;
  (*value)[(*n)++] = v;
  return 0;
}

/* One pass: each value stored in `width` bytes, or stored as the type's
 * maximum and listed. */
static inline __attribute__((always_inline)) int encode_loop(const struct sp_run *run,
                                                              const unsigned char *first, int c,
                                                              struct sp_delta_col *out) {
  unsigned width = out->width;
  uint64_t limit = width == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * width)) - 1;
  size_t cap = 0;
  for (size_t i = 0; i < run->nevents; i++) {
    int64_t v = true_value(run, c, i, first[i]);
    uint64_t u = code_of(c, v);
    if (must_escape(c, v, run->parent_id[i]) || (width < 8 && u >= limit)) {
      put(out->data, width, i, limit);
      if (push_pair(&out->ov_index, &out->ov_value, &out->nov, &cap, i, v) != 0) return -1;
    } else {
      put(out->data, width, i, u);
    }
  }
  return 0;
}

static sp_status encode_col(const struct sp_run *run, const unsigned char *row_first, int c, unsigned width,
                            struct sp_delta_col *out) {
  size_t n = run->nevents;
  out->name = sp__delta_col_names[c];
  out->width = width;
  out->data = malloc((n ? n : 1) * width);
  int rc = !out->data ? -1
           : c == 0  ? encode_loop(run, row_first, 0, out)
           : c == 1  ? encode_loop(run, row_first, 1, out)
           : c == 2  ? encode_loop(run, row_first, 2, out)
                     : encode_loop(run, row_first, 3, out);
  if (rc != 0) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory encoding %zu events for schema 3", n);
  return SP_OK;
}

sp_status sp__delta_encode_widths(const struct sp_run *run, const unsigned widths[SP_DELTA_NCOLS],
                                  struct sp_delta *out) {
  memset(out, 0, sizeof *out);
  size_t k = run->nrows;
  out->start_bases = malloc((k ? k : 1) * sizeof *out->start_bases);
  out->call_id_bases = malloc((k ? k : 1) * sizeof *out->call_id_bases);
  unsigned char *first = out->start_bases && out->call_id_bases
                             ? row_starts(run, out->start_bases, out->call_id_bases)
                             : NULL;
  if (!first) {
    sp__delta_free(out);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory encoding events for schema 3");
  }
  sp_status st = SP_OK;
  for (int c = 0; c < SP_DELTA_NCOLS && st == SP_OK; c++) st = encode_col(run, first, c, widths[c], &out->col[c]);
  free(first);
  if (st != SP_OK) sp__delta_free(out);
  return st;
}

sp_status sp__delta_encode(const struct sp_run *run, struct sp_delta *out) {
  struct sp_delta_hist hist;
  unsigned widths[SP_DELTA_NCOLS];
  sp_status st = sp__delta_count(run, &hist);
  if (st != SP_OK) return st;
  sp__delta_widths(&hist, widths);
  return sp__delta_encode_widths(run, widths, out);
}

int sp__delta_code_piece(struct sp_delta_cursor *c, const int64_t *start, const int64_t *end,
                         const int64_t *call, const int64_t *parent, size_t n, uint64_t first,
                         uint32_t *const codes[4], struct sp_delta_lists *lists) {
  for (size_t i = 0; i < n; i++) {
    if (!c->any) {
      c->any = 1;
      c->start = c->start_base = start[i];
      c->call = c->call_base = call[i];
    }
    int64_t v[4] = {diff(start[i], c->start), diff(end[i], start[i]), diff(call[i], c->call),
                    parent[i] == -1 ? 0 : diff(call[i], parent[i])};
    for (int k = 0; k < 4; k++) {
      uint64_t u = code_of(k, v[k]);
      int escape = u >= 0xFFFFFFFFu || must_escape(k, v[k], parent[i]);
      codes[k][i] = escape ? 0xFFFFFFFFu : (uint32_t)u;
      if (escape && push_pair(&lists->index[k], &lists->value[k], &lists->n[k], &lists->cap[k], first + i, v[k]) != 0)
        return -1;
    }
    c->start = start[i];
    c->call = call[i];
  }
  return 0;
}

void sp__delta_lists_free(struct sp_delta_lists *l) {
  for (int k = 0; k < 4; k++) {
    free(l->index[k]);
    free(l->value[k]);
  }
  memset(l, 0, sizeof *l);
}

void sp__delta_free(struct sp_delta *d) {
  for (int c = 0; c < SP_DELTA_NCOLS; c++) {
    free(d->col[c].data);
    free(d->col[c].ov_index);
    free(d->col[c].ov_value);
  }
  free(d->start_bases);
  free(d->call_id_bases);
  memset(d, 0, sizeof *d);
}
