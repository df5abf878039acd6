/* line_sampler.h - the sampling half of line-level profiles: per-thread
 * CPU-time sampling of the program counter, tagged with the region open on
 * the thread, into signal-safe per-thread tables.
 *
 * Each armed thread gets its own CPU-time clock that interrupts it with
 * SIGPROF about `rate_hz` times per CPU-second it runs: a perf_event
 * task-clock sampling event where the kernel allows it (exact period), else
 * a POSIX CPU-time timer (CLOCK_THREAD_CPUTIME_ID, which the kernel checks
 * only at its tick, so at 1 kHz on a 250 Hz kernel one signal stands for
 * four periods). Either way a sample weighs the thread CPU time since the
 * thread's previous sample, read in the handler, so times stay right when
 * signals come in bursts. Idle threads cost nothing.
 *
 * Several users (managers with use_line_profiler) share the one SIGPROF
 * handler: each started user gets an id, arms the threads it wants, and
 * gets every sample of those threads, tagged with its own region callback
 * and weighed since its own previous sample on the thread (or since it
 * armed it), in its own table per thread. A thread has one clock, set up by
 * the first user that arms it (its rate and backend); the others share it.
 * Collecting or stopping one user leaves the others' samples alone.
 *
 * The handler touches only the calling thread's own tables (found through
 * thread-local storage): open-addressing tables of (region, pc) -> hits,
 * nanoseconds, allocated when the thread is armed, never in the handler.
 * A full table counts the sample as dropped. Collection (finalize) raises a
 * flag of that user the handler checks, waits until no handler runs, reads
 * and empties that user's tables, and lowers it again; that user's samples
 * meanwhile are not taken.
 */
#ifndef SP_LINE_SAMPLER_H
#define SP_LINE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/status.h"

#define SP_LP_DEFAULT_RATE 1000
#define SP_LP_MAX_RATE 100000
#define SP_LP_MAX_USERS 8 /* users sampling at once */

enum sp_lp_backend { SP_LP_AUTO, SP_LP_PERF, SP_LP_TIMER };

struct sp_lp_params {
  int rate_hz;                /* samples per CPU-second of a thread, 1..SP_LP_MAX_RATE */
  enum sp_lp_backend backend; /* AUTO: perf_event per thread, else the timer */
  /* The region open on the calling thread, 0 when none. Called in the
   * signal handler: it must be async-signal-safe. */
  uint32_t (*current_region)(void *ctx);
  void *ctx;
  /* Region for samples taken while none is open (a whole-program run's
   * root); 0: such samples are only counted. */
  uint32_t outside_region;
  /* Slots of each thread's table (a power of two; 0: the default, 16384);
   * at most three quarters are used before samples are dropped. */
  uint32_t table_slots;
};

/* One (region, address) pair with its samples. */
struct sp_lp_entry {
  uint32_t region;
  uint64_t pc;
  uint64_t hits;
  uint64_t ns; /* thread CPU time the samples stand for */
};

struct sp_lp_stats {
  uint64_t samples;       /* samples kept */
  uint64_t outside;       /* taken with no region open and no outside_region */
  uint64_t dropped;       /* lost to a full table */
  uint64_t dropped_ns;
  uint64_t max_ns;        /* the longest thread CPU time one sample stood for: the
                           * granularity of the attribution (a sample gives its whole
                           * interval to the code it interrupted) */
  uint32_t threads_perf;  /* threads sampled by perf_event task-clock */
  uint32_t threads_timer; /* threads sampled by the POSIX CPU timer */
  uint32_t arm_failures;  /* threads on which neither could be armed */
};

/* Start a user; its id (>= 0) in *id. The first user installs the handler:
 * SP_ERR_UNSUPPORTED when this architecture's program counter cannot be
 * read, SP_ERR_CONFLICT when the program owns SIGPROF; SP_ERR_LIMIT with
 * SP_LP_MAX_USERS running; the reason in sp_last_error(). */
sp_status sp__lp_start(const struct sp_lp_params *p, int *id);

/* Arm the calling thread for user `id` (idempotent). 0, or -1 when neither
 * clock could be created (counted in arm_failures) or out of memory. Not
 * async-signal-safe. */
int sp__lp_thread_arm(int id);

/* User `id`'s pairs of every thread summed, sorted by region then address,
 * into *out (malloc'd; free() it), and its counters since its last collect.
 * With `reset` its tables and counters start over. -1 when out of memory. */
int sp__lp_collect(int id, struct sp_lp_entry **out, size_t *n, struct sp_lp_stats *stats, int reset);

/* Which clock user `id`'s threads have: "perf_event task-clock", "timer" or
 * "mixed", from the threads it armed so far; NULL when none. */
const char *sp__lp_backend_name(int id);

/* Stop user `id`: its threads stop being sampled for it and its tables are
 * freed; the last user's stop disarms every thread and restores SIGPROF's
 * previous action. */
void sp__lp_stop(int id);

/* 1 while any user is started. */
int sp__lp_running(void);

#endif
