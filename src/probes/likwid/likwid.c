/* likwid.c - use_likwid: every region a LIKWID marker region, and LIKWID's
 * counter results in the file (rank<N>/likwid, upstream's layout).
 *
 * LIKWID is loaded at setup with dlopen (no link-time dependency), and only
 * used when this process runs under likwid-perfctr -m / likwid-mpirun
 * -marker (LIKWID_MODE, LIKWID_FILEPATH, LIKWID_EVENTS and LIKWID_THREADS set);
 * otherwise one warning and the regions are timed as usual. LIKWID must never
 * take the program down: a marker init that fails calls exit() (after a
 * 10 s wait on machines LIKWID does not support), so the init is first tried
 * in a forked child, and the parent initialises only after the child did so
 * cleanly. Reading the results through LIKWID's API can crash the same way:
 * that too happens in a child, which hands them back through a pipe.
 *
 * A forwarder: marker start, then the start timestamp; the end timestamp,
 * then marker stop (upstream's order). Each thread runs
 * likwid_markerThreadInit on its first call. The marker API is process-wide
 * and closes once per process, at the first finalize: the results of the
 * whole process so far go into that file, from the first of three sources
 * that works (upstream's order): the full API read-back in a child, the
 * marker file parsed by likwid_file.c, the marker-API snapshot taken just
 * before the close (the finalizing thread's own counts). A later run of the
 * process records timings only, and says so.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "config/config_internal.h"
#include "probes/ext.h"
#include "probes/likwid/likwid_results.h"
#include "scope_profiler.h"

extern char **environ;

#define INIT_TIMEOUT_MS 30000
#define READ_TIMEOUT_MS 120000
#define MAX_SNAPSHOT_EVENTS 256

/* LIKWID's functions, as likwid.h (5.x) declares them. */
struct likwid_api {
  void *lib;
  void (*marker_init)(void);
  void (*marker_thread_init)(void);
  void (*marker_close)(void);
  int (*marker_start)(const char *);
  int (*marker_stop)(const char *);
  int (*marker_register)(const char *);
  void (*marker_get)(const char *, int *, double *, double *, int *);
  /* the full API, for reading the marker file back (optional) */
  int (*topology_init)(void);
  int (*perfmon_init)(int, const int *);
  int (*perfmon_add_event_set)(const char *);
  int (*perfmon_read_marker_file)(const char *);
  int (*perfmon_regions)(void);
  int (*perfmon_group_of)(int);
  char *(*perfmon_tag_of)(int);
  int (*perfmon_events_of)(int);
  int (*perfmon_metrics_of_group)(int);
  int (*perfmon_threads_of)(int);
  int (*perfmon_cpulist_of)(int, int, int *);
  double (*perfmon_time_of)(int, int);
  int (*perfmon_count_of)(int, int);
  double (*perfmon_result_of)(int, int, int);
  double (*perfmon_metric_of)(int, int, int);
  char *(*perfmon_event_name)(int, int);
  char *(*perfmon_counter_name)(int, int);
  char *(*perfmon_metric_name)(int, int);
  char *(*perfmon_group_name)(int);
};

/* The marker API is the process's, whatever the managers: who holds it, and
 * whether it was closed (then it is never touched again). */
static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct likwid_api api;
static int initialised, closed;
static struct likwid_proc *owner;

struct likwid_proc {
  struct sp_manager *m;
  uint32_t *ids; /* regions forwarded, for the marker-API snapshot */
  size_t nids, cap;
  pthread_mutex_t lock;
  struct sp_likwid_results results; /* collected at the close, emitted once */
  int collected;
  char why[512]; /* why a source was not used, for the metadata */
};

static int likwid_wanted(const struct sp_config *cfg) { return cfg->use_likwid; }

#define LOAD(field, name, required)                                                     \
  do {                                                                                  \
    void *p_ = dlsym(a->lib, name);                                                     \
    if (!p_ && (required)) return name;                                                 \
    memcpy(&a->field, &p_, sizeof p_);                                                  \
  } while (0)

