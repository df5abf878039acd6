/* error.c - status strings and the per-thread "last error" message.
 *
 * Library calls never print. A failing setup or I/O call stores a message that
 * says what went wrong and how to fix it; callers read it with sp_last_error().
 * The buffer is per thread so concurrent failures do not clobber each other.
 * It lives on the heap, reached through one thread-local pointer: the
 * library's thread-local block must stay tiny for dlopen() (see detail.h).
 */
#include "common/error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SP__ERROR_BYTES 2048

static __thread char *last_error;
static pthread_key_t error_key;
static pthread_once_t error_key_once = PTHREAD_ONCE_INIT;
static int error_key_ok;

static void free_error(void *p) {
  free(p);
  last_error = NULL;
}
static void make_error_key(void) { error_key_ok = pthread_key_create(&error_key, free_error) == 0; }

/* The calling thread's buffer, made on first use; NULL when out of memory
 * (the message is then lost and sp_last_error() says so). */
static char *error_buf(void) {
  if (last_error) return last_error;
  pthread_once(&error_key_once, make_error_key);
  char *b = calloc(1, SP__ERROR_BYTES);
  if (!b) return NULL;
  if (error_key_ok) pthread_setspecific(error_key, b);
  last_error = b;
  return b;
}

const char *sp_strerror(int status) {
  switch (status) {
#define SP__STATUS_TEXT(name, value, text) \
  case value:                             \
    return text;
    SP_STATUS_MAP(SP__STATUS_TEXT)
#undef SP__STATUS_TEXT
  }
  return "unknown status";
}

const char *sp_status_name(int status) {
  switch (status) {
#define SP__STATUS_NAME(name, value, text) \
  case value:                             \
    return #name;
    SP_STATUS_MAP(SP__STATUS_NAME)
#undef SP__STATUS_NAME
  }
  return "SP_ERR_UNKNOWN";
}

static __thread int error_lost; /* this thread lost a message to a failed allocation */

const char *sp_last_error(void) {
  if (last_error) return last_error;
  return error_lost ? "out of memory (the error message could not be stored)" : "";
}

sp_status sp__set_error(sp_status status, const char *fmt, ...) {
  char *b = error_buf();
  if (!b) {
    error_lost = 1;
    return status;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, SP__ERROR_BYTES, fmt, ap);
  va_end(ap);
  return status;
}

void sp__prefix_error(const char *fmt, ...) {
  char prefix[512], old[SP__ERROR_BYTES];
  char *b = error_buf();
  if (!b) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, b, sizeof old);
  snprintf(b, SP__ERROR_BYTES, "%.500s: %.1500s", prefix, old);
}

void sp__clear_error(void) {
  if (last_error) last_error[0] = '\0';
}

char *sp__strdup(const char *s) { return s ? sp__strndup(s, strlen(s)) : NULL; }

char *sp__strndup(const char *s, size_t n) {
  if (!s) return NULL;
  char *p = malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *sp__asprintf(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

int sp__utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  while (p < e) {
    unsigned c = *p++;
    if (c == 0) return 0;
    if (c < 0x80) continue;
    int more;
    unsigned min;
    if ((c & 0xE0) == 0xC0) { more = 1; min = 0x80; c &= 0x1F; }
    else if ((c & 0xF0) == 0xE0) { more = 2; min = 0x800; c &= 0x0F; }
    else if ((c & 0xF8) == 0xF0) { more = 3; min = 0x10000; c &= 0x07; }
    else return 0;
    if (e - p < more) return 0;
    for (int i = 0; i < more; i++) {
      if ((p[i] & 0xC0) != 0x80) return 0;
      c = (c << 6) | (p[i] & 0x3F);
    }
    p += more;
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  }
  return 1;
}
