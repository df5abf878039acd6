/* perf_names.c - from a perf_events name to a perf_event_attr.
 *
 * Three spellings, tried in this order:
 *   generic names, as perf(1) spells them: cycles, instructions,
 *     cache-misses, task-clock, page-faults, context-switches, ... and the
 *     cache events L1-dcache-load-misses, LLC-loads, dTLB-load-misses, ...;
 *     an optional ":u" (user space only) or ":k" (kernel only) suffix;
 *   raw encodings r<hex> (PERF_TYPE_RAW);
 *   PMU event names through libpfm4 (built with SP_HAVE_LIBPFM):
 *     INST_RETIRED:ANY_P, amd64_fam19h_zen4::RETIRED_INSTRUCTIONS,
 *     perf::PERF_COUNT_SW_PAGE_FAULTS, with libpfm4's own modifiers.
 * Names for PAPI (PAPI_* and papi:<native>) never come here.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/perf/perf_events.h"

#ifdef SP_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

struct generic {
  const char *name, *alias;
  uint32_t type;
  uint64_t config;
};

static const struct generic generics[] = {
    {"cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
};

/* perf(1)'s cache event names: <cache>-<op>[-<result>]. */
static const char *const cache_names[] = {"L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node"};
static const uint64_t cache_ids[] = {PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_L1I, PERF_COUNT_HW_CACHE_LL,
                                     PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_BPU,
                                     PERF_COUNT_HW_CACHE_NODE};
static const struct {
  const char *suffix;
  uint64_t op, result;
} cache_ops[] = {
    {"loads", PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS},
    {"load-misses", PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS},
    {"stores", PERF_COUNT_HW_CACHE_OP_WRITE, PERF_COUNT_HW_CACHE_RESULT_ACCESS},
    {"store-misses", PERF_COUNT_HW_CACHE_OP_WRITE, PERF_COUNT_HW_CACHE_RESULT_MISS},
    {"prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_ACCESS},
    {"prefetch-misses", PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_MISS},
};

const char *sp__perf_generic_list(void) {
  return "cycles, instructions, cache-references, cache-misses, branches, branch-misses, bus-cycles, "
         "stalled-cycles-frontend, stalled-cycles-backend, ref-cycles, cpu-clock, task-clock, page-faults, "
         "context-switches, cpu-migrations, minor-faults, major-faults, alignment-faults, emulation-faults, "
         "<cache>-<loads|load-misses|stores|store-misses|prefetches|prefetch-misses> with <cache> one of "
         "L1-dcache, L1-icache, LLC, dTLB, iTLB, branch, node; r<hex> raw";
}

static int lookup_generic(const char *name, uint32_t *type, uint64_t *config) {
  for (size_t i = 0; i < sizeof generics / sizeof generics[0]; i++)
    if (strcmp(name, generics[i].name) == 0 || (generics[i].alias && strcmp(name, generics[i].alias) == 0)) {
      *type = generics[i].type;
      *config = generics[i].config;
      return 1;
    }
  for (size_t c = 0; c < sizeof cache_names / sizeof cache_names[0]; c++) {
    size_t n = strlen(cache_names[c]);
    if (strncmp(name, cache_names[c], n) != 0 || name[n] != '-') continue;
    for (size_t o = 0; o < sizeof cache_ops / sizeof cache_ops[0]; o++)
      if (strcmp(name + n + 1, cache_ops[o].suffix) == 0) {
        *type = PERF_TYPE_HW_CACHE;
        *config = cache_ids[c] | (cache_ops[o].op << 8) | (cache_ops[o].result << 16);
        return 1;
      }
  }
  if (name[0] == 'r' && name[1]) { /* r<hex>, as perf(1) */
    char *end;
    unsigned long long v = strtoull(name + 1, &end, 16);
    if (*end == 0 && isxdigit((unsigned char)name[1])) {
      *type = PERF_TYPE_RAW;
      *config = v;
      return 1;
    }
  }
  return 0;
}

#ifdef SP_HAVE_LIBPFM
static pthread_once_t pfm_once = PTHREAD_ONCE_INIT;
static int pfm_status = -1;
static void pfm_init(void) { pfm_status = pfm_initialize(); }
#endif

int sp__perf_resolve(const char *name, int user_only, struct perf_event_attr *attr, char *err, size_t errlen) {
  memset(attr, 0, sizeof *attr);
  attr->size = sizeof *attr;
  char base[256];
  int n = snprintf(base, sizeof base, "%s", name);
  if (n <= 0 || (size_t)n >= sizeof base) {
    snprintf(err, errlen, "event name '%.60s...' is empty or longer than 255 bytes", name);
    return -1;
  }
  /* perf(1)'s privilege suffix on generic names */
  int want_u = -1;
  char *colon = strrchr(base, ':');
  if (colon && colon > base && colon[-1] != ':' && (!strcmp(colon, ":u") || !strcmp(colon, ":k"))) {
    want_u = colon[1] == 'u';
    *colon = 0;
  }
  uint32_t type;
  uint64_t config;
  if (lookup_generic(base, &type, &config)) {
    attr->type = type;
    attr->config = config;
    if (want_u == 1 || (want_u < 0 && user_only)) {
      attr->exclude_kernel = 1;
      attr->exclude_hv = 1;
    } else if (want_u == 0) {
      attr->exclude_user = 1;
    }
    return 0;
  }
#ifdef SP_HAVE_LIBPFM
  pthread_once(&pfm_once, pfm_init);
  if (pfm_status == PFM_SUCCESS) {
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof arg);
    arg.attr = attr;
    arg.size = sizeof arg;
    int plm = user_only ? PFM_PLM3 : PFM_PLM3 | PFM_PLM0;
    int rc = pfm_get_os_event_encoding(name, plm, PFM_OS_PERF_EVENT_EXT, &arg);
    if (rc == PFM_SUCCESS) {
      attr->size = sizeof *attr;
      return 0;
    }
    if (rc != PFM_ERR_NOTFOUND) {
      snprintf(err, errlen, "event '%s': libpfm4 cannot encode it: %s", name, pfm_strerror(rc));
      return -1;
    }
  }
  snprintf(err, errlen,
           "unknown event '%s': neither a generic name (%s) nor an event libpfm4 knows for this machine's PMUs "
           "(see `showevtinfo` from libpfm4's examples, or PAPI names with the PAPI_ prefix or papi:)",
           name, sp__perf_generic_list());
#else
  snprintf(err, errlen,
           "unknown event '%s': not a generic name (%s); PMU event names need a build with libpfm4 "
           "(Debian libpfm4-dev)",
           name, sp__perf_generic_list());
#endif
  return -1;
}

int sp__perf_is_papi(const char *name, const char **papi_name) {
  if (strncmp(name, "PAPI_", 5) == 0) {
    *papi_name = name;
    return 1;
  }
  if (strncmp(name, "papi:", 5) == 0) {
    *papi_name = name + 5;
    return 1;
  }
  return 0;
}

char *sp__perf_column_name(const char *name) {
  size_t n = strlen(name);
  char *c = malloc(n + 6);
  if (!c) return NULL;
  memcpy(c, "perf_", 5);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)name[i];
    c[5 + i] = isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == ':' || ch == '=' ? (char)ch : '_';
  }
  c[5 + n] = 0;
  return c;
}
