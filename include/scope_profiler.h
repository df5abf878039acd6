/* scope_profiler.h - region profiler for scientific and HPC programs.
 *
 * Introduction
 *   Managers     sp_manager_create()/sp_manager_destroy() give independent
 *                profilers, each with its own configuration, regions and
 *                output file; SP_DEFAULT is the process-wide default manager
 *                behind the short calls sp_setup(), sp_finalize(), ...
 *   Lifecycle    setup -> record -> finalize. Finalize writes the run to one
 *                HDF5 file (schema 3 by default, docs/file-format.md) and can hand the
 *                results back in memory; recording continues afterwards and a
 *                later finalize writes only the newer events. SP_SESSION and
 *                sp_session_run() always finalize and record one root region
 *                "scope_profiler.session" around everything.
 *   Regions      sp_region handles come from a call site (SP_REGION, cached
 *                per site, no lookup on the hot path) or from an explicit
 *                interning call sp_region_intern(name) for dynamic names.
 *                sp_region_begin()/sp_region_end() are inlined, lock-free and
 *                thread-safe: every thread records into its own buffers.
 *   Off switches deactivate_profiling makes every region a predictable branch;
 *                compiling with -DSP_DISABLE makes the macros vanish while still
 *                type-checking their arguments; sp_pause()/sp_resume().
 *
 * Thread-safety: begin/end may be called from any number of threads at once.
 * Setup, finalize and destroy of one manager must not run concurrently with
 * each other or with begin/end of that manager on other threads.
 *
 * Errors: setup/IO calls return sp_status; sp_last_error() explains.
 */
#ifndef SCOPE_PROFILER_H
#define SCOPE_PROFILER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scope_profiler/config.h"
#include "scope_profiler/detail.h"
#include "scope_profiler/export.h"
#include "scope_profiler/gpu.h"
#include "scope_profiler/lines.h"
#include "scope_profiler/results.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*====== Version ======*/

#define SP_VERSION_MAJOR 0
#define SP_VERSION_MINOR 1
#define SP_VERSION_PATCH 0
#define SP_VERSION_STRING "0.1.0"
/* HDF5 layout written by this library (see docs/file-format.md). */
#define SP_FILE_SCHEMA 3

SP_API const char *sp_version_string(void);

/*====== Managers ======*/

typedef struct sp_manager sp_manager;

/* The process-wide default manager. Exported as a pointer, not as the
 * object: executables copy-relocate exported data, and a pointer's size
 * never changes, so the manager's layout stays private to the library. */
SP_API extern struct sp_manager *const sp_i_default;
#define SP_DEFAULT (sp_i_default)

/** Create an independent manager (not yet set up). NULL when out of memory or
 * when SP_I_MAX_MANAGERS managers are alive (sp_last_error() says which). */
SP_API sp_manager *sp_manager_create(void);

/** Destroy a manager: a run still active is discarded unless it was
 * finalized. Accepts NULL. Never call on SP_DEFAULT. */
SP_API void sp_manager_destroy(sp_manager *m);

/* Arguments of setup; zero-initialise and fill what you need. */
typedef struct sp_setup_args {
  const sp_options *options;       /* NULL: no options */
  const char *config_path;         /* TOML file; NULL: $SCOPE_PROFILER_CONFIG if set */
  const char *const *overrides;    /* NULL-terminated "key=value" list, highest precedence */
  int replace;                     /* replace a run that is still active */
  int auto_finalize;               /* finalize at exit() if the program forgets */
} sp_setup_args;

/** Resolve the configuration and start a run. `args` may be NULL (defaults
 * plus environment). A second setup while a run is active is
 * SP_ERR_ALREADY_ACTIVE unless args->replace. Issues no MPI call. */
SP_API sp_status sp_manager_setup(sp_manager *m, const sp_setup_args *args);

/* Arguments of finalize; zero-initialise. */
typedef struct sp_finalize_args {
  int verbose;          /* print the per-region summary */
  FILE *summary_stream; /* where the summary goes; NULL: stdout */
  int return_results;   /* hand back the results (see sp_manager_finalize) */
} sp_finalize_args;

