/* test-async.c - track_async with a real ucontext scheduler: three
 * coroutines interleave on one thread, yielding inside open regions. Calls
 * must nest per task, carry their task, and count the time their task was
 * switched out as await time. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"
#include "h5util.h"
#include "core/core.h"
#include "scope_profiler.h"

#define NTASK 3
#define ROUNDS 4

static sp_manager *m;
static ucontext_t sched_ctx, task_ctx[NTASK];
static int done[NTASK];
static int current;
static sp_region r_work, r_step, r_loop;

static void tick(uint64_t ns) { sp__clock_manual_advance(ns); }

/* Yield back to the scheduler; it announces the switch. */
static void yield(void) {
  swapcontext(&task_ctx[current], &sched_ctx);
}

static void task_body(void) {
  int me = current;
  ASSERT_OK(sp_region_begin(m, r_work));
  for (int i = 0; i < ROUNDS; i++) {
    ASSERT_OK(sp_region_begin(m, r_step));
    tick(10 + (uint64_t)me); /* running */
    yield();                 /* suspended inside both regions */
    tick(5);
    ASSERT_OK(sp_region_end(m, r_step));
  }
  ASSERT_OK(sp_region_end(m, r_work));
  sp_manager_task_done(m, (uint64_t)me + 1);
  done[me] = 1;
  swapcontext(&task_ctx[me], &sched_ctx);
}

