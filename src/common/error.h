/* error.h - per-thread error messages behind sp_last_error(), and the string
 * helpers every folder uses. Depends on libc only. */
#ifndef SP_COMMON_ERROR_H
#define SP_COMMON_ERROR_H

#include <stddef.h>

#include "scope_profiler/status.h"

/* Record a message for the calling thread and return `status`, so a failing
 * call reads:  return sp__set_error(SP_ERR_IO, "cannot create %s: %s", ...). */
sp_status sp__set_error(sp_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepend context to the current message ("reading x.toml: <old message>"). */
void sp__prefix_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Clear the calling thread's message. */
void sp__clear_error(void);

/* malloc'd copies; NULL in, NULL out. */
char *sp__strdup(const char *s);
char *sp__strndup(const char *s, size_t n);
/* malloc'd printf. */
char *sp__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 when `s` (length n) is valid UTF-8 with no NUL byte. */
int sp__utf8_valid(const char *s, size_t n);

#endif
