/* read_open.c - opening a profile (a file or an in-memory image), telling its
 * layout apart, validating the schema-2 tables and the accessors of the
 * public reader API for regions, ranks, metadata and sources.
 *
 * Opening reads only the small tables (region names, the rank/region index,
 * summary rows, metadata); /events is checked for shape and type but never
 * read here. Everything read is validated before it is trusted: a file from
 * elsewhere, a truncated copy or a hand-edited one must give SP_ERR_FORMAT
 * with a message naming the problem, not a crash or a silent misreading.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "output/plan.h"
#include "read/read_internal.h"

#define FILE_NAME(r) ((r)->path ? (r)->path : "<in-memory image>")

void sp__h5_quiet_begin(struct sp__h5quiet *q) {
  q->fn = NULL;
  q->data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &q->fn, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void sp__h5_quiet_end(const struct sp__h5quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->fn, q->data); }

int sp__cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* ---- small HDF5 helpers --------------------------------------------------- */

/* Every link on the path `name` (from loc) is a hard link, each looked at
 * without following it: a soft or external link could lead into another
 * file (a FIFO would block), which even opening must not do. */
int sp__hard_path(hid_t fid, const char *name) {
  char path[1024];
  size_t n = strlen(name);
  if (n >= sizeof path) return 0;
  memcpy(path, name, n + 1);
  int any = 0;
  for (size_t i = 0; i <= n; i++) {
    if (path[i] != '/' && path[i] != 0) continue;
    if (i == 0 || path[i - 1] == '/') continue; /* the root, or an empty component */
    char keep = path[i];
    path[i] = 0;
    H5L_info_t li;
    int hard = H5Lexists(fid, path, H5P_DEFAULT) > 0 && H5Lget_info(fid, path, &li, H5P_DEFAULT) >= 0 &&
               li.type == H5L_TYPE_HARD;
    path[i] = keep;
    if (!hard) return 0;
    any = 1;
  }
  return any;
}

/* A soft link whose target is an absolute path of hard links: following it
 * stays in the file. A target through an external link (or another soft
 * link, or relative) is not followed; no writer makes soft links. */
static int soft_in_file(hid_t loc, const char *name, size_t size) {
  char target[1024];
  if (size == 0 || size > sizeof target || H5Lget_val(loc, name, target, sizeof target, H5P_DEFAULT) < 0)
    return 0;
  target[sizeof target - 1] = 0;
  if (target[0] != '/') return 0;
  hid_t fid = H5Iget_file_id(loc);
  if (fid < 0) return 0;
  int ok = sp__hard_path(fid, target);
  H5Fclose(fid);
  return ok;
}

/* The kind of object `name` (one path component) names under loc, or
 * H5I_BADID when there is no such link or it dangles. */
H5I_type_t sp__child_type(hid_t loc, const char *name) {
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return H5I_BADID;
  /* An external link would make us open another file (a FIFO would block):
   * a profile is one self-contained file. */
  H5L_info_t li;
  if (H5Lget_info(loc, name, &li, H5P_DEFAULT) < 0 ||
      (li.type != H5L_TYPE_HARD && (li.type != H5L_TYPE_SOFT || !soft_in_file(loc, name, li.u.val_size))))
    return H5I_BADID;
  hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
  if (o < 0) return H5I_BADID;
  H5I_type_t t = H5Iget_type(o);
  H5Oclose(o);
  return t;
}

static const char *class_name(H5T_class_t c) {
  switch (c) {
  case H5T_INTEGER: return "integer";
  case H5T_FLOAT: return "float";
  case H5T_STRING: return "string";
  case H5T_COMPOUND: return "compound";
  case H5T_ENUM: return "enum (bool?)";
  case H5T_ARRAY: return "array";
  case H5T_VLEN: return "vlen";
  case H5T_OPAQUE: return "opaque";
  case H5T_REFERENCE: return "reference";
  case H5T_BITFIELD: return "bitfield";
  case H5T_TIME: return "time";
  default: return "unknown";
  }
}

/* A virtual dataset whose every mapping reads a dataset of this same file
 * (source file ".", reached through hard links only), itself stored in the
 * file: 1, else 0; -1 when such a
 * source is not a 1-D dataset (a mapping records the source's shape, which
 * a hand-made file can contradict: HDF5 1.10's own read of such a mapping
 * crashes, and ours would hand its 1-D selection to a space of another
 * rank). A streamed run publishes its event columns so, as the blocks it
 * wrote (docs/file-format.md). */
static int virtual_in_file(hid_t d, hid_t dcpl) {
  size_t count = 0;
  if (H5Pget_virtual_count(dcpl, &count) < 0) return 0;
  hid_t fid = H5Iget_file_id(d);
  if (fid < 0) return 0;
  char name[1024], last[1024] = "";
  int ok = 1;
  for (size_t i = 0; i < count && ok == 1; i++) {
    char file[8];
    ssize_t fl = H5Pget_virtual_filename(dcpl, i, file, sizeof file);
    ssize_t dl = H5Pget_virtual_dsetname(dcpl, i, name, sizeof name);
    ok = fl == 1 && file[0] == '.' && dl > 0 && (size_t)dl < sizeof name;
    if (!ok || strcmp(name, last) == 0) continue;
    /* the source: a dataset of this file, its values in it */
    hid_t src = sp__hard_path(fid, name) ? H5Dopen2(fid, name, H5P_DEFAULT) : H5I_INVALID_HID;
    hid_t sp = src >= 0 ? H5Dget_create_plist(src) : H5I_INVALID_HID;
    ok = sp >= 0 && H5Pget_layout(sp) != H5D_VIRTUAL && H5Pget_external_count(sp) == 0;
    hid_t space = ok ? H5Dget_space(src) : H5I_INVALID_HID;
    if (ok && (space < 0 || H5Sget_simple_extent_ndims(space) != 1)) ok = -1;
    if (space >= 0) H5Sclose(space);
    if (sp >= 0) H5Pclose(sp);
    if (src >= 0) H5Dclose(src);
    memcpy(last, name, (size_t)dl + 1);
  }
  H5Fclose(fid);
  return ok;
}