/* NULL, or the name of a required function the library lacks. */
static const char *load_symbols(struct likwid_api *a) {
  LOAD(marker_init, "likwid_markerInit", 1);
  LOAD(marker_thread_init, "likwid_markerThreadInit", 1);
  LOAD(marker_close, "likwid_markerClose", 1);
  LOAD(marker_start, "likwid_markerStartRegion", 1);
  LOAD(marker_stop, "likwid_markerStopRegion", 1);
  LOAD(marker_register, "likwid_markerRegisterRegion", 0);
  LOAD(marker_get, "likwid_markerGetRegion", 0);
  LOAD(topology_init, "topology_init", 0);
  LOAD(perfmon_init, "perfmon_init", 0);
  LOAD(perfmon_add_event_set, "perfmon_addEventSet", 0);
  LOAD(perfmon_read_marker_file, "perfmon_readMarkerFile", 0);
  LOAD(perfmon_regions, "perfmon_getNumberOfRegions", 0);
  LOAD(perfmon_group_of, "perfmon_getGroupOfRegion", 0);
  LOAD(perfmon_tag_of, "perfmon_getTagOfRegion", 0);
  LOAD(perfmon_events_of, "perfmon_getEventsOfRegion", 0);
  LOAD(perfmon_metrics_of_group, "perfmon_getNumberOfMetrics", 0);
  LOAD(perfmon_threads_of, "perfmon_getThreadsOfRegion", 0);
  LOAD(perfmon_cpulist_of, "perfmon_getCpulistOfRegion", 0);
  LOAD(perfmon_time_of, "perfmon_getTimeOfRegion", 0);
  LOAD(perfmon_count_of, "perfmon_getCountOfRegion", 0);
  LOAD(perfmon_result_of, "perfmon_getResultOfRegionThread", 0);
  LOAD(perfmon_metric_of, "perfmon_getMetricOfRegionThread", 0);
  LOAD(perfmon_event_name, "perfmon_getEventName", 0);
  LOAD(perfmon_counter_name, "perfmon_getCounterName", 0);
  LOAD(perfmon_metric_name, "perfmon_getMetricName", 0);
  LOAD(perfmon_group_name, "perfmon_getGroupName", 0);
  return NULL;
}

/*====== Children ======*/

/* Run fn in a forked child with its stdout and stderr on /dev/null (LIKWID
 * prints), its result written to a pipe; wait up to timeout_ms. Returns the
 * child's exit status (or -1: killed, signalled, timed out) and what it
 * wrote (malloc'd, NULL when nothing). */
