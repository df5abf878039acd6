/* mpi_internal.h - what the files of src/mpi/ share.
 *
 * src/mpi/ exists only in libscope_profiler_mpi (the whole library built
 * with parallel HDF5 and these files added). It is glue between the core's
 * finalize (core/mpi_hooks.h) and MPI, so it may include any src/ header.
 * Every MPI call made here uses the PMPI_ names: the profiler's own traffic
 * is never recorded by its wrappers, and it runs on a private duplicate of
 * MPI_COMM_WORLD so that no message of the program can match ours.
 *
 * Files: mpi_ops.c (detection, ops table, metadata, clock offsets, public
 * API), mpi_layout.c (byte buffers, run packing, the job layout), mpi_write.c
 * (the direct and parallel writers, results, summary), mpi_wrap.c (PMPI
 * wrappers and the bytes probe).
 */
#ifndef SP_MPI_INTERNAL_H
#define SP_MPI_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config_internal.h"
#include "output/layout.h"
#include "output/output.h"
#include "scope_profiler/results.h"

/* Tags on the private communicator. */
#define SP_MPI_TAG_TOKEN 0x5301
#define SP_MPI_TAG_CLOCK 0x5302

/*====== Process state (mpi_ops.c) ======*/

struct sp_mpi_state {
  MPI_Comm comm;     /* private dup of MPI_COMM_WORLD; MPI_COMM_NULL until needed */
  int rank, size;
  int dead;          /* MPI cannot be used (finalized before us, or init failed) */
  char dead_msg[512];
  int we_initialised;
  /* Measured at finalize, indexed by rank (rank 0 only); see docs/mpi.md. */
  int64_t *clock_offsets, *clock_errors;
  int64_t *start_times; /* each rank's start_time_ns */
  int64_t clock_time; /* rank 0's clock at the measurement */
  int64_t *sync_offsets, *sync_errors; /* from sp_mpi_sync_clock(), if called */
  int64_t sync_time;
  int have_sync;
  char **hosts;       /* per rank at metadata_detail=full (rank 0), else NULL */
  enum sp__output_mode mode; /* writer chosen by rank 0 at metadata(): DIRECT or PARALLEL */
  int last_write_ok;  /* the last write() published the file (same on all ranks) */
};
extern struct sp_mpi_state sp__mpi;

/* Makes MPI usable for a collective finalize step: initialises it when the
 * program did not (launcher or SCOPE_PROFILER_MPI=1), duplicates the world
 * communicator once. SP_OK or SP_ERR_MPI with a message. */
sp_status sp__mpi_ready(void);

/* The writer this rank's settings ask for: "direct" or "parallel" (only
 * rank 0's answer is used; see sp__mpi.mode). */
enum sp__output_mode sp__mpi_resolve_mode(const struct sp_config *cfg, int size);

/* The profiler's clock: the file's timeline (manual ticks under the test
 * clock, CLOCK_MONOTONIC ns otherwise). */
int64_t sp__mpi_now(void);

/*====== Byte buffers (mpi_layout.c) ======*/

struct sp_mbuf {
  char *p;
  size_t n, cap;
  int oom;
};
void sp__mb_bytes(struct sp_mbuf *b, const void *p, size_t n);
void sp__mb_u64(struct sp_mbuf *b, uint64_t v);
void sp__mb_str(struct sp_mbuf *b, const char *s);
void sp__mb_free(struct sp_mbuf *b);

struct sp_mrbuf {
  const char *p;
  size_t n, pos;
  int bad;
};
const void *sp__mr_bytes(struct sp_mrbuf *r, size_t n);
uint64_t sp__mr_u64(struct sp_mrbuf *r);
char *sp__mr_str(struct sp_mrbuf *r); /* malloc'd; NULL and bad set on error */

/* Collective: every rank's bytes to rank 0. On rank 0 *all holds the
 * concatenation and (*sizes)[r] each rank's length; free both. */
sp_status sp__mpi_gather_bytes(const struct sp_mbuf *mine, char **all, size_t **sizes);

/*====== Packing runs (mpi_layout.c) ======*/

#define SP_PACK_SHAPE 1u   /* counts, region names, column and table names and types */
#define SP_PACK_STRINGS 2u /* the rows' strings, the tables' string columns, the rank<N>/ groups */
#define SP_PACK_NUMERIC 4u /* everything else: row numbers, events, column data */
#define SP_PACK_ALL 7u

/* Shape is always packed; `what` adds the rest. Metadata is never packed. */
void sp__mpi_run_pack(const struct sp_run *run, unsigned what, struct sp_mbuf *b);
/* Rebuilds what was packed; parts not packed are zero/NULL. */
sp_status sp__mpi_run_unpack(struct sp_mrbuf *r, unsigned what, struct sp_run *out);

/*====== The job layout (mpi_layout.c) ======*/

/* Collective: shapes go to rank 0, which lays the job's file out
 * (output/layout.h, in `schema`, agreed beforehand); the layout comes back
 * to everyone with each rank's own place; rank 0 also keeps every place in
 * *all (size entries; NULL elsewhere) and the region table in L->names.
 * Only names and sizes travel, never events. */
sp_status sp__mpi_layout_exchange(const struct sp_run *run, int schema, struct sp_layout *L, struct sp_place *mine,
                                  struct sp_place **all);

/*====== Writing the job's file (mpi_write.c) ======*/

sp_status sp__mpi_write(const struct sp_run *run, const struct sp_config *cfg, const char *path);
sp_status sp__mpi_results(const struct sp_run *run, const struct sp_config *cfg, sp_results **out);
void sp__mpi_summary(const struct sp_run *run, const struct sp_config *cfg, FILE *out);

/*====== The PMPI layer (mpi_wrap.c) ======*/

/* Registers the mpi_bytes probe (from the constructor). */
void sp__mpi_wrap_init(void);
/* on=1: MPI calls of this thread go unrecorded (the profiler's own, made
 * by parallel HDF5), the previous state saved in *saved; on=0 restores it. */
void sp__mpi_wrap_hold(int *saved, int on);

/*====== Clock offsets (mpi_ops.c) ======*/

/* Collective on `comm`: each rank's offset to rank 0 by ping-pong. Rank 0
 * receives the arrays (malloc'd); every rank gets its own pair. */
sp_status sp__mpi_clock_measure(MPI_Comm comm, int64_t **offsets, int64_t **errors, int64_t *when,
                                int64_t *my_offset, int64_t *my_error);

#endif
