/* symbolize.h - addresses of a recorded process to function, file and line,
 * offline, through libdw (elfutils' libdwfl).
 *
 * A recording stores raw instruction addresses and the process's mappings;
 * the reader reports each mapped module with its load bias, and looks
 * addresses up later. The ELF files (and their debug info, or separate
 * debuginfo found the standard way: build-id under /usr/lib/debug) must be
 * readable where the lookup runs. Lookups are cached.
 */
#ifndef SP_READ_SYMBOLIZE_H
#define SP_READ_SYMBOLIZE_H

#include <stdint.h>

struct sp_sym;

struct sp_sym_info {
  const char *function; /* NULL when unknown */
  const char *file;     /* source file; NULL when there is no line info */
  int line;             /* 0 when unknown */
  const char *module;   /* path of the module, NULL when the address is in none */
  uint64_t offset;      /* address - module bias */
};

struct sp_sym *sp__sym_new(void);
/* Reports a module loaded at `bias` (the address its ELF virtual address 0
 * maps to). Returns 0, or -1 when the file cannot be opened as ELF. */
int sp__sym_add_module(struct sp_sym *s, const char *path, uint64_t bias);
/* Looks `addr` up; a return address should be passed minus one, so that
 * the line is the call's. Strings stay valid until sp__sym_free. Always
 * fills *out; returns 1 when a function name was found, else 0. */
int sp__sym_lookup(struct sp_sym *s, uint64_t addr, struct sp_sym_info *out);
void sp__sym_free(struct sp_sym *s);

#endif
