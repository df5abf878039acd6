/* mpi_ops.c - the MPI side of finalize: whether MPI is used, the private
 * communicator, job-wide metadata, clock offsets between ranks, and the ops
 * table (core/mpi_hooks.h) installed from a constructor.
 *
 * Detection never initialises anything: it reads SCOPE_PROFILER_MPI, asks
 * MPI_Initialized/MPI_Finalized (legal at any time) and looks for a
 * launcher's per-rank environment. Only finalize, which is collective under
 * MPI, makes real MPI calls; if a launcher started the program and it never
 * initialised MPI, that is where MPI gets initialised (and finalized at exit).
 *
 * Clock offsets: ranks on different nodes have unrelated monotonic clocks.
 * Rank 0 plays ping-pong with each rank in turn (rank 0 sends, the rank
 * answers with its clock reading, rank 0 notes its send and receive times);
 * the round with the shortest round trip gives offset = midpoint - reading,
 * with an error of at most half that round trip. The offsets go into the
 * file (/ranks/clock_offsets_ns); readers add them to align timelines.
 */
#include <ctype.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/metadata.h"
#include "core/mpi_hooks.h"
#include "mpi/mpi_internal.h"
#include "scope_profiler/mpi.h"

struct sp_mpi_state sp__mpi = {.comm = MPI_COMM_NULL, .size = 1};

static pid_t load_pid;

/* Ping-pong rounds per rank: the best of several filters out rounds where
 * either side was descheduled. */
#define CLOCK_ROUNDS 10

/* Launchers' per-rank variables (Open MPI, PMIx, MPICH/Intel hydra,
 * MVAPICH). SLURM_PROCID is left out: srun also starts non-MPI tasks. */
static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                            "MV2_COMM_WORLD_RANK"};
static const char *const launcher_size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"};

static int env_int(const char *const *vars, size_t n, int fallback) {
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return atoi(v);
  }
  return fallback;
}

static int launcher_present(void) {
  for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
    if (getenv(launcher_vars[i])) return 1;
  return 0;
}

/* SCOPE_PROFILER_MPI: 1, 0, or -1 when unset or not a boolean. */
static int env_force(void) {
  const char *e = getenv("SCOPE_PROFILER_MPI");
  if (!e || !*e) return -1;
  static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(e, on[i]) == 0) return 1;
    if (strcasecmp(e, off[i]) == 0) return 0;
  }
  return -1;
}

static int mpi_in_use(void) {
  int force = env_force();
  if (force >= 0) return force;
  /* A fork of an MPI process is not a member of the job. */
  if (getpid() != load_pid) return 0;
  int init = 0, fin = 0;
  PMPI_Initialized(&init);
  PMPI_Finalized(&fin);
  if (init && !fin) return 1;
  if (!launcher_present()) return 0;
  /* Finalized already: one rank can still write its own file; several
   * must hear that their finalize came too late (metadata() says so). */
  if (fin) return env_int(launcher_size_vars, 3, 1) > 1;
  return 1;
}

int sp_mpi_in_use(void) { return mpi_in_use(); }

static void finalize_at_exit(void) {
  int fin = 0;
  PMPI_Finalized(&fin);
  if (!fin) PMPI_Finalize();
}

sp_status sp__mpi_ready(void) {
  int init = 0, fin = 0;
  PMPI_Initialized(&init);
  PMPI_Finalized(&fin);
  if (fin) {
    sp__mpi.dead = 1;
    snprintf(sp__mpi.dead_msg, sizeof sp__mpi.dead_msg,
             "MPI: finalize ran after MPI_Finalize on rank %d, so the ranks cannot write one file and nothing "
             "was written; under MPI finalize is collective: call sp_finalize() on every rank before "
             "MPI_Finalize() (or set SCOPE_PROFILER_MPI=0 to write one file per process)",
             env_int(launcher_vars, 4, 0));
    return sp__set_error(SP_ERR_MPI, "%s", sp__mpi.dead_msg);
  }
  if (sp__mpi.comm != MPI_COMM_NULL) return SP_OK;
  if (!init) {
    /* Launched as an MPI job (or SCOPE_PROFILER_MPI=1) without MPI_Init. */
    int provided = 0;
    if (PMPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      sp__mpi.dead = 1;
      snprintf(sp__mpi.dead_msg, sizeof sp__mpi.dead_msg,
               "MPI: the program did not initialise MPI and MPI_Init_thread failed; start it with mpirun or "
               "set SCOPE_PROFILER_MPI=0");
      return sp__set_error(SP_ERR_MPI, "%s", sp__mpi.dead_msg);
    }
    sp__mpi.we_initialised = 1;
    atexit(finalize_at_exit);
  }
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &sp__mpi.comm) != MPI_SUCCESS) {
    sp__mpi.comm = MPI_COMM_NULL;
    return sp__set_error(SP_ERR_MPI, "MPI: could not duplicate MPI_COMM_WORLD for the profiler");
  }
  PMPI_Comm_rank(sp__mpi.comm, &sp__mpi.rank);
  PMPI_Comm_size(sp__mpi.comm, &sp__mpi.size);
  sp__mpi.dead = 0;
  return SP_OK;
}

