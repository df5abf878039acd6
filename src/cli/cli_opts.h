/* cli_opts.h - a command's options as one table, the way the settings table
 * describes the library's settings: each row names an option, its kind, where
 * its value goes in the command's options struct, its default, its bounds or
 * choices and its help. From that one row come the --help text, the parsing
 * (argparse's conventions: --opt VALUE, --opt=VALUE, -o VALUE, list options
 * taking every following non-option argument, "--" ending options), the
 * validation with its error message, and the default.
 *
 * A command declares (rows with no designated field need one, `.help =`, to
 * keep -Wmissing-field-initializers quiet)
 *
 *   struct opts { struct sp_cli_strs files, include, exclude, ranks; long width; int quiet; };
 *   static const struct sp_cli_opt rows[] = {
 *     SP_CLI_OPT_FILTERS(struct opts, "ranks to show, e.g. 0,2,4-7 (default: all)"),
 *     {"--width", NULL, "PX", SP_OPT_INT, offsetof(struct opts, width),
 *      "chart width in pixels, {range} (default {default})", .def = "1200", .lo = 600, .hi = 8000},
 *     {"--quiet", "-q", NULL, SP_OPT_FLAG, offsetof(struct opts, quiet), .help = "no summary line"},
 *   };
 *   static const struct sp_cli_spec spec = {"report", "FILE... -o DIR [options]", about,
 *     rows, SP_CLI_NROWS(rows), offsetof(struct opts, files), "no FILE given", epilog};
 *
 * and calls sp_cli_parse(&spec, argc, argv, &o): 0 to go on, SP_CLI_HELP when
 * --help was printed (exit 0), 2 after a usage error was printed. Checks that
 * involve several options or the positional arguments stay in the command.
 */
#ifndef SP_CLI_OPTS_H
#define SP_CLI_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "cli/cli_util.h"

enum sp_opt_kind {
  SP_OPT_FLAG,    /* int: 1 when given */
  SP_OPT_STR,     /* const char *: the argument (NULL when not given and no default) */
  SP_OPT_INT,     /* long, within [lo, hi] */
  SP_OPT_NUM,     /* double, >= lo (and <= hi when hi > lo) */
  SP_OPT_CHOICE,  /* int: index in choices; -1 when not given and no default */
  SP_OPT_LIST,    /* struct sp_cli_strs: one or more following arguments */
  SP_OPT_CHOICES  /* struct sp_cli_choices: one or more choices, words or comma-separated */
};

/* sp_cli_parse() returns this after printing --help (the command exits 0). */
#define SP_CLI_HELP 3

#define SP_OPT_HIDDEN 1u /* accepted but not listed in --help (an old spelling) */
#define SP_OPT_UNIQUE 2u /* SP_OPT_CHOICES: a repeated choice is kept once */

#define SP_CLI_MAX_CHOICES 32
struct sp_cli_choices {
  int v[SP_CLI_MAX_CHOICES]; /* indexes into the row's choices, in the order given */
  size_t n;
};

struct sp_cli_opt {
  const char *name;             /* "--width" */
  const char *alias;            /* "-w", or NULL */
  const char *metavar;          /* "PX"; NULL for flags */
  enum sp_opt_kind kind;
  size_t off;                   /* offsetof() the field in the command's struct */
  /* Help text, wrapped at 79 columns; "{default}", "{range}" (lo-hi) and
   * "{choices}" ("a (default), b or c") are filled in from the row. */
  const char *help;
  const char *const *choices;   /* CHOICE, CHOICES: NULL-terminated */
  const char *def;              /* default, as it would be written on the command line */
  double lo, hi;                /* INT, NUM bounds */
  /* What error messages call the value: "unknown <what> 'x'" (CHOICE,
   * CHOICES; default: the option's name), "<name> must be <what> from lo to
   * hi" (INT; default "a number"), "<name> needs <what>" (NUM; default "a
   * number"). */
  const char *what;
  const char *required;         /* non-NULL: the option must be given; why, for the error */
  unsigned flags;
};

struct sp_cli_spec {
  const char *name;             /* the command: "report" */
  const char *usage;            /* after "usage: scope-profiler <name> " */
  const char *about;            /* text between the usage line and "options:" */
  const struct sp_cli_opt *rows;
  size_t nrows;
  size_t pos_off;               /* the struct sp_cli_strs positional arguments go to */
  const char *no_positional;    /* error when none is given (NULL: none needed) */
  const char *epilog;           /* text after the options (notes, examples, exit status) */
};

#define SP_CLI_NROWS(rows) (sizeof(rows) / sizeof((rows)[0]))

/* The filter options every read-side command has. */
#define SP_CLI_OPT_FILTERS_HELP(type, inc_help, exc_help, ranks_help)                           \
  {"--include", "-i", "RE...", SP_OPT_LIST, offsetof(type, include), .help = inc_help},   \
      {"--exclude", "-e", "RE...", SP_OPT_LIST, offsetof(type, exclude), .help = exc_help}, \
      {"--ranks", "-r", "SPEC...", SP_OPT_LIST, offsetof(type, ranks), .help = ranks_help}
#define SP_CLI_OPT_FILTERS(type, ranks_help)                                             \
  SP_CLI_OPT_FILTERS_HELP(type, "keep regions whose name matches RE at its start",       \
                          "drop regions whose name matches RE at its start", ranks_help)

/* Defaults first, then argv[1..]; see the top of this file for the result. */
int sp_cli_parse(const struct sp_cli_spec *spec, int argc, char **argv, void *opts);
/* The --help text. */
void sp_cli_help(const struct sp_cli_spec *spec, FILE *out);
/* Free what parsing allocated (lists, positionals). */
void sp_cli_opts_free(const struct sp_cli_spec *spec, void *opts);
/* The row of option `name`; NULL when the spec has none (a programming error). */
const struct sp_cli_opt *sp_cli_row(const struct sp_cli_spec *spec, const char *name);
/* "a, b, c or d" from a row's choices into buf. */
void sp_cli_choice_list(const struct sp_cli_opt *row, char *buf, size_t size);

#endif
