/* config_docs.c - the settings reference generated from the settings table
 * (settings_table.h): the list printed by `scope-profiler config --help` and
 * the whole of docs/configuration.md (`scope-profiler config docs`), both
 * grouped as the table is, with the rules between settings expanded from the
 * table's rules.
 *
 * The prose around the table lives here too, so that the checked-in document
 * is exactly this function's output and a CTest test can fail when the two
 * differ. Change the text here, then regenerate:
 *   scope-profiler config docs > docs/configuration.md
 */
#include <stdlib.h>
#include <string.h>

#include "config/config_buf.h"
#include "config/settings_meta.h"

/* How --help marks a setting whose feature this build lacks. */
#define UNAVAILABLE "(Not available in this build: setup warns and ignores it.)"
#define UNAVAILABLE_REBUILD "(Not available in this build: setup warns and ignores it; rebuild with %s.)"

/* The docs say the same in every build: a planned row is marked, a row a
 * build switch brings names the switch, whatever this build did. */
static void md_availability(sp__buf *b, const struct sp__setting *s) {
  if (s->build)
    sp__buf_printf(b, "*(Built with %s; a build without it warns at setup and ignores the setting.)* ",
                   s->build);
  else if (s->status == SP__SS_PLANNED)
    sp__buf_puts(b, "**(Not implemented yet: setup warns and ignores it.)** ");
  else if (s->status == SP__SS_UNBUILT)
    sp__buf_puts(b, "**(Left out of every build: setup warns and ignores it.)** ");
}

/* "integer 0-22", "integer >= 1", "one of none, auto, ...". */
static void describe_type(sp__buf *b, const struct sp__setting *s, int markdown) {
  switch (s->type) {
  case SP__ST_BOOL:
    sp__buf_puts(b, "boolean");
    return;
  case SP__ST_INT:
    if (s->hi >= INT64_C(1) << 31)
      sp__buf_printf(b, "integer >= %lld", (long long)s->lo);
    else
      sp__buf_printf(b, "integer %lld-%lld", (long long)s->lo, (long long)s->hi);
    return;
  case SP__ST_STR:
    sp__buf_puts(b, "string");
    return;
  case SP__ST_ENUM:
    sp__buf_puts(b, "one of ");
    for (int k = 0; k < s->nchoices; k++)
      sp__buf_printf(b, "%s%s%s%s", k ? ", " : "", markdown ? "`" : "", s->choices[k],
                     markdown ? "`" : "");
    return;
  case SP__ST_LIST:
    sp__buf_puts(b, "list of strings");
    return;
  }
}

static void describe_default(sp__buf *b, const struct sp__setting *s, int markdown) {
  const char *q = markdown ? "`" : "";
  switch (s->type) {
  case SP__ST_BOOL:
    sp__buf_printf(b, "%s%s%s", q, s->idef ? "true" : "false", q);
    return;
  case SP__ST_INT:
    if (s->idef == SP_INT_NONE)
      sp__buf_puts(b, "unset");
    else
      sp__buf_printf(b, "%s%lld%s", q, (long long)s->idef, q);
    return;
  case SP__ST_ENUM:
    sp__buf_printf(b, "%s\"%s\"%s", q, s->choices[s->idef], q);
    return;
  case SP__ST_STR:
    if (s->sdef)
      sp__buf_printf(b, "%s\"%s\"%s", q, s->sdef, q);
    else
      sp__buf_puts(b, "unset");
    return;
  case SP__ST_LIST:
    if (s->sdef && *s->sdef)
      sp__buf_printf(b, "%s%s%s", q, s->sdef, q);
    else
      sp__buf_puts(b, "empty");
    return;
  }
}

