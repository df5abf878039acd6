/* mock_likwid.c - a LIKWID stand-in for the use_likwid tests (this VM cannot
 * count: LIKWID 5.2.2 says "Unsupported Processor"). It has the marker API
 * and the perfmon read-back functions the probe loads, with LIKWID's
 * behaviour where the probe depends on it: markerInit needs the LIKWID_*
 * variables, markerClose writes LIKWID_FILEPATH in LIKWID's format (tags
 * "<tag>-<group>", one line per region and thread), and a broken init ends
 * the process with exit(). Two counters per region and thread: its calls x
 * 1000 (MOCK_CALLS) and the nanoseconds it ran (MOCK_NS); one metric.
 *
 * MOCK_LIKWID_INIT=exit        markerInit calls exit(1), as LIKWID on an
 *                              unsupported machine (after MOCK_LIKWID_DELAY s)
 * MOCK_LIKWID_NO_FILE=1        markerClose writes no file
 * MOCK_LIKWID_NO_PERFMON=1     perfmon_readMarkerFile fails
 * MOCK_LIKWID_CRASH_READ=1     perfmon_readMarkerFile crashes (SIGSEGV)
 * MOCK_LIKWID_LOG=path         every marker call is appended there
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXR 64
#define MAXT 16

struct reg {
  char tag[128];
  int count[MAXT];
  double time[MAXT];
  double start[MAXT];
  int cpu[MAXT];
  int open[MAXT];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int inited, closed_, nthreads_seen;
static pid_t tids[MAXT];
static struct reg regs[MAXR];
static int nregs;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void logf_(const char *what, const char *tag) {
  const char *p = getenv("MOCK_LIKWID_LOG");
  if (!p) return;
  FILE *f = fopen(p, "a");
  if (!f) return;
  fprintf(f, "%s %s %ld\n", what, tag ? tag : "-", (long)syscall(SYS_gettid));
  fclose(f);
}

/* this thread's slot (registered on first use) */
static int thread_slot(void) {
  pid_t me = (pid_t)syscall(SYS_gettid);
  for (int i = 0; i < nthreads_seen; i++)
    if (tids[i] == me) return i;
  if (nthreads_seen == MAXT) return -1;
  tids[nthreads_seen] = me;
  return nthreads_seen++;
}

static struct reg *find(const char *tag, int add) {
  for (int i = 0; i < nregs; i++)
    if (strcmp(regs[i].tag, tag) == 0) return &regs[i];
  if (!add || nregs == MAXR) return NULL;
  snprintf(regs[nregs].tag, sizeof regs[nregs].tag, "%s", tag);
  for (int t = 0; t < MAXT; t++) regs[nregs].cpu[t] = -1;
  return &regs[nregs++];
}

EXPORT void likwid_markerInit(void) {
  if (!getenv("LIKWID_MODE") || !getenv("LIKWID_FILEPATH") || !getenv("LIKWID_EVENTS") || !getenv("LIKWID_THREADS")) {
    fprintf(stderr, "Running without Marker API. Activate Marker API with -m on commandline.\n");
    return;
  }
  const char *mode = getenv("MOCK_LIKWID_INIT");
  if (mode && strcmp(mode, "exit") == 0) {
    const char *d = getenv("MOCK_LIKWID_DELAY");
    if (d) sleep((unsigned)atoi(d));
    fprintf(stderr, "ERROR - Unsupported Processor\n");
    exit(1);
  }
  inited = 1;
  logf_("init", NULL);
}

EXPORT void likwid_markerThreadInit(void) {
  if (!inited) return;
  pthread_mutex_lock(&lock);
  thread_slot();
  pthread_mutex_unlock(&lock);
  logf_("thread_init", NULL);
}

EXPORT int likwid_markerRegisterRegion(const char *tag) {
  (void)tag;
  return inited ? 0 : -EFAULT;
}

EXPORT int likwid_markerStartRegion(const char *tag) {
  if (!inited || closed_) return -EFAULT;
  pthread_mutex_lock(&lock);
  int t = thread_slot();
  struct reg *r = find(tag, 1);
  if (r && t >= 0) {
    r->start[t] = now_s();
    r->open[t] = 1;
    r->cpu[t] = sched_getcpu();
  }
  pthread_mutex_unlock(&lock);
  logf_("start", tag);
  return r && t >= 0 ? 0 : -ENOMEM;
}

EXPORT int likwid_markerStopRegion(const char *tag) {
  if (!inited || closed_) return -EFAULT;
  pthread_mutex_lock(&lock);
  int t = thread_slot();
  struct reg *r = find(tag, 0);
  int ok = r && t >= 0 && r->open[t];
  if (ok) {
    r->open[t] = 0;
    r->count[t]++;
    r->time[t] += now_s() - r->start[t];
  }
  pthread_mutex_unlock(&lock);
  logf_("stop", tag);
  return ok ? 0 : -EFAULT;
}

