/* symbolize.c - addresses to functions and lines (see symbolize.h).
 *
 * With libdw: one Dwfl session holding the reported objects. An address
 * gives its module, the ELF symbol around it, the line-table row for it and
 * the innermost DWARF function scope containing it. From there the walk goes
 * outward one function at a time: an inlined subroutine's call site
 * (DW_AT_call_file/DW_AT_call_line) is the location inside the function it
 * was inlined into, which is its nearest enclosing function DIE. Debug
 * information is read lazily per module, so objects no address touched cost
 * nothing. debuginfod is never asked: a finalize must not wait on the
 * network; separate debug files are still found through .gnu_debuglink and
 * /usr/lib/debug.
 *
 * Without libdw: dladdr for this process's addresses, and the reported
 * module list for the rest.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* dladdr */
#endif
#include "common/symbolize.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

#ifdef SP_WITH_LIBDW
#  include <dwarf.h>
#  include <elfutils/libdw.h>
#  include <elfutils/libdwfl.h>
#endif

struct cache_slot {
  uint64_t addr; /* 0 = empty (0 is never a code address) */
  int found;
  struct sp_sym sym;
};

/* Objects added by path: their names and ranges even when the file cannot
 * be read. */
struct module {
  char *path;
  uint64_t base, start, end;
};

#ifdef SP_WITH_LIBDW
/* Compilation units by address range, for objects without .debug_aranges
 * (clang does not emit it by default, and libdw then finds no unit). */
struct cu_range {
  Dwarf_Addr lo, hi; /* [lo, hi) without the module's bias */
  Dwarf_Die cu;
};
struct cu_index {
  Dwfl_Module *mod;
  struct cu_range *r;
  size_t n;
};
#endif

struct sp_symbolizer {
#ifdef SP_WITH_LIBDW
  Dwfl *dwfl;
  int reporting; /* modules were added since the last dwfl_report_end */
  struct cu_index *cuidx;
  size_t ncuidx;
#endif
  int self;      /* this process's objects were added */
  struct module *mods;
  size_t nmods;
  struct cache_slot *slots;
  size_t cap, used;
};

static const char unknown[] = "??";

int sp__sym_have_lines(void) {
#ifdef SP_WITH_LIBDW
  return 1;
#else
  return 0;
#endif
}

#ifdef SP_WITH_LIBDW
static char *debuginfo_path = NULL;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};
#endif

sp_symbolizer *sp__sym_new(void) {
  sp_symbolizer *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cap = 256;
  s->slots = calloc(s->cap, sizeof *s->slots);
#ifdef SP_WITH_LIBDW
  s->dwfl = dwfl_begin(&callbacks);
  s->reporting = 1; /* a new session accepts reports */
#endif
  if (!s->slots) {
    sp__sym_free(s);
    return NULL;
  }
  return s;
}

void sp__sym_free(sp_symbolizer *s) {
  if (!s) return;
#ifdef SP_WITH_LIBDW
  if (s->dwfl) dwfl_end(s->dwfl);
  for (size_t i = 0; i < s->ncuidx; i++) free(s->cuidx[i].r);
  free(s->cuidx);
#endif
  for (size_t i = 0; i < s->nmods; i++) free(s->mods[i].path);
  free(s->mods);
  free(s->slots);
  free(s);
}

/* New objects can answer addresses that missed before. */
static void forget_cache(sp_symbolizer *s) {
  memset(s->slots, 0, s->cap * sizeof *s->slots);
  s->used = 0;
}

#ifdef SP_WITH_LIBDW
static void begin_report(sp_symbolizer *s) {
  if (!s->reporting) dwfl_report_begin_add(s->dwfl);
  s->reporting = 1;
}
#endif

int sp__sym_add_self(sp_symbolizer *s) {
  forget_cache(s);
  s->self = 1;
#ifdef SP_WITH_LIBDW
  if (!s->dwfl) return -1;
  begin_report(s);
  return dwfl_linux_proc_report(s->dwfl, getpid()) == 0 ? 0 : -1;
#else
  return 0;
#endif
}

int sp__sym_add_module(sp_symbolizer *s, const char *path, uint64_t base, uint64_t start, uint64_t end) {
  forget_cache(s);
  struct module *m = realloc(s->mods, (s->nmods + 1) * sizeof *m);
  if (!m) return -1;
  s->mods = m;
  char *p = sp__strdup(path);
  if (!p) return -1;
  s->mods[s->nmods++] = (struct module){p, base, start, end};
#ifdef SP_WITH_LIBDW
  if (!s->dwfl) return -1;
  begin_report(s);
  return dwfl_report_elf(s->dwfl, p, p, -1, (GElf_Addr)base, false) ? 0 : -1;
#else
  return -1;
#endif
}