char *sp__rule_text(const struct sp__rule *r, int markdown) {
  sp__buf b = SP__BUF_INIT;
  const char *q = markdown ? "`" : "";
  const char *an = sp__settings[r->a].name, *bn = sp__settings[r->b].name;
  switch (r->kind) {
  case SP__RULE_CONFLICTS:
    sp__buf_printf(&b, "%s%s%s cannot be combined with %s%s%s: %s", q, an, q, q, bn, q, r->why);
    break;
  case SP__RULE_REQUIRES:
    sp__buf_printf(&b, "%s%s%s requires %s%s%s: %s", q, an, q, q, bn, q, r->why);
    break;
  case SP__RULE_IMPLIES:
    sp__buf_printf(&b, "%s%s%s implies %s%s%s: %s", q, an, q, q, bn, q, r->why);
    break;
  case SP__RULE_RANGE: {
    const char *w = sp__enum_word((size_t)r->b, r->choice);
    if (r->lo > r->hi)
      sp__buf_printf(&b, "with %s%s = \"%s\"%s, %s%s%s must be unset: %s", q, bn, w, q, q, an, q, r->why);
    else
      sp__buf_printf(&b, "with %s%s = \"%s\"%s, %s%s%s must be %lld-%lld: %s", q, bn, w, q, q, an, q,
                     (long long)r->lo, (long long)r->hi, r->why);
    break;
  }
  }
  if (markdown)
    sp__buf_puts(&b, r->kind == SP__RULE_IMPLIES ? "." : r->kind == SP__RULE_RANGE ? " (`SP_ERR_INVALID_VALUE`)."
                                                                                   : " (`SP_ERR_CONFLICT`).");
  return sp__buf_take(&b);
}

char *sp__config_help_text(void) {
  sp__buf b = SP__BUF_INIT;
  sp__buf_printf(&b, "settings (%d): flat name [group spelling], type, default; environment "
                 "variable SCOPE_PROFILER_<NAME>\n", (int)SP__NSETTINGS);
  for (int g = 0; g < SP__NGROUPS; g++) {
    sp__buf_printf(&b, "\n%s (%s):\n", sp__groups[g].title, sp__groups[g].name);
    for (size_t i = 0; i < SP__NSETTINGS; i++) {
      const struct sp__setting *s = &sp__settings[i];
      if (s->group != g) continue;
      sp__buf_printf(&b, "  %s", s->name);
      if (s->dotted) sp__buf_printf(&b, " [%s]", s->dotted);
      sp__buf_puts(&b, ": ");
      describe_type(&b, s, 0);
      sp__buf_puts(&b, "; default ");
      describe_default(&b, s, 0);
      sp__buf_puts(&b, "\n      ");
      if (sp__setting_status(i) == SP__SS_UNBUILT && s->build)
        sp__buf_printf(&b, UNAVAILABLE_REBUILD " ", s->build);
      else if (sp__setting_status(i) != SP__SS_READY)
        sp__buf_puts(&b, UNAVAILABLE " ");
      sp__buf_printf(&b, "%s\n", s->doc);
    }
  }
  sp__buf_puts(&b, "\nrules between settings:\n");
  for (size_t k = 0; k < sp__nrules; k++) {
    char *t = sp__rule_text(&sp__rules[k], 0);
    sp__buf_printf(&b, "  - %s\n", t ? t : "?");
    free(t);
  }
  return sp__buf_take(&b);
}

/* Table cells cannot hold a bare '|', and outside `code` a <word> would be
 * read as an HTML tag. */
static void md_cell(sp__buf *b, const char *text) {
  int code = 0;
  for (const char *p = text; *p; p++) {
    if (*p == '`') code = !code;
    if (*p == '|') sp__buf_putc(b, '\\');
    if (!code && *p == '<')
      sp__buf_puts(b, "&lt;");
    else if (!code && *p == '>')
      sp__buf_puts(b, "&gt;");
    else
      sp__buf_putc(b, *p);
  }
}

static const char md_head[] =
    "<!-- Generated by `scope-profiler config docs` from the settings table\n"
    "     (src/config/settings_table.h and the blocks it includes, e.g. src/output/hdf5_settings.h).\n"
    "     Do not edit by hand: change the table (or src/config/config_docs.c) and run\n"
    "     `scope-profiler config docs > docs/configuration.md`. A test fails when they differ. -->\n"
    "# Configuration\n"
    "\n"
    "scope-profiler has ";
