/* fuzz_native.c - libFuzzer target for the readers of upstream's non-HDF5
 * inputs: mutated JSON profiles (plain and gzip) and native traces (.spt
 * versions 1 and 2) from tests/fuzz/corpus/native, recognised by content
 * (sp__results_open_bytes, what sp_results_open does after reading a file)
 * and walked the way the CLI walks a profile (fuzz_walk.h). A failed open
 * must leave nothing behind and say why. Build and run with
 * scripts/fuzz-all.sh.
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/read_internal.h"
#include "scope_profiler/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!sink) {
    sink = fopen("/dev/null", "w");
    if (!sink) abort();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  }
  sp_results *r = NULL;
  sp_status st = sp__results_open_bytes(data, size, "fuzz-input", &r);
  if (st == SP_OK) {
    walk(r);
    sp_results_free(r);
  } else if (r != NULL || sp_last_error()[0] == '\0') {
    fprintf(stderr, "a failed open left results behind or gave no message\n");
    abort();
  }
  return 0;
}
