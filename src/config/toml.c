/* toml.c - the TOML 1.0 reader behind configuration files (see toml.h).
 *
 * A hand-written recursive-descent parser over a buffer that is checked to be
 * UTF-8 first, so everything after that can work on bytes. Tables keep their
 * entries in document order in a plain array: configuration files are small,
 * and the order is what the dump and the error messages want.
 *
 * Redefinition rules follow TOML 1.0 (as Python's tomllib reads it): a table
 * is defined once, either by its [header] or by dotted keys; a header may add
 * sub-tables below a table made by dotted keys; dotted keys may extend tables
 * that dotted keys made, or define one a deeper header only implied, but never
 * reopen a table a header defined; inline tables are complete once closed.
 */
#include "config/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "config/config_buf.h"

/* Deeper nesting of arrays and inline tables than this is refused, so that a
 * hostile file cannot exhaust the stack. */
#define MAX_DEPTH 64
/* Longest number token considered (the longest sensible float is ~40). */
#define MAX_NUMBER 128

typedef struct parser {
  const char *s, *p, *end;
  const char *name;
  int line;               /* line of p, 1-based */
  const char *line_start; /* first byte of that line */
  sp__toml_value *root;
  sp__toml_value *cur; /* table that key/value lines go to */
  int depth;
} parser;

/* One part of a (possibly dotted) key. */
typedef struct keypart {
  char *s;
  size_t len;
  int line, col;
} keypart;

typedef struct key {
  keypart *parts;
  size_t n, cap;
} key;

/*====== Positions and errors ======*/

static int column_of(const char *line_start, const char *at) {
  int col = 1;
  for (const char *q = line_start; q < at; q++)
    if (((unsigned char)*q & 0xC0) != 0x80) col++;
  return col;
}

static void position(const parser *P, const char *at, int *line, int *col) {
  if (at >= P->line_start) {
    *line = P->line;
    *col = column_of(P->line_start, at);
    return;
  }
  /* Rare: an error reported at an earlier line (a multi-line string). */
  int l = 1;
  const char *ls = P->s;
  for (const char *q = P->s; q < at; q++)
    if (*q == '\n') {
      l++;
      ls = q + 1;
    }
  *line = l;
  *col = column_of(ls, at);
}

__attribute__((format(printf, 3, 4))) static sp_status fail(const parser *P, const char *at,
                                                            const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  position(P, at, &line, &col);
  return sp__set_error(SP_ERR_PARSE, "%s:%d:%d: %s", P->name, line, col, msg);
}

static sp_status oom(void) {
  return sp__set_error(SP_ERR_NO_MEMORY, "out of memory while reading a TOML file");
}

/* A printable rendering of the character at p for messages. */
static const char *show_char(const parser *P, const char *p, char buf[16]) {
  if (p >= P->end) return "end of file";
  unsigned char c = (unsigned char)*p;
  if (c == '\n' || c == '\r') return "end of line";
  if (c < 0x20 || c == 0x7F) {
    snprintf(buf, 16, "U+%04X", c);
    return buf;
  }
  if (c >= 0x80) return "a non-ASCII character";
  snprintf(buf, 16, "'%c'", c);
  return buf;
}

/*====== Tree ======*/

static sp__toml_value *new_value(sp__toml_type t, int line, int col) {
  sp__toml_value *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->type = t;
  v->line = line;
  v->col = col;
  return v;
}

void sp__toml_free(sp__toml_value *v) {
  if (!v) return;
  switch (v->type) {
  case SP__TOML_STRING:
    free(v->u.str.ptr);
    break;
  case SP__TOML_ARRAY:
    for (size_t i = 0; i < v->u.arr.n; i++) sp__toml_free(v->u.arr.items[i]);
    free(v->u.arr.items);
    break;
  case SP__TOML_TABLE:
    for (size_t i = 0; i < v->u.tab.n; i++) {
      free(v->u.tab.entries[i].key);
      sp__toml_free(v->u.tab.entries[i].value);
    }
    free(v->u.tab.entries);
    break;
  default:
    break;
  }
  free(v);
}

static sp__toml_entry *find_entry(const sp__toml_value *t, const char *k, size_t len) {
  for (size_t i = 0; i < t->u.tab.n; i++) {
    sp__toml_entry *e = &t->u.tab.entries[i];
    if (e->key_len == len && memcmp(e->key, k, len) == 0) return e;
  }
  return NULL;
}

const sp__toml_entry *sp__toml_find(const sp__toml_value *table, const char *k) {
  if (!table || table->type != SP__TOML_TABLE || !k) return NULL;
  return find_entry(table, k, strlen(k));
}

const char *sp__toml_type_name(sp__toml_type t) {
  switch (t) {
  case SP__TOML_STRING: return "string";
  case SP__TOML_INTEGER: return "integer";
  case SP__TOML_FLOAT: return "float";
  case SP__TOML_BOOL: return "boolean";
  case SP__TOML_ARRAY: return "array";
  case SP__TOML_TABLE: return "table";
  }
  return "value";
}

const char *sp__toml_type_article(sp__toml_type t) {
  switch (t) {
  case SP__TOML_STRING: return "a string";
  case SP__TOML_INTEGER: return "an integer";
  case SP__TOML_FLOAT: return "a float";
  case SP__TOML_BOOL: return "a boolean";
  case SP__TOML_ARRAY: return "an array";
  case SP__TOML_TABLE: return "a table";
  }
  return "a value";
}