/* The core asks for the rank first, on every rank, at the start of a
 * collective finalize: the moment MPI may be set up. */
static int mpi_rank(void) {
  if (sp__mpi_ready() != SP_OK) return env_int(launcher_vars, 4, 0);
  return sp__mpi.rank;
}

static int mpi_size(void) {
  if (sp__mpi_ready() != SP_OK) return env_int(launcher_size_vars, 3, 1);
  return sp__mpi.size;
}

int64_t sp__mpi_now(void) {
  if (sp_i_clock_tsc == 2) return (int64_t)__atomic_load_n(&sp_i_manual_ticks, __ATOMIC_RELAXED);
  return sp__mono_ns();
}

enum sp__output_mode sp__mpi_resolve_mode(const struct sp_config *cfg, int size) {
  if (cfg->output_mode != SP__OUTPUT_MODE_AUTO) return cfg->output_mode;
#ifdef H5_HAVE_PARALLEL
  /* auto, as upstream decides: the token writer for thread and task tables,
   * for compression filters (not every filter runs under parallel HDF5),
   * and for LIKWID (collective MPI-IO after its fork is not supported). */
  int filtered = cfg->hdf5_compression != SP__COMPRESSION_NONE;
  if (size > 1 && !cfg->track_threads && !cfg->track_async && !filtered && !cfg->use_likwid)
    return SP__OUTPUT_MODE_PARALLEL;
#else
  (void)size;
#endif
  return SP__OUTPUT_MODE_DIRECT;
}

