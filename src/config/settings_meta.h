/* settings_meta.h - the settings table as data, for the code that needs to
 * walk it at run time: the key setter, the TOML and environment loaders,
 * validation, the settings JSON, `scope-profiler config` and the generated
 * docs. sp__settings[] is expanded from SP_SETTINGS, so it cannot drift from
 * the sp_options and sp_config structs.
 *
 * Internal to the library (and the CLI); depends on include/ and common/.
 */
#ifndef SP_CONFIG_SETTINGS_META_H
#define SP_CONFIG_SETTINGS_META_H

#include <stddef.h>
#include <stdint.h>

#include "config/config_internal.h"

typedef enum sp__stype { SP__ST_BOOL, SP__ST_INT, SP__ST_STR, SP__ST_ENUM, SP__ST_LIST } sp__stype;
typedef enum sp__sgroup { SP__G_NONE, SP__G_MEMRAY, SP__G_GPU, SP__G_HDF5 } sp__sgroup;
/* The STATUS column: whether this build has the setting's feature. */
typedef enum sp__sstatus { SP__SS_READY, SP__SS_PLANNED } sp__sstatus;

struct sp__setting {
  const char *name;       /* flat name */
  sp__sgroup group;
  const char *group_name; /* "memray", "gpu", "hdf5"; NULL when ungrouped */
  const char *short_name; /* field name inside the group */
  const char *dotted;     /* "memray.enabled"; NULL when ungrouped */
  sp__stype type;
  int64_t idef;           /* BOOL/INT default (SP_INT_NONE: unset) */
  const char *sdef;       /* STR/ENUM/LIST default (NULL: unset) */
  int64_t lo, hi;         /* INT bounds, inclusive */
  const char *choices;    /* ENUM: "a|b|c" */
  const char *doc;
  sp__sstatus status;
  size_t flat_off;        /* the flat field in sp_options */
  size_t group_off;       /* the group field in sp_options; 0 when ungrouped */
  size_t cfg_off;         /* the resolved field in struct sp_config */
};

extern const struct sp__setting sp__settings[SP__NSETTINGS];

/* A typed value on its way into options or a resolved config. Strings are
 * borrowed. */
typedef struct sp__value {
  int set;
  int64_t i;     /* BOOL (0/1) and INT */
  const char *s; /* STR, ENUM, LIST (comma-separated) */
} sp__value;

/* "SCOPE_PROFILER_" + the upper-cased flat name. */
#define SP__ENV_PREFIX "SCOPE_PROFILER_"
void sp__setting_env_name(const struct sp__setting *s, char *buf, size_t size);

/* Look a key up by its flat name ("hdf5_compression") or its group spelling
 * ("hdf5.compression"); *grouped says which. NULL when unknown. */
const struct sp__setting *sp__setting_find(const char *key, int *grouped);
/* The spelling a key was given in, for messages. */
const char *sp__setting_spelling(const struct sp__setting *s, int grouped);
/* SP__G_* for "memray"/"gpu"/"hdf5", else -1. */
int sp__group_find(const char *name);

/* Sets SP_ERR_UNKNOWN_SETTING for `key`, naming the closest real setting
 * (edit distance over flat names, group spellings and group field names). */
sp_status sp__unknown_setting(const char *key);
/* The setting closest to `key` by that measure, and the distance. */
const struct sp__setting *sp__setting_closest(const char *key, size_t *dist);

/* Parse text as the setting's type (bool words, TOML-style integers, enum
 * choices; STR and LIST are taken as they are). `spelling` is the name the
 * user wrote, for the message. Strings in *out point into `text`. */
sp_status sp__parse_text(const struct sp__setting *s, const char *spelling, const char *text,
                         sp__value *out);
/* Validate one value on its own: bool range, integer bounds, enum choice. */
sp_status sp__check_value(const struct sp__setting *s, const char *spelling, const sp__value *v);

/* Read one spelling of a setting from options (returns v->set). */
int sp__opt_get(const sp_options *o, const struct sp__setting *s, int grouped, sp__value *v);
/* Write one spelling; text is copied into o->sp_i_owned. v->set == 0 unsets. */
sp_status sp__opt_put(sp_options *o, const struct sp__setting *s, int grouped, const sp__value *v);
/* The setting's value in options whichever way it was spelled. Sets
 * SP_ERR_CONFLICT ("a and b are both set; keep one") when both are. */
sp_status sp__opt_effective(const sp_options *o, const struct sp__setting *s, sp__value *v);

/* A value rendered as text: bools true/false, integers in decimal, strings
 * as they are, unset as "". `buf` holds numbers. */
const char *sp__value_text(const struct sp__setting *s, const sp__value *v, char buf[32]);

/* Short name of an origin: default, file, options, environment, override. */
const char *sp__origin_name(sp_origin o);

/* A value quoted for messages: escaped, cut at ~60 characters. */
const char *sp__quote(const char *s, char buf[96]);

/* Load a TOML text already in memory (what sp_load_profiling_config does
 * after reading the file); `name` is used in messages. */
sp_status sp__load_profiling_text(const char *text, size_t len, const char *name, sp_options *out);

/* Generated help (`scope-profiler config --help` settings list) and
 * docs/configuration.md; malloc'd, NULL when out of memory. */
char *sp__config_help_text(void);
char *sp__config_markdown(void);

#endif
