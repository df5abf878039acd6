/* options.c - sp_options and everything that touches one setting at a time:
 * the settings table expanded into data (sp__settings[]), key lookup with
 * "did you mean", typed parsing of text values, per-value validation, and
 * the public sp_options_set/clear/each_set.
 *
 * Text copied by the setters lives in a small arena hanging off the options
 * (o->sp_i_owned), one allocation per copy, so that sp_options_clear() can
 * free everything without knowing which fields point where: fields assigned
 * by the caller keep pointing at the caller's memory and are never freed.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "config/config_buf.h"
#include "config/settings_meta.h"

/*====== The table as data ======*/

#define SP__T_BOOL SP__ST_BOOL
#define SP__T_INT SP__ST_INT
#define SP__T_STR SP__ST_STR
#define SP__T_ENUM SP__ST_ENUM
#define SP__T_LIST SP__ST_LIST

/* The default column is an integer for BOOL/INT rows, an enumerator for
 * ENUM rows and a string (or NULL) for the others; each half picks what its
 * type uses. */
#define SP__IDEF_BOOL(d) (d)
#define SP__IDEF_INT(d) (d)
#define SP__IDEF_ENUM(d) ((int64_t)(d))
#define SP__IDEF_STR(d) 0
#define SP__IDEF_LIST(d) 0
#define SP__SDEF_BOOL(d) NULL
#define SP__SDEF_INT(d) NULL
#define SP__SDEF_ENUM(d) NULL
#define SP__SDEF_STR(d) (d)
#define SP__SDEF_LIST(d) (d)

/* The words of every ENUM setting, in enum order: sp__words_<name>. */
#define SP__WORD(e, word) word,
#define SP__WORDS_DECL_BOOL(n)
#define SP__WORDS_DECL_INT(n)
#define SP__WORDS_DECL_STR(n)
#define SP__WORDS_DECL_LIST(n)
#define SP__WORDS_DECL_ENUM(n) static const char *const sp__words_##n[] = {SP__CHOICES_##n(SP__WORD) NULL};
#define SP__WORDS_DECL(num, n, g, f, T, ...) SP__WORDS_DECL_##T(n)
SP__ALL_SETTINGS(SP__WORDS_DECL)
#undef SP__WORDS_DECL
#define SP__WORDS_BOOL(n) NULL
#define SP__WORDS_INT(n) NULL
#define SP__WORDS_STR(n) NULL
#define SP__WORDS_LIST(n) NULL
#define SP__WORDS_ENUM(n) sp__words_##n
#define SP__NWORDS_BOOL(n) 0
#define SP__NWORDS_INT(n) 0
#define SP__NWORDS_STR(n) 0
#define SP__NWORDS_LIST(n) 0
#define SP__NWORDS_ENUM(n) ((int)(sizeof sp__words_##n / sizeof sp__words_##n[0]) - 1)

/* STATUS may be a macro of the block's header (BUILT_IF(flag, "switch"),
 * flag chosen by its build switch), so it is expanded before it is pasted. */
#define SP__STATUS_READY SP__SS_READY
#define SP__STATUS_PLANNED SP__SS_PLANNED
#define SP__STATUS_UNBUILT SP__SS_UNBUILT
#define SP__STATUS_BUILT_IF(flag, what) ((flag) ? SP__SS_READY : SP__SS_UNBUILT)
#define SP__STATUS_I(st) SP__STATUS_##st
#define SP__STATUS(st) SP__STATUS_I(st)
#define SP__BUILD_READY NULL
#define SP__BUILD_PLANNED NULL
#define SP__BUILD_UNBUILT NULL
#define SP__BUILD_BUILT_IF(flag, what) what
#define SP__BUILD_I(st) SP__BUILD_##st
#define SP__BUILD(st) SP__BUILD_I(st)

