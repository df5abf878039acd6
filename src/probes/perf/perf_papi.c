/* perf_papi.c - the PAPI backend of perf_events (built with SP_HAVE_PAPI):
 * names that start with PAPI_ (presets) or papi: (native events such as
 * papi:perf::TASK-CLOCK) are counted through a PAPI EventSet per thread,
 * read at begin and end like the kernel counters. What Caliper, Score-P,
 * TAU and GPTL users name their counters by.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <papi.h>

#include "probes/perf/perf_events.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc = PAPI_ENOINIT;
static pthread_t init_thread; /* PAPI must not forget the thread that initialised it */

static unsigned long thread_id(void) { return (unsigned long)pthread_self(); }

static void init(void) {
  init_thread = pthread_self();
  int v = PAPI_library_init(PAPI_VER_CURRENT);
  if (v != PAPI_VER_CURRENT) {
    init_rc = v < 0 ? v : PAPI_EINVAL;
    return;
  }
  init_rc = PAPI_thread_init(thread_id);
}

static int fail(char *err, size_t errlen, const char *what, const char *name, int rc) {
  snprintf(err, errlen, "PAPI: %s%s%s: %s%s", what, name ? " " : "", name ? name : "", PAPI_strerror(rc),
           rc == PAPI_ENOEVNT ? " on this machine (`papi_avail -a` lists the presets it can count, "
                                "`papi_native_avail` the native events, written papi:<name>)"
                              : "");
  return -1;
}

int sp__papi_thread_open(const int *codes, int n, int *set, char *err, size_t errlen) {
  *set = PAPI_NULL;
  int rc = PAPI_register_thread();
  if (rc != PAPI_OK) return fail(err, errlen, "cannot register the thread", NULL, rc);
  if ((rc = PAPI_create_eventset(set)) != PAPI_OK) {
    PAPI_unregister_thread();
    return fail(err, errlen, "cannot create an event set", NULL, rc);
  }
  for (int i = 0; i < n; i++) {
    if ((rc = PAPI_add_event(*set, codes[i])) != PAPI_OK) {
      char name[PAPI_MAX_STR_LEN] = "?";
      PAPI_event_code_to_name(codes[i], name);
      sp__papi_thread_close(*set);
      *set = PAPI_NULL;
      return fail(err, errlen,
                  rc == PAPI_ECNFLCT ? "these events cannot be counted together (too many for the counters?); cannot add"
                                     : "cannot count",
                  name, rc);
    }
  }
  if ((rc = PAPI_start(*set)) != PAPI_OK) {
    sp__papi_thread_close(*set);
    *set = PAPI_NULL;
    return fail(err, errlen, "cannot start the counters", NULL, rc);
  }
  return 0;
}

int sp__papi_read(int set, long long *values) { return PAPI_read(set, values) == PAPI_OK ? 0 : -1; }

/* On the set's own thread only: PAPI binds an EventSet to its thread. */
void sp__papi_thread_close(int set) {
  if (set != PAPI_NULL) {
    long long scratch[64];
    PAPI_stop(set, scratch);
    PAPI_cleanup_eventset(set);
    PAPI_destroy_eventset(&set);
  }
  if (!pthread_equal(pthread_self(), init_thread)) PAPI_unregister_thread();
}

int sp__papi_setup(const char *const *names, int n, int *codes, char *err, size_t errlen) {
  pthread_once(&init_once, init);
  if (init_rc != PAPI_OK) return fail(err, errlen, "the library does not initialise", NULL, init_rc);
  for (int i = 0; i < n; i++) {
    int rc = PAPI_event_name_to_code(names[i], &codes[i]);
    if (rc != PAPI_OK) {
      snprintf(err, errlen,
               "PAPI has no event '%s%s' on this machine (%s); `papi_avail -a` lists the presets it can count and "
               "`papi_native_avail` the native events (write those as papi:<name>)",
               strncmp(names[i], "PAPI_", 5) ? "papi:" : "", names[i], PAPI_strerror(rc)); /* as written */
      return -1;
    }
  }
  /* Counting them once here turns "cannot be counted" into a setup error. */
  int set;
  if (sp__papi_thread_open(codes, n, &set, err, errlen) != 0) return -1;
  long long v[64];
  int ok = sp__papi_read(set, v) == 0;
  sp__papi_thread_close(set);
  if (!ok) {
    snprintf(err, errlen, "PAPI: the events open but cannot be read on this machine");
    return -1;
  }
  return 0;
}