/* Append an entry; takes ownership of the key copy and of v. */
static sp_status add_entry(sp__toml_value *t, const keypart *kp, sp__toml_value *v) {
  if (t->u.tab.n == t->u.tab.cap) {
    size_t cap = t->u.tab.cap ? t->u.tab.cap * 2 : 8;
    sp__toml_entry *e = realloc(t->u.tab.entries, cap * sizeof *e);
    if (!e) return oom();
    t->u.tab.entries = e;
    t->u.tab.cap = cap;
  }
  char *k = sp__strndup(kp->s, kp->len);
  if (!k) return oom();
  t->u.tab.entries[t->u.tab.n++] =
      (sp__toml_entry){.key = k, .key_len = kp->len, .line = kp->line, .col = kp->col, .value = v};
  return SP_OK;
}

static sp_status add_item(sp__toml_value *a, sp__toml_value *v) {
  if (a->u.arr.n == a->u.arr.cap) {
    size_t cap = a->u.arr.cap ? a->u.arr.cap * 2 : 4;
    sp__toml_value **items = realloc(a->u.arr.items, cap * sizeof *items);
    if (!items) return oom();
    a->u.arr.items = items;
    a->u.arr.cap = cap;
  }
  a->u.arr.items[a->u.arr.n++] = v;
  return SP_OK;
}

/* Mark a closed inline table, and every table made inside it, complete. */
static void seal(sp__toml_value *t) {
  t->flags |= SP__TOML_T_INLINE;
  for (size_t i = 0; i < t->u.tab.n; i++) {
    sp__toml_value *v = t->u.tab.entries[i].value;
    if (v->type == SP__TOML_TABLE) seal(v);
  }
}

/*====== Key text for messages ======*/

/* The key as written in messages: bare parts as-is, others quoted. */
static void key_text(const key *k, size_t upto, char *buf, size_t size) {
  sp__buf b = SP__BUF_INIT;
  for (size_t i = 0; i < upto; i++) {
    if (i) sp__buf_putc(&b, '.');
    int bare = k->parts[i].len > 0;
    for (size_t j = 0; j < k->parts[i].len; j++) {
      char c = k->parts[i].s[j];
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '-'))
        bare = 0;
    }
    if (bare)
      sp__buf_add(&b, k->parts[i].s, k->parts[i].len);
    else
      sp__buf_json_string(&b, k->parts[i].s, k->parts[i].len);
  }
  char *t = sp__buf_take(&b);
  snprintf(buf, size, "%s", t ? t : "?");
  free(t);
}

static void key_free(key *k) {
  for (size_t i = 0; i < k->n; i++) free(k->parts[i].s);
  free(k->parts);
  k->parts = NULL;
  k->n = k->cap = 0;
}

/*====== Lexical helpers ======*/

static int at_eof(const parser *P) { return P->p >= P->end; }

static void skip_ws(parser *P) {
  while (P->p < P->end && (*P->p == ' ' || *P->p == '\t')) P->p++;
}

static int is_newline(const parser *P, const char *p) {
  return p < P->end && (*p == '\n' || (*p == '\r' && p + 1 < P->end && p[1] == '\n'));
}

static void take_newline(parser *P) {
  if (*P->p == '\r') P->p++;
  P->p++;
  P->line++;
  P->line_start = P->p;
}

static int is_control(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7F; }

static sp_status bad_control(const parser *P, const char *at, const char *where) {
  unsigned char c = (unsigned char)*at;
  if (c == '\r')
    return fail(P, at, "carriage return without a line feed %s; save the file with LF or CRLF line ends",
                where);
  return fail(P, at, "control character U+%04X is not allowed %s; remove it%s", c, where,
              strcmp(where, "in a basic string") == 0 ? " or write it as an escape (\\uXXXX)" : "");
}

/* A comment runs to the end of the line; only its characters are checked. */
static sp_status skip_comment(parser *P) {
  P->p++; /* '#' */
  while (P->p < P->end && *P->p != '\n') {
    if (is_newline(P, P->p)) break;
    if (is_control((unsigned char)*P->p)) return bad_control(P, P->p, "in a comment");
    P->p++;
  }
  return SP_OK;
}

/* After a key/value pair or a header: spaces, an optional comment, then the
 * end of the line or of the file. */
static sp_status end_of_line(parser *P, const char *what) {
  skip_ws(P);
  if (!at_eof(P) && *P->p == '#') {
    sp_status st = skip_comment(P);
    if (st) return st;
  }
  if (at_eof(P)) return SP_OK;
  if (is_newline(P, P->p)) {
    take_newline(P);
    return SP_OK;
  }
  if (is_control((unsigned char)*P->p)) return bad_control(P, P->p, "after a value");
  char cb[16];
  return fail(P, P->p, "unexpected %s after %s; put each key = value pair on its own line",
              show_char(P, P->p, cb), what);
}

/* Whitespace, newlines and comments between array elements. */
static sp_status skip_ws_nl_comments(parser *P) {
  for (;;) {
    skip_ws(P);
    if (at_eof(P)) return SP_OK;
    if (*P->p == '#') {
      sp_status st = skip_comment(P);
      if (st) return st;
      continue;
    }
    if (is_newline(P, P->p)) {
      take_newline(P);
      continue;
    }
    return SP_OK;
  }
}

/*====== Strings ======*/

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void put_utf8(sp__buf *b, uint32_t cp) {
  char u[4];
  if (cp < 0x80) {
    u[0] = (char)cp;
    sp__buf_add(b, u, 1);
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    sp__buf_add(b, u, 2);
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    sp__buf_add(b, u, 3);
  } else {
    u[0] = (char)(0xF0 | (cp >> 18));
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (char)(0x80 | (cp & 0x3F));
    sp__buf_add(b, u, 4);
  }
}