#define SP__SETTING_ROW(num, n, g, f, T, def, lo_, hi_, doc_, st)                                 \
  [num] = {.name = #n,                                                                                   \
   .group = SP__GROUP_##g,                                                                       \
   .group_name = #g,                                                                             \
   .short_name = #f,                                                                             \
   .dotted = SP__GROUP_SPELLED_##g ? #g "." #f : NULL,                                           \
   .type = SP__T_##T,                                                                            \
   .idef = SP__IDEF_##T(def),                                                                    \
   .sdef = SP__SDEF_##T(def),                                                                    \
   .lo = (lo_),                                                                                  \
   .hi = (hi_),                                                                                  \
   .choices = SP__WORDS_##T(n),                                                                  \
   .nchoices = SP__NWORDS_##T(n),                                                                \
   .doc = doc_,                                                                                  \
   .status = SP__STATUS(st),                                                                     \
   .build = SP__BUILD(st),                                                                       \
   .cfg_off = offsetof(struct sp_config, n)},

/* Rows sit at their numbers; a number given twice is an error in any build. */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Woverride-init"
const struct sp__setting sp__settings[SP__NSETTINGS] = {SP__ALL_SETTINGS(SP__SETTING_ROW)};
#pragma GCC diagnostic pop

/* 0: the row's status; else 1 + the status a test gave the setting. */
static unsigned char status_mark[SP__NSETTINGS];

sp__sstatus sp__setting_status(size_t i) {
  if (i >= SP__NSETTINGS) return SP__SS_PLANNED;
  return status_mark[i] ? (sp__sstatus)(status_mark[i] - 1) : sp__settings[i].status;
}

void sp__setting_mark_unavailable(size_t i, sp__sstatus st) {
  if (i < SP__NSETTINGS) status_mark[i] = st == SP__SS_READY ? 0 : (unsigned char)(st + 1);
}

#define SP__GROUP_ROW(g, sp_, title_, doc_) {.name = #g, .spelled = (sp_), .title = title_, .doc = doc_},
const struct sp__group sp__groups[SP__NGROUPS] = {SP__ALL_GROUPS(SP__GROUP_ROW)};

/* The code that walks the table reads and writes a resolved ENUM as int. */
#define SP__ENUM_SIZE_BOOL(n)
#define SP__ENUM_SIZE_INT(n)
#define SP__ENUM_SIZE_STR(n)
#define SP__ENUM_SIZE_LIST(n)
#define SP__ENUM_SIZE_ENUM(n) _Static_assert(sizeof(enum sp__##n) == sizeof(int), "enum sp__" #n " is read as an int");
#define SP__ENUM_SIZE(num, n, g, f, T, ...) SP__ENUM_SIZE_##T(n)
SP__ALL_SETTINGS(SP__ENUM_SIZE)
#undef SP__ENUM_SIZE

/* Every frozen field of sp_options must be a setting of the same type; each
 * field's offset (plus one, so that 0 means "no field") by setting. */