/* A dataset whose values live in another file (external storage, a virtual
 * dataset reading another file) would make us read, and print, whatever
 * local file the profile names: always a format error; a virtual dataset of
 * this file's own datasets is fine. With `written`, so is a dataset of n > 0
 * values whose storage was never fully written (chunks missing): it claims
 * sizes nothing on disk backs, and the tables read whole at open would cost
 * memory and time out of all proportion to the file. */
sp_status sp__check_storage(const sp_results *r, hid_t d, const char *what, hsize_t n,
                            int written) {
  hid_t dcpl = H5Dget_create_plist(d);
  H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
  int in_file = layout == H5D_VIRTUAL ? virtual_in_file(d, dcpl) : 1;
  int outside = dcpl < 0 || H5Pget_external_count(dcpl) != 0 || in_file == 0;
  int complete = 1;
  if (!outside && written && n > 0 && layout != H5D_VIRTUAL) {
    if (layout == H5D_CHUNKED) {
      /* Edge chunks and compression make the byte count differ from n times
       * the value size, so count chunks: all of them must exist. */
      hsize_t chunk = 0, have = 0;
      hid_t space = H5Dget_space(d);
      complete = space >= 0 && H5Pget_chunk(dcpl, 1, &chunk) == 1 && chunk > 0 &&
                 H5Dget_num_chunks(d, space, &have) >= 0 && have == (n - 1) / chunk + 1;
      if (space >= 0) H5Sclose(space);
    } else {
      H5D_space_status_t s = H5D_SPACE_STATUS_ERROR;
      complete = H5Dget_space_status(d, &s) >= 0 && s == H5D_SPACE_STATUS_ALLOCATED;
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (!outside && in_file < 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: %s is a virtual dataset over a source that is not a 1-D dataset "
                         "(a hand-made or corrupt file)",
                         FILE_NAME(r), what);
  if (outside)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: %s keeps its values outside the file (external or virtual "
                         "storage); a profile must be self-contained",
                         FILE_NAME(r), what);
  if (!complete)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: %s claims %llu values but its storage was never fully written "
                         "(a truncated or hand-made file)",
                         FILE_NAME(r), what, (unsigned long long)n);
  return SP_OK;
}

/* Open the 1-D dataset <group>/<name> and check its type class. A missing
 * optional column gives *ds = H5I_INVALID_HID and SP_OK. */
sp_status sp__open_column(sp_results *r, hid_t grp, const char *gname, const char *name, int required,
                          H5T_class_t want, hid_t *ds, hsize_t *len) {
  *ds = H5I_INVALID_HID;
  *len = 0;
  H5I_type_t t = sp__child_type(grp, name);
  if (t == H5I_BADID) {
    if (!required) return SP_OK;
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: dataset /%s/%s is missing; the file is incomplete or was not "
                         "written by scope-profiler",
                         FILE_NAME(r), gname, name);
  }
  if (t != H5I_DATASET)
    return sp__set_error(SP_ERR_FORMAT, "%s: /%s/%s is not a dataset", FILE_NAME(r), gname, name);
  hid_t d = H5Dopen2(grp, name, H5P_DEFAULT);
  if (d < 0)
    return sp__set_error(SP_ERR_FORMAT, "%s: cannot open dataset /%s/%s (corrupt file?)",
                         FILE_NAME(r), gname, name);
  hid_t type = H5Dget_type(d);
  H5T_class_t c = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
  if (type >= 0) H5Tclose(type);
  if (c != want) {
    H5Dclose(d);
    return sp__set_error(SP_ERR_FORMAT, "%s: /%s/%s has %s values, expected %s", FILE_NAME(r),
                         gname, name, class_name(c), class_name(want));
  }
  hid_t sp = H5Dget_space(d);
  int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  hsize_t dims[1] = {0};
  if (nd == 1) H5Sget_simple_extent_dims(sp, dims, NULL);
  if (sp >= 0) H5Sclose(sp);
  if (nd != 1) {
    H5Dclose(d);
    return sp__set_error(SP_ERR_FORMAT, "%s: /%s/%s must be one-dimensional (it has %d dimensions)",
                         FILE_NAME(r), gname, name, nd);
  }
  char what[128];
  snprintf(what, sizeof what, "/%s/%s", gname, name);
  /* /events is opened here but read lazily, slice by slice, and only by the
   * commands that need events: its storage is checked for locality only. */
  sp_status st = sp__check_storage(r, d, what, dims[0], strcmp(gname, sp__plan_group_name(SP_GRP_EVENTS)) != 0);
  if (st != SP_OK) {
    H5Dclose(d);
    return st;
  }
  *ds = d;
  *len = dims[0];
  return SP_OK;
}

sp_status sp__read_column(sp_results *r, hid_t ds, hid_t memtype, void *buf, size_t n, const char *what) {
  if (n == 0) return SP_OK;
  if (H5Dread(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s: cannot read %s (corrupt or truncated file, or a compression filter "
                         "this HDF5 lacks)",
                         FILE_NAME(r), what);
  return SP_OK;
}

/* ---- strings -------------------------------------------------------------- */

/* Invalid UTF-8 would make our JSON output invalid; such bytes become '?'. */
static void sanitize_utf8(char *s) {
  size_t n = strlen(s);
  if (sp__utf8_valid(s, n)) return;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] >= 0x80) s[i] = '?';
}