static const char *const md_intro[] = {
    " settings. Each one can come from a TOML file, an `sp_options`\n"
    "struct, an environment variable or a per-call override; the table at the end lists\n"
    "them all with their types, defaults and allowed values. `scope-profiler config show`\n"
    "prints the value every setting resolves to and where it came from, and\n"
    "`scope-profiler config check FILE.toml` validates a file.\n"
    "\n"
    "## Where settings come from\n"
    "\n"
    "Every setting is resolved on its own, from the highest source below that sets it\n"
    "(lowest precedence first):\n"
    "\n"
    "1. **built-in default** (the table below);\n"
    "2. **TOML file**: `sp_setup_args.config_path`, or the file named by\n"
    "   `SCOPE_PROFILER_CONFIG` when `config_path` is NULL;\n"
    "3. **options**: the `sp_options` struct in `sp_setup_args.options`;\n"
    "4. **environment**: `SCOPE_PROFILER_<NAME>`, the flat name in upper case\n"
    "   (`SCOPE_PROFILER_FILE_PATH`, `SCOPE_PROFILER_HDF5_COMPRESSION`);\n"
    "5. **overrides**: `sp_setup_args.overrides`, a NULL-terminated list of `\"key=value\"`\n"
    "   strings.\n"
    "\n"
    "So built-in default < TOML file < options < environment < overrides. The one exception\n"
    "is `SCOPE_PROFILER_ENABLE_TAGS`: its tags are *added* to the `enable_tags` that the\n"
    "other sources resolve to, never replacing them.\n"
    "\n"
    "```c\n"
    "sp_options o = SP_OPTIONS_INIT;\n"
    "o.file_path = \"run.h5\";\n"
    "o.hdf5.compression = \"gzip\";                            /* group spelling */\n"
    "sp_options_set(&o, \"hdf5_compression_level\", \"4\");      /* flat spelling, parsed */\n"
    "const char *overrides[] = {\"label=baseline\", NULL};\n"
    "sp_setup_args args = {.options = &o, .config_path = \"profiling.toml\",\n"
    "                      .overrides = overrides};\n"
    "sp_status st = sp_setup(&args);   /* on error, sp_last_error() says what and how to fix */\n"
    "sp_options_clear(&o);             /* frees the text sp_options_set() copied */\n"
    "```\n"
    "\n"
    "`sp_options` has a field for each of the settings it had when its layout was frozen\n"
    "(the table's column *Field*), so programs built against an older header keep working\n"
    "with a newer library; every setting, including the later ones (such as `quiet`), can be\n"
    "set by key with `sp_options_set()` and read back with `sp_options_get()`. Always start\n"
    "from `SP_OPTIONS_INIT`: it records the struct's size, and options that lack it are refused\n"
    "(`SP_ERR_INVALID_ARGUMENT`) rather than misread. Programs and bindings read the whole\n"
    "table (names, groups, types, defaults, bounds, choices, docs, environment names, status,\n"
    "rules) through `scope_profiler/settings.h`: `sp_setting_info_at()`, `sp_setting_find()`,\n"
    "`sp_setting_check()`, `sp_setting_group_at()`, `sp_setting_rule_at()`.\n"
    "\n"
    "The resolved values are stored in every output file as the `settings` metadata\n"
    "attribute: one JSON object holding every setting (lists as arrays, unset values as\n"
    "`null`).\n"
    "\n",
    "## Two spellings, one setting\n"
    "\n"
    "Every setting has a flat name (`hdf5_compression`). The settings of the `memray`,\n"
    "`gpu` and `hdf5` groups also have a group spelling (`hdf5.compression`): a field of\n"
    "`sp_options.hdf5`, a key of `[profiling.hdf5]`, or the key `hdf5.compression` for\n"
    "`sp_options_set()` and overrides. Both spellings mean the same setting. Giving one\n"
    "setting both ways in the same source (the same options struct, file or override list)\n"
    "is an error, `SP_ERR_CONFLICT` (\"use_memray and memray.enabled are both set; keep\n"
    "one\"), never a silent choice. Between different sources the precedence above\n"
    "decides.\n"
    "\n",
    "## Values\n"
    "\n"
    "| Type | In TOML | As text (`sp_options_set`, environment, overrides) |\n"
    "|---|---|---|\n"
    "| boolean | `true`, `false` | `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`, any case |\n"
    "| integer | an integer | decimal, `1_000_000`, `0x400`, `0o17`, `0b101`, with an optional sign |\n"
    "| string | a string | the text as given |\n"
    "| one of ... | a string | one of the listed values, in lowercase |\n"
    "| list of strings | an array of strings, or one comma-separated string | comma-separated |\n"
    "\n"
    "Blanks around list items are dropped, and so are repeated items. An empty string is an\n"
    "empty list, which replaces a list from a lower source (in a file, the options or the\n"
    "overrides; an empty environment variable counts as unset). In `sp_options`, booleans\n"
    "are `SP_UNSET`/0/1, unset integers are `SP_INT_NONE` and unset strings and lists are\n"
    "NULL.\n"
    "\n",
    "## Environment variables\n"
    "\n"
    "| Variable | Meaning |\n"
    "|---|---|\n"
    "| `SCOPE_PROFILER_CONFIG` | TOML file read when `config_path` is NULL |\n"
    "| `SCOPE_PROFILER_<NAME>` | the setting `<name>`, one variable per setting, e.g. `SCOPE_PROFILER_AGGREGATION_MODE=1` |\n"
    "| `SCOPE_PROFILER_ENABLE_TAGS` | comma-separated tags added to `enable_tags` |\n"
    "| `SCOPE_PROFILER_MPI` | `0` or `1`: whether to use MPI, overriding launcher detection (read by the MPI layer; not a setting) |\n"
    "| `SCOPE_PROFILER_CUDA_LIBRARY` | the CUDA driver library GPU timing loads instead of `libcuda.so.1` (a name or a path; not a setting, see docs/gpu.md) |\n"
    "\n"
    "A variable that is set but empty counts as unset. A variable with an invalid value is an\n"
    "error naming the variable. Any other `SCOPE_PROFILER_*` variable is ignored, because\n"
    "environments carry leftovers from other versions and tools; `scope-profiler config\n"
    "show` lists such variables on stderr, with the closest real name.\n"
    "\n",
    "## TOML files\n"
    "\n"
    "Settings go in a `[profiling]` table, written flat:\n"
    "\n"
    "```toml\n"
    "[profiling]\n"
    "file_path = \"run.h5\"\n"
    "label = \"baseline\"\n"
    "perf_events = [\"cycles\", \"instructions\"]\n"
    "hdf5_compression = \"gzip\"\n"
    "hdf5_compression_level = 4\n"
    "```\n"
    "\n"
    "or grouped; these three files all mean the same as the one above:\n"
    "\n"
    "```toml\n"
    "[profiling]\n"
    "file_path = \"run.h5\"\n"
    "label = \"baseline\"\n"
    "perf_events = \"cycles,instructions\"\n"
    "\n"
    "[profiling.hdf5]\n"
    "compression = \"gzip\"\n"
    "compression_level = 4\n"
    "```\n"
    "\n"
    "```toml\n"
    "[profiling]\n"
    "file_path = \"run.h5\"\n"
    "label = \"baseline\"\n"
    "perf_events = [\"cycles\", \"instructions\"]\n"
    "hdf5.compression = \"gzip\"\n"
    "hdf5.compression_level = 4\n"
    "```\n"
    "\n"
    "```toml\n"
    "# a small file may leave out [profiling]: its top level is then the profiling table\n"
    "file_path = \"run.h5\"\n"
    "label = \"baseline\"\n"
    "perf_events = [\"cycles\", \"instructions\"]\n"
    "hdf5 = {compression = \"gzip\", compression_level = 4}\n"
    "```\n"
    "\n"
    "- When the file has a `[profiling]` table, other top-level tables are ignored (the file\n"
    "  may be shared with other tools), but a setting written at the top level next to it is\n"
    "  an error, since it would otherwise be silently ignored.\n"
    "- A key that is not a setting is an error that names the closest real setting.\n"
    "- Relative paths in the file are relative to the working directory of the profiled\n"
    "  program, like paths given any other way, not to the file's directory.\n"
    "- The reader implements TOML 1.0 except offset/local date-times, dates, times and\n"
    "  arrays of tables (`[[x]]`), which are reported as errors.\n"
    "- Every error names the file, line and column: `run.toml:3:20: hdf5_compression must be\n"
    "  one of: none, auto, gzip, lzf, zstd; got \"bzip2\"`.\n"
    "\n",
    "## Rules between settings\n"
    "\n"
    "Checked after the sources are merged; the messages say which source set each value.\n"
    "A setting is *on* when it is true, set, non-empty, or (an enumeration) other than its\n"
    "default. These come from the rules table (`SP_RULES_<BLOCK>` beside each block of\n"
    "settings; `sp_setting_rule_at()` gives them to programs):\n"
    "\n",
};

