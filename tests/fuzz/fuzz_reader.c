/* fuzz_reader.c - libFuzzer target for the profile reader: mutated bytes of
 * small valid profiles (tests/fuzz/corpus/reader: the golden fixtures,
 * upstream's HDF5 fixtures and files the library wrote) opened as an
 * in-memory image with sp_results_open_image(), then walked the way the CLI
 * walks them (fuzz_walk.h).
 *
 * HDF5 itself (serial 1.10 from Debian) is not instrumented: ASan sees its
 * crashes but not its out-of-bounds reads, and a crash or hang inside
 * libhdf5 is HDF5's bug, not ours (docs/reliability.md lists those found).
 * Files that claim more than WALK_MAX_EVENTS events are opened and
 * summarised but their events are not walked: reading 2^40 fill values is
 * slow, not wrong. Build and run with scripts/fuzz-all.sh.
 */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  walk_setup();
  sp_results *r = NULL;
  sp_status st = sp_results_open_image(data, size, &r);
  walk_opened(st, r); /* after the open has set r */
  return 0;
}
