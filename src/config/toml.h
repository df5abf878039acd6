/* toml.h - a small TOML 1.0 reader for scope-profiler configuration files.
 *
 * It reads a whole document into a tree of tables, arrays and scalars, each
 * node remembering the line and column it started at so that the settings
 * loader can point at the exact spot of a bad value. It accepts comments, all
 * four string forms with every TOML 1.0 escape, integers (decimal with `_`,
 * hex, octal, binary), floats (exponents, inf, nan), booleans, arrays (mixed
 * types allowed), tables, dotted and quoted keys and inline tables. What it
 * does not accept - offset/local date-times, dates, times and arrays of tables
 * ([[x]]) - is a clear error, never a silent misreading. Every error names
 * the file, line and column: "config.toml:3:14: ...".
 *
 * Depends on libc and src/common/ only.
 */
#ifndef SP_CONFIG_TOML_H
#define SP_CONFIG_TOML_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/status.h"

typedef enum sp__toml_type {
  SP__TOML_STRING,
  SP__TOML_INTEGER,
  SP__TOML_FLOAT,
  SP__TOML_BOOL,
  SP__TOML_ARRAY,
  SP__TOML_TABLE
} sp__toml_type;

/* How a table came to exist; TOML's redefinition rules depend on it. */
#define SP__TOML_T_HEADER 1u   /* defined by its own [header] */
#define SP__TOML_T_IMPLICIT 2u /* created on the way to a deeper [a.b.c] header */
#define SP__TOML_T_DOTTED 4u   /* created by a dotted key (a.b = 1) */
#define SP__TOML_T_INLINE 8u   /* an inline table { ... }: closed for additions */

typedef struct sp__toml_value sp__toml_value;

typedef struct sp__toml_entry {
  char *key; /* UTF-8, NUL-terminated; may also hold a NUL from "\u0000" */
  size_t key_len;
  int line, col; /* where the key (its last part) was written */
  sp__toml_value *value;
} sp__toml_entry;

struct sp__toml_value {
  sp__toml_type type;
  int line, col; /* where the value, or the table's header, starts */
  unsigned flags; /* tables: SP__TOML_T_* */
  union {
    struct {
      char *ptr; /* NUL-terminated; len excludes the terminator */
      size_t len;
    } str;
    int64_t integer;
    double flt;
    int boolean;
    struct {
      sp__toml_value **items;
      size_t n, cap;
    } arr;
    struct {
      sp__toml_entry *entries; /* in document order */
      size_t n, cap;
    } tab;
  } u;
};

/* Parse text[0..len). `name` is used in messages. On success *root is the
 * root table (free with sp__toml_free); on failure *root is NULL, the status
 * is SP_ERR_PARSE (or SP_ERR_NO_MEMORY) and sp_last_error() reads
 * "name:line:col: what was wrong; how to fix it". */
sp_status sp__toml_parse(const char *text, size_t len, const char *name, sp__toml_value **root);

void sp__toml_free(sp__toml_value *v);

/* The entry `key` of a table, or NULL. */
const sp__toml_entry *sp__toml_find(const sp__toml_value *table, const char *key);

/* "string", "integer", "float", "boolean", "array", "table". */
const char *sp__toml_type_name(sp__toml_type t);
/* The same with its article, for messages: "an integer", "a table". */
const char *sp__toml_type_article(sp__toml_type t);

/* A flattened, deterministic rendering of a document: one line per leaf,
 * `dotted.key = value`, in document order; tables inside arrays are written
 * inline. Used by the test corpus and the fuzzer. malloc'd; NULL when out of
 * memory. */
char *sp__toml_dump(const sp__toml_value *root);

#endif
