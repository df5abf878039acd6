/* line_symbols.h - code addresses of this process to function, source file
 * and line, through the DWARF of each loaded object (libdw's libdwfl), with
 * the chain of inlined calls at the address.
 *
 * Used at finalize by the line sampler (samples -> lines) and on a first call
 * by the -finstrument-functions hooks (function address -> region name), never
 * on a hot path or in a signal handler: a lookup reads debug information.
 * Built without libdw (SP_WITH_LIBDW off), the same calls answer from dladdr:
 * exported symbol and object only, no lines.
 *
 * Every string a lookup returns belongs to the symboliser and stays valid
 * until sp__sym_close().
 */
#ifndef SP_LINE_SYMBOLS_H
#define SP_LINE_SYMBOLS_H

#include <stdint.h>

#define SP_SYM_MAX_FRAMES 16

/* One source location of an address: the innermost frame is where the
 * address is; each further frame is the call site of the one before it
 * inside the function that inlined it, up to the out-of-line function. */
struct sp_sym_frame {
  const char *function; /* never NULL; "??" when DWARF names no function */
  const char *file;     /* NULL when unknown */
  int line;             /* line in `function`, 0 when unknown */
  int decl_line;        /* first line of `function` (its declaration), 0 when unknown */
};

struct sp_sym {
  const char *module;     /* path of the loaded object, NULL when the address is in none */
  uint64_t module_offset; /* address - the object's load address */
  const char *symbol;     /* ELF symbol containing the address, NULL when none */
  uint64_t symbol_offset; /* address - that symbol's start */
  int nframes;            /* 0: no line information */
  struct sp_sym_frame frames[SP_SYM_MAX_FRAMES];
};

typedef struct sp_symbolizer sp_symbolizer;

/* A symboliser for the objects mapped in this process now (objects loaded
 * later are picked up by a later open). NULL when out of memory. */
sp_symbolizer *sp__sym_open(void);
void sp__sym_close(sp_symbolizer *s);

/* Resolve one address; 0 when it lies in a loaded object, -1 otherwise
 * (then *out says only "??"). Repeated addresses are answered from a cache. */
int sp__sym_lookup(sp_symbolizer *s, uint64_t addr, struct sp_sym *out);

/* The name, file and first line of the function starting at `fn` (the
 * address -finstrument-functions hands its hooks): the DWARF name (which
 * also names static functions), else the ELF symbol, else NULL. */
const char *sp__sym_function(sp_symbolizer *s, uint64_t fn, const char **file, int *line);

/* 1 when built with libdw (line information), 0 with the dladdr fallback. */
int sp__sym_have_lines(void);

#endif
