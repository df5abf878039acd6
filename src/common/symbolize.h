/* symbolize.h - code addresses to function, source file and line, through
 * the DWARF of each object (libdw's libdwfl), with the chain of inlined calls
 * at the address.
 *
 * One symboliser serves two cases: the objects mapped in this process
 * (sp__sym_add_self: the line sampler at finalize, the -finstrument-functions
 * hooks on a function's first call) and objects named by path and load
 * address (sp__sym_add_module: a capture file read later, in another
 * process). Never for a hot path or a signal handler: a lookup reads debug
 * information. Built without libdw (SP_WITH_LIBDW off), in-process lookups
 * answer from dladdr (exported symbol and object, no lines) and offline ones
 * give the object and offset only.
 *
 * Every string a lookup returns belongs to the symboliser and stays valid
 * until sp__sym_free(). Not thread-safe: one thread at a time per symboliser.
 */
#ifndef SP_COMMON_SYMBOLIZE_H
#define SP_COMMON_SYMBOLIZE_H

#include <stdint.h>

#define SP_SYM_MAX_FRAMES 16

/* One source location of an address. frames[0] is where the address is;
 * each further frame is the call site of the one before it inside the
 * function that inlined it, up to the out-of-line function. */
struct sp_sym_frame {
  const char *function; /* never NULL; "??" when DWARF names no function */
  const char *file;     /* NULL when unknown */
  int line;             /* line in `function`, 0 when unknown */
  int decl_line;        /* first line of `function` (its declaration), 0 when unknown */
};

struct sp_sym {
  const char *module;     /* path of the object, NULL when the address is in none */
  uint64_t module_offset; /* address - the object's load bias */
  const char *symbol;     /* ELF symbol containing the address, NULL when none */
  uint64_t symbol_offset; /* address - that symbol's start */
  int nframes;            /* 0: no line information */
  struct sp_sym_frame frames[SP_SYM_MAX_FRAMES];
};

typedef struct sp_symbolizer sp_symbolizer;

/* An empty symboliser; NULL when out of memory. */
sp_symbolizer *sp__sym_new(void);
void sp__sym_free(sp_symbolizer *s);

/* Add every object mapped in this process now. 0, or -1 when /proc/self/maps
 * could not be read (lookups then fall back to dladdr). */
int sp__sym_add_self(sp_symbolizer *s);

/* Add the ELF object at `path` loaded with load bias `base` (what
 * dl_iterate_phdr calls dlpi_addr: 0 for a non-PIE executable) covering
 * [start, end). 0, or -1 when the file cannot be read as ELF (its addresses
 * still resolve to the object and offset). */
int sp__sym_add_module(sp_symbolizer *s, const char *path, uint64_t base, uint64_t start, uint64_t end);

/* Resolve one address; 0 when it lies in a known object, -1 otherwise (then
 * *out holds nothing). Repeated addresses are answered from a cache. */
int sp__sym_lookup(sp_symbolizer *s, uint64_t addr, struct sp_sym *out);

/* The name, file and first line of the function starting at `fn` (the
 * address -finstrument-functions hands its hooks): the DWARF name (which
 * also names static functions), else the ELF symbol, else NULL. */
const char *sp__sym_function(sp_symbolizer *s, uint64_t fn, const char **file, int *line);

/* 1 when built with libdw (line information), 0 with the fallback. */
int sp__sym_have_lines(void);

#endif
