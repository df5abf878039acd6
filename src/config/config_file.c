/* config_file.c - sp_load_profiling_config(): the [profiling] table of a TOML
 * file into sp_options.
 *
 * The file's settings live in a [profiling] table, or at the top level of a
 * small file that has none. Sub-tables memray, gpu and hdf5 ([profiling.hdf5],
 * hdf5.compression = ..., hdf5 = {compression = ...}: TOML makes these the
 * same tree) use the group field names. Other top-level tables are left alone
 * because the file may be shared with other tools, but a setting written at
 * the top level next to a [profiling] table is an error: it would otherwise
 * be silently ignored. Every error names file:line:column.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "config/config_buf.h"
#include "config/settings_meta.h"
#include "config/toml.h"

/* Config files are a few hundred bytes; anything this big is a wrong path
 * (and the reader's linear key lookups are not meant for huge tables). */
#define MAX_CONFIG_BYTES (1u << 20)

struct loader {
  const char *name;
  sp_options *out;
  /* where each spelling was set, to point at both halves of a conflict */
  int line[SP__NSETTINGS][2];
};

__attribute__((format(printf, 5, 6))) static sp_status at(const struct loader *L, sp_status st,
                                                          int line, int col, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return sp__set_error(st, "%s:%d:%d: %s", L->name, line, col, msg);
}

/* A TOML string as a setting's value, pointing into the tree; one holding a
 * NUL would be cut short there without a word, so it is refused. */
static sp_status take_string(const struct loader *L, const char *spelling, const sp__toml_value *tv,
                             sp__value *v) {
  if (strlen(tv->u.str.ptr) != tv->u.str.len)
    return at(L, SP_ERR_INVALID_VALUE, tv->line, tv->col, "%s contains a NUL character (\\u0000); remove it",
              spelling);
  v->s = tv->u.str.ptr;
  return SP_OK;
}

/* The TOML value as the setting's type; strings point into the tree or into
 * `tmp` (a list built from an array). */
static sp_status convert(const struct loader *L, const struct sp__setting *s, const char *spelling,
                         const sp__toml_value *tv, sp__buf *tmp, sp__value *v) {
  v->set = 1;
  v->i = 0;
  v->s = NULL;
  const char *got = sp__toml_type_article(tv->type);
  switch (s->type) {
  case SP__ST_BOOL:
    if (tv->type == SP__TOML_BOOL) {
      v->i = tv->u.boolean;
      return SP_OK;
    }
    return at(L, SP_ERR_INVALID_VALUE, tv->line, tv->col, "%s expects a boolean, got %s; write "
              "%s = true or %s = false%s", spelling, got, spelling, spelling,
              tv->type == SP__TOML_STRING ? " (without quotes)" : "");
  case SP__ST_INT:
    if (tv->type == SP__TOML_INTEGER) {
      v->i = tv->u.integer;
      return SP_OK;
    }
    return at(L, SP_ERR_INVALID_VALUE, tv->line, tv->col, "%s expects an integer, got %s; write "
              "a whole number%s, e.g. %s = %lld", spelling, got,
              tv->type == SP__TOML_STRING ? " without quotes" : "", spelling,
              (long long)(s->idef != SP_INT_NONE ? s->idef : s->lo > 0 ? s->lo : 1));
  case SP__ST_STR:
  case SP__ST_ENUM:
    if (tv->type == SP__TOML_STRING) return take_string(L, spelling, tv, v);
    return at(L, SP_ERR_INVALID_VALUE, tv->line, tv->col, "%s expects a string, got %s; quote "
              "it: %s = \"...\"", spelling, got, spelling);
  case SP__ST_LIST:
    if (tv->type == SP__TOML_STRING) return take_string(L, spelling, tv, v);
    if (tv->type == SP__TOML_ARRAY) {
      sp__buf_puts(tmp, "");
      for (size_t i = 0; i < tv->u.arr.n; i++) {
        const sp__toml_value *it = tv->u.arr.items[i];
        if (it->type != SP__TOML_STRING)
          return at(L, SP_ERR_INVALID_VALUE, it->line, it->col, "%s must be an array of strings, "
                    "but item %zu is %s; quote it", spelling, i + 1, sp__toml_type_article(it->type));
        if (strlen(it->u.str.ptr) != it->u.str.len || strchr(it->u.str.ptr, ','))
          return at(L, SP_ERR_INVALID_VALUE, it->line, it->col, "item %zu of %s contains %s, "
                    "which cannot be part of a name; split it into separate items", i + 1,
                    spelling, strchr(it->u.str.ptr, ',') ? "a comma" : "a NUL character");
        if (i) sp__buf_putc(tmp, ',');
        sp__buf_add(tmp, it->u.str.ptr, it->u.str.len);
      }
      if (tmp->failed) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", L->name);
      v->s = tmp->p;
      return SP_OK;
    }
    return at(L, SP_ERR_INVALID_VALUE, tv->line, tv->col, "%s expects an array of strings (%s = "
              "[\"a\", \"b\"]) or a comma-separated string, got %s", spelling, spelling, got);
  }
  return SP_OK;
}

