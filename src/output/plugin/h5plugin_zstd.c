/* h5plugin_zstd.c - the zstd filter (id 32015) as an HDF5 plugin module
 * (libsp_h5zstd.so), so that HDF5 programs that are not linked with
 * scope-profiler (h5dump, h5py) decode our zstd files when HDF5_PLUGIN_PATH
 * names the folder holding it. The codec is src/output/filters.c's.
 */
#include <H5PLextern.h>

#include "output/filters.h"

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void *H5PLget_plugin_info(void) { return &sp__zstd_filter_class; }
