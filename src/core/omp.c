/* omp.c - following OpenMP parallel regions, so that a worker thread's calls
 * hang under the call that opened the region (context.c does the rest).
 *
 * At a parallel region the encountering thread captures its innermost open
 * call on every active manager; each other thread of the team adopts those
 * contexts while it runs its share, and drops them after. Two ways in, since
 * the runtimes differ:
 *   - GNU libgomp (GCC): the compiler calls GOMP_parallel and its siblings.
 *     This file defines them, captures, and calls libgomp's own (found with
 *     dlsym(RTLD_NEXT)) with a trampoline that adopts on the team's threads.
 *     That works where the program links this library before libgomp, which
 *     is what `cc -fopenmp ... -lscope_profiler` and CMake do (the driver adds
 *     -lgomp last). These are the only exported names without the sp_ prefix.
 *   - LLVM libomp (clang): the OMPT tool interface; ompt_start_tool is
 *     defined here and registers the parallel-begin/end and implicit-task
 *     callbacks.
 * Either way the cost is one capture per parallel region and one adoption
 * per thread of its team, nothing per region call. Older GCC (before 4.9)
 * compiled GOMP_parallel_start/end, which are not followed: those workers'
 * calls stay roots (docs/reliability.md).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/spill.h"

static int max_team;
static int hook_used; /* 1: GOMP wrappers, 2: OMPT */

int sp__omp_max_team(void) { return __atomic_load_n(&max_team, __ATOMIC_RELAXED); }

const char *sp__omp_hook(void) {
  int h = __atomic_load_n(&hook_used, __ATOMIC_RELAXED);
  return h == 1 ? "gomp" : h == 2 ? "ompt" : "none";
}

static void note_team(int n) {
  int cur = __atomic_load_n(&max_team, __ATOMIC_RELAXED);
  while (n > cur && !__atomic_compare_exchange_n(&max_team, &cur, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* The contexts of one parallel region: per manager slot, the manager, its
 * generation and the context its encountering thread captured. */
struct omp_share {
  void *first; /* GOMP_parallel_reductions reads the first word of the data */
  void (*fn)(void *);
  void *data;
  pthread_t owner;
  int any;
  struct sp_manager *m[SP_I_MAX_MANAGERS];
  uint32_t gen[SP_I_MAX_MANAGERS];
  uint32_t ctx[SP_I_MAX_MANAGERS];
};

static void capture_all(struct omp_share *s) {
  s->any = 0;
  s->owner = pthread_self();
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    struct sp_manager *m = sp__live_manager(i);
    if (!m || !m->run_active) continue;
    s->any = 1; /* the team's size is worth knowing even with nothing to adopt */
    uint32_t c = sp__xctx_capture(m);
    uint32_t slot = m->hot.slot;
    if (!c || slot >= SP_I_MAX_MANAGERS) continue;
    s->m[slot] = m;
    s->gen[slot] = m->hot.gen;
    s->ctx[slot] = c;
  }
}

/* What a team thread adopted before (restored after its share). */
struct omp_saved {
  uint32_t gen[SP_I_MAX_MANAGERS];
  uint32_t ctx[SP_I_MAX_MANAGERS];
};

static void adopt_all(const struct omp_share *s, struct omp_saved *old) {
  for (int k = 0; k < SP_I_MAX_MANAGERS; k++) {
    if (!s->gen[k]) continue;
    sp__adopted_get(s->m[k], &old->gen[k], &old->ctx[k]);
    sp__adopt(s->m[k], s->gen[k], s->ctx[k]);
  }
}

static void restore_all(const struct omp_share *s, const struct omp_saved *old) {
  for (int k = 0; k < SP_I_MAX_MANAGERS; k++)
    if (s->gen[k]) sp__adopt(s->m[k], old->gen[k], old->ctx[k]);
}

/*====== GNU libgomp ======*/

static sp__int_fn omp_num_threads_fn;
static pthread_once_t num_threads_once = PTHREAD_ONCE_INIT;
static void find_num_threads(void) { omp_num_threads_fn = sp__find_int_fn("omp_get_num_threads"); }

static void trampoline(void *p) {
  struct omp_share *s = p;
  if (pthread_equal(pthread_self(), s->owner)) {
    pthread_once(&num_threads_once, find_num_threads);
    if (omp_num_threads_fn) note_team(omp_num_threads_fn());
    s->fn(s->data);
    return;
  }
  struct omp_saved old;
  memset(&old, 0, sizeof old);
  adopt_all(s, &old);
  s->fn(s->data);
  restore_all(s, &old);
}

/* libgomp's own entry point `name`. Linkers that drop unneeded libraries
 * (--as-needed, Debian's default) drop libgomp when this library satisfied
 * the program's only reference to it (a program whose OpenMP is one bare
 * `parallel`): load it then. Without it the program cannot run its OpenMP
 * code at all. */
static void *real(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
    p = h ? dlsym(h, name) : NULL;
  }
  if (!p) abort();
  return p;
}

#define SP__GOMP_REAL(var, type, name)                                  \
  static type var;                                                      \
  if (!__atomic_load_n(&var, __ATOMIC_ACQUIRE)) {                       \
    type f_;                                                            \
    void *p_ = real(name);                                              \
    memcpy(&f_, &p_, sizeof f_);                                        \
    __atomic_store_n(&var, f_, __ATOMIC_RELEASE);                       \
  }

#define SP__GOMP_SHARE(s, fn_, data_)                                   \
  struct omp_share s;                                                   \
  memset(&s, 0, sizeof s);                                              \
  s.fn = fn_;                                                           \
  s.data = data_;                                                       \
  capture_all(&s);                                                      \
  __atomic_store_n(&hook_used, 1, __ATOMIC_RELAXED);

typedef void (*gomp_fn)(void *);

SP_API void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags);
SP_API unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned num_threads, unsigned flags);
SP_API void GOMP_parallel_sections(gomp_fn fn, void *data, unsigned num_threads, unsigned count, unsigned flags);
SP_API void GOMP_teams_reg(gomp_fn fn, void *data, unsigned num_teams, unsigned thread_limit, unsigned flags);

