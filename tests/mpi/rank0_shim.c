/* rank0_shim.c - a witness for "a rank's events never pass through rank 0 in
 * direct mode", loaded with LD_PRELOAD under mpirun.
 *
 * It defines the PMPI_ entry points through which one process can hand data
 * to another (point-to-point sends, the collectives, one-sided puts) and
 * forwards each to the MPI library (dlsym RTLD_NEXT), counting on every rank
 * but 0 the bytes the call could deliver to world rank 0: a send or put whose
 * target is rank 0, a rooted collective rooted at 0, and every byte of a
 * collective that reaches all ranks (an upper bound). The profiler makes all
 * its MPI calls through PMPI_ names, so this sees all of its traffic without
 * trusting any of its code; test_rank0.sh checks that every PMPI_ call the
 * profiler's sources make that can move data is one of these.
 *
 * At exit each rank writes "<bytes> <calls>" to $SP_SHIM_DIR/rank<R>.txt.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long long bytes_to_0, calls_to_0;

/* The POSIX idiom for a function pointer from dlsym (ISO C has no cast). */
#define REAL(name) static __typeof__(&name) real_##name; \
  if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name)

/* The launcher's rank: Open MPI's variable, else MPICH (Hydra)'s. */
static int me(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r) r = getenv("PMI_RANK");
  return r ? atoi(r) : 0;
}

/* World rank of `r` in `comm` (the profiler uses a duplicate of the world). */
static int world(MPI_Comm comm, int r) {
  if (r < 0) return -1;
  MPI_Group g, w;
  int out = -1;
  PMPI_Comm_group(comm, &g);
  PMPI_Comm_group(MPI_COMM_WORLD, &w);
  PMPI_Group_translate_ranks(g, 1, &r, w, &out);
  PMPI_Group_free(&g);
  PMPI_Group_free(&w);
  return out;
}

static long long nb(int count, MPI_Datatype t) {
  int s = 0;
  PMPI_Type_size(t, &s);
  return (long long)count * s;
}

static long long nbv(const int *c, MPI_Comm comm, MPI_Datatype t) {
  int n = 0;
  long long sum = 0;
  PMPI_Comm_size(comm, &n);
  for (int i = 0; c && i < n; i++) sum += nb(c[i], t);
  return sum;
}

static void count(long long b) {
  if (me() == 0) return;
  bytes_to_0 += b;
  calls_to_0++;
}

static void to(MPI_Comm comm, int dest, long long b) {
  if (world(comm, dest) == 0) count(b);
}

__attribute__((destructor)) static void report(void) {
  const char *dir = getenv("SP_SHIM_DIR");
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.txt", dir, me());
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%lld %lld\n", bytes_to_0, calls_to_0);
    fclose(f);
  }
}

int PMPI_Send(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  REAL(PMPI_Send);
  to(comm, dest, nb(c, t));
  return real_PMPI_Send(buf, c, t, dest, tag, comm);
}
int PMPI_Ssend(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  REAL(PMPI_Ssend);
  to(comm, dest, nb(c, t));
  return real_PMPI_Ssend(buf, c, t, dest, tag, comm);
}
int PMPI_Bsend(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  REAL(PMPI_Bsend);
  to(comm, dest, nb(c, t));
  return real_PMPI_Bsend(buf, c, t, dest, tag, comm);
}
int PMPI_Rsend(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  REAL(PMPI_Rsend);
  to(comm, dest, nb(c, t));
  return real_PMPI_Rsend(buf, c, t, dest, tag, comm);
}
int PMPI_Isend(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *rq) {
  REAL(PMPI_Isend);
  to(comm, dest, nb(c, t));
  return real_PMPI_Isend(buf, c, t, dest, tag, comm, rq);
}
int PMPI_Issend(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *rq) {
  REAL(PMPI_Issend);
  to(comm, dest, nb(c, t));
  return real_PMPI_Issend(buf, c, t, dest, tag, comm, rq);
}
int PMPI_Send_init(const void *buf, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *rq) {
  REAL(PMPI_Send_init);
  to(comm, dest, nb(c, t));
  return real_PMPI_Send_init(buf, c, t, dest, tag, comm, rq);
}

int PMPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc, MPI_Datatype rt,
                  int src, int rtag, MPI_Comm comm, MPI_Status *status) {
  REAL(PMPI_Sendrecv);
  to(comm, dest, nb(sc, st));
  return real_PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status);
}