static sp_status load_setting(struct loader *L, const struct sp__setting *s, int grouped,
                              const sp__toml_entry *e) {
  const char *spelling = sp__setting_spelling(s, grouped);
  size_t idx = (size_t)(s - sp__settings);
  if (s->dotted && L->line[idx][!grouped])
    return at(L, SP_ERR_CONFLICT, e->line, e->col, "%s and %s (line %d) are both set; keep one",
              spelling, sp__setting_spelling(s, !grouped), L->line[idx][!grouped]);
  sp__buf tmp = SP__BUF_INIT;
  sp__value v;
  sp_status st = convert(L, s, spelling, e->value, &tmp, &v);
  if (!st) {
    st = sp__check_value(s, spelling, &v);
    if (st) sp__prefix_error("%s:%d:%d", L->name, e->value->line, e->value->col);
  }
  if (!st) st = sp__opt_put(L->out, s, grouped, &v);
  sp__buf_free(&tmp);
  if (!st) L->line[idx][grouped] = e->line;
  return st;
}

static sp_status unknown_at(const struct loader *L, const sp__toml_entry *e, const char *key) {
  sp__unknown_setting(key);
  sp__prefix_error("%s:%d:%d", L->name, e->line, e->col);
  return SP_ERR_UNKNOWN_SETTING;
}

static sp_status load_group(struct loader *L, int g, const sp__toml_entry *ge) {
  const sp__toml_value *t = ge->value;
  if (t->type != SP__TOML_TABLE)
    return at(L, SP_ERR_INVALID_VALUE, t->line, t->col, "%s must be a table of %s settings "
              "([profiling.%s], %s.<name> = ... or %s = {<name> = ...}), got %s", ge->key,
              ge->key, ge->key, ge->key, ge->key, sp__toml_type_article(t->type));
  for (size_t i = 0; i < t->u.tab.n; i++) {
    const sp__toml_entry *e = &t->u.tab.entries[i];
    const struct sp__setting *s = NULL;
    for (size_t k = 0; k < SP__NSETTINGS && !s; k++)
      if ((int)sp__settings[k].group == g && !strcmp(sp__settings[k].short_name, e->key))
        s = &sp__settings[k];
    if (!s || strlen(e->key) != e->key_len) {
      char full[256];
      snprintf(full, sizeof full, "%s.%s", ge->key, e->key);
      return unknown_at(L, e, full);
    }
    sp_status st = load_setting(L, s, 1, e);
    if (st) return st;
  }
  return SP_OK;
}