#ifdef SP_WITH_LIBDW
static int is_function(Dwarf_Die *d) {
  int tag = dwarf_tag(d);
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* Replace *d (an inlined subroutine) by the function it was inlined into:
 * its nearest enclosing function DIE in the tree. (dwarf_getscopes goes on
 * from the abstract definition instead, which would skip the caller.) 0 when
 * there is none. */
static int enclosing_function(Dwarf_Die *d) {
  Dwarf_Die *chain = NULL;
  int n = dwarf_getscopes_die(d, &chain), found = 0;
  for (int j = 1; j < n && !found; j++) /* chain[0] is d itself */
    if (is_function(&chain[j])) {
      *d = chain[j];
      found = 1;
    }
  free(chain);
  return found;
}

/* The name of a function DIE (through its abstract origin), else its
 * linkage name. */
static const char *die_name(Dwarf_Die *d) {
  const char *n = dwarf_diename(d);
  if (n) return n;
  Dwarf_Attribute a;
  n = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_linkage_name, &a));
  return n ? n : unknown;
}

static int die_decl_line(Dwarf_Die *d) {
  int line = 0;
  return dwarf_decl_line(d, &line) == 0 ? line : 0;
}

/* The call site of an inlined subroutine; 0 when the compiler did not say. */
static int call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line) {
  Dwarf_Attribute a;
  Dwarf_Word f = 0, l = 0;
  if (!dwarf_attr(inl, DW_AT_call_file, &a) || dwarf_formudata(&a, &f) != 0) return 0;
  if (!dwarf_attr(inl, DW_AT_call_line, &a) || dwarf_formudata(&a, &l) != 0) return 0;
  Dwarf_Files *files;
  size_t nfiles;
  if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || f >= nfiles) return 0;
  *file = dwarf_filesrc(files, f, NULL, NULL);
  *line = (int)l;
  return 1;
}

static int cmp_range(const void *a, const void *b) {
  const struct cu_range *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every unit's address ranges, sorted; built once per module. */
static struct cu_index *module_cu_index(sp_symbolizer *s, Dwfl_Module *mod) {
  for (size_t i = 0; i < s->ncuidx; i++)
    if (s->cuidx[i].mod == mod) return &s->cuidx[i];
  struct cu_index *ni = realloc(s->cuidx, (s->ncuidx + 1) * sizeof *ni);
  if (!ni) return NULL;
  s->cuidx = ni;
  struct cu_index *x = &s->cuidx[s->ncuidx++];
  *x = (struct cu_index){mod, NULL, 0};
  size_t cap = 0;
  Dwarf_Addr bias;
  for (Dwarf_Die *cu = dwfl_module_nextcu(mod, NULL, &bias); cu; cu = dwfl_module_nextcu(mod, cu, &bias)) {
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
      if (x->n == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        struct cu_range *r = realloc(x->r, ncap * sizeof *r);
        if (!r) return x; /* a partial index still answers what it holds */
        x->r = r;
        cap = ncap;
      }
      x->r[x->n++] = (struct cu_range){lo, hi, *cu};
    }
  }
  qsort(x->r, x->n, sizeof *x->r, cmp_range);
  return x;
}

static Dwarf_Die *find_cu(sp_symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Addr *bias) {
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
  if (cu) return cu;
  if (!dwfl_module_getdwarf(mod, bias)) return NULL;
  struct cu_index *x = module_cu_index(s, mod);
  if (!x) return NULL;
  Dwarf_Addr a = addr - *bias;
  size_t lo = 0, hi = x->n; /* the last range starting at or below a */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (x->r[mid].lo <= a) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0;) { /* ranges may nest: look back a little */
    if (a >= x->r[i].lo && a < x->r[i].hi) return &x->r[i].cu;
    if (lo - i > 8) break;
  }
  return NULL;
}

