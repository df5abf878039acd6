/* metadata.h - run metadata and source-path privacy (metadata.c). */
#ifndef SP_METADATA_H
#define SP_METADATA_H

#include "config/config_internal.h"
#include "output/output.h"

int sp__metadata_collect(const struct sp_config *cfg, int64_t start_time_ns, int mpi_size, struct sp_meta *m);
/* A region's source file as stored: relative to the cwd (name only when
 * outside it) at minimal detail, absolute at full. malloc'd. */
char *sp__source_path_for(const char *file, int full);
int sp__env_name_is_secret(const char *name);
int sp__omp_max_threads(void);

#endif
