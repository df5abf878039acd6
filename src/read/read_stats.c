/* read_stats.c - per-region statistics over a selection of ranks.
 *
 * Count, total, min, max, mean and population std come from the stored
 * summary rows, combined across rows with the parallel Welford update of
 * Chan et al., so they never touch /events. Percentiles need the durations
 * themselves and are read only when asked for. Exclusive ("own") time comes
 * from the stored exclusive totals, or is rebuilt from the rank's call tree
 * when the writer did not compute it (-1).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"
#include "read/read_walk.h"

#define BLOCK ((size_t)1 << 20)

/* A corrupt or hostile input may hold times whose differences and sums do
 * not fit int64; they saturate (a total of 292 years says "corrupt" as
 * plainly as a wrapped one, and is not undefined behaviour). */
static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

void sp__summary_from_durations(const int64_t *start, const int64_t *end, size_t n,
                                struct sp__summary *s) {
  memset(s, 0, sizeof *s);
  if (n == 0) return;
  s->count = n;
  s->minimum = s->maximum = sat_sub(end[0], start[0]);
  s->start_minimum = start[0];
  s->end_maximum = end[0];
  for (size_t i = 0; i < n; i++) {
    int64_t d = sat_sub(end[i], start[i]);
    s->total = sat_add(s->total, d);
    if (d < s->minimum) s->minimum = d;
    if (d > s->maximum) s->maximum = d;
    if (start[i] < s->start_minimum) s->start_minimum = start[i];
    if (end[i] > s->end_maximum) s->end_maximum = end[i];
  }
  s->first = sat_sub(end[0], start[0]);
  s->last = sat_sub(end[n - 1], start[n - 1]);
  /* two passes, like the writer: the mean first, then squared deviations */
  s->mean = (double)s->total / (double)n;
  double m2 = 0;
  for (size_t i = 0; i < n; i++) {
    double dev = (double)sat_sub(end[i], start[i]) - s->mean;
    m2 += dev * dev;
  }
  s->m2 = m2;
}

void sp__summary_merge(struct sp__summary *a, const struct sp__summary *b) {
  if (b->count == 0) return;
  if (a->count == 0) {
    *a = *b;
    return;
  }
  double na = (double)a->count, nb = (double)b->count, n = na + nb;
  double delta = b->mean - a->mean;
  a->mean += delta * nb / n;
  a->m2 += b->m2 + delta * delta * na * nb / n;
  a->total = sat_add(a->total, b->total);
  if (b->minimum < a->minimum) a->minimum = b->minimum;
  if (b->maximum > a->maximum) a->maximum = b->maximum;
  /* "first"/"last" are chronological: the call that started first, the
   * call of the row that ended last */
  if (b->start_minimum < a->start_minimum) {
    a->first = b->first;
    a->start_minimum = b->start_minimum;
  }
  if (b->end_maximum >= a->end_maximum) {
    a->last = b->last;
    a->end_maximum = b->end_maximum;
  }
  if (b->gpu_count) {
    a->gpu_count += b->gpu_count;
    a->gpu_total = sat_add(a->gpu_total > 0 ? a->gpu_total : 0, b->gpu_total);
  }
  a->count += b->count;
}

static void swap64(int64_t *a, int64_t *b) {
  int64_t t = *a;
  *a = *b;
  *b = t;
}

/* Place the k-th smallest at v[k], smaller ones before it, larger after it
 * (the classic partition-based selection; expected linear time). */
static void select_kth(int64_t *v, size_t n, size_t k) {
  size_t l = 0, ir = n - 1;
  for (;;) {
    if (ir <= l + 1) {
      if (ir == l + 1 && v[ir] < v[l]) swap64(&v[l], &v[ir]);
      return;
    }
    size_t mid = l + (ir - l) / 2;
    swap64(&v[mid], &v[l + 1]);
    if (v[l] > v[ir]) swap64(&v[l], &v[ir]);
    if (v[l + 1] > v[ir]) swap64(&v[l + 1], &v[ir]);
    if (v[l] > v[l + 1]) swap64(&v[l], &v[l + 1]);
    size_t i = l + 1, j = ir;
    int64_t a = v[l + 1];
    for (;;) {
      do i++; while (v[i] < a);
      do j--; while (v[j] > a);
      if (j < i) break;
      swap64(&v[i], &v[j]);
    }
    v[l + 1] = v[j];
    v[j] = a;
    if (j >= k) ir = j - 1;
    if (j <= k) l = i;
  }
}

