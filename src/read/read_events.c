/* read_events.c - lazy event access: a row's slice of the /events columns (or
 * of a hierarchical region's datasets) read with hyperslabs, in pieces of any
 * size, so exporters stream large files in bounded memory. Summaries of rows
 * that have no stored summary (hierarchical files, writers that skip it) are
 * computed here on first use and cached.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "output/plan.h"
#include "read/read_internal.h"
#include "read/read_walk.h"

#define BLOCK ((size_t)1 << 20)

void sp__progress_begin(sp_results *r, uint64_t total) {
  r->progress_done = 0;
  r->progress_total = total;
}

void sp__progress(sp_results *r, uint64_t add) {
  r->progress_done += add;
  if (r->progress) r->progress(r->progress_ctx, r->progress_done, r->progress_total);
}

/* ---- virtual columns ---------------------------------------------------------
 * A column that is a virtual dataset of this file (its sources checked at
 * open, sp__check_storage) is read from its sources directly: HDF5 1.10
 * walks every mapping on every read through it (0.3 ms per 4096 values at
 * 768 mappings, BENCHMARKS "Round 3"), where a binary search finds the few
 * a slice needs. A mapping list this cannot follow (not one block of
 * values on each side, overlapping, gaps) leaves the column to HDF5. */
struct sp__vmap {
  uint64_t voff, n, soff;
  size_t src;
};
struct sp__vcol {
  hid_t ds;
  struct sp__vmap *map; /* NULL: read through HDF5 */
  size_t nmap;
  hid_t *src;
  size_t nsrc;
};

static int cmp_vmap(const void *a, const void *b) {
  uint64_t x = ((const struct sp__vmap *)a)->voff, y = ((const struct sp__vmap *)b)->voff;
  return (x > y) - (x < y);
}

/* One block of values selected in a 1-D space: its start and length. */
static int one_block(hid_t space, uint64_t *start, uint64_t *n) {
  hsize_t lo = 0, hi = 0;
  hssize_t np = H5Sget_select_npoints(space);
  if (H5Sget_simple_extent_ndims(space) != 1 || np <= 0 || H5Sget_select_bounds(space, &lo, &hi) < 0 ||
      hi - lo + 1 != (hsize_t)np)
    return 0;
  *start = lo;
  *n = (uint64_t)np;
  return 1;
}

static void vcol_build(sp_results *r, struct sp__vcol *v) {
  hid_t dcpl = H5Dget_create_plist(v->ds);
  size_t count = 0;
  char name[1024];
  int ok = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL && H5Pget_virtual_count(dcpl, &count) >= 0 && count;
  if (ok && !(v->map = calloc(count, sizeof *v->map))) ok = 0;
  for (size_t i = 0; ok && i < count; i++) {
    hid_t vs = H5Pget_virtual_vspace(dcpl, i), ss = H5Pget_virtual_srcspace(dcpl, i);
    uint64_t vn = 0, sn = 0;
    ssize_t dl = H5Pget_virtual_dsetname(dcpl, i, name, sizeof name);
    ok = vs >= 0 && ss >= 0 && one_block(vs, &v->map[i].voff, &vn) && one_block(ss, &v->map[i].soff, &sn) &&
         vn == sn && dl > 0 && (size_t)dl < sizeof name;
    if (vs >= 0) H5Sclose(vs);
    if (ss >= 0) H5Sclose(ss);
    v->map[i].n = vn;
    size_t k = v->nsrc;
    /* a block's segments come together: the last source is the likely one */
    if (ok && k) {
      char have[1024];
      ssize_t hl = H5Iget_name(v->src[k - 1], have, sizeof have);
      if (hl > 0 && (size_t)hl < sizeof have && strcmp(have[0] == '/' ? have + 1 : have, name[0] == '/' ? name + 1 : name) == 0)
        k--;
    }
    if (ok && k == v->nsrc) {
      hid_t *grown = realloc(v->src, (v->nsrc + 1) * sizeof *grown);
      hid_t d = grown ? H5Dopen2(r->file, name, H5P_DEFAULT) : H5I_INVALID_HID;
      if (grown) v->src = grown;
      ok = d >= 0;
      if (ok) v->src[v->nsrc++] = d;
    }
    v->map[i].src = k;
  }
  if (ok) {
    qsort(v->map, count, sizeof *v->map, cmp_vmap);
    for (size_t i = 1; ok && i < count; i++) ok = v->map[i - 1].voff + v->map[i - 1].n == v->map[i].voff;
    ok = ok && v->map[0].voff == 0;
  }
  v->nmap = ok ? count : 0;
  if (!ok) {
    free(v->map);
    v->map = NULL;
  }
  if (dcpl >= 0) H5Pclose(dcpl);
}

