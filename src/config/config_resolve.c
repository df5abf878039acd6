/* config_resolve.c - the resolved configuration a manager runs with.
 *
 * sp__config_resolve() stacks five layers, lowest first: built-in defaults,
 * the TOML file (args->config_path, else $SCOPE_PROFILER_CONFIG), the
 * sp_options struct, the environment (SCOPE_PROFILER_<SETTING>) and the
 * per-call "key=value" overrides. Each setting takes its value from the
 * highest layer that sets it, and remembers which layer that was. Then come
 * the rules that involve several settings, whose messages name where each
 * value came from so the user knows what to edit.
 *
 * The resolved struct holds what the run actually uses: track_threads is on
 * when track_async is (the rules table's implications), memory_profile_path
 * is the capture path (NULL when use_memray is off), enumerations are their
 * C enums, lists are
 * NULL-terminated arrays or NULL when empty. Building it reads the
 * environment and at most one file, and issues no MPI call.
 */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/error.h"
#include "config/config_buf.h"
#include "config/settings_meta.h"

#define S_(n) (&sp__settings[SP__SET_##n])

struct layer {
  const sp_options *o;
  sp_origin origin;
  const char *what; /* for messages: the file's path, "options", ... */
};

/* What each origin is called in messages about one setting. */
static const char *where(const struct sp_config *c, size_t i, const char *path, char *buf,
                         size_t size) {
  switch (c->origin[i]) {
  case SP_ORIGIN_DEFAULT:
    return "by default";
  case SP_ORIGIN_FILE:
    if (!path) path = c->config_file;
    snprintf(buf, size, "in %s", path ? path : "the config file");
    return buf;
  case SP_ORIGIN_OPTIONS:
    return "in the options";
  case SP_ORIGIN_ENV: {
    char env[64];
    sp__setting_env_name(&sp__settings[i], env, sizeof env);
    snprintf(buf, size, "by %s", env);
    return buf;
  }
  case SP_ORIGIN_OVERRIDE:
    return "in the overrides";
  }
  return "";
}

/*====== Layers ======*/

static sp_status env_layer(sp_options *env) {
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    /* SCOPE_PROFILER_ENABLE_TAGS adds to enable_tags; see merge_tags(). */
    if (i == SP__SET_enable_tags) continue;
    char name[64];
    sp__setting_env_name(s, name, sizeof name);
    const char *text = getenv(name);
    /* An empty variable counts as unset: `export X=` is how shells clear. */
    if (!text || !*text) continue;
    sp__value v;
    sp_status st = sp__parse_text(s, s->name, text, &v);
    if (!st) st = sp__check_value(s, s->name, &v);
    if (!st) st = sp__opt_put(env, s, 0, &v);
    if (st) {
      sp__prefix_error("environment variable %s (fix or unset it)", name);
      return st;
    }
  }
  return SP_OK;
}

static sp_status override_layer(sp_options *ovr, const char *const *list) {
  for (size_t k = 0; list && list[k]; k++) {
    const char *item = list[k];
    const char *eq = strchr(item, '=');
    char q[96];
    if (!eq)
      return sp__set_error(SP_ERR_INVALID_ARGUMENT, "override %s is not key=value; write it as "
                           "e.g. \"file_path=run.h5\"", sp__quote(item, q));
    /* The key without surrounding blanks; the value exactly as given. */
    const char *kb = item, *ke = eq;
    while (kb < ke && (*kb == ' ' || *kb == '\t')) kb++;
    while (ke > kb && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
    char key[128];
    size_t kn = (size_t)(ke - kb);
    if (kn >= sizeof key) kn = sizeof key - 1;
    memcpy(key, kb, kn);
    key[kn] = '\0';
    int grouped;
    const struct sp__setting *s = sp__setting_find(key, &grouped);
    if (!s) {
      sp__unknown_setting(key);
      sp__prefix_error("override %s", sp__quote(item, q));
      return SP_ERR_UNKNOWN_SETTING;
    }
    sp__value prev;
    if (sp__opt_get(ovr, s, grouped, &prev))
      return sp__set_error(SP_ERR_CONFLICT, "the overrides set %s twice; keep one",
                           sp__setting_spelling(s, grouped));
    if (s->dotted && sp__opt_get(ovr, s, !grouped, &prev))
      return sp__set_error(SP_ERR_CONFLICT, "%s and %s are both set in the overrides; keep one",
                           sp__setting_spelling(s, !grouped), sp__setting_spelling(s, grouped));
    sp__value v;
    sp_status st = sp__parse_text(s, sp__setting_spelling(s, grouped), eq + 1, &v);
    if (!st) st = sp__check_value(s, sp__setting_spelling(s, grouped), &v);
    if (!st) st = sp__opt_put(ovr, s, grouped, &v);
    if (st) {
      sp__prefix_error("override %s", sp__quote(item, q));
      return st;
    }
  }
  return SP_OK;
}

/*====== Lists ======*/

static int list_has(char **list, size_t n, const char *item, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i]) == len && !memcmp(list[i], item, len)) return 1;
  return 0;
}

