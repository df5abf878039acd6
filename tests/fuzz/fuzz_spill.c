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
 * crashes. An input that starts as a staging journal does (SPSTGF01) goes
 * through the recovery without a spill instead (sp__journal_recover, its
 * SPRUN001/SPREG001/SPTHR001/SPANC001 records and the segment walk), from a
 * file (the journal is read by offset); journal.stage is a journal a
 * SIGKILLed run left, naming a staged file that is not there (the walk of
 * the records is what is fuzzed; a staged file found would be read too). Build and run with scripts/fuzz-all.sh.
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

static char dir[1024], out[1056], jpath[1088];

static void cleanup(void) {
  char path[128];
  unlink(out);
  snprintf(path, sizeof path, "%s.spill", out);
  unlink(path);
  unlink(jpath);
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
    snprintf(jpath, sizeof jpath, "%s/.out.h5.stage.fuzz00", dir);
    atexit(cleanup);
  }
  unlink(out);
  char written[256] = "";
  sp_status st;
  if (size >= 8 && !memcmp(data, "SPSTGF01", 8)) {
    FILE *f = fopen(jpath, "wb");
    if (!f || fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    struct sp_recover_info info;
    st = sp__journal_recover(jpath, out, &info);
    sp__recover_info_free(&info);
  } else {
    st = sp__spill_recover_mem(data, size, "fuzz.spill", out, written, sizeof written);
  }
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