/* An escape sequence; P->p is at the backslash. */
static sp_status escape(parser *P, sp__buf *b) {
  const char *at = P->p;
  P->p++;
  if (at_eof(P)) return fail(P, at, "unterminated escape at the end of the file");
  char c = *P->p++;
  switch (c) {
  case 'b': sp__buf_putc(b, '\b'); return SP_OK;
  case 't': sp__buf_putc(b, '\t'); return SP_OK;
  case 'n': sp__buf_putc(b, '\n'); return SP_OK;
  case 'f': sp__buf_putc(b, '\f'); return SP_OK;
  case 'r': sp__buf_putc(b, '\r'); return SP_OK;
  case '"': sp__buf_putc(b, '"'); return SP_OK;
  case '\\': sp__buf_putc(b, '\\'); return SP_OK;
  case 'u':
  case 'U': {
    int digits = c == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++) {
      int h = P->p < P->end ? hexval(*P->p) : -1;
      if (h < 0)
        return fail(P, at, "\\%c needs exactly %d hexadecimal digits (e.g. \\%c%s)", c, digits, c,
                    c == 'u' ? "00E9" : "0001F600");
      cp = cp * 16 + (uint32_t)h;
      P->p++;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return fail(P, at, "\\%c%0*X is not a Unicode scalar value; use a code point up to 10FFFF "
                  "outside D800-DFFF", c, digits, (unsigned)cp);
    put_utf8(b, cp);
    return SP_OK;
  }
  default: {
    char cb[16];
    P->p--;
    return fail(P, at, "invalid escape \\%s in a string; TOML allows \\b \\t \\n \\f \\r \\\" \\\\ "
                "\\uXXXX and \\UXXXXXXXX (use a literal 'string' to keep backslashes as they are)",
                (unsigned char)c > 0x20 && (unsigned char)c < 0x7F
                    ? (snprintf(cb, sizeof cb, "%c", c), cb)
                    : "followed by a space or unprintable character");
  }
  }
}

static sp_status finish_string(sp__buf *b, char **out, size_t *len) {
  size_t n = b->n;
  char *s = sp__buf_take(b);
  if (!s) return oom();
  *out = s;
  *len = n;
  return SP_OK;
}

/* One character of a string body that is neither its end nor a line break:
 * an escape (basic strings only), a control character TOML forbids, or the
 * character itself. */
static sp_status string_char(parser *P, sp__buf *b, char q) {
  char c = *P->p;
  if (q == '"' && c == '\\') return escape(P, b);
  if (is_control((unsigned char)c))
    return bad_control(P, P->p, q == '"' ? "in a basic string" : "in a literal string");
  sp__buf_putc(b, c);
  P->p++;
  return SP_OK;
}

/* The scanned text as the result, or the error with the text dropped. */
static sp_status end_string(sp__buf *b, sp_status st, char **out, size_t *len) {
  if (st) {
    sp__buf_free(b);
    return st;
  }
  return finish_string(b, out, len);
}

/* "basic" or 'literal' on one line; P->p is at the opening quote. */
static sp_status single_line_string(parser *P, char **out, size_t *len) {
  const char *open = P->p;
  char q = *P->p++;
  sp__buf b = SP__BUF_INIT;
  sp_status st = SP_OK;
  for (;;) {
    if (at_eof(P) || *P->p == '\n' || is_newline(P, P->p)) {
      st = fail(P, open, "unterminated string: a %s string ends on the line it starts; close it "
                "with %c or use %s for a multi-line string",
                q == '"' ? "basic" : "literal", q, q == '"' ? "\"\"\"" : "'''");
      break;
    }
    if (*P->p == q) {
      P->p++;
      break;
    }
    if ((st = string_char(P, &b, q))) break;
  }
  return end_string(&b, st, out, len);
}

/* """multi-line basic""" or '''multi-line literal'''; P->p is at the first
 * quote of the delimiter. */
static sp_status multi_line_string(parser *P, char **out, size_t *len) {
  const char *open = P->p;
  char q = *P->p;
  P->p += 3;
  /* A newline right after the opening delimiter is not part of the text. */
  if (is_newline(P, P->p)) take_newline(P);
  sp__buf b = SP__BUF_INIT;
  sp_status st = SP_OK;
  for (;;) {
    if (at_eof(P)) {
      st = fail(P, open, "unterminated multi-line string; close it with %s", q == '"' ? "\"\"\"" : "'''");
      break;
    }
    char c = *P->p;
    if (c == q) {
      const char *run = P->p;
      size_t n = 0;
      while (P->p < P->end && *P->p == q) {
        P->p++;
        n++;
      }
      if (n < 3) {
        sp__buf_add(&b, run, n);
        continue;
      }
      if (n > 5) {
        st = fail(P, run, "too many quotes (%zu) at the end of a multi-line string; at most two "
                  "may precede the closing %s, escape the rest", n, q == '"' ? "\"\"\"" : "'''");
        break;
      }
      sp__buf_add(&b, run, n - 3);
      break;
    }
    if (is_newline(P, P->p)) {
      take_newline(P);
      sp__buf_putc(&b, '\n');
      continue;
    }
    if (q == '"' && c == '\\') {
      /* A backslash ending a line swallows the newline and the whitespace
       * (newlines included) up to the next non-blank character. */
      const char *r = P->p + 1;
      while (r < P->end && (*r == ' ' || *r == '\t')) r++;
      if (is_newline(P, r)) {
        P->p = r;
        for (;;) {
          skip_ws(P);
          if (is_newline(P, P->p))
            take_newline(P);
          else
            break;
        }
        continue;
      }
    }
    if ((st = string_char(P, &b, q))) break;
  }
  return end_string(&b, st, out, len);
}