/* Append the comma-separated items of text to *list (blank items dropped,
 * duplicates kept once). */
static sp_status list_add(char ***list, size_t *n, const char *text) {
  const char *p = text;
  while (p && *p) {
    const char *e = strchr(p, ',');
    const char *end = e ? e : p + strlen(p);
    const char *b = p;
    while (b < end && (*b == ' ' || *b == '\t')) b++;
    while (end > b && (end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t len = (size_t)(end - b);
    if (len && !list_has(*list, *n, b, len)) {
      char **nl = realloc(*list, (*n + 2) * sizeof *nl);
      if (!nl) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory building a list setting");
      *list = nl;
      nl[*n] = sp__strndup(b, len);
      if (!nl[*n]) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory building a list setting");
      nl[++*n] = NULL;
    }
    p = e ? e + 1 : NULL;
  }
  return SP_OK;
}

static void list_free(char **list) {
  for (size_t i = 0; list && list[i]; i++) free(list[i]);
  free(list);
}

static char *list_join(char **list) {
  sp__buf b = SP__BUF_INIT;
  sp__buf_puts(&b, "");
  for (size_t i = 0; list && list[i]; i++) {
    if (i) sp__buf_putc(&b, ',');
    sp__buf_puts(&b, list[i]);
  }
  return sp__buf_take(&b);
}

size_t sp_config_list_len(const char *const *list) {
  size_t n = 0;
  while (list && list[n]) n++;
  return n;
}

/*====== Field access ======*/

static void *cfield(const struct sp_config *c, const struct sp__setting *s) {
  return (char *)c + s->cfg_off;
}

static sp_status store(struct sp_config *c, const struct sp__setting *s, const sp__value *v) {
  void *f = cfield(c, s);
  switch (s->type) {
  case SP__ST_BOOL:
    *(int *)f = v->set ? (v->i != 0) : 0;
    return SP_OK;
  case SP__ST_INT:
    *(int64_t *)f = v->set ? v->i : SP_INT_NONE;
    return SP_OK;
  case SP__ST_ENUM: {
    int k = v->set ? sp__enum_index(s, v->s) : (int)s->idef;
    if (k < 0) /* checked before; kept from being stored as an enumerator */
      return sp__set_error(SP_ERR_INVALID_VALUE, "%s: \"%s\" is not a choice", s->name, v->s);
    *(int *)f = k;
    return SP_OK;
  }
  case SP__ST_STR:
    *(char **)f = NULL;
    if (v->set && v->s) {
      *(char **)f = sp__strdup(v->s);
      if (!*(char **)f) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory resolving %s", s->name);
    }
    return SP_OK;
  case SP__ST_LIST: {
    char **list = NULL;
    size_t n = 0;
    sp_status st = v->set ? list_add(&list, &n, v->s) : SP_OK;
    *(char ***)f = list;
    return st;
  }
  }
  return SP_OK;
}

static sp_status render_text(struct sp_config *c) {
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    const void *f = cfield(c, s);
    char buf[32];
    const char *t = "";
    char *own = NULL;
    switch (s->type) {
    case SP__ST_BOOL:
      t = *(const int *)f ? "true" : "false";
      break;
    case SP__ST_INT:
      if (*(const int64_t *)f != SP_INT_NONE) {
        snprintf(buf, sizeof buf, "%lld", (long long)*(const int64_t *)f);
        t = buf;
      }
      break;
    case SP__ST_ENUM:
      t = sp__enum_word(i, *(const int *)f);
      break;
    case SP__ST_STR:
      if (*(char *const *)f) t = *(char *const *)f;
      break;
    case SP__ST_LIST:
      own = list_join(*(char **const *)f);
      if (!own) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory rendering settings");
      break;
    }
    free(c->text[i]);
    c->text[i] = own ? own : sp__strdup(t);
    if (!c->text[i]) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory rendering settings");
  }
  return SP_OK;
}

/* Path.stem: the last component without its last suffix (".h5"); a name
 * that only starts with a dot keeps it. */
static char *stem_of(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  size_t b = n;
  while (b > 0 && path[b - 1] != '/') b--;
  size_t e = n;
  for (size_t i = n; i > b + 1; i--)
    if (path[i - 1] == '.') {
      if (i < n) e = i - 1;
      break;
    }
  return sp__strndup(path + b, e - b);
}

/* "<file_path without its suffix>.memray.bin", next to the output file. */
static char *memray_default(const char *path) {
  size_t n = strlen(path), b = n, e = n;
  while (b > 0 && path[b - 1] != '/') b--;
  for (size_t i = n; i > b + 1; i--)
    if (path[i - 1] == '.') {
      if (i < n) e = i - 1;
      break;
    }
  return sp__asprintf("%.*s.memray.bin", (int)e, path);
}

/*====== Rules between settings ======*/

int sp__signal_from_name(const char *name) {
  static const struct {
    const char *name;
    int sig;
  } map[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"XCPU", SIGXCPU}, {"USR1", SIGUSR1},
             {"USR2", SIGUSR2}, {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"ALRM", SIGALRM},
             {"PIPE", SIGPIPE}, {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}};
  if (!name) return 0;
  if (strncmp(name, "SIG", 3) == 0) name += 3;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i].name, name) == 0) return map[i].sig;
  return 0;
}