/** Write the events recorded since setup (or since the previous finalize) and
 * optionally return them as results (free with sp_results_free()). A call
 * still open is left intact: it completes into the next run, and the return
 * is SP_ERR_OPEN_SCOPES after everything else was done. With
 * deactivate_file_output nothing touches disk. On an I/O failure the results
 * are still returned and no partial file is left. After the signal watcher
 * has written the run cut short by a termination signal (the process is
 * about to die of it), finalize writes nothing and returns SP_ERR_INACTIVE. */
SP_API sp_status sp_manager_finalize(sp_manager *m, const sp_finalize_args *args, sp_results **results);

/** Pause/resume recording at run time (calls begun while paused are not
 * recorded; calls open across the pause are). */
SP_API void sp_manager_pause(sp_manager *m);
SP_API void sp_manager_resume(sp_manager *m);

/** 1 when set up and recording (not deactivated), else 0. */
SP_API int sp_manager_is_active(const sp_manager *m);
/** 1 once setup succeeded, until destroy. */
SP_API int sp_manager_is_configured(const sp_manager *m);
/** The resolved configuration of the current (or last) run, or NULL. */
SP_API const sp_config *sp_manager_config(const sp_manager *m);
/** Path of the last file written, or NULL. */
SP_API const char *sp_manager_output_path(const sp_manager *m);

/** Problems counted on the hot path since setup (never printed there). */
typedef struct sp_problem_counts {
  uint64_t unmatched_ends;  /* end that did not match the innermost open call */
  uint64_t invalid_regions; /* begin/end with an invalid region handle */
  uint64_t dropped_events;  /* events lost because memory ran out */
  uint64_t open_at_finalize;/* calls still open at the last finalize */
  uint64_t left_open;       /* calls whose end never came: closed by an enclosing end (the
                             * session's) or when the run was cut short */
} sp_problem_counts;
SP_API sp_problem_counts sp_manager_problems(const sp_manager *m);

/*====== Regions ======*/

/* A region handle; 0 is invalid. Handles are process-wide: the same handle
 * works with every manager. */
typedef uint32_t sp_region;

/* A call site: static storage, one per SP_REGION use. The handle is assigned
 * on first use with a compare-and-swap, so concurrent first calls agree. */
typedef struct sp_site {
  const char *name;
  const char *file;
  const char *func;
  int line;
  int kind;         /* SP_SITE_BLOCK or SP_SITE_FUNCTION */
  const char *tags; /* comma-separated tags or NULL */
  uint32_t id;      /* cached handle; 0 until first use */
  uint32_t off_key; /* an opt-in region: the sp_i_hot.optin_key of the setup that
                     * disabled it (0: none), so that its calls cost one compare */
} sp_site;
#define SP_SITE_BLOCK 0
#define SP_SITE_FUNCTION 1

/** Intern a region name (any UTF-8, 1..1024 bytes; '/' is kept verbatim) and
 * return its handle, or 0 with sp_last_error() set for an empty, too long or
 * invalid name. Thread-safe; a lookup of a known name takes no lock. */
SP_API sp_region sp_region_intern(const char *name);
/** Same, for a counted name of exactly `len` bytes that need not be
 * NUL-terminated (Fortran character variables, Python bytes); a NUL byte
 * inside the `len` bytes is an error. */
SP_API sp_region sp_region_intern_n(const char *name, size_t len);
/** Same, with source location and comma-separated tags (first definition of
 * a name wins). */
SP_API sp_region sp_region_intern_ex(const char *name, const char *file, int line,
                                     const char *func, const char *tags);
#if defined(__GNUC__) && !defined(SP_NO_INLINE_INTERN)
/* A string literal's length is known at compile time: such a call goes to
 * sp_region_intern_n() and skips measuring the name (a loop that interns a
 * literal on every call pays a compare of its bytes, not strnlen as well).
 * Any other argument calls the exported sp_region_intern(). */
SP_I_INLINE sp_region sp_i_intern_c(const char *name) {
  if (__builtin_constant_p(__builtin_strlen(name)) && __builtin_strlen(name) <= 1024)
    return sp_region_intern_n(name, __builtin_strlen(name));
  return sp_region_intern(name);
}
#  define sp_region_intern(name) sp_i_intern_c(name)
#endif
/** Register a site (called once per site by sp_site_region). */
SP_API sp_region sp_i_site_register(sp_site *site);