/* Only the event columns r keeps open: a handle opened for one read (a
 * hierarchical region's dataset) may be reused by another dataset later. */
static const struct sp__vcol *vcol_of(sp_results *r, hid_t ds) {
  if (ds != r->ds_start && ds != r->ds_end && ds != r->ds_call && ds != r->ds_parent && ds != r->ds_thread &&
      ds != r->ds_task && ds != r->ds_gpu && ds != r->ds_await)
    return NULL;
  for (size_t i = 0; i < r->nvcols; i++)
    if (r->vcols[i].ds == ds) return &r->vcols[i];
  hid_t dcpl = H5Dget_create_plist(ds);
  int virt = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL;
  if (dcpl >= 0) H5Pclose(dcpl);
  struct sp__vcol *grown = realloc(r->vcols, (r->nvcols + 1) * sizeof *grown);
  if (!grown) return NULL;
  r->vcols = grown;
  struct sp__vcol *v = &r->vcols[r->nvcols++];
  memset(v, 0, sizeof *v);
  v->ds = ds;
  if (virt) vcol_build(r, v);
  return v;
}

void sp__vcols_free(sp_results *r) {
  for (size_t i = 0; i < r->nvcols; i++) {
    for (size_t k = 0; k < r->vcols[i].nsrc; k++) H5Dclose(r->vcols[i].src[k]);
    free(r->vcols[i].src);
    free(r->vcols[i].map);
  }
  free(r->vcols);
  r->vcols = NULL;
  r->nvcols = 0;
}

static herr_t read_plain(hid_t ds, hid_t memtype, uint64_t offset, size_t n, void *out) {
  hid_t fs = H5Dget_space(ds);
  hsize_t off[1] = {offset}, cnt[1] = {n};
  hid_t ms = H5Screate_simple(1, cnt, NULL);
  herr_t rc = -1;
  if (fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0)
    rc = H5Dread(ds, memtype, ms, fs, H5P_DEFAULT, out);
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  return rc;
}

static herr_t read_virtual(const struct sp__vcol *v, hid_t memtype, uint64_t offset, size_t n, void *out) {
  size_t lo = 0, hi = v->nmap, size = H5Tget_size(memtype);
  while (hi - lo > 1) { /* the last mapping starting at or before offset */
    size_t mid = lo + (hi - lo) / 2;
    if (v->map[mid].voff <= offset) lo = mid;
    else hi = mid;
  }
  char *dst = out;
  for (size_t i = lo; n && i < v->nmap; i++) {
    const struct sp__vmap *m = &v->map[i];
    if (offset < m->voff || offset >= m->voff + m->n) return -1;
    size_t k = m->voff + m->n - offset < n ? (size_t)(m->voff + m->n - offset) : n;
    if (read_plain(v->src[m->src], memtype, m->soff + (offset - m->voff), k, dst) < 0) return -1;
    dst += k * size;
    offset += k;
    n -= k;
  }
  return n ? -1 : 0;
}

sp_status sp__row_cuts(sp_results *r, size_t row, uint64_t **cuts, size_t *n) {
  *cuts = NULL;
  *n = 0;
  const struct sp__rrow *w = &r->rows[row];
  if (w->group || r->mem_start || w->count < 2 || r->ds_start < 0) return SP_OK;
  const struct sp__vcol *v = vcol_of(r, r->ds_start);
  if (!v || !v->map) return SP_OK;
  size_t lo = 0, hi = v->nmap; /* the first mapping beginning after the row's first event */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v->map[mid].voff <= w->offset) lo = mid + 1;
    else hi = mid;
  }
  size_t k = 0;
  while (lo + k < v->nmap && v->map[lo + k].voff < w->offset + w->count) k++;
  if (!k) return SP_OK;
  if (!(*cuts = malloc(k * sizeof **cuts))) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t i = 0; i < k; i++) (*cuts)[i] = v->map[lo + i].voff - w->offset;
  *n = k;
  return SP_OK;
}

