/* config_buf.h - a growable text buffer for the configuration code: the TOML
 * dump, the settings JSON, the generated help and documentation.
 *
 * An allocation failure is sticky: later appends do nothing and
 * sp__buf_take() returns NULL, so callers check once at the end instead of
 * after every append. Depends on libc only, so the fuzz build can compile
 * src/config/ with nothing but src/common/.
 */
#ifndef SP_CONFIG_BUF_H
#define SP_CONFIG_BUF_H

#include <stddef.h>

typedef struct sp__buf {
  char *p;
  size_t n, cap;
  int failed;
} sp__buf;

#define SP__BUF_INIT {NULL, 0, 0, 0}

void sp__buf_add(sp__buf *b, const char *s, size_t n);
void sp__buf_puts(sp__buf *b, const char *s);
void sp__buf_putc(sp__buf *b, char c);
void sp__buf_printf(sp__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append `n` spaces. */
void sp__buf_pad(sp__buf *b, size_t n);
/* Append s[0..n) as a JSON string literal (quotes included). Invalid UTF-8
 * bytes become \u00XX so the output is always valid JSON. */
void sp__buf_json_string(sp__buf *b, const char *s, size_t n);
/* The NUL-terminated text (malloc'd, owned by the caller), or NULL when an
 * allocation failed; the buffer is reset either way. */
char *sp__buf_take(sp__buf *b);
void sp__buf_free(sp__buf *b);

#endif
