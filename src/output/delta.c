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

static const char *const col_names[SP_DELTA_NCOLS] = {"start_gaps", "durations", "call_id_gaps",
                                                      "parent_offsets"};

/* Two's-complement differences: wrap instead of overflowing (signed overflow
 * is undefined), which the reader's wrapping sums undo exactly. */
static int64_t diff(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ ((uint64_t)0 - ((uint64_t)v >> 63)); }

/* The true value of column c for event i (first: the first event of its row)
 * and the unsigned code stored for it. */
static int64_t true_value(const struct sp_run *run, int c, size_t i, int first) {
  switch (c) {
  case 0: return first ? 0 : diff(run->start[i], run->start[i - 1]);
  case 1: return diff(run->end[i], run->start[i]);
  case 2: return first ? 0 : diff(run->call_id[i], run->call_id[i - 1]);
  default: return run->parent_id[i] == -1 ? 0 : diff(run->call_id[i], run->parent_id[i]);
  }
}

static uint64_t code_of(int c, int64_t v) { return c >= 2 ? zigzag(v) : (uint64_t)v; }

/* A parent at distance 0 cannot be coded (0 means "no parent"): such a
 * value always goes to the overflow list. */
static int must_escape(const struct sp_run *run, int c, size_t i, int64_t v) {
  return c == 3 && v == 0 && run->parent_id[i] != -1;
}

static void put(void *data, unsigned width, size_t i, uint64_t v) {
  switch (width) {
  case 1: ((uint8_t *)data)[i] = (uint8_t)v; break;
  case 2: ((uint16_t *)data)[i] = (uint16_t)v; break;
  case 4: ((uint32_t *)data)[i] = (uint32_t)v; break;
  default: ((uint64_t *)data)[i] = v; break;
  }
}

static sp_status encode_col(const struct sp_run *run, const unsigned char *row_first, int c,
                            struct sp_delta_col *out) {
  size_t n = run->nevents;
  /* fits[k]: values whose code fits 1, 2, 4 bytes (below the all-ones
   * escape), counted at the narrowest width */
  size_t fits[3] = {0, 0, 0}, special = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t v = true_value(run, c, i, row_first[i]);
    uint64_t u = code_of(c, v);
    if (must_escape(run, c, i, v)) special++;
    else if (u < 0xFFu) fits[0]++;
    else if (u < 0xFFFFu) fits[1]++;
    else if (u < 0xFFFFFFFFu) fits[2]++;
  }
  static const unsigned widths[] = {1, 2, 4, 8};
  unsigned width = 8;
  size_t nov = special, fit = 0;
  uint64_t best = 8 * (uint64_t)n + 16 * (uint64_t)special;
  for (int k = 0; k < 3; k++) {
    fit += fits[k];
    uint64_t cost = widths[k] * (uint64_t)n + 16 * (uint64_t)(n - fit);
    if (cost < best) {
      best = cost;
      width = widths[k];
      nov = n - fit;
    }
  }
  out->name = col_names[c];
  out->width = width;
  out->data = malloc((n ? n : 1) * width);
  out->ov_index = malloc((nov ? nov : 1) * sizeof *out->ov_index);
  out->ov_value = malloc((nov ? nov : 1) * sizeof *out->ov_value);
  if (!out->data || !out->ov_index || !out->ov_value)
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory encoding %zu events for schema 3", n);
  uint64_t limit = width == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * width)) - 1;
  for (size_t i = 0; i < n; i++) {
    int64_t v = true_value(run, c, i, row_first[i]);
    uint64_t u = code_of(c, v);
    if (must_escape(run, c, i, v) || (width < 8 && u >= limit)) {
      put(out->data, width, i, limit);
      out->ov_index[out->nov] = i;
      out->ov_value[out->nov++] = v;
    } else {
      put(out->data, width, i, u);
    }
  }
  return SP_OK;
}

sp_status sp__delta_encode(const struct sp_run *run, struct sp_delta *out) {
  memset(out, 0, sizeof *out);
  size_t n = run->nevents, k = run->nrows;
  unsigned char *row_first = calloc(n ? n : 1, 1);
  out->start_bases = malloc((k ? k : 1) * sizeof *out->start_bases);
  out->call_id_bases = malloc((k ? k : 1) * sizeof *out->call_id_bases);
  if (!row_first || !out->start_bases || !out->call_id_bases) {
    free(row_first);
    sp__delta_free(out);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory encoding events for schema 3");
  }
  if (n) row_first[0] = 1;
  for (size_t r = 0; r < k; r++) {
    const struct sp_row *w = &run->rows[r];
    int has = w->count > 0 && w->offset < n && w->count <= n - w->offset;
    out->start_bases[r] = has ? run->start[w->offset] : 0;
    out->call_id_bases[r] = has ? run->call_id[w->offset] : -1;
    if (has) row_first[w->offset] = 1;
  }
  sp_status st = SP_OK;
  for (int c = 0; c < SP_DELTA_NCOLS && st == SP_OK; c++) st = encode_col(run, row_first, c, &out->col[c]);
  free(row_first);
  if (st != SP_OK) sp__delta_free(out);
  return st;
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
