/* read_json.c - a small streaming JSON writer whose output is byte-for-byte
 * what Python's json.dumps(obj, indent=2) produces (ensure_ascii escaping,
 * ", "/": " separators, floats as repr()), so files we write match the ones
 * upstream's tools write and diff cleanly against them.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "read/read_internal.h"

void sp__format_double(char *buf, size_t size, double v) {
  if (isnan(v)) {
    snprintf(buf, size, "NaN");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v > 0 ? "Infinity" : "-Infinity");
    return;
  }
  if (v == 0) {
    snprintf(buf, size, signbit(v) ? "-0.0" : "0.0");
    return;
  }
  if (fabs(v) < 1e16 && v == (double)(long long)v) {
    snprintf(buf, size, "%lld.0", (long long)v); /* integral: repr is "<digits>.0" */
    return;
  }
  /* The shortest digit string that reads back as v. Every decimal of at
   * most 15 digits survives a round trip through a double (DBL_DIG), so when
   * the 15-digit rendering reads back as v, the shortest one is it without
   * its trailing zeros; otherwise 16 or 17 digits are needed. Subnormals
   * carry fewer bits, so they search from one digit up. */
  char e[40];
  for (int prec = fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, v);
    if (strtod(e, NULL) == v) break;
  }
  const char *p = e;
  int neg = *p == '-';
  if (neg) p++;
  char digits[24];
  size_t nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9' && nd < sizeof digits - 1) digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = '\0';
  int exp10 = atoi(p + 1);
  int decpt = exp10 + 1; /* v = 0.d1d2... x 10^decpt */
  char out[64];
  size_t k = 0;
  if (neg) out[k++] = '-';
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out[k++] = '0';
      out[k++] = '.';
      for (int i = 0; i < -decpt; i++) out[k++] = '0';
      for (size_t i = 0; i < nd; i++) out[k++] = digits[i];
    } else {
      for (int i = 0; i < decpt; i++) out[k++] = (size_t)i < nd ? digits[i] : '0';
      out[k++] = '.';
      if ((size_t)decpt < nd)
        for (size_t i = (size_t)decpt; i < nd; i++) out[k++] = digits[i];
      else
        out[k++] = '0';
    }
    out[k] = '\0';
  } else {
    out[k++] = digits[0];
    if (nd > 1) {
      out[k++] = '.';
      for (size_t i = 1; i < nd; i++) out[k++] = digits[i];
    }
    int x = decpt - 1;
    snprintf(out + k, sizeof out - k, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  }
  snprintf(buf, size, "%s", out);
}

void sp__json_write_string(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  fputc('"', f);
  while (*p) {
    unsigned c = *p;
    if (c == '"') fputs("\\\"", f);
    else if (c == '\\') fputs("\\\\", f);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\r') fputs("\\r", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c == '\b') fputs("\\b", f);
    else if (c == '\f') fputs("\\f", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else if (c < 0x80) fputc((int)c, f);
    else {
      /* decode one UTF-8 sequence; the reader already replaced invalid bytes */
      unsigned cp;
      int more;
      if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; more = 1; }
      else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; more = 2; }
      else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; more = 3; }
      else { cp = 0xFFFD; more = 0; }
      for (int i = 0; i < more; i++) {
        if ((p[1] & 0xC0) != 0x80) { cp = 0xFFFD; break; }
        cp = (cp << 6) | (*++p & 0x3F);
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        fprintf(f, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        fprintf(f, "\\u%04x", cp);
      }
    }
    p++;
  }
  fputc('"', f);
}

void sp__json_init(struct sp__json *j, FILE *f, int indent) {
  memset(j, 0, sizeof *j);
  j->f = f;
  j->indent = indent;
}

static void newline(struct sp__json *j, int depth) {
  if (!j->indent) return;
  fputc('\n', j->f);
  for (int i = 0; i < depth * j->indent; i++) fputc(' ', j->f);
}

/* Separator and indentation before a value or a key. */
static void prefix(struct sp__json *j) {
  if (j->after_key) {
    j->after_key = 0;
    return;
  }
  if (j->depth == 0) return;
  if (j->count[j->depth] > 0) fputc(',', j->f);
  if (!j->indent && j->count[j->depth] > 0) fputc(' ', j->f);
  newline(j, j->depth);
  j->count[j->depth]++;
}

static void open_(struct sp__json *j, int c) {
  prefix(j);
  fputc(c, j->f);
  if (j->depth < 63) j->depth++;
  j->count[j->depth] = 0;
}

static void close_(struct sp__json *j, int c) {
  if (j->count[j->depth] > 0) newline(j, j->depth - 1);
  fputc(c, j->f);
  if (j->depth > 0) j->depth--;
}

void sp__json_begin_object(struct sp__json *j) { open_(j, '{'); }
void sp__json_end_object(struct sp__json *j) { close_(j, '}'); }
void sp__json_begin_array(struct sp__json *j) { open_(j, '['); }
void sp__json_end_array(struct sp__json *j) { close_(j, ']'); }

void sp__json_key(struct sp__json *j, const char *key) {
  prefix(j);
  sp__json_write_string(j->f, key);
  fputs(": ", j->f);
  j->after_key = 1;
}

void sp__json_string(struct sp__json *j, const char *s) {
  prefix(j);
  sp__json_write_string(j->f, s);
}

void sp__json_int(struct sp__json *j, int64_t v) {
  prefix(j);
  fprintf(j->f, "%lld", (long long)v);
}

void sp__json_uint(struct sp__json *j, uint64_t v) {
  prefix(j);
  fprintf(j->f, "%llu", (unsigned long long)v);
}

void sp__json_double(struct sp__json *j, double v) {
  prefix(j);
  if (!isfinite(v)) {
    fputs("null", j->f);
    return;
  }
  char buf[64];
  sp__format_double(buf, sizeof buf, v);
  fputs(buf, j->f);
}

void sp__json_null(struct sp__json *j) {
  prefix(j);
  fputs("null", j->f);
}

void sp__json_bool(struct sp__json *j, int v) {
  prefix(j);
  fputs(v ? "true" : "false", j->f);
}

void sp__json_raw(struct sp__json *j, const char *text) {
  prefix(j);
  fputs(text, j->f);
}
