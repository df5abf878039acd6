/* spill.h - crash spill files (spill.c) and signal handling (signals.c). */
#ifndef SP_SPILL_H
#define SP_SPILL_H

#include <stddef.h>

#include "core/core.h"

/* Async-signal-safe: write m's raw buffers to m->spill_path; 0 on success. */
int sp__spill_write(struct sp_manager *m, int sig);
int sp__spill_write_to(struct sp_manager *m, int sig, const char *path);
/* Tests: called by the spill writer just before it reads the threads'
 * buffers (NULL outside tests), so that a test can hold a spill there while
 * finalize runs on. */
extern void (*sp__spill_test_hook)(struct sp_manager *m);

/* What a recovery did, for the caller to say and to clean up after. */
struct sp_recover_info {
  char written[4096]; /* the file written; when published, the file the run was published as */
  int published;      /* the run was published complete before the crash: nothing was written */
  int complete;       /* every call recorded before the crash is in `written` */
  /* spills written while finalize rewrote the buffers (compacting what it
   * had written): they hold none of the calls, calls_lost of them */
  int rewritten;
  unsigned long long calls_lost;
  /* the crashed run's files recovery read that are still there (its
   * spills, the raw staging file, the staged file its journal names) */
  char **files;
  size_t nfiles;
  /* recovered from a streamed run's journal alone (no spill: SIGKILL, the
   * OOM killer, a power loss): its segments read, and whether the journal
   * ended in a record cut short (ignored) */
  int journal;
  int torn;
  unsigned long long segs;
};
void sp__recover_info_free(struct sp_recover_info *info);
/* Turn the spill files of one run (or the rank spills of one MPI job) into
 * an HDF5 file at out_path (NULL: the crashed run's file_path), or find
 * that the run had been published complete. */
sp_status sp__spill_recover_run(const char *const *spills, size_t n, const char *out_path,
                                struct sp_recover_info *info);
/* A streamed run killed without a spill (SIGKILL: no handler ran) from
 * its raw staging file's journal (.<name>.stage.*) and the staged file it
 * names: the calls of every staged block the journal lists whole, as a
 * profile at out_path (NULL: the run's file_path), recovered_from_signal 9
 * and recovery_complete 0 (calls still in the recording threads' buffers
 * are lost and cannot be counted). */
sp_status sp__journal_recover(const char *journal, const char *out_path, struct sp_recover_info *info);
/* The same from the spill's bytes in memory; `spill` names it in messages. */
sp_status sp__spill_recover_mem(const void *data, size_t len, const char *spill, const char *out_path,
                                char *written, size_t written_len);

/* Install the termination and fatal-signal handlers the config asks for
 * (once per signal per process, chaining what was there). */
sp_status sp__signals_install(const struct sp_config *cfg);
void sp__signals_after_fork_child(void);

/* Finalize a manager rebuilt from a spill: end anchors from the spill, and
 * metadata saying the run was recovered. */
struct sp_run;
sp_status sp__finalize_recovered(struct sp_manager *m, uint64_t tick1, int64_t ns1, int sig, int complete, int rank,
                                 struct sp_run *sink);
/* Recover the spill files of one MPI job (one per rank, each naming its
 * rank) into one job file at out_path (NULL: the job's file_path). */
sp_status sp__spill_recover_job(const char *const *spills, size_t n, const char *out_path, char *written,
                                size_t written_len);

/* Finalize a run that ends here for good (the exit hook, a termination
 * signal): open calls end now, marked cut short, `why` in the metadata. */
sp_status sp__finalize_cut(struct sp_manager *m, const char *why);
/* "SIGTERM" for SIGTERM, NULL for a signal without a name here. */
const char *sp__signal_name(int sig);

/* A clock anchor for every live manager (under the registry's lock, so none
 * is destroyed meanwhile). */
void sp__clock_note_all(void);

/* The i-th live manager (for handlers and the watcher), or NULL. */
struct sp_manager *sp__live_manager(int i);
/* Hold the registry of live managers: none is destroyed until released
 * (the signal watcher and the exit hook, over the managers they cut). */
void sp__live_hold(void);
void sp__live_release(void);

#endif
