/* json_parse.h - a strict JSON (RFC 8259) parser into a small tree, for
 * reading upstream's JSON profiles (read_native.c). Limits keep hostile
 * input bounded: nesting depth, and errors name the byte offset, line and
 * what was expected. Integers that fit int64 stay integers (Python's json
 * writes them so); other numbers are doubles.
 */
#ifndef SP_READ_JSON_PARSE_H
#define SP_READ_JSON_PARSE_H

#include <stddef.h>
#include <stdint.h>

enum sp_jtype { SP_J_NULL, SP_J_BOOL, SP_J_INT, SP_J_FLOAT, SP_J_STRING, SP_J_ARRAY, SP_J_OBJECT };

struct sp_jval {
  enum sp_jtype type;
  int b;
  int64_t i;
  double f;
  char *s;       /* SP_J_STRING: NUL-terminated UTF-8 (no NUL inside) */
  size_t len;    /* string length; items in an array or object */
  struct sp_jval *items; /* array items, or object values */
  char **keys;   /* object keys, in document order */
};

/* Parses `size` bytes. On failure returns NULL and writes a message to
 * err ("line 3, column 7: expected ',' or '}'"). Free with sp__json_free. */
struct sp_jval *sp__json_parse(const char *text, size_t size, char *err, size_t errsize);
void sp__json_free(struct sp_jval *v);

/* The value of `key` in an object, or NULL. */
const struct sp_jval *sp__json_get(const struct sp_jval *obj, const char *key);
/* A JSON rendering of v (compact, Python-like separators ", " and ": "),
 * malloc'd; NULL when out of memory. */
char *sp__json_render(const struct sp_jval *v);
/* The name of a value's type as a Python user would say it. */
const char *sp__json_type_name(enum sp_jtype t);

#endif