static int in_child(int (*fn)(int fd, void *arg), void *arg, int timeout_ms, unsigned char **out, size_t *outlen,
                    char *why, size_t whylen) {
  *out = NULL;
  *outlen = 0;
  int p[2];
  if (pipe(p) != 0) {
    snprintf(why, whylen, "pipe: %s", strerror(errno));
    return -1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, whylen, "fork: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[0]);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    /* Straight to the kernel: no atexit handler, stdio flush or leak check
     * may run on the parent's memory in this copy of it. */
    syscall(SYS_exit_group, fn(p[1], arg));
  }
  close(p[1]);
  size_t cap = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int timed_out = 0;
  for (;;) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long left = timeout_ms - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd pf = {p[0], POLLIN, 0};
    int rc = poll(&pf, 1, (int)left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) {
      timed_out = rc == 0;
      break;
    }
    if (*outlen == cap) {
      cap = cap ? cap * 2 : 65536;
      if (cap > ((size_t)1 << 30)) break; /* a child does not write a GiB of results */
      unsigned char *n = realloc(*out, cap);
      if (!n) break;
      *out = n;
    }
    ssize_t got = read(p[0], *out + *outlen, cap - *outlen);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    *outlen += (size_t)got;
  }
  close(p[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    snprintf(why, whylen, "it did not finish within %d s", timeout_ms / 1000);
    return -1;
  }
  if (WIFSIGNALED(status)) {
    snprintf(why, whylen, "it crashed (%s)", strsignal(WTERMSIG(status)));
    return -1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    snprintf(why, whylen, "it exited with status %d", WEXITSTATUS(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* In the child: does the marker API come up? LIKWID itself exits when not. */
static int try_init(int fd, void *arg) {
  (void)fd;
  (void)arg;
  api.marker_init();
  /* A start that works is the only sign the init took. */
  return api.marker_start("scope_profiler.likwid_probe") == 0 ? 0 : 3;
}

/*====== Setup ======*/

static int env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

static sp_status likwid_setup(struct sp_ext_setup *s, void **procp) {
  static const char *const needed[] = {"LIKWID_MODE", "LIKWID_FILEPATH", "LIKWID_EVENTS", "LIKWID_THREADS"};
  pthread_mutex_lock(&proc_lock);
  const char *refuse = NULL;
  char why[600] = "";
  if (closed)
    refuse = "use_likwid: LIKWID's marker API was closed by an earlier finalize of this process (its counters are "
             "in that file); this run records timings only";
  else if (owner)
    refuse = "use_likwid: another manager of this process already forwards to LIKWID (its marker API is "
             "process-wide); this manager records timings only";
  for (size_t i = 0; !refuse && i < sizeof needed / sizeof needed[0]; i++)
    if (!env_set(needed[i])) {
      snprintf(why, sizeof why,
               "use_likwid: this process does not run under likwid-perfctr -m or likwid-mpirun -marker (%s is not "
               "set); regions are timed as usual, without LIKWID markers",
               needed[i]);
      refuse = why;
    }
  if (!refuse && !api.lib) {
    const char *path = s->cfg->likwid_library && *s->cfg->likwid_library ? s->cfg->likwid_library : "liblikwid.so.5";
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lib && !(s->cfg->likwid_library && *s->cfg->likwid_library)) lib = dlopen("liblikwid.so", RTLD_NOW | RTLD_GLOBAL);
    const char *missing = NULL;
    if (lib) {
      api.lib = lib;
      missing = load_symbols(&api);
    }
    if (!lib || missing) {
      snprintf(why, sizeof why,
               "use_likwid: cannot use LIKWID's library %s (%s); install LIKWID (Debian: likwid) or point "
               "likwid_library at its liblikwid.so; regions are timed without LIKWID markers",
               path, lib ? "it lacks " : dlerror());
      if (missing) strncat(why, missing, sizeof why - strlen(why) - 1);
      if (lib) dlclose(lib);
      memset(&api, 0, sizeof api);
      refuse = why;
    }
  }
  if (!refuse && !initialised) {
    unsigned char *out;
    size_t n;
    char cwhy[256] = "";
    int rc = in_child(try_init, NULL, INIT_TIMEOUT_MS, &out, &n, cwhy, sizeof cwhy);
    free(out);
    if (rc != 0) {
      snprintf(why, sizeof why,
               "use_likwid: LIKWID's marker API does not initialise on this machine (tried in a child process: "
               "%s; does `likwid-perfctr -e` list counters here?); regions are timed without LIKWID markers",
               cwhy[0] ? cwhy : "it failed");
      refuse = why;
    } else {
      api.marker_init();
      initialised = 1;
    }
  }
  if (refuse) {
    pthread_mutex_unlock(&proc_lock);
    sp_ext_warn(s->manager, "%s", refuse);
    s->decline = 1;
    return SP_OK;
  }
  struct likwid_proc *p = calloc(1, sizeof *p);
  if (!p) {
    pthread_mutex_unlock(&proc_lock);
    return sp__set_error(SP_ERR_NO_MEMORY, "use_likwid: out of memory");
  }
  pthread_mutex_init(&p->lock, NULL);
  p->m = s->manager;
  owner = p;
  pthread_mutex_unlock(&proc_lock);
  *procp = p;
  return SP_OK;
}

static void likwid_teardown(void *proc) {
  struct likwid_proc *p = proc;
  pthread_mutex_lock(&proc_lock);
  if (owner == p) owner = NULL;
  pthread_mutex_unlock(&proc_lock);
  sp__likwid_results_free(&p->results);
  free(p->ids);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* The child must not touch the parent's marker API: it stands down. */
static void likwid_after_fork(void *proc) {
  struct likwid_proc *p = proc;
  closed = 1;
  owner = NULL;
  pthread_mutex_init(&proc_lock, NULL);
  sp__likwid_results_free(&p->results);
  free(p->ids);
  free(p);
}

static int likwid_attach(void *proc, const struct sp_ext_thread *th, void **thr) {
  (void)proc;
  (void)th;
  *thr = NULL;
  if (!__atomic_load_n(&closed, __ATOMIC_ACQUIRE)) api.marker_thread_init();
  return 0;
}

static int likwid_region(void *proc, uint32_t id, const struct sp_ext_region *r) {
  struct likwid_proc *p = proc;
  if (r->internal) return 0; /* the profiler's calibration is not the program's */
  pthread_mutex_lock(&p->lock);
  if (p->nids == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 64;
    uint32_t *n = realloc(p->ids, cap * sizeof *n);
    if (n) {
      p->ids = n;
      p->cap = cap;
    }
  }
  if (p->nids < p->cap) p->ids[p->nids++] = id;
  pthread_mutex_unlock(&p->lock);
  return 1;
}

static void likwid_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  const char *name = sp_region_name(c->region);
  if (name && !__atomic_load_n(&closed, __ATOMIC_ACQUIRE)) api.marker_start(name);
}

static void likwid_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)proc;
  (void)thr;
  const char *name = sp_region_name(c->region);
  if (name && !__atomic_load_n(&closed, __ATOMIC_ACQUIRE)) api.marker_stop(name);
}

/*====== Collecting the results ======*/

/* "0,1,2-5" (LIKWID_THREADS: hardware threads) into cpus; the count, or -1. */
static int parse_cpus(const char *s, int *cpus, int max) {
  int n = 0;
  while (s && *s) {
    char *e;
    long a = strtol(s, &e, 10), b = a;
    if (e == s || a < 0) return -1;
    if (*e == '-') {
      s = e + 1;
      b = strtol(s, &e, 10);
      if (e == s || b < a) return -1;
    }
    for (long c = a; c <= b; c++) {
      if (n == max) return -1;
      cpus[n++] = (int)c;
    }
    s = *e == ',' ? e + 1 : e;
    if (*e && *e != ',') return -1;
  }
  return n;
}

static char *dup_or_empty(const char *s) { return sp__strdup(s ? s : ""); }

/* In the child: LIKWID's full API reads the marker file; the results go to
 * the pipe as sp__likwid_encode's stream. */
static int read_full_api(int fd, void *arg) {
  (void)arg;
  const struct likwid_api *a = &api;
  if (!a->topology_init || !a->perfmon_init || !a->perfmon_add_event_set || !a->perfmon_read_marker_file ||
      !a->perfmon_regions || !a->perfmon_tag_of || !a->perfmon_group_of || !a->perfmon_events_of ||
      !a->perfmon_threads_of || !a->perfmon_time_of || !a->perfmon_count_of || !a->perfmon_result_of)
    return 4; /* a LIKWID without the perfmon API */
  static int cpus[SP_LIKWID_MAX_THREADS];
  int nc = parse_cpus(getenv("LIKWID_THREADS"), cpus, SP_LIKWID_MAX_THREADS);
  if (nc <= 0 || a->topology_init() < 0 || a->perfmon_init(nc, cpus) < 0) return 5;
  char *events = sp__strdup(getenv("LIKWID_EVENTS"));
  for (char *tok = events ? strtok(events, "|") : NULL; tok; tok = strtok(NULL, "|")) a->perfmon_add_event_set(tok);
  free(events);
  if (a->perfmon_read_marker_file(getenv("LIKWID_FILEPATH")) < 0) return 6;
  int nr = a->perfmon_regions();
  if (nr < 0) return 7;
  struct sp_likwid_results res = {calloc((size_t)nr + 1, sizeof(struct sp_likwid_region)), 0};
  if (!res.r) return 8;
  for (int i = 0; i < nr; i++) {
    int g = a->perfmon_group_of(i), ne = a->perfmon_events_of(i), nt = a->perfmon_threads_of(i);
    int nm = a->perfmon_metrics_of_group && a->perfmon_metric_of && a->perfmon_metric_name ? a->perfmon_metrics_of_group(g) : 0;
    if (ne < 0 || nt < 0 || nm < 0 || ne > SP_LIKWID_MAX_EVENTS || nt > SP_LIKWID_MAX_THREADS || nm > SP_LIKWID_MAX_METRICS)
      return 9;
    struct sp_likwid_region *r = &res.r[res.n++];
    if (sp__likwid_region_alloc(r, (uint32_t)nt, (uint32_t)ne, (uint32_t)nm) != 0) return 8;
    free(r->tag);
    free(r->group_name);
    r->tag = dup_or_empty(a->perfmon_tag_of(i));
    r->group_id = g;
    r->group_name = dup_or_empty(a->perfmon_group_name ? a->perfmon_group_name(g) : NULL);
    r->counter_names = calloc((size_t)ne + 1, sizeof *r->counter_names);
    int *cl = calloc((size_t)nt + 1, sizeof *cl);
    if (!r->tag || !r->group_name || !r->counter_names || !cl) return 8;
    if (a->perfmon_cpulist_of && a->perfmon_cpulist_of(i, nt, cl) >= 0)
      for (int t = 0; t < nt; t++) r->cpus[t] = cl[t];
    free(cl);
    for (int t = 0; t < nt; t++) {
      r->times[t] = a->perfmon_time_of(i, t);
      r->counts[t] = a->perfmon_count_of(i, t);
    }
    for (int e = 0; e < ne; e++) {
      r->event_names[e] = dup_or_empty(a->perfmon_event_name ? a->perfmon_event_name(g, e) : NULL);
      r->counter_names[e] = dup_or_empty(a->perfmon_counter_name ? a->perfmon_counter_name(g, e) : NULL);
      for (int t = 0; t < nt; t++) r->events[(size_t)e * (size_t)nt + (size_t)t] = a->perfmon_result_of(i, e, t);
    }
    for (int k = 0; k < nm; k++) {
      r->metric_names[k] = dup_or_empty(a->perfmon_metric_name(g, k));
      for (int t = 0; t < nt; t++) r->metrics[(size_t)k * (size_t)nt + (size_t)t] = a->perfmon_metric_of(i, k, t);
    }
  }
  size_t len;
  unsigned char *buf = sp__likwid_encode(&res, &len);
  if (!buf) return 8;
  for (size_t done = 0; done < len;) {
    ssize_t w = write(fd, buf + done, len - done);
    if (w <= 0) return 10;
    done += (size_t)w;
  }
  return 0;
}

static int read_file(const char *path, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ((off_t)1 << 30)) {
    fclose(f);
    return -1;
  }
  *text = malloc((size_t)st.st_size + 1);
  *len = *text ? fread(*text, 1, (size_t)st.st_size, f) : 0;
  fclose(f);
  return *text ? 0 : -1;
}