static int resolve_dw(sp_symbolizer *s, uint64_t addr, struct sp_sym *out) {
  if (!s->dwfl) return -1;
  if (s->reporting) {
    dwfl_report_end(s->dwfl, NULL, NULL);
    s->reporting = 0;
  }
  Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, (Dwarf_Addr)addr);
  if (!mod) return -1;
  Dwarf_Addr start = 0;
  out->module = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
  out->module_offset = addr - start;
  GElf_Off off = 0;
  GElf_Sym sym;
  const char *sname = dwfl_module_addrinfo(mod, (GElf_Addr)addr, &off, &sym, NULL, NULL, NULL);
  if (sname) {
    out->symbol = sname;
    out->symbol_offset = off;
  }

  const char *file = NULL;
  int line = 0;
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = find_cu(s, mod, (Dwarf_Addr)addr, &bias);
  Dwarf_Line *ln = cu ? dwarf_getsrc_die(cu, (Dwarf_Addr)addr - bias) : NULL;
  if (ln && (file = dwarf_linesrc(ln, NULL, NULL)) && dwarf_lineno(ln, &line) != 0) file = NULL;
  if (!file) line = 0;
  Dwarf_Die *scopes = NULL, die;
  int n = cu ? dwarf_getscopes(cu, (Dwarf_Addr)addr - bias, &scopes) : 0;
  int have = 0;
  for (int i = 0; i < n && !have; i++)
    if (is_function(&scopes[i])) {
      die = scopes[i];
      have = 1;
    }
  free(scopes);
  while (have && out->nframes < SP_SYM_MAX_FRAMES) {
    struct sp_sym_frame *fr = &out->frames[out->nframes++];
    fr->function = die_name(&die);
    fr->file = file;
    fr->line = line;
    fr->decl_line = die_decl_line(&die);
    if (dwarf_tag(&die) != DW_TAG_inlined_subroutine) break;
    if (!call_site(cu, &die, &file, &line)) {
      file = NULL;
      line = 0;
    }
    have = enclosing_function(&die);
  }
  if (out->nframes == 0 && file) {
    /* Lines but no function DIE (assembly): one frame named by the symbol. */
    struct sp_sym_frame *fr = &out->frames[out->nframes++];
    fr->function = sname ? sname : unknown;
    fr->file = file;
    fr->line = line;
    fr->decl_line = 0;
  }
  return 0;
}
#endif

static int resolve_fallback(sp_symbolizer *s, uint64_t addr, struct sp_sym *out) {
  for (size_t i = 0; i < s->nmods; i++)
    if (addr >= s->mods[i].start && addr < s->mods[i].end) {
      out->module = s->mods[i].path;
      out->module_offset = addr - s->mods[i].base;
      return 0;
    }
  Dl_info di;
  if (!s->self || !dladdr((void *)(uintptr_t)addr, &di) || !di.dli_fname) return -1;
  out->module = di.dli_fname;
  out->module_offset = addr - (uint64_t)(uintptr_t)di.dli_fbase;
  if (di.dli_sname) {
    out->symbol = di.dli_sname;
    out->symbol_offset = addr - (uint64_t)(uintptr_t)di.dli_saddr;
  }
  return 0;
}

static int resolve(sp_symbolizer *s, uint64_t addr, struct sp_sym *out) {
  memset(out, 0, sizeof *out);
#ifdef SP_WITH_LIBDW
  if (resolve_dw(s, addr, out) == 0) return 0;
  memset(out, 0, sizeof *out);
#endif
  return resolve_fallback(s, addr, out);
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return x;
}

static struct cache_slot *find_slot(struct cache_slot *slots, size_t cap, uint64_t addr) {
  size_t i = (size_t)mix(addr) & (cap - 1);
  while (slots[i].addr && slots[i].addr != addr) i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int grow(sp_symbolizer *s) {
  size_t ncap = s->cap * 2;
  struct cache_slot *n = calloc(ncap, sizeof *n);
  if (!n) return -1;
  for (size_t i = 0; i < s->cap; i++)
    if (s->slots[i].addr) *find_slot(n, ncap, s->slots[i].addr) = s->slots[i];
  free(s->slots);
  s->slots = n;
  s->cap = ncap;
  return 0;
}

int sp__sym_lookup(sp_symbolizer *s, uint64_t addr, struct sp_sym *out) {
  memset(out, 0, sizeof *out);
  if (!addr) return -1;
  struct cache_slot *c = find_slot(s->slots, s->cap, addr);
  if (c->addr) {
    *out = c->sym;
    return c->found ? 0 : -1;
  }
  int rc = resolve(s, addr, out);
  if ((s->used + 1) * 4 > s->cap * 3 && grow(s) != 0) return rc; /* uncached, still right */
  c = find_slot(s->slots, s->cap, addr);
  c->addr = addr;
  c->found = rc == 0;
  c->sym = *out;
  s->used++;
  return rc;
}

const char *sp__sym_function(sp_symbolizer *s, uint64_t fn, const char **file, int *line) {
  struct sp_sym sym;
  *file = NULL;
  *line = 0;
  if (sp__sym_lookup(s, fn, &sym) != 0) return NULL;
  if (sym.nframes > 0) {
    /* At a function's first instruction nothing is inlined yet: the
     * outermost frame is the function itself. */
    const struct sp_sym_frame *fr = &sym.frames[sym.nframes - 1];
    if (fr->function != unknown) {
      *file = fr->file;
      *line = fr->decl_line ? fr->decl_line : fr->line;
      return fr->function;
    }
  }
  return sym.symbol;
}
