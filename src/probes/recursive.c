/* recursive.c - the -finstrument-functions hooks and their address cache
 * (see recursive.h).
 *
 * The cache maps a function address to its region (or "excluded"). Readers
 * probe it without a lock: an entry's region is stored before its address
 * (release), so a reader that sees the address sees the region. Inserts,
 * which happen once per function, take the lock, and a full table is
 * replaced by a larger copy published with one pointer store; replaced
 * tables are kept until stop, since a reader may still be probing one.
 *
 * Everything here is no_instrument_function: the library is not meant to be
 * built with -finstrument-functions, but if it is, its own functions must not
 * call the hooks (a per-thread busy flag also stops any re-entry).
 */
#include "probes/recursive.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/symbolize.h"
#include "config/config_internal.h"
#include "probes/ext.h"

#define NOINSTR __attribute__((no_instrument_function))
#define EXCLUDED UINT32_MAX

struct entry {
  uintptr_t fn; /* 0 = empty */
  uint32_t region;
};
struct table {
  size_t mask, used;
  struct table *retired;
  struct entry e[];
};

struct frame {
  uintptr_t fn;
  uint32_t region; /* 0: not recorded (excluded, too deep, begin refused) */
};

struct rp_thread {
  struct frame *frames;
  uint32_t depth, cap;
  uint32_t gen;     /* rp_gen the frames belong to */
  uint32_t busy;    /* inside the hooks: never re-enter */
  uint64_t unpushed; /* frames that could not be stored (out of memory) */
};

/* Names handed out, to tell same-named functions of different files apart. */
struct named {
  char *name, *file;
};

static int rp_on; /* read by every hook call */
static uint32_t rp_gen;
static sp_manager *rp_m;
static char **rp_exclude, **rp_exclude_files;
static int64_t rp_max_depth;
static struct table *rp_table;
static pthread_mutex_t rp_lock = PTHREAD_MUTEX_INITIALIZER;
static sp_symbolizer *rp_sym;
static struct named *rp_names;
static size_t rp_nnames;
static struct sp_rp_stats rp_stats;
/* A thread's shadow stack hangs on rp_key, not on a thread-local variable
 * of its own: the library's static TLS block must stay small for dlopen
 * (tests/dlopen), and glibc's lookup of a low key is a few loads. */
static pthread_key_t rp_key;
static int rp_key_ok;
static pthread_once_t rp_key_once = PTHREAD_ONCE_INIT;

static NOINSTR size_t hash_fn(uintptr_t fn) {
  uint64_t x = (uint64_t)fn * UINT64_C(0x9e3779b97f4a7c15);
  return (size_t)(x >> 20);
}

static NOINSTR uint32_t cache_get(const struct table *t, uintptr_t fn) {
  for (size_t i = hash_fn(fn) & t->mask;; i = (i + 1) & t->mask) {
    uintptr_t f = __atomic_load_n(&t->e[i].fn, __ATOMIC_ACQUIRE);
    if (f == fn) return t->e[i].region;
    if (f == 0) return 0;
  }
}

static NOINSTR struct table *table_new(size_t cap) {
  struct table *t = calloc(1, sizeof *t + cap * sizeof t->e[0]);
  if (t) t->mask = cap - 1;
  return t;
}

static NOINSTR void put_locked(struct table *t, uintptr_t fn, uint32_t region) {
  size_t i = hash_fn(fn) & t->mask;
  while (t->e[i].fn && t->e[i].fn != fn) i = (i + 1) & t->mask;
  if (t->e[i].fn == fn) return;
  t->e[i].region = region;
  __atomic_store_n(&t->e[i].fn, fn, __ATOMIC_RELEASE);
  t->used++;
}

/* Insert under rp_lock, growing the table at half load (short probes). */
static NOINSTR void cache_put_locked(uintptr_t fn, uint32_t region) {
  struct table *t = rp_table;
  if ((t->used + 1) * 2 > t->mask + 1) {
    struct table *n = table_new((t->mask + 1) * 2);
    if (n) {
      for (size_t i = 0; i <= t->mask; i++)
        if (t->e[i].fn) put_locked(n, t->e[i].fn, t->e[i].region);
      n->retired = t;
      __atomic_store_n(&rp_table, n, __ATOMIC_RELEASE);
      t = n;
    } else if (t->used + 1 > t->mask) {
      return; /* full and no memory: this function stays uncached (slow, still right) */
    }
  }
  put_locked(t, fn, region);
}