static sp_status read_slice_as(sp_results *r, hid_t ds, hid_t memtype, uint64_t offset, size_t n,
                               void *out, const char *what) {
  const struct sp__vcol *v = vcol_of(r, ds);
  if (v && v->map) {
    if (read_virtual(v, memtype, offset, n, out) < 0)
      return sp__set_error(SP_ERR_FORMAT, "%s: cannot read %s [%llu, +%zu) through its virtual mappings",
                           r->path ? r->path : "<image>", what, (unsigned long long)offset, n);
    return SP_OK;
  }
  if (read_plain(ds, memtype, offset, n, out) < 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: cannot read %s [%llu, +%zu) (truncated or corrupt file, or a "
                         "compression filter this HDF5 lacks)",
                         r->path ? r->path : "<image>", what, (unsigned long long)offset, n);
  return SP_OK;
}

static void fill_minus_one(int64_t *v, size_t n) {
  if (v)
    for (size_t i = 0; i < n; i++) v[i] = -1;
}

static sp_status read_slice(sp_results *r, hid_t ds, uint64_t offset, size_t n, int64_t *out,
                            const char *what) {
  return read_slice_as(r, ds, H5T_NATIVE_INT64, offset, n, out, what);
}

/* ---- schema 3 ---------------------------------------------------------------
 * Upstream's schema 3 stores a row's starts as deltas (the first absolute,
 * then start[i] - start[i-1] within the row) and each call's duration. A
 * start is a running sum over the row; each row keeps where its sum stands,
 * so reading a row front to back in pieces (what every caller does) reads
 * each delta once, and a jump back restarts the row. Sums wrap like the
 * writer's differences, so any value round-trips and a corrupt one cannot
 * overflow. */

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* Starts of the row's events [first, first+n) into out, moving the row's
 * cursor. */
static sp_status row_starts(sp_results *r, struct sp__rrow *w, uint64_t first, size_t n, int64_t *out) {
  const char *what = sp__plan_path(SP_DS_START_DELTAS);
  if (first < w->start_next) {
    w->start_next = 0;
    w->start_acc = 0;
  }
  sp_status st = SP_OK;
  if (first > w->start_next) { /* skip ahead, summing what lies between */
    size_t cap = first - w->start_next < BLOCK ? (size_t)(first - w->start_next) : BLOCK;
    int64_t *tmp = malloc(cap * sizeof *tmp);
    if (!tmp) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    while (st == SP_OK && w->start_next < first) {
      size_t k = first - w->start_next < cap ? (size_t)(first - w->start_next) : cap;
      st = read_slice(r, r->ds_start, w->offset + w->start_next, k, tmp, what);
      for (size_t i = 0; st == SP_OK && i < k; i++) w->start_acc = wrap_add(w->start_acc, tmp[i]);
      if (st == SP_OK) w->start_next += k;
    }
    free(tmp);
  }
  if (st == SP_OK) st = read_slice(r, r->ds_start, w->offset + first, n, out, what);
  if (st != SP_OK) {
    w->start_next = 0; /* unknown: restart next time */
    w->start_acc = 0;
    return st;
  }
  for (size_t i = 0; i < n; i++) out[i] = w->start_acc = wrap_add(w->start_acc, out[i]);
  w->start_next = first + n;
  return SP_OK;
}

static sp_status row_read_deltas(sp_results *r, struct sp__rrow *w, uint64_t first, size_t n, int64_t *start,
                                 int64_t *end) {
  int64_t *own = NULL;
  if (end && !start && !(start = own = malloc(n * sizeof *start)))
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  sp_status st = SP_OK;
  if (start) st = row_starts(r, w, first, n, start);
  if (st == SP_OK && end) {
    st = read_slice(r, r->ds_end, w->offset + first, n, end, sp__plan_path(SP_DS_DURATIONS));
    for (size_t i = 0; st == SP_OK && i < n; i++) end[i] = wrap_add(start[i], end[i]);
  }
  free(own);
  return st;
}

/* In-memory events (a JSON profile, a native trace: read_native.c). */
static void mem_copy(const int64_t *col, uint64_t off, size_t n, int64_t *out) {
  if (!out) return;
  if (col) memcpy(out, col + off, n * sizeof *out);
  else fill_minus_one(out, n);
}

static sp_status read_hier_slice(sp_results *r, const struct sp__rrow *w, const char *name,
                                 uint64_t first, size_t n, int64_t *out) {
  char *p = sp__asprintf("%s/%s", w->group, name);
  if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  hid_t ds = H5Dopen2(r->file, p, H5P_DEFAULT);
  sp_status st = ds < 0 ? sp__set_error(SP_ERR_FORMAT, "%s: cannot open %s",
                                        r->path ? r->path : "<image>", p)
                        : read_slice(r, ds, first, n, out, p);
  if (ds >= 0) H5Dclose(ds);
  free(p);
  return st;
}

static sp_status read_threads(sp_results *r, uint64_t off, size_t n, int64_t *thread) {
  if (r->ds_thread < 0) {
    fill_minus_one(thread, n);
    return SP_OK;
  }
  sp_status st = read_slice(r, r->ds_thread, off, n, thread, sp__plan_path(SP_DS_THREAD_IDS));
  /* files of earlier versions stored uint32, "no thread" as all ones */
  if (st == SP_OK && r->thread_u32)
    for (size_t i = 0; i < n; i++)
      if (thread[i] == 0xFFFFFFFFll) thread[i] = -1;
  return st;
}

sp_status sp__row_read(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *start,
                       int64_t *end, int64_t *call, int64_t *parent, int64_t *thread) {
  struct sp__rrow *w = &r->rows[row];
  if (first > w->count || n > w->count - first)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "events [%llu, +%zu) are outside the %llu events of region '%s' rank %lld",
                         (unsigned long long)first, n, (unsigned long long)w->count,
                         r->names[w->region], (long long)w->rank);
  if (n == 0) return SP_OK;
  sp_status st = SP_OK;
  if (w->group) {
    if (start) st = read_hier_slice(r, w, sp__plan(SP_DS_H1_START_TIMES)->name, first, n, start);
    if (st == SP_OK && end) st = read_hier_slice(r, w, sp__plan(SP_DS_H1_END_TIMES)->name, first, n, end);
    fill_minus_one(call, n);
    fill_minus_one(parent, n);
    fill_minus_one(thread, n);
  } else if (r->mem_start) {
    uint64_t off = w->offset + first;
    mem_copy(r->mem_start, off, n, start);
    mem_copy(r->mem_end, off, n, end);
    mem_copy(r->mem_call, off, n, call);
    mem_copy(r->mem_call ? r->mem_parent : NULL, off, n, parent);
    mem_copy(r->mem_thread, off, n, thread);
  } else {
    uint64_t off = w->offset + first;
    if (r->delta) st = row_read_deltas(r, w, first, n, start, end);
    if (!r->delta && start) st = read_slice(r, r->ds_start, off, n, start, sp__plan_path(SP_DS_START_TIMES));
    if (!r->delta && st == SP_OK && end) st = read_slice(r, r->ds_end, off, n, end, sp__plan_path(SP_DS_END_TIMES));
    if (st == SP_OK && call) {
      if (r->ds_call >= 0) st = read_slice(r, r->ds_call, off, n, call, sp__plan_path(SP_DS_CALL_IDS));
      else fill_minus_one(call, n);
    }
    if (st == SP_OK && parent) {
      if (r->ds_parent >= 0) st = read_slice(r, r->ds_parent, off, n, parent, sp__plan_path(SP_DS_PARENT_IDS));
      else fill_minus_one(parent, n);
    }
    if (st == SP_OK && thread) st = read_threads(r, off, n, thread);
  }
  if (st == SP_OK && w->clock_offset) /* onto rank 0's clock (read_open.c) */
    for (size_t i = 0; i < n; i++) {
      if (start) start[i] = wrap_add(start[i], w->clock_offset); /* a corrupt offset is refused below */
      if (end) end[i] = wrap_add(end[i], w->clock_offset);
    }
  /* Consumers subtract times of calls (trees, stacks, exporters): a time
   * at or beyond +-2^62 ns (146 years; a corrupt start near INT64_MIN) is
   * refused here as well as a negative duration, so any two times'
   * difference fits in int64 (strictly within: -2^62 to 2^62 is 2^63). */
  int64_t d;
  if (st == SP_OK && start && end)
    for (size_t i = 0; i < n; i++) {
      int far = start[i] <= -SP__TIME_LIMIT || start[i] >= SP__TIME_LIMIT || end[i] <= -SP__TIME_LIMIT ||
                end[i] >= SP__TIME_LIMIT;
      if (far)
        return sp__set_error(SP_ERR_FORMAT,
                             "%s: call %llu of region '%s' on rank %lld runs from %lld to %lld ns, at or beyond "
                             "the +-2^62 ns a profile's times must stay within; the events are corrupt",
                             r->path ? r->path : "<image>", (unsigned long long)(first + i),
                             r->names[w->region], (long long)w->rank, (long long)start[i], (long long)end[i]);
      if (__builtin_sub_overflow(end[i], start[i], &d) || d < 0)
        return sp__set_error(SP_ERR_FORMAT,
                             "%s: call %llu of region '%s' on rank %lld ends (%lld) before it "
                             "starts (%lld); the events are corrupt",
                             r->path ? r->path : "<image>", (unsigned long long)(first + i),
                             r->names[w->region], (long long)w->rank, (long long)end[i],
                             (long long)start[i]);
    }
  if (st == SP_OK && start && end && first <= w->checked && first + n > w->checked)
    w->checked = first + n;
  return st;
}

