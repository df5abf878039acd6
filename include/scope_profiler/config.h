/* scope_profiler/config.h - settings: the options struct, its groups, the
 * key setter, TOML loading and the resolved per-manager configuration.
 *
 * Introduction
 *   sp_options       every setting, each of which can be left unset. Start from
 *                    SP_OPTIONS_INIT; assign fields directly or by key with
 *                    sp_options_set(). Three groups (memray, gpu, hdf5) spell
 *                    some settings a second way; giving one setting both ways
 *                    is an error naming both spellings.
 *   sp_load_profiling_config()
 *                    reads the [profiling] table of a TOML file into options.
 *   sp_config        the resolved, read-only configuration a manager runs with
 *                    (sp_manager_config()); precedence, lowest first: built-in
 *                    default < TOML config file < options < environment
 *                    (SCOPE_PROFILER_<SETTING>) < explicit overrides.
 *
 * The fields are generated from SP_SETTINGS in scope_profiler/settings.h.
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

/* Group membership filters: SP_I_IN_<WANTED>_<GROUP>(x) keeps x only when the
 * row's group is WANTED. Variadic because an initializer (".s = v,") carries
 * a comma. */
#define SP_I_IN_MEMRAY_NONE(...)
#define SP_I_IN_MEMRAY_MEMRAY(...) __VA_ARGS__
#define SP_I_IN_MEMRAY_GPU(...)
#define SP_I_IN_MEMRAY_HDF5(...)
#define SP_I_IN_GPU_NONE(...)
#define SP_I_IN_GPU_MEMRAY(...)
#define SP_I_IN_GPU_GPU(...) __VA_ARGS__
#define SP_I_IN_GPU_HDF5(...)
#define SP_I_IN_HDF5_NONE(...)
#define SP_I_IN_HDF5_MEMRAY(...)
#define SP_I_IN_HDF5_GPU(...)
#define SP_I_IN_HDF5_HDF5(...) __VA_ARGS__

#define SP_I_FLAT_FIELD(n, G, s, T, ...) SP_I_OPT_T_##T n;
#define SP_I_MEMRAY_FIELD(n, G, s, T, ...) SP_I_IN_MEMRAY_##G(SP_I_OPT_T_##T s;)
#define SP_I_GPU_FIELD(n, G, s, T, ...) SP_I_IN_GPU_##G(SP_I_OPT_T_##T s;)
#define SP_I_HDF5_FIELD(n, G, s, T, ...) SP_I_IN_HDF5_##G(SP_I_OPT_T_##T s;)

#define SP_I_FLAT_INIT(n, G, s, T, ...) .n = SP_I_OPT_UNSET_##T,
#define SP_I_MEMRAY_INIT(n, G, s, T, ...) SP_I_IN_MEMRAY_##G(.s = SP_I_OPT_UNSET_##T,)
#define SP_I_GPU_INIT(n, G, s, T, ...) SP_I_IN_GPU_##G(.s = SP_I_OPT_UNSET_##T,)
#define SP_I_HDF5_INIT(n, G, s, T, ...) SP_I_IN_HDF5_##G(.s = SP_I_OPT_UNSET_##T,)

/*====== Option groups ======*/

/* Allocation capture settings ([profiling.memray]). */
typedef struct sp_memray_options {
  SP_SETTINGS(SP_I_MEMRAY_FIELD)
} sp_memray_options;

/* GPU timing and NVTX settings ([profiling.gpu]). */
typedef struct sp_gpu_options {
  SP_SETTINGS(SP_I_GPU_FIELD)
} sp_gpu_options;

/* HDF5 storage settings ([profiling.hdf5]). */
typedef struct sp_hdf5_options {
  SP_SETTINGS(SP_I_HDF5_FIELD)
} sp_hdf5_options;

/*====== Options ======*/

/* Every setting, flat, plus the three groups. Strings are borrowed: they must
 * stay valid until the sp_setup()/sp_manager_setup() call that reads them
 * returns. */
typedef struct sp_options {
  SP_SETTINGS(SP_I_FLAT_FIELD)
  sp_memray_options memray;
  sp_gpu_options gpu;
  sp_hdf5_options hdf5;
  struct sp_i_arena *sp_i_owned; /* private: copies made by the setters */
} sp_options;

/* Initialiser with every setting unset:  sp_options o = SP_OPTIONS_INIT; */
#define SP_OPTIONS_INIT                               \
  {                                                   \
    SP_SETTINGS(SP_I_FLAT_INIT)                        \
    .memray = {SP_SETTINGS(SP_I_MEMRAY_INIT)},         \
    .gpu = {SP_SETTINGS(SP_I_GPU_INIT)},               \
    .hdf5 = {SP_SETTINGS(SP_I_HDF5_INIT)},             \
    .sp_i_owned = NULL,                                \
  }

/** Set one setting by key, parsing `value` as the setting's type.
 *
 * `key` is a flat name ("hdf5_compression") or a group spelling
 * ("hdf5.compression"). Booleans accept 1/0/true/false/yes/no/on/off (any
 * case); integers are TOML-style (1_000, 0x400, 0o17, 0b101); enumerations
 * must be one of their choices; lists are comma-separated. A NULL value
 * unsets that spelling. Text values are copied into storage owned by `o` and
 * released by sp_options_clear(); copying an sp_options struct shares that
 * storage, so clear only one of the copies.
 * @return SP_OK, SP_ERR_UNKNOWN_SETTING (message has a "did you mean"),
 *         SP_ERR_INVALID_VALUE (message names the expected type, the bounds
 *         or the allowed values), SP_ERR_CONFLICT (the other spelling of the
 *         same setting is already set), SP_ERR_INVALID_ARGUMENT. */
SP_API sp_status sp_options_set(sp_options *o, const char *key, const char *value);

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

/** Number of settings, and their flat names in table order. */
SP_API size_t sp_setting_count(void);
SP_API const char *sp_setting_name(size_t i);

/** A resolved setting rendered as text ("" for unset) and its origin. */
SP_API const char *sp_config_value_text(const sp_config *c, const char *flat_name);
SP_API sp_origin sp_config_origin(const sp_config *c, const char *flat_name);

/* Typed accessors for every property of the resolved configuration. */
#define SP_I_ACC_T_BOOL int
#define SP_I_ACC_T_INT int64_t
#define SP_I_ACC_T_STR const char *
#define SP_I_ACC_T_ENUM const char *
#define SP_I_ACC_T_LIST const char *const *
#define SP_I_CONFIG_ACCESSOR(n, G, s, T, ...) SP_API SP_I_ACC_T_##T sp_config_##n(const sp_config *c);
SP_SETTINGS(SP_I_CONFIG_ACCESSOR)
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
