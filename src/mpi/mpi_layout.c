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

static size_t col_elem(enum sp_col_type t) { return t == SP_COL_U32 ? 4 : 8; }

void sp__mpi_run_pack(const struct sp_run *run, unsigned what, struct sp_mbuf *b) {
  sp__mb_str(b, run->layout);
  sp__mb_u64(b, run->nnames);
  for (size_t i = 0; i < run->nnames; i++) sp__mb_str(b, run->names[i]);
  sp__mb_u64(b, run->nrows);
  sp__mb_u64(b, run->nevents);
  sp__mb_u64(b, run->nextra);
  for (size_t i = 0; i < run->nextra; i++) {
    sp__mb_str(b, run->extra[i].name);
    sp__mb_u64(b, (uint64_t)run->extra[i].type);
  }
  sp__mb_u64(b, run->ntables);
  for (size_t i = 0; i < run->ntables; i++) {
    const struct sp_table *t = &run->tables[i];
    sp__mb_str(b, t->name);
    sp__mb_u64(b, t->nrows);
    sp__mb_u64(b, t->ncols);
    for (size_t c = 0; c < t->ncols; c++) {
      sp__mb_str(b, t->cols[c].name);
      sp__mb_u64(b, (uint64_t)t->cols[c].type);
    }
    sp__mb_u64(b, t->nstr);
    for (size_t c = 0; c < t->nstr; c++) sp__mb_str(b, t->str_cols_names[c]);
  }
  if (what & SP_PACK_STRINGS) {
    for (size_t i = 0; i < run->nrows; i++) {
      sp__mb_str(b, run->rows[i].source_file);
      sp__mb_str(b, run->rows[i].source_text);
      sp__mb_str(b, run->rows[i].tags_json ? run->rows[i].tags_json : "[]");
    }
    for (size_t i = 0; i < run->ntables; i++) {
      const struct sp_table *t = &run->tables[i];
      for (size_t c = 0; c < t->nstr; c++)
        for (size_t r = 0; r < t->nrows; r++) sp__mb_str(b, t->str_cols && t->str_cols[c] ? t->str_cols[c][r] : "");
    }
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
    size_t n = run->nevents;
    sp__mb_bytes(b, run->start, n * 8);
    sp__mb_bytes(b, run->end, n * 8);
    sp__mb_bytes(b, run->call_id, n * 8);
    sp__mb_bytes(b, run->parent_id, n * 8);
    for (size_t i = 0; i < run->nextra; i++) sp__mb_bytes(b, run->extra[i].data, n * col_elem(run->extra[i].type));
    for (size_t i = 0; i < run->ntables; i++) {
      const struct sp_table *t = &run->tables[i];
      for (size_t c = 0; c < t->ncols; c++) sp__mb_bytes(b, t->cols[c].data, t->nrows * col_elem(t->cols[c].type));
    }
  }
  if (what & SP_PACK_AUX) sp__mpi_aux_pack(run, b);
}

/* Copies n*elem bytes from the buffer into a fresh allocation (at least
 * one element, as the core allocates). */
static void *take(struct sp_mrbuf *r, size_t n, size_t elem) {
  void *d = malloc((n ? n : 1) * elem);
  const void *p = sp__mr_bytes(r, n * elem);
  if (!d || !p) {
    free(d);
    r->bad = 1;
    return NULL;
  }
  memcpy(d, p, n * elem);
  return d;
}