static int64_t sat_sub(int64_t a, int64_t b) {
  int64_t x;
  if (__builtin_sub_overflow(a, b, &x)) return b < 0 ? INT64_MAX : INT64_MIN;
  return x;
}

sp_status sp__row_read_durations(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *dur,
                                 int64_t *scratch) {
  struct sp__rrow *w = &r->rows[row];
  /* A checked call's start and end lie within +-2^62 ns and end >= start:
   * end - start is then exactly its stored duration (clock offsets cancel). */
  if (r->delta && !w->group && !r->mem_start && w->checked == w->count && first <= w->count &&
      n <= w->count - first)
    return n ? read_slice(r, r->ds_end, w->offset + first, n, dur, sp__plan_path(SP_DS_DURATIONS))
             : SP_OK;
  sp_status st = sp__row_read(r, row, first, n, dur, scratch, NULL, NULL, NULL);
  for (size_t i = 0; st == SP_OK && i < n; i++) dur[i] = sat_sub(scratch[i], dur[i]);
  return st;
}

sp_status sp__row_read_tasks(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *task) {
  const struct sp__rrow *w = &r->rows[row];
  if (first > w->count || n > w->count - first)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "task ids outside the row");
  if (r->mem_start) {
    mem_copy(r->mem_task, w->offset + first, n, task);
    return SP_OK;
  }
  if (r->ds_task < 0 || w->group) {
    fill_minus_one(task, n);
    return SP_OK;
  }
  return n ? read_slice(r, r->ds_task, w->offset + first, n, task, sp__plan_path(SP_DS_TASK_IDS)) : SP_OK;
}