enum {
#define SP__ROWTYPE(num, n, g, f, T, ...) SP__ROWTYPE_##n = SP__T_##T,
  SP__ALL_SETTINGS(SP__ROWTYPE)
#undef SP__ROWTYPE
};
#define SP__CHECK_FLAT(n, T) \
  _Static_assert((int)SP__ROWTYPE_##n == (int)SP__T_##T, "sp_options." #n " must have the type of setting " #n);
#define SP__CHECK_GROUP(n, s, T) \
  _Static_assert((int)SP__ROWTYPE_##n == (int)SP__T_##T, "the group field of " #n " must have its type");
SP_I_OPTION_FIELDS(SP__CHECK_FLAT)
SP_I_MEMRAY_FIELDS(SP__CHECK_GROUP)
SP_I_GPU_FIELDS(SP__CHECK_GROUP)
SP_I_HDF5_FIELDS(SP__CHECK_GROUP)

#define SP__FLAT_OFF(n, T) [SP__SET_##n] = offsetof(sp_options, n) + 1,
static const size_t flat_off[SP__NSETTINGS] = {SP_I_OPTION_FIELDS(SP__FLAT_OFF)};
#define SP__MEMRAY_OFF(n, s, T) [SP__SET_##n] = offsetof(sp_options, memray.s) + 1,
#define SP__GPU_OFF(n, s, T) [SP__SET_##n] = offsetof(sp_options, gpu.s) + 1,
#define SP__HDF5_OFF(n, s, T) [SP__SET_##n] = offsetof(sp_options, hdf5.s) + 1,
static const size_t group_off[SP__NSETTINGS] = {SP_I_MEMRAY_FIELDS(SP__MEMRAY_OFF) SP_I_GPU_FIELDS(SP__GPU_OFF)
                                                   SP_I_HDF5_FIELDS(SP__HDF5_OFF)};
#define SP__GROUP_FIELD_NAME(n, s, T) [SP__SET_##n] = #s,
static const char *const group_field_name[SP__NSETTINGS] = {
    SP_I_MEMRAY_FIELDS(SP__GROUP_FIELD_NAME) SP_I_GPU_FIELDS(SP__GROUP_FIELD_NAME)
        SP_I_HDF5_FIELDS(SP__GROUP_FIELD_NAME)};

#define SP__RULE_ROW(k, a_, b_, ch, lo_, hi_, why_)                                                \
  {.kind = SP__RULE_##k, .a = SP__SET_##a_, .b = SP__SET_##b_, .choice = (int)(ch), .lo = (lo_),     \
   .hi = (hi_), .why = why_},
const struct sp__rule sp__rules[SP__NRULES] = {SP__ALL_RULES(SP__RULE_ROW)};
/* A range is an integer's, keyed by an enumeration; an implication turns a
 * boolean on. */
#define SP__RULE_CHECK(k, a_, b_, ...)                                                              \
  _Static_assert(SP__RULE_##k != SP__RULE_RANGE ||                                                 \
                     ((int)SP__ROWTYPE_##a_ == (int)SP__ST_INT && (int)SP__ROWTYPE_##b_ == (int)SP__ST_ENUM), \
                 "RANGE " #a_ " " #b_ ": an INT keyed by an ENUM");                                  \
  _Static_assert(SP__RULE_##k != SP__RULE_IMPLIES || (int)SP__ROWTYPE_##b_ == (int)SP__ST_BOOL,     \
                 "IMPLIES " #a_ " " #b_ ": the implied setting is a BOOL");
SP__ALL_RULES(SP__RULE_CHECK)

int sp__options_has_field(size_t setting, int grouped) {
  if (setting >= SP__NSETTINGS) return 0;
  return (grouped ? group_off : flat_off)[setting] != 0;
}

const char *sp__options_group_field(size_t setting) {
  return setting < SP__NSETTINGS ? group_field_name[setting] : NULL;
}

void sp__setting_env_name(const struct sp__setting *s, char *buf, size_t size) {
  size_t k = 0, pre = strlen(SP__ENV_PREFIX);
  if (size == 0) return;
  for (size_t i = 0; i < pre && k + 1 < size; i++) buf[k++] = SP__ENV_PREFIX[i];
  for (const char *p = s->name; *p && k + 1 < size; p++) buf[k++] = (char)toupper((unsigned char)*p);
  buf[k] = '\0';
}

const char *sp__setting_spelling(const struct sp__setting *s, int grouped) {
  return grouped && s->dotted ? s->dotted : s->name;
}

int sp__group_find(const char *name) {
  for (int g = 0; name && g < SP__NGROUPS; g++)
    if (sp__groups[g].spelled && !strcmp(name, sp__groups[g].name)) return g;
  return -1;
}

int sp__enum_index(const struct sp__setting *s, const char *word) {
  for (int k = 0; word && s->choices && k < s->nchoices; k++)
    if (!strcmp(s->choices[k], word)) return k;
  return -1;
}

const char *sp__enum_word(size_t setting, int value) {
  if (setting >= SP__NSETTINGS) return "";
  const struct sp__setting *s = &sp__settings[setting];
  return s->type == SP__ST_ENUM && value >= 0 && value < s->nchoices ? s->choices[value] : "";
}

const struct sp__setting *sp__setting_find(const char *key, int *grouped) {
  int g = 0;
  const struct sp__setting *found = NULL;
  if (key) {
    for (size_t i = 0; i < SP__NSETTINGS && !found; i++) {
      const struct sp__setting *s = &sp__settings[i];
      if (!strcmp(key, s->name)) {
        found = s;
      } else if (s->dotted && !strcmp(key, s->dotted)) {
        found = s;
        g = 1;
      }
    }
  }
  if (grouped) *grouped = g;
  return found;
}

/*====== Did you mean ======*/

/* Optimal-string-alignment distance, case-insensitive, so that transposed
 * letters ("fiel_path") count as one edit. Long inputs are cut: nobody
 * mistypes a 30-character name by more than the first 64 characters. Stops
 * early with a value >= bound once no path can come in under it.
 * Left out of fuzzing coverage: tracing every comparison of these loops made
 * them most of the fuzzer's time, and they hold no parsing decisions. */
#if defined(__clang__)
__attribute__((noinline, no_sanitize("coverage")))
#endif
static size_t edit_distance(const char *a, const char *b, size_t bound) {
  enum { MAXL = 64 };
  size_t la = strlen(a), lb = strlen(b);
  if (la > MAXL) la = MAXL;
  if (lb > MAXL) lb = MAXL;
  unsigned char ca[MAXL], cb[MAXL];
  for (size_t i = 0; i < la; i++) ca[i] = (unsigned char)tolower((unsigned char)a[i]);
  for (size_t j = 0; j < lb; j++) cb[j] = (unsigned char)tolower((unsigned char)b[j]);
  /* three rolling rows: i-2, i-1, i */
  size_t r0[MAXL + 1], r1[MAXL + 1], r2[MAXL + 1];
  size_t *pp = r0, *prev = r1, *cur = r2;
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  size_t prev_min = 0;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    size_t row_min = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t cost = ca[i - 1] == cb[j - 1] ? 0 : 1;
      size_t best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (prev[j - 1] + cost < best) best = prev[j - 1] + cost;
      if (i > 1 && j > 1 && ca[i - 1] == cb[j - 2] && ca[i - 2] == cb[j - 1] && pp[j - 2] + 1 < best)
        best = pp[j - 2] + 1;
      cur[j] = best;
      if (best < row_min) row_min = best;
    }
    /* a cell only grows from the two rows above it */
    if (row_min >= bound && prev_min >= bound) return bound;
    prev_min = row_min;
    size_t *t = pp;
    pp = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb];
}

/* The closest spelling of any setting, its setting and its distance. A
 * group field name ("compression") suggests its group spelling
 * ("hdf5.compression"). */
static const char *closest(const char *key, size_t *dist, const struct sp__setting **setting) {
  const char *best = NULL;
  size_t bd = (size_t)-1;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    const char *cand[3] = {s->name, s->dotted, s->dotted ? s->short_name : NULL};
    const char *sugg[3] = {s->name, s->dotted, s->dotted};
    size_t kl = strlen(key) < 64 ? strlen(key) : 64;
    for (int k = 0; k < 3; k++) {
      if (!cand[k]) continue;
      /* the length difference is a lower bound on the distance */
      size_t cl = strlen(cand[k]), lo = kl > cl ? kl - cl : cl - kl;
      if (lo >= bd) continue;
      size_t dd = edit_distance(key, cand[k], bd);
      if (dd < bd) {
        bd = dd;
        best = sugg[k];
        if (setting) *setting = s;
      }
    }
  }
  *dist = bd;
  return best;
}

const struct sp__setting *sp__setting_closest(const char *key, size_t *dist) {
  const struct sp__setting *s = NULL;
  closest(key, dist, &s);
  return s;
}

const char *sp__quote(const char *s, char buf[96]) {
  sp__buf b = SP__BUF_INIT;
  size_t n = strlen(s);
  int cut = n > 60;
  sp__buf_json_string(&b, s, cut ? 60 : n);
  char *t = sp__buf_take(&b);
  if (!t) return "\"...\"";
  size_t tl = strlen(t);
  if (tl > 88) tl = 88;
  memcpy(buf, t, tl);
  buf[tl] = '\0';
  if (cut) {
    /* keep the closing quote after the ellipsis */
    if (tl > 0 && buf[tl - 1] == '"') tl--;
    memcpy(buf + tl, "...\"", 5);
  }
  free(t);
  return buf;
}

/* 'name' in messages; odd keys (quotes, control characters, very long) are
 * shown escaped instead. */
static const char *quote_key(const char *key, char buf[96]) {
  size_t n = strlen(key);
  int plain = n > 0 && n <= 60;
  for (size_t i = 0; plain && i < n; i++)
    if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] >= 0x7F || key[i] == '\'' ||
        key[i] == '"' || key[i] == '\\')
      plain = 0;
  if (!plain) return sp__quote(key, buf);
  snprintf(buf, 96, "'%s'", key);
  return buf;
}