/* numpy's "linear" method: the virtual index of pct among n values, the
 * two ranks around it and the weight of the upper, so that results agree
 * with np.percentile to the last bit where possible. */
static void linear_index(size_t n, double pct, size_t *lo, size_t *hi, double *gamma) {
  double q = pct / 100.0;
  double vi = (double)n * q + (1.0 + q * (1.0 - 1.0 - 1.0)) - 1.0;
  double fl = floor(vi);
  if (vi >= (double)(n - 1)) {
    *lo = *hi = n - 1;
    *gamma = 0;
  } else if (vi < 0) {
    *lo = *hi = 0;
    *gamma = 0;
  } else {
    *lo = (size_t)fl;
    *hi = *lo + 1;
    *gamma = vi - fl;
  }
}

static double lerp(double a, double b, double gamma) {
  double diff = b - a;
  return gamma >= 0.5 ? b - diff * (1.0 - gamma) : a + diff * gamma;
}

/* The smallest of v[at, n) moved to v[at]. */
static void min_to(int64_t *v, size_t n, size_t at) {
  size_t m = at;
  for (size_t i = at + 1; i < n; i++)
    if (v[i] < v[m]) m = i;
  swap64(&v[at], &v[m]);
}

void sp__percentiles(int64_t *v, size_t n, const double *pct, size_t k, double *out) {
  /* v[0, base) holds the ranks below base and v[base - 1] (and v[placed])
   * exactly its rank: each selection runs on v[base, n) only, the part
   * above the previous percentile's */
  size_t base = 0, placed = SIZE_MAX;
  for (size_t j = 0; j < k; j++) {
    if (n == 0) {
      out[j] = NAN;
      continue;
    }
    size_t lo, hi;
    double gamma;
    linear_index(n, pct[j], &lo, &hi, &gamma);
    int lo_known = lo + 1 == base || lo == placed, hi_known = hi + 1 == base || hi == placed;
    if ((lo < base && !lo_known) || (hi != lo && hi < base && !hi_known)) {
      base = 0; /* below what was placed (percentiles out of order): from the start */
      placed = SIZE_MAX;
    }
    if (lo >= base) {
      select_kth(v + base, n - base, lo - base);
      placed = SIZE_MAX;
      base = lo + 1;
    }
    if (hi != lo && hi >= base) { /* hi == base: the smallest above */
      min_to(v, n, hi);
      placed = lo;
      base = hi + 1;
    }
    out[j] = lerp((double)v[lo], (double)v[hi], gamma);
  }
}

double sp__percentile(int64_t *v, size_t n, double pct) {
  double x;
  sp__percentiles(v, n, &pct, 1, &x);
  return x;
}

/* Durations of the given rows, concatenated. */
static sp_status gather_durations(sp_results *r, const size_t *rows, size_t nrows, uint64_t count,
                                  int64_t **out) {
  *out = NULL;
  if (count > ((uint64_t)1 << 36))
    return sp__set_error(SP_ERR_LIMIT, "too many events (%llu) to compute percentiles",
                         (unsigned long long)count);
  int64_t *d = malloc((count ? (size_t)count : 1) * sizeof *d);
  int64_t *e = malloc(BLOCK * sizeof *e);
  if (!d || !e) {
    free(d);
    free(e);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory for %llu durations",
                         (unsigned long long)count);
  }
  sp__progress_begin(r, count);
  size_t at = 0;
  sp_status st = SP_OK;
  for (size_t k = 0; k < nrows && st == SP_OK; k++) {
    uint64_t c = r->rows[rows[k]].count;
    for (uint64_t done = 0; done < c && st == SP_OK;) {
      size_t n = c - done < BLOCK ? (size_t)(c - done) : BLOCK;
      if (at + n > count) {
        st = sp__set_error(SP_ERR_FORMAT, "the event counts disagree with the summary rows");
        break;
      }
      st = sp__row_read_durations(r, rows[k], done, n, d + at, e);
      done += n;
      at += n;
      sp__progress(r, n);
    }
  }
  free(e);
  if (st != SP_OK) {
    free(d);
    return st;
  }
  *out = d;
  return SP_OK;
}

