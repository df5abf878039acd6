/* tasks.c - track_async: user-level tasks (coroutines, fibers) announced by
 * their scheduler with sp_task_switch().
 *
 * C has no asyncio, so the scheduler tells us when it switches. Each task owns
 * a stack of open calls that is swapped into its thread's recording state
 * while it runs, so calls nest per task even when tasks interleave on one
 * thread. A call's suspended time is the time its task spent switched out
 * while the call was open: each task keeps a running total of its switched-out
 * time, the call records the total at begin and the difference at end (O(1),
 * exact). Switching is a slow-path operation (a lock for the id lookup), never
 * part of region begin/end.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/core.h"

static struct sp_task *find_task(struct sp_manager *m, uint64_t id) {
  for (uint32_t i = m->ntasks; i-- > 0;)
    if (m->tasks[i]->id == id) return m->tasks[i];
  return NULL;
}

static struct sp_task *task_get(struct sp_manager *m, uint64_t id, sp_thread_rec *t, uint64_t now) {
  pthread_mutex_lock(&m->lock);
  struct sp_task *k = find_task(m, id);
  if (!k) {
    if (m->ntasks == m->tasks_cap) {
      uint32_t cap = m->tasks_cap ? m->tasks_cap * 2 : 16;
      struct sp_task **n = realloc(m->tasks, cap * sizeof *n);
      if (!n) goto out;
      m->tasks = n;
      m->tasks_cap = cap;
    }
    k = calloc(1, sizeof *k);
    if (!k || !(k->stack = malloc(16 * sizeof *k->stack))) {
      free(k);
      k = NULL;
      goto out;
    }
    k->cap = 16;
    k->id = id;
    k->index = m->ntasks;
    k->thread = t;
    k->created = now;
    k->out_at = 0; /* waiting to start is not awaiting: only gaps between steps count */
    m->tasks[m->ntasks++] = k;
  }
out:
  pthread_mutex_unlock(&m->lock);
  return k;
}

void sp_manager_task_switch(sp_manager *m, uint64_t task) {
  if (!m || !m->configured || !m->cfg.track_async || m->hot.state == SP_I_STATE_OFF) return;
  sp_thread_rec *t = sp__thread_attach(m);
  if (!t) return;
  uint64_t now = sp_i_ticks();
  struct sp_task *out = t->cur_task, *in = task ? task_get(m, task, t, now) : NULL;
  if (task && !in) {
    t->dropped_events++; /* out of memory: the switch is not recorded */
    return;
  }
  if (in == out) return;
  if (in && in->stack == NULL) { /* running on another thread right now */
    t->task_migrations++;
    return;
  }
  t->busy++; /* sp_ext_current_region reads stack and depth: not while they change */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (out) {
    out->stack = t->hot.stack;
    out->depth = t->hot.depth;
    out->cap = t->hot.stack_cap;
    out->out_at = now;
    /* a task marked done before this switch-out stopped running then */
    out->running += (out->done_at >= out->in_at && out->done_at ? out->done_at : now) - out->in_at;
  } else {
    t->ctx_stack = t->hot.stack;
    t->ctx_depth = t->hot.depth;
    t->ctx_cap = t->hot.stack_cap;
  }
  if (in) {
    if (in->thread != t) {
      /* Its open calls live in another thread's log: a task may move between
       * threads only with nothing open. Otherwise those calls are dropped. */
      if (in->depth) t->task_migrations++;
      in->depth = 0;
      in->thread = t;
    }
    t->hot.stack = in->stack;
    t->hot.depth = in->depth;
    t->hot.stack_cap = in->cap;
    in->stack = NULL;
    if (in->out_at) in->suspended += now - in->out_at;
    in->out_at = 0;
    in->in_at = now;
    in->steps++;
  } else {
    t->hot.stack = t->ctx_stack;
    t->hot.depth = t->ctx_depth;
    t->hot.stack_cap = t->ctx_cap;
    t->ctx_stack = NULL;
  }
  t->cur_task = in;
  sp__thread_rearm(m, t);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy--;
}

static struct sp_task *locked_find(struct sp_manager *m, uint64_t task) {
  pthread_mutex_lock(&m->lock);
  struct sp_task *k = find_task(m, task);
  pthread_mutex_unlock(&m->lock);
  return k;
}

void sp_manager_task_name(sp_manager *m, uint64_t task, const char *name) {
  if (!m || !m->configured || !m->cfg.track_async || !task) return;
  sp_thread_rec *t = sp__thread_attach(m);
  struct sp_task *k = t ? task_get(m, task, t, sp_i_ticks()) : NULL;
  if (!k) return;
  char *copy = sp__strdup(name);
  if (copy) {
    free(k->name);
    k->name = copy;
  }
}

sp_status sp_manager_task_describe(sp_manager *m, uint64_t task, const char *kind, const char *coro_name) {
  if (!m || !m->configured)
    return sp__set_error(SP_ERR_INACTIVE, "sp_manager_task_describe: the manager is not set up; call it during a run");
  if (!task)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "sp_manager_task_describe: task 0 is the thread's own context; describe a nonzero task id");
  if (kind) {
    size_t n = strlen(kind);
    if (n == 0 || n > 31 || strspn(kind, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != n)
      return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                           "sp_manager_task_describe: kind \"%.40s%s\" of task %llu is not 1-31 letters, digits, "
                           "'_', '-' or '.'; use \"task\", \"greenlet\" or a short word of your scheduler",
                           kind, n > 40 ? "..." : "", (unsigned long long)task);
  }
  if (coro_name && strlen(coro_name) > 4095)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "sp_manager_task_describe: coro_name of task %llu is %zu bytes, over the 4095 allowed; "
                         "pass the function's qualified name",
                         (unsigned long long)task, strlen(coro_name));
  if (!m->cfg.track_async || (!kind && !coro_name)) return SP_OK;
  sp_thread_rec *t = sp__thread_attach(m);
  struct sp_task *k = t ? task_get(m, task, t, sp_i_ticks()) : NULL;
  char *kc = kind ? sp__strdup(kind) : NULL, *cc = coro_name ? sp__strdup(coro_name) : NULL;
  if (!k || (kind && !kc) || (coro_name && !cc)) {
    free(kc);
    free(cc);
    return sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_task_describe: out of memory for task %llu",
                         (unsigned long long)task);
  }
  /* under the lock: finalize reads them while writing the task table */
  pthread_mutex_lock(&m->lock);
  if (kc) free(k->kind), k->kind = kc;
  if (cc) free(k->coro_name), k->coro_name = cc;
  pthread_mutex_unlock(&m->lock);
  return SP_OK;
}

void sp_manager_task_done(sp_manager *m, uint64_t task) {
  if (!m || !m->configured || !m->cfg.track_async || !task) return;
  struct sp_task *k = locked_find(m, task);
  if (k) k->done_at = sp_i_ticks();
}

void sp_task_switch(uint64_t task) { sp_manager_task_switch(SP_DEFAULT, task); }

void sp__tasks_free(struct sp_manager *m) {
  for (uint32_t i = 0; i < m->ntasks; i++) {
    free(m->tasks[i]->stack);
    free(m->tasks[i]->name);
    free(m->tasks[i]->kind);
    free(m->tasks[i]->coro_name);
    free(m->tasks[i]);
  }
  free(m->tasks);
  m->tasks = NULL;
  m->ntasks = m->tasks_cap = 0;
}
