/* read_lines.c - line-profile records (upstream's rank<N>/line_profile/<i>,
 * docs/file-format.md) read back: loaded on first use, validated, kept with
 * the results.
 *
 * A record is the group's attributes region, filename, function,
 * first_lineno (default 0), unit (default 1.0) and ours when present
 * (module, source, source_first_lineno, inlined_into), and its datasets
 * line_numbers, hits and times (plus addresses for code without line
 * information). The file is untrusted: the three datasets must be 1-D, of
 * one length, of numbers; counts and times non-negative and finite, line
 * numbers in range, the unit positive. Anything else is a format error that
 * names the record and what is wrong with it, never a partial answer.
 */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"

#define MAX_LINES_PER_RECORD (1u << 24)
#define MAX_LINE_NUMBER INT64_C(100000000)
#define MAX_RECORDS (1u << 20)

struct sp__lines {
  sp_line_profile *v;
  size_t n;
  int loaded;
};

static void free_record(sp_line_profile *p) {
  free((void *)p->region);
  free((void *)p->filename);
  free((void *)p->function);
  free((void *)p->module);
  free((void *)p->source);
  free((void *)p->line_numbers);
  free((void *)p->hits);
  free((void *)p->times);
  free((void *)p->addresses);
  for (size_t i = 0; i < p->ninlined; i++) free((void *)p->inlined_into[i]);
  free((void *)p->inlined_into);
}

void sp__lines_free(struct sp__lines *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) free_record(&l->v[i]);
  free(l->v);
  free(l);
}

/* A string attribute (first element); NULL with *st untouched when absent. */
static char *str_attr(hid_t g, const char *name, const char *where, sp_status *st) {
  if (H5Aexists(g, name) <= 0) return NULL;
  hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  if (a < 0) {
    *st = sp__set_error(SP_ERR_FORMAT, "%s: cannot open attribute %s", where, name);
    return NULL;
  }
  hid_t sp = H5Aget_space(a);
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (sp >= 0) H5Sclose(sp);
  char what[300], **v = NULL;
  snprintf(what, sizeof what, "%s attribute %s", where, name);
  if (n < 1 || n > 1) {
    *st = sp__set_error(SP_ERR_FORMAT, "%s holds %lld values; it must be one string", what, (long long)n);
  } else if ((*st = sp__read_strings(a, 1, 1, &v, what)) == SP_OK) {
    char *s = v[0];
    free(v);
    H5Aclose(a);
    return s;
  }
  H5Aclose(a);
  return NULL;
}

/* A numeric scalar attribute; 0 when absent (*v keeps its default). */
static sp_status num_attr(hid_t g, const char *name, const char *where, hid_t mem, void *v) {
  if (H5Aexists(g, name) <= 0) return SP_OK;
  hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  hid_t t = a >= 0 ? H5Aget_type(a) : -1, sp = a >= 0 ? H5Aget_space(a) : -1;
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  sp_status st = SP_OK;
  if ((c != H5T_INTEGER && c != H5T_FLOAT) || n != 1 || H5Aread(a, mem, v) < 0)
    st = sp__set_error(SP_ERR_FORMAT, "%s: attribute %s must be one number", where, name);
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  return st;
}

/* A 1-D numeric dataset read as `mem` (8-byte values); its length in *n,
 * which must equal *n when *n is not SIZE_MAX. */