sp_status sp__unknown_setting(const char *key) {
  size_t d;
  const char *best = closest(key, &d, NULL);
  char q[96];
  size_t len = strlen(key);
  /* Close enough to be a typo: at most a third of the name, at least 2. */
  size_t limit = len / 3 > 2 ? len / 3 : 2;
  if (d <= limit)
    return sp__set_error(SP_ERR_UNKNOWN_SETTING, "unknown setting %s; did you mean '%s'?",
                         quote_key(key, q), best);
  return sp__set_error(SP_ERR_UNKNOWN_SETTING, "unknown setting %s (the closest is '%s'); "
                       "`scope-profiler config --help` lists every setting", quote_key(key, q),
                       best);
}

/*====== Parsing and checking values ======*/

static const char *type_name(sp__stype t) {
  switch (t) {
  case SP__ST_BOOL: return "a boolean";
  case SP__ST_INT: return "an integer";
  case SP__ST_STR: return "a string";
  case SP__ST_ENUM: return "one of its choices";
  case SP__ST_LIST: return "a comma-separated list";
  }
  return "a value";
}

/* Copy of text without surrounding blanks, in buf (cut to size). */
static const char *trimmed(const char *text, char *buf, size_t size) {
  while (*text == ' ' || *text == '\t') text++;
  size_t n = strlen(text);
  while (n && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\n' ||
               text[n - 1] == '\r'))
    n--;
  if (n >= size) n = size - 1;
  memcpy(buf, text, n);
  buf[n] = '\0';
  return buf;
}

