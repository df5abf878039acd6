/* mem_internal.h - what the parts of libscope_profiler_memory.so share: the
 * C library's functions found behind the wrappers, the per-thread state, the
 * buffer blocks and the capture's global state.
 *
 * The library is self-contained: it includes only libc, zstd, libunwind and
 * src/common/memcap.h, never the profiler's internals. Nothing in it calls
 * malloc on its own behalf while a thread is recording: buffers and tables
 * come from mmap, and code that may allocate indirectly (pthread_create,
 * libunwind, zstd, stdio in the writer thread) runs with the calling
 * thread's guard marked internal, so the allocations it makes are passed
 * through unrecorded.
 */
#ifndef SP_MEM_INTERNAL_H
#define SP_MEM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/memcap.h"
#include "scope_profiler/memory.h"

#define MEM_LIKELY(x) __builtin_expect(!!(x), 1)
#define MEM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MEM_TLS __thread __attribute__((tls_model("initial-exec")))
#define MEM_HIDDEN __attribute__((visibility("hidden")))

/*====== The C library behind the wrappers (mem_interpose.c) ======*/

struct mem_real {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  size_t (*usable)(void *);
  void *(*mmap)(void *, size_t, int, int, int, off_t);
  int (*munmap)(void *, size_t);
};
MEM_HIDDEN extern struct mem_real mem__real;

/* Usable size of a block in use. Behind glibc's allocator it is read from
 * the chunk header (its size less the header): glibc's malloc_usable_size
 * also reads the next chunk's header to check the block is in use, a
 * second cache line, which made it most of the capture's cost on programs
 * whose blocks are not in cache. Enabled only after mem__usable_check()
 * found the two agree. */
MEM_HIDDEN extern int mem__usable_fast;
static inline uint64_t mem__usable(void *p) {
  if (MEM_LIKELY(mem__usable_fast)) {
    size_t sz = ((const size_t *)p)[-1];
    return (sz & ~(size_t)7) - ((sz & 2) ? 16 : 8); /* bit 1: an mmapped chunk */
  }
  return mem__real.usable(p);
}
MEM_HIDDEN void mem__usable_check(void);

/* What the wrappers test first. Bit 0: a capture is recording. Bit 1: the
 * bootstrap arena handed out memory, so free/realloc/usable must check for
 * its pointers. Zero (the common case when off) costs one branch. */
#define MEM_HOT_ON 1u
#define MEM_HOT_ARENA 2u
#define MEM_HOT_MMAP 4u /* direct mmap/munmap are recorded */
MEM_HIDDEN extern uint32_t mem__hot;
#define HOT_ON() (__atomic_load_n(&mem__hot, __ATOMIC_RELAXED) & MEM_HOT_ON)

/*====== Per-thread state ======*/

/* guard bits: RECORDING while a wrapper records (an allocation seen then
 * comes from a signal handler that interrupted it, and is deferred);
 * INTERNAL while our own code runs (allocations pass through unrecorded). */
#define MEM_G_RECORDING 1u
#define MEM_G_INTERNAL 2u

struct mem_thread;

struct mem_tls {
  struct sp_memory_counters c; /* first: the probe's view */
  uint32_t guard;
  uint32_t exited; /* our thread-exit destructor ran */
  uint64_t gen;    /* capture generation rec belongs to */
  struct mem_thread *rec;
  uint32_t boot; /* this thread is resolving the C library's symbols */
};
MEM_HIDDEN extern MEM_TLS struct mem_tls mem__tls;

/*====== Buffers ======*/

#define MEM_BLOCK_BYTES (64u * 1024u)
#define MEM_BLOCK_WORDS ((MEM_BLOCK_BYTES - 16u) / 8u)

struct mem_block {
  struct mem_block *next;
  uint32_t thread; /* capture thread index of its events */
  uint32_t nwords;
  uint64_t w[MEM_BLOCK_WORDS];
};

/* Events a signal handler makes while its thread is inside a wrapper wait
 * here until the wrapper finishes (a handler runs to completion on top of
 * the code it interrupted, so the two never interleave otherwise). */
#define MEM_DEFER_WORDS 4096u /* 32 KiB: 682 allocations, 1024 releases */

/* One per thread that allocated during the capture; mapped, never unmapped,
 * reused after its thread exits. Fields below `owner only` are written only
 * by the owning thread while recording; stop() reads them once no thread
 * records. */
struct mem_thread {
  struct mem_thread *next_all; /* list of every record ever made */
  uint64_t gen;                /* capture generation it serves; 0: free */
  uint32_t index;              /* thread index in the capture */
  pid_t tid;
  volatile uint32_t busy;      /* owner is between its on-check and its last store */
  /* owner only */
  struct mem_block *cur;
  volatile uint32_t ndefer;
  uint64_t defer[MEM_DEFER_WORDS];
};

