/* fuzz_spill.c - libFuzzer target for crash spill files: any bytes through
 * the recovery parser (src/core/spill.c, sp__spill_recover_mem), which
 * rebuilds a manager's settings, regions and per-thread buffers from the
 * spill and writes them as an HDF5 profile the way finalize does.
 *
 * Besides "no crash, no leak, no undefined behaviour" one property is
 * checked: when recovery reports success and a file was written, our own
 * reader opens it (a recovered profile is a normal schema-2 file), and its
 * regions, statistics and call trees can be walked.
 *
 * Each run writes into one private temporary directory (removed at exit);
 * the output path given to recovery overrides any file_path in the spill.
 * Seeds (tests/fuzz/corpus/spill) are spills the test app wrote on real
 * crashes. Build and run with scripts/fuzz-all.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "core/spill.h"
#include "scope_profiler/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[1024], out[1056];

static void cleanup(void) {
  char path[128];
  unlink(out);
  snprintf(path, sizeof path, "%s.spill", out);
  unlink(path);
  rmdir(dir);
}

static void walk(sp_results *r) {
  for (size_t i = 0; i < sp_results_num_regions(r); i++) {
    sp_region_stats s;
    (void)sp_results_region_stats(r, i, NULL, SP_STATS_PERCENTILES | SP_STATS_OWN, &s);
  }
  sp_tree_node *nodes = NULL;
  size_t n = 0;
  if (sp_results_call_tree(r, NULL, &nodes, &n) == SP_OK) free(nodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sp-fuzz-spill-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(out, sizeof out, "%s/out.h5", dir);
    atexit(cleanup);
  }
  unlink(out);
  char written[256] = "";
  sp_status st = sp__spill_recover_mem(data, size, "fuzz.spill", out, written, sizeof written);
  if (st != SP_OK && sp_last_error()[0] == '\0') {
    fprintf(stderr, "recovery failed (%d) without a message\n", (int)st);
    abort();
  }
  if (st == SP_OK && access(out, F_OK) == 0) {
    sp_results *r = NULL;
    if (sp_results_open(out, &r) != SP_OK) {
      fprintf(stderr, "recovery wrote a file our reader refuses: %s\n", sp_last_error());
      abort();
    }
    walk(r);
    sp_results_free(r);
  }
  return 0;
}
