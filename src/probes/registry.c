/* registry.c - the process-wide list of extensions and the selection made at
 * setup. The built-in ones are listed here, each behind its own build switch
 * (SP_HAVE_<NAME>, from CMake's SP_WITH_<NAME>); others (MPI's bytes probe,
 * tests) register at run time. Adding an extension is one file under
 * src/probes/ plus one line here.
 */
#include <pthread.h>
#include <stddef.h>

#include "config/config_internal.h"
#include "probes/ext.h"

extern const struct sp_ext sp__ext_async;
#ifdef SP_HAVE_MEMORY
extern const struct sp_ext sp__ext_memory;
#endif
extern const struct sp_ext sp__ext_nvtx; /* declines with a warning in a build without NVTX3 */
extern const struct sp_ext sp__ext_gpu;
extern const struct sp_ext sp__ext_line;
extern const struct sp_ext sp__ext_recursive;
#ifdef SP_HAVE_PERF
extern const struct sp_ext sp__ext_perf;
#endif
#ifdef SP_HAVE_LIKWID
extern const struct sp_ext sp__ext_likwid;
#endif

/* Registration order is hook order: counters first (outermost: read before
 * a forwarder's marker starts and after it stops), then forwarders, then
 * the core's own columns. */
static const struct sp_ext *const builtin[] = {
#ifdef SP_HAVE_PERF
    &sp__ext_perf,
#endif
#ifdef SP_HAVE_LIKWID
    &sp__ext_likwid,
#endif
#ifdef SP_HAVE_MEMORY
    &sp__ext_memory,
#endif
    &sp__ext_nvtx,
    &sp__ext_gpu,
    &sp__ext_async,
    &sp__ext_line,      /* sources: no per-call hooks */
    &sp__ext_recursive,
};

#define MAX_REGISTERED 32
static const struct sp_ext *registered[MAX_REGISTERED];
static int nregistered;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static int add(const struct sp_ext *x) {
  if (!x || x->abi != SP_EXT_ABI || !x->name || !x->wanted) return -1;
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == x) return 0;
  if (nregistered == MAX_REGISTERED) return -1;
  registered[nregistered++] = x;
  return 0;
}

static void add_builtin(void) {
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) add(builtin[i]);
}

int sp__ext_register(const struct sp_ext *x) {
  pthread_once(&builtin_once, add_builtin);
  pthread_mutex_lock(&reg_lock);
  int rc = add(x);
  pthread_mutex_unlock(&reg_lock);
  return rc;
}

int sp__ext_select(const struct sp_config *cfg, const struct sp_ext **out, int max) {
  pthread_once(&builtin_once, add_builtin);
  pthread_mutex_lock(&reg_lock);
  int n = 0;
  for (int i = 0; i < nregistered && n < max; i++)
    if (registered[i]->wanted(cfg)) out[n++] = registered[i];
  pthread_mutex_unlock(&reg_lock);
  return n;
}