void sp__free_strings(char **v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

sp_status sp__read_strings(hid_t obj, int is_attr, size_t n, char ***out, const char *what) {
  *out = NULL;
  char **v = calloc(n ? n : 1, sizeof *v);
  if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", what);
  hid_t ftype = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
  if (ftype < 0 || H5Tget_class(ftype) != H5T_STRING) {
    if (ftype >= 0) H5Tclose(ftype);
    free(v);
    return sp__set_error(SP_ERR_FORMAT, "%s is not a string", what);
  }
  sp_status st = SP_OK;
  hid_t mt = H5Tcopy(H5T_C_S1);
  H5Tset_cset(mt, H5Tget_cset(ftype));
  if (H5Tis_variable_str(ftype) > 0 && !is_attr && (st = sp__vlen_check(obj, n, what)) != SP_OK) {
    /* claimed lengths the file cannot hold: refused before HDF5 allocates them */
  } else if (H5Tis_variable_str(ftype) > 0) {
    char **raw = calloc(n ? n : 1, sizeof *raw);
    H5Tset_size(mt, H5T_VARIABLE);
    herr_t rc = !raw ? -1
                : n == 0 ? 0
                : is_attr ? H5Aread(obj, mt, raw)
                          : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw);
    if (rc < 0) {
      st = sp__set_error(raw ? SP_ERR_FORMAT : SP_ERR_NO_MEMORY, "cannot read %s", what);
      if (raw && n) { /* a read that failed midway may have allocated some strings */
        hid_t space = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
        if (space >= 0) {
          H5Dvlen_reclaim(mt, space, H5P_DEFAULT, raw);
          H5Sclose(space);
        }
      }
    } else {
      for (size_t i = 0; i < n && st == SP_OK; i++) {
        v[i] = sp__strdup(raw[i] ? raw[i] : "");
        if (!v[i]) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", what);
        else sanitize_utf8(v[i]);
      }
      if (n) {
        hid_t space = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
        H5Dvlen_reclaim(mt, space, H5P_DEFAULT, raw);
        H5Sclose(space);
      }
    }
    free(raw);
  } else {
    size_t size = H5Tget_size(ftype);
    char *buf = NULL;
    if (size == 0 || size > (1u << 20) || (n && size > ((size_t)1 << 34) / n)) {
      st = sp__set_error(SP_ERR_FORMAT, "%s has an unreasonable string size %zu", what, size);
    } else if (!(buf = malloc(n * size + 1))) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", what);
    } else {
      H5Tset_size(mt, size);
      H5Tset_strpad(mt, H5T_STR_NULLPAD);
      herr_t rc = n == 0 ? 0
                  : is_attr ? H5Aread(obj, mt, buf)
                            : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
      if (rc < 0) st = sp__set_error(SP_ERR_FORMAT, "cannot read %s", what);
      for (size_t i = 0; i < n && st == SP_OK; i++) {
        const char *s = buf + i * size;
        v[i] = sp__strndup(s, strnlen(s, size));
        if (!v[i]) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", what);
        else sanitize_utf8(v[i]);
      }
    }
    free(buf);
  }
  H5Tclose(mt);
  H5Tclose(ftype);
  if (st != SP_OK) {
    sp__free_strings(v, n);
    return st;
  }
  *out = v;
  return SP_OK;
}

/* JSON-escaped list text of strings, e.g. ["a", "b"]. */
char *sp__json_list_text(char *const *v, size_t n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fputc('[', f);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    sp__json_write_string(f, v[i]);
  }
  fputc(']', f);
  fclose(f);
  return buf;
}

/* ---- metadata ------------------------------------------------------------- */

static char *number_list_text(const int64_t *iv, const double *fv, size_t n) {
  char *buf = NULL, num[64];
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fputc('[', f);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    if (iv) fprintf(f, "%lld", (long long)iv[i]);
    else {
      sp__format_double(num, sizeof num, fv[i]);
      fputs(num, f);
    }
  }
  fputc(']', f);
  fclose(f);
  return buf;
}

struct meta_iter {
  sp_results *r;
  size_t cap;
  sp_status st;
};

