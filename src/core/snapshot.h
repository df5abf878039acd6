/* snapshot.h - building a run from a manager's thread logs (snapshot.c). */
#ifndef SP_SNAPSHOT_H
#define SP_SNAPSHOT_H

#include "core/core.h"
#include "output/output.h"

/* Build the columnar run of every completed call; *open_calls counts the
 * calls still open (left out). */
sp_status sp__snapshot_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                             struct sp_run *run, uint64_t *open_calls);

/* The same run for a file alone, as a filler (run->fill_events): its calls
 * are written row chunk by row chunk while the passes run, instead of
 * whole-run columns (snapshot.c says when it declines: then *fill_ctx is
 * NULL and the run empty, and sp__snapshot_build is the way). After the
 * write, sp__snapshot_fill_retry says whether to write the file once more
 * (the filler foretold the call ids wrongly; it now knows), and
 * sp__snapshot_fill_settle runs the passes if no write got to them (the
 * rows' statistics, the ids of the calls kept open). */
sp_status sp__snapshot_fill_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                                  struct sp_run *run, uint64_t *open_calls, void **fill_ctx);
int sp__snapshot_fill_retry(void *fill_ctx);
/* 0: always the columns (tests compare the two ways); the fills run
 * through a sink so far, in every manager */
extern int sp__snapshot_fill_enabled;
extern _Atomic unsigned long sp__snapshot_fills;
void sp__snapshot_fill_settle(void *fill_ctx);
void sp__snapshot_fill_free(void *fill_ctx);

/* The run's optional event columns (thread ids, then the extensions'
 * output columns, task ids and await time among them), nevents values
 * each, in the order emit_row fills them; -1 when out of memory or an
 * extension's column clashes with the format. */
int sp__run_event_columns(struct sp_manager *m, struct sp_run *run, int track_threads);

/* After a finalize: keep only the calls still open, renumbered, so they
 * complete into the next run. */
void sp__snapshot_compact(struct sp_manager *m);

/* Adds to done[1..maxid] the calls of each region the threads' logs hold
 * completed now, from what the filler's first pass counted (the logs are
 * read again only where they grew or held open calls): finalize's count
 * after the write. -1 (nothing added) when it cannot tell: the caller
 * reads the logs. */
int sp__snapshot_fill_done_calls(void *fill_ctx, struct sp_manager *m, uint64_t *done, uint32_t maxid);

/* Ticks to ns in order with one cursor, as finalize's passes convert them
 * (the values sp__ticks_to_ns_hint gives with one hint; unit/test-snapshot-clock). */
void sp__snapshot_ticks_ns(const struct sp_clock_map *c, const uint64_t *t, size_t n, int64_t *ns);

/* The per-thread pass and the kept-call bookkeeping, shared with the
 * bounded-memory stream writer (stream.c). */
struct lanes;
typedef void (*emit_fn)(void *ctx, uint64_t i, int64_t id, int64_t parent_id, uint32_t region);

/* Whether a streamed run's call ids can be left out of its file, decided at
 * finalize although its calls were written block by block in clock ticks
 * before the final clock map was known. The rebuild from intervals (sorted
 * by start, longer first, nested by containment) gives the recorded tree in
 * ticks by construction (a thread's calls nest, its begins come in order);
 * it gives it in nanoseconds too when the map keeps every comparison the
 * rebuild depends on apart: a begin from the one before it on its thread
 * (unless the one before is its parent, the call's first child: then the
 * start or the end must differ, the longer one sorting first), and each
 * call's end from its last child's start. So the stream writer records the
 * smallest of those gaps in ticks (`min`), and finalize keeps the ids unless
 * that gap is worth enough nanoseconds on the final map (stream.c). Per
 * thread: the latest begin (`prev_start`, `any`) and the bookkeeping of the
 * calls carried open into the next block (`kept`, nkept values in;
 * carry[k].gf out). */
struct sp_gaps {
  uint64_t min;        /* ticks; UINT64_MAX: no gap seen */
  int need_ids;        /* a gap of zero, or a link intervals cannot give */
  uint64_t prev_start; /* this thread */
  int any;
  const struct sp_gap_frame *kept;
  size_t nkept;
  /* out, read by emit: where the pass keeps the emitted call's start and
   * end in ns on its map (the staged writer codes them without converting
   * the ticks again) */
  const int64_t *s0, *e0;
};
/* gaps may be NULL (no bookkeeping). */
sp_status sp__thread_pass_alone(struct sp_manager *m, sp_thread_rec *t, const struct sp_i_event *ev, uint64_t n,
                                const struct sp_clock_map *cm, int64_t *excl, emit_fn emit, void *ctx,
                                struct sp_carry **carry, size_t *ncarry, struct sp_gaps *gaps);
#include "core/source.h"
int sp__row_source(struct sp_manager *m, struct sp_row *row, const struct sp_region_info *ri, sp_source_cache *cache);
int sp__thread_keep(struct sp_manager *m, sp_thread_rec *t, const uint64_t *old, uint32_t k);

/* Aggregation mode: one row per region from the per-thread accumulators
 * (no events), and the reset after a finalize. */
sp_status sp__snapshot_build_aggregate(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                                       struct sp_run *run, uint64_t *open_calls);
void sp__snapshot_compact_aggregate(struct sp_manager *m);

#endif