/* Own time by walking the calls (read_walk.c): a call's tag is its region
 * and lane; its time leaves its parent's region when they share a lane. */
struct own_walk {
  int64_t *own;
};
static sp_status own_visit(void *ctx, const struct sp__walk_call *c, const uint64_t *ptag,
                           uint64_t *tag) {
  int64_t *own = ((struct own_walk *)ctx)->own, d = sat_sub(c->end, c->start);
  own[c->region] = sat_add(own[c->region], d);
  if (ptag && (uint32_t)*ptag == c->lane) own[*ptag >> 32] = sat_sub(own[*ptag >> 32], d);
  *tag = (uint64_t)c->region << 32 | c->lane;
  return SP_OK;
}

/* Own time of every region on `rank`, from the full call tree of the rank. */
sp_status sp__rank_own_times(sp_results *r, int64_t rank) {
  int64_t *own = calloc(r->nregions ? r->nregions : 1, sizeof *own);
  if (!own) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  struct own_walk ow = {own};
  sp_status st = SP_OK;
  int walked = sp__walk_calls(r, rank, own_visit, &ow, &st);
  if (walked < 0) {
    free(own);
    return st;
  }
  if (!walked) {
    sp_call *calls = NULL;
    size_t n = 0;
    memset(own, 0, (r->nregions ? r->nregions : 1) * sizeof *own);
    st = sp__rank_calls(r, rank, &calls, &n, NULL);
    if (st != SP_OK) {
      free(own);
      return st;
    }
    for (size_t i = 0; i < n; i++) {
      int64_t d = sat_sub(calls[i].end_ns, calls[i].start_ns);
      own[calls[i].region] = sat_add(own[calls[i].region], d);
      if (calls[i].parent >= 0) {
        uint32_t pr = calls[calls[i].parent].region;
        own[pr] = sat_sub(own[pr], d);
      }
    }
    free(calls);
  }
  /* each region's rows are ordered by rank: the rank's are found, not
   * scanned for (a scan per rank was quadratic in the ranks) */
  for (size_t region = 0; region < r->nregions; region++) {
    int first = 1;
    for (size_t k = sp__region_rank_first(r, region, rank); k < r->region_row_start[region + 1]; k++) {
      struct sp__rrow *w = &r->rows[r->region_rows[k]];
      if (w->rank != rank) break;
      w->own = first ? own[region] : 0;
      w->own_known = 1;
      first = 0;
    }
  }
  free(own);
  return SP_OK;
}

