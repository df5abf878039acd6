/* read_hier.c - upstream's older hierarchical layout (schema 1 and the
 * snapshot layout before it): /metadata plus /rank<N>/regions/<name>/ holding
 * start_times and end_times. Upstream wrote a name containing '/' as nested
 * groups, so a region is any group below regions/ that holds start_times, named
 * by its path relative to regions/. These files carry no summary rows; the
 * summaries are computed from the events on first use.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "output/plan.h"
#include "read/region_names.h"

#define MAX_DEPTH 32

struct hier {
  sp_results *r;
  size_t cap_rows;
  struct sp__region_names names;
  /* addresses of the groups walked so far (open addressing, 0 = empty): a
   * group reached twice through hard links would make the walk exponential */
  haddr_t *seen;
  size_t nseen, cap_seen;
  int64_t rank;
  int nrank_groups;
  sp_status st;
};

static sp_status intern(struct hier *h, const char *name, uint32_t *id) {
  return sp__region_names_id(h->r, &h->names, name, h->r->path ? h->r->path : "image", id);
}

/* Length of a 1-D integer dataset, or an error naming it. */
static sp_status check_times(sp_results *r, hid_t g, const char *name, const char *path,
                             hsize_t *len) {
  hid_t d = sp__hard_path(g, name) ? H5Dopen2(g, name, H5P_DEFAULT) : H5I_INVALID_HID;
  if (d < 0)
    return sp__set_error(SP_ERR_FORMAT, "%s: %s/%s is missing or not a dataset",
                         r->path ? r->path : "image", path, name);
  hid_t t = H5Dget_type(d), s = H5Dget_space(d);
  int ok = t >= 0 && H5Tget_class(t) == H5T_INTEGER && s >= 0 &&
           H5Sget_simple_extent_ndims(s) == 1;
  hsize_t dims[1] = {0};
  if (ok) H5Sget_simple_extent_dims(s, dims, NULL);
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  char *what = ok ? sp__asprintf("%s/%s", path, name) : NULL;
  sp_status st = !ok    ? SP_OK
                 : what ? sp__check_storage(r, d, what, dims[0], 0)
                        : sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  free(what);
  H5Dclose(d);
  if (st != SP_OK) return st;
  if (!ok)
    return sp__set_error(SP_ERR_FORMAT, "%s: %s/%s must be a one-dimensional integer dataset",
                         r->path ? r->path : "image", path, name);
  if (dims[0] > SP__MAX_EVENTS)
    return sp__set_error(SP_ERR_FORMAT, "%s: %s/%s is absurdly large", r->path ? r->path : "image",
                         path, name);
  *len = dims[0];
  return SP_OK;
}

static char *string_attr(hid_t obj, const char *name) {
  if (H5Aexists(obj, name) <= 0) return NULL;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return NULL;
  hid_t s = H5Aget_space(a);
  hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
  if (s >= 0) H5Sclose(s);
  char **v = NULL;
  char *out = NULL;
  if (np == 1 && sp__read_strings(a, 1, 1, &v, name) == SP_OK) {
    out = v[0];
    free(v);
  }
  H5Aclose(a);
  return out;
}

static char *tags_attr(hid_t obj) {
  const char *name = sp__plan_attr(SP_AT_H1_TAGS)->name;
  if (H5Aexists(obj, name) <= 0) return NULL;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return NULL;
  hid_t s = H5Aget_space(a);
  hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
  if (s >= 0) H5Sclose(s);
  char *out = NULL;
  char **v = NULL;
  if (np >= 0 && np < 4096 && sp__read_strings(a, 1, (size_t)np, &v, name) == SP_OK) {
    out = sp__json_list_text(v, (size_t)np);
    sp__free_strings(v, (size_t)np);
  }
  H5Aclose(a);
  return out;
}

