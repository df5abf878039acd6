/* hdf5_settings.h - the HDF5 storage settings ([profiling.hdf5]): the
 * compression filter and level, chunking and the file schema, with the rules
 * that tie the level to the filter. One block of the settings table
 * (src/config/settings_table.h explains the columns).
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_OUTPUT_HDF5_SETTINGS_H
#define SP_OUTPUT_HDF5_SETTINGS_H

#define SP_GROUP_HDF5(G) \
  G(hdf5, 1, "HDF5 storage", "Also spelled in the `[profiling.hdf5]` table, or as `hdf5.<field>`.")

/* "none" is the same as leaving the filter unset. */
#define SP__CHOICES_hdf5_compression(C) \
  C(SP__COMPRESSION_NONE, "none") \
  C(SP__COMPRESSION_AUTO, "auto") \
  C(SP__COMPRESSION_GZIP, "gzip") \
  C(SP__COMPRESSION_LZF, "lzf") \
  C(SP__COMPRESSION_ZSTD, "zstd")

#define SP_SETTINGS_HDF5(X) \
  X(25, hdf5_compression, hdf5, compression, ENUM, SP__COMPRESSION_NONE, 0, 0, \
    "Compression filter for event datasets: none (the default), gzip, lzf, zstd, or auto (only runs big enough to repay it).", READY) \
  X(26, hdf5_compression_level, hdf5, compression_level, INT, SP_INT_NONE, 0, 22, \
    "Compression level, only with hdf5_compression: gzip 0-9, zstd 1-22, auto 1-9; lzf takes none.", READY) \
  X(27, hdf5_chunk_size, hdf5, chunk_size, INT, SP_INT_NONE, 1, INT64_C(1) << 32, \
    "Maximum events per dataset chunk; enables chunked partial reads even uncompressed.", READY) \
  X(33, hdf5_schema, hdf5, schema, INT, 3, 2, 3, \
    "File schema, as upstream scope-profiler writes it: 3 stores each call's start as an int64 delta within its row and its duration; 2 stores int64 start and end times, for readers of schema 2.", READY)

#define SP_RULES_HDF5(R) \
  R(REQUIRES, hdf5_compression_level, hdf5_compression, 0, 0, 0, "a level belongs to a compression filter") \
  R(RANGE, hdf5_compression_level, hdf5_compression, SP__COMPRESSION_GZIP, 0, 9, "gzip levels run from 0 to 9") \
  R(RANGE, hdf5_compression_level, hdf5_compression, SP__COMPRESSION_ZSTD, 1, 22, "zstd levels run from 1 to 22") \
  R(RANGE, hdf5_compression_level, hdf5_compression, SP__COMPRESSION_AUTO, 1, 9, "auto may pick gzip or zstd") \
  R(RANGE, hdf5_compression_level, hdf5_compression, SP__COMPRESSION_LZF, 1, 0, "the lzf filter has no levels")

#endif