int PMPI_Sendrecv_replace(void *b, int c, MPI_Datatype t, int dest, int stag, int src, int rtag, MPI_Comm comm,
                          MPI_Status *status) {
  REAL(PMPI_Sendrecv_replace);
  to(comm, dest, nb(c, t));
  return real_PMPI_Sendrecv_replace(b, c, t, dest, stag, src, rtag, comm, status);
}

int PMPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm) {
  REAL(PMPI_Gather);
  to(comm, root, nb(sc, st));
  return real_PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm);
}

int PMPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt,
                 int root, MPI_Comm comm) {
  REAL(PMPI_Gatherv);
  to(comm, root, nb(sc, st));
  return real_PMPI_Gatherv(sb, sc, st, rb, rc, d, rt, root, comm);
}

int PMPI_Reduce(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
  REAL(PMPI_Reduce);
  to(comm, root, nb(c, t));
  return real_PMPI_Reduce(sb, rb, c, t, op, root, comm);
}

int PMPI_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm) {
  REAL(PMPI_Bcast);
  int r = -1;
  PMPI_Comm_rank(comm, &r);
  if (r == root) count(nb(c, t));
  return real_PMPI_Bcast(b, c, t, root, comm);
}

int PMPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm) {
  REAL(PMPI_Scatter);
  int r = -1;
  PMPI_Comm_rank(comm, &r);
  if (r == root) count(nb(sc, st));
  return real_PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm);
}

int PMPI_Scatterv(const void *sb, const int sc[], const int d[], MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                  int root, MPI_Comm comm) {
  REAL(PMPI_Scatterv);
  int r = -1;
  PMPI_Comm_rank(comm, &r);
  if (r == root) count(nbv(sc, comm, st));
  return real_PMPI_Scatterv(sb, sc, d, st, rb, rc, rt, root, comm);
}

int PMPI_Allreduce(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  REAL(PMPI_Allreduce);
  count(nb(c, t));
  return real_PMPI_Allreduce(sb, rb, c, t, op, comm);
}

int PMPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  REAL(PMPI_Allgather);
  count(sb == MPI_IN_PLACE ? nb(rc, rt) : nb(sc, st));
  return real_PMPI_Allgather(sb, sc, st, rb, rc, rt, comm);
}

int PMPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int d[], MPI_Datatype rt,
                    MPI_Comm comm) {
  REAL(PMPI_Allgatherv);
  count(sb == MPI_IN_PLACE ? nbv(rc, comm, rt) : nb(sc, st));
  return real_PMPI_Allgatherv(sb, sc, st, rb, rc, d, rt, comm);
}

int PMPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  REAL(PMPI_Alltoall);
  count(nb(sc, st));
  return real_PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}

int PMPI_Alltoallv(const void *sb, const int sc[], const int sd[], MPI_Datatype st, void *rb, const int rc[],
                   const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  REAL(PMPI_Alltoallv);
  count(nbv(sc, comm, st));
  return real_PMPI_Alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm);
}

int PMPI_Scan(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  REAL(PMPI_Scan);
  count(nb(c, t));
  return real_PMPI_Scan(sb, rb, c, t, op, comm);
}

int PMPI_Exscan(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  REAL(PMPI_Exscan);
  count(nb(c, t));
  return real_PMPI_Exscan(sb, rb, c, t, op, comm);
}

int PMPI_Reduce_scatter_block(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  REAL(PMPI_Reduce_scatter_block);
  count(nb(c, t));
  return real_PMPI_Reduce_scatter_block(sb, rb, c, t, op, comm);
}

int PMPI_Put(const void *ob, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt, MPI_Win win) {
  REAL(PMPI_Put);
  /* Windows can span any communicator; count every put (upper bound). */
  count(nb(oc, ot));
  return real_PMPI_Put(ob, oc, ot, target, td, tc, tt, win);
}

int PMPI_Accumulate(const void *ob, int oc, MPI_Datatype ot, int target, MPI_Aint td, int tc, MPI_Datatype tt,
                    MPI_Op op, MPI_Win win) {
  REAL(PMPI_Accumulate);
  count(nb(oc, ot));
  return real_PMPI_Accumulate(ob, oc, ot, target, td, tc, tt, op, win);
}
