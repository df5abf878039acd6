/* symbolize.c - offline symbolisation through libdwfl: modules reported by
 * path and load bias, addresses resolved to function, source file and line,
 * each answer cached (captures repeat the same few thousand addresses).
 */
#include "read/symbolize.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"

struct entry {
  uint64_t addr;
  int used, found;
  struct sp_sym_info info;
};

struct sp_sym {
  Dwfl *dwfl;
  int reporting; /* between dwfl_report_begin and _end */
  struct entry *cache;
  size_t cap, n;
  char **strings; /* owned copies handed out in sp_sym_info */
  size_t nstrings, strings_cap;
};

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

struct sp_sym *sp__sym_new(void) {
  struct sp_sym *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->dwfl = dwfl_begin(&callbacks);
  if (!s->dwfl) {
    free(s);
    return NULL;
  }
  return s;
}

int sp__sym_add_module(struct sp_sym *s, const char *path, uint64_t bias) {
  /* Only regular files: a recording names paths, and opening a FIFO or a
   * device it names could block or read forever. */
  struct stat st;
  if (stat(path, &st) || !S_ISREG(st.st_mode)) return -1;
  if (!s->reporting) {
    dwfl_report_begin_add(s->dwfl);
    s->reporting = 1;
  }
  return dwfl_report_elf(s->dwfl, path, path, -1, bias, true) ? 0 : -1;
}

static const char *keep(struct sp_sym *s, const char *str) {
  if (!str) return NULL;
  if (s->nstrings == s->strings_cap) {
    size_t cap = s->strings_cap ? s->strings_cap * 2 : 64;
    char **v = realloc(s->strings, cap * sizeof *v);
    if (!v) return NULL;
    s->strings = v;
    s->strings_cap = cap;
  }
  char *c = sp__strdup(str);
  if (c) s->strings[s->nstrings++] = c;
  return c;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return x;
}

static struct entry *slot(struct sp_sym *s, uint64_t addr) {
  if (s->n * 2 >= s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    struct entry *c = calloc(cap, sizeof *c);
    if (!c) return NULL;
    for (size_t i = 0; i < s->cap; i++)
      if (s->cache[i].used) {
        size_t j = mix(s->cache[i].addr) & (cap - 1);
        while (c[j].used) j = (j + 1) & (cap - 1);
        c[j] = s->cache[i];
      }
    free(s->cache);
    s->cache = c;
    s->cap = cap;
  }
  size_t j = mix(addr) & (s->cap - 1);
  while (s->cache[j].used && s->cache[j].addr != addr) j = (j + 1) & (s->cap - 1);
  return &s->cache[j];
}

int sp__sym_lookup(struct sp_sym *s, uint64_t addr, struct sp_sym_info *out) {
  memset(out, 0, sizeof *out);
  if (s->reporting) {
    dwfl_report_end(s->dwfl, NULL, NULL);
    s->reporting = 0;
  }
  struct entry *e = slot(s, addr);
  if (e && e->used) {
    *out = e->info;
    return e->found;
  }
  struct sp_sym_info info = {0};
  Dwfl_Module *m = dwfl_addrmodule(s->dwfl, (Dwarf_Addr)addr);
  int found = 0;
  if (m) {
    Dwarf_Addr start = 0;
    const char *mod = dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
    info.module = keep(s, mod);
    info.offset = addr - start;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *fn = dwfl_module_addrinfo(m, (GElf_Addr)addr, &off, &sym, NULL, NULL, NULL);
    if (fn) {
      info.function = keep(s, fn);
      found = 1;
    }
    Dwfl_Line *l = dwfl_module_getsrc(m, (Dwarf_Addr)addr);
    if (l) {
      int line = 0;
      const char *file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
      if (file) {
        info.file = keep(s, file);
        info.line = line;
      }
    }
  }
  if (e) {
    e->used = 1;
    e->addr = addr;
    e->found = found;
    e->info = info;
    s->n++;
  }
  *out = info;
  return found;
}

void sp__sym_free(struct sp_sym *s) {
  if (!s) return;
  dwfl_end(s->dwfl);
  for (size_t i = 0; i < s->nstrings; i++) free(s->strings[i]);
  free(s->strings);
  free(s->cache);
  free(s);
}