static NOINSTR int matches(char *const *pats, const char *s) {
  if (!s || !pats) return 0;
  const char *base = strrchr(s, '/');
  base = base ? base + 1 : s;
  for (size_t i = 0; pats[i]; i++)
    if (fnmatch(pats[i], s, 0) == 0 || fnmatch(pats[i], base, 0) == 0) return 1;
  return 0;
}

/* The region name for (name, file): the plain name the first time, and
 * "name (file's last component)" when another file had it first. */
static NOINSTR char *unique_name_locked(const char *name, const char *file) {
  for (size_t i = 0; i < rp_nnames; i++) {
    if (strcmp(rp_names[i].name, name) != 0) continue;
    if (!file || !rp_names[i].file || strcmp(rp_names[i].file, file) == 0) return sp__strdup(name);
    const char *b = strrchr(file, '/');
    return sp__asprintf("%s (%s)", name, b ? b + 1 : file);
  }
  struct named *n = realloc(rp_names, (rp_nnames + 1) * sizeof *n);
  if (n) {
    rp_names = n;
    rp_names[rp_nnames].name = sp__strdup(name);
    rp_names[rp_nnames].file = file ? sp__strdup(file) : NULL;
    if (rp_names[rp_nnames].name) rp_nnames++;
  }
  return sp__strdup(name);
}

/* The load address of this library when it is a shared object apart from
 * the program (0 when linked into the program itself, where its functions
 * are simply not instrumented). */
static uintptr_t own_base;

static NOINSTR int first_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
  return 1;
}

static NOINSTR void find_own_base(void) {
  Dl_info me;
  uintptr_t exe = 0;
  dl_iterate_phdr(first_object, &exe);
  own_base = 0;
  if (dladdr((void *)(uintptr_t)&sp__rp_start, &me) && (uintptr_t)me.dli_fbase != exe)
    own_base = (uintptr_t)me.dli_fbase;
}

static NOINSTR int in_this_library(uintptr_t fn) {
  Dl_info a;
  return own_base && dladdr((void *)fn, &a) && (uintptr_t)a.dli_fbase == own_base;
}

/* First call of `fn`: its region, or EXCLUDED. */
static NOINSTR uint32_t resolve(uintptr_t fn) {
  pthread_mutex_lock(&rp_lock);
  uint32_t r = cache_get(rp_table, fn);
  if (r) {
    pthread_mutex_unlock(&rp_lock);
    return r;
  }
  if (!rp_sym && (rp_sym = sp__sym_new()) != NULL) sp__sym_add_self(rp_sym);
  const char *file = NULL;
  int line = 0;
  const char *name = rp_sym ? sp__sym_function(rp_sym, (uint64_t)fn, &file, &line) : NULL;
  if (!name && rp_sym) { /* an object loaded since (dlopen): look again */
    sp__sym_add_self(rp_sym);
    name = sp__sym_function(rp_sym, (uint64_t)fn, &file, &line);
  }
  char unknown[64];
  if (!name) {
    snprintf(unknown, sizeof unknown, "?? %#lx", (unsigned long)fn);
    name = unknown;
  }
  rp_stats.functions++;
  if (in_this_library(fn) || matches(rp_exclude, name) || matches(rp_exclude_files, file)) {
    r = EXCLUDED;
  } else {
    char *rname = unique_name_locked(name, file);
    r = rname ? sp_region_intern_ex(rname, file, file ? line : -1, name, NULL) : 0;
    free(rname);
    if (!r) r = EXCLUDED; /* a name the registry refuses (too long) */
  }
  if (r == EXCLUDED) rp_stats.excluded++;
  cache_put_locked(fn, r);
  pthread_mutex_unlock(&rp_lock);
  return r;
}

/*====== Per-thread shadow stacks ======*/

static NOINSTR void thread_gone(void *p) {
  struct rp_thread *t = p; /* the key's value is NULL again by now */
  free(t->frames);
  free(t);
}
static NOINSTR void make_key(void) { rp_key_ok = pthread_key_create(&rp_key, thread_gone) == 0; }

static NOINSTR struct rp_thread *attach(void) {
  struct rp_thread *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cap = 64;
  t->frames = malloc(t->cap * sizeof *t->frames);
  if (!t->frames) {
    free(t);
    return NULL;
  }
  t->gen = __atomic_load_n(&rp_gen, __ATOMIC_ACQUIRE);
  if (pthread_setspecific(rp_key, t) != 0) {
    free(t->frames);
    free(t);
    return NULL;
  }
  return t;
}