static int parse_bool_word(const char *t, int *out) {
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  for (int i = 0; i < 4; i++) {
    if (!strcasecmp(t, yes[i])) return *out = 1, 1;
    if (!strcasecmp(t, no[i])) return *out = 0, 1;
  }
  return 0;
}

static int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

/* TOML-style integer: sign, `_` between digits, 0x/0o/0b prefixes. */
static int parse_int_text(const char *t, int64_t *out) {
  int neg = 0, base = 10;
  if (*t == '+' || *t == '-') neg = *t++ == '-';
  if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) base = 16, t += 2;
  else if (t[0] == '0' && (t[1] == 'o' || t[1] == 'O')) base = 8, t += 2;
  else if (t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) base = 2, t += 2;
  if (!*t) return 0;
  uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  int prev_digit = 0;
  for (; *t; t++) {
    if (*t == '_') {
      if (!prev_digit || digit_value(t[1]) >= base) return 0;
      prev_digit = 0;
      continue;
    }
    int d = digit_value(*t);
    if (d >= base) return 0;
    if (v > (limit - (uint64_t)d) / (uint64_t)base) return 0;
    v = v * (uint64_t)base + (uint64_t)d;
    prev_digit = 1;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 1;
}

/* "a, b, c" */
static void list_choices(const struct sp__setting *s, char *buf, size_t size) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < s->nchoices; i++) {
    int n = snprintf(buf + k, size - k, "%s%s", i ? ", " : "", s->choices[i]);
    if (n < 0 || (size_t)n >= size - k) break;
    k += (size_t)n;
  }
}

static int is_choice(const struct sp__setting *s, const char *v, int icase) {
  for (int i = 0; i < s->nchoices; i++)
    if (icase ? strcasecmp(s->choices[i], v) == 0 : strcmp(s->choices[i], v) == 0) return 1;
  return 0;
}