static enum sp_col_type col_type(uint64_t v) { return v == (uint64_t)SP_COL_U32 ? SP_COL_U32 : SP_COL_I64; }

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
  uint64_t nrows = sp__mr_u64(r), nev = sp__mr_u64(r), nextra = sp__mr_u64(r);
  if (r->bad || nrows > r->n || nextra > r->n) goto bad;
  out->rows = calloc(nrows + 1, sizeof *out->rows);
  if (!out->rows) goto bad;
  out->nrows = nrows;
  out->nevents = nev;
  out->extra = calloc(nextra + 1, sizeof *out->extra);
  if (!out->extra) goto bad;
  out->nextra = nextra;
  for (size_t i = 0; i < nextra && !r->bad; i++) {
    out->extra[i].name = sp__mr_str(r);
    out->extra[i].type = col_type(sp__mr_u64(r));
  }
  uint64_t nt = sp__mr_u64(r);
  if (r->bad || nt > r->n) goto bad;
  out->tables = calloc(nt + 1, sizeof *out->tables);
  if (!out->tables) goto bad;
  out->ntables = nt;
  for (size_t i = 0; i < nt && !r->bad; i++) {
    struct sp_table *t = &out->tables[i];
    t->name = sp__mr_str(r);
    t->nrows = sp__mr_u64(r);
    uint64_t nc = sp__mr_u64(r);
    if (r->bad || nc > r->n) goto bad;
    t->cols = calloc(nc + 1, sizeof *t->cols);
    if (!t->cols) goto bad;
    t->ncols = nc;
    for (size_t c = 0; c < nc && !r->bad; c++) {
      t->cols[c].name = sp__mr_str(r);
      t->cols[c].type = col_type(sp__mr_u64(r));
    }
    uint64_t ns = sp__mr_u64(r);
    if (r->bad || ns > r->n) goto bad;
    t->str_cols_names = calloc(ns + 1, sizeof *t->str_cols_names);
    t->str_cols = calloc(ns + 1, sizeof *t->str_cols);
    if (!t->str_cols_names || !t->str_cols) goto bad;
    t->nstr = ns;
    for (size_t c = 0; c < ns && !r->bad; c++) {
      t->str_cols_names[c] = sp__mr_str(r);
      if (!(t->str_cols[c] = calloc(t->nrows + 1, sizeof(char *)))) goto bad;
    }
  }
  if (r->bad) goto bad;
  if (what & SP_PACK_STRINGS) {
    for (size_t i = 0; i < nrows && !r->bad; i++) {
      out->rows[i].source_file = sp__mr_str(r);
      out->rows[i].source_text = sp__mr_str(r);
      out->rows[i].tags_json = sp__mr_str(r);
    }
    for (size_t i = 0; i < nt && !r->bad; i++) {
      struct sp_table *t = &out->tables[i];
      for (size_t c = 0; c < t->nstr; c++)
        for (size_t k = 0; k < t->nrows && !r->bad; k++) t->str_cols[c][k] = sp__mr_str(r);
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
    out->call_id = take(r, nev, 8);
    out->parent_id = take(r, nev, 8);
    for (size_t i = 0; i < nextra && !r->bad; i++)
      out->extra[i].data = take(r, nev, col_elem(out->extra[i].type));
    for (size_t i = 0; i < nt && !r->bad; i++) {
      struct sp_table *t = &out->tables[i];
      for (size_t c = 0; c < t->ncols && !r->bad; c++) t->cols[c].data = take(r, t->nrows, col_elem(t->cols[c].type));
    }
  }
  if (!r->bad && (what & SP_PACK_AUX) && sp__mpi_aux_unpack(r, out) != 0) r->bad = 1;
  if (r->bad) goto bad;
  return SP_OK;
bad:
  sp__run_free(out);
  return sp__set_error(SP_ERR_MPI, "MPI: a rank's part arrived damaged or memory ran out unpacking it");
}

/*====== The layout ======*/