int sp__config_is_on(const struct sp_config *c, size_t i) {
  const struct sp__setting *s = &sp__settings[i];
  const void *f = cfield(c, s);
  switch (s->type) {
  case SP__ST_BOOL: return *(const int *)f != 0;
  case SP__ST_INT: return *(const int64_t *)f != SP_INT_NONE;
  case SP__ST_ENUM: return *(const int *)f != (int)s->idef;
  case SP__ST_STR: return *(char *const *)f && **(char *const *)f;
  case SP__ST_LIST: return *(char **const *)f && **(char **const *)f;
  }
  return 0;
}

/* Whether a RANGE rule forbids setting a while b is `choice`. */
static int forbidden_with(int a, int b, int choice) {
  for (size_t k = 0; k < sp__nrules; k++)
    if (sp__rules[k].kind == SP__RULE_RANGE && sp__rules[k].a == a && sp__rules[k].b == b &&
        sp__rules[k].choice == choice && sp__rules[k].lo > sp__rules[k].hi)
      return 1;
  return 0;
}

/* What to write to turn setting b on so that a may stay, for messages. */
static const char *how_on(int ai, const struct sp__setting *b, char *buf, size_t size) {
  size_t k = 0;
  int bi = (int)(b - sp__settings);
  switch (b->type) {
  case SP__ST_BOOL:
    snprintf(buf, size, "set %s%s%s%s to true", b->name, b->dotted ? " (" : "", b->dotted ? b->dotted : "",
             b->dotted ? ")" : "");
    return buf;
  case SP__ST_ENUM: {
    int ok[64], n = 0;
    for (int j = 0; j < b->nchoices && n < 64; j++)
      if (j != (int)b->idef && !forbidden_with(ai, bi, j)) ok[n++] = j;
    k = (size_t)snprintf(buf, size, "set %s to ", b->name);
    for (int j = 0; j < n && k < size; j++)
      k += (size_t)snprintf(buf + k, size - k, "%s%s", b->choices[ok[j]],
                            j + 2 < n ? ", " : j + 2 == n ? " or " : "");
    return buf;
  }
  default:
    snprintf(buf, size, "set %s", b->name);
    return buf;
  }
}

/* The first rule `c` breaks, as an error naming where each value came
 * from. IMPLIES rules were applied before. */
