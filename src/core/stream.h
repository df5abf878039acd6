/* stream.h - bounded memory for long runs: streaming full buffers to a
 * staging file and assembling the file from it at finalize (stream.c). */
#ifndef SP_STREAM_H
#define SP_STREAM_H

#include "core/core.h"
#include "output/output.h"

/* Bytes of live event buffers past which a full buffer is streamed rather
 * than grown. */
uint64_t sp__stream_live_limit(const struct sp_manager *m);
/* Recording thread, buffer full: hand it to the writer and continue in a
 * fresh one. 0 on success, -1 when streaming is not possible (grow instead). */
int sp__stream_handoff(struct sp_manager *m, sp_thread_rec *t);
/* 1 once this run has streamed anything. */
int sp__stream_active(const struct sp_manager *m);
/* Finalize, before it takes its end anchor: wait for the writer to finish
 * the block in its hands (its nanoseconds are then final); a block it
 * takes before sp__stream_build hands it the final map makes the run go
 * the copy way (no map is known final for it). Release after finalize, in
 * every case. */
void sp__stream_hold(struct sp_manager *m);
void sp__stream_release(struct sp_manager *m);
/* Finalize: hand over the rest, wait for the writer, and describe the run
 * (rows, statistics filled while writing) for the HDF5 writer. */
sp_status sp__stream_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank, struct sp_run *run,
                           uint64_t *open_calls, void **fill_ctx);
void sp__stream_fill_free(void *fill_ctx);
/* Completed calls of a region streamed in this run. */
uint64_t sp__stream_calls(const struct sp_manager *m, uint32_t region);
/* The run is written: an empty staging file for the next, and the recycled
 * buffers freed. */
void sp__stream_reset(struct sp_manager *m);
/* Finalize could not write the run: 1 when it stays as it is (its calls are
 * in the staging files, whole), for a retry, the exit hook or a crash's
 * recovery; 0 when it cannot be written anyway (its staged file no longer
 * holds what the run wrote there): it is reset as a written run is. */
int sp__stream_keep_failed(const struct sp_manager *m);
/* Bytes of recycled buffers the writer holds for the threads' next
 * hand-offs. */
uint64_t sp__stream_spare_bytes(const struct sp_manager *m);
/* Blocks this run streamed or has on their way to the writer (async-signal
 * safe: the crash spill records it). */
uint64_t sp__stream_blocks_now(const struct sp_manager *m);
/* A crash: the staged HDF5 file of the run removed when no block of it is
 * journaled yet, else kept for recovery (async-signal safe). */
void sp__stream_crash_unlink(const struct sp_manager *m);
/* The path of the run's staged HDF5 file (.<name>.tmp. and mkstemp's six
 * characters) while it has one, else NULL; and its removal, after which
 * there is none (a kept run nothing can recover). */
const char *sp__stream_staged_name(const struct sp_manager *m);
void sp__stream_unlink_staged(struct sp_manager *m);
/* Blocks queued for the writer or in its hands now, and *done those it
 * has finished (tests). */
uint64_t sp__stream_in_flight(const struct sp_manager *m, uint64_t *done);
/* A spill under way (m->spilling raised: no block is begun from then on):
 * waits, a bounded time (not on the writer itself), for the writer to be
 * done with the block in hand. Returns where the writer is (async-signal
 * safe): NONE, all that a spill reads is settled; KEPT, the block's pass is
 * done (its calls are not durable yet); PASS, in the block's pass: the
 * kept calls of thread index *thread, the next call id (every id of the
 * block is below *idbound) and the cross-thread contexts may be changing. */
enum { SP_STREAM_OWN_NONE, SP_STREAM_OWN_PASS, SP_STREAM_OWN_KEPT };
int sp__stream_spill_settle(const struct sp_manager *m, uint32_t *thread, int64_t *idbound);
/* Tests: called by the writer right after a block's pass, before the
 * thread's kept calls are rewritten (block: the blocks done before). */
