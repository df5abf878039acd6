/* tasks.c - an instrumented program with user-level tasks (track_async):
 * a ucontext scheduler runs three coroutines on one thread, each yielding
 * inside open regions, plus a second thread, so the file has task ids,
 * await times, thread ids and both lane tables. The file is file_path
 * (SCOPE_PROFILER_FILE_PATH); setup turns track_async on. */
#include <pthread.h>
#include <stdio.h>
#include <ucontext.h>

#include "scope_profiler.h"

#define NTASK 3
static ucontext_t sched, ctx[NTASK];
static int finished[NTASK], current;

static void spin(int n) {
  volatile double x = 0;
  for (int i = 0; i < n; i++) x += i * 0.5;
}

static void body(void) {
  int me = current;
  SP_REGION("task_work");
  for (int i = 0; i < 3; i++) {
    SP_REGION("task_step");
    spin(20000 + 1000 * me);
    swapcontext(&ctx[me], &sched); /* suspended inside both regions */
  }
  finished[me] = 1;
}

static void *helper(void *arg) {
  (void)arg;
  for (int i = 0; i < 5; i++) {
    SP_REGION("helper");
    spin(10000);
  }
  return NULL;
}

int main(void) {
  const char *ov[] = {"track_async=1", NULL};
  sp_setup_args a = {.overrides = ov};
  if (sp_setup(&a) != SP_OK) return 1;
  pthread_t th;
  pthread_create(&th, NULL, helper, NULL);
  static char stacks[NTASK][64 * 1024];
  for (int i = 0; i < NTASK; i++) {
    getcontext(&ctx[i]);
    ctx[i].uc_stack.ss_sp = stacks[i];
    ctx[i].uc_stack.ss_size = sizeof stacks[i];
    ctx[i].uc_link = &sched;
    makecontext(&ctx[i], body, 0);
    char name[32];
    snprintf(name, sizeof name, "worker-%d", i);
    sp_manager_task_name(sp_default_manager(), (uint64_t)i + 1, name);
  }
  {
    SP_REGION("scheduler");
    for (int alive = NTASK; alive;) {
      for (int i = 0; i < NTASK; i++) {
        if (finished[i]) continue;
        current = i;
        sp_manager_task_switch(sp_default_manager(), (uint64_t)i + 1);
        swapcontext(&sched, &ctx[i]);
        sp_manager_task_switch(sp_default_manager(), 0);
        if (finished[i]) {
          sp_manager_task_done(sp_default_manager(), (uint64_t)i + 1);
          alive--;
        }
      }
    }
  }
  pthread_join(th, NULL);
  return sp_finalize(NULL, NULL) == SP_OK ? 0 : 1;
}