static sp_status region_stats(sp_results *r, size_t region, const sp_filter *f, int64_t one_rank,
                              unsigned flags, sp_region_stats *out) {
  memset(out, 0, sizeof *out);
  out->mean_ns = out->std_ns = out->imbalance = out->excess_ns = NAN;
  out->p50_ns = out->p95_ns = out->p99_ns = NAN;
  if (!r || region >= r->nregions)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "no region %zu", region);
  size_t lo = r->region_row_start[region], hi = r->region_row_start[region + 1];
  size_t *sel = malloc((hi - lo + 1) * sizeof *sel);
  if (!sel) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  size_t nsel = 0;
  if (one_rank >= 0) /* the rank's rows only (a scan per rank and region was quadratic) */
    for (size_t k = sp__region_rank_first(r, region, one_rank); k < hi && r->rows[r->region_rows[k]].rank == one_rank; k++)
      sel[nsel++] = r->region_rows[k];
  else
    for (size_t k = lo; k < hi; k++)
      if (sp_filter_match_rank(f, r->rows[r->region_rows[k]].rank)) sel[nsel++] = r->region_rows[k];
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = SP_OK;
  struct sp__summary acc;
  memset(&acc, 0, sizeof acc);
  /* rows are ordered by rank, so one rank's rows are adjacent */
  int64_t *rank_total = calloc(nsel + 1, sizeof *rank_total);
  size_t nranks = 0;
  if (!rank_total) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t k = 0; k < nsel && st == SP_OK; k++) {
    const struct sp__summary *s;
    st = sp__row_summary(r, sel[k], &s);
    if (st != SP_OK) break;
    sp__summary_merge(&acc, s);
    if (k == 0 || r->rows[sel[k]].rank != r->rows[sel[k - 1]].rank) nranks++;
    if (s->count) rank_total[nranks - 1] = sat_add(rank_total[nranks - 1], s->total);
  }
  double sum_rank = 0, max_rank = 0;
  for (size_t i = 0; i < nranks; i++) {
    sum_rank += (double)rank_total[i];
    if (i == 0 || (double)rank_total[i] > max_rank) max_rank = (double)rank_total[i];
  }
  free(rank_total);
  if (st == SP_OK) {
    out->count = acc.count;
    out->ranks = nranks;
    if (acc.count > 0) {
      out->total_ns = acc.total;
      out->min_ns = acc.minimum;
      out->max_ns = acc.maximum;
      out->first_ns = acc.first;
      out->last_ns = acc.last;
      out->mean_ns = acc.mean;
      out->std_ns = sqrt(acc.m2 > 0 ? acc.m2 / (double)acc.count : 0.0);
      out->first_start_ns = acc.start_minimum;
      out->last_end_ns = acc.end_maximum;
    }
    if (nranks > 0) {
      double mean_rank = sum_rank / (double)nranks;
      out->imbalance = mean_rank > 0 ? max_rank / mean_rank : 1.0;
      out->excess_ns = max_rank - mean_rank;
    }
  }
  if (st == SP_OK && (flags & SP_STATS_PERCENTILES) && !r->aggregate && acc.count > 0) {
    int64_t *d;
    st = gather_durations(r, sel, nsel, acc.count, &d);
    if (st == SP_OK) {
      static const double pct[3] = {50, 95, 99};
      double p[3];
      sp__percentiles(d, (size_t)acc.count, pct, 3, p);
      out->p50_ns = p[0];
      out->p95_ns = p[1];
      out->p99_ns = p[2];
      out->has_percentiles = 1;
      free(d);
    }
  }
  if (st == SP_OK && (flags & SP_STATS_OWN)) {
    int known = 1;
    int64_t own = 0;
    for (size_t k = 0; k < nsel && st == SP_OK && known; k++) {
      struct sp__rrow *w = &r->rows[sel[k]];
      if (w->exclusive >= 0) {
        own = sat_add(own, w->exclusive);
      } else if (r->aggregate) {
        known = 0;
      } else {
        if (!w->own_known) st = sp__rank_own_times(r, w->rank);
        own = sat_add(own, w->own);
      }
    }
    if (st == SP_OK && known) {
      out->has_own = 1;
      out->own_ns = own;
    }
  }
  sp__h5_quiet_end(&q);
  free(sel);
  return st;
}

static sp_status region_gpu(sp_results *r, size_t region, const sp_filter *f, int64_t one_rank,
                            uint64_t *count, int64_t *total_ns) {
  if (!r || region >= r->nregions || !count || !total_ns)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_region_gpu: no region %zu", region);
  *count = 0;
  *total_ns = 0;
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = SP_OK;
  for (size_t k = r->region_row_start[region]; k < r->region_row_start[region + 1] && st == SP_OK; k++) {
    size_t row = r->region_rows[k];
    if (one_rank >= 0 ? r->rows[row].rank != one_rank : !sp_filter_match_rank(f, r->rows[row].rank)) continue;
    const struct sp__summary *s;
    if ((st = sp__row_summary(r, row, &s)) == SP_OK && s->gpu_count) {
      *count += s->gpu_count;
      *total_ns += s->gpu_total;
    }
  }
  sp__h5_quiet_end(&q);
  return st;
}

sp_status sp_results_region_gpu(sp_results *r, size_t region, const sp_filter *f, uint64_t *count,
                                int64_t *total_ns) {
  return region_gpu(r, region, f, -1, count, total_ns);
}

sp_status sp_results_region_rank_gpu(sp_results *r, size_t region, int64_t rank, uint64_t *count,
                                     int64_t *total_ns) {
  if (rank < 0) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_region_rank_gpu: rank %lld", (long long)rank);
  return region_gpu(r, region, NULL, rank, count, total_ns);
}

sp_status sp_results_region_stats(sp_results *r, size_t region, const sp_filter *f,
                                  unsigned flags, sp_region_stats *out) {
  if (!out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_region_stats: out is NULL");
  return region_stats(r, region, f, -1, flags, out);
}

sp_status sp_results_region_rank_stats(sp_results *r, size_t region, int64_t rank, unsigned flags,
                                       sp_region_stats *out) {
  if (!out || rank < 0)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_region_rank_stats: bad argument");
  return region_stats(r, region, NULL, rank, flags, out);
}
