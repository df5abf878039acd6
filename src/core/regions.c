/* regions.c - the process-wide region registry: names interned to handles.
 *
 * A handle is an index into a chunked table that only grows, so a handle and
 * the info behind it stay valid for the life of the process and lookups need
 * no lock. Interning a known name is a lock-free probe of an open-addressing
 * hash table; only inserting a new name takes the registry mutex. Handles are
 * process-wide so the same call site works with every manager.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/core.h"
#include "core/spill.h"

#define CHUNK_BITS 10
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define MAX_CHUNKS 1024 /* 1M regions */
#define MAX_NAME_BYTES 1024

struct slot {
  _Atomic uint64_t hash; /* 0 = empty */
  uint32_t id;
};
struct table {
  size_t mask;
  struct table *retired; /* older tables, kept: lock-free readers may hold them */
  struct slot slots[];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_region_info *_Atomic chunks[MAX_CHUNKS];
/* Highest id handed out. Written only under reg_lock, with release; every
 * live manager keeps a copy for the inlined path (sp_i_hot.nregions). */
static uint32_t region_count;
static struct table *_Atomic table;
static char **opt_in_tags;
static _Atomic size_t n_opt_in;

void sp__regions_after_fork_child(void) { pthread_mutex_init(&reg_lock, NULL); }

/* Names are hashed a word at a time: a program that interns a name on every
 * call (Python, Fortran by name, C++ string_view) pays this per begin. Short
 * names are read as overlapping pieces, so no byte past the name is read. The
 * hash lives only in this process's table. */
static uint64_t load64(const char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}
static uint64_t load32(const char *p) {
  uint32_t w;
  memcpy(&w, p, sizeof w);
  return w;
}
static uint64_t mix(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9fb21c651e98df25u;
  return h ^ (h >> 29);
}
static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325u ^ (n * 0x100000001b3u);
  if (n >= 8) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) h = mix(h, load64(s + i));
    if (i < n) h = mix(h, load64(s + n - 8)); /* the tail, overlapping the last word */
  } else if (n >= 4) {
    h = mix(h, load32(s) | load32(s + n - 4) << 32);
  } else if (n > 0) {
    h = mix(h, (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n / 2] << 8 |
                   (uint64_t)(unsigned char)s[n - 1] << 16);
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdu;
  h ^= h >> 33;
  return h ? h : 1;
}

const struct sp_region_info *sp__region_info(uint32_t id) {
  id &= ~SP_I_REGION_SLOW_BIT;
  if (id == 0 || id > __atomic_load_n(&region_count, __ATOMIC_ACQUIRE)) return NULL;
  struct sp_region_info *c = atomic_load_explicit(&chunks[id >> CHUNK_BITS], memory_order_acquire);
  return c ? &c[id & (CHUNK_SIZE - 1)] : NULL;
}

uint32_t sp__region_max_id(void) { return __atomic_load_n(&region_count, __ATOMIC_ACQUIRE); }

const char *sp_region_name(sp_region r) {
  const struct sp_region_info *ri = sp__region_info(r);
  return ri ? ri->name : NULL;
}

static uint32_t with_slow_bit_locked(uint32_t id);

static int is_opt_in_tag_locked(const char *tag) {
  for (size_t i = 0; i < n_opt_in; i++)
    if (strcmp(opt_in_tags[i], tag) == 0) return 1;
  return 0;
}

int sp__region_has_opt_in(uint32_t id) {
  const struct sp_region_info *ri = sp__region_info(id);
  if (!ri || !ri->tags) return 0;
  pthread_mutex_lock(&reg_lock);
  int yes = 0;
  for (size_t i = 0; i < ri->ntags && !yes; i++) yes = is_opt_in_tag_locked(ri->tags[i]);
  pthread_mutex_unlock(&reg_lock);
  return yes;
}