static sp_status check_rules(const struct sp_config *c, const char *path) {
  char w1[300], w2[300], fix[200];
  for (size_t k = 0; k < sp__nrules; k++) {
    const struct sp__rule *r = &sp__rules[k];
    const struct sp__setting *a = &sp__settings[r->a], *b = &sp__settings[r->b];
    if (!sp__config_is_on(c, (size_t)r->a)) continue;
    switch (r->kind) {
    case SP__RULE_CONFLICTS:
      if (sp__config_is_on(c, (size_t)r->b))
        return sp__set_error(SP_ERR_CONFLICT, "%s (set %s) cannot be combined with %s (set %s): %s; "
                             "turn one of them off", a->name, where(c, (size_t)r->a, path, w1, sizeof w1),
                             b->name, where(c, (size_t)r->b, path, w2, sizeof w2), r->why);
      break;
    case SP__RULE_REQUIRES:
      if (!sp__config_is_on(c, (size_t)r->b))
        return sp__set_error(SP_ERR_CONFLICT, "%s (set %s) requires %s: %s; %s, or remove %s", a->name,
                             where(c, (size_t)r->a, path, w1, sizeof w1), b->name, r->why,
                             how_on(r->a, b, fix, sizeof fix), a->name);
      break;
    case SP__RULE_RANGE: {
      if (*(const int *)cfield(c, b) != r->choice) break;
      long long v = (long long)*(const int64_t *)cfield(c, a);
      const char *bw = sp__enum_word((size_t)r->b, r->choice);
      if (r->lo > r->hi)
        return sp__set_error(SP_ERR_INVALID_VALUE, "%s (set %s) cannot be used with %s = \"%s\": %s; "
                             "remove %s or choose another %s", a->name,
                             where(c, (size_t)r->a, path, w1, sizeof w1), b->name, bw, r->why, a->name,
                             b->name);
      if (v < r->lo || v > r->hi)
        return sp__set_error(SP_ERR_INVALID_VALUE, "%s %lld (set %s) is out of range for %s = \"%s\": "
                             "%s; use %lld-%lld", a->name, v, where(c, (size_t)r->a, path, w1, sizeof w1),
                             b->name, bw, r->why, (long long)r->lo, (long long)r->hi);
      break;
    }
    case SP__RULE_IMPLIES:
      break;
    }
  }
  return SP_OK;
}

static void apply_implications(struct sp_config *c) {
  for (size_t k = 0; k < sp__nrules; k++) {
    const struct sp__rule *r = &sp__rules[k];
    if (r->kind != SP__RULE_IMPLIES || !sp__config_is_on(c, (size_t)r->a) ||
        sp__config_is_on(c, (size_t)r->b) || sp__settings[r->b].type != SP__ST_BOOL)
      continue;
    *(int *)cfield(c, &sp__settings[r->b]) = 1;
    c->origin[r->b] = c->origin[r->a];
  }
}

/* Checks of one setting's value that the value's type cannot express. */
static sp_status value_checks(const struct sp_config *c, const char *path) {
  char w1[300];
  for (size_t k = 0; c->signals && c->signals[k]; k++)
    if (!sp__signal_from_name(c->signals[k])) {
      char q[96];
      return sp__set_error(SP_ERR_INVALID_VALUE, "signals (set %s) names %s, which is not a "
                           "termination signal this library handles; use SIGTERM, SIGINT, "
                           "SIGXCPU, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGALRM, SIGPIPE, "
                           "SIGXFSZ or SIGVTALRM (an empty list handles none)",
                           where(c, SP__SET_signals, path, w1, sizeof w1),
                           sp__quote(c->signals[k], q));
    }
  if (!c->file_path || !*c->file_path)
    return sp__set_error(SP_ERR_INVALID_VALUE, "file_path (set %s) is empty; give the output "
                         "file a name, e.g. profiling_data.h5",
                         where(c, SP__SET_file_path, path, w1, sizeof w1));
  return SP_OK;
}

/*====== Resolve ======*/

static sp_status merge_tags(struct sp_config *c, const struct layer *layers, size_t nl,
                            int use_env) {
  const struct sp__setting *s = S_(enable_tags);
  /* Highest non-environment layer that sets the list... */
  sp__value v = {0};
  sp_origin origin = SP_ORIGIN_DEFAULT;
  for (size_t k = 0; k < nl; k++) {
    sp__value lv;
    if (layers[k].o && !sp__opt_effective(layers[k].o, s, &lv) && lv.set) {
      v = lv;
      origin = layers[k].origin;
    }
  }
  char **list = NULL;
  size_t n = 0;
  sp_status st = v.set ? list_add(&list, &n, v.s) : SP_OK;
  /* ...plus SCOPE_PROFILER_ENABLE_TAGS, which adds and never replaces. */
  const char *env = use_env ? getenv(SP__ENV_PREFIX "ENABLE_TAGS") : NULL;
  if (!st && env && *env) {
    size_t before = n;
    st = list_add(&list, &n, env);
    if (n > before && origin != SP_ORIGIN_OVERRIDE) origin = SP_ORIGIN_ENV;
  }
  c->enable_tags = n ? list : NULL;
  if (!n) list_free(list);
  c->origin[SP__SET_enable_tags] = origin;
  return st;
}

