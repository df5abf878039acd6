/* perf_events.h - the pieces of the perf_events probe (src/probes/perf/):
 * name resolution (perf_names.c) and the PAPI backend (perf_papi.c, built
 * with SP_HAVE_PAPI), as the probe itself (perf.c) uses them.
 */
#ifndef SP_PERF_EVENTS_H
#define SP_PERF_EVENTS_H

#include <linux/perf_event.h>
#include <stddef.h>

/* `name` as a kernel perf event; 0, or -1 with a message in err that says
 * what is wrong and how to fix it. user_only: count user space only (set
 * where perf_event_paranoid allows nothing else). */
int sp__perf_resolve(const char *name, int user_only, struct perf_event_attr *attr, char *err, size_t errlen);
/* The generic names, for messages. */
const char *sp__perf_generic_list(void);
/* 1 when `name` goes through PAPI (PAPI_* or papi:<native>), with the name
 * PAPI knows it by. */
int sp__perf_is_papi(const char *name, const char **papi_name);
/* "perf_<name>" with characters HDF5 names should not hold replaced; malloc'd. */
char *sp__perf_column_name(const char *name);

/* PAPI (perf_papi.c). Each returns 0, or -1 with a message in err. */
int sp__papi_setup(const char *const *names, int n, int *codes, char *err, size_t errlen);
int sp__papi_thread_open(const int *codes, int n, int *set, char *err, size_t errlen);
int sp__papi_read(int set, long long *values);
void sp__papi_thread_close(int set);

#endif