sp_status sp__parse_text(const struct sp__setting *s, const char *spelling, const char *text,
                         sp__value *out) {
  char tb[128], q[96];
  out->set = 1;
  out->i = 0;
  out->s = NULL;
  switch (s->type) {
  case SP__ST_BOOL: {
    int b;
    if (!parse_bool_word(trimmed(text, tb, sizeof tb), &b))
      return sp__set_error(SP_ERR_INVALID_VALUE, "%s expects a boolean (1/0, true/false, yes/no, "
                           "on/off), got %s", spelling, sp__quote(text, q));
    out->i = b;
    return SP_OK;
  }
  case SP__ST_INT:
    if (!parse_int_text(trimmed(text, tb, sizeof tb), &out->i))
      return sp__set_error(SP_ERR_INVALID_VALUE, "%s expects an integer (like 1024, 1_000_000 or "
                           "0x400), got %s", spelling, sp__quote(text, q));
    return SP_OK;
  case SP__ST_ENUM:
    out->s = text;
    return SP_OK;
  case SP__ST_STR:
  case SP__ST_LIST:
    out->s = text;
    return SP_OK;
  }
  return sp__set_error(SP_ERR_INVALID_VALUE, "%s expects %s", spelling, type_name(s->type));
}

sp_status sp__check_value(const struct sp__setting *s, const char *spelling, const sp__value *v) {
  char q[96], ch[128];
  if (!v->set) return SP_OK;
  switch (s->type) {
  case SP__ST_BOOL:
    if (v->i != 0 && v->i != 1)
      return sp__set_error(SP_ERR_INVALID_VALUE, "%s must be 0 (false), 1 (true) or SP_UNSET, "
                           "got %lld", spelling, (long long)v->i);
    return SP_OK;
  case SP__ST_INT:
    if (v->i < s->lo || v->i > s->hi) {
      if (s->hi >= INT64_C(1) << 31 && v->i < s->lo)
        return sp__set_error(SP_ERR_INVALID_VALUE, "%s must be at least %lld, got %lld", spelling,
                             (long long)s->lo, (long long)v->i);
      return sp__set_error(SP_ERR_INVALID_VALUE, "%s must be between %lld and %lld, got %lld",
                           spelling, (long long)s->lo, (long long)s->hi, (long long)v->i);
    }
    return SP_OK;
  case SP__ST_ENUM:
    if (!v->s || !is_choice(s, v->s, 0)) {
      list_choices(s, ch, sizeof ch);
      return sp__set_error(SP_ERR_INVALID_VALUE, "%s must be one of: %s; got %s%s", spelling, ch,
                           v->s ? sp__quote(v->s, q) : "nothing",
                           v->s && is_choice(s, v->s, 1) ? " (write it in lowercase)" : "");
    }
    return SP_OK;
  case SP__ST_STR:
  case SP__ST_LIST:
    return SP_OK;
  }
  return SP_OK;
}

const char *sp__value_text(const struct sp__setting *s, const sp__value *v, char buf[32]) {
  if (!v->set) return "";
  switch (s->type) {
  case SP__ST_BOOL:
    return v->i ? "true" : "false";
  case SP__ST_INT:
    snprintf(buf, 32, "%lld", (long long)v->i);
    return buf;
  default:
    return v->s ? v->s : "";
  }
}

const char *sp__origin_name(sp_origin o) {
  switch (o) {
  case SP_ORIGIN_DEFAULT: return "default";
  case SP_ORIGIN_FILE: return "file";
  case SP_ORIGIN_OPTIONS: return "options";
  case SP_ORIGIN_ENV: return "environment";
  case SP_ORIGIN_OVERRIDE: return "override";
  }
  return "unknown";
}

/*====== Options fields ======*/

/* What an sp_options owns: the text copied by the setters (one allocation
 * per copy, so that clearing frees everything without knowing which fields
 * point where), and the values of settings that have no field. */
struct sp__text {
  struct sp__text *next;
  char text[];
};
struct sp__optval {
  int setting, grouped;
  int64_t i;
  const char *s; /* in texts */
};
struct sp_i_optstore {
  struct sp__text *texts;
  struct sp__optval *vals;
  size_t nvals, capvals;
};

sp_status sp__opt_valid(const sp_options *o) {
  if (!o) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "options are NULL");
  if (o->sp_i_size != sizeof(sp_options) || o->sp_i_version != SP_OPTIONS_VERSION)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "these sp_options were not initialised with "
                         "SP_OPTIONS_INIT (their size is %u bytes, version %u; this library's are "
                         "%zu, %d): start from  sp_options o = SP_OPTIONS_INIT;  and rebuild "
                         "against this scope-profiler's headers", (unsigned)o->sp_i_size,
                         (unsigned)o->sp_i_version, sizeof(sp_options), SP_OPTIONS_VERSION);
  return SP_OK;
}