static sp_status read_meta_attr(sp_results *r, hid_t attr, struct sp__meta *m) {
  hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
  sp_status st = SP_OK;
  char num[64];
  if (type < 0 || space < 0) {
    st = sp__set_error(SP_ERR_FORMAT, "%s: cannot read metadata attribute '%s'", FILE_NAME(r),
                       m->key);
    goto done;
  }
  hssize_t np = H5Sget_simple_extent_npoints(space);
  int scalar = H5Sget_simple_extent_type(space) == H5S_SCALAR;
  if (np < 0 || (uint64_t)np > SP__MAX_META_ELEMS) {
    m->e.kind = SP_VALUE_OTHER;
    m->text = sp__strdup("<too large to show>");
    goto done;
  }
  size_t n = (size_t)np;
  H5T_class_t c = H5Tget_class(type);
  if (c == H5T_INTEGER || c == H5T_FLOAT) {
    int isint = c == H5T_INTEGER;
    void *buf = malloc((n ? n : 1) * 8);
    if (!buf) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      goto done;
    }
    if (n && H5Aread(attr, isint ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, buf) < 0) {
      free(buf);
      st = sp__set_error(SP_ERR_FORMAT, "%s: cannot read metadata attribute '%s'", FILE_NAME(r),
                         m->key);
      goto done;
    }
    if (scalar && n == 1) {
      if (isint) {
        m->e.kind = SP_VALUE_INT;
        m->e.i = *(int64_t *)buf;
        snprintf(num, sizeof num, "%lld", (long long)m->e.i);
      } else {
        m->e.kind = SP_VALUE_FLOAT;
        m->e.f = *(double *)buf;
        sp__format_double(num, sizeof num, m->e.f);
      }
      m->text = sp__strdup(num);
      free(buf);
    } else {
      m->e.kind = isint ? SP_VALUE_INT_ARRAY : SP_VALUE_FLOAT_ARRAY;
      m->e.n = n;
      if (isint) m->ints = buf;
      else m->floats = buf;
      m->text = number_list_text(m->ints, m->floats, n);
    }
  } else if (c == H5T_STRING) {
    char **v = NULL;
    char what[300];
    snprintf(what, sizeof what, "%s: metadata attribute '%s'", FILE_NAME(r), m->key);
    st = sp__read_strings(attr, 1, n, &v, what);
    if (st != SP_OK) goto done;
    if (scalar && n == 1) {
      m->e.kind = SP_VALUE_STRING;
      m->s = v[0];
      free(v);
      m->text = sp__strdup(m->s);
    } else {
      m->e.kind = SP_VALUE_STRING_ARRAY;
      m->e.n = n;
      m->strings = v;
      m->text = sp__json_list_text(v, n);
    }
  } else if (c == H5T_ENUM && scalar && H5Tget_nmembers(type) == 2) {
    /* numpy bools arrive as an enum {FALSE, TRUE} over int8 (h5py's mapping). */
    hid_t mt = H5Tget_native_type(type, H5T_DIR_ASCEND);
    unsigned char raw[16] = {0};
    char name[16] = "";
    if (mt >= 0 && H5Tget_size(mt) <= sizeof raw && H5Aread(attr, mt, raw) >= 0 &&
        H5Tenum_nameof(mt, raw, name, sizeof name) >= 0 &&
        (!strcmp(name, "TRUE") || !strcmp(name, "FALSE"))) {
      m->e.kind = SP_VALUE_BOOL;
      m->e.i = !strcmp(name, "TRUE");
      m->text = sp__strdup(m->e.i ? "true" : "false");
    } else {
      m->e.kind = SP_VALUE_OTHER;
      m->text = sp__strdup("<enum>");
    }
    if (mt >= 0) H5Tclose(mt);
  } else {
    m->e.kind = SP_VALUE_OTHER;
    m->text = sp__asprintf("<%s value>", class_name(c));
  }
  if (st == SP_OK && !m->text) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
done:
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  return st;
}

static herr_t meta_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
  (void)info;
  struct meta_iter *it = data;
  sp_results *r = it->r;
  if (r->nmeta >= SP__MAX_META_ATTRS) return 0;
  if (r->nmeta == it->cap) {
    size_t cap = it->cap ? it->cap * 2 : 32;
    struct sp__meta *m = realloc(r->meta, cap * sizeof *m);
    if (!m) {
      it->st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading metadata");
      return -1;
    }
    r->meta = m;
    it->cap = cap;
  }
  struct sp__meta *m = &r->meta[r->nmeta];
  memset(m, 0, sizeof *m);
  m->key = sp__strdup(name);
  if (!m->key) {
    it->st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading metadata");
    return -1;
  }
  sanitize_utf8(m->key);
  r->nmeta++;
  hid_t attr = H5Aopen(loc, name, H5P_DEFAULT);
  if (attr < 0) {
    it->st = sp__set_error(SP_ERR_FORMAT, "%s: cannot open metadata attribute '%s'",
                           FILE_NAME(r), name);
    return -1;
  }
  it->st = read_meta_attr(r, attr, m);
  H5Aclose(attr);
  return it->st == SP_OK ? 0 : -1;
}

void sp__meta_fix_pointers(sp_results *r) {
  for (size_t i = 0; i < r->nmeta; i++) {
    struct sp__meta *m = &r->meta[i];
    m->e.key = m->key;
    m->e.s = m->s;
    m->e.text = m->text;
    m->e.ints = m->ints;
    m->e.floats = m->floats;
    m->e.strings = (const char *const *)m->strings;
  }
}

sp_status sp__read_metadata(sp_results *r, hid_t group) {
  struct meta_iter it = {r, 0, SP_OK};
  hsize_t idx = 0;
  herr_t rc = H5Aiterate2(group, H5_INDEX_NAME, H5_ITER_INC, &idx, meta_cb, &it);
  sp__meta_fix_pointers(r);
  if (it.st != SP_OK) return it.st;
  if (rc < 0)
    return sp__set_error(SP_ERR_FORMAT, "%s: cannot list the /metadata attributes", FILE_NAME(r));
  return SP_OK;
}

/* ---- common finish -------------------------------------------------------- */