/* This thread's stack, emptied if it belongs to an earlier start. */
static NOINSTR struct rp_thread *self_thread(void) {
  struct rp_thread *t = pthread_getspecific(rp_key); /* the key exists: rp_on was seen */
  if (!t) t = attach();
  if (!t) return NULL;
  uint32_t g = __atomic_load_n(&rp_gen, __ATOMIC_ACQUIRE);
  if (t->gen != g) {
    t->gen = g;
    t->depth = 0;
    t->unpushed = 0;
  }
  return t;
}

static NOINSTR __attribute__((noinline)) void on_enter(uintptr_t fn) {
  struct rp_thread *t = self_thread();
  if (!t || t->busy) return;
  t->busy = 1;
  if (t->depth == t->cap) {
    struct frame *f = realloc(t->frames, (size_t)t->cap * 2 * sizeof *f);
    if (!f) {
      t->unpushed++; /* its exit must find nothing to pop */
      t->busy = 0;
      return;
    }
    t->frames = f;
    t->cap *= 2;
  }
  uint32_t r = 0;
  if (rp_max_depth <= 0 || (int64_t)t->depth < rp_max_depth) {
    const struct table *tab = __atomic_load_n(&rp_table, __ATOMIC_ACQUIRE);
    r = cache_get(tab, fn);
    if (!r) r = resolve(fn);
    if (r == EXCLUDED || sp_region_begin(rp_m, r) != 0) r = 0;
  }
  t->frames[t->depth].fn = fn;
  t->frames[t->depth].region = r;
  t->depth++;
  t->busy = 0;
}

static NOINSTR __attribute__((noinline)) void on_exit_fn(uintptr_t fn) {
  struct rp_thread *t = self_thread();
  if (!t || t->busy) return;
  if (t->unpushed) {
    t->unpushed--;
    return;
  }
  /* Normally the top frame. Below it only after a longjmp skipped exits;
   * not at all for a function entered before recording started. */
  uint32_t k = t->depth;
  while (k > 0 && t->frames[k - 1].fn != fn) k--;
  if (k == 0) return;
  t->busy = 1;
  while (t->depth >= k) {
    struct frame *f = &t->frames[--t->depth];
    if (f->region) sp_region_end(rp_m, f->region);
  }
  t->busy = 0;
}

SP_API NOINSTR void __cyg_profile_func_enter(void *fn, void *site);
SP_API NOINSTR void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site) {
  (void)site;
  if (__builtin_expect(!__atomic_load_n(&rp_on, __ATOMIC_RELAXED), 1)) return;
  on_enter((uintptr_t)fn);
}

void __cyg_profile_func_exit(void *fn, void *site) {
  (void)site;
  if (__builtin_expect(!__atomic_load_n(&rp_on, __ATOMIC_RELAXED), 1)) return;
  on_exit_fn((uintptr_t)fn);
}

/*====== Start and stop ======*/

static NOINSTR char **copy_list(const char *const *l) {
  size_t n = 0;
  while (l && l[n]) n++;
  char **c = calloc(n + 1, sizeof *c);
  for (size_t i = 0; c && i < n; i++)
    if (!(c[i] = sp__strdup(l[i]))) {
      for (size_t j = 0; j < i; j++) free(c[j]);
      free(c);
      return NULL;
    }
  return c;
}

static NOINSTR void free_list(char **l) {
  for (size_t i = 0; l && l[i]; i++) free(l[i]);
  free(l);
}

static NOINSTR void free_state_locked(void) {
  for (struct table *t = rp_table; t;) {
    struct table *next = t->retired;
    free(t);
    t = next;
  }
  rp_table = NULL;
  free_list(rp_exclude);
  free_list(rp_exclude_files);
  rp_exclude = rp_exclude_files = NULL;
  for (size_t i = 0; i < rp_nnames; i++) {
    free(rp_names[i].name);
    free(rp_names[i].file);
  }
  free(rp_names);
  rp_names = NULL;
  rp_nnames = 0;
  sp__sym_free(rp_sym);
  rp_sym = NULL;
}

static NOINSTR void after_fork_child(void) { pthread_mutex_init(&rp_lock, NULL); }
static pthread_once_t rp_fork_once = PTHREAD_ONCE_INIT;
static NOINSTR void register_fork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