/* The marker-API snapshot: what the finalizing thread's own regions hold,
 * read before the close. */
static void snapshot(struct likwid_proc *p, struct sp_likwid_results *out) {
  memset(out, 0, sizeof *out);
  if (!api.marker_get || !p->nids || !(out->r = calloc(p->nids, sizeof *out->r))) return;
  for (size_t i = 0; i < p->nids; i++) {
    const char *name = sp_region_name(p->ids[i]);
    int ne = MAX_SNAPSHOT_EVENTS, count = 0;
    double ev[MAX_SNAPSHOT_EVENTS], time = 0;
    if (!name) continue;
    api.marker_get(name, &ne, ev, &time, &count);
    if (count <= 0 || ne < 0 || ne > MAX_SNAPSHOT_EVENTS) continue; /* not on this thread */
    struct sp_likwid_region *r = &out->r[out->n];
    if (sp__likwid_region_alloc(r, 1, (uint32_t)ne, 0) != 0) {
      sp__likwid_results_free(out);
      return;
    }
    out->n++;
    free(r->tag);
    r->tag = sp__strdup(name);
    r->source = "marker_api";
    r->times[0] = time;
    r->counts[0] = count;
    for (int e = 0; e < ne; e++) {
      char nm[32];
      snprintf(nm, sizeof nm, "event_%d", e);
      r->event_names[e] = sp__strdup(nm);
      r->events[e] = ev[e];
    }
  }
}