sp_status sp__mpi_clock_measure(MPI_Comm comm, int64_t **offsets, int64_t **errors, int64_t *when,
                                int64_t *my_offset, int64_t *my_error) {
  int rank, size;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  int64_t *off = NULL, *err = NULL;
  int oom = 0;
  if (rank == 0) {
    off = calloc((size_t)size, sizeof *off);
    err = calloc((size_t)size, sizeof *err);
    oom = !off || !err;
    *when = sp__mpi_now();
  }
  PMPI_Bcast(&oom, 1, MPI_INT, 0, comm);
  if (oom) {
    free(off);
    free(err);
    return sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory measuring clock offsets");
  }
  for (int r = 1; r < size; r++) {
    if (rank == 0) {
      int64_t best = INT64_MAX, best_off = 0;
      for (int k = 0; k < CLOCK_ROUNDS; k++) {
        int64_t t0 = sp__mpi_now(), tr = 0;
        PMPI_Send(&t0, 1, MPI_INT64_T, r, SP_MPI_TAG_CLOCK, comm);
        PMPI_Recv(&tr, 1, MPI_INT64_T, r, SP_MPI_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
        int64_t t1 = sp__mpi_now();
        if (t1 - t0 < best) {
          best = t1 - t0;
          best_off = t0 + (t1 - t0) / 2 - tr;
        }
      }
      off[r] = best_off;
      err[r] = (best + 1) / 2;
    } else if (rank == r) {
      for (int k = 0; k < CLOCK_ROUNDS; k++) {
        int64_t ping = 0;
        PMPI_Recv(&ping, 1, MPI_INT64_T, 0, SP_MPI_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
        int64_t tr = sp__mpi_now();
        PMPI_Send(&tr, 1, MPI_INT64_T, 0, SP_MPI_TAG_CLOCK, comm);
      }
    }
  }
  int64_t mine[2] = {0, 0};
  int64_t *pairs = NULL;
  if (rank == 0 && (pairs = malloc((size_t)size * 2 * sizeof *pairs)))
    for (int r = 0; r < size; r++) {
      pairs[2 * r] = off[r];
      pairs[2 * r + 1] = err[r];
    }
  /* Scatter needs a send buffer on rank 0; without one everyone gets 0. */
  int have = rank != 0 || pairs != NULL;
  PMPI_Bcast(&have, 1, MPI_INT, 0, comm);
  if (have) PMPI_Scatter(pairs, 2, MPI_INT64_T, mine, 2, MPI_INT64_T, 0, comm);
  free(pairs);
  if (my_offset) *my_offset = mine[0];
  if (my_error) *my_error = mine[1];
  if (rank == 0) {
    *offsets = off;
    *errors = err;
  } else {
    *offsets = *errors = NULL;
  }
  return SP_OK;
}

sp_status sp_mpi_sync_clock(int64_t *offset_ns, int64_t *error_ns) {
  int init = 0, fin = 0;
  PMPI_Initialized(&init);
  PMPI_Finalized(&fin);
  if (!init || fin)
    return sp__set_error(SP_ERR_MPI, "sp_mpi_sync_clock: MPI is %s; call it on every rank between MPI_Init "
                         "and MPI_Finalize", fin ? "already finalized" : "not initialised yet");
  sp__clock_init();
  sp_status st = sp__mpi_ready();
  if (st != SP_OK) return st;
  int64_t *off = NULL, *err = NULL, when = 0;
  st = sp__mpi_clock_measure(sp__mpi.comm, &off, &err, &when, offset_ns, error_ns);
  if (st != SP_OK) return st;
  free(sp__mpi.sync_offsets);
  free(sp__mpi.sync_errors);
  sp__mpi.sync_offsets = off;
  sp__mpi.sync_errors = err;
  sp__mpi.sync_time = when;
  sp__mpi.have_sync = 1;
  sp__clear_error();
  return SP_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static sp_status mpi_metadata(struct sp_meta *meta, const struct sp_config *cfg) {
  sp_status st = sp__mpi_ready();
  if (st != SP_OK) return st;
  MPI_Comm comm = sp__mpi.comm;
  int rank = sp__mpi.rank, size = sp__mpi.size;
  int rc = 0;

  /* The writer: rank 0 decides for everyone, so that differing settings
   * cannot send ranks into different collectives. */
  int parallel = sp__mpi_resolve_mode(cfg, size) == SP__OUTPUT_MODE_PARALLEL;
  PMPI_Bcast(&parallel, 1, MPI_INT, 0, comm);
  sp__mpi.mode = parallel ? SP__OUTPUT_MODE_PARALLEL : SP__OUTPUT_MODE_DIRECT;

  char host[MPI_MAX_PROCESSOR_NAME + 1];
  memset(host, 0, sizeof host);
  int len = 0;
  PMPI_Get_processor_name(host, &len);
  char *hosts = rank == 0 ? calloc((size_t)size, MPI_MAX_PROCESSOR_NAME) : NULL;
  int oom = rank == 0 && !hosts;
  PMPI_Bcast(&oom, 1, MPI_INT, 0, comm);
  if (oom) return sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory gathering host names");
  PMPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
  int64_t threads = sp__omp_max_threads(), cores = 0;
  PMPI_Reduce(&threads, &cores, 1, MPI_INT64_T, MPI_SUM, 0, comm);
  /* every rank's own timeline origin: its lane tables' times are relative to it */
  const struct sp_meta_item *mine = sp__meta_get(meta, SP_META_START_TIME_NS);
  int64_t my_start = mine && mine->type == SP_META_I64 ? mine->i : 0;
  free(sp__mpi.start_times);
  sp__mpi.start_times = rank == 0 ? calloc((size_t)size, sizeof *sp__mpi.start_times) : NULL;
  PMPI_Gather(&my_start, 1, MPI_INT64_T, sp__mpi.start_times, 1, MPI_INT64_T, 0, comm);
  if (rank == 0 && !sp__mpi.start_times) rc = -1;

  for (int i = 0; sp__mpi.hosts && i < sp__mpi.size; i++) free(sp__mpi.hosts[i]);
  free(sp__mpi.hosts);
  sp__mpi.hosts = NULL;
  if (rank == 0) {
    char **list = calloc((size_t)size + 1, sizeof *list), **sorted = calloc((size_t)size + 1, sizeof *sorted);
    int64_t nodes = 0;
    for (int r = 0; list && sorted && r < size; r++) {
      char *h = hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME;
      h[MPI_MAX_PROCESSOR_NAME - 1] = 0;
      if (!(list[r] = sp__strdup(h))) rc = -1;
      sorted[r] = list[r] ? list[r] : "";
    }
    if (list && sorted) {
      qsort(sorted, (size_t)size, sizeof *sorted, cmp_str);
      for (int r = 0; r < size; r++)
        if (r == 0 || strcmp(sorted[r], sorted[r - 1]) != 0) nodes++;
    } else {
      rc = -1;
    }
    free(sorted);
    rc |= sp__meta_i64(meta, SP_META_NUM_NODES, nodes);
    rc |= sp__meta_i64(meta, SP_META_TOTAL_CORES, cores);
    if (cfg->metadata_detail == SP__METADATA_FULL) {
      sp__mpi.hosts = list;
    } else {
      for (int r = 0; list && r < size; r++) free(list[r]);
      free(list);
    }
  }
  free(hosts);

  char ver[MPI_MAX_LIBRARY_VERSION_STRING + 1];
  memset(ver, 0, sizeof ver);
  int vlen = 0, major = 0, minor = 0;
  PMPI_Get_library_version(ver, &vlen);
  while (vlen > 0 && isspace((unsigned char)ver[vlen - 1])) ver[--vlen] = 0;
  PMPI_Get_version(&major, &minor);
  char std[32];
  snprintf(std, sizeof std, "%d.%d", major, minor);
  rc |= sp__meta_i64(meta, SP_META_MPI_SIZE, size);
  rc |= sp__meta_str(meta, SP_META_MPI_LIBRARY, ver);
  rc |= sp__meta_str(meta, SP_META_MPI_STANDARD, std);
  rc |= sp__meta_str(meta, SP_META_MPI_WRITER, cfg->deactivate_file_output ? "memory" : SP__ENUM_WORD(output_mode, sp__mpi.mode));

  free(sp__mpi.clock_offsets);
  free(sp__mpi.clock_errors);
  sp__mpi.clock_offsets = sp__mpi.clock_errors = NULL;
  st = sp__mpi_clock_measure(comm, &sp__mpi.clock_offsets, &sp__mpi.clock_errors, &sp__mpi.clock_time, NULL, NULL);
  if (st != SP_OK) return st;
  if (rc) return sp__set_error(SP_ERR_NO_MEMORY, "MPI: out of memory collecting the job's metadata");
  return SP_OK;
}

/* The profiler's own MPI traffic (parallel HDF5 calls MPI_ names) must
 * not show up as the program's MPI calls. */
static sp_status mpi_write(const struct sp_run *run, const struct sp_config *cfg, const char *path) {
  int saved;
  sp__mpi_wrap_hold(&saved, 1);
  sp_status st = sp__mpi_write(run, cfg, path);
  sp__mpi_wrap_hold(&saved, 0);
  return st;
}

static sp_status mpi_results(const struct sp_run *run, const struct sp_config *cfg, sp_results **out) {
  int saved;
  sp__mpi_wrap_hold(&saved, 1);
  sp_status st = sp__mpi_results(run, cfg, out);
  sp__mpi_wrap_hold(&saved, 0);
  return st;
}

static void mpi_summary(const struct sp_run *run, const struct sp_config *cfg, FILE *out) {
  int saved;
  sp__mpi_wrap_hold(&saved, 1);
  sp__mpi_summary(run, cfg, out);
  sp__mpi_wrap_hold(&saved, 0);
}

static const struct sp_mpi_ops ops = {
    .in_use = mpi_in_use,
    .rank = mpi_rank,
    .size = mpi_size,
    .metadata = mpi_metadata,
    .write = mpi_write,
    .results = mpi_results,
    .summary = mpi_summary,
};

/* Referenced by the static library's users (-Wl,-u,sp__mpi_anchor) so that
 * the linker keeps this object, and with it the constructor below. */
SP_API int sp__mpi_anchor;

/* Before the library's other constructors (a priority runs before none):
 * `scope-profiler run` sets the session up from one (core/autorun.c), and
 * setup must already see that this process writes an MPI job file. */
__attribute__((constructor(101))) static void install(void) {
  load_pid = getpid();
  sp__mpi_ops = &ops;
  sp__mpi_wrap_init();
}