sp_status sp__config_resolve_ex(struct sp_config *out, const sp_setup_args *args, unsigned flags) {
  if (!out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "no configuration to resolve into");
  memset(out, 0, sizeof *out);
  int use_env = !(flags & SP__RESOLVE_NO_ENV);
  sp_options file = SP_OPTIONS_INIT, env = SP_OPTIONS_INIT, ovr = SP_OPTIONS_INIT;
  sp_status st = SP_OK;

  const char *path = args ? args->config_path : NULL;
  int path_from_env = 0;
  if (path && !*path)
    st = sp__set_error(SP_ERR_INVALID_ARGUMENT, "config_path is empty; pass NULL for no config "
                       "file");
  if (!st && !path && use_env) {
    path = getenv(SP__ENV_PREFIX "CONFIG");
    if (path && !*path) path = NULL;
    path_from_env = path != NULL;
  }
  if (!st && path) {
    st = sp_load_profiling_config(path, &file);
    if (st && path_from_env) sp__prefix_error(SP__ENV_PREFIX "CONFIG");
  }
  const sp_options *opts = args ? args->options : NULL;
  if (!st && opts && (st = sp__opt_valid(opts)) != SP_OK) sp__prefix_error("options");
  if (!st && opts) {
    sp__value v;
    for (size_t i = 0; i < SP__NSETTINGS && !st; i++) {
      st = sp__opt_effective(opts, &sp__settings[i], &v);
      if (st) sp__prefix_error("options");
    }
  }
  if (!st && use_env) st = env_layer(&env);
  if (!st && args && args->overrides) st = override_layer(&ovr, args->overrides);

  struct layer layers[4] = {
      {path ? &file : NULL, SP_ORIGIN_FILE, path},
      {opts, SP_ORIGIN_OPTIONS, "options"},
      {use_env ? &env : NULL, SP_ORIGIN_ENV, "environment"},
      {&ovr, SP_ORIGIN_OVERRIDE, "overrides"},
  };
  for (size_t i = 0; i < SP__NSETTINGS && !st; i++) {
    const struct sp__setting *s = &sp__settings[i];
    if (i == SP__SET_enable_tags) continue;
    sp__value v = {.set = 1, .i = s->idef, .s = s->sdef};
    if (s->type == SP__ST_INT && s->idef == SP_INT_NONE) v.set = 0;
    if (s->type != SP__ST_BOOL && s->type != SP__ST_INT && !s->sdef) v.set = 0;
    sp_origin origin = SP_ORIGIN_DEFAULT;
    const char *from = NULL;
    for (size_t k = 0; k < 4; k++) {
      sp__value lv;
      if (layers[k].o && !sp__opt_effective(layers[k].o, s, &lv) && lv.set) {
        v = lv;
        origin = layers[k].origin;
        from = layers[k].what;
      }
    }
    /* Fields assigned straight into sp_options were never parsed. */
    st = sp__check_value(s, s->name, &v);
    if (st) {
      sp__prefix_error("%s", from ? from : "default");
      break;
    }
    out->origin[i] = origin;
    st = store(out, s, &v);
  }
  if (!st) st = merge_tags(out, layers, 4, use_env);

  if (!st) {
    apply_implications(out);
    if (!out->use_memray) {
      free(out->memory_profile_path);
      out->memory_profile_path = NULL;
    } else if (!out->memory_profile_path && out->file_path && *out->file_path) {
      out->memory_profile_path = memray_default(out->file_path);
      if (!out->memory_profile_path) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    }
  }
  if (!st) st = value_checks(out, path);
  if (!st) st = check_rules(out, path);
  if (!st) {
    if (out->memory_profile_path) {
      out->memory_profile_path_resolved = sp__strdup(out->memory_profile_path);
      if (!out->memory_profile_path_resolved) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    }
  }
  if (!st && path && !(out->config_file = sp__strdup(path))) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  if (!st) {
    out->display_label = out->label && *out->label ? sp__strdup(out->label) : stem_of(out->file_path);
    if (!out->display_label) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  if (!st) st = render_text(out);

  sp_options_clear(&file);
  sp_options_clear(&env);
  sp_options_clear(&ovr);
  if (st) sp__config_free(out);
  return st;
}

sp_status sp__config_resolve(struct sp_config *out, const sp_setup_args *args) {
  return sp__config_resolve_ex(out, args, 0);
}

/* The checks finalize would otherwise make only at the end of the run,
 * when the profile is already lost. Under MPI every rank checks, since every
 * rank may open the job's file. */
static sp_status check_output(const struct sp_config *c) {
  if (c->deactivate_profiling || c->deactivate_file_output) return SP_OK;
  char w[300], *copy = sp__strdup(c->file_path);
  if (!copy) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory checking file_path");
  const char *set = where(c, SP__SET_file_path, NULL, w, sizeof w);
  const char *dir = dirname(copy);
  struct stat sb;
  sp_status st = SP_OK;
  if (stat(c->file_path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    st = sp__set_error(SP_ERR_IO, "file_path %s (set %s) is a directory; name a file inside it, "
                       "e.g. %s/profiling_data.h5", c->file_path, set, c->file_path);
  } else if (stat(dir, &sb) != 0) {
    int e = errno;
    st = sp__set_error(SP_ERR_IO, "the directory of file_path %s (set %s) cannot be used: %s: %s; "
                       "%s", c->file_path, set, dir, strerror(e),
                       e == ENOENT ? "create it first or choose another file_path"
                                   : "choose another file_path");
  } else if (!S_ISDIR(sb.st_mode)) {
    st = sp__set_error(SP_ERR_IO, "file_path %s (set %s) needs %s to be a directory, but it is a "
                       "file; choose another file_path", c->file_path, set, dir);
  } else if (access(dir, W_OK | X_OK) != 0) {
    int e = errno;
    st = sp__set_error(SP_ERR_IO, "cannot create files in %s, the directory of file_path %s (set "
                       "%s): %s; choose a writable file_path", dir, c->file_path, set, strerror(e));
  }
  free(copy);
  return st;
}

sp_status sp__config_for_setup(struct sp_config *out, const sp_setup_args *args, unsigned flags) {
  sp_status st = sp__config_resolve_ex(out, args, flags);
  if (st == SP_OK && (st = check_output(out)) != SP_OK) sp__config_free(out);
  return st;
}

void sp__config_free(struct sp_config *c) {
  if (!c) return;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    void *f = cfield(c, s);
    if (s->type == SP__ST_STR) free(*(char **)f);
    if (s->type == SP__ST_LIST) list_free(*(char ***)f);
    free(c->text[i]);
  }
  free(c->display_label);
  free(c->config_file);
  free(c->memory_profile_path_resolved);
  memset(c, 0, sizeof *c);
}

static char **list_copy(char **src, int *ok) {
  if (!src) return NULL;
  size_t n = sp_config_list_len((const char *const *)src);
  char **l = calloc(n + 1, sizeof *l);
  if (!l) {
    *ok = 0;
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    if (!(l[i] = sp__strdup(src[i]))) *ok = 0;
  return l;
}

sp_status sp__config_copy(struct sp_config *dst, const struct sp_config *src) {
  if (!dst || !src) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp__config_copy: NULL argument");
  *dst = *src;
  int ok = 1;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    void *d = cfield(dst, s);
    const void *sf = cfield(src, s);
    if (s->type == SP__ST_STR) {
      char *p = *(char *const *)sf;
      *(char **)d = p ? sp__strdup(p) : NULL;
      if (p && !*(char **)d) ok = 0;
    } else if (s->type == SP__ST_LIST) {
      *(char ***)d = list_copy(*(char **const *)sf, &ok);
    }
    dst->text[i] = src->text[i] ? sp__strdup(src->text[i]) : NULL;
    if (src->text[i] && !dst->text[i]) ok = 0;
  }
  dst->display_label = src->display_label ? sp__strdup(src->display_label) : NULL;
  dst->config_file = src->config_file ? sp__strdup(src->config_file) : NULL;
  if (src->config_file && !dst->config_file) ok = 0;
  dst->memory_profile_path_resolved =
      src->memory_profile_path_resolved ? sp__strdup(src->memory_profile_path_resolved) : NULL;
  if ((src->display_label && !dst->display_label) ||
      (src->memory_profile_path_resolved && !dst->memory_profile_path_resolved))
    ok = 0;
  if (!ok) {
    sp__config_free(dst);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory copying a configuration");
  }
  return SP_OK;
}

char *sp__config_to_json(const struct sp_config *c) {
  if (!c) return NULL;
  sp__buf b = SP__BUF_INIT;
  sp__buf_putc(&b, '{');
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    const void *f = cfield(c, s);
    if (i) sp__buf_puts(&b, ", ");
    sp__buf_json_string(&b, s->name, strlen(s->name));
    sp__buf_puts(&b, ": ");
    switch (s->type) {
    case SP__ST_BOOL:
      sp__buf_puts(&b, *(const int *)f ? "true" : "false");
      break;
    case SP__ST_INT:
      if (*(const int64_t *)f == SP_INT_NONE)
        sp__buf_puts(&b, "null");
      else
        sp__buf_printf(&b, "%lld", (long long)*(const int64_t *)f);
      break;
    case SP__ST_ENUM: {
      const char *w = sp__enum_word(i, *(const int *)f);
      sp__buf_json_string(&b, w, strlen(w));
      break;
    }
    case SP__ST_STR: {
      const char *p = *(char *const *)f;
      if (p)
        sp__buf_json_string(&b, p, strlen(p));
      else
        sp__buf_puts(&b, "null");
      break;
    }
    case SP__ST_LIST: {
      char **l = *(char **const *)f;
      sp__buf_putc(&b, '[');
      for (size_t k = 0; l && l[k]; k++) {
        if (k) sp__buf_puts(&b, ", ");
        sp__buf_json_string(&b, l[k], strlen(l[k]));
      }
      sp__buf_putc(&b, ']');
      break;
    }
    }
  }
  sp__buf_putc(&b, '}');
  return sp__buf_take(&b);
}