static sp_status num_dset(const sp_results *r, hid_t g, const char *name, const char *where, hid_t mem, void **out, size_t *n,
                          int required) {
  *out = NULL;
  if (!sp__hard_path(g, name)) { /* missing, or a link that could leave the file */
    if (!required) return SP_OK;
    return sp__set_error(SP_ERR_FORMAT, "%s has no dataset %s; a line-profile record needs line_numbers, "
                         "hits and times", where, name);
  }
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  hid_t t = d >= 0 ? H5Dget_type(d) : -1, sp = d >= 0 ? H5Dget_space(d) : -1;
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  hsize_t dims[1] = {0};
  sp_status st = SP_OK;
  if (d < 0 || (c != H5T_INTEGER && c != H5T_FLOAT) || nd != 1) {
    st = sp__set_error(SP_ERR_FORMAT, "%s/%s must be a 1-D dataset of numbers", where, name);
  } else {
    H5Sget_simple_extent_dims(sp, dims, NULL);
    if (dims[0] > MAX_LINES_PER_RECORD)
      st = sp__set_error(SP_ERR_FORMAT, "%s/%s has %llu values, more than a record can have (%u)", where, name,
                         (unsigned long long)dims[0], MAX_LINES_PER_RECORD);
    else if (*n != SIZE_MAX && dims[0] != *n)
      st = sp__set_error(SP_ERR_FORMAT, "%s/%s has %llu values but line_numbers has %zu; the three datasets of a "
                         "record have one value per line", where, name, (unsigned long long)dims[0], *n);
  }
  if (st == SP_OK && (st = sp__check_storage(r, d, name, dims[0], 0)) == SP_OK) {
    *out = malloc((size_t)dims[0] * 8 + 8);
    if (!*out) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s/%s", where, name);
    else if (dims[0] && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
      st = sp__set_error(SP_ERR_FORMAT, "%s/%s cannot be read as numbers", where, name);
    if (st != SP_OK) {
      free(*out);
      *out = NULL;
    }
  }
  if (st == SP_OK) *n = (size_t)dims[0];
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  return st;
}

static sp_status read_record(const sp_results *r, hid_t g, const char *where, int64_t rank, size_t index, sp_line_profile *p) {
  memset(p, 0, sizeof *p);
  p->rank = rank;
  p->index = index;
  p->unit = 1.0;
  sp_status st = SP_OK;
  p->region = str_attr(g, "region", where, &st);
  if (st == SP_OK) p->filename = str_attr(g, "filename", where, &st);
  if (st == SP_OK) p->function = str_attr(g, "function", where, &st);
  if (st == SP_OK) p->module = str_attr(g, "module", where, &st);
  if (st == SP_OK) p->source = str_attr(g, "source", where, &st);
  if (st == SP_OK) st = num_attr(g, "first_lineno", where, H5T_NATIVE_INT64, &p->first_lineno);
  if (st == SP_OK) st = num_attr(g, "source_first_lineno", where, H5T_NATIVE_INT64, &p->source_first_lineno);
  if (st == SP_OK) st = num_attr(g, "unit", where, H5T_NATIVE_DOUBLE, &p->unit);
  if (st == SP_OK && !(isfinite(p->unit) && p->unit > 0))
    st = sp__set_error(SP_ERR_FORMAT, "%s: unit %g is not a positive number of seconds", where, p->unit);
  if (st == SP_OK && (p->first_lineno < 0 || p->first_lineno > MAX_LINE_NUMBER))
    st = sp__set_error(SP_ERR_FORMAT, "%s: first_lineno %lld is not a line number", where, (long long)p->first_lineno);
  if (st == SP_OK && H5Aexists(g, "inlined_into") > 0) {
    hid_t a = H5Aopen(g, "inlined_into", H5P_DEFAULT), sp = a >= 0 ? H5Aget_space(a) : -1;
    hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    char what[300], **v = NULL;
    snprintf(what, sizeof what, "%s attribute inlined_into", where);
    if (n < 0 || n > 4096) st = sp__set_error(SP_ERR_FORMAT, "%s is not a list of strings", what);
    else if ((st = sp__read_strings(a, 1, (size_t)n, &v, what)) == SP_OK) {
      p->inlined_into = (const char *const *)v;
      p->ninlined = (size_t)n;
    }
    if (sp >= 0) H5Sclose(sp);
    if (a >= 0) H5Aclose(a);
  }
  size_t n = SIZE_MAX;
  void *lines = NULL, *hits = NULL, *times = NULL, *addrs = NULL;
  if (st == SP_OK) st = num_dset(r, g, "line_numbers", where, H5T_NATIVE_INT64, &lines, &n, 1);
  if (st == SP_OK) st = num_dset(r, g, "hits", where, H5T_NATIVE_INT64, &hits, &n, 1);
  if (st == SP_OK) st = num_dset(r, g, "times", where, H5T_NATIVE_DOUBLE, &times, &n, 1);
  if (st == SP_OK) st = num_dset(r, g, "addresses", where, H5T_NATIVE_UINT64, &addrs, &n, 0);
  p->line_numbers = lines;
  p->hits = hits;
  p->times = times;
  p->addresses = addrs;
  p->n = n == SIZE_MAX ? 0 : n;
  for (size_t i = 0; st == SP_OK && i < p->n; i++) {
    if (p->line_numbers[i] < 0 || p->line_numbers[i] > MAX_LINE_NUMBER)
      st = sp__set_error(SP_ERR_FORMAT, "%s: line_numbers[%zu] = %lld is not a line number", where, i,
                         (long long)p->line_numbers[i]);
    else if (p->hits[i] < 0)
      st = sp__set_error(SP_ERR_FORMAT, "%s: hits[%zu] = %lld is negative", where, i, (long long)p->hits[i]);
    else if (!(isfinite(p->times[i]) && p->times[i] >= 0))
      st = sp__set_error(SP_ERR_FORMAT, "%s: times[%zu] = %g is not a non-negative time", where, i, p->times[i]);
  }
  if (st != SP_OK) free_record(p);
  return st;
}

/* Group names made of digits only: their value, else -1. */
static int64_t digits(const char *s, size_t skip) {
  if (strlen(s) <= skip || strlen(s) > skip + 12) return -1;
  int64_t v = 0;
  for (const char *p = s + skip; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
  }
  return v;
}

struct walk {
  sp_results *r;
  struct sp__lines *l;
  hid_t parent;
  int64_t rank;
  size_t cap;
  sp_status st;
};

static int cmp_record(const void *a, const void *b) {
  const sp_line_profile *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static herr_t each_record(hid_t grp, const char *name, const H5L_info_t *info, void *data) {
  struct walk *w = data;
  if (info->type != H5L_TYPE_HARD) return 0; /* could lead anywhere: not a record */
  int64_t idx = digits(name, 0);
  if (idx < 0) return 0; /* not a record */
  if (w->l->n >= MAX_RECORDS) {
    w->st = sp__set_error(SP_ERR_FORMAT, "more than %u line-profile records; not a file this reader trusts", MAX_RECORDS);
    return 1;
  }
  char where[128];
  snprintf(where, sizeof where, "rank%lld/line_profile/%s", (long long)w->rank, name);
  hid_t g = H5Gopen2(grp, name, H5P_DEFAULT);
  if (g < 0) return 0; /* a dataset of that name: not a record */
  if (w->l->n == w->cap) {
    size_t ncap = w->cap ? w->cap * 2 : 16;
    sp_line_profile *nv = realloc(w->l->v, ncap * sizeof *nv);
    if (!nv) {
      H5Gclose(g);
      w->st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading line profiles");
      return 1;
    }
    w->l->v = nv;
    w->cap = ncap;
  }
  w->st = read_record(w->r, g, where, w->rank, (size_t)idx, &w->l->v[w->l->n]);
  H5Gclose(g);
  if (w->st != SP_OK) return 1;
  w->l->n++;
  return 0;
}

static herr_t each_rank(hid_t root, const char *name, const H5L_info_t *info, void *data) {
  (void)info;
  struct walk *w = data;
  int64_t rank = strncmp(name, "rank", 4) == 0 ? digits(name, 4) : -1;
  if (rank < 0) return 0;
  char path[64];
  snprintf(path, sizeof path, "%s/line_profile", name);
  if (!sp__hard_path(root, path)) return 0; /* absent, or behind a link that could leave the file */
  hid_t g = H5Gopen2(root, path, H5P_DEFAULT);
  if (g < 0) {
    w->st = sp__set_error(SP_ERR_FORMAT, "%s is not a group of line-profile records", path);
    return 1;
  }
  w->rank = rank;
  hsize_t at = 0;
  H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, &at, each_record, w);
  H5Gclose(g);
  return w->st == SP_OK ? 0 : 1;
}

sp_status sp_results_line_profiles(sp_results *r, const sp_line_profile **out, size_t *n) {
  if (!r || !out || !n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_line_profiles: NULL argument");
  *out = NULL;
  *n = 0;
  if (!r->lines) {
    struct sp__lines *l = calloc(1, sizeof *l);
    if (!l) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading line profiles");
    struct walk w = {r, l, r->file, 0, 0, SP_OK};
    struct sp__h5quiet q;
    sp__h5_quiet_begin(&q);
    hsize_t at = 0;
    H5Literate(r->file, H5_INDEX_NAME, H5_ITER_NATIVE, &at, each_rank, &w);
    sp__h5_quiet_end(&q);
    if (w.st != SP_OK) {
      sp__lines_free(l);
      return w.st;
    }
    if (l->n) qsort(l->v, l->n, sizeof *l->v, cmp_record); /* v is NULL for a file without records */
    r->lines = l;
  }
  *out = r->lines->v;
  *n = r->lines->n;
  return SP_OK;
}