/*====== Keys ======*/

static int is_bare(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

static sp_status key_part(parser *P, key *k) {
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 4;
    keypart *p = realloc(k->parts, cap * sizeof *p);
    if (!p) return oom();
    k->parts = p;
    k->cap = cap;
  }
  keypart *kp = &k->parts[k->n];
  position(P, P->p, &kp->line, &kp->col);
  char c = at_eof(P) ? '\0' : *P->p;
  if (c == '"' || c == '\'') {
    if (P->end - P->p >= 3 && P->p[1] == c && P->p[2] == c)
      return fail(P, P->p, "a multi-line string cannot be a key; use a \"quoted key\" on one line");
    sp_status st = single_line_string(P, &kp->s, &kp->len);
    if (st) return st;
    k->n++;
    return SP_OK;
  }
  const char *start = P->p;
  while (P->p < P->end && is_bare(*P->p)) P->p++;
  if (P->p == start) {
    char cb[16];
    if (c == '=') return fail(P, start, "missing key before '='; write key = value");
    return fail(P, start, "expected a key, found %s; bare keys use A-Z a-z 0-9 _ -, anything else "
                "must be quoted (\"my key\")", show_char(P, start, cb));
  }
  kp->s = sp__strndup(start, (size_t)(P->p - start));
  if (!kp->s) return oom();
  kp->len = (size_t)(P->p - start);
  k->n++;
  return SP_OK;
}

/* key ( ws '.' ws key )* */
static sp_status parse_key(parser *P, key *k) {
  for (;;) {
    sp_status st = key_part(P, k);
    if (st) return st;
    const char *save = P->p;
    skip_ws(P);
    if (!at_eof(P) && *P->p == '.') {
      P->p++;
      skip_ws(P);
      continue;
    }
    P->p = save;
    return SP_OK;
  }
}

/*====== Values ======*/

static sp_status parse_value(parser *P, sp__toml_value **out);

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* digits with single underscores between them; returns the end or NULL. */
static const char *digits_run(const char *p, const char *end, int (*ok)(char)) {
  if (p >= end || !ok(*p)) return NULL;
  p++;
  while (p < end) {
    if (ok(*p)) {
      p++;
    } else if (*p == '_' && p + 1 < end && ok(p[1])) {
      p += 2;
    } else {
      break;
    }
  }
  return p;
}

static int is_hex(char c) { return hexval(c) >= 0; }
static int is_oct(char c) { return c >= '0' && c <= '7'; }
static int is_bin(char c) { return c == '0' || c == '1'; }

static int is_value_char(char c) {
  return is_bare(c) || c == '+' || c == '.' || c == ':';
}

static sp_status parse_number(parser *P, sp__toml_value *v) {
  const char *start = P->p, *e = P->p;
  while (e < P->end && is_value_char(*e)) e++;
  size_t n = (size_t)(e - start);
  char tok[MAX_NUMBER + 1];
  if (n > MAX_NUMBER)
    return fail(P, start, "number is too long (%zu characters); TOML numbers are 64-bit", n);
  memcpy(tok, start, n);
  tok[n] = '\0';

  /* Dates and times start like numbers: 1979-05-27, 07:32:00. */
  if ((n >= 5 && is_digit(tok[0]) && is_digit(tok[1]) && is_digit(tok[2]) && is_digit(tok[3]) &&
       tok[4] == '-') ||
      (n >= 3 && is_digit(tok[0]) && is_digit(tok[1]) && tok[2] == ':'))
    return fail(P, start, "dates and times are not supported in scope-profiler configuration "
                "files; write the value as a \"string\" if it is text");

  const char *t = tok, *tend = tok + n;
  int neg = 0, sign = 0;
  if (*t == '+' || *t == '-') {
    neg = *t == '-';
    sign = 1;
    t++;
  }
  if (!strcmp(t, "inf") || !strcmp(t, "nan")) {
    v->type = SP__TOML_FLOAT;
    v->u.flt = t[0] == 'i' ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
    P->p = e;
    return SP_OK;
  }
  if (t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
    if (sign)
      return fail(P, start, "a sign is not allowed on hexadecimal, octal or binary integers; "
                  "write %s", t);
    int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
    int (*ok)(char) = base == 16 ? is_hex : base == 8 ? is_oct : is_bin;
    const char *d = t + 2, *de = digits_run(d, tend, ok);
    if (!de || de != tend)
      return fail(P, start, "invalid %s integer '%s'; digits may be separated by single "
                  "underscores only", base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary",
                  tok);
    uint64_t val = 0;
    for (; d < de; d++) {
      if (*d == '_') continue;
      uint64_t dv = (uint64_t)hexval(*d);
      if (val > (UINT64_C(0x7FFFFFFFFFFFFFFF) - dv) / (uint64_t)base)
        return fail(P, start, "integer '%s' does not fit in 64 bits (largest: "
                    "9223372036854775807)", tok);
      val = val * (uint64_t)base + dv;
    }
    v->type = SP__TOML_INTEGER;
    v->u.integer = (int64_t)val;
    P->p = e;
    return SP_OK;
  }
  /* decimal integer part: "0" alone or no leading zero */
  const char *ip = digits_run(t, tend, is_digit);
  if (!ip)
    return fail(P, start, "invalid number '%s'; text must be quoted (\"...\")", tok);
  if (t[0] == '0' && ip - t > 1)
    return fail(P, start, "leading zeros are not allowed in '%s'; write %s without them (or "
                "0o... for octal)", tok, neg ? "the number" : "it");
  const char *q = ip;
  int is_float = 0;
  if (q < tend && *q == '.') {
    const char *fe = digits_run(q + 1, tend, is_digit);
    if (!fe)
      return fail(P, start, "invalid float '%s': a decimal point needs digits on both sides "
                  "(1.0, 0.5)", tok);
    q = fe;
    is_float = 1;
  }
  if (q < tend && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < tend && (*q == '+' || *q == '-')) q++;
    const char *xe = digits_run(q, tend, is_digit);
    if (!xe) return fail(P, start, "invalid float '%s': the exponent needs digits (1e6, 2.5E-3)", tok);
    q = xe;
    is_float = 1;
  }
  if (q != tend)
    return fail(P, start, "invalid number '%s'; digits may be separated by single underscores, "
                "text must be quoted", tok);
  char clean[MAX_NUMBER + 1];
  size_t k = 0;
  for (const char *c = tok; c < tend; c++)
    if (*c != '_') clean[k++] = *c;
  clean[k] = '\0';
  if (is_float) {
    errno = 0;
    double d = strtod(clean, NULL);
    if (isinf(d))
      return fail(P, start, "float '%s' is out of range of a 64-bit float; use inf if you mean "
                  "infinity", tok);
    v->type = SP__TOML_FLOAT;
    v->u.flt = d;
  } else {
    /* Accumulate negatively so that INT64_MIN fits. */
    int64_t val = 0;
    for (const char *c = clean + sign; *c; c++) {
      int dv = *c - '0';
      if (val < (INT64_MIN + dv) / 10)
        return fail(P, start, "integer '%s' does not fit in 64 bits (range -9223372036854775808 "
                    "to 9223372036854775807)", tok);
      val = val * 10 - dv;
    }
    if (!neg) {
      if (val == INT64_MIN)
        return fail(P, start, "integer '%s' does not fit in 64 bits (largest: "
                    "9223372036854775807)", tok);
      val = -val;
    }
    v->type = SP__TOML_INTEGER;
    v->u.integer = val;
  }
  P->p = e;
  return SP_OK;
}