sp_status sp_register_opt_in_tag(const char *tag) {
  if (!tag || !*tag)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_register_opt_in_tag: the tag is empty; pass a non-empty tag name");
  pthread_mutex_lock(&reg_lock);
  sp_status st = SP_OK;
  if (!is_opt_in_tag_locked(tag)) {
    char **n = realloc(opt_in_tags, (n_opt_in + 1) * sizeof *n);
    char *copy = sp__strdup(tag);
    if (!n || !copy) {
      free(copy);
      if (n) opt_in_tags = n;
      st = sp__set_error(SP_ERR_NO_MEMORY, "sp_register_opt_in_tag: out of memory");
    } else {
      opt_in_tags = n;
      opt_in_tags[n_opt_in++] = copy;
      /* Regions interned earlier get the flag too (their later interning
       * returns the slow bit; handles already cached at sites do not). */
      uint32_t maxid = __atomic_load_n(&region_count, __ATOMIC_RELAXED);
      for (uint32_t id = 1; id <= maxid; id++) with_slow_bit_locked(id);
    }
  }
  pthread_mutex_unlock(&reg_lock);
  return st;
}

/* An id found in the table is live: its chunk was published before the
 * slot's hash (release/acquire), so no bounds check is needed. */
static inline const struct sp_region_info *info_of(uint32_t id) {
  return &atomic_load_explicit(&chunks[id >> CHUNK_BITS], memory_order_acquire)[id & (CHUNK_SIZE - 1)];
}

/* Two names of len bytes, as words like the hash reads them (the last one
 * overlapping), without a call: the interning hit paths stay leaves. */
static inline int same_bytes(const char *a, const char *b, size_t len) {
  if (len >= 8) {
    if ((load64(a) ^ load64(b)) | (load64(a + len - 8) ^ load64(b + len - 8))) return 0;
    for (size_t i = 8; i + 8 < len; i += 8)
      if (load64(a + i) != load64(b + i)) return 0;
    return 1;
  }
  if (len >= 4) return ((load32(a) ^ load32(b)) | (load32(a + len - 4) ^ load32(b + len - 4))) == 0;
  /* 1 to 3 bytes: the first, middle and last are all of them */
  return len == 0 || (a[0] == b[0] && a[len / 2] == b[len / 2] && a[len - 1] == b[len - 1]);
}

static inline uint32_t lookup(const char *name, size_t len, uint64_t h) {
  struct table *t = atomic_load_explicit(&table, memory_order_acquire);
  if (!t) return 0;
  for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
    uint64_t sh = atomic_load_explicit(&t->slots[i].hash, memory_order_acquire);
    if (sh == 0) return 0;
    if (sh == h) {
      uint32_t id = t->slots[i].id;
      const struct sp_region_info *ri = info_of(id);
      /* An id inserted but not yet counted (its inserter still holds the
       * lock) is not handed out: the hot path would refuse it. */
      if (ri->len == len && same_bytes(ri->name, name, len))
        return id <= __atomic_load_n(&region_count, __ATOMIC_ACQUIRE) ? id : 0;
    }
  }
}

/* A live id as callers get it: with the opt-in bit when it carries an
 * opt-in tag. */
static inline uint32_t handle_of(uint32_t id) {
  return __atomic_load_n(&info_of(id)->opt_in, __ATOMIC_ACQUIRE) ? id | SP_I_REGION_SLOW_BIT : id;
}

static int table_insert_locked(uint64_t h, uint32_t id) {
  struct table *t = atomic_load_explicit(&table, memory_order_relaxed);
  if (!t || (size_t)id * 2 > t->mask) { /* keep the load factor under 1/2 */
    size_t size = t ? (t->mask + 1) * 2 : 256;
    struct table *nt = calloc(1, sizeof *nt + size * sizeof(struct slot));
    if (!nt) return -1;
    nt->mask = size - 1;
    nt->retired = t;
    if (t)
      for (size_t i = 0; i <= t->mask; i++) {
        uint64_t sh = atomic_load_explicit(&t->slots[i].hash, memory_order_relaxed);
        if (!sh) continue;
        size_t j = sh & nt->mask;
        while (atomic_load_explicit(&nt->slots[j].hash, memory_order_relaxed)) j = (j + 1) & nt->mask;
        nt->slots[j].id = t->slots[i].id;
        atomic_store_explicit(&nt->slots[j].hash, sh, memory_order_relaxed);
      }
    atomic_store_explicit(&table, nt, memory_order_release);
    t = nt;
  }
  size_t j = h & t->mask;
  while (atomic_load_explicit(&t->slots[j].hash, memory_order_relaxed)) j = (j + 1) & t->mask;
  t->slots[j].id = id;
  atomic_store_explicit(&t->slots[j].hash, h, memory_order_release);
  return 0;
}

