/* read_memstats.c - what a capture says about memory: totals, the peak of
 * live bytes (exact: events are replayed in time order, so every release is
 * paired with the allocation it ends), per-region figures, the sites that
 * hold the memory at the peak, what was never released, and memory over
 * time.
 *
 * Two passes. The first replays everything: totals, per-region counts, the
 * peak's value and position, the series, and at the end the live set (the
 * leaks). The second replays up to the peak and groups the live set there.
 * Live blocks are kept in an open-addressing table keyed by address, so
 * memory is proportional to what is live, not to the number of events.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/memcap_read.h"

struct live {
  uint64_t addr; /* 0: empty */
  uint64_t usable, size, key;
  uint32_t region;
};

struct table {
  struct live *v;
  size_t cap, n;
  uint64_t bytes;
};

static size_t hash_addr(uint64_t a, size_t cap) {
  a ^= a >> 29;
  a *= 0xbf58476d1ce4e5b9u;
  a ^= a >> 32;
  return (size_t)a & (cap - 1);
}

static int table_grow(struct table *t) {
  size_t cap = t->cap ? t->cap * 2 : 4096;
  struct live *v = calloc(cap, sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < t->cap; i++)
    if (t->v[i].addr) {
      size_t j = hash_addr(t->v[i].addr, cap);
      while (v[j].addr) j = (j + 1) & (cap - 1);
      v[j] = t->v[i];
    }
  free(t->v);
  t->v = v;
  t->cap = cap;
  return 0;
}

static struct live *table_find(struct table *t, uint64_t addr) {
  if (!t->cap) return NULL;
  for (size_t j = hash_addr(addr, t->cap);; j = (j + 1) & (t->cap - 1)) {
    if (!t->v[j].addr) return NULL;
    if (t->v[j].addr == addr) return &t->v[j];
  }
}

/* Removes an entry by shifting the rest of its probe run back (no tombstones). */
static void table_remove(struct table *t, struct live *e) {
  size_t i = (size_t)(e - t->v);
  t->bytes -= e->usable;
  t->n--;
  for (size_t j = (i + 1) & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
    if (!t->v[j].addr) break;
    size_t home = hash_addr(t->v[j].addr, t->cap);
    /* Move j into the hole at i when its home is not in (i, j]. */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      t->v[i] = t->v[j];
      i = j;
    }
  }
  t->v[i].addr = 0;
}

struct counts {
  uint64_t replaced, unmatched, unmatched_bytes;
};

/* Applies one event to the live set; -1 when out of memory. */
static int apply(struct table *t, const struct sp_memcap_event *e, uint64_t key, struct counts *k) {
  if (SP_MEMCAP_IS_ALLOC(e->kind)) {
    if (!e->addr) return 0;
    struct live *old = table_find(t, e->addr);
    if (old) {
      k->replaced++;
      table_remove(t, old);
    }
    if ((t->n + 1) * 2 > t->cap && table_grow(t)) return -1;
    size_t j = hash_addr(e->addr, t->cap);
    while (t->v[j].addr) j = (j + 1) & (t->cap - 1);
    t->v[j] = (struct live){e->addr, e->usable, e->size, key, e->region};
    t->n++;
    t->bytes += e->usable;
  } else {
    struct live *old = table_find(t, e->addr);
    if (old) {
      table_remove(t, old);
    } else {
      k->unmatched++;
      k->unmatched_bytes += e->usable;
    }
  }
  return 0;
}

/* Grouping key of an allocation. */
static uint64_t key_of(const struct sp_memcap_event *e) { return e->site; }

/*====== Per-region accumulation ======*/

struct regions {
  struct sp_memcap_region_stat *v;
  size_t n, cap;
};

static struct sp_memcap_region_stat *region_at(struct regions *r, uint32_t id) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->v[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < r->n && r->v[lo].id == id) return &r->v[lo];
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    struct sp_memcap_region_stat *v = realloc(r->v, cap * sizeof *v);
    if (!v) return NULL;
    r->v = v;
    r->cap = cap;
  }
  memmove(&r->v[lo + 1], &r->v[lo], (r->n - lo) * sizeof *r->v);
  memset(&r->v[lo], 0, sizeof r->v[lo]);
  r->v[lo].id = id;
  r->n++;
  return &r->v[lo];
}

/*====== Grouping the live set ======*/

