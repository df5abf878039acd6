/* mem_stacks.c - native stacks of allocations (memray_native_traces),
 * interned so that each distinct stack is stored once.
 *
 * The stack is taken with libunwind's unw_backtrace (its per-thread trace
 * cache makes a repeated stack cheap), cut at the wrapper's caller, hashed,
 * and looked up in a chained hash table without a lock; only a new stack
 * takes the mutex. Nodes come from mapped chunks and are never freed while
 * a capture runs; ids are dense from 1, so the writer emits the stacks it
 * has not written yet as one range.
 */
#include <pthread.h>
#include <string.h>

#ifdef SP_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#include "memory/mem_internal.h"

#define MAX_FRAMES 256
#define NBUCKETS (1u << 16)
#define CHUNK_BYTES (1u << 20)
#define MAX_STACKS (1u << 22) /* ids; the id table is reserved, touched as it fills */

struct node {
  struct node *next;
  uint64_t hash;
  uint32_t id, n;
  uint64_t pc[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node **buckets;
static struct node **by_id; /* by_id[id], id 1..count */
static uint64_t count;
static unsigned char *chunk;
static size_t chunk_used;
static int unw_ready;

static uint64_t hash_frames(const uint64_t *pc, uint32_t n) {
  uint64_t h = 0x9E3779B97F4A7C15u ^ n;
  for (uint32_t i = 0; i < n; i++) {
    h ^= pc[i];
    h *= 0xBF58476D1CE4E5B9u;
    h ^= h >> 31;
  }
  return h;
}

static struct node *find(uint64_t h, const uint64_t *pc, uint32_t n) {
  for (struct node *x = __atomic_load_n(&buckets[h & (NBUCKETS - 1)], __ATOMIC_ACQUIRE); x;
       x = x->next)
    if (x->hash == h && x->n == n && !memcmp(x->pc, pc, n * sizeof *pc)) return x;
  return NULL;
}

static void *node_alloc(size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (!chunk || chunk_used + bytes > CHUNK_BYTES) {
    chunk = mem__map(CHUNK_BYTES);
    chunk_used = 0;
    if (!chunk) return NULL;
  }
  void *p = chunk + chunk_used;
  chunk_used += bytes;
  return p;
}

MEM_HIDDEN uint64_t mem__stack_id(void *site) {
  void *ip[MAX_FRAMES + 8];
  if (!__atomic_load_n(&unw_ready, __ATOMIC_ACQUIRE)) return 0;
  int max = mem__cap.max_frames + 8;
#ifdef SP_HAVE_LIBUNWIND
  int got = unw_backtrace(ip, max);
#else
  int got = 0;
  (void)max;
#endif
  if (got <= 0) return 0;
  /* Start at the wrapper's caller: the frames above it are ours. */
  int first = 0;
  for (int i = 0; i < got; i++)
    if (ip[i] == site) {
      first = i;
      break;
    }
  uint32_t n = (uint32_t)(got - first);
  if (n > (uint32_t)mem__cap.max_frames) n = (uint32_t)mem__cap.max_frames;
  uint64_t pc[MAX_FRAMES + 8];
  for (uint32_t i = 0; i < n; i++) pc[i] = (uintptr_t)ip[first + i];
  uint64_t h = hash_frames(pc, n);
  struct node *x = find(h, pc, n);
  if (x) return x->id;
  pthread_mutex_lock(&lock);
  x = find(h, pc, n);
  if (!x && count + 1 < MAX_STACKS) {
    x = node_alloc(sizeof *x + n * sizeof *pc);
    if (x) {
      x->hash = h;
      x->n = n;
      memcpy(x->pc, pc, n * sizeof *pc);
      x->id = (uint32_t)(count + 1);
      by_id[x->id] = x;
      struct node **b = &buckets[h & (NBUCKETS - 1)];
      x->next = *b;
      __atomic_store_n(b, x, __ATOMIC_RELEASE);
      __atomic_store_n(&count, count + 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&lock);
  return x ? x->id : 0;
}

/* A fresh table for a new capture (old stacks are not referenced any more). */
MEM_HIDDEN void mem__stacks_reset(void) {
  pthread_mutex_lock(&lock);
  if (!buckets) buckets = mem__map(NBUCKETS * sizeof *buckets);
  if (!by_id) by_id = mem__map((size_t)MAX_STACKS * sizeof *by_id);
  if (buckets) memset(buckets, 0, NBUCKETS * sizeof *buckets);
  count = 0;
  /* Chunks of the previous capture are dropped, not reused: a lock-free
   * reader of the old table may still be walking one. */
  chunk = NULL;
  chunk_used = 0;
  if (mem__cap.native && buckets && by_id && !unw_ready) {
#ifdef SP_HAVE_LIBUNWIND
    /* Per-thread caches: the global one takes a lock and blocks signals. */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    __atomic_store_n(&unw_ready, 1, __ATOMIC_RELEASE);
#endif
  }
  pthread_mutex_unlock(&lock);
}

MEM_HIDDEN int mem__stacks_available(void) {
#ifdef SP_HAVE_LIBUNWIND
  return 1;
#else
  return 0;
#endif
}

MEM_HIDDEN uint64_t mem__stacks_count(void) { return __atomic_load_n(&count, __ATOMIC_ACQUIRE); }

/* STCK payload: count, then per stack its id, frame count and frames (each
 * as a zigzag delta from the previous frame). */
MEM_HIDDEN void mem__stacks_encode(struct sp_memcap_buf *b, uint64_t from, uint64_t to) {
  sp__memcap_put_varint(b, to - from);
  for (uint64_t id = from + 1; id <= to; id++) {
    const struct node *x = by_id[id];
    sp__memcap_put_varint(b, id);
    sp__memcap_put_varint(b, x->n);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < x->n; i++) {
      sp__memcap_put_zigzag(b, (int64_t)(x->pc[i] - prev));
      prev = x->pc[i];
    }
  }
}

MEM_HIDDEN void mem__stacks_atfork_prepare(void) { pthread_mutex_lock(&lock); }
MEM_HIDDEN void mem__stacks_atfork_parent(void) { pthread_mutex_unlock(&lock); }
MEM_HIDDEN void mem__stacks_atfork_child(void) { pthread_mutex_init(&lock, NULL); }
