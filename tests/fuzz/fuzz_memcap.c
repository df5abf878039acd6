/* fuzz_memcap.c - libFuzzer target for allocation capture files: any bytes
 * through the capture reader (src/read/read_memcap.c: open and validate,
 * the time-ordered merge of the threads' blocks) and its analysis
 * (src/read/read_memstats.c: replay, peak, regions, sites, leaks, memory
 * over time), then every site symbolised the way `scope-profiler memory`
 * does (the mappings a capture names are looked up through libdw).
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks what the
 * analysis promises: the live bytes at the end and at the peak never exceed
 * what was allocated, and the groups of sites add up to the totals they
 * group. Seeds (tests/fuzz/corpus/memcap) are captures of real runs. Build
 * and run with scripts/fuzz-all.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read/memcap_read.h"
#include "common/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[1024];

static void cleanup(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!path[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fuzz-memcap-%d.bin", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    atexit(cleanup);
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  sp_memcap *c;
  if (sp__memcap_open(path, &c) != SP_OK) return 0;
  sp_memcap_stats s;
  if (sp__memcap_analyze(c, 8, &s) == SP_OK) {
    if (s.end_bytes > s.alloc_bytes || s.peak_bytes > s.alloc_bytes || s.end_bytes > s.peak_bytes)
      abort();
    uint64_t leaked = 0, at_peak = 0;
    for (size_t i = 0; i < s.nleaks; i++) leaked += s.leaks[i].bytes;
    for (size_t i = 0; i < s.npeak_sites; i++) at_peak += s.peak_sites[i].bytes;
    if (leaked != s.end_bytes || at_peak != s.peak_bytes) abort();
    sp_symbolizer *sym = sp__memcap_symbolizer(c);
    for (size_t i = 0; sym && i < s.npeak_sites && i < 16; i++) {
      struct sp_sym in;
      uint64_t pc = sp__memcap_site_pc(c, s.peak_sites[i].key);
      if (pc) sp__sym_lookup(sym, pc - 1, &in);
    }
    sp__sym_free(sym);
    sp__memcap_stats_free(&s);
  }
  sp__memcap_close(c);
  return 0;
}
