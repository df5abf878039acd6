/* filters.h - compression of the event datasets: the lzf (32000) and zstd
 * (32015) HDF5 filters, their registration, and the dataset-creation
 * properties (chunking, byte-shuffle, filter, level) that hdf5_compression,
 * hdf5_compression_level and hdf5_chunk_size ask for.
 *
 * The two filter classes are shared with the HDF5 plugin modules in
 * src/output/plugin/, so files we write decode the same way in our process,
 * in h5dump and in h5py (lzf: h5py's built-in filter; zstd: the common HDF5
 * zstd plugin or ours through HDF5_PLUGIN_PATH).
 */
#ifndef SP_OUTPUT_FILTERS_H
#define SP_OUTPUT_FILTERS_H

#include <hdf5.h>
#include <stddef.h>

#include "config/config_internal.h"
#include "scope_profiler/status.h"

/* Filter ids registered with The HDF Group. */
#define SP_FILTER_LZF 32000
#define SP_FILTER_ZSTD 32015

/* Events per chunk when compressing without hdf5_chunk_size: 512 KiB of an
 * int64 column, which fits HDF5's default 1 MiB chunk cache. */
#define SP_DEFAULT_CHUNK_EVENTS 65536

/* "auto" is upstream's policy: runs of at least this many events (1 << 14)
 * get shuffle + deflate level 4; smaller files are written exactly as
 * "none" would write them (contiguous, which is what upstream's repack
 * makes of a small file). Our chunks (SP_DEFAULT_CHUNK_EVENTS) are larger
 * than h5py's guess upstream's chunks come from, which gives smaller files
 * for less CPU (BENCHMARKS.md). */
#define SP_AUTO_MIN_EVENTS 16384

/* Default levels when hdf5_compression_level is unset. */
#define SP_GZIP_DEFAULT_LEVEL 4
#define SP_ZSTD_DEFAULT_LEVEL 3
#define SP_AUTO_DEFAULT_LEVEL 4

/* The filter classes (H5Z_class2_t), also exported by the plugin modules. */
extern const H5Z_class2_t sp__lzf_filter_class;
extern const H5Z_class2_t sp__zstd_filter_class;

/* Registers lzf and zstd with HDF5 once per process; registers again if the
 * HDF5 library was closed and reopened since. 0 when both are available. */
int sp__filters_register(void);

/* Checks that the filter hdf5_compression asks for can be applied (registering
 * ours first); SP_OK or an error whose message says what to change. */
sp_status sp__filters_check(const struct sp_config *cfg);

/* Dataset creation properties for an event column of `nvalues` elements of
 * `elem_size` bytes: contiguous, or chunked (hdf5_chunk_size, or compression),
 * byte-shuffled and filtered as configured, in a file of `schema` for a run of
 * `run_events` events (what "auto" judges, so that a run's small side
 * datasets are compressed like its columns). Negative on failure; the caller
 * closes it with H5Pclose. */
hid_t sp__event_dcpl(const struct sp_config *cfg, size_t nvalues, size_t elem_size, size_t run_events,
                     int schema);

#endif