static const sp_results *sort_ctx;
static int cmp_row_idx(const void *a, const void *b) {
  const struct sp__rrow *x = &sort_ctx->rows[*(const size_t *)a];
  const struct sp__rrow *y = &sort_ctx->rows[*(const size_t *)b];
  if (x->region != y->region) return x->region < y->region ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int cmp_strp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

sp_status sp__finish_open(sp_results *r) {
  /* Duplicate region names would make lookups by name ambiguous. */
  if (r->nregions > 1) {
    char **sorted = malloc(r->nregions * sizeof *sorted);
    if (!sorted) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    memcpy(sorted, r->names, r->nregions * sizeof *sorted);
    qsort(sorted, r->nregions, sizeof *sorted, cmp_strp);
    for (size_t i = 1; i < r->nregions; i++)
      if (!strcmp(sorted[i - 1], sorted[i])) {
        sp_status st = sp__set_error(SP_ERR_FORMAT,
                                     "%s: the region name '%s' appears twice in the region table",
                                     FILE_NAME(r), sorted[i]);
        free(sorted);
        return st;
      }
    free(sorted);
  }
  r->region_row_start = calloc(r->nregions + 1, sizeof *r->region_row_start);
  r->region_rows = malloc((r->nrows ? r->nrows : 1) * sizeof *r->region_rows);
  int64_t *rk = malloc((r->nrows ? r->nrows : 1) * sizeof *rk);
  if (!r->region_row_start || !r->region_rows || !rk) {
    free(rk);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < r->nrows; i++) r->region_rows[i] = i;
  sort_ctx = r;
  qsort(r->region_rows, r->nrows, sizeof *r->region_rows, cmp_row_idx);
  sort_ctx = NULL;
  for (size_t i = 0; i < r->nrows; i++) r->region_row_start[r->rows[i].region + 1]++;
  for (size_t i = 0; i < r->nregions; i++) r->region_row_start[i + 1] += r->region_row_start[i];
  r->region_source_row = malloc((r->nregions ? r->nregions : 1) * sizeof *r->region_source_row);
  r->region_tags_row = malloc((r->nregions ? r->nregions : 1) * sizeof *r->region_tags_row);
  if (!r->region_source_row || !r->region_tags_row) {
    free(rk);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  for (size_t g = 0; g < r->nregions; g++) {
    size_t lo = r->region_row_start[g], hi = r->region_row_start[g + 1];
    r->region_source_row[g] = r->region_tags_row[g] = SIZE_MAX;
    for (size_t k = lo; k < hi; k++) {
      const struct sp__rrow *w = &r->rows[r->region_rows[k]];
      if (w->source_file[0] || w->source_text[0] || w->source_line >= 0) {
        r->region_source_row[g] = r->region_rows[k];
        break;
      }
    }
    if (r->region_source_row[g] == SIZE_MAX && lo < hi) r->region_source_row[g] = r->region_rows[lo];
    for (size_t k = lo; k < hi; k++)
      if (strcmp(r->rows[r->region_rows[k]].tags, "[]") != 0) {
        r->region_tags_row[g] = r->region_rows[k];
        break;
      }
  }
  for (size_t i = 0; i < r->nrows; i++) rk[i] = r->rows[i].rank;
  qsort(rk, r->nrows, sizeof *rk, sp__cmp_i64);
  size_t k = 0;
  for (size_t i = 0; i < r->nrows; i++)
    if (k == 0 || rk[k - 1] != rk[i]) rk[k++] = rk[i];
  r->ranks = rk;
  r->nranks = k;

  const sp_metadata_entry *lab = sp_results_metadata(r, "label");
  if (lab && lab->kind == SP_VALUE_STRING && lab->s[0]) {
    r->label = lab->s;
    r->display_label = sp__strdup(lab->s);
  } else if (r->path) {
    const char *base = strrchr(r->path, '/');
    base = base ? base + 1 : r->path;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    r->display_label = sp__strndup(base, len);
  } else {
    r->display_label = sp__strdup("results");
  }
  if (!r->display_label) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  return SP_OK;
}

/* ---- open ----------------------------------------------------------------- */

/* Upstream's version gate (read_schema_version): a missing attribute is
 * schema 1; it must be a positive integer (not a bool) no newer than ours. */
static sp_status read_schema(sp_results *r, hid_t root) {
  r->schema = 1;
  const char *name = sp__plan_attr(SP_AT_SCHEMA)->name;
  if (H5Aexists(root, name) <= 0) return SP_OK;
  hid_t a = H5Aopen(root, name, H5P_DEFAULT);
  hid_t t = a >= 0 ? H5Aget_type(a) : -1, sp = a >= 0 ? H5Aget_space(a) : -1;
  int64_t v = 0;
  sp_status st = SP_OK;
  if (a < 0 || t < 0 || H5Tget_class(t) != H5T_INTEGER || H5Sget_simple_extent_npoints(sp) != 1 ||
      H5Aread(a, H5T_NATIVE_INT64, &v) < 0)
    st = sp__set_error(SP_ERR_FORMAT, "%s: the root attribute %s must be an integer (it is %s)", FILE_NAME(r), name,
                       t >= 0 ? class_name(H5Tget_class(t)) : "unreadable");
  else if (v < 1)
    st = sp__set_error(SP_ERR_FORMAT, "%s: invalid %s %lld; scope-profiler HDF5 schema versions must be positive",
                       FILE_NAME(r), name, (long long)v);
  else if (v > SP_SCHEMA_CURRENT)
    st = sp__set_error(SP_ERR_FORMAT,
                       "%s: unsupported scope-profiler HDF5 schema version %lld; this package supports versions "
                       "through %d. Upgrade scope-profiler to read this file",
                       FILE_NAME(r), (long long)v, SP_SCHEMA_CURRENT);
  else
    r->schema = (int)v;
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  return st;
}

static sp_status load(sp_results *r) {
  hid_t root = H5Gopen2(r->file, "/", H5P_DEFAULT);
  if (root < 0) return sp__set_error(SP_ERR_FORMAT, "%s: cannot open the root group", FILE_NAME(r));
  sp_status st = read_schema(r, root);
  const char *mname = sp__plan_group_name(SP_GRP_METADATA);
  if (st == SP_OK) {
    H5I_type_t mt = sp__child_type(root, mname);
    if (mt == H5I_GROUP) {
      hid_t g = H5Gopen2(root, mname, H5P_DEFAULT);
      st = g < 0 ? sp__set_error(SP_ERR_FORMAT, "%s: cannot open /metadata", FILE_NAME(r))
                 : sp__read_metadata(r, g);
      if (g >= 0) H5Gclose(g);
    } else if (mt != H5I_BADID) {
      st = sp__set_error(SP_ERR_FORMAT, "%s: /metadata is not a group", FILE_NAME(r));
    }
  }
  if (st == SP_OK && r->schema >= 2) {
    r->delta = r->schema == 3;
    st = sp__open_columnar(r, root);
  } else if (st == SP_OK) {
    r->layout = "hierarchical";
    st = sp__open_hierarchical(r);
  }
  H5Gclose(root);
  if (st == SP_OK) st = sp__finish_open(r);
  return st;
}

sp_results *sp__results_new(void) {
  sp_results *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->file = r->ds_start = r->ds_end = r->ds_call = r->ds_parent = r->ds_thread = r->ds_task =
      r->ds_gpu = r->ds_await = H5I_INVALID_HID;
  r->format = "hdf5";
  return r;
}

static hid_t reader_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
  /* Reading needs no lock, and locks fail on some parallel file systems. */
  if (fapl >= 0) H5Pset_file_locking(fapl, 0, 1);
#endif
  /* Events are read in blocks of 64 KiB or more per column; through
   * HDF5's data sieve (64 KiB by default) each such read went to the sieve
   * buffer and was copied again, the rows' blocks taking turns in it. */
  if (fapl >= 0) H5Pset_sieve_buf_size(fapl, 0);
  return fapl;
}

static sp_status finish(sp_results *r, sp_status st, sp_results **out,
                        const struct sp__h5quiet *q) {
  if (st == SP_OK) {
    *out = r;
  } else {
    sp_results_free(r);
  }
  sp__h5_quiet_end(q);
  return st;
}

/* What a file holds, from its first bytes (upstream's load() sniffs the
 * same way): HDF5's signature (also after a user block, which
 * H5Fis_accessible finds), gzip (a compressed JSON profile), a JSON object,
 * a native trace, or an HTML report. */
enum kind { K_HDF5, K_JSON, K_SPT, K_HTML, K_UNKNOWN };

static enum kind sniff(const unsigned char *b, size_t n) {
  static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', 0x0d, 0x0a, 0x1a, 0x0a};
  if (n >= 8 && !memcmp(b, hdf5, 8)) return K_HDF5;
  if (n >= 8 && !memcmp(b, "SCOPEPRF", 8)) return K_SPT;
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return K_JSON;
  size_t i = n >= 3 && !memcmp(b, "\xef\xbb\xbf", 3) ? 3 : 0;
  while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) i++;
  if (i < n && b[i] == '{') return K_JSON;
  if (i < n && b[i] == '<') return K_HTML;
  return K_UNKNOWN;
}

