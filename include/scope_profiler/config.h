/* scope_profiler/config.h - settings: the options struct, its groups, the
 * key setter, TOML loading and the resolved per-manager configuration.
 *
 * Introduction
 *   sp_options       settings, each of which can be left unset. Start from
 *                    SP_OPTIONS_INIT; assign the fields below directly, or
 *                    set any setting by key with sp_options_set(). Three
 *                    groups (memray, gpu, hdf5) spell some settings a second
 *                    way; giving one setting both ways is an error naming
 *                    both spellings.
 *   sp_load_profiling_config()
 *                    reads the [profiling] table of a TOML file into options.
 *   sp_config        the resolved, read-only configuration a manager runs with
 *                    (sp_manager_config()); precedence, lowest first: built-in
 *                    default < TOML file < options < environment
 *                    (SCOPE_PROFILER_<SETTING>) < explicit overrides.
 *
 * The table of all settings is scope_profiler/settings.h. The fields of
 * sp_options are frozen: a setting added later has no field and is set by
 * key, so the struct's layout never changes with the table. Its first member
 * records the size the program was compiled with (SP_OPTIONS_INIT sets it),
 * so a library can tell which fields a program knows.
 */
#ifndef SCOPE_PROFILER_CONFIG_H
#define SCOPE_PROFILER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/export.h"
#include "scope_profiler/settings.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*====== Option field types ======*/

/* Tri-state boolean: SP_UNSET, 0 (false) or 1 (true). */
typedef signed char sp_bool3;
#define SP_UNSET (-1)

#define SP_I_OPT_T_BOOL sp_bool3
#define SP_I_OPT_T_INT int64_t
#define SP_I_OPT_T_STR const char *
#define SP_I_OPT_T_ENUM const char *
#define SP_I_OPT_T_LIST const char *

#define SP_I_OPT_UNSET_BOOL SP_UNSET
#define SP_I_OPT_UNSET_INT SP_INT_NONE
#define SP_I_OPT_UNSET_STR NULL
#define SP_I_OPT_UNSET_ENUM NULL
#define SP_I_OPT_UNSET_LIST NULL

/* The settings that are fields of sp_options, in struct order: frozen (see
 * above). F(flat_name, TYPE); the group lists F(flat_name, field, TYPE). The
 * library checks at compile time that each names a setting of that type. */
#define SP_I_OPTION_FIELDS(F)                                                                       \
  F(file_path, STR) F(label, STR) F(use_likwid, BOOL) F(perf_events, LIST)                        \
  F(use_line_profiler, BOOL) F(use_memray, BOOL) F(memory_profile_path, STR)                      \
  F(memray_native_traces, BOOL) F(memray_trace_python_allocators, BOOL)                           \
  F(memray_follow_fork, BOOL) F(deactivate_profiling, BOOL) F(use_nvtx, BOOL)                     \
  F(use_gpu_timing, BOOL) F(gpu_timing_backend, ENUM) F(gpu_sync_on_exit, BOOL)                   \
  F(deactivate_file_output, BOOL) F(recursive_profile, BOOL) F(aggregation_mode, BOOL)            \
  F(profile_mpi_calls, BOOL) F(track_threads, BOOL) F(track_async, BOOL)                          \
  F(capture_region_source, BOOL) F(metadata_detail, ENUM) F(buffer_limit, INT)                    \
  F(output_mode, ENUM) F(hdf5_compression, ENUM) F(hdf5_compression_level, INT)                   \
  F(hdf5_chunk_size, INT) F(enable_tags, LIST) F(signals, LIST) F(crash_spill, BOOL)              \
  F(finalize_on_exit, BOOL) F(max_buffer_bytes, INT) F(hdf5_schema, INT)
#define SP_I_MEMRAY_FIELDS(F)                                                                       \
  F(use_memray, enabled, BOOL) F(memory_profile_path, path, STR)                                  \
  F(memray_native_traces, native_traces, BOOL)                                                    \
  F(memray_trace_python_allocators, trace_python_allocators, BOOL)                                \
  F(memray_follow_fork, follow_fork, BOOL)
#define SP_I_GPU_FIELDS(F)                                                                          \
  F(use_nvtx, nvtx, BOOL) F(use_gpu_timing, timing, BOOL) F(gpu_timing_backend, backend, ENUM)    \
  F(gpu_sync_on_exit, sync_on_exit, BOOL)
#define SP_I_HDF5_FIELDS(F)                                                                         \
  F(hdf5_compression, compression, ENUM) F(hdf5_compression_level, compression_level, INT)        \
  F(hdf5_chunk_size, chunk_size, INT) F(hdf5_schema, schema, INT)

