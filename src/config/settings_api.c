/* settings_api.c - the settings table for programs and bindings
 * (scope_profiler/settings.h): each setting's name, group, spellings, type,
 * default, bounds, choices, doc, environment variable and status, the
 * groups, and the rules between settings, straight from sp__settings[],
 * sp__groups[] and sp__rules[], so that a binding never holds a copy.
 *
 * The strings that are not literals of the table (environment names,
 * defaults as text, rules as sentences) are built once, on first use, and
 * live as long as the library.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "config/settings_meta.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char env_names[SP__NSETTINGS][72];
static char default_texts[SP__NSETTINGS][32];
static char *rule_texts[SP__NRULES];

static void build(void) {
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    sp__setting_env_name(s, env_names[i], sizeof env_names[i]);
    switch (s->type) {
    case SP__ST_BOOL: snprintf(default_texts[i], sizeof default_texts[i], "%s", s->idef ? "true" : "false"); break;
    case SP__ST_INT:
      if (s->idef != SP_INT_NONE) snprintf(default_texts[i], sizeof default_texts[i], "%lld", (long long)s->idef);
      break;
    default: break; /* strings point into the table */
    }
  }
  for (size_t k = 0; k < sp__nrules; k++) rule_texts[k] = sp__rule_text(&sp__rules[k], 0);
}

size_t sp_setting_count(void) { return SP__NSETTINGS; }

const char *sp_setting_name(size_t i) { return i < SP__NSETTINGS ? sp__settings[i].name : NULL; }

/* The checks every *_at() call makes: the caller set the size of its
 * struct (at least up to the first field after it: older callers may know
 * fewer fields, newer ones more), and asks for an entry that exists. */
static sp_status check_call(const char *fn, const char *type, const size_t *size, size_t least, size_t i,
                            size_t n, const char *what) {
  if (!size || *size < least)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "%s: set info->size to sizeof(%s) first", fn, type);
  if (i >= n) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "%s: there are %zu %s, not %zu", fn, n, what, i + 1);
  return SP_OK;
}

/* Our `have` bytes of r into the caller's struct of info->size bytes. */
static void give(void *info, const void *r, size_t have) {
  size_t given = *(const size_t *)info;
  memcpy(info, r, given < have ? given : have);
  if (given > have) memset((char *)info + have, 0, given - have);
  *(size_t *)info = given;
}

#define CHECK(fn, type, info, first, i, n, what) \
  check_call(fn, #type, info ? &(info)->size : NULL, offsetof(type, first) + sizeof((info)->first), i, n, what)

sp_status sp_setting_info_at(size_t i, sp_setting_info *info) {
  sp_status st = CHECK("sp_setting_info_at", sp_setting_info, info, name, i, SP__NSETTINGS, "settings");
  if (st) return st;
  pthread_once(&once, build);
  const struct sp__setting *s = &sp__settings[i];
  sp_setting_info r;
  memset(&r, 0, sizeof r);
  r.name = s->name;
  r.group = s->group_name;
  r.spelling = s->dotted;
  r.field = s->short_name;
  r.env = env_names[i];
  static const sp_setting_type types[] = {SP_SETTING_BOOL, SP_SETTING_INT, SP_SETTING_STRING,
                                          SP_SETTING_ENUM, SP_SETTING_LIST};
  r.type = types[s->type];
  switch (s->type) {
  case SP__ST_BOOL:
  case SP__ST_INT:
    r.has_default = s->idef != SP_INT_NONE;
    r.default_text = default_texts[i];
    break;
  case SP__ST_ENUM:
    r.has_default = 1;
    r.default_text = s->choices[s->idef];
    break;
  default:
    r.has_default = s->sdef != NULL;
    r.default_text = s->sdef ? s->sdef : "";
    break;
  }
  r.min = s->type == SP__ST_INT ? s->lo : 0;
  r.max = s->type == SP__ST_INT ? s->hi : 0;
  r.choices = s->choices;
  r.doc = s->doc;
  sp__sstatus ss = sp__setting_status(i);
  r.status = ss == SP__SS_READY ? SP_SETTING_READY : ss == SP__SS_PLANNED ? SP_SETTING_PLANNED : SP_SETTING_UNBUILT;
  r.options_field = sp__options_has_field(i, 0);
  give(info, &r, sizeof r);
  return SP_OK;
}

sp_status sp_setting_find(const char *key, size_t *index) {
  if (!key || !index) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_setting_find: key and index must not be NULL");
  const struct sp__setting *s = sp__setting_find(key, NULL);
  if (!s) return sp__unknown_setting(key);
  *index = (size_t)(s - sp__settings);
  return SP_OK;
}

sp_status sp_setting_check(const char *key, const char *value) {
  if (!key || !value)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_setting_check: key and value must not be NULL");
  int grouped;
  const struct sp__setting *s = sp__setting_find(key, &grouped);
  if (!s) return sp__unknown_setting(key);
  sp__value v;
  sp_status st = sp__parse_text(s, key, value, &v);
  return st ? st : sp__check_value(s, key, &v);
}

size_t sp_setting_group_count(void) { return SP__NGROUPS; }

sp_status sp_setting_group_at(size_t i, sp_setting_group_info *info) {
  sp_status st = CHECK("sp_setting_group_at", sp_setting_group_info, info, name, i, SP__NGROUPS, "groups");
  if (st) return st;
  sp_setting_group_info r = {.size = sizeof r,
                             .name = sp__groups[i].name,
                             .title = sp__groups[i].title,
                             .doc = sp__groups[i].doc,
                             .spelled = sp__groups[i].spelled};
  give(info, &r, sizeof r);
  return SP_OK;
}

size_t sp_setting_rule_count(void) { return sp__nrules; }

sp_status sp_setting_rule_at(size_t i, sp_setting_rule_info *info) {
  sp_status st = CHECK("sp_setting_rule_at", sp_setting_rule_info, info, kind, i, sp__nrules, "rules");
  if (st) return st;
  pthread_once(&once, build);
  const struct sp__rule *u = &sp__rules[i];
  static const sp_setting_rule_kind kinds[] = {0, SP_RULE_CONFLICTS, SP_RULE_REQUIRES, SP_RULE_IMPLIES,
                                               SP_RULE_RANGE};
  sp_setting_rule_info r = {.size = sizeof r,
                            .kind = kinds[u->kind],
                            .a = sp__settings[u->a].name,
                            .b = sp__settings[u->b].name,
                            .choice = u->kind == SP__RULE_RANGE ? sp__enum_word((size_t)u->b, u->choice) : NULL,
                            .min = u->kind == SP__RULE_RANGE ? u->lo : 0,
                            .max = u->kind == SP__RULE_RANGE ? u->hi : 0,
                            .why = u->why,
                            .text = rule_texts[i] ? rule_texts[i] : ""};
  give(info, &r, sizeof r);
  return SP_OK;
}