/* Open-addressing set of names -> index into `names`. */
struct name_set {
  uint32_t *slot; /* index + 1; 0 empty */
  size_t cap;
  char **names;
  size_t n, names_cap;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int set_grow(struct name_set *s) {
  size_t cap = s->cap ? s->cap * 2 : 256;
  uint32_t *slot = calloc(cap, sizeof *slot);
  if (!slot) return -1;
  for (size_t i = 0; i < s->n; i++) {
    size_t h = (size_t)hash_str(s->names[i]) & (cap - 1);
    while (slot[h]) h = (h + 1) & (cap - 1);
    slot[h] = (uint32_t)i + 1;
  }
  free(s->slot);
  s->slot = slot;
  s->cap = cap;
  return 0;
}

/* Index of `name`, added when new; -1 when out of memory. */
static int64_t set_add(struct name_set *s, const char *name) {
  if ((s->n + 1) * 2 > s->cap && set_grow(s) != 0) return -1;
  size_t h = (size_t)hash_str(name) & (s->cap - 1);
  while (s->slot[h]) {
    uint32_t i = s->slot[h] - 1;
    if (strcmp(s->names[i], name) == 0) return i;
    h = (h + 1) & (s->cap - 1);
  }
  if (s->n == s->names_cap) {
    size_t cap = s->names_cap ? s->names_cap * 2 : 64;
    char **n = realloc(s->names, (cap + 1) * sizeof *n);
    if (!n) return -1;
    s->names = n;
    s->names_cap = cap;
  }
  if (!(s->names[s->n] = sp__strdup(name))) return -1;
  s->slot[h] = (uint32_t)s->n + 1;
  return (int64_t)s->n++;
}

/* Index of a column called `name` in cols, added when new; -1 out of
 * memory, -2 when it exists with another type. */
static int64_t col_add(struct sp_mpi_col **cols, size_t *n, const char *name, enum sp_col_type type) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*cols)[i].name, name) == 0) return (*cols)[i].type == type ? (int64_t)i : -2;
  struct sp_mpi_col *c = realloc(*cols, (*n + 1) * sizeof *c);
  if (!c) return -1;
  *cols = c;
  c[*n].name = sp__strdup(name);
  c[*n].type = type;
  if (!c[*n].name) return -1;
  return (int64_t)(*n)++;
}

static int64_t str_add(char ***list, size_t *n, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*list)[i], name) == 0) return (int64_t)i;
  char **l = realloc(*list, (*n + 1) * sizeof *l);
  if (!l) return -1;
  *list = l;
  if (!(l[*n] = sp__strdup(name))) return -1;
  return (int64_t)(*n)++;
}

void sp__mpi_layout_free(struct sp_mpi_layout *L) {
  free(L->layout);
  for (size_t i = 0; i < L->nextra; i++) free(L->extra[i].name);
  free(L->extra);
  for (size_t i = 0; i < L->ntables; i++) {
    struct sp_mpi_table *t = &L->tables[i];
    free(t->name);
    for (size_t c = 0; c < t->ncols; c++) free(t->cols[c].name);
    free(t->cols);
    for (size_t c = 0; c < t->nstr; c++) free(t->str_names[c]);
    free(t->str_names);
  }
  free(L->tables);
  for (size_t i = 0; L->names && i < L->nnames; i++) free(L->names[i]);
  free(L->names);
  memset(L, 0, sizeof *L);
}

void sp__mpi_place_free(struct sp_mpi_place *p) {
  free(p->name_map);
  free(p->table_row0);
  memset(p, 0, sizeof *p);
}