SP_TEST(ucontext_tasks_nest_and_await) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  m = sp_manager_create();
  const char *ov[] = {"file_path=async.h5", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  ASSERT(sp_config_track_threads(sp_manager_config(m))); /* implied */
  r_work = sp_region_intern("task_work");
  r_step = sp_region_intern("task_step");
  r_loop = sp_region_intern("scheduler_loop");
  static char stacks[NTASK][64 * 1024];
  for (int i = 0; i < NTASK; i++) {
    getcontext(&task_ctx[i]);
    task_ctx[i].uc_stack.ss_sp = stacks[i];
    task_ctx[i].uc_stack.ss_size = sizeof stacks[i];
    task_ctx[i].uc_link = &sched_ctx;
    makecontext(&task_ctx[i], task_body, 0);
    char name[32];
    snprintf(name, sizeof name, "worker-%d", i);
    sp_manager_task_name(m, (uint64_t)i + 1, name);
  }
  ASSERT_OK(sp_region_begin(m, r_loop)); /* the thread's own context */
  int alive = NTASK;
  while (alive) {
    for (int i = 0; i < NTASK; i++) {
      if (done[i]) continue;
      current = i;
      sp_manager_task_switch(m, (uint64_t)i + 1);
      swapcontext(&sched_ctx, &task_ctx[i]);
      sp_manager_task_switch(m, 0);
      tick(1);
      if (done[i]) alive--;
    }
  }
  ASSERT_OK(sp_region_end(m, r_loop));
  ASSERT_EQ(sp_manager_problems(m).unmatched_ends, 0);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));

  ASSERT_EQ(h5_region_events("async.h5", "task_work"), NTASK);
  ASSERT_EQ(h5_region_events("async.h5", "task_step"), NTASK * ROUNDS);
  long long n, k;
  int64_t *task = h5_i64("async.h5", "/events/task_ids", &n);
  int64_t *await = h5_i64("async.h5", "/events/await_ns", &n);
  int64_t *cid = h5_i64("async.h5", "/events/call_ids", &n);
  int64_t *pid = h5_i64("async.h5", "/events/parent_ids", &n);
  int64_t *s = h5_i64("async.h5", "/events/start_times", &n);
  int64_t *e = h5_i64("async.h5", "/events/end_times", &n);
  int64_t *ids = h5_i64("async.h5", "/rank_region_index/region_ids", &k);
  int64_t *off = h5_i64("async.h5", "/rank_region_index/event_offsets", &k);
  int64_t *cnt = h5_i64("async.h5", "/rank_region_index/event_counts", &k);
  long long iw = h5_region_index("async.h5", "task_work"), is = h5_region_index("async.h5", "task_step");
  long long il = h5_region_index("async.h5", "scheduler_loop");
  ASSERT_EQ(n, NTASK + NTASK * ROUNDS + 1);
  for (long long r = 0; r < k; r++) {
    for (int64_t j = off[r]; j < off[r] + cnt[r]; j++) {
      if (ids[r] == il) {
        ASSERT_EQ(task[j], -1); /* thread context */
        ASSERT_EQ(pid[j], -1);
        ASSERT_EQ(await[j], 0);
        continue;
      }
      ASSERT(task[j] >= 0 && task[j] < NTASK);
      if (ids[r] == iw) {
        /* task_work's parent is not the scheduler loop of another lane */
        ASSERT_EQ(pid[j], -1);
        /* suspended ROUNDS times while the other tasks ran */
        ASSERT_GT(await[j], 0);
        ASSERT_LT(await[j], e[j] - s[j]);
      } else {
        ASSERT_EQ(ids[r], is);
        /* parent: the task_work call of the same task */
        int found = 0;
        for (long long q = 0; q < n; q++)
          if (cid[q] == pid[j]) {
            ASSERT_EQ(task[q], task[j]);
            ASSERT(s[q] <= s[j] && e[j] <= e[q]);
            found = 1;
          }
        ASSERT(found);
        /* every step yields once; the others ran 2 x (10+me) + 5 + ticks */
        ASSERT_GT(await[j], 0);
      }
    }
  }
  /* The whole await of task_work equals the sum of its own switched-out gaps:
   * it is open for the whole life of its task. */
  int64_t *steps = h5_i64("async.h5", "/task_table/steps", &k);
  int64_t *awaiting = h5_i64("async.h5", "/task_table/suspended_ns", &k);
  char **names = h5_strings("async.h5", "/task_table/name", &k);
  ASSERT_EQ(k, NTASK);
  for (int i = 0; i < NTASK; i++) {
    ASSERT_EQ(steps[i], ROUNDS + 1);
    char want[32];
    snprintf(want, sizeof want, "worker-%d", i);
    ASSERT_STR_EQ(names[i], want);
  }
  for (long long r = 0; r < k; r++) (void)awaiting[r];
  for (long long q = 0; q < n; q++)
    if (cid[q] >= 0) {
      for (long long r = 0; r < h5_len("async.h5", "/rank_region_index/region_ids"); r++)
        if (ids[r] == iw && q >= off[r] && q < off[r] + cnt[r]) {
          /* task_work spans from just after its first switch-in to its last
           * step: all its suspensions except none before it began. */
          ASSERT_EQ(await[q], awaiting[task[q]]);
        }
    }
  free(task); free(await); free(cid); free(pid); free(s); free(e); free(ids); free(off); free(cnt);
  free(steps); free(awaiting);
  h5_strings_free(names, k);
  sp_manager_destroy(m);
}

/* A task's running time ends at its last switch-out, at sp_task_done when
 * it was marked done while running, or at finalize while it still runs. */
SP_TEST(task_running_time_stops_when_done) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  m = sp_manager_create();
  const char *ov[] = {"file_path=running.h5", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_manager_task_switch(m, 1); /* runs 100 ns, switched out */
  tick(100);
  sp_manager_task_switch(m, 0);
  tick(1000);
  sp_manager_task_switch(m, 3); /* done after 30 ns, switched out 20 ns later */
  tick(30);
  sp_manager_task_done(m, 3);
  tick(20);
  sp_manager_task_switch(m, 0);
  sp_manager_task_switch(m, 2); /* done after 50 ns, still current at finalize */
  tick(50);
  sp_manager_task_done(m, 2);
  tick(700);
  sp_manager_task_switch(m, 4); /* still running at finalize: 40 ns so far */
  tick(40);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long k;
  int64_t *running = h5_i64("running.h5", "/task_table/running_ns", &k);
  int64_t *sw = h5_i64("running.h5", "/task_table/switch_id", &k);
  int64_t *done_ns = h5_i64("running.h5", "/task_table/done_ns", &k);
  ASSERT_EQ(k, 4);
  static const int64_t want[5] = {0, 100, 50, 30, 40};
  for (long long i = 0; i < k; i++) {
    ASSERT(sw[i] >= 1 && sw[i] <= 4);
    ASSERT_EQ(running[i], want[sw[i]]);
    ASSERT_EQ(done_ns[i] == -1, sw[i] == 1 || sw[i] == 4);
  }
  free(running);
  free(sw);
  free(done_ns);
  sp_manager_destroy(m);
}

