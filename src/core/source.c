/* source.c - capture_region_source: the text of a region's block or function,
 * cut out of its source file at finalize (each file read once per finalize).
 *
 * A block region (SP_REGION) runs from its macro to the end of the enclosing
 * block, so the text is the macro's line through the brace that closes that
 * block. A function region (SP_FUNCTION) is the whole function: from the
 * line where its definition starts (found by walking back from the macro to
 * the line holding the function's name) through the closing brace of its
 * body. Braces inside strings, character literals and comments are skipped.
 * A Python file (.py: regions made by the Python package) has no braces: its
 * region is the statement at the line (a `with` line, a decorated function
 * from its first decorator through its `def`) and every line indented
 * deeper than it, as upstream cuts the `with` block or the function out of
 * the file. A string literal whose lines start further left ends it early.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/source.h"

struct cached {
  char *path;
  char *text; /* NULL when unreadable */
};

struct sp_source_cache {
  struct cached *files;
  size_t n, cap;
};

sp_source_cache *sp__source_cache_new(void) { return calloc(1, sizeof(sp_source_cache)); }

void sp__source_cache_free(sp_source_cache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) {
    free(c->files[i].path);
    free(c->files[i].text);
  }
  free(c->files);
  free(c);
}

static const char *file_text(sp_source_cache *c, const char *path) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->files[i].path, path) == 0) return c->files[i].text;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    struct cached *n = realloc(c->files, cap * sizeof *n);
    if (!n) return NULL;
    c->files = n;
    c->cap = cap;
  }
  char *text = NULL;
  FILE *f = fopen(path, "rb");
  if (f && fseek(f, 0, SEEK_END) == 0) {
    long len = ftell(f);
    if (len >= 0 && len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)len + 1))) {
      size_t got = fread(text, 1, (size_t)len, f);
      text[got] = 0;
    }
  }
  if (f) fclose(f);
  c->files[c->n].path = sp__strdup(path);
  c->files[c->n].text = text;
  if (!c->files[c->n].path) {
    free(text);
    return NULL;
  }
  c->n++;
  return text;
}

static const char *line_start(const char *text, int line) {
  const char *p = text;
  for (int l = 1; l < line && *p; p++)
    if (*p == '\n') l++;
  return *p || line == 1 ? p : NULL;
}

/* End (one past) of the block enclosing `from`: the first unmatched '}'. */
static const char *block_end(const char *from) {
  int depth = 0;
  for (const char *p = from; *p; p++) {
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
      if (!*p) break;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (!e) break;
      p = e + 1;
    } else if (*p == '"' || *p == '\'') {
      char q = *p;
      for (p++; *p && *p != q; p++)
        if (*p == '\\' && p[1]) p++;
      if (!*p) break;
    } else if (*p == '{') {
      depth++;
    } else if (*p == '}') {
      if (depth == 0) return p + 1;
      depth--;
    }
  }
  return NULL;
}

static int py_indent(const char *line, const char **first) {
  int n = 0;
  for (; *line == ' ' || *line == '\t'; line++) n += *line == '\t' ? 8 - n % 8 : 1;
  *first = line;
  return n;
}

/* End (one past) of the Python statement at `from` with its indented body. */
static const char *py_block_end(const char *from) {
  const char *first;
  int base = py_indent(from, &first);
  int after_decorator = *first == '@';
  const char *end = strchr(from, '\n');
  if (!end) return from + strlen(from);
  for (const char *p = end + 1; *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    int ind = py_indent(p, &first);
    int blank = *first == '\n' || *first == '\r' || *first == 0 || *first == '#';
    if (!blank) {
      if (ind <= base && !(ind == base && after_decorator)) break;
      if (ind == base) after_decorator = *first == '@';
      end = eol;
    }
    p = *eol ? eol + 1 : eol;
  }
  return end;
}

static int is_python(const char *path) {
  size_t n = strlen(path);
  return n > 3 && strcmp(path + n - 3, ".py") == 0;
}

char *sp__source_text(sp_source_cache *c, const char *path, int line, int is_function, const char *func) {
  if (!c || !path || line < 1) return NULL;
  const char *text = file_text(c, path);
  if (!text) return NULL;
  const char *from = line_start(text, line);
  if (!from) return NULL;
  if (is_python(path)) return sp__strndup(from, (size_t)(py_block_end(from) - from));
  const char *begin = from;
  if (is_function && func && *func) {
    /* Walk back to the line that names the function: its definition. */
    size_t fl = strlen(func);
    for (const char *p = from; p > text;) {
      const char *ls = p - 1;
      while (ls > text && ls[-1] != '\n') ls--;
      const char *hit = strstr(ls, func);
      if (hit && hit < p && (hit[fl] == '(' || hit[fl] == ' ')) {
        begin = ls;
        break;
      }
      p = ls;
    }
  }
  const char *end = block_end(from);
  if (!end) return NULL;
  return sp__strndup(begin, (size_t)(end - begin));
}