static sp_status insert_kv(parser *P, sp__toml_value *table, key *k, sp__toml_value *v);

static sp_status parse_array(parser *P, sp__toml_value *a) {
  const char *open = P->p;
  P->p++; /* '[' */
  for (;;) {
    sp_status st = skip_ws_nl_comments(P);
    if (st) return st;
    if (at_eof(P)) return fail(P, open, "unterminated array; close it with ']'");
    if (*P->p == ']') {
      P->p++;
      return SP_OK;
    }
    sp__toml_value *item = NULL;
    st = parse_value(P, &item);
    if (st) return st;
    st = add_item(a, item);
    if (st) {
      sp__toml_free(item);
      return st;
    }
    st = skip_ws_nl_comments(P);
    if (st) return st;
    if (at_eof(P)) return fail(P, open, "unterminated array; close it with ']'");
    if (*P->p == ',') {
      P->p++;
      continue;
    }
    if (*P->p == ']') {
      P->p++;
      return SP_OK;
    }
    char cb[16];
    return fail(P, P->p, "expected ',' or ']' in the array, found %s", show_char(P, P->p, cb));
  }
}

static sp_status parse_inline_table(parser *P, sp__toml_value *t) {
  const char *open = P->p;
  P->p++; /* '{' */
  skip_ws(P);
  if (!at_eof(P) && *P->p == '}') {
    P->p++;
    seal(t);
    return SP_OK;
  }
  for (;;) {
    skip_ws(P);
    if (at_eof(P)) return fail(P, open, "unterminated inline table; close it with '}'");
    if (is_newline(P, P->p))
      return fail(P, P->p, "an inline table must be on one line (TOML 1.0); close it with '}' "
                  "or use a [table] instead");
    if (*P->p == '}')
      return fail(P, P->p, "trailing comma in an inline table; remove the ',' before '}' "
                  "(TOML 1.0)");
    key k = {0};
    sp_status st = parse_key(P, &k);
    if (!st) {
      skip_ws(P);
      if (at_eof(P) || *P->p != '=') {
        char cb[16];
        st = fail(P, P->p, "expected '=' after the key, found %s", show_char(P, P->p, cb));
      }
    }
    sp__toml_value *v = NULL;
    if (!st) {
      P->p++;
      skip_ws(P);
      st = parse_value(P, &v);
    }
    if (!st) st = insert_kv(P, t, &k, v);
    else sp__toml_free(v);
    key_free(&k);
    if (st) return st;
    skip_ws(P);
    if (at_eof(P)) return fail(P, open, "unterminated inline table; close it with '}'");
    if (*P->p == ',') {
      P->p++;
      continue;
    }
    if (*P->p == '}') {
      P->p++;
      seal(t);
      return SP_OK;
    }
    if (is_newline(P, P->p))
      return fail(P, P->p, "an inline table must be on one line (TOML 1.0); close it with '}' "
                  "or use a [table] instead");
    char cb[16];
    return fail(P, P->p, "expected ',' or '}' in the inline table, found %s",
                show_char(P, P->p, cb));
  }
}