int sp__config_tag_enabled(const struct sp_config *c, const char *tag) {
  if (!c || !tag) return 0;
  for (size_t i = 0; c->enable_tags && c->enable_tags[i]; i++)
    if (!strcmp(c->enable_tags[i], "*") || !strcmp(c->enable_tags[i], tag)) return 1;
  return 0;
}

/*====== Settings this build cannot honour ======*/

/* The default as render_text() would write it. */
static const char *default_text(const struct sp__setting *s, char buf[32]) {
  switch (s->type) {
  case SP__ST_BOOL:
    return s->idef ? "true" : "false";
  case SP__ST_INT:
    if (s->idef == SP_INT_NONE) return "";
    snprintf(buf, 32, "%lld", (long long)s->idef);
    return buf;
  case SP__ST_ENUM:
    return s->choices[s->idef];
  default:
    return s->sdef ? s->sdef : "";
  }
}

int sp__config_warn_unavailable(const struct sp_config *c) {
  /* A warning per setting and process: a program that sets up many runs
   * hears it once. Identical on every rank of a job, so rank 0 says it. */
  static unsigned char warned[SP__NSETTINGS];
  if (!c || c->quiet || c->deactivate_profiling || sp__launcher_rank() > 0) return 0;
  int n = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    char buf[32], w[300], why[200];
    sp__sstatus st = sp__setting_status(i);
    if (st == SP__SS_READY || c->origin[i] == SP_ORIGIN_DEFAULT || !c->text[i]) continue;
    if (!strcmp(c->text[i], default_text(s, buf))) continue;
    if (__atomic_exchange_n(&warned[i], 1, __ATOMIC_RELAXED)) continue;
    if (st == SP__SS_PLANNED)
      snprintf(why, sizeof why, "not implemented yet");
    else if (s->build)
      snprintf(why, sizeof why, "left out when it was built: rebuild with %s", s->build);
    else
      snprintf(why, sizeof why, "left out when it was built");
    sp__message(SP_MESSAGE_WARNING, "%s = %s (set %s) is not available in this build (%s) and has "
                "no effect; unset it (or set quiet) to silence this warning", s->name, c->text[i],
                where(c, i, NULL, w, sizeof w), why);
    n++;
  }
  return n;
}