sp_status sp__row_read_await(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *await_ns) {
  const struct sp__rrow *w = &r->rows[row];
  if (first > w->count || n > w->count - first)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "await times outside the row");
  if (r->mem_start) {
    mem_copy(r->mem_await, w->offset + first, n, await_ns);
    return SP_OK;
  }
  if (r->ds_await < 0 || w->group) {
    fill_minus_one(await_ns, n);
    return SP_OK;
  }
  return n ? read_slice(r, r->ds_await, w->offset + first, n, await_ns, sp__plan_path(SP_DS_AWAIT_NS)) : SP_OK;
}

sp_status sp_results_row_read_tasks(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *task_ids,
                                    int64_t *await_ns) {
  if (!r || row >= r->nrows)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_row_read_tasks: no row %zu", row);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = task_ids ? sp__row_read_tasks(r, row, first, n, task_ids) : SP_OK;
  if (st == SP_OK && await_ns) st = sp__row_read_await(r, row, first, n, await_ns);
  sp__h5_quiet_end(&q);
  return st;
}

sp_status sp__row_read_gpu(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *gpu) {
  const struct sp__rrow *w = &r->rows[row];
  if (first > w->count || n > w->count - first)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "GPU times outside the row");
  if (!n) return SP_OK;
  if (r->mem_start) {
    mem_copy(r->mem_gpu, w->offset + first, n, gpu);
    return SP_OK;
  }
  if (w->group) { /* hierarchical: the region's own dataset, when it has one */
    const char *name = sp__plan(SP_DS_H1_GPU_DURATIONS)->name;
    char *p = sp__asprintf("%s/%s", w->group, name);
    if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    int has = H5Lexists(r->file, p, H5P_DEFAULT) > 0;
    free(p);
    if (has) return read_hier_slice(r, w, name, first, n, gpu);
    fill_minus_one(gpu, n);
    return SP_OK;
  }
  if (r->ds_gpu < 0) {
    fill_minus_one(gpu, n);
    return SP_OK;
  }
  return read_slice(r, r->ds_gpu, w->offset + first, n, gpu, sp__plan_path(SP_DS_GPU_DURATIONS));
}