#define SP_I_FLAT_FIELD(n, T) SP_I_OPT_T_##T n;
#define SP_I_GROUP_FIELD(n, s, T) SP_I_OPT_T_##T s;
#define SP_I_FLAT_INIT(n, T) .n = SP_I_OPT_UNSET_##T,
#define SP_I_GROUP_INIT(n, s, T) .s = SP_I_OPT_UNSET_##T,

/*====== Option groups ======*/

/* Allocation capture settings ([profiling.memray]). */
typedef struct sp_memray_options {
  SP_I_MEMRAY_FIELDS(SP_I_GROUP_FIELD)
} sp_memray_options;

/* GPU timing and NVTX settings ([profiling.gpu]). */
typedef struct sp_gpu_options {
  SP_I_GPU_FIELDS(SP_I_GROUP_FIELD)
} sp_gpu_options;

/* HDF5 storage settings ([profiling.hdf5]). */
typedef struct sp_hdf5_options {
  SP_I_HDF5_FIELDS(SP_I_GROUP_FIELD)
} sp_hdf5_options;

/*====== Options ======*/

/* Settings, flat, plus the three groups. Strings are borrowed: they must stay
 * valid until the sp_setup()/sp_manager_setup() call that reads them
 * returns. Settings without a field live in storage owned by the struct
 * (sp_options_set(), released by sp_options_clear()). */
typedef struct sp_options {
  uint32_t sp_i_size;    /* private: sizeof(sp_options) where it was initialised */
  uint32_t sp_i_version; /* private: SP_OPTIONS_VERSION there */
  SP_I_OPTION_FIELDS(SP_I_FLAT_FIELD)
  sp_memray_options memray;
  sp_gpu_options gpu;
  sp_hdf5_options hdf5;
  struct sp_i_optstore *sp_i_owned; /* private: copies and settings set by key */
} sp_options;

#define SP_OPTIONS_VERSION 1

/* Initialiser with every setting unset:  sp_options o = SP_OPTIONS_INIT;
 * The same spelling works in C++, where designated initialisers need C++20:
 * there it calls an inline function that assigns the same values. */
#ifdef __cplusplus
#define SP_I_CXX_FLAT_SET(n, T) o.n = SP_I_OPT_UNSET_##T;
#define SP_I_CXX_MEMRAY_SET(n, s, T) o.memray.s = SP_I_OPT_UNSET_##T;
#define SP_I_CXX_GPU_SET(n, s, T) o.gpu.s = SP_I_OPT_UNSET_##T;
#define SP_I_CXX_HDF5_SET(n, s, T) o.hdf5.s = SP_I_OPT_UNSET_##T;
static inline sp_options sp_i_options_init(void) {
  sp_options o;
  o.sp_i_size = (uint32_t)sizeof(sp_options);
  o.sp_i_version = SP_OPTIONS_VERSION;
  SP_I_OPTION_FIELDS(SP_I_CXX_FLAT_SET)
  SP_I_MEMRAY_FIELDS(SP_I_CXX_MEMRAY_SET)
  SP_I_GPU_FIELDS(SP_I_CXX_GPU_SET)
  SP_I_HDF5_FIELDS(SP_I_CXX_HDF5_SET)
  o.sp_i_owned = NULL;
  return o;
}
#define SP_OPTIONS_INIT (sp_i_options_init())
#else
#define SP_OPTIONS_INIT                                                                            \
  {                                                                                                \
    .sp_i_size = (uint32_t)sizeof(sp_options), .sp_i_version = SP_OPTIONS_VERSION,                   \
    SP_I_OPTION_FIELDS(SP_I_FLAT_INIT)                                                               \
    .memray = {SP_I_MEMRAY_FIELDS(SP_I_GROUP_INIT)},                                                 \
    .gpu = {SP_I_GPU_FIELDS(SP_I_GROUP_INIT)},                                                       \
    .hdf5 = {SP_I_HDF5_FIELDS(SP_I_GROUP_INIT)},                                                     \
    .sp_i_owned = NULL,                                                                             \
  }
#endif

/** Set one setting by key, parsing `value` as the setting's type.
 *
 * `key` is a flat name ("hdf5_compression") or a group spelling
 * ("hdf5.compression"); every setting can be set this way, including those
 * without a field. Booleans accept 1/0/true/false/yes/no/on/off (any case);
 * integers are TOML-style (1_000, 0x400, 0o17, 0b101); enumerations must be
 * one of their choices; lists are comma-separated. A NULL value unsets that
 * spelling. Text values are copied into storage owned by `o` and released by
 * sp_options_clear(); copying an sp_options struct shares that storage, so
 * clear only one of the copies.
 * @return SP_OK, SP_ERR_UNKNOWN_SETTING (message has a "did you mean"),
 *         SP_ERR_INVALID_VALUE (message names the expected type, the bounds
 *         or the allowed values), SP_ERR_CONFLICT (the other spelling of the
 *         same setting is already set), SP_ERR_INVALID_ARGUMENT (also for
 *         options not initialised with SP_OPTIONS_INIT). */