/*====== The capture (mem_capture.c) ======*/

struct mem_capture {
  pthread_mutex_t ctl;  /* start/stop/fork */
  pthread_mutex_t list; /* thread records */
  pthread_mutex_t qlock;
  pthread_cond_t qfull, qspace;
  struct mem_thread *all;
  uint64_t gen; /* current generation; bumped by every start and stop */
  uint32_t next_index;

  /* queue of full blocks and pool of free ones (qlock) */
  struct mem_block *qhead, *qtail, *pool;
  uint32_t nqueued, max_queued;
  uint64_t nblocks, nblocks_peak;
  int stopping, writer_failed;
  uint64_t waits;

  /* options of the running capture */
  char path[4096];   /* as given */
  char file[4096];   /* being written (path, or path.<pid> in a forked child) */
  int native, follow_fork, mmap_on, max_frames, level;
  int fork_child;
  pid_t ppid;
  int fd;
  int tsc;

  pthread_t writer;
  int writer_running;

  /* first and last clock anchors (ticks, CLOCK_MONOTONIC ns) */
  uint64_t clock_t0, clock_t1;
  int64_t clock_n0, clock_n1;

  /* counts */
  uint64_t lost, unattributed, events, allocations, raw_bytes, file_bytes;
};
MEM_HIDDEN extern struct mem_capture mem__cap;

/* Recording, called by the wrappers when MEM_HOT_ON is set. `site` is the
 * wrapper's return address. */
MEM_HIDDEN void mem__on_alloc(void *p, size_t req, unsigned kind, void *site);
MEM_HIDDEN void mem__on_free(void *p, unsigned kind);
/* realloc with its two halves timed around the real call. */
MEM_HIDDEN void *mem__realloc(void *p, size_t n, void *site);
MEM_HIDDEN void mem__on_mmap(void *p, size_t len, void *site);
MEM_HIDDEN void mem__on_munmap(void *p, size_t len);

MEM_HIDDEN uint64_t mem__ticks(void);
MEM_HIDDEN int64_t mem__mono_ns(void);
MEM_HIDDEN int64_t mem__real_ns(void);

/* Memory for our own tables, from mmap (NULL on failure). */
MEM_HIDDEN void *mem__map(size_t bytes);
MEM_HIDDEN void mem__unmap(void *p, size_t bytes);
/* A sp_memcap_buf grow function backed by mem__map. */
MEM_HIDDEN void *mem__buf_grow(void *old, size_t old_cap, size_t new_cap);

/*====== Metadata logs (mem_capture.c): regions and threads, emitted by the writer ======*/
MEM_HIDDEN void mem__meta_lock(void);
MEM_HIDDEN void mem__meta_unlock(void);

/*====== Native stacks (mem_stacks.c) ======*/
/* The stack of the current allocation from its wrapper's caller on, interned;
 * returns its id (1-based), 0 when it could not be taken. */
MEM_HIDDEN uint64_t mem__stack_id(void *site);
MEM_HIDDEN void mem__stacks_reset(void);
MEM_HIDDEN int mem__stacks_available(void); /* built with libunwind */
/* Number of stacks interned; payload of the stacks [from, to) as an STCK record. */
MEM_HIDDEN uint64_t mem__stacks_count(void);
MEM_HIDDEN void mem__stacks_encode(struct sp_memcap_buf *b, uint64_t from, uint64_t to);
MEM_HIDDEN void mem__stacks_atfork_prepare(void);
MEM_HIDDEN void mem__stacks_atfork_parent(void);
MEM_HIDDEN void mem__stacks_atfork_child(void);

/*====== The writer (mem_writer.c) ======*/
MEM_HIDDEN int mem__writer_open(char *err, size_t errlen);  /* file + HEAD + first CLCK */
MEM_HIDDEN int mem__writer_start(char *err, size_t errlen); /* the thread */
/* Ask the writer to finish (after every block is queued) and join it. */
MEM_HIDDEN int mem__writer_finish(char *err, size_t errlen);
MEM_HIDDEN void *mem__writer_main(void *arg);
MEM_HIDDEN void mem__timeline_reset(uint64_t t0);

/* Regions and threads to write: appended by anyone, emitted by the writer. */
MEM_HIDDEN void mem__meta_add_region(uint32_t id, const char *name, size_t len);
MEM_HIDDEN void mem__meta_add_thread(uint32_t index, pid_t tid, const char *name);
MEM_HIDDEN void mem__meta_reset(int keep_regions);
MEM_HIDDEN void mem__meta_rewind(void); /* emit everything again (forked child) */

#endif
