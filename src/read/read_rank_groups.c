/* read_rank_groups.c - the walk over rank<N>/<sub>/<group> that the counter
 * and LIKWID readers share (rank_groups.h).
 *
 * Only hard links named rank<digits> (at most SP__MAX_RANK) count as ranks;
 * anything else at the root belongs to other parts of the format and is
 * passed over. Below <sub>, every entry must be a group: a soft or external
 * link, or a dataset, is a format error naming it, never followed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/rank_groups.h"

struct walk {
  sp_results *r;
  const struct sp__rank_walk *spec;
  int64_t rank;
  char *rows;
  size_t n, cap;
  sp_status st;
};

sp_status sp__rank_group_bad(const char *kind, const char *path, const char *what) {
  return sp__set_error(SP_ERR_FORMAT, "%s group %s: %s; the file is damaged or not a scope-profiler file", kind, path,
                       what);
}

static herr_t group_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  struct walk *w = data;
  const struct sp__rank_walk *s = w->spec;
  char path[1200];
  snprintf(path, sizeof path, "rank%lld/%s/%s", (long long)w->rank, s->sub, name);
  if (info->type != H5L_TYPE_HARD) {
    w->st = sp__rank_group_bad(s->kind, path, "is a link, not a group");
    return -1;
  }
  H5O_info_t oi;
#if H5_VERSION_GE(1, 10, 3)
  herr_t got = H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT);
#else
  herr_t got = H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT);
#endif
  if (got < 0 || oi.type != H5O_TYPE_GROUP) {
    w->st = sp__rank_group_bad(s->kind, path, "is not a group");
    return -1;
  }
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 16;
    char *grown = realloc(w->rows, cap * s->row_size);
    if (!grown) {
      w->st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
      return -1;
    }
    w->rows = grown;
    w->cap = cap;
  }
  hid_t rg = H5Gopen2(g, name, H5P_DEFAULT);
  if (rg < 0) {
    w->st = sp__rank_group_bad(s->kind, path, "cannot be opened");
    return -1;
  }
  void *row = w->rows + w->n * s->row_size;
  memset(row, 0, s->row_size);
  sp_status st = s->read(w->r, rg, name, path, w->rank, row);
  H5Gclose(rg);
  if (st != SP_OK) {
    s->clear(row);
    w->st = st;
    return -1;
  }
  w->n++;
  return 0;
}

static herr_t rank_cb(hid_t root, const char *name, const H5L_info_t *info, void *data) {
  struct walk *w = data;
  if (info->type != H5L_TYPE_HARD || strncmp(name, "rank", 4) != 0 || !name[4]) return 0;
  long long rank = 0;
  for (const char *p = name + 4; *p; p++) {
    if (*p < '0' || *p > '9' || rank > SP__MAX_RANK / 10) return 0;
    rank = rank * 10 + (*p - '0');
  }
  char path[64];
  snprintf(path, sizeof path, "%s/%s", name, w->spec->sub);
  if (!sp__hard_path(root, path)) return 0; /* nothing of this kind on this rank (or behind a link that could leave the file) */
  hid_t g = H5Gopen2(root, path, H5P_DEFAULT);
  if (g < 0) {
    w->st = sp__rank_group_bad(w->spec->kind, path, "is not a group");
    return -1;
  }
  w->rank = rank;
  hsize_t idx = 0;
  herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, group_cb, w);
  H5Gclose(g);
  return rc < 0 ? -1 : 0;
}

sp_status sp__rank_walk(sp_results *r, const struct sp__rank_walk *spec, void **rows, size_t *n) {
  *rows = NULL;
  *n = 0;
  if (r->file < 0) return SP_OK; /* results held in memory (JSON, native traces): no rank groups */
  struct walk w = {r, spec, 0, NULL, 0, 0, SP_OK};
  struct sp__h5quiet q;
  sp__h5_quiet_begin(&q);
  hsize_t idx = 0;
  herr_t rc = H5Literate(r->file, H5_INDEX_NAME, H5_ITER_INC, &idx, rank_cb, &w);
  sp__h5_quiet_end(&q);
  if (rc < 0 || w.st != SP_OK) {
    for (size_t i = 0; i < w.n; i++) spec->clear(w.rows + i * spec->row_size);
    free(w.rows);
    return w.st != SP_OK ? w.st : sp__set_error(SP_ERR_FORMAT, "the file's rank groups cannot be listed");
  }
  *rows = w.rows;
  *n = w.n;
  return SP_OK;
}
