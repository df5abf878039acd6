/* mpi_stream.c - the job writers with a streamed run (run->fill_events: no
 * event arrays, a callback writes its calls through a sink), driven through the
 * ops table the core's finalize uses (core/mpi_hooks.h). Linked with the
 * static MPI library, which also checks that its ops table survives static
 * linking (the -u sp__mpi_anchor link option).
 *
 * Every rank streams 1000 calls of "streamed" (start 10 i, end 10 i + 5 + r)
 * and writes them with output_mode=direct to direct/stream.h5 and with
 * parallel to parallel/stream.h5; the filler must run once per write. Run
 * with SCOPE_PROFILER_CLOCK=manual, the two files are identical.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "core/core.h"
#include "core/metadata.h"
#include "core/mpi_hooks.h"
#include "output/output.h"

#define N 1000

static int rank, fills;

/* Writes the events through the sink and the row's statistics into the
 * run, as a streamed run's filler does: in two batches, to check that the
 * sink places them by offset. */
static sp_status fill(void *ctx, struct sp_event_sink *sink) {
  struct sp_run *run = ctx;
  fills++;
  int64_t *col[4];
  for (int c = 0; c < 4; c++)
    if (!(col[c] = malloc(N * sizeof **col))) return SP_ERR_NO_MEMORY;
  for (int i = 0; i < N; i++) {
    col[0][i] = 10 * i;
    col[1][i] = 10 * i + 5 + rank;
    col[2][i] = i;
    col[3][i] = -1;
  }
  const void *none[1] = {NULL};
  int rc = 0;
  for (int half = 0; half < 2; half++) {
    size_t off = half ? N / 2 : 0, n = half ? N - N / 2 : N / 2;
    struct sp_event_batch b = {col[0] + off, col[1] + off, col[2] + off, col[3] + off, none};
    rc |= sp__sink_put(sink, off, n, &b);
  }
  for (int c = 0; c < 4; c++) free(col[c]);
  if (rc) return SP_ERR_IO;
  struct sp_summary *s = &run->rows[0].stats;
  int64_t d = 5 + rank;
  *s = (struct sp_summary){N * d, d, d, d, d, 0, 10 * (N - 1) + d, 0, 0, (double)d, 0};
  run->rows[0].exclusive_total = N * d;
  return SP_OK;
}

static int write_one(const char *mode, int size) {
  char om[64], fp[64];
  snprintf(om, sizeof om, "output_mode=%s", mode);
  snprintf(fp, sizeof fp, "file_path=%s/stream.h5", mode);
  const char *over[] = {om, fp, NULL};
  sp_setup_args args = {.overrides = over};
  struct sp_config cfg;
  if (sp__config_resolve(&cfg, &args) != SP_OK) return 1;
  struct sp_run run;
  memset(&run, 0, sizeof run);
  run.layout = "columnar";
  char *names[] = {"streamed"};
  run.names = names;
  run.nnames = 1;
  struct sp_row row;
  memset(&row, 0, sizeof row);
  row.rank = (uint32_t)rank;
  row.count = N;
  row.source_line = -1;
  run.rows = &row;
  run.nrows = 1;
  run.nevents = N;
  run.has_ids = 1;
  run.fill_events = fill;
  run.fill_ctx = &run;
  const struct sp_mpi_ops *ops = sp__mpi_ops;
  int rc = 0;
  if (!ops || !ops->in_use()) {
    fprintf(stderr, "mpi_stream: no MPI ops table (static linking lost it?)\n");
    return 1;
  }
  ops->rank();
  if (sp__metadata_collect(&cfg, 0, ops->size(), &run.meta) != 0 || ops->metadata(&run.meta, &cfg) != SP_OK ||
      ops->write(&run, &cfg, cfg.file_path) != SP_OK) {
    fprintf(stderr, "mpi_stream: rank %d %s: %s\n", rank, mode, sp_last_error());
    rc = 1;
  }
  if (fills != 1) {
    fprintf(stderr, "mpi_stream: the filler ran %d times\n", fills);
    rc = 1;
  }
  fills = 0;
  sp__meta_free(&run.meta);
  sp__config_free(&cfg);
  (void)size;
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  sp__clock_init();
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = write_one("direct", size) + write_one("parallel", size), all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_stream: %s (%d ranks)\n", all ? "FAILED" : "ok", size);
  MPI_Finalize();
  return all ? 1 : 0;
}
