/* json_parse.c - a strict JSON parser (json_parse.h).
 *
 * Recursive descent over the whole text, with the nesting depth bounded so a
 * hostile document cannot exhaust the stack. Strings are decoded (escapes,
 * surrogate pairs) and must be valid UTF-8 without NUL; numbers follow the
 * JSON grammar exactly (no leading zeros, no NaN, no hex). Python writes
 * NaN and Infinity only when asked (upstream exports with allow_nan=False),
 * so those are refused with a message that says so.
 */
#include "read/json_parse.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define MAX_DEPTH 64

struct parser {
  const char *p, *start, *end;
  char *err;
  size_t errsize;
  int failed;
};

static void fail(struct parser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parser *P, const char *fmt, ...) {
  if (P->failed) return;
  P->failed = 1;
  size_t line = 1, col = 1;
  for (const char *q = P->start; q < P->p && q < P->end; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(P->err, P->errsize, "line %zu, column %zu: %s", line, col, msg);
}

static void skip_ws(struct parser *P) {
  while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r')) P->p++;
}

static const char *what_is_here(struct parser *P) {
  if (P->p >= P->end) return "the end of the text";
  static char buf[32];
  unsigned char c = (unsigned char)*P->p;
  if (c >= 0x20 && c < 0x7f) snprintf(buf, sizeof buf, "'%c'", c);
  else snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

static void put_utf8(char *o, size_t *n, unsigned cp) {
  if (cp < 0x80) {
    o[(*n)++] = (char)cp;
  } else if (cp < 0x800) {
    o[(*n)++] = (char)(0xc0 | (cp >> 6));
    o[(*n)++] = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    o[(*n)++] = (char)(0xe0 | (cp >> 12));
    o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[(*n)++] = (char)(0x80 | (cp & 0x3f));
  } else {
    o[(*n)++] = (char)(0xf0 | (cp >> 18));
    o[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[(*n)++] = (char)(0x80 | (cp & 0x3f));
  }
}

/* A string at P->p (on the opening quote); malloc'd, NULL on error. */
static char *parse_string(struct parser *P, size_t *len) {
  P->p++;
  const char *q = P->p;
  size_t raw = 0;
  while (q < P->end && *q != '"') {
    if (*q == '\\') q++;
    q++;
    raw++;
  }
  if (q >= P->end) {
    fail(P, "a string is not closed");
    return NULL;
  }
  char *o = malloc((size_t)(q - P->p) + 1);
  if (!o) {
    fail(P, "out of memory");
    return NULL;
  }
  size_t n = 0;
  while (*P->p != '"') {
    unsigned char c = (unsigned char)*P->p;
    if (c < 0x20) {
      fail(P, "a control character (0x%02x) inside a string must be escaped", c);
      free(o);
      return NULL;
    }
    if (c != '\\') {
      o[n++] = (char)c;
      P->p++;
      continue;
    }
    P->p++;
    char e = *P->p++;
    switch (e) {
    case '"': o[n++] = '"'; break;
    case '\\': o[n++] = '\\'; break;
    case '/': o[n++] = '/'; break;
    case 'b': o[n++] = '\b'; break;
    case 'f': o[n++] = '\f'; break;
    case 'n': o[n++] = '\n'; break;
    case 'r': o[n++] = '\r'; break;
    case 't': o[n++] = '\t'; break;
    case 'u': {
      unsigned cp = 0, lo = 0;
      if (P->end - P->p < 4 || hex4(P->p, &cp) != 0) {
        fail(P, "\\u needs four hex digits");
        free(o);
        return NULL;
      }
      P->p += 4;
      if (cp >= 0xd800 && cp <= 0xdbff) {
        if (P->end - P->p < 6 || P->p[0] != '\\' || P->p[1] != 'u' || hex4(P->p + 2, &lo) != 0 || lo < 0xdc00 ||
            lo > 0xdfff) {
          fail(P, "a \\u escape of a high surrogate must be followed by a low one");
          free(o);
          return NULL;
        }
        P->p += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      } else if (cp >= 0xdc00 && cp <= 0xdfff) {
        fail(P, "a lone low surrogate \\u%04x", cp);
        free(o);
        return NULL;
      }
      if (cp == 0) {
        fail(P, "\\u0000 (NUL) is not allowed in a string here");
        free(o);
        return NULL;
      }
      put_utf8(o, &n, cp);
      break;
    }
    default:
      P->p--;
      fail(P, "unknown escape \\%c", e >= 0x20 && e < 0x7f ? e : '?');
      free(o);
      return NULL;
    }
  }
  P->p++;
  o[n] = 0;
  (void)raw;
  if (!sp__utf8_valid(o, n)) {
    fail(P, "a string is not valid UTF-8");
    free(o);
    return NULL;
  }
  *len = n;
  return o;
}

static int parse_number(struct parser *P, struct sp_jval *v) {
  const char *s = P->p;
  const char *q = s;
  if (q < P->end && *q == '-') q++;
  if (q >= P->end || !(*q >= '0' && *q <= '9')) {
    if (P->end - q >= 3 && (!strncmp(q, "NaN", 3) || !strncmp(q, "Inf", 3)))
      fail(P, "NaN and Infinity are not JSON (write null for a missing number)");
    else
      fail(P, "expected a value, found %s", what_is_here(P));
    return -1;
  }
  if (*q == '0' && q + 1 < P->end && q[1] >= '0' && q[1] <= '9') {
    P->p = q;
    fail(P, "a number must not have leading zeros");
    return -1;
  }
  while (q < P->end && *q >= '0' && *q <= '9') q++;
  int integral = 1;
  if (q < P->end && *q == '.') {
    integral = 0;
    q++;
    if (q >= P->end || !(*q >= '0' && *q <= '9')) {
      P->p = q;
      fail(P, "a digit must follow the decimal point");
      return -1;
    }
    while (q < P->end && *q >= '0' && *q <= '9') q++;
  }
  if (q < P->end && (*q == 'e' || *q == 'E')) {
    integral = 0;
    q++;
    if (q < P->end && (*q == '+' || *q == '-')) q++;
    if (q >= P->end || !(*q >= '0' && *q <= '9')) {
      P->p = q;
      fail(P, "a digit must follow the exponent");
      return -1;
    }
    while (q < P->end && *q >= '0' && *q <= '9') q++;
  }
  char buf[64];
  size_t n = (size_t)(q - s);
  if (n >= sizeof buf) {
    /* long digit strings are legal; only doubles can hold them */
    char *tmp = malloc(n + 1);
    if (!tmp) {
      fail(P, "out of memory");
      return -1;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    v->type = SP_J_FLOAT;
    v->f = strtod(tmp, NULL);
    free(tmp);
    P->p = q;
    return 0;
  }
  memcpy(buf, s, n);
  buf[n] = 0;
  if (integral) {
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno == 0) {
      v->type = SP_J_INT;
      v->i = x;
      P->p = q;
      return 0;
    }
  }
  v->type = SP_J_FLOAT;
  v->f = strtod(buf, NULL);
  P->p = q;
  return 0;
}

static int parse_value(struct parser *P, struct sp_jval *v, int depth);

static int grow(struct sp_jval *v, size_t *cap, int keys) {
  if (v->len < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 8;
  struct sp_jval *it = realloc(v->items, nc * sizeof *it);
  if (!it) return -1;
  v->items = it;
  if (keys) {
    char **k = realloc(v->keys, nc * sizeof *k);
    if (!k) return -1;
    v->keys = k;
  }
  *cap = nc;
  return 0;
}

static int parse_value(struct parser *P, struct sp_jval *v, int depth) {
  memset(v, 0, sizeof *v);
  skip_ws(P);
  if (P->p >= P->end) {
    fail(P, "expected a value, found the end of the text");
    return -1;
  }
  if (depth > MAX_DEPTH) {
    fail(P, "arrays and objects nest deeper than %d levels", MAX_DEPTH);
    return -1;
  }
  char c = *P->p;
  if (c == '{' || c == '[') {
    int obj = c == '{';
    v->type = obj ? SP_J_OBJECT : SP_J_ARRAY;
    P->p++;
    size_t cap = 0;
    skip_ws(P);
    if (P->p < P->end && *P->p == (obj ? '}' : ']')) {
      P->p++;
      return 0;
    }
    for (;;) {
      skip_ws(P);
      if (grow(v, &cap, obj) != 0) {
        fail(P, "out of memory");
        return -1;
      }
      if (obj) {
        if (P->p >= P->end || *P->p != '"') {
          fail(P, "expected a string key, found %s", what_is_here(P));
          return -1;
        }
        size_t kl = 0;
        char *k = parse_string(P, &kl);
        if (!k) return -1;
        v->keys[v->len] = k;
        skip_ws(P);
        if (P->p >= P->end || *P->p != ':') {
          free(k);
          fail(P, "expected ':' after a key, found %s", what_is_here(P));
          return -1;
        }
        P->p++;
      }
      if (parse_value(P, &v->items[v->len], depth + 1) != 0) {
        if (obj) free(v->keys[v->len]);
        sp__json_free(&v->items[v->len]); /* what was built of it */
        return -1;
      }
      v->len++;
      skip_ws(P);
      if (P->p < P->end && *P->p == ',') {
        P->p++;
        continue;
      }
      if (P->p < P->end && *P->p == (obj ? '}' : ']')) {
        P->p++;
        return 0;
      }
      fail(P, "expected ',' or '%c', found %s", obj ? '}' : ']', what_is_here(P));
      return -1;
    }
  }
  if (c == '"') {
    v->type = SP_J_STRING;
    v->s = parse_string(P, &v->len);
    return v->s ? 0 : -1;
  }
  if (P->end - P->p >= 4 && !strncmp(P->p, "true", 4)) {
    v->type = SP_J_BOOL;
    v->b = 1;
    P->p += 4;
    return 0;
  }
  if (P->end - P->p >= 5 && !strncmp(P->p, "false", 5)) {
    v->type = SP_J_BOOL;
    P->p += 5;
    return 0;
  }
  if (P->end - P->p >= 4 && !strncmp(P->p, "null", 4)) {
    v->type = SP_J_NULL;
    P->p += 4;
    return 0;
  }
  return parse_number(P, v);
}

static void free_inner(struct sp_jval *v) {
  if (!v) return;
  free(v->s);
  for (size_t i = 0; i < v->len && v->items; i++) {
    free_inner(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  memset(v, 0, sizeof *v);
}

void sp__json_free(struct sp_jval *v) {
  if (!v) return;
  free_inner(v);
}

struct sp_jval *sp__json_parse(const char *text, size_t size, char *err, size_t errsize) {
  struct parser P = {text, text, text + size, err, errsize, 0};
  if (errsize) err[0] = 0;
  /* a UTF-8 byte-order mark is not JSON, but editors write it */
  if (size >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) P.p += 3;
  struct sp_jval *v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(err, errsize, "out of memory");
    return NULL;
  }
  if (parse_value(&P, v, 0) == 0) {
    skip_ws(&P);
    if (P.p < P.end) fail(&P, "unexpected %s after the document", what_is_here(&P));
  }
  if (P.failed) {
    sp__json_free(v);
    free(v);
    return NULL;
  }
  return v;
}

const struct sp_jval *sp__json_get(const struct sp_jval *obj, const char *key) {
  if (!obj || obj->type != SP_J_OBJECT) return NULL;
  /* the last duplicate wins, as in Python */
  for (size_t i = obj->len; i-- > 0;)
    if (!strcmp(obj->keys[i], key)) return &obj->items[i];
  return NULL;
}

const char *sp__json_type_name(enum sp_jtype t) {
  switch (t) {
  case SP_J_NULL: return "null";
  case SP_J_BOOL: return "a boolean";
  case SP_J_INT: return "an integer";
  case SP_J_FLOAT: return "a float";
  case SP_J_STRING: return "a string";
  case SP_J_ARRAY: return "an array";
  case SP_J_OBJECT: return "an object";
  }
  return "?";
}

static void render(FILE *f, const struct sp_jval *v) {
  switch (v->type) {
  case SP_J_NULL: fputs("null", f); break;
  case SP_J_BOOL: fputs(v->b ? "true" : "false", f); break;
  case SP_J_INT: fprintf(f, "%lld", (long long)v->i); break;
  case SP_J_FLOAT:
    if (isfinite(v->f)) fprintf(f, "%.17g", v->f);
    else fputs("null", f);
    break;
  case SP_J_STRING:
    fputc('"', f);
    for (const char *p = v->s; *p; p++) {
      unsigned char c = (unsigned char)*p;
      if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
      else if (c < 0x20) fprintf(f, "\\u%04x", c);
      else fputc(c, f);
    }
    fputc('"', f);
    break;
  case SP_J_ARRAY:
  case SP_J_OBJECT:
    fputc(v->type == SP_J_ARRAY ? '[' : '{', f);
    for (size_t i = 0; i < v->len; i++) {
      if (i) fputs(", ", f);
      if (v->type == SP_J_OBJECT) {
        struct sp_jval k = {.type = SP_J_STRING, .s = v->keys[i]};
        render(f, &k);
        fputs(": ", f);
      }
      render(f, &v->items[i]);
    }
    fputc(v->type == SP_J_ARRAY ? ']' : '}', f);
    break;
  }
}

char *sp__json_render(const struct sp_jval *v) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  render(f, v);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