SP_API sp_status sp_options_set(sp_options *o, const char *key, const char *value);

/** The value a setting has in `o`, as text in `buf` (what sp_options_set()
 * would take; "true"/"false" for booleans), whichever way it was given:
 * field or key, flat or grouped. SP_ERR_NOT_FOUND when it is unset there,
 * SP_ERR_LIMIT when `size` is too small, SP_ERR_UNKNOWN_SETTING. */
SP_API sp_status sp_options_get(const sp_options *o, const char *key, char *buf, size_t size);

/** Release strings copied by sp_options_set() and sp_load_profiling_config();
 * leaves `o` as SP_OPTIONS_INIT. Safe on options that were only assigned. */
SP_API void sp_options_clear(sp_options *o);

/** The explicitly set settings, under their flat names (the to_kwargs
 * counterpart). Calls `fn(flat_name, value_as_text, user)` once per set
 * setting, groups expanded. Setting one thing both flat and grouped is
 * SP_ERR_CONFLICT and calls nothing. */
SP_API sp_status sp_options_each_set(const sp_options *o,
                                     void (*fn)(const char *name, const char *value, void *user),
                                     void *user);

/** Read the [profiling] table (or the top level of a small file that has
 * none) of a TOML file into `out`, which should start as SP_OPTIONS_INIT.
 * Sub-tables memray, gpu and hdf5 use the group field names. Other top-level
 * tables are ignored (the file may be shared with other tools). Relative
 * paths in the file stay relative to the working directory. Errors name file,
 * line and column ("run.toml:3:14: ..."): SP_ERR_PARSE for TOML syntax,
 * SP_ERR_UNKNOWN_SETTING, SP_ERR_INVALID_VALUE, SP_ERR_CONFLICT (both
 * spellings), SP_ERR_NOT_FOUND/SP_ERR_IO. On error `out` is unchanged.
 * Free with sp_options_clear(). */
SP_API sp_status sp_load_profiling_config(const char *path, sp_options *out);

/*====== Resolved configuration ======*/

typedef struct sp_config sp_config;

/* Where a resolved value came from. */
typedef enum sp_origin {
  SP_ORIGIN_DEFAULT = 0,
  SP_ORIGIN_FILE,
  SP_ORIGIN_OPTIONS,
  SP_ORIGIN_ENV,
  SP_ORIGIN_OVERRIDE
} sp_origin;

/** A resolved setting rendered as text ("" for unset) and its origin. */
SP_API const char *sp_config_value_text(const sp_config *c, const char *flat_name);
SP_API sp_origin sp_config_origin(const sp_config *c, const char *flat_name);

/** Any resolved setting by name, typed: a boolean (0/1), an integer
 * (SP_INT_NONE when unset) or a list (never NULL; {NULL} when empty). The
 * wrong type or an unknown name gives 0 / SP_INT_NONE / the empty list. */
SP_API int sp_config_bool(const sp_config *c, const char *flat_name);
SP_API int64_t sp_config_int(const sp_config *c, const char *flat_name);
SP_API const char *const *sp_config_list(const sp_config *c, const char *flat_name);

/* Typed accessors for the settings that have option fields. */
#define SP_I_ACC_T_BOOL int
#define SP_I_ACC_T_INT int64_t
#define SP_I_ACC_T_STR const char *
#define SP_I_ACC_T_ENUM const char *
#define SP_I_ACC_T_LIST const char *const *
#define SP_I_CONFIG_ACCESSOR(n, T) SP_API SP_I_ACC_T_##T sp_config_##n(const sp_config *c);
SP_I_OPTION_FIELDS(SP_I_CONFIG_ACCESSOR)
#undef SP_I_CONFIG_ACCESSOR

/* Accessors return what the run uses: sp_config_label() is the label as
 * given (NULL when none; sp_config_display_label() falls back to the output
 * file's stem), sp_config_memory_profile_path() is the capture path and NULL
 * unless use_memray is on (default "<file_path without suffix>.memray.bin"),
 * sp_config_track_threads() is 1 whenever track_async is,
 * sp_config_hdf5_compression() is NULL for "none", and list accessors never
 * return NULL (an empty list is {NULL}). Every accessor accepts NULL. */
/** Derived properties: the label post-processing shows (label, else the
 * output file's stem), the run's start time and pause state (set by the
 * manager). sp_config_list_len(NULL) is 0. */
SP_API const char *sp_config_display_label(const sp_config *c);
SP_API int64_t sp_config_start_time_ns(const sp_config *c);
SP_API int sp_config_paused(const sp_config *c);
SP_API size_t sp_config_list_len(const char *const *list);

#ifdef __cplusplus
}
#endif
#endif