static struct sp_i_optstore *store_of(sp_options *o) {
  if (!o->sp_i_owned) o->sp_i_owned = calloc(1, sizeof *o->sp_i_owned);
  return o->sp_i_owned;
}

static const char *text_dup(sp_options *o, const char *s) {
  struct sp_i_optstore *st = store_of(o);
  size_t n = strlen(s);
  struct sp__text *t = st ? malloc(sizeof *t + n + 1) : NULL;
  if (!t) return NULL;
  memcpy(t->text, s, n + 1);
  t->next = st->texts;
  st->texts = t;
  return t->text;
}

/* The field of one spelling, or NULL when it has none. */
static void *field(const sp_options *o, const struct sp__setting *s, int grouped) {
  size_t i = (size_t)(s - sp__settings), off = (grouped ? group_off : flat_off)[i];
  return off ? (char *)o + off - 1 : NULL;
}

static struct sp__optval *stored(const sp_options *o, const struct sp__setting *s, int grouped) {
  const struct sp_i_optstore *st = o->sp_i_owned;
  int idx = (int)(s - sp__settings);
  for (size_t k = 0; st && k < st->nvals; k++)
    if (st->vals[k].setting == idx && st->vals[k].grouped == grouped) return &st->vals[k];
  return NULL;
}

int sp__opt_get(const sp_options *o, const struct sp__setting *s, int grouped, sp__value *v) {
  v->set = 0;
  v->i = 0;
  v->s = NULL;
  if (grouped && !s->dotted) return 0;
  const void *f = field(o, s, grouped);
  if (!f) {
    const struct sp__optval *sv = stored(o, s, grouped);
    if (!sv) return 0;
    v->i = sv->i;
    v->s = sv->s;
    return v->set = 1;
  }
  switch (s->type) {
  case SP__ST_BOOL: {
    sp_bool3 b = *(const sp_bool3 *)f;
    if (b == SP_UNSET) return 0;
    v->i = b;
    break;
  }
  case SP__ST_INT: {
    int64_t i = *(const int64_t *)f;
    if (i == SP_INT_NONE) return 0;
    v->i = i;
    break;
  }
  default: {
    const char *p = *(const char *const *)f;
    if (!p) return 0;
    v->s = p;
    break;
  }
  }
  v->set = 1;
  return 1;
}

static sp_status put_stored(sp_options *o, const struct sp__setting *s, int grouped, const sp__value *v) {
  struct sp__optval *sv = stored(o, s, grouped);
  if (!v->set) {
    if (sv) {
      struct sp_i_optstore *st = o->sp_i_owned;
      *sv = st->vals[--st->nvals];
    }
    return SP_OK;
  }
  const char *copy = NULL;
  if ((s->type != SP__ST_BOOL && s->type != SP__ST_INT) && !(copy = text_dup(o, v->s ? v->s : "")))
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory copying %s", sp__setting_spelling(s, grouped));
  if (!sv) {
    struct sp_i_optstore *st = store_of(o);
    if (st && st->nvals == st->capvals) {
      size_t cap = st->capvals ? 2 * st->capvals : 8;
      struct sp__optval *nv = realloc(st->vals, cap * sizeof *nv);
      if (nv) {
        st->vals = nv;
        st->capvals = cap;
      }
    }
    if (!st || st->nvals == st->capvals)
      return sp__set_error(SP_ERR_NO_MEMORY, "out of memory setting %s", sp__setting_spelling(s, grouped));
    sv = &st->vals[st->nvals++];
    sv->setting = (int)(s - sp__settings);
    sv->grouped = grouped;
  }
  sv->i = v->i;
  sv->s = copy;
  return SP_OK;
}