/* Largest JSON profile or native trace read whole into memory. */
#define MAX_WHOLE_FILE ((uint64_t)16 << 30)

static sp_status read_whole(const char *path, uint64_t size, char **out) {
  *out = NULL;
  if (size > MAX_WHOLE_FILE)
    return sp__set_error(SP_ERR_LIMIT, "%s is %llu bytes, more than this reader loads into memory", path,
                         (unsigned long long)size);
  FILE *f = fopen(path, "rb");
  if (!f) return sp__set_error(SP_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  char *buf = malloc((size_t)size + 1);
  size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
  int err = ferror(f);
  fclose(f);
  if (!buf) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
  if (err || got != size) {
    free(buf);
    return sp__set_error(SP_ERR_IO, "cannot read %s (it changed while being read?)", path);
  }
  buf[size] = 0;
  *out = buf;
  return SP_OK;
}

static sp_status open_hdf5(const char *path, sp_results **out) {
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
#if H5_VERSION_GE(1, 12, 0)
  htri_t is = H5Fis_accessible(path, H5P_DEFAULT);
#else
  htri_t is = H5Fis_hdf5(path);
#endif
  if (is <= 0) {
    sp__h5_quiet_end(&q);
    return sp__set_error(SP_ERR_FORMAT,
                         "%s is not an HDF5 file, a JSON profile or a native trace (.spt); pass a profile written "
                         "by scope-profiler",
                         path);
  }
  sp_results *r = sp__results_new();
  if (!r) {
    sp__h5_quiet_end(&q);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  r->path = sp__strdup(path);
  hid_t fapl = reader_fapl();
  r->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  if (fapl >= 0) H5Pclose(fapl);
  sp_status st = SP_OK;
  if (!r->path) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  else if (r->file < 0)
    st = sp__set_error(SP_ERR_FORMAT,
                       "%s cannot be opened as HDF5: it is truncated or corrupt (was it copied "
                       "while being written?)",
                       path);
  else st = load(r);
  return finish(r, st, out, &q);
}

sp_status sp_results_open(const char *path, sp_results **out) {
  if (!out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_open: out is NULL");
  *out = NULL;
  if (!path || !path[0])
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_open: no file name given");
  struct stat sb;
  if (stat(path, &sb) != 0)
    return sp__set_error(SP_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode))
    return sp__set_error(SP_ERR_IO, "cannot open %s: it is a directory; pass a profile file",
                         path);
  if (!S_ISREG(sb.st_mode))
    return sp__set_error(SP_ERR_IO, "cannot open %s: it is not a regular file; pass a profile file", path);
  if (sb.st_size == 0)
    return sp__set_error(SP_ERR_FORMAT,
                         "%s is empty (0 bytes), not a profile; was the run finalized?", path);
  unsigned char head[64];
  size_t nhead = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return sp__set_error(SP_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  nhead = fread(head, 1, sizeof head, f);
  fclose(f);
  enum kind k = sniff(head, nhead);
  if (k == K_HTML)
    return sp__set_error(SP_ERR_FORMAT, "%s is an HTML page (a report?), not a profile; pass the .h5, .json or "
                         ".spt file it was made from", path);
  if (k == K_HDF5 || k == K_UNKNOWN) return open_hdf5(path, out);
  char *data = NULL;
  sp_status st = read_whole(path, (uint64_t)sb.st_size, &data);
  if (st != SP_OK) return st;
  st = sp__results_open_bytes(data, (size_t)sb.st_size, path, out);
  free(data);
  return st;
}

sp_status sp__results_open_bytes(const void *data, size_t size, const char *name, sp_results **out) {
  *out = NULL;
  enum kind k = sniff(data, size);
  if (k == K_HDF5) return sp_results_open_image(data, size, out);
  if (k != K_JSON && k != K_SPT)
    return sp__set_error(SP_ERR_FORMAT, "%s is not an HDF5 file, a JSON profile or a native trace (.spt); pass a "
                         "profile written by scope-profiler", name);
  sp_results *r = sp__results_new();
  if (!r || !(r->path = sp__strdup(name))) {
    sp_results_free(r);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_status st = k == K_JSON ? sp__open_json(r, data, size) : sp__open_spt(r, data, size);
  if (st == SP_OK) st = sp__finish_open(r);
  sp__h5_quiet_end(&q);
  if (st != SP_OK) {
    sp_results_free(r);
    return st;
  }
  *out = r;
  return SP_OK;
}

sp_status sp_results_open_image(const void *image, size_t size, sp_results **out) {
  if (!out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_open_image: out is NULL");
  *out = NULL;
  if (!image || size < 8)
    return sp__set_error(SP_ERR_FORMAT, "the in-memory image (%zu bytes) is not an HDF5 file",
                         size);
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  sp_results *r = sp__results_new();
  if (!r) {
    sp__h5_quiet_end(&q);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  sp_status st = SP_OK;
  if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0 ||
      H5Pset_file_image(fapl, (void *)image, size) < 0)
    st = sp__set_error(SP_ERR_NO_MEMORY, "cannot set up an HDF5 in-memory file");
  if (st == SP_OK) {
    /* HDF5 hands back an already open file of the same name instead of
     * opening this image, so every image gets a name of its own. */
    static _Atomic unsigned long serial;
    char name[64];
    snprintf(name, sizeof name, "scope-profiler-image-%lu.h5", ++serial);
    r->file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    if (r->file < 0)
      st = sp__set_error(SP_ERR_FORMAT, "the in-memory image is not a valid HDF5 file");
    else st = load(r);
  }
  if (fapl >= 0) H5Pclose(fapl);
  return finish(r, st, out, &q);
}

void sp_results_free(sp_results *r) {
  if (!r) return;
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  hid_t *ds[] = {&r->ds_start, &r->ds_end, &r->ds_call, &r->ds_parent, &r->ds_thread, &r->ds_task, &r->ds_gpu,
                 &r->ds_await};
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
    if (*ds[i] >= 0) H5Dclose(*ds[i]);
  sp__vcols_free(r);
  if (r->file >= 0) H5Fclose(r->file);
  sp__h5_quiet_end(&q);
  free(r->mem_start);
  free(r->mem_end);
  free(r->mem_call);
  free(r->mem_parent);
  free(r->mem_thread);
  free(r->mem_task);
  free(r->mem_gpu);
  free(r->mem_await);
  free(r->lanes.threads);
  free(r->lanes.tasks);
  sp__free_strings(r->lanes.strings, r->lanes.nstrings);
  free(r->lanes.rank_starts);
  sp__lines_free(r->lines);
  for (size_t i = 0; i < r->nmeta; i++) {
    struct sp__meta *m = &r->meta[i];
    free(m->key);
    free(m->s);
    free(m->text);
    free(m->ints);
    free(m->floats);
    sp__free_strings(m->strings, m->e.n);
  }
  free(r->meta);
  sp__free_strings(r->names, r->nregions);
  for (size_t i = 0; i < r->nrows; i++) {
    free(r->rows[i].group);
    free(r->rows[i].source_file);
    free(r->rows[i].source_text);
    free(r->rows[i].tags);
  }
  free(r->rows);
  free(r->region_row_start);
  free(r->region_source_row);
  free(r->region_tags_row);
  free(r->region_rows);
  free(r->ranks);
  free(r->path);
  free(r->display_label);
  free(r);
}

/* ---- accessors ------------------------------------------------------------ */

int sp_results_schema(const sp_results *r) { return r ? r->schema : 0; }
const char *sp_results_source_format(const sp_results *r) { return r ? r->format : ""; }
const char *sp_results_layout(const sp_results *r) { return r ? r->layout : ""; }
int sp_results_has_events(const sp_results *r) { return r && !r->aggregate; }
const char *sp_results_path(const sp_results *r) { return r ? r->path : NULL; }
const char *sp_results_label(const sp_results *r) { return r ? r->label : NULL; }
const char *sp_results_display_label(const sp_results *r) { return r ? r->display_label : ""; }
uint64_t sp_results_num_events(const sp_results *r) { return r ? r->nevents : 0; }

size_t sp_results_num_metadata(const sp_results *r) { return r ? r->nmeta : 0; }
const sp_metadata_entry *sp_results_metadata_at(const sp_results *r, size_t i) {
  return r && i < r->nmeta ? &r->meta[i].e : NULL;
}
const sp_metadata_entry *sp_results_metadata(const sp_results *r, const char *key) {
  if (!r || !key) return NULL;
  for (size_t i = 0; i < r->nmeta; i++)
    if (!strcmp(r->meta[i].key, key)) return &r->meta[i].e;
  return NULL;
}

size_t sp_results_num_regions(const sp_results *r) { return r ? r->nregions : 0; }
const char *sp_results_region_name(const sp_results *r, size_t region) {
  return r && region < r->nregions ? r->names[region] : NULL;
}
sp_status sp_results_find_region(const sp_results *r, const char *name, size_t *region) {
  if (!r || !name || !region)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_find_region: NULL argument");
  for (size_t i = 0; i < r->nregions; i++)
    if (!strcmp(r->names[i], name)) {
      *region = i;
      return SP_OK;
    }
  return sp__set_error(SP_ERR_NOT_FOUND, "no region named '%s' in %s", name, FILE_NAME(r));
}

size_t sp_results_num_ranks(const sp_results *r) { return r ? r->nranks : 0; }
int64_t sp_results_rank(const sp_results *r, size_t i) {
  return r && i < r->nranks ? r->ranks[i] : -1;
}
int sp_results_has_rank(const sp_results *r, int64_t rank) {
  return r && bsearch(&rank, r->ranks, r->nranks, sizeof *r->ranks, sp__cmp_i64) != NULL;
}
size_t sp_results_region_num_ranks(const sp_results *r, size_t region) {
  if (!r || region >= r->nregions) return 0;
  size_t n = 0;
  int64_t last = -1;
  for (size_t k = r->region_row_start[region]; k < r->region_row_start[region + 1]; k++) {
    int64_t rank = r->rows[r->region_rows[k]].rank;
    if (n == 0 || rank != last) n++;
    last = rank;
  }
  return n;
}
int sp_results_has_threads(const sp_results *r) { return r && (r->ds_thread >= 0 || r->mem_thread); }
int sp_results_has_tasks(const sp_results *r) { return r && (r->ds_task >= 0 || r->mem_task); }
int sp_results_has_await(const sp_results *r) { return r && (r->ds_await >= 0 || r->mem_await); }
int sp_results_has_gpu(const sp_results *r) { return r && (r->ds_gpu >= 0 || r->hier_gpu || r->mem_gpu); }
int sp_results_has_call_ids(const sp_results *r) { return r && (r->ds_call >= 0 || (r->mem_call && r->mem_parent)); }

sp_status sp_results_thread_table(const sp_results *r, const sp_thread_info **rows, size_t *n) {
  if (!r || !rows || !n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_thread_table: NULL argument");
  *rows = r->lanes.threads;
  *n = r->lanes.nthreads;
  return SP_OK;
}

sp_status sp_results_task_table(const sp_results *r, const sp_task_info **rows, size_t *n) {
  if (!r || !rows || !n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_task_table: NULL argument");
  *rows = r->lanes.tasks;
  *n = r->lanes.ntasks;
  return SP_OK;
}

sp_status sp_results_rank_start_ns(const sp_results *r, int64_t rank, int64_t *ns) {
  if (!r || !ns) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_rank_start_ns: NULL argument");
  if (rank >= 0 && r->lanes.rank_starts && (uint64_t)rank < r->lanes.nrank_starts) {
    *ns = r->lanes.rank_starts[rank];
    return SP_OK;
  }
  const sp_metadata_entry *e = sp_results_metadata(r, SP_META_START_TIME_NS);
  if (e && e->kind == SP_VALUE_INT && (rank == 0 || !r->lanes.rank_starts)) {
    *ns = e->i;
    return SP_OK;
  }
  return sp__set_error(SP_ERR_NOT_FOUND, "%s records no start_time_ns for rank %lld", FILE_NAME(r), (long long)rank);
}

sp_status sp_results_region_source(const sp_results *r, size_t region, const char **file,
                                   int64_t *line, const char **text) {
  if (!r || region >= r->nregions)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_region_source: no region %zu", region);
  const struct sp__rrow *best = r->region_source_row[region] == SIZE_MAX ? NULL : &r->rows[r->region_source_row[region]];
  if (file) *file = best ? best->source_file : "";
  if (line) *line = best ? best->source_line : -1;
  if (text) *text = best ? best->source_text : "";
  return SP_OK;
}

const char *sp_results_region_tags(const sp_results *r, size_t region) {
  if (!r || region >= r->nregions) return "[]";
  return r->region_tags_row[region] == SIZE_MAX ? "[]" : r->rows[r->region_tags_row[region]].tags;
}

size_t sp_results_num_rows(const sp_results *r) { return r ? r->nrows : 0; }
sp_status sp_results_row_info(const sp_results *r, size_t row, sp_row_info *out) {
  if (!r || !out || row >= r->nrows)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_results_row_info: no row %zu", row);
  out->region = r->rows[row].region;
  out->rank = r->rows[row].rank;
  out->count = r->rows[row].has_summary ? r->rows[row].sum.count : r->rows[row].count;
  return SP_OK;
}

void sp_results_set_progress(sp_results *r, sp_progress_fn fn, void *ctx) {
  if (!r) return;
  r->progress = fn;
  r->progress_ctx = ctx;
}
