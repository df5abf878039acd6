/* test-line.c - the libdw symboliser (src/probes/line_symbols.c): functions,
 * files, lines and inlined frames of addresses in this very test program,
 * whose lines are known because they are in this file (__LINE__), and the
 * "??" answers for addresses in no object. */
#include <dlfcn.h>
#include <stdint.h>

#include "harness.h"
#include "probes/line_symbols.h"

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

static int ends_with(const char *s, const char *suffix) {
  size_t n = s ? strlen(s) : 0, m = strlen(suffix);
  return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

SP_TEST(static_function_named_with_file_and_line) {
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  sp_symbolizer *s = sp__sym_open();
  ASSERT(s);
  const char *file = NULL;
  int line = 0;
  const char *name = sp__sym_function(s, (uint64_t)(uintptr_t)&static_target, &file, &line);
  ASSERT_STR_EQ(name, "static_target");
  ASSERT(ends_with(file, "test-line.c"));
  ASSERT_EQ(line, static_line);
  sp__sym_close(s);
}

SP_TEST(inlined_frames_in_order) {
#ifndef HERE
  SKIP("no program-counter capture for this architecture");
#else
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  uint64_t pc = outer_pc();
  sp_symbolizer *s = sp__sym_open();
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
  sp__sym_close(s);
#endif
}

SP_TEST(address_in_no_object_is_unknown) {
  sp_symbolizer *s = sp__sym_open();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, 0x10, &sym), -1);
  ASSERT(sym.module == NULL);
  ASSERT_EQ(sym.nframes, 0);
  ASSERT_EQ(sp__sym_lookup(s, 0, &sym), -1);
  const char *file;
  int line;
  ASSERT(sp__sym_function(s, 0x10, &file, &line) == NULL);
  sp__sym_close(s);
}

SP_TEST(shared_library_symbol_without_lines) {
  /* libc carries no DWARF unless libc6-dbg is installed: then only the
   * module and the symbol are known. */
  void *p = dlsym(RTLD_DEFAULT, "getpid");
  ASSERT(p);
  sp_symbolizer *s = sp__sym_open();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, (uint64_t)(uintptr_t)p, &sym), 0);
  ASSERT_CONTAINS(sym.module, "libc");
  ASSERT(sym.symbol && strstr(sym.symbol, "getpid"));
  ASSERT_EQ(sym.symbol_offset, 0);
  ASSERT_GT(sym.module_offset, 0);
  sp__sym_close(s);
}

SP_TEST(many_addresses_grow_the_cache) {
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  sp_symbolizer *s = sp__sym_open();
  uint64_t base = (uint64_t)(uintptr_t)&static_target;
  for (uint64_t i = 0; i < 2000; i++) {
    struct sp_sym sym;
    ASSERT_EQ(sp__sym_lookup(s, base + i, &sym), 0);
  }
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, base, &sym), 0);
  ASSERT_STR_EQ(sym.symbol, "static_target");
  sp__sym_close(s);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