static sp_status load_table(struct loader *L, const sp__toml_value *prof) {
  for (size_t i = 0; i < prof->u.tab.n; i++) {
    const sp__toml_entry *e = &prof->u.tab.entries[i];
    sp_status st;
    int g = strlen(e->key) == e->key_len ? sp__group_find(e->key) : -1;
    if (g >= 0) {
      st = load_group(L, g, e);
    } else {
      int grouped;
      const struct sp__setting *s =
          strlen(e->key) == e->key_len ? sp__setting_find(e->key, &grouped) : NULL;
      if (s && grouped)
        return at(L, SP_ERR_UNKNOWN_SETTING, e->line, e->col, "\"%s\" is one quoted key, not the "
                  "setting %s; remove the quotes so that the dot separates %s and %s", e->key,
                  s->dotted, s->group_name, s->short_name);
      if (!s) return unknown_at(L, e, e->key);
      st = load_setting(L, s, 0, e);
    }
    if (st) return st;
  }
  return SP_OK;
}

sp_status sp__load_profiling_text(const char *text, size_t len, const char *name, sp_options *out) {
  if (!out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "no options to load %s into", name);
  sp__toml_value *root = NULL;
  sp_status st = sp__toml_parse(text, len, name, &root);
  if (st) return st;
  struct loader L = {.name = name, .out = out};
  const sp__toml_entry *pe = sp__toml_find(root, "profiling");
  if (pe) {
    if (pe->value->type != SP__TOML_TABLE) {
      st = at(&L, SP_ERR_INVALID_VALUE, pe->line, pe->col, "profiling must be a table: write "
              "[profiling] on its own line and the settings below it");
    } else {
      /* Settings next to [profiling] would be ignored: say so rather than
       * run with a configuration the user did not write. */
      for (size_t i = 0; !st && i < root->u.tab.n; i++) {
        const sp__toml_entry *e = &root->u.tab.entries[i];
        if (e->value->type == SP__TOML_TABLE) continue;
        if (sp__setting_find(e->key, NULL))
          st = at(&L, SP_ERR_INVALID_VALUE, e->line, e->col, "%s is outside the [profiling] "
                  "table and would be ignored; move it below [profiling]", e->key);
      }
      if (!st) st = load_table(&L, pe->value);
    }
  } else {
    st = load_table(&L, root);
  }
  sp__toml_free(root);
  return st;
}

sp_status sp_load_profiling_config(const char *path, sp_options *out) {
  if (!path || !out)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_load_profiling_config: path and options "
                         "must not be NULL");
  sp_status vst = sp__opt_valid(out);
  if (vst) return vst;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int err = errno;
    return sp__set_error(err == ENOENT ? SP_ERR_NOT_FOUND : SP_ERR_IO, "cannot open config file "
                         "%s: %s; check the path (relative paths start at the working "
                         "directory)", path, strerror(err));
  }
  sp__buf b = SP__BUF_INIT;
  char chunk[8192];
  size_t n;
  sp_status st = SP_OK;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    sp__buf_add(&b, chunk, n);
    if (b.n > MAX_CONFIG_BYTES) {
      st = sp__set_error(SP_ERR_LIMIT, "config file %s is larger than %u MiB; is it really a "
                         "TOML settings file?", path, MAX_CONFIG_BYTES >> 20);
      break;
    }
  }
  if (!st && ferror(f))
    st = sp__set_error(SP_ERR_IO, "cannot read config file %s: %s", path, strerror(errno));
  fclose(f);
  if (!st && b.failed) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory reading %s", path);
  if (!st) {
    sp_options tmp = SP_OPTIONS_INIT;
    st = sp__load_profiling_text(b.p ? b.p : "", b.n, path, &tmp);
    if (!st) {
      /* Merge into out, keeping the copies alive with out's own arena. */
      for (size_t i = 0; i < SP__NSETTINGS && !st; i++) {
        for (int g = 0; g < 2 && !st; g++) {
          sp__value v;
          if (sp__opt_get(&tmp, &sp__settings[i], g, &v))
            st = sp__opt_put(out, &sp__settings[i], g, &v);
        }
      }
    }
    sp_options_clear(&tmp);
  }
  sp__buf_free(&b);
  return st;
}
