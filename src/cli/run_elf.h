/* run_elf.h - what `scope-profiler run` reads from a program's ELF file
 * before starting it (run_elf.c): enough to choose what to preload and to
 * say when nothing but the whole-program region can be recorded. */
#ifndef SP_RUN_ELF_H
#define SP_RUN_ELF_H

struct sp_run_elf {
  int script;       /* starts with "#!": the interpreter is what runs */
  int elf;          /* an ELF file */
  int readable;     /* 64-bit little-endian: the fields below were read */
  int dynamic;      /* has an interpreter (PT_INTERP): LD_PRELOAD reaches it */
  int links_sp;     /* DT_NEEDED libscope_profiler.so */
  int links_sp_mpi; /* DT_NEEDED libscope_profiler_mpi.so */
  int needs_mpi;    /* DT_NEEDED an MPI library */
  int static_sp;    /* defines sp_manager_setup: a static copy of the library */
  int instrumented; /* calls __cyg_profile_func_enter (-finstrument-functions) */
};

/* 0 when `path` could be read (e says what it is), -1 when it could not be
 * opened or read, or is no regular file. */
int sp_run_elf_read(const char *path, struct sp_run_elf *e);

#endif
