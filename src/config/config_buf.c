/* config_buf.c - the growable text buffer of config_buf.h. */
#include "config/config_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(sp__buf *b, size_t extra) {
  if (b->failed) return 0;
  if (extra > ((size_t)-1) / 2 - b->n) {
    b->failed = 1;
    return 0;
  }
  size_t need = b->n + extra + 1;
  if (need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

void sp__buf_add(sp__buf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

void sp__buf_puts(sp__buf *b, const char *s) { sp__buf_add(b, s, strlen(s)); }

void sp__buf_putc(sp__buf *b, char c) { sp__buf_add(b, &c, 1); }

void sp__buf_pad(sp__buf *b, size_t n) {
  while (n--) sp__buf_putc(b, ' ');
}

void sp__buf_printf(sp__buf *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
  } else if (reserve(b, (size_t)n)) {
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap2);
    b->n += (size_t)n;
  }
  va_end(ap2);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t more;
  unsigned min, cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { more = 1; min = 0x80; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { more = 2; min = 0x800; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { more = 3; min = 0x10000; cp = c & 0x07; }
  else return 0;
  if (n < more + 1) return 0;
  for (size_t i = 1; i <= more; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return more + 1;
}

void sp__buf_json_string(sp__buf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  sp__buf_putc(b, '"');
  size_t i = 0;
  while (i < n) {
    unsigned c = u[i];
    switch (c) {
    case '"': sp__buf_puts(b, "\\\""); i++; continue;
    case '\\': sp__buf_puts(b, "\\\\"); i++; continue;
    case '\b': sp__buf_puts(b, "\\b"); i++; continue;
    case '\f': sp__buf_puts(b, "\\f"); i++; continue;
    case '\n': sp__buf_puts(b, "\\n"); i++; continue;
    case '\r': sp__buf_puts(b, "\\r"); i++; continue;
    case '\t': sp__buf_puts(b, "\\t"); i++; continue;
    default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      sp__buf_printf(b, "\\u%04x", c);
      i++;
      continue;
    }
    size_t k = utf8_seq(u + i, n - i);
    if (k == 0) {
      /* Not UTF-8 (a byte path from the environment, say): keep the byte
       * visible as its Latin-1 reading rather than emit invalid JSON. */
      sp__buf_printf(b, "\\u%04x", c);
      i++;
      continue;
    }
    sp__buf_add(b, s + i, k);
    i += k;
  }
  sp__buf_putc(b, '"');
}

char *sp__buf_take(sp__buf *b) {
  char *p = NULL;
  if (!b->failed) {
    if (!b->p) reserve(b, 0);
    p = b->failed ? NULL : b->p;
    if (p) p[b->n] = '\0';
  }
  if (!p) free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
  b->failed = 0;
  return p;
}

void sp__buf_free(sp__buf *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
  b->failed = 0;
}
