/* peers.c - other instrumentation libraries in the same harness as ours, so
 * that "cheaper than every peer that records" is measured in one run, not
 * remembered.
 *
 * Every case times the same loop (a region pair around a compiler barrier),
 * interleaved over repetitions, medians, as ratios to the rdtsc pair and to
 * our timeline pair measured in the same process. A peer is built in when
 * its headers are found (bench/CMakeLists.txt):
 *   NVTX3     nvtxRangePushA/nvtxRangePop and a registered-string range on a
 *             domain. Without a tool attached (NVTX_INJECTION64_PATH unset,
 *             not under Nsight) NVTX records nothing: that row is the cost
 *             of instrumentation left in a program with no tool, the
 *             counterpart of our deactivated row. Under a tool it records.
 *   LIKWID    likwid_markerStartRegion/StopRegion. It records only under
 *             `likwid-perfctr -m -g GROUP` (hardware counters); otherwise
 *             the calls return at once. The table says which it was.
 *
 *   peers [--pairs N] [--reps R]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scope_profiler.h"

#if defined(SP_BENCH_NVTX)
#  include <nvtx3/nvToolsExt.h>
#endif
#if defined(SP_BENCH_LIKWID)
#  define LIKWID_PERFMON
#  include <likwid-marker.h>
#endif

#define BARRIER() __asm__ volatile("" ::: "memory")

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sp_manager *on, *off;
static sp_region reg;
static volatile unsigned long long sink;

static void loop_rdtsc(long n) {
  for (long i = 0; i < n; i++) {
#if defined(__x86_64__)
    unsigned long long a = __builtin_ia32_rdtsc();
    BARRIER();
    sink = __builtin_ia32_rdtsc() - a;
#else
    BARRIER();
#endif
  }
}
static void loop_ours(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin(on, reg);
    BARRIER();
    sp_region_end(on, reg);
  }
}
static void loop_ours_off(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin(off, reg);
    BARRIER();
    sp_region_end(off, reg);
  }
}
#if defined(SP_BENCH_NVTX)
static nvtxDomainHandle_t domain;
static nvtxStringHandle_t nvtx_name;
static void loop_nvtx(long n) {
  for (long i = 0; i < n; i++) {
    nvtxRangePushA("peers.pair");
    BARRIER();
    nvtxRangePop();
  }
}
static void loop_nvtx_domain(long n) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtx_name;
  for (long i = 0; i < n; i++) {
    nvtxDomainRangePushEx(domain, &a);
    BARRIER();
    nvtxDomainRangePop(domain);
  }
}
#endif
#if defined(SP_BENCH_LIKWID)
static void loop_likwid(long n) {
  for (long i = 0; i < n; i++) {
    likwid_markerStartRegion("peers_pair");
    BARRIER();
    likwid_markerStopRegion("peers_pair");
  }
}
#endif

struct kase {
  const char *name;
  void (*fn)(long);
  double t[64];
};

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long pairs = 2000000;
  int reps = 11;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: peers [--pairs N] [--reps R]\n");
      return 2;
    }
  }
  if (pairs < 1000 || reps < 1 || reps > 64) return 2;
  const char *ov_on[] = {"deactivate_file_output=1", "buffer_limit=4000000", "quiet=1", NULL};
  const char *ov_off[] = {"deactivate_profiling=1", "quiet=1", NULL};
  on = sp_manager_create();
  off = sp_manager_create();
  if (!on || !off || sp_manager_setup(on, &(sp_setup_args){.overrides = ov_on}) != SP_OK ||
      sp_manager_setup(off, &(sp_setup_args){.overrides = ov_off}) != SP_OK) {
    fprintf(stderr, "peers: setup failed: %s\n", sp_last_error());
    return 1;
  }
  reg = sp_region_intern("peers.pair");
  struct kase k[8];
  int n = 0;
  k[n++] = (struct kase){"rdtsc pair (baseline)", loop_rdtsc, {0}};
  k[n++] = (struct kase){"scope-profiler: timeline", loop_ours, {0}};
  k[n++] = (struct kase){"scope-profiler: deactivated", loop_ours_off, {0}};
  const char *nvtx_state = NULL, *likwid_state = NULL;
#if defined(SP_BENCH_NVTX)
  domain = nvtxDomainCreateA("peers");
  nvtx_name = nvtxDomainRegisterStringA(domain, "peers.pair");
  nvtx_state = getenv("NVTX_INJECTION64_PATH") ? "a tool is attached (NVTX_INJECTION64_PATH)"
                                               : "no tool attached: NVTX records nothing";
  k[n++] = (struct kase){"NVTX3: nvtxRangePushA/Pop", loop_nvtx, {0}};
  k[n++] = (struct kase){"NVTX3: domain, registered string", loop_nvtx_domain, {0}};
#endif
#if defined(SP_BENCH_LIKWID)
  likwid_markerInit();
  likwid_markerRegisterRegion("peers_pair");
  likwid_state = getenv("LIKWID_MODE") ? "under likwid-perfctr -m: LIKWID records"
                                       : "not under likwid-perfctr -m: the markers return at once";
  k[n++] = (struct kase){"LIKWID: markerStart/StopRegion", loop_likwid, {0}};
#endif
  for (int r = 0; r < reps; r++)
    for (int c = 0; c < n; c++) {
      k[c].fn(pairs / 10); /* warm */
      double t0 = now_s();
      k[c].fn(pairs);
      k[c].t[r] = (now_s() - t0) * 1e9 / (double)pairs;
    }
  double med[8];
  for (int c = 0; c < n; c++) {
    qsort(k[c].t, (size_t)reps, sizeof k[c].t[0], cmp_d);
    med[c] = k[c].t[reps / 2];
  }
  printf("%ld pairs x %d repetitions, medians [min, max]\n", pairs, reps);
  printf("%-36s %9s %19s %9s %12s\n", "case", "ns/pair", "[min, max]", "/ rdtsc", "/ ours (tl)");
  for (int c = 0; c < n; c++)
    printf("%-36s %9.2f [%7.2f, %7.2f] %9.2f %12.2f\n", k[c].name, med[c], k[c].t[0], k[c].t[reps - 1],
           med[c] / med[0], med[c] / med[1]);
  if (nvtx_state) printf("NVTX3: %s\n", nvtx_state);
  else printf("NVTX3: not built (nvtx3/nvToolsExt.h not found)\n");
  if (likwid_state) printf("LIKWID: %s\n", likwid_state);
  else printf("LIKWID: not built (likwid-marker.h or liblikwid not found)\n");
#if defined(SP_BENCH_LIKWID)
  likwid_markerClose();
#endif
  sp_manager_destroy(on);
  sp_manager_destroy(off);
  return 0;
}