/* After the rules table's bullets. */
static const char *const md_after_rules[] = {
    "\n"
    "And, checked by the code that owns them:\n"
    "\n"
    "- `hdf5_compression = \"none\"` means the same as leaving it unset.\n"
    "- `memory_profile_path` is the capture path only while `use_memray` is on; it defaults\n"
    "  to the output file's path with its suffix replaced by `.memray.bin`.\n"
    "- Post-processing names the run by `label`, or by the output file's stem when there is\n"
    "  no label.\n"
    "- `file_path` must not be empty, and unless nothing is written (`deactivate_profiling`,\n"
    "  `deactivate_file_output`) its directory must exist and be writable and the path must\n"
    "  not be a directory (`SP_ERR_IO`, at setup).\n"
    "- `signals` may name only SIGTERM, SIGINT, SIGXCPU, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT,\n"
    "  SIGALRM, SIGPIPE, SIGXFSZ and SIGVTALRM, with or without the `SIG` prefix\n"
    "  (`SP_ERR_INVALID_VALUE`).\n"
    "\n",
    "## What setup says\n"
    "\n"
    "The library prints only at setup, one line on stderr for each of two things:\n"
    "\n"
    "- **A setup that fails** (a bad value in the environment, the TOML file or the options, a\n"
    "  broken rule between settings, an output directory that does not exist or cannot be\n"
    "  written, `file_path` naming a directory) prints\n"
    "  `scope-profiler: error: setup failed, so this run records nothing: <what and how to fix>`\n"
    "  and returns the error, so a program that never looks at setup's status (like the\n"
    "  README's) still tells its user why no profile appeared. The program itself runs on.\n"
    "- **A setting this build cannot honour** (one whose feature a build switch left out,\n"
    "  marked *Built with ...* in the tables below with the switch that brings it; `scope-profiler\n"
    "  config --help` marks what the build at hand lacks), when it is set to anything but its\n"
    "  default, prints one warning naming it, its value and where it was set, once per process\n"
    "  and only on rank 0 of a launched job: `scope-profiler: warning: use_nvtx = true (set by\n"
    "  SCOPE_PROFILER_USE_NVTX) is not available in this build (left out when it was built:\n"
    "  rebuild with SP_WITH_NVTX=ON and the NVTX3 headers of the CUDA toolkit) and has no\n"
    "  effect; ...` (\"not implemented yet\" for a planned feature). The run is recorded as\n"
    "  usual.\n"
    "\n"
    "Under a launcher (Open MPI, MPICH/Hydra, MVAPICH, PMIx) the line names the rank:\n"
    "`scope-profiler (rank 3): error: ...`. `quiet = true` (`SCOPE_PROFILER_QUIET=1`) silences\n"
    "both; it is honoured even when the setup fails elsewhere. A program with a log of its own\n"
    "can take the lines instead with `sp_set_message_handler()`.\n"
    "\n"
    "`scope-profiler config check FILE.toml` makes exactly the checks setup makes (with the\n"
    "environment ignored), including the output directory as seen from where it runs, and\n"
    "prints the same warnings on stderr.\n"
    "\n",
    "## Settings\n"
    "\n"
    "Each part of the library declares its settings beside its code (a block of the settings\n"
    "table), in one of these groups. The groups `memray`, `gpu` and `hdf5` also spell their\n"
    "settings `group.field`.\n",
};

