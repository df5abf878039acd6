/* layout.c - the layout of a file made of parts (layout.h).
 *
 * Region names are numbered in order of first appearance, part by part
 * (rank 0's first), as upstream's writers number them; optional columns are
 * the union of what the parts recorded, in order of first appearance; a
 * part that lacks one gets the plan's fill value there.
 */
#include "output/layout.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

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

const void *sp__part_column(const struct sp_run *part, int id) {
  if (id == SP_DS_CALL_IDS) return part->call_id;
  if (id == SP_DS_PARENT_IDS) return part->parent_id;
  for (size_t i = 0; i < part->nextra; i++)
    if (part->extra[i].id == id) return part->extra[i].data;
  return NULL;
}

static int part_has_column(const struct sp_run *part, int id) {
  if (id == SP_DS_CALL_IDS || id == SP_DS_PARENT_IDS)
    return (part->call_id != NULL || part->has_ids) && !part->ids_redundant;
  for (size_t i = 0; i < part->nextra; i++)
    if (part->extra[i].id == id) return 1;
  return 0;
}

const struct sp_table *sp__part_table(const struct sp_run *part, enum sp_group g) {
  for (size_t i = 0; i < part->ntables; i++)
    if (part->tables[i].group == g) return &part->tables[i];
  return NULL;
}

uint64_t sp__table_mask(const struct sp_table *t) {
  uint64_t m = 0;
  for (size_t c = 0; c < t->ncols && c < 64; c++)
    if (t->cols[c]) m |= (uint64_t)1 << c;
  return m;
}

static int add_col(struct sp_layout *L, int id) {
  for (size_t i = 0; i < L->ncols; i++)
    if (L->cols[i] == id) return 0;
  int *c = realloc(L->cols, (L->ncols + 1) * sizeof *c);
  if (!c) return -1;
  L->cols = c;
  c[L->ncols++] = id;
  return 0;
}

void sp__layout_free(struct sp_layout *L) {
  for (size_t i = 0; L->names && i < L->nnames; i++) free(L->names[i]);
  free(L->names);
  free(L->cols);
  memset(L, 0, sizeof *L);
}

void sp__place_free(struct sp_place *p) {
  free(p->name_map);
  memset(p, 0, sizeof *p);
}

sp_status sp__layout_build(const struct sp_run *parts, int n, int schema, struct sp_layout *L,
                           struct sp_place *places) {
  memset(L, 0, sizeof *L);
  memset(places, 0, (size_t)n * sizeof *places);
  L->schema = schema == 2 ? 2 : 3;
  const char *layout = n ? parts[0].layout : "columnar";
  L->aggregate = layout && strcmp(layout, "aggregate") == 0;
  struct name_set names = {0};
  sp_status st = SP_ERR_NO_MEMORY;
  for (int r = 0; r < n; r++) {
    const struct sp_run *p = &parts[r];
    struct sp_place *pl = &places[r];
    if ((strcmp(p->layout ? p->layout : "columnar", "aggregate") == 0) != L->aggregate) {
      st = sp__set_error(SP_ERR_CONFLICT,
                         "MPI: rank 0 writes the \"%s\" layout but rank %d the \"%s\" layout; set "
                         "aggregation_mode the same on every rank",
                         layout, r, p->layout ? p->layout : "columnar");
      goto out;
    }
    pl->row0 = L->nrows;
    pl->ev0 = L->nevents;
    L->nrows += p->nrows;
    if (!L->aggregate) L->nevents += p->nevents;
    pl->nnames = p->nnames;
    if (!(pl->name_map = malloc((p->nnames + 1) * sizeof *pl->name_map))) goto out;
    for (size_t i = 0; i < p->nnames; i++) {
      int64_t k = set_add(&names, p->names[i]);
      if (k < 0) goto out;
      pl->name_map[i] = (uint32_t)k;
    }
    if (!L->aggregate) {
      if (part_has_column(p, SP_DS_CALL_IDS) && (add_col(L, SP_DS_CALL_IDS) || add_col(L, SP_DS_PARENT_IDS)))
        goto out;
      for (size_t i = 0; i < p->nextra; i++)
        if (add_col(L, p->extra[i].id)) goto out;
    }
    for (int g = 0; g < SP_NGROUPS; g++) {
      const struct sp_table *t = sp__part_table(p, (enum sp_group)g);
      pl->table_row0[g] = L->table_rows[g];
      if (t) {
        L->table_rows[g] += t->nrows;
        L->table_cols[g] |= sp__table_mask(t);
      }
    }
  }
  L->names = names.names;
  L->nnames = names.n;
  names.names = NULL;
  st = SP_OK;
out:
  free(names.slot);
  for (size_t i = 0; names.names && i < names.n; i++) free(names.names[i]);
  free(names.names);
  if (st != SP_OK) {
    if (st == SP_ERR_NO_MEMORY) sp__set_error(st, "out of memory laying out the file");
    sp__layout_free(L);
    for (int r = 0; r < n; r++) sp__place_free(&places[r]);
  }
  return st;
}

void sp__code_start_deltas(const struct sp_run *part, int64_t *out) {
  size_t n = part->nevents;
  if (n) memcpy(out, part->start, n * sizeof *out);
  for (size_t r = 0; r < part->nrows; r++) {
    const struct sp_row *w = &part->rows[r];
    if (w->offset >= n || w->count > n - w->offset) continue;
    for (uint64_t i = w->offset + 1; i < w->offset + w->count; i++)
      out[i] = (int64_t)((uint64_t)part->start[i] - (uint64_t)part->start[i - 1]);
  }
}