sp_status sp__mpi_layout_build(const struct sp_run *parts, int n, struct sp_mpi_layout *L,
                               struct sp_mpi_place *places) {
  memset(L, 0, sizeof *L);
  memset(places, 0, (size_t)n * sizeof *places);
  struct name_set names = {0};
  sp_status st = SP_ERR_NO_MEMORY;
  L->layout = sp__strdup(n ? parts[0].layout : "columnar");
  if (!L->layout) goto out;
  for (int r = 0; r < n; r++) {
    const struct sp_run *p = &parts[r];
    struct sp_mpi_place *pl = &places[r];
    if (strcmp(p->layout, L->layout) != 0) {
      st = sp__set_error(SP_ERR_CONFLICT, "MPI: rank 0 writes the \"%s\" layout but rank %d the \"%s\" layout; "
                         "set aggregation_mode the same on every rank", L->layout, r, p->layout);
      goto out;
    }
    pl->row0 = L->nrows;
    pl->ev0 = L->nevents;
    L->nrows += p->nrows;
    L->nevents += p->nevents;
    pl->nnames = p->nnames;
    if (!(pl->name_map = malloc((p->nnames + 1) * sizeof *pl->name_map))) goto out;
    for (size_t i = 0; i < p->nnames; i++) {
      int64_t k = set_add(&names, p->names[i]);
      if (k < 0) goto out;
      pl->name_map[i] = (uint32_t)k;
    }
    for (size_t i = 0; i < p->nextra; i++) {
      int64_t k = col_add(&L->extra, &L->nextra, p->extra[i].name, p->extra[i].type);
      if (k == -2) {
        st = sp__set_error(SP_ERR_CONFLICT, "MPI: event column %s has different types on different ranks",
                           p->extra[i].name);
        goto out;
      }
      if (k < 0) goto out;
    }
    for (size_t i = 0; i < p->ntables; i++) {
      const struct sp_table *t = &p->tables[i];
      size_t k = 0;
      while (k < L->ntables && strcmp(L->tables[k].name, t->name) != 0) k++;
      if (k == L->ntables) {
        struct sp_mpi_table *tt = realloc(L->tables, (L->ntables + 1) * sizeof *tt);
        if (!tt) goto out;
        L->tables = tt;
        memset(&tt[k], 0, sizeof tt[k]);
        L->ntables++;
        if (!(tt[k].name = sp__strdup(t->name))) goto out;
      }
      struct sp_mpi_table *lt = &L->tables[k];
      for (size_t c = 0; c < t->ncols; c++) {
        int64_t q = col_add(&lt->cols, &lt->ncols, t->cols[c].name, t->cols[c].type);
        if (q == -2) {
          st = sp__set_error(SP_ERR_CONFLICT, "MPI: column %s/%s has different types on different ranks", t->name,
                             t->cols[c].name);
          goto out;
        }
        if (q < 0) goto out;
      }
      for (size_t c = 0; c < t->nstr; c++)
        if (str_add(&lt->str_names, &lt->nstr, t->str_cols_names[c]) < 0) goto out;
      lt->nrows += t->nrows;
    }
  }
  /* Table row starts, now that every table is known. */
  uint64_t *next = calloc(L->ntables + 1, sizeof *next);
  if (!next) goto out;
  for (int r = 0; r < n; r++) {
    struct sp_mpi_place *pl = &places[r];
    pl->ntables = L->ntables;
    if (!(pl->table_row0 = calloc(L->ntables + 1, sizeof *pl->table_row0))) {
      free(next);
      goto out;
    }
    for (size_t k = 0; k < L->ntables; k++) {
      pl->table_row0[k] = next[k];
      for (size_t i = 0; i < parts[r].ntables; i++)
        if (strcmp(parts[r].tables[i].name, L->tables[k].name) == 0) next[k] += parts[r].tables[i].nrows;
    }
  }
  free(next);
  L->names = names.names;
  L->nnames = names.n;
  names.names = NULL;
  st = SP_OK;
out:
  free(names.slot);
  for (size_t i = 0; names.names && i < names.n; i++) free(names.names[i]);
  free(names.names);
  if (st != SP_OK) {
    if (st == SP_ERR_NO_MEMORY) sp__set_error(st, "MPI: out of memory laying out the job's file");
    sp__mpi_layout_free(L);
    for (int r = 0; r < n; r++) sp__mpi_place_free(&places[r]);
  }
  return st;
}

static void layout_pack(const struct sp_mpi_layout *L, struct sp_mbuf *b) {
  sp__mb_str(b, L->layout);
  sp__mb_u64(b, L->nrows);
  sp__mb_u64(b, L->nevents);
  sp__mb_u64(b, L->nextra);
  for (size_t i = 0; i < L->nextra; i++) {
    sp__mb_str(b, L->extra[i].name);
    sp__mb_u64(b, (uint64_t)L->extra[i].type);
  }
  sp__mb_u64(b, L->ntables);
  for (size_t i = 0; i < L->ntables; i++) {
    const struct sp_mpi_table *t = &L->tables[i];
    sp__mb_str(b, t->name);
    sp__mb_u64(b, t->nrows);
    sp__mb_u64(b, t->ncols);
    for (size_t c = 0; c < t->ncols; c++) {
      sp__mb_str(b, t->cols[c].name);
      sp__mb_u64(b, (uint64_t)t->cols[c].type);
    }
    sp__mb_u64(b, t->nstr);
    for (size_t c = 0; c < t->nstr; c++) sp__mb_str(b, t->str_names[c]);
  }
}

