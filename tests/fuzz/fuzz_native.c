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
  walk_setup();
  sp_results *r = NULL;
  sp_status st = sp__results_open_bytes(data, size, "fuzz-input", &r);
  walk_opened(st, r); /* after the open has set r */
  return 0;
}
