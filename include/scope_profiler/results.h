/* scope_profiler/results.h - reading profiles back: the results type.
 *
 * sp_results is what finalize hands back in memory and what the reader returns
 * for a file: both come from the same file data (finalize builds an
 * in-memory HDF5 image and opens it through the reader), so there is one code
 * path for both. The rest of the reader API (statistics, filters, call trees)
 * is declared in scope_profiler/reader.h.
 */
#ifndef SCOPE_PROFILER_RESULTS_H
#define SCOPE_PROFILER_RESULTS_H

#include <stddef.h>

#include "scope_profiler/export.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sp_results sp_results;

/** Open a profile file (schema 3 or 2, or upstream's older hierarchical layout).
 * A missing, corrupt, truncated or foreign file is an error, never a crash. */
SP_API sp_status sp_results_open(const char *path, sp_results **out);

/** Open a profile from an HDF5 file image in memory (copied). */
SP_API sp_status sp_results_open_image(const void *image, size_t size, sp_results **out);

/** Free results; accepts NULL. */
SP_API void sp_results_free(sp_results *r);

#ifdef __cplusplus
}
#endif
#endif