/* sp_manager_task_describe fills the task table's kind and coro_name (upstream:
 * "task" or "greenlet", the coroutine's qualname); NULL keeps a value, a task
 * never described keeps "task" and "", and bad arguments are refused with a
 * message naming the call. */
SP_TEST(task_describe_fills_kind_and_coro_name) {
  m = sp_manager_create();
  ASSERT_EQ(sp_manager_task_describe(m, 1, "task", "f"), SP_ERR_INACTIVE); /* not set up */
  ASSERT(strstr(sp_last_error(), "sp_manager_task_describe"));
  const char *ov[] = {"file_path=describe.h5", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  ASSERT_OK(sp_manager_task_describe(m, 1, "greenlet", "Worker.run"));
  ASSERT_OK(sp_manager_task_describe(m, 2, NULL, "main.<locals>.job"));
  ASSERT_OK(sp_manager_task_describe(m, 3, "fiber", NULL));
  ASSERT_OK(sp_manager_task_describe(m, 3, NULL, NULL)); /* keeps both */
  ASSERT_OK(sp_manager_task_describe(m, 1, NULL, "Worker.run_again"));
  ASSERT_EQ(sp_manager_task_describe(m, 0, "task", "x"), SP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sp_manager_task_describe(m, 5, "", "x"), SP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sp_manager_task_describe(m, 5, "two words", "x"), SP_ERR_INVALID_ARGUMENT);
  ASSERT(strstr(sp_last_error(), "two words") && strstr(sp_last_error(), "task 5"));
  static char big[5000];
  memset(big, 'a', sizeof big - 1);
  ASSERT_EQ(sp_manager_task_describe(m, 5, NULL, big), SP_ERR_INVALID_ARGUMENT);
  sp_manager_task_name(m, 1, "g-1");
  for (uint64_t t = 1; t <= 4; t++) {
    sp_manager_task_switch(m, t);
    sp_manager_task_switch(m, 0);
  }
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long k;
  int64_t *sw = h5_i64("describe.h5", "/task_table/switch_id", &k);
  char **kind = h5_strings("describe.h5", "/task_table/kind", &k);
  char **coro = h5_strings("describe.h5", "/task_table/coro_name", &k);
  char **name = h5_strings("describe.h5", "/task_table/name", &k);
  ASSERT(sw && kind && coro && name);
  ASSERT_EQ(k, 4); /* task 5 was refused each time: never created */
  static const char *want_kind[5] = {"", "greenlet", "task", "fiber", "task"};
  static const char *want_coro[5] = {"", "Worker.run_again", "main.<locals>.job", "", ""};
  for (long long i = 0; i < k; i++) {
    ASSERT(sw[i] >= 1 && sw[i] <= 4);
    ASSERT_STR_EQ(kind[i], want_kind[sw[i]]);
    ASSERT_STR_EQ(coro[i], want_coro[sw[i]]);
    ASSERT_STR_EQ(name[i], sw[i] == 1 ? "g-1" : "");
  }
  free(sw);
  h5_strings_free(kind, k), h5_strings_free(coro, k), h5_strings_free(name, k);
  sp_manager_destroy(m);
}

SP_TEST(task_switch_is_a_noop_without_track_async) {
  m = sp_manager_create();
  const char *ov[] = {"file_path=noasync.h5", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region r = sp_region_intern("plain");
  sp_region_begin(m, r);
  sp_manager_task_switch(m, 7);
  ASSERT_OK(sp_manager_task_describe(m, 7, "task", "plain_task")); /* accepted, nothing recorded */
  sp_region_end(m, r); /* still matches: no per-task stacks */
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_len("noasync.h5", "/events/task_ids"), -1);
  ASSERT_EQ(h5_region_events("noasync.h5", "plain"), 1);
  sp_manager_destroy(m);
}

/* A run's lane tables list that run's threads and tasks: a second
 * setup/finalize cycle of one manager leaves out the thread that exited and
 * the task that was done during the first, and keeps what is still alive. */
static void *short_thread(void *arg) {
  sp_region r = sp_region_intern("on_a_thread");
  sp_region_begin(arg, r);
  sp_region_end(arg, r);
  return NULL;
}

static int has(const int64_t *v, long long n, int64_t x) {
  for (long long i = 0; i < n; i++)
    if (v[i] == x) return 1;
  return 0;
}

SP_TEST(lane_tables_list_the_threads_and_tasks_of_their_run) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  m = sp_manager_create();
  const char *ov1[] = {"file_path=cycle1.h5", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov1}));
  sp_region r = sp_region_intern("cycle");
  sp_region_begin(m, r);
  sp_region_end(m, r);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, short_thread, m), 0);
  ASSERT_EQ(pthread_join(th, NULL), 0);
  sp_manager_task_switch(m, 1); /* done in the first run */
  tick(10);
  sp_manager_task_done(m, 1);
  sp_manager_task_switch(m, 0);
  sp_manager_task_switch(m, 2); /* alive across both runs */
  tick(10);
  sp_manager_task_switch(m, 0);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n1, k1;
  int64_t *thr1 = h5_i64("cycle1.h5", "/thread_table/index", &n1);
  int64_t *sw1 = h5_i64("cycle1.h5", "/task_table/switch_id", &k1);
  ASSERT(thr1 && sw1);
  ASSERT_EQ(n1, 2); /* this thread and the one that exited */
  ASSERT_EQ(k1, 2);
  ASSERT(has(sw1, k1, 1) && has(sw1, k1, 2));

  tick(1000); /* the thread's exit is on the manual clock too: before this run */
  const char *ov2[] = {"file_path=cycle2.h5", "track_async=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov2}));
  sp_region_begin(m, r);
  sp_manager_task_switch(m, 2);
  tick(10);
  sp_manager_task_switch(m, 0);
  sp_region_end(m, r);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n2, k2;
  int64_t *thr2 = h5_i64("cycle2.h5", "/thread_table/index", &n2);
  int64_t *sw2 = h5_i64("cycle2.h5", "/task_table/switch_id", &k2);
  ASSERT(thr2 && sw2);
  ASSERT_EQ(n2, 1);
  ASSERT_EQ(thr2[0], 0); /* the finalizing thread, its index kept */
  ASSERT_EQ(k2, 1);
  ASSERT_EQ(sw2[0], 2);
  free(thr1), free(sw1), free(thr2), free(sw2);
  sp_manager_destroy(m);
}