sp_status sp_results_row_read_gpu(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *gpu_ns) {
  if (!r || row >= r->nrows || (n && !gpu_ns))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_row_read_gpu: no row %zu", row);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = sp__row_read_gpu(r, row, first, n, gpu_ns);
  sp__h5_quiet_end(&q);
  return st;
}

sp_status sp_results_row_read(sp_results *r, size_t row, uint64_t first, size_t n,
                              int64_t *start_ns, int64_t *end_ns, int64_t *call_ids,
                              int64_t *parent_ids, int64_t *thread_ids) {
  if (!r || row >= r->nrows)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_row_read: no row %zu", row);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = sp__row_read(r, row, first, n, start_ns, end_ns, call_ids, parent_ids, thread_ids);
  sp__h5_quiet_end(&q);
  return st;
}

sp_status sp__row_summary(sp_results *r, size_t row, const struct sp__summary **out) {
  struct sp__rrow *w = &r->rows[row];
  if (w->has_summary) {
    *out = &w->sum;
    return SP_OK;
  }
  size_t cap = w->count < BLOCK ? (size_t)w->count : BLOCK;
  int64_t *s = malloc((cap ? cap : 1) * sizeof *s), *e = malloc((cap ? cap : 1) * sizeof *e);
  struct sp__summary acc;
  memset(&acc, 0, sizeof acc);
  sp_status st = s && e ? SP_OK : sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (uint64_t done = 0; st == SP_OK && done < w->count;) {
    size_t n = w->count - done < cap ? (size_t)(w->count - done) : cap;
    st = sp__row_read(r, row, done, n, s, e, NULL, NULL, NULL);
    if (st != SP_OK) break;
    struct sp__summary part;
    sp__summary_from_durations(s, e, n, &part);
    /* A layout without stored summaries (upstream's hierarchical one) may
     * still carry device times: the summary's GPU fields come from them. */
    if (sp_results_has_gpu(r) && (st = sp__row_read_gpu(r, row, done, n, s)) == SP_OK)
      for (size_t i = 0; i < n; i++)
        if (s[i] >= 0) {
          part.gpu_count++;
          part.gpu_total += s[i];
        }
    if (st != SP_OK) break;
    sp__summary_merge(&acc, &part);
    done += n;
  }
  free(s);
  free(e);
  if (st != SP_OK) return st;
  w->sum = acc;
  w->has_summary = 1;
  *out = &w->sum;
  return SP_OK;
}

