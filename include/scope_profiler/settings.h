/* scope_profiler/settings.h - the settings table, read at run time.
 *
 * Every setting scope-profiler has, its group, type, default, bounds,
 * choices, documentation, environment variable and whether this build can
 * honour it, and the rules between settings: the same table setup, the TOML
 * reader, `scope-profiler config` and docs/configuration.md use. Bindings
 * (Python, Fortran) and tools read it here instead of keeping a copy, and
 * set values by name with sp_options_set() (scope_profiler/config.h).
 *
 * The info structs start with their size, which the caller sets to the size
 * it was compiled with: later versions append fields, never move them; a
 * caller that knows fewer gets those, one that knows more gets zeros.
 * Strings point into the library and stay valid while it is loaded.
 */
#ifndef SCOPE_PROFILER_SETTINGS_H
#define SCOPE_PROFILER_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/export.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks an integer setting that has no value (Python's None). */
#define SP_INT_NONE INT64_MIN

typedef enum sp_setting_type {
  SP_SETTING_BOOL = 1,
  SP_SETTING_INT,
  SP_SETTING_STRING,
  SP_SETTING_ENUM, /* one of `choices` */
  SP_SETTING_LIST  /* comma-separated strings / a TOML array of strings */
} sp_setting_type;

typedef enum sp_setting_status {
  SP_SETTING_READY = 0,   /* does what it says */
  SP_SETTING_PLANNED = 1, /* not implemented yet: setup warns when it is turned on */
  SP_SETTING_UNBUILT = 2  /* implemented, but left out of this build: setup warns too */
} sp_setting_status;

typedef struct sp_setting_info {
  size_t size;               /* in: sizeof(sp_setting_info) */
  const char *name;          /* flat name: the key for sp_options_set() and TOML */
  const char *group;         /* "core", "hdf5", "gpu", "likwid", ... */
  const char *spelling;      /* second spelling "hdf5.compression", NULL if none */
  const char *field;         /* the name inside the group ("compression") */
  const char *env;           /* "SCOPE_PROFILER_HDF5_COMPRESSION" */
  sp_setting_type type;
  int has_default;           /* 0: unset unless given */
  const char *default_text;  /* the default as sp_options_set() takes it; "" if none */
  int64_t min, max;          /* SP_SETTING_INT bounds, inclusive */
  const char *const *choices;/* SP_SETTING_ENUM: NULL-terminated words; else NULL */
  const char *doc;           /* one line */
  sp_setting_status status;
  int options_field;         /* 1: also a field of sp_options (older settings) */
} sp_setting_info;

/** Number of settings, and their flat names in table order. */
SP_API size_t sp_setting_count(void);
SP_API const char *sp_setting_name(size_t i);

/** The i-th setting (i < sp_setting_count()). `info->size` must be set;
 * SP_ERR_INVALID_ARGUMENT otherwise. */
SP_API sp_status sp_setting_info_at(size_t i, sp_setting_info *info);

/** Index of a setting by flat name or group spelling ("hdf5.compression").
 * SP_ERR_UNKNOWN_SETTING with a "did you mean" message otherwise. */
SP_API sp_status sp_setting_find(const char *key, size_t *index);

/** Parse and check one value as sp_options_set() would, without storing it:
 * SP_OK, SP_ERR_UNKNOWN_SETTING or SP_ERR_INVALID_VALUE (the message names
 * the type, bounds or choices). Rules between settings are checked when a
 * configuration is resolved. */
SP_API sp_status sp_setting_check(const char *key, const char *value);

typedef struct sp_setting_group_info {
  size_t size;       /* in: sizeof(sp_setting_group_info) */
  const char *name;  /* "hdf5" */
  const char *title; /* "HDF5 storage" */
  const char *doc;
  int spelled;       /* 1: its settings are also <name>.<field>, [profiling.<name>] in TOML */
} sp_setting_group_info;

SP_API size_t sp_setting_group_count(void);
SP_API sp_status sp_setting_group_at(size_t i, sp_setting_group_info *info);

typedef enum sp_setting_rule_kind {
  SP_RULE_CONFLICTS = 1, /* a and b cannot both be on */
  SP_RULE_REQUIRES,      /* a on needs b on */
  SP_RULE_IMPLIES,       /* a on turns b on */
  SP_RULE_RANGE          /* while b is `choice`, a lies in min..max (min > max: a unset) */
} sp_setting_rule_kind;

typedef struct sp_setting_rule_info {
  size_t size; /* in: sizeof(sp_setting_rule_info) */
  sp_setting_rule_kind kind;
  const char *a, *b;     /* flat names */
  const char *choice;    /* SP_RULE_RANGE: the word of b it applies to; else NULL */
  int64_t min, max;      /* SP_RULE_RANGE */
  const char *why;
  const char *text;      /* the rule in one sentence, as the docs print it */
} sp_setting_rule_info;

SP_API size_t sp_setting_rule_count(void);
SP_API sp_status sp_setting_rule_at(size_t i, sp_setting_rule_info *info);

#ifdef __cplusplus
}
#endif
#endif