/** The handle of a call site: one relaxed load after the first call. */
SP_I_INLINE sp_region sp_site_region(sp_site *site) {
#if defined(__GNUC__)
  uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
#else
  uint32_t id = site->id;
#endif
  if (SP_I_LIKELY(id != 0)) return id;
  return sp_i_site_register(site);
}

/** Name of a region handle, or NULL. */
SP_API const char *sp_region_name(sp_region r);

/** Completed calls of a region on this manager since its creation, summed
 * over threads and runs (running total across finalizes). Call it only while
 * no other thread records on `m`. */
SP_API uint64_t sp_manager_num_calls(const sp_manager *m, sp_region r);

/** Mark a tag as opt-in: regions carrying it stay disabled unless the tag is
 * enabled (enable_tags, SCOPE_PROFILER_ENABLE_TAGS, or "*"). Register before
 * the regions are first used. */
SP_API sp_status sp_register_opt_in_tag(const char *tag);

/** Begin/end one call of region `r` on manager `m`. Return 0, or a negative
 * sp_status (SP_ERR_UNMATCHED_END when `r` is not the innermost open call of
 * this thread: the call is counted and nothing recorded is changed). */
SP_I_INLINE int sp_region_begin(sp_manager *m, sp_region r) { return sp_i_begin(m, r); }
SP_I_INLINE int sp_region_end(sp_manager *m, sp_region r) { return sp_i_end(m, r); }

/** The same two calls out of line, for callers that cannot inline C: Fortran
 * bind(C) interfaces, Python ctypes/cffi, other FFIs, and programs that load
 * the library with dlopen(). Identical semantics and return values (and a
 * NULL manager returns SP_ERR_INVALID_ARGUMENT); they cost one call more. */
SP_API int sp_region_begin_fn(sp_manager *m, sp_region r);
SP_API int sp_region_end_fn(sp_manager *m, sp_region r);

/* A scope token: closes exactly the call it opened. */
typedef struct sp_scope {
  sp_manager *m;
  sp_region r;
  int open;
} sp_scope;

SP_I_INLINE sp_scope sp_scope_begin(sp_manager *m, sp_region r) {
  sp_scope s;
  s.m = m;
  s.r = r;
  s.open = sp_i_begin(m, r) == 0;
  return s;
}
/** End the scope's call; a second end is harmless. */
SP_I_INLINE int sp_scope_end(sp_scope *s) {
  if (!s->open) return 0;
  s->open = 0;
  return sp_i_end(s->m, s->r);
}
SP_I_INLINE void sp_scope_cleanup(sp_scope *s) { (void)sp_scope_end(s); }

/* The scope of a call site (SP_REGION and the C++ macros). An opt-in region
 * that this setup of `m` disabled is remembered at the site: its later calls
 * cost the handle's load, one bit test and one compare, and end nothing. */
SP_I_INLINE sp_scope sp_i_site_begin(sp_manager *m, sp_site *site) {
  sp_scope s;
  s.m = m;
  s.r = sp_site_region(site);
  if (SP_I_UNLIKELY(s.r & SP_I_REGION_SLOW_BIT)) {
    const struct sp_i_hot *h = (const struct sp_i_hot *)m;
#if defined(__GNUC__)
    uint32_t key = __atomic_load_n(&h->optin_key, __ATOMIC_RELAXED);
    if (__atomic_load_n(&site->off_key, __ATOMIC_RELAXED) == key) {
      s.open = 0;
      return s;
    }
    s.open = sp_i_begin(m, s.r) == 0;
    /* begin returned 0 and recorded nothing: disabled on this setup */
    if (s.open && sp_i_optin_off(h, s.r)) {
      __atomic_store_n(&site->off_key, key, __ATOMIC_RELAXED);
      s.open = 0;
    }
    return s;
#endif
  }
  s.open = sp_i_begin(m, s.r) == 0;
  return s;
}

/*====== Parents on another thread ======*/

/* A thread's innermost open call, captured to become the parent of the calls
 * another thread begins at depth 0. OpenMP parallel regions do this by
 * themselves (a worker's calls hang under the call that opened the region;
 * docs/reliability.md says which runtimes); thread pools and task runtimes
 * use the pair below: capture on the thread that hands out the work, adopt on
 * the thread that runs it. Such a child is stored with the parent's call id
 * as its parent id and its own thread in events/thread_ids; the parent's
 * exclusive time is not reduced by it. */
