/* h5common.h - HDF5 pieces shared by the serial writer (h5write.c) and the
 * MPI job writers (src/mpi/): string and summary types, attributes, the
 * /metadata group, and atomic publication through an exclusive temporary
 * sibling. Every helper that can fail sets *failed instead of returning, so
 * a writer can issue a whole file's worth of calls and check once.
 */
#ifndef SP_H5COMMON_H
#define SP_H5COMMON_H

#include <hdf5.h>

#include "output/output.h"
#include "scope_profiler/status.h"

/* HDF5 attributes are limited to 64 KiB; longer values are cut. */
#define SP_H5_META_MAX_CHARS 60000

/* Variable-length UTF-8 string type; close with H5Tclose. */
hid_t sp__h5_str_type(void);
/* The 11-field summary_statistics compound (docs/file-format.md). */
hid_t sp__h5_summary_type(void);

/* The unsigned integer type of `bytes` (1, 2, 4, 8) bytes: little-endian
 * for a file, or the native one for memory. */
hid_t sp__h5_uint_type(unsigned bytes, int native);
/* File access properties: oldest format that holds what we write. */
hid_t sp__h5_file_access(void);

void sp__h5_attr_str(hid_t obj, const char *name, const char *value, int *failed);
void sp__h5_attr_num(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v, int *failed);
void sp__h5_attr_strlist(hid_t obj, const char *name, char **list, int *failed);

/* Root attributes (schema, storage_layout) and the /metadata group. */
void sp__h5_write_head(hid_t file, int schema_version, const char *layout, const struct sp_meta *meta,
                       int *failed);
/* The attributes of `meta` on obj (strings, int64, float64, string lists). */
void sp__h5_write_attrs(hid_t obj, const struct sp_meta *meta, int *failed);

/* ---- the plan's datasets (h5plan.c) ---------------------------------------
 * Writing a file is: the head (root attributes, /metadata, region names),
 * every dataset created at its final size, then each part at its place.
 * `what` selects the pieces, so that parallel HDF5 can write the numeric
 * ones collectively and rank 0 the strings (which parallel HDF5 cannot
 * write) and the per-rank groups afterwards. */
#define SP_PW_EVENTS 1u  /* /events columns */
#define SP_PW_NUMERIC 2u /* numeric index and table columns */
#define SP_PW_STRINGS 4u /* string columns, table attributes */
#define SP_PW_GROUPS 8u  /* the part's rank<N> groups */
#define SP_PW_ALL 15u
struct sp_layout;
struct sp_place;
/* 1 when dataset `id` is in the file of layout L; *len its length. */
int sp__plan_present(const struct sp_layout *L, int id, uint64_t *len);
void sp__plan_write_head(hid_t file, const struct sp_layout *L, const struct sp_meta *meta, int *failed);
void sp__plan_create(hid_t file, const struct sp_layout *L, const struct sp_config *cfg, unsigned what,
                     int *failed);
/* Part `part` (rank `rank`) at place pl. With a collective transfer list
 * (dxpl != H5P_DEFAULT) every rank must call it, with the same layout. */
void sp__plan_write_part(hid_t file, const struct sp_layout *L, const struct sp_place *pl,
                         const struct sp_run *part, uint32_t rank, hid_t dxpl, unsigned what, int *failed);
/* A sink writing a bounded-memory run's events into the datasets
 * sp__plan_create made (one part, at offset 0). */
struct sp_event_sink *sp__plan_sink_open(hid_t file, const struct sp_layout *L, const struct sp_run *run);
void sp__plan_sink_close(struct sp_event_sink *s);

/* Reserves an exclusive temporary sibling name of `path`
 * (".NAME.tmp.XXXXXX", created with O_EXCL) and returns it in *tmp
 * (malloc'd). Callers remove it and create the file with H5F_ACC_EXCL. */
sp_status sp__h5_tmp_create(const char *path, char **tmp);
/* fsync a written file by name; 0 on success. */
int sp__h5_fsync_path(const char *path);
/* Publishes `tmp` as `path` (fsync, rename) or, when `failed`, removes it.
 * Frees tmp. SP_OK or SP_ERR_IO with a message. */
sp_status sp__h5_publish(char *tmp, const char *path, int failed);
/* The same, except that a failure leaves tmp on disk and does not free it
 * (a staged run's file: its blocks are the run's calls, still needed). */
sp_status sp__h5_publish_or_keep(char *tmp, const char *path, int failed);
/* A run whose blocks were staged (run->staged): published as `path` with
 * virtual /events columns (h5stage.c). *declined: the staged way does not
 * apply and nothing was touched; otherwise a failure removed the file.
 * Either way the caller writes the run the copy way instead. */
sp_status sp__stage_publish(const struct sp_run *run, const struct sp_config *cfg, const char *path, int *declined);

#endif