/* quiet from one text value; -1 when it is not a boolean. */
static int quiet_word(const char *text) {
  sp__value v;
  if (!text || sp__parse_text(S_(quiet), "quiet", text, &v) != SP_OK) return -1;
  return (int)v.i;
}

int sp__config_quiet_hint(const sp_setup_args *args) {
  char saved[2048];
  snprintf(saved, sizeof saved, "%s", sp_last_error());
  const struct sp__setting *s = S_(quiet);
  int q = 0;
  sp__value v;
  const char *path = args && args->config_path ? args->config_path : getenv(SP__ENV_PREFIX "CONFIG");
  if (path && *path) {
    sp_options f = SP_OPTIONS_INIT;
    if (sp_load_profiling_config(path, &f) == SP_OK && sp__opt_get(&f, s, 0, &v)) q = (int)v.i;
    sp_options_clear(&f);
  }
  if (args && args->options && sp__opt_valid(args->options) == SP_OK && sp__opt_get(args->options, s, 0, &v))
    q = v.i != 0;
  int e = quiet_word(getenv(SP__ENV_PREFIX "QUIET"));
  if (e >= 0) q = e;
  for (size_t k = 0; args && args->overrides && args->overrides[k]; k++) {
    const char *item = args->overrides[k], *eq = strchr(item, '=');
    while (*item == ' ' || *item == '\t') item++;
    if (!eq || strncmp(item, "quiet", 5) != 0) continue;
    const char *p = item + 5;
    while (p < eq && (*p == ' ' || *p == '\t')) p++;
    if (p == eq && (e = quiet_word(eq + 1)) >= 0) q = e;
  }
  sp__set_error(SP_OK, "%s", saved);
  return q;
}