sp_status sp__opt_put(sp_options *o, const struct sp__setting *s, int grouped, const sp__value *v) {
  if (grouped && !s->dotted) grouped = 0;
  void *f = field(o, s, grouped);
  if (!f) return put_stored(o, s, grouped, v);
  switch (s->type) {
  case SP__ST_BOOL:
    *(sp_bool3 *)f = v->set ? (sp_bool3)(v->i != 0) : (sp_bool3)SP_UNSET;
    break;
  case SP__ST_INT:
    *(int64_t *)f = v->set ? v->i : SP_INT_NONE;
    break;
  default: {
    const char *copy = NULL;
    if (v->set) {
      copy = text_dup(o, v->s ? v->s : "");
      if (!copy) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory copying %s",
                                      sp__setting_spelling(s, grouped));
    }
    *(const char **)f = copy;
    break;
  }
  }
  return SP_OK;
}

sp_status sp__opt_effective(const sp_options *o, const struct sp__setting *s, sp__value *v) {
  sp__value g;
  int has_flat = sp__opt_get(o, s, 0, v);
  int has_group = sp__opt_get(o, s, 1, &g);
  if (has_flat && has_group)
    return sp__set_error(SP_ERR_CONFLICT, "%s and %s are both set; keep one", s->name, s->dotted);
  if (has_group) *v = g;
  return SP_OK;
}

/*====== Public API ======*/

sp_status sp_options_set(sp_options *o, const char *key, const char *value) {
  if (!o || !key)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_options_set: options and key must not be "
                         "NULL");
  sp_status st = sp__opt_valid(o);
  if (st) return st;
  int grouped;
  const struct sp__setting *s = sp__setting_find(key, &grouped);
  if (!s) return sp__unknown_setting(key);
  sp__value v = {0};
  if (value) {
    st = sp__parse_text(s, key, value, &v);
    if (!st) st = sp__check_value(s, key, &v);
    if (st) return st;
    sp__value other;
    if (s->dotted && sp__opt_get(o, s, !grouped, &other))
      return sp__set_error(SP_ERR_CONFLICT, "%s and %s are both set; keep one",
                           sp__setting_spelling(s, grouped), sp__setting_spelling(s, !grouped));
  }
  return sp__opt_put(o, s, grouped, &v);
}

sp_status sp_options_get(const sp_options *o, const char *key, char *buf, size_t size) {
  if (!key || !buf || size == 0)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_options_get: key and buffer must not be NULL");
  buf[0] = '\0';
  sp_status st = sp__opt_valid(o);
  if (st) return st;
  int grouped;
  const struct sp__setting *s = sp__setting_find(key, &grouped);
  if (!s) return sp__unknown_setting(key);
  sp__value v;
  if (!sp__opt_get(o, s, 0, &v)) (void)sp__opt_get(o, s, 1, &v);
  if (!v.set) return sp__set_error(SP_ERR_NOT_FOUND, "%s is not set in these options", key);
  char num[32];
  const char *t = sp__value_text(s, &v, num);
  size_t n = strlen(t);
  if (n >= size)
    return sp__set_error(SP_ERR_LIMIT, "the value of %s has %zu bytes; the buffer holds %zu", key, n, size - 1);
  memcpy(buf, t, n + 1);
  return SP_OK;
}

void sp_options_clear(sp_options *o) {
  if (!o || sp__opt_valid(o)) return;
  struct sp_i_optstore *st = o->sp_i_owned;
  for (struct sp__text *t = st ? st->texts : NULL; t;) {
    struct sp__text *next = t->next;
    free(t);
    t = next;
  }
  if (st) free(st->vals);
  free(st);
  *o = (sp_options)SP_OPTIONS_INIT;
}

sp_status sp_options_each_set(const sp_options *o,
                              void (*fn)(const char *name, const char *value, void *user),
                              void *user) {
  if (!o || !fn)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_options_each_set: options and callback "
                         "must not be NULL");
  sp_status st = sp__opt_valid(o);
  if (st) return st;
  sp__value v;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    st = sp__opt_effective(o, &sp__settings[i], &v);
    if (st) return st;
  }
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    char buf[32];
    (void)sp__opt_effective(o, &sp__settings[i], &v);
    if (v.set) fn(sp__settings[i].name, sp__value_text(&sp__settings[i], &v, buf), user);
  }
  return SP_OK;
}
