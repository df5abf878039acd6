/* cmd_config.c - `scope-profiler config`: check a TOML settings file, show
 * the configuration a run would get, and print the settings reference
 * (--help) or docs/configuration.md (docs), all generated from the settings
 * table.
 *
 *   config check FILE.toml   exit 0 and "FILE.toml: valid", or exit 2 with
 *                            the precise error (file:line:column) on stderr;
 *                            the file is judged alone, without environment,
 *                            by exactly the checks setup makes (values, the
 *                            rules between them, the output directory), and
 *                            what setup would warn about is said on stderr
 *   config show [FILE.toml]  every resolved setting (defaults < FILE <
 *                            environment) as `name = value  (origin)`
 *   config docs              docs/configuration.md
 *
 * The arguments go through the CLI options table (cli/cli_opts.h) like every
 * command's; the settings reference is the --help epilog.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_opts.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/error.h"
#include "config/config_buf.h"
#include "config/config_internal.h"
#include "config/settings_meta.h"

extern char **environ;

#define CMD "config"

static const char about[] =
    "Check a settings file, show the configuration a run would get, or print the\n"
    "settings reference. VERB is one of:\n"
    "  check FILE.toml   validate a settings file on its own (environment ignored) with the\n"
    "                    checks setup makes, including that file_path can be written from\n"
    "                    here; prints \"FILE.toml: valid\" (and on stderr what setup would\n"
    "                    warn about), or the error with file:line:column and exits 2\n"
    "  show [FILE.toml]  print every setting as it would resolve (defaults < FILE, else\n"
    "                    $SCOPE_PROFILER_CONFIG < environment) and where it came from\n"
    "  docs              print docs/configuration.md, generated from the settings table\n";

static const char epilog_head[] =
    "Precedence, lowest first: built-in default < TOML file < sp_options < environment\n"
    "(SCOPE_PROFILER_<NAME>) < per-call overrides. SCOPE_PROFILER_ENABLE_TAGS adds to\n"
    "enable_tags instead of replacing it.\n"
    "\n";

static const char epilog_tail[] = "\nexit status: 0 success, 2 usage error or invalid settings.\n";

#define VERB_LIST "check, show or docs"

struct opts {
  struct sp_cli_strs pos;
};

/* No options but --help; the settings reference (generated from the table)
 * is the epilog. */
static int parse(int argc, char **argv, struct opts *o) {
  struct sp_cli_spec spec = {CMD, "VERB [FILE.toml]", about, NULL, 0, offsetof(struct opts, pos),
                             "no VERB given; use " VERB_LIST, NULL};
  char *table = sp__config_help_text();
  sp__buf e = SP__BUF_INIT;
  sp__buf_puts(&e, epilog_head);
  if (table) sp__buf_puts(&e, table);
  sp__buf_puts(&e, epilog_tail);
  free(table);
  char *epilog = sp__buf_take(&e);
  spec.epilog = epilog;
  int rc = sp_cli_parse(&spec, argc, argv, o);
  free(epilog);
  return rc;
}

/* The message, led by the file's name when it does not already name it. */
static void report(const char *path) {
  const char *msg = sp_last_error();
  if (path && !strstr(msg, path))
    fprintf(stderr, "%s: %s\n", path, msg);
  else
    fprintf(stderr, "%s\n", msg);
}

static int cmd_check(const struct sp_cli_strs *pos) {
  if (pos->n != 2) return sp_cli_usage_error(CMD, "check takes exactly one FILE.toml");
  sp_setup_args args = {0};
  args.config_path = pos->v[1];
  struct sp_config c;
  if (sp__config_for_setup(&c, &args, SP__RESOLVE_NO_ENV) != SP_OK) {
    report(pos->v[1]);
    return 2;
  }
  /* What setup would warn about, said here too (on stderr: stdout stays
   * the one-line verdict). */
  sp__config_warn_unavailable(&c);
  sp__config_free(&c);
  printf("%s: valid\n", pos->v[1]);
  return 0;
}

/* A resolved value as TOML would write it; "(unset)" for none. */
static void render(sp__buf *b, const struct sp_config *c, size_t i) {
  const struct sp__setting *s = &sp__settings[i];
  const void *f = (const char *)c + s->cfg_off;
  switch (s->type) {
  case SP__ST_BOOL:
    sp__buf_puts(b, *(const int *)f ? "true" : "false");
    return;
  case SP__ST_INT:
    if (*(const int64_t *)f == SP_INT_NONE)
      sp__buf_puts(b, "(unset)");
    else
      sp__buf_printf(b, "%lld", (long long)*(const int64_t *)f);
    return;
  case SP__ST_ENUM:
    sp__buf_json_string(b, c->text[i], strlen(c->text[i]));
    return;
  case SP__ST_STR: {
    const char *p = *(char *const *)f;
    if (p)
      sp__buf_json_string(b, p, strlen(p));
    else
      sp__buf_puts(b, "(unset)");
    return;
  }
  case SP__ST_LIST: {
    char **l = *(char **const *)f;
    sp__buf_putc(b, '[');
    for (size_t k = 0; l && l[k]; k++) {
      if (k) sp__buf_puts(b, ", ");
      sp__buf_json_string(b, l[k], strlen(l[k]));
    }
    sp__buf_putc(b, ']');
    return;
  }
  }
}

