/* mpi_aux.c - the extensions' per-rank groups (run->aux: rank<N>/perf_events,
 * rank<N>/likwid, ...) in the byte buffers ranks send each other, for the
 * writers that gather them to rank 0 (the parallel writer's string pass, the
 * in-memory results). The direct writer needs none of this: each rank
 * writes its own groups while it holds the file.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "mpi/mpi_internal.h"

#define MAX_AUX 1000000 /* groups per rank */

static void pack_meta(struct sp_mbuf *b, const struct sp_meta *m) {
  sp__mb_u64(b, m->n);
  for (size_t i = 0; i < m->n; i++) {
    const struct sp_meta_item *it = &m->items[i];
    sp__mb_str(b, it->key);
    sp__mb_u64(b, (uint64_t)it->type);
    switch (it->type) {
    case SP_META_STR: sp__mb_str(b, it->s); break;
    case SP_META_I64: sp__mb_u64(b, (uint64_t)it->i); break;
    case SP_META_F64: sp__mb_bytes(b, &it->d, 8); break;
    case SP_META_STRLIST: {
      uint64_t n = 0;
      while (it->list && it->list[n]) n++;
      sp__mb_u64(b, n);
      for (uint64_t k = 0; k < n; k++) sp__mb_str(b, it->list[k]);
      break;
    }
    }
  }
}

void sp__mpi_aux_pack(const struct sp_run *run, struct sp_mbuf *b) {
  sp__mb_u64(b, run->naux);
  for (size_t i = 0; i < run->naux; i++) {
    const struct sp_aux_group *g = &run->aux[i];
    sp__mb_str(b, g->path);
    sp__mb_u64(b, g->rank);
    pack_meta(b, &g->attrs);
    sp__mb_u64(b, g->ndsets);
    for (size_t d = 0; d < g->ndsets; d++) {
      const struct sp_aux_dset *ds = &g->dsets[d];
      sp__mb_str(b, ds->name);
      sp__mb_u64(b, (uint64_t)ds->type);
      sp__mb_u64(b, (uint64_t)ds->ndims);
      sp__mb_u64(b, ds->dims[0]);
      sp__mb_u64(b, ds->dims[1]);
      uint64_t n = ds->dims[0] * (ds->ndims > 1 ? ds->dims[1] : 1);
      if (ds->type == SP_AUX_STR)
        for (uint64_t k = 0; k < n; k++) sp__mb_str(b, ((char **)ds->data)[k]);
      else
        sp__mb_bytes(b, ds->data, n * 8);
    }
  }
}

static int unpack_meta(struct sp_mrbuf *r, struct sp_meta *m) {
  uint64_t n = sp__mr_u64(r);
  if (r->bad || n > r->n) return -1;
  for (uint64_t i = 0; i < n && !r->bad; i++) {
    char *key = sp__mr_str(r);
    uint64_t type = sp__mr_u64(r);
    int rc = -1;
    if (!key || r->bad) {
      free(key);
      return -1;
    }
    if (type == SP_META_STR) {
      char *s = sp__mr_str(r);
      rc = s ? sp__meta_str(m, key, s) : -1;
      free(s);
    } else if (type == SP_META_I64) {
      rc = sp__meta_i64(m, key, (int64_t)sp__mr_u64(r));
    } else if (type == SP_META_F64) {
      const void *p = sp__mr_bytes(r, 8);
      double d = 0;
      if (p) memcpy(&d, p, 8);
      rc = p ? sp__meta_f64(m, key, d) : -1;
    } else if (type == SP_META_STRLIST) {
      uint64_t k = sp__mr_u64(r);
      char **v = !r->bad && k <= r->n ? calloc(k + 1, sizeof *v) : NULL;
      rc = v ? 0 : -1;
      for (uint64_t j = 0; v && j < k && rc == 0; j++)
        if (!(v[j] = sp__mr_str(r))) rc = -1;
      if (rc == 0) rc = sp__meta_strlist(m, key, v, k);
      for (uint64_t j = 0; v && j < k; j++) free(v[j]);
      free(v);
    }
    free(key);
    if (rc != 0) return -1;
  }
  return r->bad ? -1 : 0;
}

int sp__mpi_aux_unpack(struct sp_mrbuf *r, struct sp_run *out) {
  uint64_t n = sp__mr_u64(r);
  if (r->bad || n > MAX_AUX || n > r->n) return -1;
  if (!n) return 0;
  out->aux = calloc(n, sizeof *out->aux);
  if (!out->aux) return -1;
  for (uint64_t i = 0; i < n; i++) {
    struct sp_aux_group *g = &out->aux[out->naux++];
    g->path = sp__mr_str(r);
    g->rank = (uint32_t)sp__mr_u64(r);
    if (!g->path || unpack_meta(r, &g->attrs) != 0) return -1;
    uint64_t nd = sp__mr_u64(r);
    if (r->bad || nd > r->n) return -1;
    g->dsets = calloc(nd + 1, sizeof *g->dsets);
    if (!g->dsets) return -1;
    for (uint64_t d = 0; d < nd; d++) {
      struct sp_aux_dset *ds = &g->dsets[g->ndsets++];
      ds->name = sp__mr_str(r);
      uint64_t type = sp__mr_u64(r), ndims = sp__mr_u64(r);
      ds->dims[0] = sp__mr_u64(r);
      ds->dims[1] = sp__mr_u64(r);
      if (!ds->name || r->bad || type > SP_AUX_STR || ndims < 1 || ndims > 2) return -1;
      ds->type = (enum sp_aux_type)type;
      ds->ndims = (int)ndims;
      uint64_t cnt = ds->dims[0] * (ndims > 1 ? ds->dims[1] : 1);
      if ((ds->dims[0] && cnt / ds->dims[0] != (ndims > 1 ? ds->dims[1] : 1)) || cnt > r->n) return -1;
      if (ds->type == SP_AUX_STR) {
        char **v = calloc(cnt + 1, sizeof *v);
        ds->data = v;
        if (!v) return -1;
        for (uint64_t k = 0; k < cnt; k++)
          if (!(v[k] = sp__mr_str(r))) return -1;
      } else {
        const void *p = sp__mr_bytes(r, cnt * 8);
        ds->data = malloc(cnt * 8 + 1);
        if (!p || !ds->data) return -1;
        memcpy(ds->data, p, cnt * 8);
      }
    }
  }
  return r->bad ? -1 : 0;
}