EXPORT void likwid_markerGetRegion(const char *tag, int *nr_events, double *events, double *time, int *count) {
  if (!inited) return;
  pthread_mutex_lock(&lock);
  int t = thread_slot();
  struct reg *r = find(tag, 0);
  if (r && t >= 0) {
    if (count) *count = r->count[t];
    if (time) *time = r->time[t];
    if (nr_events && events && *nr_events >= 2) {
      events[0] = r->count[t] * 1000.0;
      events[1] = r->time[t] * 1e9;
      *nr_events = 2;
    }
  } else if (count) {
    *count = 0;
  }
  pthread_mutex_unlock(&lock);
}

EXPORT void likwid_markerClose(void) {
  if (!inited || closed_) return;
  closed_ = 1;
  logf_("close", NULL);
  if (getenv("MOCK_LIKWID_NO_FILE")) return;
  FILE *f = fopen(getenv("LIKWID_FILEPATH"), "w");
  if (!f) return;
  fprintf(f, "%d %d %d\n", nthreads_seen, nregs, 1);
  for (int i = 0; i < nregs; i++) fprintf(f, "%d:%s-0\n", i, regs[i].tag);
  for (int i = 0; i < nregs; i++)
    for (int t = 0; t < nthreads_seen; t++)
      fprintf(f, "%d 0 %d %u %e 2 %e %e \n", i, regs[i].cpu[t], (unsigned)regs[i].count[t], regs[i].time[t],
              regs[i].count[t] * 1000.0, regs[i].time[t] * 1e9);
  fclose(f);
}

/*====== The read-back API (perfmon) ======*/

EXPORT int topology_init(void) { return 0; }
EXPORT int perfmon_init(int n, const int *cpus) {
  (void)cpus;
  return n > 0 ? 0 : -EINVAL;
}
static char group[64];
EXPORT int perfmon_addEventSet(const char *s) {
  if (!group[0]) snprintf(group, sizeof group, "%s", s);
  return 0;
}
EXPORT int perfmon_readMarkerFile(const char *path) {
  if (getenv("MOCK_LIKWID_CRASH_READ")) raise(SIGSEGV);
  if (getenv("MOCK_LIKWID_NO_PERFMON")) return -EINVAL;
  return path && access(path, R_OK) == 0 ? 0 : -ENOENT;
}
EXPORT int perfmon_getNumberOfRegions(void) { return nregs; }
EXPORT int perfmon_getGroupOfRegion(int r) {
  (void)r;
  return 0;
}
EXPORT char *perfmon_getTagOfRegion(int r) { return r >= 0 && r < nregs ? regs[r].tag : NULL; }
EXPORT int perfmon_getEventsOfRegion(int r) {
  (void)r;
  return 2;
}
EXPORT int perfmon_getMetricsOfRegion(int r) {
  (void)r;
  return 1;
}
EXPORT int perfmon_getNumberOfMetrics(int g) {
  (void)g;
  return 1;
}
EXPORT int perfmon_getThreadsOfRegion(int r) {
  (void)r;
  return nthreads_seen;
}
EXPORT int perfmon_getCpulistOfRegion(int r, int count, int *cpulist) {
  for (int t = 0; t < count && t < nthreads_seen; t++) cpulist[t] = regs[r].cpu[t];
  return count;
}
EXPORT double perfmon_getTimeOfRegion(int r, int t) { return regs[r].time[t]; }
EXPORT int perfmon_getCountOfRegion(int r, int t) { return regs[r].count[t]; }
EXPORT double perfmon_getResultOfRegionThread(int r, int e, int t) {
  return e == 0 ? regs[r].count[t] * 1000.0 : regs[r].time[t] * 1e9;
}
EXPORT double perfmon_getMetricOfRegionThread(int r, int m, int t) {
  (void)m;
  return regs[r].time[t] > 0 ? regs[r].count[t] / regs[r].time[t] : 0;
}
static char ev0[] = "MOCK_CALLS", ev1[] = "MOCK_NS", c0[] = "PMC0", c1[] = "PMC1", met[] = "Mock rate [1/s]";
EXPORT char *perfmon_getEventName(int g, int e) {
  (void)g;
  return e == 0 ? ev0 : ev1;
}
EXPORT char *perfmon_getCounterName(int g, int e) {
  (void)g;
  return e == 0 ? c0 : c1;
}
EXPORT char *perfmon_getMetricName(int g, int m) {
  (void)g;
  (void)m;
  return met;
}
EXPORT char *perfmon_getGroupName(int g) {
  (void)g;
  return group;
}