char *sp__config_markdown(void) {
  sp__buf b = SP__BUF_INIT;
  sp__buf_puts(&b, md_head);
  sp__buf_printf(&b, "%d", (int)SP__NSETTINGS);
  for (size_t i = 0; i < sizeof md_intro / sizeof md_intro[0]; i++) sp__buf_puts(&b, md_intro[i]);
  for (size_t k = 0; k < sp__nrules; k++) {
    char *t = sp__rule_text(&sp__rules[k], 1);
    sp__buf_puts(&b, "- ");
    if (t) md_cell(&b, t); /* the why may hold a <word> */
    sp__buf_putc(&b, '\n');
    free(t);
  }
  for (size_t i = 0; i < sizeof md_after_rules / sizeof md_after_rules[0]; i++)
    sp__buf_puts(&b, md_after_rules[i]);
  for (int g = 0; g < SP__NGROUPS; g++) {
    sp__buf_printf(&b, "\n### %s (`%s`)\n\n", sp__groups[g].title, sp__groups[g].name);
    md_cell(&b, sp__groups[g].doc);
    sp__buf_puts(&b, "\n\n| Setting | Group spelling | Type and allowed values | Default | Field | Description |\n"
                     "|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < SP__NSETTINGS; i++) {
      const struct sp__setting *s = &sp__settings[i];
      if (s->group != g) continue;
      sp__buf_printf(&b, "| `%s` | ", s->name);
      if (s->dotted)
        sp__buf_printf(&b, "`%s`", s->dotted);
      else
        sp__buf_puts(&b, "-");
      sp__buf_puts(&b, " | ");
      describe_type(&b, s, 1);
      sp__buf_puts(&b, " | ");
      describe_default(&b, s, 1);
      sp__buf_puts(&b, sp__options_has_field(i, 0) ? " | yes | " : " | - | ");
      md_availability(&b, s);
      md_cell(&b, s->doc);
      sp__buf_puts(&b, " |\n");
    }
  }
  return sp__buf_take(&b);
}