SP_API void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags) {
  typedef void (*f_t)(gomp_fn, void *, unsigned, unsigned);
  SP__GOMP_REAL(f, f_t, "GOMP_parallel");
  SP__GOMP_SHARE(s, fn, data);
  if (!s.any) {
    f(fn, data, num_threads, flags);
    return;
  }
  f(trampoline, &s, num_threads, flags);
}

SP_API unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned num_threads, unsigned flags) {
  typedef unsigned (*f_t)(gomp_fn, void *, unsigned, unsigned);
  SP__GOMP_REAL(f, f_t, "GOMP_parallel_reductions");
  SP__GOMP_SHARE(s, fn, data);
  if (!s.any) return f(fn, data, num_threads, flags);
  s.first = data ? *(void **)data : NULL; /* libgomp finds the reductions there */
  return f(trampoline, &s, num_threads, flags);
}

SP_API void GOMP_parallel_sections(gomp_fn fn, void *data, unsigned num_threads, unsigned count, unsigned flags) {
  typedef void (*f_t)(gomp_fn, void *, unsigned, unsigned, unsigned);
  SP__GOMP_REAL(f, f_t, "GOMP_parallel_sections");
  SP__GOMP_SHARE(s, fn, data);
  if (!s.any) {
    f(fn, data, num_threads, count, flags);
    return;
  }
  f(trampoline, &s, num_threads, count, flags);
}

SP_API void GOMP_teams_reg(gomp_fn fn, void *data, unsigned num_teams, unsigned thread_limit, unsigned flags) {
  typedef void (*f_t)(gomp_fn, void *, unsigned, unsigned, unsigned);
  SP__GOMP_REAL(f, f_t, "GOMP_teams_reg");
  SP__GOMP_SHARE(s, fn, data);
  if (!s.any) {
    f(fn, data, num_teams, thread_limit, flags);
    return;
  }
  f(trampoline, &s, num_teams, thread_limit, flags);
}