/* The setting an IMPLIES rule turned setting i on from, or NULL: i took
 * its origin, and the origin says where the user set the other one. */
static const char *implied_by(const struct sp_config *c, size_t i) {
  for (size_t k = 0; k < sp__nrules; k++) {
    const struct sp__rule *r = &sp__rules[k];
    if (r->kind == SP__RULE_IMPLIES && (size_t)r->b == i && sp__config_is_on(c, (size_t)r->a) &&
        c->origin[i] == c->origin[r->a] && c->origin[i] != SP_ORIGIN_DEFAULT)
      return sp__settings[r->a].name;
  }
  return NULL;
}

/* Unknown SCOPE_PROFILER_* variables are ignored by the library; `show` is
 * where a user looks when a variable seems to have no effect. */
static void note_unknown_env(void) {
  size_t pre = strlen(SP__ENV_PREFIX);
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, SP__ENV_PREFIX, pre) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t n = eq ? (size_t)(eq - *e) - pre : strlen(*e) - pre;
    char name[128];
    if (n >= sizeof name) n = sizeof name - 1;
    for (size_t k = 0; k < n; k++) {
      char ch = (*e)[pre + k];
      name[k] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    name[n] = '\0';
    if (!strcmp(name, "config") || !strcmp(name, "mpi") || !strcmp(name, "cuda_library")) continue;
    int grouped;
    const struct sp__setting *s = sp__setting_find(name, &grouped);
    if (s && !grouped) continue;
    size_t dist;
    const struct sp__setting *best = sp__setting_closest(name, &dist);
    char env[64] = "";
    /* the same "close enough to be a typo" rule as unknown settings */
    if (best && dist <= (n / 3 > 2 ? n / 3 : 2)) sp__setting_env_name(best, env, sizeof env);
    fprintf(stderr, "note: %.*s is not a scope-profiler setting and is ignored%s%s%s\n",
            (int)(n + pre), *e, *env ? " (did you mean " : "", env, *env ? "?)" : "");
  }
}

static int cmd_show(const struct sp_cli_strs *pos) {
  if (pos->n > 2) return sp_cli_usage_error(CMD, "show takes at most one FILE.toml");
  sp_setup_args args = {0};
  args.config_path = pos->n == 2 ? pos->v[1] : NULL;
  struct sp_config c;
  if (sp__config_resolve(&c, &args) != SP_OK) {
    report(args.config_path);
    return 2;
  }
  const char *path = args.config_path ? args.config_path : getenv(SP__ENV_PREFIX "CONFIG");
  char *vals[SP__NSETTINGS];
  size_t wname = 0, wval = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    sp__buf b = SP__BUF_INIT;
    render(&b, &c, i);
    vals[i] = sp__buf_take(&b);
    size_t ln = strlen(sp__settings[i].name), lv = vals[i] ? strlen(vals[i]) : 0;
    if (ln > wname) wname = ln;
    if (lv > wval && lv <= 40) wval = lv;
  }
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const char *v = vals[i] ? vals[i] : "?";
    size_t lv = strlen(v);
    printf("%-*s = %s%*s  (", (int)wname, sp__settings[i].name, v,
           (int)(lv < wval ? wval - lv : 0), "");
    const char *by = implied_by(&c, i);
    if (by) {
      printf("implied by %s)\n", by);
      free(vals[i]);
      continue;
    }
    switch (c.origin[i]) {
    case SP_ORIGIN_FILE:
      printf("file %s)\n", path ? path : "");
      break;
    case SP_ORIGIN_ENV: {
      char env[64];
      sp__setting_env_name(&sp__settings[i], env, sizeof env);
      printf("environment %s)\n", env);
      break;
    }
    default:
      printf("%s)\n", sp__origin_name(c.origin[i]));
      break;
    }
    free(vals[i]);
  }
  sp__config_free(&c);
  note_unknown_env();
  return 0;
}

static int cmd_docs(const struct sp_cli_strs *pos) {
  if (pos->n != 1) return sp_cli_usage_error(CMD, "docs takes no FILE");
  char *md = sp__config_markdown();
  if (!md) return sp_cli_error(CMD, "out of memory");
  fputs(md, stdout);
  free(md);
  return 0;
}

int sp_cmd_config(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  int rc = parse(argc, argv, &o);
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
  } else if (!strcmp(o.pos.v[0], "check")) {
    rc = cmd_check(&o.pos);
  } else if (!strcmp(o.pos.v[0], "show")) {
    rc = cmd_show(&o.pos);
  } else if (!strcmp(o.pos.v[0], "docs")) {
    rc = cmd_docs(&o.pos);
  } else {
    rc = sp_cli_usage_error(CMD, "unknown VERB '%s'; use " VERB_LIST, o.pos.v[0]);
  }
  sp_cli_strs_free(&o.pos);
  return rc;
}