static char **split_tags(const char *tags, size_t *n) {
  *n = 0;
  if (!tags || !*tags) return NULL;
  size_t cap = 1;
  for (const char *p = tags; *p; p++) cap += *p == ',';
  char **out = calloc(cap + 1, sizeof *out);
  if (!out) return NULL;
  const char *p = tags;
  while (*p) {
    const char *e = strchr(p, ',');
    if (!e) e = p + strlen(p);
    const char *a = p, *b = e;
    while (a < b && (*a == ' ' || *a == '\t')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
    if (b > a) out[(*n)++] = sp__strndup(a, (size_t)(b - a));
    p = *e ? e + 1 : e;
  }
  return out;
}

/* A name of exactly len bytes (not necessarily NUL-terminated: Fortran and
 * Python hand over counted strings). */
static sp_status validate_name_n(const char *name, size_t len) {
  if (!name) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "region name is NULL; pass a non-empty UTF-8 string");
  if (len == 0) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "region name is empty; give the region a name");
  if (len > MAX_NAME_BYTES)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "region name \"%.40s...\" is longer than %d bytes; shorten it",
                         name, MAX_NAME_BYTES);
  if (memchr(name, 0, len))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "region name contains a NUL byte within its %zu bytes; pass the name's length without "
                         "the terminator or padding",
                         len);
  if (!sp__utf8_valid(name, len))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "region name is not valid UTF-8; pass UTF-8 text");
  return SP_OK;
}

static uint32_t with_slow_bit_locked(uint32_t id) {
  struct sp_region_info *ri = (struct sp_region_info *)sp__region_info(id);
  int yes = 0;
  for (size_t i = 0; ri && i < ri->ntags && !yes; i++) yes = is_opt_in_tag_locked(ri->tags[i]);
  if (ri) {
    __atomic_store_n(&ri->opt_in, yes, __ATOMIC_RELEASE);
    __atomic_store_n(&ri->handle, yes ? id | SP_I_REGION_SLOW_BIT : id, __ATOMIC_RELEASE);
  }
  return yes ? id | SP_I_REGION_SLOW_BIT : id;
}