/* Under the manual clock a thread's start (its first call) and end (its
 * exit) are the manual clock's times, relative to the run's start as every
 * other time in the file; they were read from CLOCK_MONOTONIC, days away. */
static void *timed_thread(void *arg) {
  tick(50);
  sp_region r = sp_region_intern("timed");
  sp_region_begin(arg, r); /* attaches: its start */
  tick(20);
  sp_region_end(arg, r);
  tick(30); /* then it exits: its end */
  return NULL;
}

SP_TEST(thread_times_follow_the_manual_clock) {
  setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  m = sp_manager_create();
  const char *ov[] = {"file_path=manual_threads.h5", "track_threads=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  tick(100);
  sp_region r = sp_region_intern("main_call");
  sp_region_begin(m, r); /* this thread's start: 100 */
  sp_region_end(m, r);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, timed_thread, m), 0);
  ASSERT_EQ(pthread_join(th, NULL), 0);
  tick(1000);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n;
  int64_t *start = h5_i64("manual_threads.h5", "/thread_table/start_ns", &n);
  int64_t *end = h5_i64("manual_threads.h5", "/thread_table/end_ns", &n);
  int64_t *ident = h5_i64("manual_threads.h5", "/thread_table/ident", &n);
  ASSERT(start && end && ident);
  ASSERT_EQ(n, 2);
  for (long long i = 0; i < n; i++) {
    if (ident[i] == (int64_t)(uint64_t)pthread_self()) {
      ASSERT_EQ(start[i], 100);
      ASSERT_EQ(end[i], -1); /* alive */
    } else {
      ASSERT_EQ(start[i], 150);
      ASSERT_EQ(end[i], 200);
    }
  }
  free(start), free(end), free(ident);
  sp_manager_destroy(m);
}