/* The combined parallel loops GCC 4.9 to 8 emitted (newer GCC calls
 * GOMP_parallel and starts the loop inside). */
#define SP__GOMP_LOOP(name)                                                                          \
  SP_API void name(gomp_fn fn, void *data, unsigned nt, long start, long end, long incr, long chunk,  \
                   unsigned flags);                                                                  \
  SP_API void name(gomp_fn fn, void *data, unsigned nt, long start, long end, long incr, long chunk,  \
                   unsigned flags) {                                                                 \
    typedef void (*f_t)(gomp_fn, void *, unsigned, long, long, long, long, unsigned);                \
    SP__GOMP_REAL(f, f_t, #name);                                                                    \
    SP__GOMP_SHARE(s, fn, data);                                                                     \
    if (s.any)                                                                                       \
      f(trampoline, &s, nt, start, end, incr, chunk, flags);                                         \
    else                                                                                             \
      f(fn, data, nt, start, end, incr, chunk, flags);                                               \
  }
#define SP__GOMP_LOOP_RT(name)                                                                       \
  SP_API void name(gomp_fn fn, void *data, unsigned nt, long start, long end, long incr, unsigned flags); \
  SP_API void name(gomp_fn fn, void *data, unsigned nt, long start, long end, long incr, unsigned flags) { \
    typedef void (*f_t)(gomp_fn, void *, unsigned, long, long, long, unsigned);                      \
    SP__GOMP_REAL(f, f_t, #name);                                                                    \
    SP__GOMP_SHARE(s, fn, data);                                                                     \
    if (s.any)                                                                                       \
      f(trampoline, &s, nt, start, end, incr, flags);                                                \
    else                                                                                             \
      f(fn, data, nt, start, end, incr, flags);                                                      \
  }
SP__GOMP_LOOP(GOMP_parallel_loop_static)
SP__GOMP_LOOP(GOMP_parallel_loop_dynamic)
SP__GOMP_LOOP(GOMP_parallel_loop_guided)
SP__GOMP_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic)
SP__GOMP_LOOP(GOMP_parallel_loop_nonmonotonic_guided)
SP__GOMP_LOOP_RT(GOMP_parallel_loop_runtime)
SP__GOMP_LOOP_RT(GOMP_parallel_loop_nonmonotonic_runtime)
SP__GOMP_LOOP_RT(GOMP_parallel_loop_maybe_nonmonotonic_runtime)

/*====== LLVM libomp: OMPT ======*/

/* The few OMPT declarations used (OpenMP 5.0, omp-tools.h), spelled out so
 * that the build does not need LLVM's headers. */
typedef union {
  uint64_t value;
  void *ptr;
} sp_ompt_data;
typedef void (*sp_ompt_cb)(void);
typedef sp_ompt_cb (*sp_ompt_lookup)(const char *);
typedef int (*sp_ompt_set_callback)(int event, sp_ompt_cb cb);
struct sp_ompt_start {
  int (*initialize)(sp_ompt_lookup lookup, int initial_device, sp_ompt_data *tool_data);
  void (*finalize)(sp_ompt_data *tool_data);
  sp_ompt_data tool_data;
};
enum { OMPT_PARALLEL_BEGIN = 3, OMPT_PARALLEL_END = 4, OMPT_IMPLICIT_TASK = 7 };
enum { OMPT_SCOPE_BEGIN = 1, OMPT_SCOPE_END = 2, OMPT_TASK_INITIAL = 1 };

/* Another OMPT tool keeps working beside this one: the one OMP_TOOL_LIBRARIES
 * names, else LLVM's libarcher (which tells ThreadSanitizer about OpenMP's
 * synchronisation). libomp would have loaded it had this library not been a
 * tool, so it is loaded here and sees every event: its callbacks for the
 * three events used here are called from ours, the rest it registers
 * itself. The parallel data keep the other tool's value; a region's contexts
 * are found by that value (the other tool's object for the region), or, with
 * no other tool, by the value this one stores there. libomp hands the team
 * a copy of the data, so its value is the only key both ends see. */
static struct sp_ompt_start *next_tool;
static sp_ompt_lookup real_lookup;
static sp_ompt_set_callback real_set;
static sp_ompt_cb next_cb[8]; /* set at libomp's start-up, read by every thread: atomics */

static sp_ompt_cb next_callback(int event) { return __atomic_load_n(&next_cb[event], __ATOMIC_ACQUIRE); }

typedef void (*pbegin_fn)(sp_ompt_data *, const void *, sp_ompt_data *, unsigned, int, const void *);
typedef void (*pend_fn)(sp_ompt_data *, sp_ompt_data *, int, const void *);
typedef void (*itask_fn)(int, sp_ompt_data *, sp_ompt_data *, unsigned, unsigned, int);

/* The contexts of the parallel regions running now, by the value of their
 * OMPT parallel data. */
struct share_node {
  uint64_t key;
  struct share_node *next;
  struct omp_share s;
};
static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct share_node *shares;

/* What a team thread adopted before its share, restored at its end; a stack
 * (nested regions), keyed by the implicit task's data. */
struct saved_node {
  const void *key;
  struct saved_node *next;
  struct omp_saved old;
  struct omp_share s;
};
static __thread struct saved_node *saved_top;

static void ompt_parallel_begin(sp_ompt_data *task, const void *frame, sp_ompt_data *parallel, unsigned requested,
                                int flags, const void *ra) {
  sp_ompt_cb next = next_callback(OMPT_PARALLEL_BEGIN);
  if (next) {
    pbegin_fn f;
    memcpy(&f, &next, sizeof f);
    f(task, frame, parallel, requested, flags, ra);
  }
  struct share_node *n = calloc(1, sizeof *n);
  if (!n) return;
  capture_all(&n->s);
  if (!n->s.any) {
    free(n);
    return;
  }
  if (!parallel->value) parallel->ptr = n;
  n->key = parallel->value;
  pthread_mutex_lock(&share_lock);
  n->next = shares;
  shares = n;
  pthread_mutex_unlock(&share_lock);
}

static void ompt_parallel_end(sp_ompt_data *parallel, sp_ompt_data *task, int flags, const void *ra) {
  uint64_t key = parallel->value; /* before the other tool lets go of it */
  sp_ompt_cb next = next_callback(OMPT_PARALLEL_END);
  if (next) {
    pend_fn f;
    memcpy(&f, &next, sizeof f);
    f(parallel, task, flags, ra);
  }
  pthread_mutex_lock(&share_lock);
  struct share_node **p = &shares;
  while (*p && (*p)->key != key) p = &(*p)->next;
  struct share_node *n = *p;
  if (n) *p = n->next;
  pthread_mutex_unlock(&share_lock);
  free(n);
}

static void ompt_implicit_task(int endpoint, sp_ompt_data *parallel, sp_ompt_data *task, unsigned nthreads,
                               unsigned index, int flags) {
  sp_ompt_cb next = next_callback(OMPT_IMPLICIT_TASK);
  if (next) {
    itask_fn f;
    memcpy(&f, &next, sizeof f);
    f(endpoint, parallel, task, nthreads, index, flags);
  }
  if (flags & OMPT_TASK_INITIAL) return;
  if (endpoint == OMPT_SCOPE_BEGIN) {
    if (index == 0) {
      note_team((int)nthreads);
      return; /* the encountering thread itself */
    }
    struct saved_node *v = calloc(1, sizeof *v);
    if (!v) return;
    pthread_mutex_lock(&share_lock);
    const struct share_node *n = shares;
    while (n && (!parallel || n->key != parallel->value)) n = n->next;
    if (n) v->s = n->s;
    pthread_mutex_unlock(&share_lock);
    if (!n) {
      free(v);
      return;
    }
    v->key = task;
    adopt_all(&v->s, &v->old);
    v->next = saved_top;
    saved_top = v;
  } else if (endpoint == OMPT_SCOPE_END && saved_top && saved_top->key == (const void *)task) {
    struct saved_node *v = saved_top;
    saved_top = v->next;
    restore_all(&v->s, &v->old);
    free(v);
  }
}

static int chained_set(int event, sp_ompt_cb cb) {
  if (event == OMPT_PARALLEL_BEGIN || event == OMPT_PARALLEL_END || event == OMPT_IMPLICIT_TASK) {
    __atomic_store_n(&next_cb[event], cb, __ATOMIC_RELEASE);
    return 5; /* ompt_set_always */
  }
  return real_set(event, cb);
}

static sp_ompt_cb chained_lookup(const char *name) {
  if (strcmp(name, "ompt_set_callback") == 0) {
    int (*f)(int, sp_ompt_cb) = chained_set;
    sp_ompt_cb cb;
    memcpy(&cb, &f, sizeof cb);
    return cb;
  }
  return real_lookup(name);
}

static int ompt_init(sp_ompt_lookup lookup, int initial_device, sp_ompt_data *tool_data) {
  (void)tool_data;
  real_lookup = lookup;
  sp_ompt_cb p = lookup("ompt_set_callback");
  if (!p) return 0;
  memcpy(&real_set, &p, sizeof real_set);
  pbegin_fn pb = ompt_parallel_begin;
  pend_fn pe = ompt_parallel_end;
  itask_fn it = ompt_implicit_task;
  sp_ompt_cb cb;
  memcpy(&cb, &pb, sizeof cb);
  real_set(OMPT_PARALLEL_BEGIN, cb);
  memcpy(&cb, &pe, sizeof cb);
  real_set(OMPT_PARALLEL_END, cb);
  memcpy(&cb, &it, sizeof cb);
  real_set(OMPT_IMPLICIT_TASK, cb);
  __atomic_store_n(&hook_used, 2, __ATOMIC_RELAXED);
  if (next_tool && next_tool->initialize && !next_tool->initialize(chained_lookup, initial_device, &next_tool->tool_data))
    next_tool = NULL;
  return 1; /* keep the tool active */
}

static void ompt_fini(sp_ompt_data *tool_data) {
  (void)tool_data;
  if (next_tool && next_tool->finalize) next_tool->finalize(&next_tool->tool_data);
}

SP_API struct sp_ompt_start *ompt_start_tool(unsigned int omp_version, const char *runtime_version);

/* The tool libomp would have started in this library's place. */
static struct sp_ompt_start *find_next_tool(unsigned int omp_version, const char *runtime_version) {
  typedef struct sp_ompt_start *(*start_fn)(unsigned int, const char *);
  const char *libs = getenv("OMP_TOOL_LIBRARIES");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s%slibarcher.so", libs ? libs : "", libs && *libs ? ":" : "");
  for (char *save = NULL, *lib = strtok_r(buf, ":", &save); lib; lib = strtok_r(NULL, ":", &save)) {
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    void *f = h ? dlsym(h, "ompt_start_tool") : NULL;
    start_fn start;
    memcpy(&start, &f, sizeof start);
    struct sp_ompt_start *(*me)(unsigned int, const char *) = ompt_start_tool;
    void *self; /* this library, named there too: not twice */
    memcpy(&self, &me, sizeof self);
    struct sp_ompt_start *r = f && f != self ? start(omp_version, runtime_version) : NULL;
    if (r) return r;
    if (h) dlclose(h);
  }
  return NULL;
}

SP_API struct sp_ompt_start *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  static struct sp_ompt_start start = {ompt_init, ompt_fini, {0}};
  next_tool = find_next_tool(omp_version, runtime_version);
  return &start;
}
