/* run_elf.c - what `scope-profiler run` needs to know about a program
 * before it starts it, read from its ELF file: whether it is dynamically
 * linked (so a library can be preloaded), which libraries it names
 * (DT_NEEDED: MPI, scope-profiler itself), whether it carries a static copy
 * of scope-profiler (its symbol table defines sp_manager_setup), and whether
 * it was compiled with -finstrument-functions (it calls
 * __cyg_profile_func_enter).
 *
 * The file is untrusted: every offset and size is checked against the file
 * before use, and anything that does not parse is "not an ELF program we
 * can read", which the launcher handles by preloading anyway.
 */
#include "cli/run_elf.h"

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (UINT64_C(1) << 32) /* 4 GiB: larger executables are not read */

struct img {
  const unsigned char *p;
  uint64_t n;
};

static int in_file(const struct img *f, uint64_t off, uint64_t len) { return off <= f->n && len <= f->n - off; }

static const char *str_at(const struct img *f, const Elf64_Shdr *strtab, uint64_t idx) {
  if (idx >= strtab->sh_size || !in_file(f, strtab->sh_offset, strtab->sh_size)) return NULL;
  const char *s = (const char *)f->p + strtab->sh_offset + idx;
  return memchr(s, 0, strtab->sh_size - idx) ? s : NULL;
}

static int ends_with_lib(const char *name, const char *stem) {
  size_t n = strlen(stem);
  return strncmp(name, stem, n) == 0 && (name[n] == '.' || name[n] == 0);
}

static void note_needed(struct sp_run_elf *e, const char *name) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (ends_with_lib(base, "libscope_profiler_mpi.so")) e->links_sp_mpi = 1;
  else if (ends_with_lib(base, "libscope_profiler.so")) e->links_sp = 1;
  else if (ends_with_lib(base, "libmpi.so") || ends_with_lib(base, "libmpich.so") ||
           ends_with_lib(base, "libmpi_mpifh.so") || ends_with_lib(base, "libmpi_usempif08.so"))
    e->needs_mpi = 1;
}

static void scan_symbols(const struct img *f, const Elf64_Shdr *sh, uint16_t nsh, const Elf64_Shdr *tab,
                         struct sp_run_elf *e) {
  if (tab->sh_link >= nsh || tab->sh_entsize != sizeof(Elf64_Sym) || !in_file(f, tab->sh_offset, tab->sh_size))
    return;
  const Elf64_Shdr *strtab = &sh[tab->sh_link];
  uint64_t n = tab->sh_size / sizeof(Elf64_Sym);
  for (uint64_t i = 0; i < n; i++) {
    Elf64_Sym sym;
    memcpy(&sym, f->p + tab->sh_offset + i * sizeof sym, sizeof sym);
    const char *name = str_at(f, strtab, sym.st_name);
    if (!name || !*name) continue;
    if (!strcmp(name, "__cyg_profile_func_enter") && sym.st_shndx == SHN_UNDEF) e->instrumented = 1;
    if (!strcmp(name, "sp_manager_setup") && sym.st_shndx != SHN_UNDEF) e->static_sp = 1;
  }
}

static void scan_dynamic(const struct img *f, const Elf64_Shdr *sh, uint16_t nsh, const Elf64_Shdr *dyn,
                         struct sp_run_elf *e) {
  if (dyn->sh_link >= nsh || !in_file(f, dyn->sh_offset, dyn->sh_size)) return;
  const Elf64_Shdr *strtab = &sh[dyn->sh_link];
  uint64_t n = dyn->sh_size / sizeof(Elf64_Dyn);
  for (uint64_t i = 0; i < n; i++) {
    Elf64_Dyn d;
    memcpy(&d, f->p + dyn->sh_offset + i * sizeof d, sizeof d);
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag != DT_NEEDED) continue;
    const char *name = str_at(f, strtab, d.d_un.d_val);
    if (name) note_needed(e, name);
  }
}

static int parse(const struct img *f, struct sp_run_elf *e) {
  if (f->n >= 2 && f->p[0] == '#' && f->p[1] == '!') {
    e->script = 1;
    return 0;
  }
  Elf64_Ehdr eh;
  if (f->n < sizeof eh || memcmp(f->p, ELFMAG, SELFMAG) != 0) return -1;
  memcpy(&eh, f->p, sizeof eh);
  e->elf = 1;
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) return 0; /* readable: no */
  e->readable = 1;
  if (eh.e_phentsize == sizeof(Elf64_Phdr) && in_file(f, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr)))
    for (uint16_t i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      memcpy(&ph, f->p + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
      if (ph.p_type == PT_INTERP) e->dynamic = 1;
    }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_file(f, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
    return 0;
  Elf64_Shdr *sh = malloc(((size_t)eh.e_shnum + 1) * sizeof *sh);
  if (!sh) return -1;
  memcpy(sh, f->p + eh.e_shoff, (size_t)eh.e_shnum * sizeof *sh);
  for (uint16_t i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_type == SHT_DYNAMIC) scan_dynamic(f, sh, eh.e_shnum, &sh[i], e);
    if (sh[i].sh_type == SHT_DYNSYM || sh[i].sh_type == SHT_SYMTAB) scan_symbols(f, sh, eh.e_shnum, &sh[i], e);
  }
  free(sh);
  return 0;
}

int sp_run_elf_read(const char *path, struct sp_run_elf *e) {
  memset(e, 0, sizeof *e);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
    close(fd);
    return -1;
  }
  struct img f = {NULL, (uint64_t)st.st_size};
  if (f.n == 0) {
    close(fd);
    return 0; /* empty: not an ELF file */
  }
  void *map = mmap(NULL, (size_t)f.n, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  f.p = map;
  int rc = parse(&f, e);
  munmap(map, (size_t)f.n);
  return rc;
}