static int layout_unpack(struct sp_mrbuf *r, struct sp_mpi_layout *L) {
  memset(L, 0, sizeof *L);
  L->layout = sp__mr_str(r);
  L->nrows = sp__mr_u64(r);
  L->nevents = sp__mr_u64(r);
  uint64_t ne = sp__mr_u64(r);
  if (r->bad || ne > r->n || !(L->extra = calloc(ne + 1, sizeof *L->extra))) return -1;
  L->nextra = ne;
  for (size_t i = 0; i < ne && !r->bad; i++) {
    L->extra[i].name = sp__mr_str(r);
    L->extra[i].type = col_type(sp__mr_u64(r));
  }
  uint64_t nt = sp__mr_u64(r);
  if (r->bad || nt > r->n || !(L->tables = calloc(nt + 1, sizeof *L->tables))) return -1;
  L->ntables = nt;
  for (size_t i = 0; i < nt && !r->bad; i++) {
    struct sp_mpi_table *t = &L->tables[i];
    t->name = sp__mr_str(r);
    t->nrows = sp__mr_u64(r);
    uint64_t nc = sp__mr_u64(r);
    if (r->bad || nc > r->n || !(t->cols = calloc(nc + 1, sizeof *t->cols))) return -1;
    t->ncols = nc;
    for (size_t c = 0; c < nc && !r->bad; c++) {
      t->cols[c].name = sp__mr_str(r);
      t->cols[c].type = col_type(sp__mr_u64(r));
    }
    uint64_t ns = sp__mr_u64(r);
    if (r->bad || ns > r->n || !(t->str_names = calloc(ns + 1, sizeof *t->str_names))) return -1;
    t->nstr = ns;
    for (size_t c = 0; c < ns && !r->bad; c++) t->str_names[c] = sp__mr_str(r);
  }
  return r->bad ? -1 : 0;
}

static void place_pack(const struct sp_mpi_place *p, struct sp_mbuf *b) {
  sp__mb_u64(b, p->row0);
  sp__mb_u64(b, p->ev0);
  sp__mb_u64(b, p->nnames);
  sp__mb_bytes(b, p->name_map, p->nnames * sizeof *p->name_map);
  sp__mb_u64(b, p->ntables);
  sp__mb_bytes(b, p->table_row0, p->ntables * sizeof *p->table_row0);
}

static int place_unpack(struct sp_mrbuf *r, struct sp_mpi_place *p) {
  memset(p, 0, sizeof *p);
  p->row0 = sp__mr_u64(r);
  p->ev0 = sp__mr_u64(r);
  p->nnames = sp__mr_u64(r);
  if (r->bad || p->nnames > r->n) return -1;
  p->name_map = take(r, p->nnames, sizeof *p->name_map);
  p->ntables = sp__mr_u64(r);
  if (r->bad || p->ntables > r->n) return -1;
  p->table_row0 = take(r, p->ntables, sizeof *p->table_row0);
  return r->bad ? -1 : 0;
}

sp_status sp__mpi_layout_exchange(const struct sp_run *run, struct sp_mpi_layout *L, struct sp_mpi_place *mine,
                                  struct sp_mpi_place **all) {
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
    if (st == SP_OK) st = sp__mpi_layout_build(parts, size, L, *all);
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
    sp__mpi_layout_free(L);
    sp__mpi_place_free(mine);
    for (int r = 0; *all && r < size; r++) sp__mpi_place_free(&(*all)[r]);
    free(*all);
    *all = NULL;
  }
  return st;
}
