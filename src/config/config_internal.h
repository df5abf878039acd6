/* config_internal.h - the resolved configuration as the rest of the library
 * sees it, and the calls that build it.
 *
 * struct sp_config is generated from the settings table (settings_table.h):
 * one resolved field per setting (bool -> int, int -> int64_t, string -> char
 * * or NULL, enum -> its C enum sp__<name>, list -> NULL-terminated char **
 * or NULL), plus the origin of each value. Depends on nothing but libc, the
 * public headers and the table's blocks: core/, output/, mpi/ and cli/
 * include it, config/ includes nothing of theirs.
 */
#ifndef SP_CONFIG_INTERNAL_H
#define SP_CONFIG_INTERNAL_H

#include <stdint.h>

#include "config/settings_table.h"
#include "scope_profiler.h"

#define SP__CFG_DECL_BOOL(n) int n;
#define SP__CFG_DECL_INT(n) int64_t n;
#define SP__CFG_DECL_STR(n) char *n;
#define SP__CFG_DECL_ENUM(n) enum sp__##n n;
#define SP__CFG_DECL_LIST(n) char **n;

struct sp_config {
#define SP__CFG_FIELD(num, n, g, f, T, ...) SP__CFG_DECL_##T(n)
  SP__ALL_SETTINGS(SP__CFG_FIELD)
#undef SP__CFG_FIELD
  sp_origin origin[SP__NSETTINGS];
  char *text[SP__NSETTINGS];   /* each value rendered as text ("" unset) */
  char *display_label;         /* label, or the output file's stem */
  char *config_file;           /* the TOML file read, NULL if none: messages name it */
  char *memory_profile_path_resolved; /* NULL unless use_memray */
  int64_t start_time_ns;       /* set by the manager at setup */
  int paused;                  /* mirrored by the manager */
};

/* The word of an ENUM setting's value ("full" for SP__METADATA_FULL), for
 * metadata and messages; "" for a value out of range or another type. */
const char *sp__enum_word(size_t setting, int value);
#define SP__ENUM_WORD(name, value) sp__enum_word(SP__SET_##name, (int)(value))

/* Resolve defaults < TOML file (args->config_path, else $SCOPE_PROFILER_CONFIG)
 * < args->options < environment < args->overrides, then validate. On error
 * `out` holds nothing to free and sp_last_error() explains. Issues no MPI
 * call. `args` may be NULL. */
sp_status sp__config_resolve(struct sp_config *out, const sp_setup_args *args);

/* sp__config_resolve with flags: SP__RESOLVE_NO_ENV ignores the environment
 * (no SCOPE_PROFILER_* setting, no SCOPE_PROFILER_CONFIG), which is what
 * `scope-profiler config check` wants: the file judged on its own. */
#define SP__RESOLVE_NO_ENV 1u
sp_status sp__config_resolve_ex(struct sp_config *out, const sp_setup_args *args, unsigned flags);

/* Free everything a resolved config owns; leaves it zeroed. */
void sp__config_free(struct sp_config *c);

/* Deep copy. */
sp_status sp__config_copy(struct sp_config *dst, const struct sp_config *src);

/* The resolved settings as one JSON object text (malloc'd), written to the
 * output file's metadata as the attribute "settings". */
char *sp__config_to_json(const struct sp_config *c);

/* One warning for each setting this build cannot honour (status PLANNED or
 * UNBUILT, sp__setting_status()) that `c` turns on, i.e. sets to anything but its default; each
 * setting warns at most once per process, on rank 0 of a launched job, and
 * nothing is said when c->quiet or c->deactivate_profiling. Returns how many
 * warnings it gave. */
int sp__config_warn_unavailable(const struct sp_config *c);

/* Whether `quiet` is on for a setup that could not be resolved: the value
 * the layers give it on their own, each read leniently (a layer that fails
 * to parse says nothing). Leaves sp_last_error() as it was. */
int sp__config_quiet_hint(const sp_setup_args *args);

/* The number of a termination signal the `signals` setting may name
 * ("SIGTERM" or "TERM"), 0 for any other name. Validation and the handler
 * installer both use it, so a name setup refuses is refused by
 * `scope-profiler config check` too. */
int sp__signal_from_name(const char *name);

/* Resolve as setup does (sp__config_resolve_ex) and then check what setup
 * checks before a run starts: that the output file can be written where
 * file_path says (its directory exists and is writable, and file_path is not
 * a directory), unless nothing will be written. `scope-profiler config check`
 * calls exactly this, so it accepts what setup accepts. */
sp_status sp__config_for_setup(struct sp_config *out, const sp_setup_args *args, unsigned flags);

/* Extra tags from SCOPE_PROFILER_ENABLE_TAGS are already merged into
 * enable_tags by sp__config_resolve. 1 if `tag` is enabled (or "*" is). */
int sp__config_tag_enabled(const struct sp_config *c, const char *tag);

#endif