static int word_at(const parser *P, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(P->end - P->p) < n || memcmp(P->p, w, n) != 0) return 0;
  return P->p + n == P->end || !is_value_char(P->p[n]);
}

static sp_status parse_value(parser *P, sp__toml_value **out) {
  int line, col;
  position(P, P->p, &line, &col);
  *out = NULL;
  if (at_eof(P) || is_newline(P, P->p))
    return fail(P, P->p, "missing value after '='; write key = value (text in quotes)");
  char c = *P->p;
  sp__toml_value *v = new_value(SP__TOML_STRING, line, col);
  if (!v) return oom();
  sp_status st = SP_OK;
  if (c == '"' || c == '\'') {
    if (P->end - P->p >= 3 && P->p[1] == c && P->p[2] == c)
      st = multi_line_string(P, &v->u.str.ptr, &v->u.str.len);
    else
      st = single_line_string(P, &v->u.str.ptr, &v->u.str.len);
  } else if (c == '[' || c == '{') {
    if (P->depth >= MAX_DEPTH) {
      st = fail(P, P->p, "arrays and inline tables are nested more than %d deep", MAX_DEPTH);
    } else {
      P->depth++;
      if (c == '[') {
        v->type = SP__TOML_ARRAY;
        st = parse_array(P, v);
      } else {
        v->type = SP__TOML_TABLE;
        st = parse_inline_table(P, v);
      }
      P->depth--;
    }
  } else if (word_at(P, "true") || word_at(P, "false")) {
    v->type = SP__TOML_BOOL;
    v->u.boolean = c == 't';
    P->p += c == 't' ? 4 : 5;
  } else if (is_digit(c) || c == '+' || c == '-' || word_at(P, "inf") || word_at(P, "nan")) {
    v->type = SP__TOML_INTEGER;
    st = parse_number(P, v);
  } else if (is_bare(c)) {
    const char *e = P->p;
    while (e < P->end && is_bare(*e)) e++;
    int n = (int)(e - P->p);
    if (n > 40) n = 40;
    st = fail(P, P->p, "'%.*s' is not a value; text must be quoted: \"%.*s\" (booleans are "
              "lowercase true/false)", n, P->p, n, P->p);
  } else {
    char cb[16];
    st = fail(P, P->p, "expected a value (a \"string\", number, true/false, [array] or {inline "
              "table}), found %s", show_char(P, P->p, cb));
  }
  if (st) {
    if (v->type == SP__TOML_STRING) v->u.str.ptr = NULL; /* never set on failure */
    sp__toml_free(v);
    return st;
  }
  *out = v;
  return SP_OK;
}

/*====== Tables ======*/

static const char *how_defined(const sp__toml_value *t) {
  if (t->flags & SP__TOML_T_INLINE) return "an inline table";
  if (t->flags & SP__TOML_T_DOTTED) return "dotted keys";
  return "a [header]";
}

/* Put v at the dotted key k inside table; takes ownership of v. */
static sp_status insert_kv(parser *P, sp__toml_value *table, key *k, sp__toml_value *v) {
  char name[256];
  sp__toml_value *t = table;
  for (size_t i = 0; i + 1 < k->n; i++) {
    keypart *kp = &k->parts[i];
    sp__toml_entry *e = find_entry(t, kp->s, kp->len);
    if (!e) {
      sp__toml_value *nt = new_value(SP__TOML_TABLE, kp->line, kp->col);
      if (!nt) {
        sp__toml_free(v);
        return oom();
      }
      nt->flags = SP__TOML_T_DOTTED;
      sp_status st = add_entry(t, kp, nt);
      if (st) {
        sp__toml_free(nt);
        sp__toml_free(v);
        return st;
      }
      t = nt;
      continue;
    }
    key_text(k, i + 1, name, sizeof name);
    if (e->value->type != SP__TOML_TABLE) {
      sp__toml_free(v);
      return sp__set_error(SP_ERR_PARSE, "%s:%d:%d: %s is already %s (line %d); a key cannot be "
                           "both a value and a table", P->name, kp->line, kp->col, name,
                           sp__toml_type_article(e->value->type), e->line);
    }
    /* A table a deeper header only implied ([a.b.c] implies a.b) was never
     * defined, so dotted keys may define it now - after which a [a.b]
     * header would be a second definition. */
    if (e->value->flags == SP__TOML_T_IMPLICIT) e->value->flags = SP__TOML_T_DOTTED;
    if (!(e->value->flags & SP__TOML_T_DOTTED) || (e->value->flags & SP__TOML_T_INLINE)) {
      sp__toml_free(v);
      return sp__set_error(SP_ERR_PARSE, "%s:%d:%d: cannot add keys to table %s with dotted keys: "
                           "it was defined by %s at line %d; put the key %s", P->name, kp->line,
                           kp->col, name, how_defined(e->value), e->value->line,
                           (e->value->flags & SP__TOML_T_INLINE) ? "inside the inline table"
                                                                  : "under that table's header");
    }
    t = e->value;
  }
  keypart *last = &k->parts[k->n - 1];
  sp__toml_entry *e = find_entry(t, last->s, last->len);
  if (e) {
    key_text(k, k->n, name, sizeof name);
    sp__toml_free(v);
    return sp__set_error(SP_ERR_PARSE, "%s:%d:%d: duplicate key %s (first set at line %d, column "
                         "%d); keep one of them", P->name, last->line, last->col, name, e->line,
                         e->col);
  }
  sp_status st = add_entry(t, last, v);
  if (st) sp__toml_free(v);
  return st;
}