static sp_status add_region(struct hier *h, hid_t g, const char *name, const char *path) {
  sp_results *r = h->r;
  hsize_t ns = 0, ne = 0;
  sp_status st = check_times(r, g, sp__plan(SP_DS_H1_START_TIMES)->name, path, &ns);
  if (st == SP_OK) st = check_times(r, g, sp__plan(SP_DS_H1_END_TIMES)->name, path, &ne);
  if (st != SP_OK) return st;
  if (ns != ne)
    return sp__set_error(SP_ERR_FORMAT, "%s: %s has %llu start times but %llu end times",
                         r->path ? r->path : "image", path, (unsigned long long)ns,
                         (unsigned long long)ne);
  uint32_t id = 0;
  st = intern(h, name, &id);
  if (st != SP_OK) return st;
  if (r->nrows >= SP__MAX_ROWS) return sp__set_error(SP_ERR_FORMAT, "too many regions");
  if (r->nrows == h->cap_rows) {
    size_t cap = h->cap_rows ? h->cap_rows * 2 : 16;
    struct sp__rrow *v = realloc(r->rows, cap * sizeof *v);
    if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    r->rows = v;
    h->cap_rows = cap;
  }
  struct sp__rrow *w = &r->rows[r->nrows];
  memset(w, 0, sizeof *w);
  r->nrows++;
  w->region = id;
  w->rank = h->rank;
  w->count = ns;
  w->exclusive = -1;
  w->source_line = -1;
  w->group = sp__strdup(path);
  const char *gpu = sp__plan(SP_DS_H1_GPU_DURATIONS)->name;
  if (H5Lexists(g, gpu, H5P_DEFAULT) > 0) {
    hsize_t ng = 0;
    st = check_times(r, g, gpu, path, &ng);
    if (st != SP_OK) return st;
    if (ng != ns)
      return sp__set_error(SP_ERR_FORMAT, "%s: %s has %llu start times but %llu GPU durations",
                           r->path ? r->path : "image", path, (unsigned long long)ns,
                           (unsigned long long)ng);
    r->hier_gpu = 1;
  }
  w->source_file = string_attr(g, sp__plan_attr(SP_AT_H1_SOURCE_FILE)->name);
  w->source_text = string_attr(g, sp__plan_attr(SP_AT_H1_SOURCE_TEXT)->name);
  w->tags = tags_attr(g);
  const char *lineno = sp__plan_attr(SP_AT_H1_SOURCE_LINENO)->name;
  if (H5Aexists(g, lineno) > 0) {
    hid_t a = H5Aopen(g, lineno, H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    int64_t v = -1;
    if (t >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Aread(a, H5T_NATIVE_INT64, &v) >= 0)
      w->source_line = v;
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
  }
  if (!w->source_file) w->source_file = sp__strdup("");
  if (!w->source_text) w->source_text = sp__strdup("");
  if (!w->tags) w->tags = sp__strdup("[]");
  if (!w->group || !w->source_file || !w->source_text || !w->tags)
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  return SP_OK;
}

/* 1 when the group at `addr` was walked before; else remembers it. */
static int seen_before(struct hier *h, haddr_t addr, int *oom) {
  if ((h->nseen + 1) * 2 > h->cap_seen) {
    size_t cap = h->cap_seen ? h->cap_seen * 2 : 256;
    haddr_t *t = calloc(cap, sizeof *t);
    if (!t) {
      *oom = 1;
      return 0;
    }
    for (size_t i = 0; i < h->cap_seen; i++) {
      if (!h->seen[i]) continue;
      size_t k = (size_t)(h->seen[i] * 0x9e3779b97f4a7c15ull) & (cap - 1);
      while (t[k]) k = (k + 1) & (cap - 1);
      t[k] = h->seen[i];
    }
    free(h->seen);
    h->seen = t;
    h->cap_seen = cap;
  }
  size_t k = (size_t)(addr * 0x9e3779b97f4a7c15ull) & (h->cap_seen - 1);
  while (h->seen[k]) {
    if (h->seen[k] == addr) return 1;
    k = (k + 1) & (h->cap_seen - 1);
  }
  h->seen[k] = addr;
  h->nseen++;
  return 0;
}

struct walk {
  struct hier *h;
  const char *prefix; /* region name so far; "" at regions/ */
  const char *path;   /* HDF5 path of the group being listed */
  int depth;
};

static sp_status walk_group(struct hier *h, hid_t g, const char *prefix, const char *path,
                            int depth);

static herr_t walk_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  struct walk *w = data;
  if (info->type != H5L_TYPE_HARD) return 0; /* soft/external links could point anywhere */
  H5O_info_t oi;
#if H5_VERSION_GE(1, 10, 3)
  if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return 0;
#else
  if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0) return 0;