/*====== Public accessors ======*/

static size_t index_of(const char *name) {
  int grouped;
  const struct sp__setting *s = sp__setting_find(name, &grouped);
  return s ? (size_t)(s - sp__settings) : SP__NSETTINGS;
}

const char *sp_config_value_text(const sp_config *c, const char *flat_name) {
  size_t i = index_of(flat_name);
  if (!c || i == SP__NSETTINGS) return NULL;
  return c->text[i] ? c->text[i] : "";
}

sp_origin sp_config_origin(const sp_config *c, const char *flat_name) {
  size_t i = index_of(flat_name);
  if (!c || i == SP__NSETTINGS) return SP_ORIGIN_DEFAULT;
  return c->origin[i];
}

static const char *const empty_list[1] = {NULL};

/* The word an ENUM accessor returns; "none" (an enumeration's way of saying
 * unset, as hdf5_compression's) is NULL. */
static const char *enum_text(const struct sp_config *c, size_t i) {
  if (!c) return NULL;
  const char *w = sp__enum_word(i, *(const int *)cfield(c, &sp__settings[i]));
  return strcmp(w, "none") ? w : NULL;
}

#define SP__ACC_GET_BOOL(c, n) ((c) ? (c)->n : 0)
#define SP__ACC_GET_INT(c, n) ((c) ? (c)->n : SP_INT_NONE)
#define SP__ACC_GET_STR(c, n) ((c) ? (const char *)(c)->n : NULL)
#define SP__ACC_GET_ENUM(c, n) enum_text(c, SP__SET_##n)
#define SP__ACC_GET_LIST(c, n) ((c) && (c)->n ? (const char *const *)(c)->n : empty_list)
#define SP__ACC_DEF(n, T) \
  SP_I_ACC_T_##T sp_config_##n(const sp_config *c) { return SP__ACC_GET_##T(c, n); }
SP_I_OPTION_FIELDS(SP__ACC_DEF)
#undef SP__ACC_DEF

/* By name, for the settings without an accessor of their own. */
static const void *typed(const sp_config *c, const char *name, sp__stype type) {
  size_t i = index_of(name);
  if (!c || i == SP__NSETTINGS || sp__settings[i].type != type) return NULL;
  return cfield(c, &sp__settings[i]);
}

int sp_config_bool(const sp_config *c, const char *flat_name) {
  const int *f = typed(c, flat_name, SP__ST_BOOL);
  return f ? *f : 0;
}

int64_t sp_config_int(const sp_config *c, const char *flat_name) {
  const int64_t *f = typed(c, flat_name, SP__ST_INT);
  return f ? *f : SP_INT_NONE;
}

const char *const *sp_config_list(const sp_config *c, const char *flat_name) {
  char **const *f = typed(c, flat_name, SP__ST_LIST);
  return f && *f ? (const char *const *)*f : empty_list;
}

const char *sp_config_display_label(const sp_config *c) { return c ? c->display_label : NULL; }
int64_t sp_config_start_time_ns(const sp_config *c) { return c ? c->start_time_ns : 0; }
int sp_config_paused(const sp_config *c) { return c ? c->paused : 0; }
