/* cli_opts.c - parsing, validation, defaults and --help of a command's
 * options, all from its table of rows (see cli_opts.h).
 */
#include "cli/cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 79 /* columns of the --help text */
#define HELP_INDENT 25 /* where descriptions start */

static void *field(void *opts, const struct sp_cli_opt *row) { return (char *)opts + row->off; }

const struct sp_cli_opt *sp_cli_row(const struct sp_cli_spec *spec, const char *name) {
  for (size_t i = 0; i < spec->nrows; i++)
    if (!strcmp(spec->rows[i].name, name)) return &spec->rows[i];
  return NULL;
}

void sp_cli_choice_list(const struct sp_cli_opt *row, char *buf, size_t size) {
  size_t n = 0, len = 0;
  while (row->choices && row->choices[n]) n++;
  buf[0] = '\0';
  for (size_t i = 0; i < n && len < size; i++) {
    const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
    int w = snprintf(buf + len, size - len, "%s%s", sep, row->choices[i]);
    if (w < 0) break;
    len += (size_t)w;
  }
}

static int choice_index(const struct sp_cli_opt *row, const char *s, size_t len) {
  for (int i = 0; row->choices[i]; i++)
    if (strlen(row->choices[i]) == len && !strncmp(row->choices[i], s, len)) return i;
  return -1;
}

static int unknown_choice(const struct sp_cli_spec *spec, const struct sp_cli_opt *row,
                          const char *s, size_t len) {
  char list[1024];
  sp_cli_choice_list(row, list, sizeof list);
  return sp_cli_usage_error(spec->name, "unknown %s '%.*s'; use %s", row->what ? row->what : row->name,
                            (int)len, s, list);
}

/* Store one value of `row`; 0, or 2 after printing the error. */
static int set_value(const struct sp_cli_spec *spec, const struct sp_cli_opt *row, void *opts,
                     const char *s) {
  void *p = field(opts, row);
  char *end;
  switch (row->kind) {
  case SP_OPT_FLAG: *(int *)p = 1; return 0;
  case SP_OPT_STR: *(const char **)p = s; return 0;
  case SP_OPT_INT: {
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || (double)v < row->lo || (double)v > row->hi)
      return sp_cli_usage_error(spec->name, "%s must be %s from %.0f to %.0f, got '%s'", row->name,
                                row->what ? row->what : "a number", row->lo, row->hi, s);
    *(long *)p = v;
    return 0;
  }
  case SP_OPT_NUM: {
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= row->lo) || (row->hi > row->lo && !(v <= row->hi)))
      return sp_cli_usage_error(spec->name, "%s needs %s, not '%s'", row->name,
                                row->what ? row->what : "a number", s);
    *(double *)p = v;
    return 0;
  }
  case SP_OPT_CHOICE: {
    int k = choice_index(row, s, strlen(s));
    if (k < 0) return unknown_choice(spec, row, s, strlen(s));
    *(int *)p = k;
    return 0;
  }
  case SP_OPT_LIST:
    if (sp_cli_strs_push(p, s)) return sp_cli_error(spec->name, "out of memory");
    return 0;
  case SP_OPT_CHOICES: {
    struct sp_cli_choices *c = p;
    for (const char *t = s; *t;) {
      size_t len = strcspn(t, ",");
      if (len) {
        int k = choice_index(row, t, len);
        if (k < 0) return unknown_choice(spec, row, t, len);
        int dup = 0;
        for (size_t j = 0; (row->flags & SP_OPT_UNIQUE) && j < c->n; j++) dup |= c->v[j] == k;
        if (!dup && c->n == SP_CLI_MAX_CHOICES)
          return sp_cli_usage_error(spec->name, "%s: at most %d values", row->name,
                                    SP_CLI_MAX_CHOICES);
        if (!dup) c->v[c->n++] = k;
      }
      t += len;
      if (*t == ',') t++;
    }
    return 0;
  }
  }
  return 0;
}

int sp_cli_parse(const struct sp_cli_spec *spec, int argc, char **argv, void *opts) {
  int rc;
  for (size_t r = 0; r < spec->nrows; r++) {
    const struct sp_cli_opt *row = &spec->rows[r];
    if (row->kind == SP_OPT_CHOICE) *(int *)field(opts, row) = -1;
    if (row->def && (rc = set_value(spec, row, opts, row->def))) return rc;
  }
  unsigned char given[256] = {0};
  struct sp_cli_strs *pos = (struct sp_cli_strs *)((char *)opts + spec->pos_off);
  struct sp_cli_args a = {spec->name, argc, argv, 1, 0};
  for (; a.i < argc; a.i++) {
    if (sp_cli_positional(&a)) {
      if (sp_cli_strs_push(pos, argv[a.i])) return sp_cli_error(spec->name, "out of memory");
      continue;
    }
    if (a.only_positionals) continue; /* the "--" itself */
    if (sp_cli_flag(&a, "--help", "-h")) {
      sp_cli_help(spec, stdout);
      return SP_CLI_HELP;
    }
    size_t r = 0;
    int m = 0;
    for (; r < spec->nrows && !m; r++) {
      const struct sp_cli_opt *row = &spec->rows[r];
      if (row->kind == SP_OPT_FLAG) {
        if ((m = sp_cli_flag(&a, row->name, row->alias))) *(int *)field(opts, row) = 1;
        continue;
      }
      if (row->kind == SP_OPT_LIST) {
        m = sp_cli_list(&a, row->name, row->alias, field(opts, row));
        continue;
      }
      if (row->kind == SP_OPT_CHOICES) {
        struct sp_cli_strs vals = {0};
        m = sp_cli_list(&a, row->name, row->alias, &vals);
        for (size_t k = 0; m > 0 && k < vals.n; k++)
          if (set_value(spec, row, opts, vals.v[k])) m = -1;
        sp_cli_strs_free(&vals);
        continue;
      }
      const char *v;
      if ((m = sp_cli_value(&a, row->name, row->alias, &v)) > 0 &&
          set_value(spec, row, opts, v))
        m = -1;
    }
    if (m < 0) return 2;
    if (!m) return sp_cli_usage_error(spec->name, "unknown option %s", argv[a.i]);
    if (r - 1 < sizeof given) given[r - 1] = 1;
  }
  if (spec->no_positional && pos->n == 0)
    return sp_cli_usage_error(spec->name, "%s", spec->no_positional);
  for (size_t r = 0; r < spec->nrows && r < sizeof given; r++) {
    const struct sp_cli_opt *row = &spec->rows[r];
    if (row->required && !given[r])
      return sp_cli_usage_error(spec->name, "%s %s is required (%s)",
                                row->alias ? row->alias : row->name, row->metavar ? row->metavar : "",
                                row->required);
  }
  return 0;
}