typedef struct sp_context {
  uint32_t gen;  /* the manager it belongs to; 0: no context */
  uint32_t ctx;
  uint32_t slot;
  uint32_t reserved;
} sp_context;

/** The calling thread's innermost open call on `m` (or, when none is open,
 * the context it adopted itself); a zero context when there is neither. Not
 * for the hot path: it takes a lock the first time a call is captured. */
SP_API sp_context sp_context_capture(sp_manager *m);
/** From now on, calls the calling thread begins at depth 0 on `m` get the
 * context's call as their parent, until it adopts another one; adopt a
 * zeroed context to stop. A context of another manager is ignored. */
SP_API void sp_context_adopt(sp_manager *m, sp_context c);

/** The calling thread is about to exit: stamp its end and CPU time in the
 * thread table of every manager it recorded on, now. Threads do this
 * themselves when they exit (before pthread_join returns); call it last in
 * a thread of a runtime whose join returns before the OS thread is gone
 * (the Python package does, for threading.Thread). A region the thread
 * begins afterwards registers it again as a new thread. */
SP_API void sp_thread_end(void);

/*====== User-level tasks (track_async) ======*/

/** Announce that the calling thread now runs user-level task `task` (a
 * coroutine or fiber; any nonzero id the scheduler chooses; 0 = the thread's
 * own context). With track_async on, calls nest per task, each call records
 * its task (events/task_ids) and the time its task was switched out while it
 * was open (events/await_ns), and the file gets a /task_table. A task may
 * move to another thread only while none of its regions is open. A no-op when
 * track_async is off. Not for the hot path of regions: it takes a lock. */
SP_API void sp_manager_task_switch(sp_manager *m, uint64_t task);
/** Give a task a display name (copied). */
SP_API void sp_manager_task_name(sp_manager *m, uint64_t task, const char *name);
/** Say what a task is, for the task table's `kind` and `coro_name` columns
 * (upstream writes "task" for an asyncio task or "greenlet", and the
 * qualified name of the coroutine or greenlet target). `kind`: NULL keeps
 * it (default "task"); otherwise 1-31 characters of letters, digits, '_',
 * '-' and '.' (a scheduler may say "fiber"). `coro_name`: NULL keeps it
 * (default ""); otherwise any text up to 4095 bytes (the function the task
 * runs, e.g. "Server.handle"). Both copied. Returns SP_OK (also when
 * track_async is off: nothing is recorded, as for the other task calls),
 * SP_ERR_INACTIVE when `m` is not set up, SP_ERR_INVALID_ARGUMENT for task
 * 0 or a kind or coro_name outside those bounds (sp_last_error() says which),
 * SP_ERR_NO_MEMORY. Not for the hot path: it takes a lock. */
SP_API sp_status sp_manager_task_describe(sp_manager *m, uint64_t task, const char *kind, const char *coro_name);
/** Mark a task finished (its done time in the task table). */
SP_API void sp_manager_task_done(sp_manager *m, uint64_t task);
SP_API void sp_task_switch(uint64_t task); /* default manager */

/*====== Session ======*/

typedef struct sp_session {
  sp_manager *m;
  sp_status status;       /* of setup, then of finalize */
  sp_scope root;
  const sp_finalize_args *fin;
  sp_results **results;
  int once;
} sp_session;

/** Set up `m`, open the root region "scope_profiler.session". The body runs
 * even when setup fails (profiling never stops the program). */
SP_API sp_session sp_session_begin(sp_manager *m, const sp_setup_args *setup,
                                   const sp_finalize_args *fin, sp_results **results);
/** Close the root region and finalize; idempotent. */
SP_API sp_status sp_session_end(sp_session *s);
SP_API void sp_session_cleanup(sp_session *s);

/** Run fn(user) inside a session on `m`. Returns the session's status. */
SP_API sp_status sp_session_run(sp_manager *m, const sp_setup_args *setup,
                                const sp_finalize_args *fin, sp_results **results,
                                void (*fn)(void *user), void *user);

/*====== Default-manager shortcuts ======*/

SP_API sp_status sp_setup(const sp_setup_args *args);
SP_API sp_status sp_finalize(const sp_finalize_args *args, sp_results **results);
SP_API void sp_pause(void);
SP_API void sp_resume(void);
SP_API int sp_is_active(void);
SP_I_INLINE int sp_begin(sp_region r) { return sp_i_begin(SP_DEFAULT, r); }
SP_I_INLINE int sp_end(sp_region r) { return sp_i_end(SP_DEFAULT, r); }
/** The default manager as a function (for FFIs that cannot read the
 * exported data symbol behind SP_DEFAULT); never NULL. */