static sp_region intern(const char *name, size_t len, const char *file, int line, const char *func,
                        const char *tags) {
  /* A known name was looked up by the caller (known()); only a new name,
   * or tags to merge, get here. */
  uint64_t h = 0;
  if (name && len && len <= MAX_NAME_BYTES) {
    h = hash_bytes(name, len);
    uint32_t id = lookup(name, len, h);
    if (id && (!tags || !*tags)) return handle_of(id);
  }
  if (validate_name_n(name, len) != SP_OK) return 0;
  uint32_t id;

  pthread_mutex_lock(&reg_lock);
  id = lookup(name, len, h);
  if (!id) {
    uint32_t nid = __atomic_load_n(&region_count, __ATOMIC_RELAXED) + 1;
    if (nid >= MAX_CHUNKS * CHUNK_SIZE || (nid & SP_I_REGION_SLOW_BIT)) {
      pthread_mutex_unlock(&reg_lock);
      sp__set_error(SP_ERR_LIMIT, "more than %u distinct region names; intern fewer names", MAX_CHUNKS * CHUNK_SIZE - 1);
      return 0;
    }
    struct sp_region_info *c = atomic_load_explicit(&chunks[nid >> CHUNK_BITS], memory_order_relaxed);
    if (!c) {
      c = calloc(CHUNK_SIZE, sizeof *c);
      if (!c) goto oom;
      atomic_store_explicit(&chunks[nid >> CHUNK_BITS], c, memory_order_release);
    }
    struct sp_region_info *ri = &c[nid & (CHUNK_SIZE - 1)];
    ri->name = sp__strndup(name, len);
    if (!ri->name) goto oom;
    ri->len = len;
    ri->file = sp__strdup(file);
    ri->line = file ? line : -1;
    ri->func = sp__strdup(func);
    ri->tags = split_tags(tags, &ri->ntags);
    if (table_insert_locked(h, nid) != 0) goto oom;
    __atomic_store_n(&region_count, nid, __ATOMIC_RELEASE);
    for (int k = 0; k < SP_I_MAX_MANAGERS; k++) {
      struct sp_manager *m = sp__live_manager(k);
      if (m) __atomic_store_n(&m->hot.nregions, nid, __ATOMIC_RELEASE);
    }
    id = nid;
  } else {
    /* First source wins, but a name first seen without one gets it now. */
    struct sp_region_info *ri = (struct sp_region_info *)sp__region_info(id);
    if (ri && !ri->file && file) {
      /* A function name already there stays: lock-free readers may hold it. */
      if (!ri->func) ri->func = sp__strdup(func);
      ri->line = line;
      ri->file = sp__strdup(file);
    }
    if (ri && !ri->tags && tags) ri->tags = split_tags(tags, &ri->ntags);
  }
  id = with_slow_bit_locked(id);
  pthread_mutex_unlock(&reg_lock);
  return id;
oom:
  pthread_mutex_unlock(&reg_lock);
  sp__set_error(SP_ERR_NO_MEMORY, "out of memory while interning region \"%.*s\"", (int)(len < 60 ? len : 60), name);
  return 0;
}

/* The handle of a name already in the table, or 0. A known name is looked up
 * before it is validated: it can only match a name that passed validation
 * when it was inserted (same bytes, same length), so only a new name pays
 * for the checks. This is the whole cost of interning on every call. */
static inline uint32_t known(const char *name, size_t len) {
  if (!name || len - 1 >= MAX_NAME_BYTES) return 0;
  uint32_t id = lookup(name, len, hash_bytes(name, len));
  return id ? handle_of(id) : 0;
}

/* Names interned lately, by address. A loop that interns the same name on
 * every call (a literal, a Python str's buffer, a C++ string_view) then pays
 * a compare of its bytes with that region's name instead of the hash and the
 * probe. An entry is only a hint, shared by all threads and written without
 * a lock: its region's name is compared with the caller's bytes (`len` is
 * measured already, so nothing past the name is read) before its handle is
 * used, so a buffer reused for another name, or an entry torn by two
 * writers, costs a lookup and never a wrong handle. Not thread-local: the
 * library's TLS block has no room left under the 256 bytes dlopen allows.
 * An entry holds the region's info, not its id, so that a hit is a leaf
 * with no table walk: the info's address never changes (chunks only grow). */
#define NAME_HINTS 64
/* What an unused entry points to: a length no name has, so a NULL name
 * (which matches an unused entry's address) never needs a test of its own. */
static const struct sp_region_info no_hint = {.len = SIZE_MAX};
#define HINT1 {NULL, &no_hint}
#define HINT8 HINT1, HINT1, HINT1, HINT1, HINT1, HINT1, HINT1, HINT1
static struct {
  const char *_Atomic name;
  const struct sp_region_info *_Atomic ri;
} name_hints[NAME_HINTS] = {HINT8, HINT8, HINT8, HINT8, HINT8, HINT8, HINT8, HINT8};

static inline size_t name_hint(const char *name) {
  uintptr_t p = (uintptr_t)name;
  return (size_t)((p >> 3) ^ (p >> 9)) & (NAME_HINTS - 1);
}

/* A name the hints do not give: the table (hinting its address for the next
 * call), else a new region. Out of line: the hit paths below stay leaves. */
