/* settings_meta.h - the settings table as data, for the code that needs to
 * walk it at run time: the key setter, the TOML and environment loaders,
 * validation, the settings JSON, `scope-profiler config` and the generated
 * docs. sp__settings[], sp__groups[] and sp__rules[] are expanded from the
 * table (settings_table.h), so they cannot drift from struct sp_config; the
 * frozen fields of sp_options are checked against it at compile time.
 *
 * Internal to the library (and the CLI); depends on include/ and common/.
 */
#ifndef SP_CONFIG_SETTINGS_META_H
#define SP_CONFIG_SETTINGS_META_H

#include <stddef.h>
#include <stdint.h>

#include "config/config_internal.h"

typedef enum sp__stype { SP__ST_BOOL, SP__ST_INT, SP__ST_STR, SP__ST_ENUM, SP__ST_LIST } sp__stype;
/* The STATUS column: whether this build has the setting's feature. */
typedef enum sp__sstatus { SP__SS_READY, SP__SS_PLANNED, SP__SS_UNBUILT } sp__sstatus;

struct sp__group {
  const char *name;  /* "hdf5" */
  int spelled;       /* its rows also answer to <name>.<field> */
  const char *title; /* section heading in --help and the docs */
  const char *doc;
};
extern const struct sp__group sp__groups[SP__NGROUPS];

struct sp__setting {
  const char *name;        /* flat name */
  int group;               /* SP__GROUP_<group> */
  const char *group_name;  /* "core", "hdf5", ... */
  const char *short_name;  /* field name inside the group */
  const char *dotted;      /* "memray.enabled"; NULL when the group is not spelled */
  sp__stype type;
  int64_t idef;            /* BOOL/INT default (SP_INT_NONE: unset); ENUM: the default's index */
  const char *sdef;        /* STR/LIST default (NULL: unset); ENUM: the default's word */
  int64_t lo, hi;          /* INT bounds, inclusive */
  const char *const *choices; /* ENUM: its words, NULL-terminated, in enum order */
  int nchoices;
  const char *doc;
  sp__sstatus status;      /* this build's; read it through sp__setting_status() */
  const char *build;       /* BUILT_IF rows: the switch that brings the feature; else NULL */
  size_t flat_off;         /* 1 + offset of the field in sp_options; 0: none */
  size_t group_off;        /* 1 + offset of the group field in sp_options; 0: none */
  size_t cfg_off;          /* the resolved field in struct sp_config */
};

extern const struct sp__setting sp__settings[SP__NSETTINGS];

/* Setting i's status in this process: its row's, unless
 * sp__setting_mark_unavailable() changed it. Everything that warns about,
 * reports or lists availability reads this (setup's warning, the public
 * sp_setting_info status, `config --help`), never the row directly. */
sp__sstatus sp__setting_status(size_t i);

/* Make setting i PLANNED or UNBUILT in this process, as if the build had
 * left its feature out (SP__SS_READY restores the row's status). For tests
 * of the "not available in this build" path in builds that have every
 * feature: no public call or setting reaches it. Not thread-safe; call it
 * before any setup. */
void sp__setting_mark_unavailable(size_t i, sp__sstatus st);

/* A rule between settings (SP__ALL_RULES). */
typedef enum sp__rkind { SP__RULE_CONFLICTS = 1, SP__RULE_REQUIRES, SP__RULE_IMPLIES, SP__RULE_RANGE } sp__rkind;
struct sp__rule {
  sp__rkind kind;
  int a, b;         /* SP__SET_* */
  int choice;       /* RANGE: the enumerator of b */
  int64_t lo, hi;   /* RANGE */
  const char *why;
};
extern const struct sp__rule sp__rules[SP__NRULES];
#define sp__nrules ((size_t)SP__NRULES)

/* Whether a resolved setting is "on" in the sense of the rules: true, set,
 * non-empty, or (ENUM) other than its default. */
int sp__config_is_on(const struct sp_config *c, size_t setting);

/* The rule in one sentence for --help and the docs ("`a` cannot be combined
 * with `b`: why."); markdown adds backquotes. malloc'd. */
char *sp__rule_text(const struct sp__rule *r, int markdown);

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
/* SP__GROUP_* of a spelled group ("memray", "gpu", "hdf5"), else -1. */
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
/* Validate one value on its own: bool range, integer bounds, enum choice.
 * An ENUM value is its word (v->s); sp__enum_index() turns it into the
 * enumerator. */
sp_status sp__check_value(const struct sp__setting *s, const char *spelling, const sp__value *v);

/* The enumerator of an ENUM setting's word, -1 when it is not a choice. */
int sp__enum_index(const struct sp__setting *s, const char *word);

/* SP_OK when `o` was initialised with this library's SP_OPTIONS_INIT, else
 * SP_ERR_INVALID_ARGUMENT saying so. Every entry point taking options asks. */
sp_status sp__opt_valid(const sp_options *o);
/* Whether a setting has a field in sp_options (flat, or its group spelling),
 * and the name of its group field; settings without one live in the
 * options' own storage. */
int sp__options_has_field(size_t setting, int grouped);
const char *sp__options_group_field(size_t setting);

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
