/* h5plugin_lzf.c - the lzf filter (id 32000) as an HDF5 plugin module
 * (libsp_h5lzf.so). h5py has lzf built in; this module is for the other HDF5
 * programs (h5dump, h5ls -d, C and Fortran readers) through HDF5_PLUGIN_PATH.
 * The codec is src/output/filters.c's, bit-compatible with h5py's.
 */
#include <H5PLextern.h>

#include "output/filters.h"

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void *H5PLget_plugin_info(void) { return &sp__lzf_filter_class; }