/* [a.b.c]; P->p is at '['. */
static sp_status parse_header(parser *P) {
  const char *open = P->p;
  if (P->end - P->p >= 2 && P->p[1] == '[')
    return fail(P, open, "arrays of tables ([[...]]) are not supported in scope-profiler "
                "configuration files; use a [table] or an array of inline tables");
  P->p++;
  skip_ws(P);
  key k = {0};
  sp_status st = parse_key(P, &k);
  if (!st) {
    skip_ws(P);
    if (at_eof(P) || *P->p != ']') {
      char cb[16];
      st = fail(P, P->p, "expected ']' to close the table header, found %s", show_char(P, P->p, cb));
    } else {
      P->p++;
    }
  }
  char name[256];
  sp__toml_value *t = P->root;
  for (size_t i = 0; !st && i < k.n; i++) {
    keypart *kp = &k.parts[i];
    int last = i + 1 == k.n;
    sp__toml_entry *e = find_entry(t, kp->s, kp->len);
    if (!e) {
      int line, col;
      position(P, open, &line, &col);
      sp__toml_value *nt = new_value(SP__TOML_TABLE, last ? line : kp->line, last ? col : kp->col);
      if (!nt) {
        st = oom();
        break;
      }
      nt->flags = last ? SP__TOML_T_HEADER : SP__TOML_T_IMPLICIT;
      st = add_entry(t, kp, nt);
      if (st) {
        sp__toml_free(nt);
        break;
      }
      t = nt;
      continue;
    }
    key_text(&k, i + 1, name, sizeof name);
    if (e->value->type != SP__TOML_TABLE) {
      st = sp__set_error(SP_ERR_PARSE, "%s:%d:%d: %s is already %s (line %d), not a table%s",
                         P->name, kp->line, kp->col, name, sp__toml_type_article(e->value->type), e->line,
                         e->value->type == SP__TOML_ARRAY
                             ? "; arrays of tables ([[...]]) are not supported"
                             : "; a key cannot be both a value and a table");
      break;
    }
    sp__toml_value *tv = e->value;
    if (tv->flags & SP__TOML_T_INLINE) {
      st = sp__set_error(SP_ERR_PARSE, "%s:%d:%d: table %s was written as an inline table at line "
                         "%d and cannot be extended; move its keys into one place", P->name,
                         kp->line, kp->col, name, tv->line);
      break;
    }
    if (last) {
      if (tv->flags & SP__TOML_T_IMPLICIT) {
        int line, col;
        position(P, open, &line, &col);
        tv->flags = SP__TOML_T_HEADER;
        tv->line = line;
        tv->col = col;
      } else {
        int line, col;
        position(P, open, &line, &col);
        st = sp__set_error(SP_ERR_PARSE, "%s:%d:%d: table [%s] is defined twice (first by %s at "
                           "line %d); merge the two", P->name, line, col, name, how_defined(tv),
                           tv->line);
        break;
      }
    }
    t = tv;
  }
  key_free(&k);
  if (st) return st;
  P->cur = t;
  return end_of_line(P, "the table header");
}

static sp_status parse_keyval(parser *P) {
  key k = {0};
  sp_status st = parse_key(P, &k);
  if (!st) {
    skip_ws(P);
    if (at_eof(P) || *P->p != '=') {
      char cb[16];
      st = fail(P, P->p, "expected '=' after the key, found %s; write key = value",
                show_char(P, P->p, cb));
    }
  }
  sp__toml_value *v = NULL;
  if (!st) {
    P->p++;
    skip_ws(P);
    st = parse_value(P, &v);
  }
  if (!st) st = insert_kv(P, P->cur, &k, v);
  key_free(&k);
  if (st) return st;
  return end_of_line(P, "the value");
}

/* TOML documents are UTF-8; checking up front lets the parser work on bytes. */
static sp_status check_utf8(parser *P) {
  const unsigned char *p = (const unsigned char *)P->s, *e = (const unsigned char *)P->end;
  while (p < e) {
    unsigned c = *p;
    if (c < 0x80) {
      if (c == '\n') {
        P->line++;
        P->line_start = (const char *)p + 1;
      }
      p++;
      continue;
    }
    size_t len = (size_t)(e - p);
    int more = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    int ok = more > 0 && len > (size_t)more;
    unsigned cp = more == 1 ? c & 0x1F : more == 2 ? c & 0x0F : c & 0x07;
    for (int i = 1; ok && i <= more; i++) {
      if ((p[i] & 0xC0) != 0x80) ok = 0;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (ok) {
      unsigned min = more == 1 ? 0x80 : more == 2 ? 0x800 : 0x10000;
      if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) ok = 0;
    }
    if (!ok) {
      sp_status st = fail(P, (const char *)p, "invalid UTF-8 byte 0x%02X; TOML files must be "
                          "UTF-8, re-save the file in that encoding", c);
      return st;
    }
    p += more + 1;
  }
  P->line = 1;
  P->line_start = P->s;
  return SP_OK;
}

