/* settings_table.h - the settings table: every setting, its group and the
 * rules between settings, assembled from the blocks that each part of the
 * library declares beside its code (core, MPI, HDF5 storage, and one per
 * extension). Everything that knows about settings is generated from it: the
 * resolved configuration and its C enums, the options fields, the key
 * setter, the TOML and environment loaders, validation, the settings JSON of
 * every file, `scope-profiler config --help`, docs/configuration.md and the
 * public table API (scope_profiler/settings.h) that bindings read instead of
 * keeping a copy.
 *
 * A block NAME defines three macros in its own header:
 *
 *   SP_GROUP_NAME(G)      G(group, spelled, "title", "doc"): the group its rows
 *                         belong to. spelled = 1 gives every row a second
 *                         spelling, group.field ([profiling.<group>] in TOML).
 *   SP_SETTINGS_NAME(X)   one row per setting:
 *     X(number, name, group, field, TYPE, default, lo, hi, "doc", STATUS)
 *       number    the setting's place in the table (sp_setting_name(number)),
 *                 stable: upstream's 29 settings keep upstream's order
 *                 (0-28), the later ones follow; a new row takes the next free one
 *       name      flat name: setup keyword, TOML key, environment variable
 *                 SCOPE_PROFILER_<NAME upper-cased>
 *       group     the block's group; field is the row's name inside it
 *       TYPE      BOOL, INT, STR, ENUM or LIST (comma-separated strings / a
 *                 TOML array of strings)
 *       default   a C literal; NULL for an unset STR/LIST, SP_INT_NONE for an
 *                 unset INT; for ENUM one of its enumerators
 *       lo, hi    INT bounds (inclusive)
 *       STATUS    READY; PLANNED when the feature does not exist yet;
 *                 BUILT_IF(flag, "what brings it") when a build switch
 *                 decides: flag is 1 or 0 (a macro of the block's header,
 *                 from the switch), READY when 1, UNBUILT when 0, and the
 *                 text names the switch (for the docs, which say the same in
 *                 every build, and for the warning). Turned on, a PLANNED or
 *                 UNBUILT setting makes setup warn once that it has no effect
 *     An ENUM row `name` has its choices in SP__CHOICES_name(C), one
 *     C(ENUMERATOR, "word") each; the resolved setting is that C enum
 *     (enum sp__name), so no consumer compares strings.
 *   SP_RULES_NAME(R)      rules between settings:
 *     R(KIND, a, b, CHOICE, lo, hi, "why")
 *       CONFLICTS  a and b cannot both be on
 *       REQUIRES   a on needs b on
 *       IMPLIES    a on turns b (a boolean) on
 *       RANGE      while b is CHOICE, the integer a must lie in lo..hi
 *                  (lo > hi: a must be unset)
 *     "on" means: true, set, non-empty, or (ENUM) other than the default.
 *
 * Adding a block: its header, an #include and a B(NAME, X) line below. A
 * number out of range or given twice does not compile.
 */
#ifndef SP_CONFIG_SETTINGS_TABLE_H
#define SP_CONFIG_SETTINGS_TABLE_H

#include <stdint.h>

#include "scope_profiler/settings.h" /* SP_INT_NONE */

#include "config/core_settings.h"
#include "mpi/mpi_settings.h"
#include "output/hdf5_settings.h"
#include "probes/gpu_settings.h"
#include "probes/likwid_settings.h"
#include "probes/line_settings.h"
#include "probes/memray_settings.h"
#include "probes/perf_settings.h"
#include "probes/recursive_settings.h"

/* The blocks, in table order. */
#define SP__SETTING_BLOCKS(B, X) \
  B(CORE, X)                     \
  B(LIKWID, X)                   \
  B(PERF, X)                     \
  B(LINE, X)                     \
  B(MEMRAY, X)                   \
  B(GPU, X)                      \
  B(RECURSIVE, X)                \
  B(MPI, X)                      \
  B(HDF5, X)

#define SP__BLOCK_ROWS(NAME, X) SP_SETTINGS_##NAME(X)
#define SP__BLOCK_GROUP(NAME, G) SP_GROUP_##NAME(G)
#define SP__BLOCK_RULES(NAME, R) SP_RULES_##NAME(R)

/* Every row, every group, every rule. */
#define SP__ALL_SETTINGS(X) SP__SETTING_BLOCKS(SP__BLOCK_ROWS, X)
#define SP__ALL_GROUPS(G) SP__SETTING_BLOCKS(SP__BLOCK_GROUP, G)
#define SP__ALL_RULES(R) SP__SETTING_BLOCKS(SP__BLOCK_RULES, R)

/* Setting numbers: SP__SET_<name>. */
enum sp__setting_index {
#define SP__SETTING_ENUM(num, n, ...) SP__SET_##n = (num),
  SP__ALL_SETTINGS(SP__SETTING_ENUM)
#undef SP__SETTING_ENUM
};
#define SP__SETTING_ONE(...) +1
enum { SP__NSETTINGS = 0 SP__ALL_SETTINGS(SP__SETTING_ONE) };
/* Each number is below the count (options.c's designated initialisers,
 * with -Werror=override-init, catch a number given twice). */
#define SP__SETTING_RANGE(num, n, ...) _Static_assert((num) >= 0 && (num) < SP__NSETTINGS, "setting " #n ": its number must be below the number of settings");
SP__ALL_SETTINGS(SP__SETTING_RANGE)
#undef SP__SETTING_RANGE

/* Group numbers SP__GROUP_<group>, and whether each is spelled. */
enum sp__group_index {
#define SP__GROUP_ENUM(g, ...) SP__GROUP_##g,
  SP__ALL_GROUPS(SP__GROUP_ENUM)
#undef SP__GROUP_ENUM
  SP__NGROUPS
};
enum {
#define SP__GROUP_SPELLED(g, spelled, ...) SP__GROUP_SPELLED_##g = (spelled),
  SP__ALL_GROUPS(SP__GROUP_SPELLED)
#undef SP__GROUP_SPELLED
};

/* How many rules. */
#define SP__RULE_ONE(...) +1
enum { SP__NRULES = 0 SP__ALL_RULES(SP__RULE_ONE) };

/* The C enum of every ENUM setting: enum sp__<name>. */
#define SP__ENUMERATOR(e, word) e,
#define SP__ENUM_DECL_BOOL(n)
#define SP__ENUM_DECL_INT(n)
#define SP__ENUM_DECL_STR(n)
#define SP__ENUM_DECL_LIST(n)
#define SP__ENUM_DECL_ENUM(n) enum sp__##n { SP__CHOICES_##n(SP__ENUMERATOR) };
#define SP__ENUM_DECL(num, n, g, f, T, ...) SP__ENUM_DECL_##T(n)
SP__ALL_SETTINGS(SP__ENUM_DECL)
#undef SP__ENUM_DECL

#endif
