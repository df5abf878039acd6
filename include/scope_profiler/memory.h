/* scope_profiler/memory.h - allocation capture (libscope_profiler_memory.so).
 *
 * The interposer library wraps malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
 * malloc_usable_size (and, when asked, direct mmap/munmap). Load it with
 * LD_PRELOAD=libscope_profiler_memory.so, or link it before libc
 * (-lscope_profiler_memory). Until a capture starts, its wrappers only call
 * through to the C library after one predictable branch.
 *
 * A capture records every allocation and release (size, address, thread,
 * time, the thread's current region, and the call site or the native stack)
 * into a capture file (docs/memory-capture.md) through per-thread buffers and
 * a background writer, and keeps exact per-thread counters that the memory
 * column probe of libscope_profiler turns into per-region columns. The
 * profiler starts and stops it at setup and finalize when use_memray is on;
 * programs and language bindings may also call the functions below directly.
 *
 * Sizes are what the allocator handed out (malloc_usable_size), on both the
 * allocation and the release, so that allocated - freed is exactly the
 * memory a thread holds; the capture also keeps each requested size.
 *
 * Thread-safety: every function may be called from any thread. start and
 * stop must not run concurrently with each other.
 */
#ifndef SCOPE_PROFILER_MEMORY_H
#define SCOPE_PROFILER_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of struct sp_memory_api below. */
#define SP_MEMORY_ABI 1

/* The calling thread's running counters, updated by every allocation and
 * release the thread makes while a capture is on. Only the owning thread
 * writes them (its signal handlers' allocations are folded in by the
 * interrupted wrapper), so the owner reads them with plain loads. */
struct sp_memory_counters {
  int64_t alloc_bytes; /* usable bytes allocated (a realloc counts its new block) */
  int64_t freed_bytes; /* usable bytes released (a realloc counts its old block) */
  int64_t alloc_count; /* allocations (malloc, calloc, realloc, aligned, mmap, foreign) */
  int64_t live_bytes;  /* alloc_bytes - freed_bytes */
  int64_t peak_bytes;  /* highest live_bytes since the owner last lowered it */
  uint32_t region;     /* the current region id recorded with each event (0: none) */
  uint32_t reserved;
};

typedef struct sp_memory_options {
  uint32_t size;        /* sizeof(sp_memory_options); SP_MEMORY_OPTIONS_INIT sets it */
  const char *path;     /* capture file (created or truncated) */
  int native_traces;    /* record each allocation's native stack (libunwind) */
  int follow_fork;      /* a forked child captures into <path>.<child pid>; else it stops */
  int trace_mmap;       /* also record direct anonymous mmap/munmap calls */
  int max_frames;       /* native stack depth, 1-256 (0: 64) */
  int64_t queue_bytes;  /* bound on full buffers waiting for the writer (0: 8 MiB) */
  int compression_level; /* zstd level 1-19 (0: 3) */
} sp_memory_options;

#define SP_MEMORY_OPTIONS_INIT {sizeof(sp_memory_options), NULL, 0, 0, 0, 0, 0, 0}

typedef struct sp_memory_stats {
  uint64_t events;            /* allocation and release events written */
  uint64_t allocations;       /* of which allocations */
  uint64_t lost_events;       /* events not written (writer failure, no memory) */
  uint64_t unattributed;      /* allocations made in a signal handler while our own code ran */
  uint64_t raw_bytes;         /* event bytes before coding and compression */
  uint64_t file_bytes;        /* bytes of the capture file */
  uint64_t stacks;            /* distinct native stacks stored */
  uint64_t threads;           /* threads that allocated */
  uint64_t buffer_bytes_peak; /* most memory the capture's buffers held at once */
  uint64_t waits;             /* times an allocating thread waited for the writer */
} sp_memory_stats;

/* Starts a capture. Returns 0, or -1 with sp_memory_error() saying why (a
 * capture is already running, the file cannot be created, ...). */
SP_API int sp_memory_start(const sp_memory_options *options);

/* Stops the capture: waits for allocations in flight, writes every buffered
 * event and the closing records, closes the file. Fills *stats when not
 * NULL. Returns 0, -1 with sp_memory_error() when the file could not be
 * completed (the events written so far stay readable). */
SP_API int sp_memory_stop(sp_memory_stats *stats);

/* 1 while a capture is running in this process. */
SP_API int sp_memory_active(void);

/* The calling thread's last error message from start/stop ("" if none). */
SP_API const char *sp_memory_error(void);

/* The calling thread's counters; never NULL, valid for the thread's life. */
SP_API struct sp_memory_counters *sp_memory_thread_counters(void);

/* Names region `id` in the capture (the profiler calls it for every region). */
SP_API void sp_memory_region_name(uint32_t id, const char *name);

/* Memory over time of the last capture, once it is stopped: up to `max`
 * consecutive intervals (at most 1,024, covering the capture), each as its
 * end (CLOCK_MONOTONIC ns) and the net bytes allocated from the start to
 * that end (usable sizes; releases of blocks older than the capture count
 * too, so it can be negative). Returns the number of intervals written. */
SP_API size_t sp_memory_timeline(int64_t *end_ns, int64_t *net_bytes, size_t max);

/* Entry points for allocators the interposer does not see (the Python
 * package hooks PyMem's object and mem domains onto these): an allocation
 * of `size` bytes at p, and its release (size 0 when unknown: the capture
 * still pairs it by address, the per-thread counters cannot). */
SP_API void sp_memory_record_alloc(void *p, size_t size);
SP_API void sp_memory_record_free(void *p, size_t size);

/* Everything above as one versioned table, exported as sp_memory_api_v1: the
 * profiler finds the interposer with one dlsym of that name, so
 * libscope_profiler never needs to be linked with it. */
struct sp_memory_api {
  uint32_t abi;  /* SP_MEMORY_ABI */
  uint32_t size; /* sizeof(struct sp_memory_api) */
  int (*start)(const sp_memory_options *options);
  int (*stop)(sp_memory_stats *stats);
  int (*active)(void);
  const char *(*error)(void);
  struct sp_memory_counters *(*thread_counters)(void);
  void (*region_name)(uint32_t id, const char *name);
  void (*record_alloc)(void *p, size_t size);
  void (*record_free)(void *p, size_t size);
  size_t (*timeline)(int64_t *end_ns, int64_t *net_bytes, size_t max);
};

SP_API extern const struct sp_memory_api sp_memory_api_v1;

#ifdef __cplusplus
}
#endif
#endif