void sp_cli_opts_free(const struct sp_cli_spec *spec, void *opts) {
  for (size_t r = 0; r < spec->nrows; r++)
    if (spec->rows[r].kind == SP_OPT_LIST) sp_cli_strs_free(field(opts, &spec->rows[r]));
  sp_cli_strs_free((struct sp_cli_strs *)((char *)opts + spec->pos_off));
}

/* ---- --help ------------------------------------------------------------------------- */

/* The row's help with {default}, {range} and {choices} filled in. */
static void expand_help(const struct sp_cli_opt *row, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (const char *s = row->help ? row->help : ""; *s && len + 1 < size;) {
    char sub[1024];
    const char *rep = NULL;
    size_t skip = 0;
    if (!strncmp(s, "{default}", 9)) {
      rep = row->def ? row->def : "";
      skip = 9;
    } else if (!strncmp(s, "{range}", 7)) {
      snprintf(sub, sizeof sub, "%.0f-%.0f", row->lo, row->hi);
      rep = sub;
      skip = 7;
    } else if (!strncmp(s, "{choices}", 9)) {
      size_t n = 0, k = 0;
      while (row->choices && row->choices[n]) n++;
      sub[0] = '\0';
      for (size_t i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int dflt = row->def && !strcmp(row->def, row->choices[i]);
        int w = snprintf(sub + k, sizeof sub - k, "%s%s%s", sep, row->choices[i],
                         dflt ? " (default)" : "");
        if (w < 0 || (size_t)w >= sizeof sub - k) break;
        k += (size_t)w;
      }
      rep = sub;
      skip = 9;
    }
    if (rep) {
      int w = snprintf(out + len, size - len, "%s", rep);
      len = w < 0 ? len : len + (size_t)w < size ? len + (size_t)w : size - 1;
      s += skip;
    } else {
      out[len++] = *s++;
      out[len] = '\0';
    }
  }
}

/* Words of `text` from column `col` up to HELP_WIDTH, continuation lines at
 * HELP_INDENT; "\n" forces a break. */
static void wrap(FILE *out, const char *text, size_t col) {
  const char *s = text;
  while (*s) {
    size_t word = strcspn(s, " \n");
    if (col > HELP_INDENT && col + 1 + sp_cli_width_n(s, word) > HELP_WIDTH) {
      fprintf(out, "\n%*s", HELP_INDENT, "");
      col = HELP_INDENT;
    } else if (col > HELP_INDENT) {
      fputc(' ', out);
      col++;
    }
    fwrite(s, 1, word, out);
    col += sp_cli_width_n(s, word);
    s += word;
    if (*s == '\n') {
      fprintf(out, "\n%*s", HELP_INDENT, "");
      col = HELP_INDENT;
      s++;
    } else {
      while (*s == ' ') s++;
    }
  }
}

static void help_row(FILE *out, const char *names, const char *help) {
  size_t w = 2 + sp_cli_width(names);
  fprintf(out, "  %s", names);
  if (w + 2 > HELP_INDENT) {
    fprintf(out, "\n%*s", HELP_INDENT, "");
  } else {
    fprintf(out, "%*s", (int)(HELP_INDENT - w), "");
  }
  wrap(out, help, HELP_INDENT);
  fputc('\n', out);
}

void sp_cli_help(const struct sp_cli_spec *spec, FILE *out) {
  fprintf(out, "usage: scope-profiler %s %s\n\n", spec->name, spec->usage);
  if (spec->about) fprintf(out, "%s\n", spec->about);
  fputs("options:\n", out);
  for (size_t r = 0; r < spec->nrows; r++) {
    const struct sp_cli_opt *row = &spec->rows[r];
    if (row->flags & SP_OPT_HIDDEN) continue;
    char names[128], help[2048];
    snprintf(names, sizeof names, "%s%s%s%s%s", row->alias ? row->alias : "",
             row->alias ? ", " : "", row->name, row->metavar ? " " : "",
             row->metavar ? row->metavar : "");
    expand_help(row, help, sizeof help);
    help_row(out, names, help);
  }
  help_row(out, "-h, --help", "this help");
  if (spec->epilog) fprintf(out, "\n%s", spec->epilog);
}