sp_status sp_results_events(sp_results *r, size_t region, int64_t rank, sp_events *out) {
  if (!r || !out || region >= r->nregions)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_events: no region %zu", region);
  memset(out, 0, sizeof *out);
  /* the rank's rows of the region, found by binary search (region_rows are
   * ordered by rank): a scan of the region's rows for every rank made
   * reading each rank's events quadratic in the ranks */
  size_t first = sp__region_rank_first(r, region, rank), last = first, total = 0;
  while (last < r->region_row_start[region + 1] && r->rows[r->region_rows[last]].rank == rank)
    total += (size_t)r->rows[r->region_rows[last++]].count;
  size_t bytes = (total ? total : 1) * sizeof(int64_t);
  int64_t *cols[5];
  for (int i = 0; i < 5; i++) cols[i] = malloc(bytes);
  sp_status st = SP_OK;
  for (int i = 0; i < 5; i++)
    if (!cols[i]) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory for %zu events", total);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp__progress_begin(r, total);
  size_t at = 0;
  for (size_t k = first; st == SP_OK && k < last; k++) {
    size_t row = r->region_rows[k];
    for (uint64_t done = 0; st == SP_OK && done < r->rows[row].count;) {
      size_t n = r->rows[row].count - done < BLOCK ? (size_t)(r->rows[row].count - done) : BLOCK;
      st = sp__row_read(r, row, done, n, cols[0] + at, cols[1] + at, cols[2] + at, cols[3] + at,
                        cols[4] + at);
      done += n;
      at += n;
      sp__progress(r, n);
    }
  }
  sp__h5_quiet_end(&q);
  if (st != SP_OK) {
    for (int i = 0; i < 5; i++) free(cols[i]);
    return st;
  }
  out->count = total;
  out->start_ns = cols[0];
  out->end_ns = cols[1];
  out->call_ids = cols[2];
  out->parent_ids = cols[3];
  out->thread_ids = cols[4];
  return SP_OK;
}

void sp_events_free(sp_events *e) {
  if (!e) return;
  free(e->start_ns);
  free(e->end_ns);
  free(e->call_ids);
  free(e->parent_ids);
  free(e->thread_ids);
  memset(e, 0, sizeof *e);
}

sp_status sp_results_min_start(sp_results *r, int64_t *out) {
  if (!r || !out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_min_start: NULL");
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  int any = 0;
  int64_t m = 0;
  sp_status st = SP_OK;
  for (size_t i = 0; i < r->nrows && st == SP_OK; i++) {
    const struct sp__summary *s;
    st = sp__row_summary(r, i, &s);
    if (st == SP_OK && s->count > 0 && (!any || s->start_minimum < m)) {
      m = s->start_minimum;
      any = 1;
    }
  }
  sp__h5_quiet_end(&q);
  *out = any ? m : 0;
  return st;
}

sp_status sp_results_threads(sp_results *r, int64_t rank, int64_t **ids, size_t *n) {
  if (!r || !ids || !n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_threads: NULL");
  *ids = NULL;
  *n = 0;
  if (!sp_results_has_threads(r)) return SP_OK;
  size_t cap = 16, len = 0, nrows = 0, *rows = NULL;
  /* the rank's rows through each region's rows (sp__rank_rows): a scan of
   * every row for every rank was quadratic in the ranks; the buffer no
   * larger than the rank's largest row (it was 8 MiB for every rank) */
  sp_status st = sp__rank_rows(r, rank, &rows, &nrows);
  size_t most = 1;
  for (size_t k = 0; st == SP_OK && k < nrows; k++)
    if (r->rows[rows[k]].count > most) most = r->rows[rows[k]].count < BLOCK ? (size_t)r->rows[rows[k]].count : BLOCK;
  int64_t *set = malloc(cap * sizeof *set), *buf = malloc(most * sizeof *buf);
  if (st == SP_OK && (!set || !buf)) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  for (size_t ri = 0; ri < nrows && st == SP_OK; ri++) {
    size_t i = rows[ri];
    for (uint64_t done = 0; done < r->rows[i].count && st == SP_OK;) {
      size_t k = r->rows[i].count - done < BLOCK ? (size_t)(r->rows[i].count - done) : BLOCK;
      st = sp__row_read(r, i, done, k, NULL, NULL, NULL, NULL, buf);
      for (size_t j = 0; j < k && st == SP_OK; j++) {
        /* threads are few: a linear scan of what we have is enough */
        if (buf[j] < 0 || (j > 0 && buf[j] == buf[j - 1])) continue;
        size_t x = 0;
        while (x < len && set[x] != buf[j]) x++;
        if (x < len) continue;
        if (len == cap) {
          int64_t *v = realloc(set, cap * 2 * sizeof *v);
          if (!v) {
            st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
            break;
          }
          set = v;
          cap *= 2;
        }
        set[len++] = buf[j];
      }
      done += k;
    }
  }
  sp__h5_quiet_end(&q);
  free(buf);
  free(rows);
  if (st != SP_OK) {
    free(set);
    return st;
  }
  qsort(set, len, sizeof *set, sp__cmp_i64);
  *ids = set;
  *n = len;
  return SP_OK;
}
