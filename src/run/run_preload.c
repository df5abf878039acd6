/* run_preload.c - libscope_profiler_run.so, the small library `scope-profiler
 * run` preloads beside the profiler itself: its pthread_create hands every
 * thread the program starts to the run's session first, so that sources that
 * sample whole threads (line profiles) see threads that never record a call
 * and are in no OpenMP team.
 *
 * There is no thread-start hook in glibc, so the program's pthread_create is
 * interposed: the real one (dlsym RTLD_NEXT) starts a trampoline that calls
 * the profiler's sp_i_run_thread_started() on the new thread, then the
 * program's start routine with its argument; what that returns is the
 * thread's result, and pthread_exit, cancellation and detached threads are
 * untouched. The profiler is found by name (dlsym RTLD_DEFAULT), not
 * linked: the library has no other dependency than libc. Only when the
 * profiler says it wants the thread (sp_i_run_thread_wanted: a session of
 * `run` with such a source, and a start routine outside the profiler's own
 * libraries) is anything done; otherwise, and for a program carrying a
 * static copy of the profiler (whose symbols the dynamic linker does not
 * see), the call goes straight to the real pthread_create.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef int create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int wanted_fn(void *(*)(void *));
typedef void started_fn(void);

static create_fn *real_create;
static wanted_fn *wanted;
static started_fn *started;
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

static void resolve(void) {
  void *p = dlsym(RTLD_NEXT, "pthread_create");
  memcpy(&real_create, &p, sizeof p); /* POSIX guarantees the round trip */
  p = dlsym(RTLD_DEFAULT, "sp_i_run_thread_wanted");
  memcpy(&wanted, &p, sizeof p);
  p = dlsym(RTLD_DEFAULT, "sp_i_run_thread_started");
  memcpy(&started, &p, sizeof p);
}

struct start {
  void *(*fn)(void *);
  void *arg;
};

static void *trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  started();
  return s.fn(s.arg);
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg);

__attribute__((visibility("default"))) int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg) {
  pthread_once(&resolve_once, resolve);
  if (!real_create) return EAGAIN; /* no libc pthread_create: cannot happen in a dynamic program */
  struct start *s = wanted && started && wanted(fn) ? malloc(sizeof *s) : NULL;
  if (!s) return real_create(thread, attr, fn, arg);
  s->fn = fn;
  s->arg = arg;
  int rc = real_create(thread, attr, trampoline, s);
  if (rc != 0) free(s);
  return rc;
}