/* sp_thread_end() stamps the calling thread's end now: a thread that called
 * it and is still running (blocked) shows as ended in a table written
 * meanwhile, with its CPU time; a region it begins afterwards registers it
 * again as a new thread. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_stage;

static void *ending_thread(void *arg) {
  sp_region r = sp_region_intern("before_end");
  sp_region_begin(arg, r);
  sp_region_end(arg, r);
  sp_thread_end();
  pthread_mutex_lock(&hold_lock);
  hold_stage = 1;
  pthread_cond_broadcast(&hold_cond);
  while (hold_stage < 2) pthread_cond_wait(&hold_cond, &hold_lock);
  pthread_mutex_unlock(&hold_lock);
  sp_region r2 = sp_region_intern("after_end");
  sp_region_begin(arg, r2);
  sp_region_end(arg, r2);
  return NULL;
}

SP_TEST(thread_end_stamps_a_thread_that_still_runs) {
  m = sp_manager_create();
  const char *ov[] = {"file_path=ended1.h5", "track_threads=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov}));
  sp_region r = sp_region_intern("main_call");
  sp_region_begin(m, r);
  sp_region_end(m, r);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, ending_thread, m), 0);
  pthread_mutex_lock(&hold_lock);
  while (hold_stage < 1) pthread_cond_wait(&hold_cond, &hold_lock);
  pthread_mutex_unlock(&hold_lock);
  /* the thread is alive and blocked: its row must say it ended */
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long n;
  int64_t *end = h5_i64("ended1.h5", "/thread_table/end_ns", &n);
  int64_t *cpu = h5_i64("ended1.h5", "/thread_table/cpu_ns", &n);
  int64_t *ident = h5_i64("ended1.h5", "/thread_table/ident", &n);
  ASSERT(end && cpu && ident);
  ASSERT_EQ(n, 2);
  for (long long i = 0; i < n; i++) {
    int mine = ident[i] == (int64_t)(uint64_t)pthread_self();
    ASSERT_EQ(end[i] == -1, mine); /* the finalizing thread lives on */
    if (!mine) ASSERT(cpu[i] >= 0);
  }
  free(end), free(cpu), free(ident);
  const char *ov2[] = {"file_path=ended2.h5", "track_threads=1", NULL};
  ASSERT_OK(sp_manager_setup(m, &(sp_setup_args){.overrides = ov2}));
  pthread_mutex_lock(&hold_lock);
  hold_stage = 2;
  pthread_cond_broadcast(&hold_cond);
  pthread_mutex_unlock(&hold_lock);
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT_EQ(h5_region_events("ended2.h5", "after_end"), 1);
  int64_t *index = h5_i64("ended2.h5", "/thread_table/index", &n);
  ASSERT(index);
  ASSERT_EQ(n, 2); /* this thread, and the ending thread's new record */
  ASSERT(has(index, n, 2) && !has(index, n, 1)); /* the first record ended in the first run */
  free(index);
  sp_manager_destroy(m);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