/* At the first finalize: snapshot, close, then the richest source. */
static void likwid_before_snapshot(void *proc) {
  struct likwid_proc *p = proc;
  pthread_mutex_lock(&proc_lock);
  int mine = owner == p && !closed;
  if (mine) closed = 1; /* from here on no region reaches LIKWID */
  pthread_mutex_unlock(&proc_lock);
  if (!mine || p->collected) return;
  p->collected = 1;
  struct sp_likwid_results snap;
  snapshot(p, &snap);
  api.marker_close();
  unsigned char *buf;
  size_t len;
  char why[256] = "", err[512];
  int rc = in_child(read_full_api, NULL, READ_TIMEOUT_MS, &buf, &len, why, sizeof why);
  if (rc == 0 && sp__likwid_decode(buf, len, &p->results, err, sizeof err) == 0) {
    free(buf);
    sp__likwid_results_free(&snap);
    return;
  }
  free(buf);
  snprintf(p->why, sizeof p->why, "full_api: %.200s", rc == 4 ? "LIKWID lacks the perfmon API" : rc == 0 ? err : why[0] ? why : "failed");
  char *text = NULL;
  size_t tl = 0;
  const char *path = getenv("LIKWID_FILEPATH");
  int have_file = path && read_file(path, &text, &tl) == 0;
  err[0] = 0;
  if (have_file &&
      sp__likwid_parse_marker_file(text, tl, getenv("LIKWID_EVENTS"), &p->results, err, sizeof err) == 0 &&
      p->results.n) {
    free(text);
    sp__likwid_results_free(&snap);
    return;
  }
  free(text);
  size_t used = strlen(p->why);
  snprintf(p->why + used, sizeof p->why - used, "; marker_file: %.200s", have_file ? (err[0] ? err : "no region in it")  : "cannot read LIKWID_FILEPATH");
  sp__likwid_results_free(&p->results);
  p->results = snap;
}