sp_status sp__rp_start(const struct sp_rp_params *p) {
  if (!p || !p->m) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "recursive_profile: no manager");
  pthread_once(&rp_fork_once, register_fork);
  pthread_once(&rp_key_once, make_key);
  if (!rp_key_ok)
    return sp__set_error(SP_ERR_LIMIT, "recursive_profile: no thread-specific data key left "
                         "(pthread_key_create failed: the process has PTHREAD_KEYS_MAX of them)");
  pthread_mutex_lock(&rp_lock);
  if (rp_on && rp_m != p->m) {
    pthread_mutex_unlock(&rp_lock);
    return sp__set_error(SP_ERR_ALREADY_ACTIVE, "recursive_profile is already on for another manager; "
                         "instrumented functions are recorded on one manager at a time");
  }
  __atomic_store_n(&rp_on, 0, __ATOMIC_SEQ_CST);
  free_state_locked();
  rp_table = table_new(1024);
  rp_exclude = copy_list(p->exclude);
  rp_exclude_files = copy_list(p->exclude_files);
  if (!rp_table || !rp_exclude || !rp_exclude_files) {
    free_state_locked();
    pthread_mutex_unlock(&rp_lock);
    return sp__set_error(SP_ERR_NO_MEMORY, "recursive_profile: out of memory");
  }
  find_own_base();
  rp_m = p->m;
  rp_max_depth = p->max_depth;
  memset(&rp_stats, 0, sizeof rp_stats);
  __atomic_add_fetch(&rp_gen, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&rp_on, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&rp_lock);
  return SP_OK;
}

void sp__rp_stop(void) {
  pthread_mutex_lock(&rp_lock);
  __atomic_store_n(&rp_on, 0, __ATOMIC_SEQ_CST);
  /* Setup and destroy never run beside begin/end on other threads (the
   * API's rule), so no hook is probing the tables now. */
  free_state_locked();
  rp_m = NULL;
  pthread_mutex_unlock(&rp_lock);
}

sp_manager *sp__rp_manager(void) { return __atomic_load_n(&rp_on, __ATOMIC_ACQUIRE) ? rp_m : NULL; }

struct sp_rp_stats sp__rp_stats(void) {
  pthread_mutex_lock(&rp_lock);
  struct sp_rp_stats s = rp_stats;
  pthread_mutex_unlock(&rp_lock);
  return s;
}


/*====== As an extension ======*/

static NOINSTR int rec_wanted(const struct sp_config *cfg) { return cfg->recursive_profile; }

static NOINSTR sp_status rec_setup(struct sp_ext_setup *s, void **proc) {
  struct sp_rp_params p = {.m = s->manager,
                           .exclude = (const char *const *)s->cfg->recursive_exclude,
                           .exclude_files = (const char *const *)s->cfg->recursive_exclude_files,
                           .max_depth = s->cfg->recursive_max_depth == SP_INT_NONE ? 0 : s->cfg->recursive_max_depth};
  if (sp__rp_start(&p) != SP_OK) {
    sp_ext_warn(s->manager, "recursive_profile is off for this run: %s", sp_last_error());
    s->decline = 1;
    return SP_OK;
  }
  *proc = s->manager;
  return SP_OK;
}

static NOINSTR void rec_teardown(void *proc) {
  if (sp__rp_manager() == proc) sp__rp_stop();
}

static NOINSTR int rec_region_added(void *proc, uint32_t id, const struct sp_ext_region *r) {
  (void)proc;
  (void)id;
  (void)r;
  return 0; /* the hooks call begin/end themselves: no per-call hooks here */
}

static NOINSTR sp_status rec_emit(void *proc, struct sp_ext_emit *out) {
  (void)proc;
  struct sp_rp_stats st = sp__rp_stats();
  if (sp_ext_meta_i64(out, "recursive_functions", (int64_t)st.functions) ||
      sp_ext_meta_i64(out, "recursive_functions_excluded", (int64_t)st.excluded))
    return sp__set_error(SP_ERR_NO_MEMORY, "recursive_profile: out of memory for metadata");
  return SP_OK;
}

const struct sp_ext sp__ext_recursive = {
    .abi = SP_EXT_ABI,
    .name = "recursive_profile",
    .kind = SP_EXT_SOURCE | SP_EXT_AGGREGATE,
    .wanted = rec_wanted,
    .setup = rec_setup,
    .teardown = rec_teardown,
    .region_added = rec_region_added,
    .emit = rec_emit,
};