sp_status sp__toml_parse(const char *text, size_t len, const char *name, sp__toml_value **root) {
  *root = NULL;
  parser P = {.s = text, .p = text, .end = text + len, .name = name ? name : "<toml>", .line = 1,
              .line_start = text};
  sp_status st = check_utf8(&P);
  if (st) return st;
  /* A byte order mark is tolerated: editors on some systems write one. */
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) P.p += 3, P.line_start = P.p;
  P.root = new_value(SP__TOML_TABLE, 1, 1);
  if (!P.root) return oom();
  P.root->flags = SP__TOML_T_HEADER;
  P.cur = P.root;
  while (!st) {
    skip_ws(&P);
    if (at_eof(&P)) break;
    char c = *P.p;
    if (c == '#') {
      st = skip_comment(&P);
      if (!st && !at_eof(&P)) {
        if (is_newline(&P, P.p))
          take_newline(&P);
        else
          st = bad_control(&P, P.p, "in a comment");
      }
    } else if (is_newline(&P, P.p)) {
      take_newline(&P);
    } else if (c == '\r') {
      st = bad_control(&P, P.p, "between lines");
    } else if (c == '[') {
      st = parse_header(&P);
    } else {
      st = parse_keyval(&P);
    }
  }
  if (st) {
    sp__toml_free(P.root);
    return st;
  }
  *root = P.root;
  return SP_OK;
}

/*====== Dump ======*/

static void dump_key_part(sp__buf *b, const char *k, size_t n) {
  int bare = n > 0;
  for (size_t i = 0; i < n; i++)
    if (!is_bare(k[i])) bare = 0;
  if (bare)
    sp__buf_add(b, k, n);
  else
    sp__buf_json_string(b, k, n);
}

/* The shortest text that reads back as d, laid out like Python's repr():
 * positional for exponents -4..15, otherwise d.ddde+XX. */
static void dump_float(sp__buf *b, double d) {
  if (isnan(d)) {
    sp__buf_puts(b, "nan");
    return;
  }
  if (isinf(d)) {
    sp__buf_puts(b, d < 0 ? "-inf" : "inf");
    return;
  }
  char s[64];
  for (int prec = 0; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*e", prec, d);
    if (strtod(s, NULL) == d) break;
  }
  /* s is [-]D[.DDD]e(+|-)XX */
  const char *p = s;
  if (*p == '-') {
    sp__buf_putc(b, '-');
    p++;
  }
  char digits[32];
  size_t nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.' && nd < sizeof digits - 1) digits[nd++] = *p;
  digits[nd] = '\0';
  while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
  int exp = *p == 'e' ? atoi(p + 1) : 0;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      sp__buf_puts(b, "0.");
      for (int i = -1; i > exp; i--) sp__buf_putc(b, '0');
      sp__buf_puts(b, digits);
    } else {
      for (int i = 0; i <= exp; i++) sp__buf_putc(b, (size_t)i < nd ? digits[i] : '0');
      sp__buf_putc(b, '.');
      if ((size_t)exp + 1 < nd)
        sp__buf_puts(b, digits + exp + 1);
      else
        sp__buf_putc(b, '0');
    }
  } else {
    sp__buf_putc(b, digits[0]);
    if (nd > 1) {
      sp__buf_putc(b, '.');
      sp__buf_puts(b, digits + 1);
    }
    sp__buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  }
}

static void dump_inline(sp__buf *b, const sp__toml_value *v) {
  switch (v->type) {
  case SP__TOML_STRING:
    sp__buf_json_string(b, v->u.str.ptr, v->u.str.len);
    break;
  case SP__TOML_INTEGER:
    sp__buf_printf(b, "%lld", (long long)v->u.integer);
    break;
  case SP__TOML_FLOAT:
    dump_float(b, v->u.flt);
    break;
  case SP__TOML_BOOL:
    sp__buf_puts(b, v->u.boolean ? "true" : "false");
    break;
  case SP__TOML_ARRAY:
    sp__buf_putc(b, '[');
    for (size_t i = 0; i < v->u.arr.n; i++) {
      if (i) sp__buf_puts(b, ", ");
      dump_inline(b, v->u.arr.items[i]);
    }
    sp__buf_putc(b, ']');
    break;
  case SP__TOML_TABLE:
    sp__buf_putc(b, '{');
    for (size_t i = 0; i < v->u.tab.n; i++) {
      const sp__toml_entry *e = &v->u.tab.entries[i];
      sp__buf_puts(b, i ? ", " : "");
      dump_key_part(b, e->key, e->key_len);
      sp__buf_puts(b, " = ");
      dump_inline(b, e->value);
    }
    sp__buf_putc(b, '}');
    break;
  }
}

static void dump_table(sp__buf *b, sp__buf *prefix, const sp__toml_value *t) {
  if (t->u.tab.n == 0 && prefix->n > 0) {
    sp__buf_add(b, prefix->p, prefix->n);
    sp__buf_puts(b, " = {}\n");
    return;
  }
  for (size_t i = 0; i < t->u.tab.n; i++) {
    const sp__toml_entry *e = &t->u.tab.entries[i];
    size_t mark = prefix->n;
    if (mark) sp__buf_putc(prefix, '.');
    dump_key_part(prefix, e->key, e->key_len);
    if (prefix->failed) {
      b->failed = 1;
      return;
    }
    if (e->value->type == SP__TOML_TABLE) {
      dump_table(b, prefix, e->value);
    } else {
      sp__buf_add(b, prefix->p, prefix->n);
      sp__buf_puts(b, " = ");
      dump_inline(b, e->value);
      sp__buf_putc(b, '\n');
    }
    prefix->n = mark;
    if (prefix->p) prefix->p[mark] = '\0';
  }
}

char *sp__toml_dump(const sp__toml_value *root) {
  sp__buf b = SP__BUF_INIT, prefix = SP__BUF_INIT;
  sp__buf_puts(&b, "");
  if (root) dump_table(&b, &prefix, root);
  sp__buf_free(&prefix);
  return sp__buf_take(&b);
}