static __attribute__((noinline)) sp_region intern_miss(const char *name, size_t len) {
  uint32_t id = known(name, len);
  if (!id) return intern(name, len, NULL, -1, NULL, NULL);
  size_t k = name_hint(name);
  /* the info first, then the name (release): a reader that sees the name
   * sees an info pointer that is not NULL */
  atomic_store_explicit(&name_hints[k].ri, info_of(id & ~SP_I_REGION_SLOW_BIT), memory_order_relaxed);
  atomic_store_explicit(&name_hints[k].name, name, memory_order_release);
  return id;
}

/* The handle a hint gives for these bytes, or 0. The handle is read from the
 * info (not the hint), so an opt-in tag registered later shows at once. */
static inline uint32_t hinted(const char *name, size_t len) {
  size_t k = name_hint(name);
  if (atomic_load_explicit(&name_hints[k].name, memory_order_acquire) != name) return 0;
  const struct sp_region_info *ri = atomic_load_explicit(&name_hints[k].ri, memory_order_relaxed);
  if (ri->len != len || !same_bytes(ri->name, name, len)) return 0;
  return __atomic_load_n(&ri->handle, __ATOMIC_ACQUIRE);
}

sp_region sp_region_intern_ex(const char *name, const char *file, int line, const char *func,
                              const char *tags) {
  /* One byte past the limit is enough to tell "too long". */
  size_t len = name ? strnlen(name, MAX_NAME_BYTES + 1) : 0;
  uint32_t id = !tags || !*tags ? known(name, len) : 0;
  return id ? id : intern(name, len, file, line, func, tags);
}

/* Parenthesized: the header may define sp_region_intern() as a macro (a
 * literal's length taken at compile time). */
sp_region (sp_region_intern)(const char *name) {
  size_t len = name ? strnlen(name, MAX_NAME_BYTES + 1) : 0;
  uint32_t id = hinted(name, len);
  return id ? id : intern_miss(name, len);
}

sp_region sp_region_intern_n(const char *name, size_t len) {
  uint32_t id = hinted(name, len);
  return id ? id : intern_miss(name, len);
}

sp_region sp_i_site_register(sp_site *site) {
  sp_region id = sp_region_intern_ex(site->name, site->file, site->line, site->func, site->tags);
  if (id == 0) return 0;
  uint32_t expected = 0;
  /* Concurrent first calls intern the same name, so they agree on the id. */
  __atomic_compare_exchange_n(&site->id, &expected, id, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  if (site->kind == SP_SITE_FUNCTION) {
    struct sp_region_info *ri = (struct sp_region_info *)sp__region_info(id);
    if (ri && ri->file && ri->line == site->line) ri->kind = SP_SITE_FUNCTION;
  }
  return id;
}

static void json_escape_into(char **out, size_t *len, size_t *cap, const char *s) {
  for (; *s; s++) {
    char buf[8];
    const char *piece = buf;
    unsigned char c = (unsigned char)*s;
    if (c == '"') piece = "\\\"";
    else if (c == '\\') piece = "\\\\";
    else if (c < 0x20) snprintf(buf, sizeof buf, "\\u%04x", c);
    else { buf[0] = (char)c; buf[1] = 0; }
    size_t pl = strlen(piece);
    if (*len + pl + 4 > *cap) {
      *cap = (*cap + pl + 4) * 2;
      char *n = realloc(*out, *cap);
      if (!n) return;
      *out = n;
    }
    memcpy(*out + *len, piece, pl);
    *len += pl;
  }
}

char *sp__region_tags_json(uint32_t id) {
  const struct sp_region_info *ri = sp__region_info(id);
  size_t cap = 64, len = 0;
  char *out = malloc(cap);
  if (!out) return NULL;
  out[len++] = '[';
  for (size_t i = 0; ri && i < ri->ntags; i++) {
    if (len + 8 > cap) { cap *= 2; char *n = realloc(out, cap); if (!n) { free(out); return NULL; } out = n; }
    if (i) out[len++] = ',';
    out[len++] = '"';
    json_escape_into(&out, &len, &cap, ri->tags[i]);
    if (len + 4 > cap) { cap *= 2; char *n = realloc(out, cap); if (!n) { free(out); return NULL; } out = n; }
    out[len++] = '"';
  }
  out[len++] = ']';
  out[len] = 0;
  return out;
}