static int cmp_key(const void *a, const void *b) {
  const struct live *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_site_bytes(const void *a, const void *b) {
  const struct sp_memcap_site *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The live set grouped by key, largest first; per-region totals through
 * `field` (an offset into sp_memcap_region_stat) when regs is not NULL. */
static sp_status group(struct table *t, struct sp_memcap_site **out, size_t *nout,
                       struct regions *regs, size_t bytes_field, size_t count_field) {
  *out = NULL;
  *nout = 0;
  struct live *v = malloc((t->n ? t->n : 1) * sizeof *v);
  if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory grouping %zu blocks", t->n);
  size_t n = 0;
  for (size_t i = 0; i < t->cap; i++)
    if (t->v[i].addr) v[n++] = t->v[i];
  if (n) qsort(v, n, sizeof *v, cmp_key);
  struct sp_memcap_site *s = malloc((n ? n : 1) * sizeof *s);
  if (!s) {
    free(v);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory grouping %zu blocks", n);
  }
  size_t ns = 0;
  for (size_t i = 0; i < n; i++) {
    if (!ns || s[ns - 1].key != v[i].key)
      s[ns++] = (struct sp_memcap_site){v[i].key, v[i].region, 0, 0, 0};
    s[ns - 1].bytes += v[i].usable;
    s[ns - 1].requested += v[i].size;
    s[ns - 1].count++;
    if (regs) {
      struct sp_memcap_region_stat *r = region_at(regs, v[i].region);
      if (!r) {
        free(v);
        free(s);
        return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
      }
      *(uint64_t *)((char *)r + bytes_field) += v[i].usable;
      if (count_field) (*(uint64_t *)((char *)r + count_field))++;
    }
  }
  free(v);
  if (ns) qsort(s, ns, sizeof *s, cmp_site_bytes);
  *out = s;
  *nout = ns;
  return SP_OK;
}

static int cmp_region_bytes(const void *a, const void *b) {
  const struct sp_memcap_region_stat *x = a, *y = b;
  if (x->alloc_bytes != y->alloc_bytes) return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/*====== The passes ======*/

void sp__memcap_stats_free(sp_memcap_stats *s) {
  if (!s) return;
  free(s->regions);
  free(s->peak_sites);
  free(s->leaks);
  free(s->timeline);
  memset(s, 0, sizeof *s);
}

sp_status sp__memcap_analyze(sp_memcap *c, size_t points, sp_memcap_stats *out) {
  memset(out, 0, sizeof *out);
  struct table t = {0};
  struct regions regs = {0};
  struct counts k = {0};
  struct sp_memcap_iter *it = NULL;
  sp_status st = SP_OK;
  uint64_t peak_at = 0, ordinal = 0; /* events applied when the peak was reached */
  if (points) {
    out->timeline = calloc(points, sizeof *out->timeline);
    if (!out->timeline) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    out->ntimeline = points;
  }
  uint64_t span = c->tick_max - c->tick_min + 1;
  /* Pass 1. */
  if ((st = sp__memcap_iter_new(c, &it))) goto done;
  struct sp_memcap_event e;
  uint32_t thread;
  int rc;
  while ((rc = sp__memcap_iter_next(it, &e, &thread)) == 1) {
    struct sp_memcap_region_stat *r = region_at(&regs, e.region);
    if (!r || apply(&t, &e, key_of(&e), &k)) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory replaying %s", c->path);
      goto done;
    }
    ordinal++;
    if (SP_MEMCAP_IS_ALLOC(e.kind)) {
      out->allocations++;
      out->alloc_bytes += e.usable;
      out->requested_bytes += e.size;
      r->alloc_bytes += e.usable;
      r->requested_bytes += e.size;
      r->alloc_count++;
      if (t.bytes > out->peak_bytes) {
        out->peak_bytes = t.bytes;
        out->peak_count = t.n;
        out->peak_ns = sp__memcap_ns(c, e.t);
        peak_at = ordinal;
      }
    } else {
      out->frees++;
      out->freed_bytes += e.usable;
      r->freed_bytes += e.usable;
      r->free_count++;
    }
    if (points) {
      size_t b = (size_t)((long double)(e.t - c->tick_min) * points / span);
      if (b >= points) b = points - 1;
      if (t.bytes > out->timeline[b].bytes) out->timeline[b].bytes = t.bytes;
    }
  }
  if (rc < 0) {
    st = (sp_status)rc;
    goto done;
  }
  out->events = ordinal;
  out->end_bytes = t.bytes;
  out->end_count = t.n;
  out->replaced = k.replaced;
  out->unmatched_frees = k.unmatched;
  out->unmatched_free_bytes = k.unmatched_bytes;
  out->first_ns = sp__memcap_ns(c, c->tick_min);
  out->last_ns = sp__memcap_ns(c, c->tick_max);
  if (points) {
    /* Each point ends its interval; an interval without events keeps the
     * level the previous one ended at (approximated by its maximum). */
    uint64_t level = 0;
    for (size_t b = 0; b < points; b++) {
      uint64_t end_tick = c->tick_min + (uint64_t)((long double)span * (b + 1) / points);
      out->timeline[b].ns = sp__memcap_ns(c, end_tick);
      if (out->timeline[b].bytes)
        level = out->timeline[b].bytes;
      else
        out->timeline[b].bytes = level;
    }
  }
  if ((st = group(&t, &out->leaks, &out->nleaks, &regs,
                  offsetof(struct sp_memcap_region_stat, end_bytes),
                  offsetof(struct sp_memcap_region_stat, end_count))))
    goto done;
  sp__memcap_iter_free(it);
  it = NULL;
  /* Pass 2: the live set at the peak. */
  free(t.v);
  memset(&t, 0, sizeof t);
  memset(&k, 0, sizeof k);
  if ((st = sp__memcap_iter_new(c, &it))) goto done;
  for (uint64_t i = 0; i < peak_at; i++) {
    rc = sp__memcap_iter_next(it, &e, &thread);
    if (rc != 1) {
      st = rc < 0 ? (sp_status)rc : sp__set_error(SP_ERR_FORMAT, "%s changed while reading", c->path);
      goto done;
    }
    if (apply(&t, &e, key_of(&e), &k)) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory replaying %s", c->path);
      goto done;
    }
  }
  st = group(&t, &out->peak_sites, &out->npeak_sites, &regs,
             offsetof(struct sp_memcap_region_stat, peak_bytes), 0);
done:
  sp__memcap_iter_free(it);
  free(t.v);
  if (st) {
    free(regs.v);
    sp__memcap_stats_free(out);
    return st;
  }
  if (regs.n) qsort(regs.v, regs.n, sizeof *regs.v, cmp_region_bytes);
  out->regions = regs.v;
  out->nregions = regs.n;
  return SP_OK;
}
