/* mpi_layout.c - the shape of a job's file and how ranks agree on it.
 *
 * Each rank's run has its own region names, rows and events. The job's file
 * has one region table, rows rank after rank, events in the same order, and
 * column/table lists that are unions over the ranks. Rank 0 works this out
 * from every rank's shape (names, counts, column names: no event data) and
 * sends back the layout plus each rank's place: where its rows, events and
 * table rows start, and how its region indices map onto the region table.
 * Region names are numbered in order of first appearance, rank 0's first,
 * so every writer (direct, parallel, in memory) produces the same file.
 *
 * Runs travel as byte strings (sp__mpi_run_pack): raw native values, which
 * assumes every rank has the same byte order and type sizes (as MPI_BYTE
 * transfers do).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "mpi/mpi_internal.h"

/*====== Byte buffers ======*/

void sp__mb_bytes(struct sp_mbuf *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, p, n);
  b->n += n;
}

void sp__mb_u64(struct sp_mbuf *b, uint64_t v) { sp__mb_bytes(b, &v, sizeof v); }

void sp__mb_str(struct sp_mbuf *b, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  sp__mb_u64(b, n);
  sp__mb_bytes(b, s, n);
}

void sp__mb_free(struct sp_mbuf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

const void *sp__mr_bytes(struct sp_mrbuf *r, size_t n) {
  if (r->bad || n > r->n - r->pos) {
    r->bad = 1;
    return NULL;
  }
  const void *p = r->p + r->pos;
  r->pos += n;
  return p;
}

uint64_t sp__mr_u64(struct sp_mrbuf *r) {
  const void *p = sp__mr_bytes(r, sizeof(uint64_t));
  uint64_t v = 0;
  if (p) memcpy(&v, p, sizeof v);
  return v;
}

char *sp__mr_str(struct sp_mrbuf *r) {
  uint64_t n = sp__mr_u64(r);
  const char *p = r->bad ? NULL : sp__mr_bytes(r, (size_t)n);
  char *s = p ? sp__strndup(p, (size_t)n) : NULL;
  if (!s) r->bad = 1;
  return s;
}

/* Rank 0 decides; everyone learns the outcome, so no rank is left waiting
 * in a collective the others skipped. */
static sp_status agree(MPI_Comm comm, sp_status st) {
  int v = (int)st;
  PMPI_Bcast(&v, 1, MPI_INT, 0, comm);
  return (sp_status)v;
}

sp_status sp__mpi_gather_bytes(const struct sp_mbuf *mine, char **all, size_t **sizes) {
  MPI_Comm comm = sp__mpi.comm;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  *all = NULL;
  *sizes = NULL;
  uint64_t n = mine->n;
  uint64_t *ns = rank == 0 ? malloc((size_t)size * sizeof *ns) : NULL;
  int *counts = rank == 0 ? malloc((size_t)size * sizeof *counts) : NULL;
  int *displs = rank == 0 ? malloc((size_t)size * sizeof *displs) : NULL;
  sp_status st = SP_OK;
  if (rank == 0 && (!ns || !counts || !displs)) st = SP_ERR_NO_MEMORY;
  PMPI_Gather(&n, 1, MPI_UINT64_T, ns, 1, MPI_UINT64_T, 0, comm);
  uint64_t total = 0;
  for (int r = 0; rank == 0 && st == SP_OK && r < size; r++) {
    if (ns[r] > INT_MAX || total + ns[r] > INT_MAX) {
      st = sp__set_error(SP_ERR_LIMIT, "MPI: more than 2 GiB of region names and sizes to gather on rank 0");
      break;
    }
    counts[r] = (int)ns[r];
    displs[r] = (int)total;
    total += ns[r];
  }
  if (rank == 0 && st == SP_OK && !(*all = malloc(total ? total : 1))) st = SP_ERR_NO_MEMORY;
  st = agree(comm, st);
  if (st == SP_OK) {
    PMPI_Gatherv(mine->p ? mine->p : "", (int)n, MPI_BYTE, *all, counts, displs, MPI_BYTE, 0, comm);
    if (rank == 0) {
      *sizes = malloc((size_t)size * sizeof **sizes);
      if (*sizes)
        for (int r = 0; r < size; r++) (*sizes)[r] = (size_t)ns[r];
      else
        st = SP_ERR_NO_MEMORY;
    }
  }
  if (st != SP_OK) {
    free(*all);
    *all = NULL;
    if (st == SP_ERR_NO_MEMORY) sp__set_error(st, "MPI: out of memory gathering on rank 0");
    else if (rank != 0) sp__set_error(st, "MPI: rank 0 could not gather the ranks' parts (see rank 0's error)");
  }
  free(ns);
  free(counts);
  free(displs);
  return st;
}

/*====== Packing runs ======*/

static void pack_meta(struct sp_mbuf *b, const struct sp_meta *m) {
  sp__mb_u64(b, m->n);
  for (size_t i = 0; i < m->n; i++) {
    const struct sp_meta_item *it = &m->items[i];
    sp__mb_str(b, it->key);
    sp__mb_u64(b, (uint64_t)it->type);
    switch (it->type) {
    case SP_META_STR: sp__mb_str(b, it->s); break;
    case SP_META_I64: sp__mb_u64(b, (uint64_t)it->i); break;
    case SP_META_F64: sp__mb_bytes(b, &it->d, sizeof it->d); break;
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

static void unpack_meta(struct sp_mrbuf *r, struct sp_meta *m) {
  uint64_t n = sp__mr_u64(r);
  if (n > r->n) r->bad = 1;
  for (uint64_t i = 0; i < n && !r->bad; i++) {
    char *key = sp__mr_str(r);
    uint64_t type = sp__mr_u64(r);
    if (!key) break;
    if (type == SP_META_STR) {
      char *v = sp__mr_str(r);
      if (!v || sp__meta_str(m, key, v) != 0) r->bad = 1;
      free(v);
    } else if (type == SP_META_I64) {
      if (sp__meta_i64(m, key, (int64_t)sp__mr_u64(r)) != 0) r->bad = 1;
    } else if (type == SP_META_F64) {
      double d = 0;
      const void *p = sp__mr_bytes(r, sizeof d);
      if (p) memcpy(&d, p, sizeof d);
      if (!p || sp__meta_f64(m, key, d) != 0) r->bad = 1;
    } else if (type == SP_META_STRLIST) {
      uint64_t k = sp__mr_u64(r);
      char **v = k <= r->n ? calloc(k + 1, sizeof *v) : NULL;
      if (!v) r->bad = 1;
      for (uint64_t j = 0; v && j < k && !r->bad; j++) v[j] = sp__mr_str(r);
      if (v && !r->bad && sp__meta_strlist(m, key, v, (size_t)k) != 0) r->bad = 1;
      for (uint64_t j = 0; v && j < k; j++) free(v[j]);
      free(v);
    } else {
      r->bad = 1;
    }
    free(key);
  }
}

static uint64_t node_count(const struct sp_node_ds *d) { return d->dims[0] * (d->ndims > 1 ? d->dims[1] : 1); }

static void pack_node(struct sp_mbuf *b, const struct sp_node *n) {
  sp__mb_str(b, n->name);
  pack_meta(b, &n->attrs);
  sp__mb_u64(b, n->nds);
  for (size_t i = 0; i < n->nds; i++) {
    const struct sp_node_ds *d = &n->ds[i];
    sp__mb_str(b, d->name);
    sp__mb_u64(b, (uint64_t)d->dtype);
    sp__mb_u64(b, (uint64_t)d->ndims);
    sp__mb_u64(b, d->dims[0]);
    sp__mb_u64(b, d->dims[1]);
    uint64_t c = node_count(d);
    if (d->dtype == SP_DT_STR)
      for (uint64_t k = 0; k < c; k++) sp__mb_str(b, ((char **)d->data)[k]);
    else
      sp__mb_bytes(b, d->data, c * 8);
  }
  sp__mb_u64(b, n->nkids);
  for (size_t i = 0; i < n->nkids; i++) pack_node(b, n->kids[i]);
}

static void unpack_node(struct sp_mrbuf *r, struct sp_node *n, int depth) {
  memset(n, 0, sizeof *n);
  if (depth > 32) {
    r->bad = 1;
    return;
  }
  n->name = sp__mr_str(r);
  unpack_meta(r, &n->attrs);
  uint64_t nds = sp__mr_u64(r);
  if (r->bad || nds > r->n) {
    r->bad = 1;
    return;
  }
  for (uint64_t i = 0; i < nds && !r->bad; i++) {
    char *name = sp__mr_str(r);
    enum sp_dtype t = (enum sp_dtype)sp__mr_u64(r);
    int nd = (int)sp__mr_u64(r);
    uint64_t dims[2] = {sp__mr_u64(r), sp__mr_u64(r)};
    struct sp_node_ds *d = name && !r->bad && (dims[0] <= r->n || dims[1] <= 1) ? sp__node_add_ds(n, name, t, nd, dims)
                                                                                  : NULL;
    free(name);
    if (!d) {
      r->bad = 1;
      break;
    }
    uint64_t c = node_count(d);
    if (t == SP_DT_STR)
      for (uint64_t k = 0; k < c && !r->bad; k++) ((char **)d->data)[k] = sp__mr_str(r);
    else {
      const void *p = c <= r->n ? sp__mr_bytes(r, c * 8) : NULL;
      if (p) memcpy(d->data, p, c * 8);
      else r->bad = 1;
    }
  }
  uint64_t nk = sp__mr_u64(r);
  if (r->bad || nk > r->n || !(n->kids = calloc(nk + 1, sizeof *n->kids))) {
    r->bad = 1;
    return;
  }
  for (uint64_t i = 0; i < nk && !r->bad; i++) {
    if (!(n->kids[i] = calloc(1, sizeof *n->kids[i]))) {
      r->bad = 1;
      break;
    }
    n->nkids = i + 1;
    unpack_node(r, n->kids[i], depth + 1);
  }
}

/* The table column k of group g is a string column. */
static int table_str(enum sp_group g, size_t k) {
  int first = 0, nc = 0;
  sp__plan_table_columns(g, &first, &nc);
  const struct sp_plan_ds *d = sp__plan(first + (int)k);
  return d && d->dtype == SP_DT_STR;
}

void sp__mpi_run_pack(const struct sp_run *run, unsigned what, struct sp_mbuf *b) {
  sp__mb_str(b, run->layout);
  sp__mb_u64(b, run->nnames);
  for (size_t i = 0; i < run->nnames; i++) sp__mb_str(b, run->names[i]);
  sp__mb_u64(b, run->nrows);
  sp__mb_u64(b, run->nevents);
  /* 0: no ids; 1: ids the file needs; 2: ids the intervals make redundant */
  sp__mb_u64(b, run->call_id != NULL || run->has_ids ? (run->ids_redundant ? 2 : 1) : 0);
  sp__mb_u64(b, run->nextra);
  /* by name: extension ids are this process's */
  for (size_t i = 0; i < run->nextra; i++) sp__mb_str(b, sp__plan(run->extra[i].id)->name);
  sp__mb_u64(b, run->ntables);
  for (size_t i = 0; i < run->ntables; i++) {
    const struct sp_table *t = &run->tables[i];
    sp__mb_u64(b, (uint64_t)t->group);
    sp__mb_u64(b, t->nrows);
    sp__mb_u64(b, t->ncols);
    sp__mb_u64(b, sp__table_mask(t));
  }
  if (what & SP_PACK_STRINGS) {
    for (size_t i = 0; i < run->nrows; i++) {
      sp__mb_str(b, run->rows[i].source_file);
      sp__mb_str(b, run->rows[i].source_text);
      sp__mb_str(b, run->rows[i].tags_json ? run->rows[i].tags_json : "[]");
    }
    for (size_t i = 0; i < run->ntables; i++) {
      const struct sp_table *t = &run->tables[i];
      for (size_t c = 0; c < t->ncols; c++)
        if (t->cols[c] && table_str(t->group, c))
          for (size_t r = 0; r < t->nrows; r++) sp__mb_str(b, ((char **)t->cols[c])[r]);
      pack_meta(b, &t->attrs);
    }
    sp__mb_u64(b, run->ngroups);
    for (size_t i = 0; i < run->ngroups; i++) pack_node(b, run->groups[i]);
  }
  if (what & SP_PACK_NUMERIC) {
    for (size_t i = 0; i < run->nrows; i++) {
      const struct sp_row *r = &run->rows[i];
      sp__mb_u64(b, r->region);
      sp__mb_u64(b, r->rank);
      sp__mb_u64(b, r->offset);
      sp__mb_u64(b, r->count);
      sp__mb_u64(b, (uint64_t)r->source_line);
      sp__mb_u64(b, (uint64_t)r->exclusive_total);
      sp__mb_u64(b, (uint64_t)r->aggregate_count);
      sp__mb_bytes(b, &r->stats, sizeof r->stats);
    }
    size_t n = run->start ? run->nevents : 0;
    sp__mb_bytes(b, run->start, n * 8);
    sp__mb_bytes(b, run->end, n * 8);
    if (run->call_id) {
      sp__mb_bytes(b, run->call_id, n * 8);
      sp__mb_bytes(b, run->parent_id, n * 8);
    }
    for (size_t i = 0; i < run->nextra; i++) sp__mb_bytes(b, run->extra[i].data, n * 8);
    for (size_t i = 0; i < run->ntables; i++) {
      const struct sp_table *t = &run->tables[i];
      for (size_t c = 0; c < t->ncols; c++)
        if (t->cols[c] && !table_str(t->group, c)) sp__mb_bytes(b, t->cols[c], t->nrows * 8);
    }
  }
}

/* Copies n*elem bytes from the buffer into a fresh allocation (at least
 * one element, as the core allocates). */
static void *take(struct sp_mrbuf *r, size_t n, size_t elem) {
  void *d = malloc((n ? n : 1) * elem);
  const void *p = n <= r->n ? sp__mr_bytes(r, n * elem) : NULL;
  if (!d || !p) {
    free(d);
    r->bad = 1;
    return NULL;
  }
  memcpy(d, p, n * elem);
  return d;
}

sp_status sp__mpi_run_unpack(struct sp_mrbuf *r, unsigned what, struct sp_run *out) {
  memset(out, 0, sizeof *out);
  char *layout = sp__mr_str(r);
  /* The layout string points at a literal in the core's runs. */
  out->layout = layout && strcmp(layout, "aggregate") == 0 ? "aggregate" : "columnar";
  free(layout);
  uint64_t nn = sp__mr_u64(r);
  if (r->bad || nn > r->n) goto bad;
  out->names = calloc(nn + 1, sizeof *out->names);
  if (!out->names) goto bad;
  out->nnames = nn;
  for (size_t i = 0; i < nn && !r->bad; i++) out->names[i] = sp__mr_str(r);
  uint64_t nrows = sp__mr_u64(r), nev = sp__mr_u64(r);
  uint64_t ids = sp__mr_u64(r);
  out->has_ids = ids != 0;
  out->ids_redundant = ids == 2;
  uint64_t nextra = sp__mr_u64(r);
  if (r->bad || nrows > r->n || nextra > SP_PLAN_MAX_EXT_COLUMNS + SP_DS_NBUILTIN) goto bad;
  out->nevents = nev;
  out->extra = calloc(nextra + 1, sizeof *out->extra);
  if (!out->extra) goto bad;
  for (size_t i = 0; i < nextra && !r->bad; i++) {
    char *name = sp__mr_str(r);
    int id = sp__plan_find(SP_GRP_EVENTS, name);
    free(name);
    if (id < 0) {
      free(out->extra);
      out->extra = NULL;
      sp__run_free(out);
      return sp__set_error(SP_ERR_CONFLICT, "MPI: a rank recorded an event column this rank does not know; "
                           "run the same build with the same settings on every rank");
    }
    out->extra[i].id = id;
    out->nextra = i + 1;
  }
  uint64_t nt = sp__mr_u64(r);
  if (r->bad || nt > SP_NGROUPS) goto bad;
  out->tables = calloc(nt + 1, sizeof *out->tables);
  if (!out->tables) goto bad;
  uint64_t masks[SP_NGROUPS] = {0};
  for (size_t i = 0; i < nt && !r->bad; i++) {
    uint64_t g = sp__mr_u64(r), rows = sp__mr_u64(r), nc = sp__mr_u64(r);
    masks[i] = sp__mr_u64(r);
    int first = 0, want = 0;
    if (r->bad || g >= SP_NGROUPS || sp__plan_table_columns((enum sp_group)g, &first, &want) != 0 ||
        nc != (uint64_t)want || rows > r->n)
      goto bad;
    struct sp_table *t = &out->tables[i];
    t->group = (enum sp_group)g;
    t->nrows = rows;
    t->ncols = nc;
    if (!(t->cols = calloc(nc + 1, sizeof *t->cols))) goto bad;
    out->ntables = i + 1;
    /* recorded columns exist even in a shape: the layout goes by them */
    for (size_t c = 0; c < nc; c++)
      if (((masks[i] >> c) & 1) && !(t->cols[c] = calloc(rows + 1, 8))) goto bad;
  }
  if (r->bad) goto bad;
  if (!(out->rows = calloc(nrows + 1, sizeof *out->rows))) goto bad;
  out->nrows = nrows;
  if (what & SP_PACK_STRINGS) {
    for (size_t i = 0; i < nrows && !r->bad; i++) {
      out->rows[i].source_file = sp__mr_str(r);
      out->rows[i].source_text = sp__mr_str(r);
      out->rows[i].tags_json = sp__mr_str(r);
    }
    for (size_t i = 0; i < out->ntables && !r->bad; i++) {
      struct sp_table *t = &out->tables[i];
      for (size_t c = 0; c < t->ncols && !r->bad; c++) {
        if (!t->cols[c] || !table_str(t->group, c)) continue;
        char **v = t->cols[c];
        for (size_t k = 0; k < t->nrows && !r->bad; k++) v[k] = sp__mr_str(r);
      }
      if (!r->bad) unpack_meta(r, &t->attrs);
    }
    uint64_t ng = sp__mr_u64(r);
    if (r->bad || ng > SP_PLAN_MAX_RANK_GROUPS || !(out->groups = calloc(ng + 1, sizeof *out->groups))) goto bad;
    for (uint64_t i = 0; i < ng && !r->bad; i++) {
      if (!(out->groups[i] = calloc(1, sizeof *out->groups[i]))) goto bad;
      out->ngroups = i + 1;
      unpack_node(r, out->groups[i], 0);
    }
  }
  if (what & SP_PACK_NUMERIC) {
    for (size_t i = 0; i < nrows && !r->bad; i++) {
      struct sp_row *w = &out->rows[i];
      w->region = (uint32_t)sp__mr_u64(r);
      w->rank = (uint32_t)sp__mr_u64(r);
      w->offset = sp__mr_u64(r);
      w->count = sp__mr_u64(r);
      w->source_line = (int64_t)sp__mr_u64(r);
      w->exclusive_total = (int64_t)sp__mr_u64(r);
      w->aggregate_count = (int64_t)sp__mr_u64(r);
      const void *s = sp__mr_bytes(r, sizeof w->stats);
      if (s) memcpy(&w->stats, s, sizeof w->stats);
      if (w->region >= nn) r->bad = 1;
    }
    if (r->bad || nev > r->n) goto bad;
    out->start = take(r, nev, 8);
    out->end = take(r, nev, 8);
    if (out->has_ids) {
      out->call_id = take(r, nev, 8);
      out->parent_id = take(r, nev, 8);
    }
    for (size_t i = 0; i < out->nextra && !r->bad; i++) out->extra[i].data = take(r, nev, 8);
    for (size_t i = 0; i < out->ntables && !r->bad; i++) {
      struct sp_table *t = &out->tables[i];
      for (size_t c = 0; c < t->ncols && !r->bad; c++) {
        if (!t->cols[c] || table_str(t->group, c)) continue;
        const void *p = t->nrows <= r->n ? sp__mr_bytes(r, t->nrows * 8) : NULL;
        if (p) memcpy(t->cols[c], p, t->nrows * 8);
        else r->bad = 1;
      }
    }
  }
  if (r->bad) goto bad;
  return SP_OK;
bad:
  sp__run_free(out);
  return sp__set_error(SP_ERR_MPI, "MPI: a rank's part arrived damaged or memory ran out unpacking it");
}

/*====== The layout ======*/

static void layout_pack(const struct sp_layout *L, struct sp_mbuf *b) {
  sp__mb_u64(b, (uint64_t)L->schema);
  sp__mb_u64(b, (uint64_t)L->aggregate);
  sp__mb_u64(b, L->nrows);
  sp__mb_u64(b, L->nevents);
  sp__mb_u64(b, L->ncols);
  for (size_t i = 0; i < L->ncols; i++) sp__mb_str(b, sp__plan(L->cols[i])->name);
  for (int g = 0; g < SP_NGROUPS; g++) {
    sp__mb_u64(b, L->table_rows[g]);
    sp__mb_u64(b, L->table_cols[g]);
  }
}

static int layout_unpack(struct sp_mrbuf *r, struct sp_layout *L) {
  memset(L, 0, sizeof *L);
  L->schema = (int)sp__mr_u64(r);
  L->aggregate = (int)sp__mr_u64(r);
  L->nrows = sp__mr_u64(r);
  L->nevents = sp__mr_u64(r);
  uint64_t nc = sp__mr_u64(r);
  if (r->bad || nc > SP_DS_NBUILTIN + SP_PLAN_MAX_EXT_COLUMNS || !(L->cols = calloc(nc + 1, sizeof *L->cols)))
    return -1;
  for (size_t i = 0; i < nc && !r->bad; i++) {
    char *name = sp__mr_str(r);
    int id = sp__plan_find(SP_GRP_EVENTS, name);
    free(name);
    if (id < 0) return -1;
    L->cols[L->ncols++] = id;
  }
  for (int g = 0; g < SP_NGROUPS; g++) {
    L->table_rows[g] = sp__mr_u64(r);
    L->table_cols[g] = sp__mr_u64(r);
  }
  return r->bad ? -1 : 0;
}

static void place_pack(const struct sp_place *p, struct sp_mbuf *b) {
  sp__mb_u64(b, p->row0);
  sp__mb_u64(b, p->ev0);
  sp__mb_u64(b, p->nnames);
  sp__mb_bytes(b, p->name_map, p->nnames * sizeof *p->name_map);
  for (int g = 0; g < SP_NGROUPS; g++) sp__mb_u64(b, p->table_row0[g]);
}

static int place_unpack(struct sp_mrbuf *r, struct sp_place *p) {
  memset(p, 0, sizeof *p);
  p->row0 = sp__mr_u64(r);
  p->ev0 = sp__mr_u64(r);
  p->nnames = sp__mr_u64(r);
  if (r->bad || p->nnames > r->n) return -1;
  p->name_map = take(r, p->nnames, sizeof *p->name_map);
  for (int g = 0; g < SP_NGROUPS; g++) p->table_row0[g] = sp__mr_u64(r);
  return r->bad ? -1 : 0;
}

sp_status sp__mpi_layout_exchange(const struct sp_run *run, int schema, struct sp_layout *L, struct sp_place *mine,
                                  struct sp_place **all) {
  MPI_Comm comm = sp__mpi.comm;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  memset(L, 0, sizeof *L);
  memset(mine, 0, sizeof *mine);
  *all = NULL;
  struct sp_mbuf shape = {0};
  sp__mpi_run_pack(run, SP_PACK_SHAPE, &shape);
  /* Every rank must reach the gather even after running out of memory: an
   * empty shape tells rank 0, which fails the whole layout. */
  if (shape.oom) shape.n = 0;
  char *blob = NULL;
  size_t *sizes = NULL;
  sp_status st = sp__mpi_gather_bytes(&shape, &blob, &sizes);
  sp__mb_free(&shape);
  if (st != SP_OK) return st;

  /* Rank 0: parse the shapes, build the layout and the places. */
  struct sp_mbuf lay = {0}, pls = {0};
  int *pcounts = NULL, *pdispls = NULL;
  struct sp_run *parts = NULL;
  char errmsg[512] = "";
  if (rank == 0) {
    parts = calloc((size_t)size, sizeof *parts);
    *all = calloc((size_t)size, sizeof **all);
    pcounts = calloc((size_t)size, sizeof *pcounts);
    pdispls = calloc((size_t)size, sizeof *pdispls);
    if (!parts || !*all || !pcounts || !pdispls) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory");
    size_t off = 0;
    for (int r = 0; r < size && st == SP_OK; r++) {
      struct sp_mrbuf rb = {blob + off, sizes[r], 0, 0};
      off += sizes[r];
      if (sizes[r] == 0) {
        st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: rank %d ran out of memory describing its part", r);
        break;
      }
      st = sp__mpi_run_unpack(&rb, SP_PACK_SHAPE, &parts[r]);
    }
    if (st == SP_OK) st = sp__layout_build(parts, size, schema, L, *all);
    if (st == SP_OK) {
      layout_pack(L, &lay);
      for (int r = 0; r < size; r++) {
        size_t before = pls.n;
        place_pack(&(*all)[r], &pls);
        if (pls.n - before > INT_MAX || pls.n > INT_MAX) {
          st = sp__set_error(SP_ERR_LIMIT, "MPI: the job's region map exceeds 2 GiB");
          break;
        }
        pcounts[r] = (int)(pls.n - before);
        pdispls[r] = (int)before;
      }
      if (lay.oom || pls.oom) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory");
    }
    if (st != SP_OK) snprintf(errmsg, sizeof errmsg, "%s", sp_last_error());
    for (int r = 0; parts && r < size; r++) sp__run_free(&parts[r]);
    free(parts);
  }
  free(blob);
  free(sizes);

  /* The layout to everyone, with rank 0's verdict. */
  uint64_t hdr[2] = {(uint64_t)(int64_t)st, lay.n};
  PMPI_Bcast(hdr, 2, MPI_UINT64_T, 0, comm);
  st = (sp_status)(int64_t)hdr[0];
  if (st != SP_OK) {
    PMPI_Bcast(errmsg, sizeof errmsg, MPI_CHAR, 0, comm);
    if (rank != 0) sp__set_error(st, "%s", errmsg);
    goto fail;
  }
  if (rank != 0 && !(lay.p = malloc(hdr[1] ? hdr[1] : 1))) {
    /* Still take part in the broadcasts below; fail afterwards. */
    st = SP_ERR_NO_MEMORY;
  }
  {
    char dummy;
    PMPI_Bcast(lay.p ? lay.p : &dummy, lay.p ? (int)hdr[1] : 0, MPI_BYTE, 0, comm);
  }
  if (rank != 0 && lay.p) {
    struct sp_mrbuf rb = {lay.p, hdr[1], 0, 0};
    if (layout_unpack(&rb, L) != 0) st = SP_ERR_NO_MEMORY;
  }
  /* Each rank's place. */
  int pcount = 0;
  PMPI_Scatter(pcounts, 1, MPI_INT, &pcount, 1, MPI_INT, 0, comm);
  char *pbuf = malloc(pcount ? (size_t)pcount : 1);
  PMPI_Scatterv(pls.p, pcounts, pdispls, MPI_BYTE, pbuf ? pbuf : (char *)&pcount, pbuf ? pcount : 0, MPI_BYTE, 0,
                comm);
  if (pbuf) {
    struct sp_mrbuf rb = {pbuf, (size_t)pcount, 0, 0};
    if (place_unpack(&rb, mine) != 0) st = SP_ERR_NO_MEMORY;
  } else {
    st = SP_ERR_NO_MEMORY;
  }
  free(pbuf);
  /* Everyone must agree before anyone writes. */
  {
    int bad = st != SP_OK, anybad = 0;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
    if (anybad && st == SP_OK) st = sp__set_error(SP_ERR_NO_MEMORY, "MPI: another rank ran out of memory laying out the file");
    else if (st != SP_OK) sp__set_error(st, "MPI: out of memory receiving the job's layout");
  }
fail:
  sp__mb_free(&lay);
  sp__mb_free(&pls);
  free(pcounts);
  free(pdispls);
  if (st != SP_OK) {
    sp__layout_free(L);
    sp__place_free(mine);
    for (int r = 0; *all && r < size; r++) sp__place_free(&(*all)[r]);
    free(*all);
    *all = NULL;
  }
  return st;
}