extern void (*sp__stream_test_pass_hook)(struct sp_manager *m, uint64_t block);
/* 1 when the writer had nothing in hand (async-signal safe). */
int sp__stream_idle_now(const struct sp_manager *m);
/* Recovery: the crashed run's staging file at `path` (its region ids mapped
 * through idmap) becomes m's stream, read back segment by segment: 0 when
 * read whole, 1 when it ended in a torn segment (what came before is kept),
 * -1 when it cannot be used. The file is left where it is. When the staged
 * file its journal names is gone and `published` is given (the name the
 * crashed run was publishing its file as: the rename keeps every staged
 * block at its offset), the blocks are read there, each checked by the
 * journal's checksums. *info (may be NULL) says what was read from where. */
struct sp_adopted {
  char staged[4096]; /* the staged file the journal names ("" none) */
  uint64_t segs;     /* its segments the journal lists, read and checked */
  int in_published;  /* they were read from `published` (the staged file was gone) */
};
int sp__stream_adopt(struct sp_manager *m, const char *path, const uint32_t *idmap, uint32_t nreg,
                     const struct sp_clock_map *cm, const char *published, struct sp_adopted *info);
/* The staged file a crashed run's journal at `path` names, into name[len]:
 * 0, or -1 ("") when it names none. */
int sp__stream_journal_staged(const char *path, char *name, size_t len);
/* What a journal says of its run without a spill (the records stream.c
 * describes: SPRUN001, SPREG001, SPTHR001, SPANC001), for a recovery after
 * SIGKILL. Strings malloc'ed; sp__stream_journal_free. */
struct sp_journal_region {
  uint32_t id, kind, opt_in;
  int line;
  char *name, *file, *tags; /* tags comma-separated, NULL none */
};
struct sp_journal_thread {
  uint32_t index, tid;
  char name[32];
};
struct sp_journal {
  char staged[4096]; /* the staged file it names ("" none) */
  int have_run;      /* an SPRUN001 record */
  uint32_t clock_kind, pid;
  uint64_t tick0, tick1; /* the run's start, the last block's anchor */
  int64_t ns0, ns1, start_ns;
  int have_anchor;
  int rank, size;
  size_t nset;
  char **keys, **vals;
  size_t nreg, nthr;
  struct sp_journal_region *reg;
  struct sp_journal_thread *thr;
  uint64_t segs;  /* segment records (staged, and raw ones of the copy way) */
  int torn;       /* the walk ended at a record cut short or failing its checksum */
};
/* 0 read (torn or not), -1 cannot open or not a journal (message set). */
int sp__stream_journal_read(const char *path, struct sp_journal *j);
void sp__stream_journal_free(struct sp_journal *j);
/* Whether a file's first 8 bytes are those of a staging file's first record. */
int sp__stream_is_journal(const unsigned char head[8]);
void sp__stream_close(struct sp_manager *m);
/* Tests: the writer sleeps this long before each block (a slow disk). */
extern int sp__stream_test_block_delay_ms;
/* Tests and benches: blocks a hand-off lets be in flight to the writer, 1
 * or 2 (0: the rule of handoff(), one while one thread stages). */
extern int sp__stream_test_in_flight;
/* The recording threads' hand-offs so far (the manager's, over its runs; not
 * finalize's drain), how many
 * of them waited for the writer, and their waits' total in ns: what target
 * 6's "a recording thread never waits for the writer" counts. */
void sp__stream_waits(const struct sp_manager *m, uint64_t *handoffs, uint64_t *waits, uint64_t *wait_ns);
/* How long a hand-off waits for a writer that stages thread ids before it
 * sheds the staging (1000 ms). Tests whose staged cases must stage raise it:
 * under a sanitizer on a loaded machine a block can take longer. */
extern int sp__stream_shed_wait_ms;
/* How long a hand-off waits for the writer before the buffer's completed
 * calls are dropped (5000 ms; tests shorten it). One block in flight
 * becomes two after half of it. */
extern int sp__stream_drop_wait_ms;

#endif