#endif
  if (oi.type != H5O_TYPE_GROUP) return 0;
  char *full = w->prefix[0] ? sp__asprintf("%s/%s", w->prefix, name) : sp__strdup(name);
  char *path = sp__asprintf("%s/%s", w->path, name);
  int oom = 0;
  if (oi.addr && seen_before(w->h, oi.addr, &oom)) {
    w->h->st = sp__set_error(SP_ERR_FORMAT,
                             "%s: the group %s is linked from more than one place (a link cycle "
                             "or shared subgroups); a profile's groups form a tree",
                             w->h->r->path ? w->h->r->path : "image", path ? path : name);
    free(full);
    free(path);
    return -1;
  }
  if (oom) {
    w->h->st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    free(full);
    free(path);
    return -1;
  }
  hid_t c = H5Gopen2(g, name, H5P_DEFAULT);
  if (!full || !path || c < 0) {
    w->h->st = c < 0 ? sp__set_error(SP_ERR_FORMAT, "cannot open group %s", path ? path : name)
                     : sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  } else {
    if (H5Lexists(c, sp__plan(SP_DS_H1_START_TIMES)->name, H5P_DEFAULT) > 0) w->h->st = add_region(w->h, c, full, path);
    if (w->h->st == SP_OK) w->h->st = walk_group(w->h, c, full, path, w->depth + 1);
  }
  if (c >= 0) H5Gclose(c);
  free(full);
  free(path);
  return w->h->st == SP_OK ? 0 : -1;
}

static sp_status walk_group(struct hier *h, hid_t g, const char *prefix, const char *path,
                            int depth) {
  if (depth > MAX_DEPTH)
    return sp__set_error(SP_ERR_FORMAT, "%s: groups under %s nest deeper than %d levels",
                         h->r->path ? h->r->path : "image", path, MAX_DEPTH);
  struct walk w = {h, prefix, path, depth};
  hsize_t idx = 0;
  herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, walk_cb, &w);
  if (h->st != SP_OK) return h->st;
  if (rc < 0) return sp__set_error(SP_ERR_FORMAT, "cannot list the group %s", path);
  return SP_OK;
}

static int parse_rank_name(const char *name, int64_t *rank) {
  if (strncmp(name, "rank", 4) != 0 || !name[4]) return 0;
  int64_t v = 0;
  for (const char *p = name + 4; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (*p - '0');
    if (v > SP__MAX_RANK) return 0;
  }
  *rank = v;
  return 1;
}

static herr_t root_cb(hid_t root, const char *name, const H5L_info_t *info, void *data) {
  struct hier *h = data;
  int64_t rank;
  if (info->type != H5L_TYPE_HARD || !parse_rank_name(name, &rank)) return 0;
  hid_t g = H5Gopen2(root, name, H5P_DEFAULT);
  if (g < 0) return 0; /* a dataset named rank<N>: not ours to read */
  h->nrank_groups++;
  h->rank = rank;
  if (H5Lexists(g, "regions", H5P_DEFAULT) > 0) {
    hid_t rg = H5Gopen2(g, "regions", H5P_DEFAULT);
    char path[64];
    snprintf(path, sizeof path, "/%s/regions", name);
    h->st = rg < 0 ? sp__set_error(SP_ERR_FORMAT, "%s: %s is not a group",
                                   h->r->path ? h->r->path : "image", path)
                   : walk_group(h, rg, "", path, 0);
    if (rg >= 0) H5Gclose(rg);
  }
  H5Gclose(g);
  return h->st == SP_OK ? 0 : -1;
}

sp_status sp__open_hierarchical(sp_results *r) {
  struct hier h = {0};
  h.r = r;
  h.st = SP_OK;
  hid_t root = H5Gopen2(r->file, "/", H5P_DEFAULT);
  if (root < 0) return sp__set_error(SP_ERR_FORMAT, "cannot open the root group");
  hsize_t idx = 0;
  herr_t rc = H5Literate(root, H5_INDEX_NAME, H5_ITER_INC, &idx, root_cb, &h);
  int has_meta = H5Lexists(root, sp__plan_group_name(SP_GRP_METADATA), H5P_DEFAULT) > 0;
  H5Gclose(root);
  sp__region_names_free(&h.names);
  free(h.seen);
  if (h.st != SP_OK) return h.st;
  if (rc < 0)
    return sp__set_error(SP_ERR_FORMAT, "%s: cannot list the root group",
                         r->path ? r->path : "image");
  for (size_t i = 0; i < r->nrows; i++) r->nevents += r->rows[i].count;
  if (!has_meta && h.nrank_groups == 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s is an HDF5 file but not a scope-profiler profile (no "
                         "scope_profiler_schema attribute, no /metadata, no /rank<N> groups)",
                         r->path ? r->path : "the image");
  return SP_OK;
}