SP_API sp_manager *sp_default_manager(void);

/*====== Macros ======*/

#define SP_I_CAT2(a, b) a##b
#define SP_I_CAT(a, b) SP_I_CAT2(a, b)

#if defined(SP_DISABLE)
/* Compiled out: nothing is emitted, but every argument is still type-checked
 * so an instrumented build cannot rot while profiling is off. */
#  define SP_REGION_M(mgr, name) ((void)sizeof(mgr), (void)sizeof(name))
#  define SP_REGION_TAGS_M(mgr, name, tags) ((void)sizeof(mgr), (void)sizeof(name), (void)sizeof(tags))
#  define SP_FUNCTION_M(mgr) ((void)sizeof(mgr))
#  define SP_CALL_M(mgr, name, expr) ((void)sizeof(mgr), (void)sizeof(name), (expr))
#  define SP_SESSION_M(var, mgr, setup, fin, res)                                            \
     for (sp_session var = {(mgr), (sp_status)((void)sizeof(setup), (void)sizeof(fin),       \
                                               (void)sizeof(res), SP_OK), {0, 0, 0}, 0, 0, 1}; \
          var.once; var.once = 0)
#else
#  if !defined(__GNUC__)
#    error "scope-profiler's scoped macros need __attribute__((cleanup)); use sp_region_begin/sp_region_end"
#  endif
#  define SP_I_CLEANUP(fn) __attribute__((cleanup(fn)))
/* The scope variable is only there for its cleanup: clang would call it unused. */
#  define SP_I_UNUSED __attribute__((unused))
#  define SP_I_SITE(var, name, tags, kind) \
     static sp_site var = {(name), __FILE__, __func__, __LINE__, (kind), (tags), 0, 0}
#  define SP_I_REGION_IMPL(mgr, name, tags, kind, n)                       \
     SP_I_SITE(SP_I_CAT(sp_i_site_, n), name, tags, kind);                     \
     sp_scope SP_I_CAT(sp_i_scope_, n) SP_I_CLEANUP(sp_scope_cleanup) SP_I_UNUSED = \
         sp_i_site_begin((mgr), &SP_I_CAT(sp_i_site_, n))
/** Declare, as a statement, a region that ends when the enclosing block is
 * left by any path (return, break, goto, end of block). */
#  define SP_REGION_M(mgr, name) SP_I_REGION_IMPL(mgr, name, NULL, SP_SITE_BLOCK, __COUNTER__)
#  define SP_REGION_TAGS_M(mgr, name, tags) SP_I_REGION_IMPL(mgr, name, tags, SP_SITE_BLOCK, __COUNTER__)
/** First statement of a function: profiles the whole body under the
 * function's name (the decorator counterpart). */
#  define SP_FUNCTION_M(mgr) SP_I_REGION_IMPL(mgr, __func__, NULL, SP_SITE_FUNCTION, __COUNTER__)
/** Evaluate `expr` (any type, including void) inside a region. */
#  define SP_CALL_M(mgr, name, expr) __extension__({ SP_REGION_M(mgr, name); (expr); })
/** `SP_SESSION(s, &setup, &fin, &results) { body }`: setup before the body,
 * finalize after it on every exit path; s.status holds the outcome. */
#  define SP_SESSION_M(var, mgr, setup, fin, res)                               \
     for (sp_session var SP_I_CLEANUP(sp_session_cleanup) =                     \
              sp_session_begin((mgr), (setup), (fin), (res));                   \
          var.once; var.once = 0)
#endif

#define SP_REGION(name) SP_REGION_M(SP_DEFAULT, name)
#define SP_REGION_TAGS(name, tags) SP_REGION_TAGS_M(SP_DEFAULT, name, tags)
#define SP_FUNCTION() SP_FUNCTION_M(SP_DEFAULT)
#define SP_CALL(name, expr) SP_CALL_M(SP_DEFAULT, name, expr)
#define SP_SESSION(var, setup, fin, res) SP_SESSION_M(var, SP_DEFAULT, setup, fin, res)

#ifdef __cplusplus
}
#endif
#endif
