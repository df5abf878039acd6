/* test-line.c - the libdw symboliser (src/common/symbolize.c): functions,
 * files, lines and inlined frames of addresses in this very test program,
 * whose lines are known because they are in this file (__LINE__), in this
 * process and offline (the executable added by path and load address), and
 * the answers for addresses in no object. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>

#include "common/symbolize.h"
#include "harness.h"

/* The address of the instruction at this point of the source, for the
 * line table to map back. */
#if defined(__x86_64__)
#  define HERE(pc) __asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc))
#elif defined(__aarch64__)
#  define HERE(pc) __asm__ volatile("adr %0, ." : "=r"(pc))
#endif

static volatile uint64_t sink;

__attribute__((noinline, used)) static int static_target(int x) { /* decl line: STATIC_LINE */
  sink += (uint64_t)x;
  return x + 1;
}
static const int static_line = __LINE__ - 4;

#ifdef HERE
static int inl_line, call_line;
static inline __attribute__((always_inline)) uint64_t inlined_pc(void) {
  uint64_t pc;
  HERE(pc); inl_line = __LINE__;
  return pc;
}

__attribute__((noinline)) static uint64_t outer_pc(void) {
  uint64_t pc = inlined_pc(); call_line = __LINE__;
  return pc + 0 * sink;
}
#endif

static sp_symbolizer *self_symbolizer(void) {
  sp_symbolizer *s = sp__sym_new();
  if (s) ASSERT_EQ(sp__sym_add_self(s), 0);
  return s;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = s ? strlen(s) : 0, m = strlen(suffix);
  return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

SP_TEST(static_function_named_with_file_and_line) {
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  sp_symbolizer *s = self_symbolizer();
  ASSERT(s);
  const char *file = NULL;
  int line = 0;
  const char *name = sp__sym_function(s, (uint64_t)(uintptr_t)&static_target, &file, &line);
  ASSERT_STR_EQ(name, "static_target");
  ASSERT(ends_with(file, "test-line.c"));
  ASSERT_EQ(line, static_line);
  sp__sym_free(s);
}

SP_TEST(inlined_frames_in_order) {
#ifndef HERE
  SKIP("no program-counter capture for this architecture");
#else
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  uint64_t pc = outer_pc();
  sp_symbolizer *s = self_symbolizer();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, pc, &sym), 0);
  ASSERT_EQ(sym.nframes, 2);
  ASSERT_STR_EQ(sym.frames[0].function, "inlined_pc");
  ASSERT_EQ(sym.frames[0].line, inl_line);
  ASSERT(ends_with(sym.frames[0].file, "test-line.c"));
  ASSERT_STR_EQ(sym.frames[1].function, "outer_pc");
  ASSERT_EQ(sym.frames[1].line, call_line);
  ASSERT(ends_with(sym.frames[1].file, "test-line.c"));
  ASSERT_GT(sym.frames[0].decl_line, 0);
  ASSERT_LT(sym.frames[0].decl_line, inl_line);
  /* The ELF symbol is the out-of-line function. */
  ASSERT_STR_EQ(sym.symbol, "outer_pc");
  ASSERT(ends_with(sym.module, "test-line"));
  /* A second lookup is the cached answer. */
  struct sp_sym again;
  ASSERT_EQ(sp__sym_lookup(s, pc, &again), 0);
  ASSERT_EQ(memcmp(&sym, &again, sizeof sym), 0);
  sp__sym_free(s);
#endif
}

SP_TEST(address_in_no_object_is_unknown) {
  sp_symbolizer *s = self_symbolizer();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, 0x10, &sym), -1);
  ASSERT(sym.module == NULL);
  ASSERT_EQ(sym.nframes, 0);
  ASSERT_EQ(sp__sym_lookup(s, 0, &sym), -1);
  const char *file;
  int line;
  ASSERT(sp__sym_function(s, 0x10, &file, &line) == NULL);
  sp__sym_free(s);
}

SP_TEST(shared_library_symbol_without_lines) {
  /* libc carries no DWARF unless libc6-dbg is installed: then only the
   * module and the symbol are known. */
  void *p = dlsym(RTLD_DEFAULT, "getpid");
  ASSERT(p);
  sp_symbolizer *s = self_symbolizer();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, (uint64_t)(uintptr_t)p, &sym), 0);
  ASSERT_CONTAINS(sym.module, "libc");
  ASSERT(sym.symbol && strstr(sym.symbol, "getpid"));
  ASSERT_EQ(sym.symbol_offset, 0);
  ASSERT_GT(sym.module_offset, 0);
  sp__sym_free(s);
}

SP_TEST(many_addresses_grow_the_cache) {
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  sp_symbolizer *s = self_symbolizer();
  uint64_t base = (uint64_t)(uintptr_t)&static_target;
  for (uint64_t i = 0; i < 2000; i++) {
    struct sp_sym sym;
    ASSERT_EQ(sp__sym_lookup(s, base + i, &sym), 0);
  }
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, base, &sym), 0);
  ASSERT_STR_EQ(sym.symbol, "static_target");
  sp__sym_free(s);
}

/* The main program's load bias and address range, as a capture would
 * record them. */
struct exe_range {
  uint64_t base, start, end;
};
static int exe_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct exe_range *r = data;
  r->base = info->dlpi_addr;
  r->start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < r->start) r->start = a;
    if (a + ph->p_memsz > r->end) r->end = a + ph->p_memsz;
  }
  return 1; /* the first entry is the executable */
}

SP_TEST(offline_module_by_path_and_base) {
  struct exe_range r = {0, 0, 0};
  dl_iterate_phdr(exe_cb, &r);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  sp_symbolizer *s = sp__sym_new();
  uint64_t fn = (uint64_t)(uintptr_t)&static_target;
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, fn, &sym), -1); /* nothing added yet */
  int rc = sp__sym_add_module(s, exe, r.base, r.start, r.end);
  ASSERT_EQ(sp__sym_lookup(s, fn, &sym), 0);  /* the miss was not kept */
  ASSERT_STR_EQ(sym.module, exe);
  ASSERT_EQ(sym.module_offset, fn - r.base);
  if (sp__sym_have_lines()) {
    ASSERT_EQ(rc, 0);
    const char *file;
    int line;
    ASSERT_STR_EQ(sp__sym_function(s, fn, &file, &line), "static_target");
    ASSERT_EQ(line, static_line);
  }
  /* A file that is not ELF still names its range. */
  ASSERT_EQ(sp__sym_add_module(s, "/nonexistent/lib.so", 0x100000, 0x100000, 0x200000), -1);
  ASSERT_EQ(sp__sym_lookup(s, 0x100010, &sym), 0);
  ASSERT_STR_EQ(sym.module, "/nonexistent/lib.so");
  ASSERT_EQ(sym.module_offset, 0x10);
  ASSERT_EQ(sym.nframes, 0);
  sp__sym_free(s);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