/* rank<N>/likwid: LIKWID's environment and one group per region. */
static sp_status likwid_emit(void *proc, struct sp_ext_emit *out) {
  struct likwid_proc *p = proc;
  if (!p->collected) return SP_OK;
  int oom = 0;
  if (p->results.n || p->why[0]) {
    struct sp_ext_group *g = sp_ext_group(out, "likwid");
    oom |= !g;
    for (char **e = environ; g && e && *e; e++) {
      if (strncmp(*e, "LIKWID_", 7) != 0) continue;
      const char *eq = strchr(*e, '=');
      if (!eq || eq - *e > 200) continue;
      char key[256];
      snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
      oom |= sp_ext_group_attr_str(g, key, eq + 1) != 0;
    }
    if (g) oom |= sp_ext_group_attr_i64(g, "num_regions", (int64_t)p->results.n) != 0;
    if (g && p->why[0]) oom |= sp_ext_group_attr_str(g, "sources_not_used", p->why) != 0;
  }
  for (size_t i = 0; i < p->results.n && !oom; i++) {
    const struct sp_likwid_region *r = &p->results.r[i];
    char *name = sp_ext_group_name(r->tag);
    char path[1400];
    /* two event groups measure the same region: keep both */
    int dup = 0;
    for (size_t j = 0; j < i; j++) dup |= strcmp(p->results.r[j].tag, r->tag) == 0;
    if (dup)
      snprintf(path, sizeof path, "likwid/regions/%.1200s-%lld", name ? name : "?", (long long)r->group_id);
    else
      snprintf(path, sizeof path, "likwid/regions/%.1200s", name ? name : "?");
    free(name);
    struct sp_ext_group *g = sp_ext_group(out, path);
    if (!g) {
      oom = 1;
      break;
    }
    uint64_t t = r->nthreads, de[2] = {r->nevents, t}, dm[2] = {r->nmetrics, t};
    const char *const empty[1] = {""};
    oom |= sp_ext_group_attr_str(g, "tag", r->tag) || sp_ext_group_attr_i64(g, "group_id", r->group_id) ||
           sp_ext_group_attr_str(g, "group_name", r->group_name ? r->group_name : "") ||
           sp_ext_group_attr_str(g, "source", r->source) ||
           sp_ext_group_attr_strlist(g, "event_names", (const char *const *)r->event_names, r->nevents) ||
           sp_ext_group_attr_strlist(g, "counter_names", r->counter_names ? (const char *const *)r->counter_names : empty,
                                     r->counter_names ? r->nevents : 0) ||
           sp_ext_group_attr_strlist(g, "metric_names", (const char *const *)r->metric_names, r->nmetrics) ||
           sp_ext_group_dset(g, "cpus", SP_EXT_I64, 1, &t, r->cpus) ||
           sp_ext_group_dset(g, "times", SP_EXT_F64, 1, &t, r->times) ||
           sp_ext_group_dset(g, "call_counts", SP_EXT_I64, 1, &t, r->counts) ||
           sp_ext_group_dset(g, "events", SP_EXT_F64, 2, de, r->events) ||
           sp_ext_group_dset(g, "metrics", SP_EXT_F64, 2, dm, r->metrics);
  }
  /* The results are the process's: they go into this one file. */
  sp__likwid_results_free(&p->results);
  p->why[0] = 0;
  if (oom) return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the LIKWID results");
  return SP_OK;
}

const struct sp_ext sp__ext_likwid = {
    .abi = SP_EXT_ABI,
    .name = "likwid",
    .kind = SP_EXT_FORWARD,
    .wanted = likwid_wanted,
    .setup = likwid_setup,
    .teardown = likwid_teardown,
    .after_fork = likwid_after_fork,
    .thread_attach = likwid_attach,
    .region_added = likwid_region,
    .enter = likwid_enter,
    .exit = likwid_exit,
    .before_snapshot = likwid_before_snapshot,
    .emit = likwid_emit,
};
