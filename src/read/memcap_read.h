/* memcap_read.h - reading allocation capture files (docs/memory-capture.md):
 * open and validate one, iterate its events in time order across threads,
 * and analyse it (totals, peak, regions, sites at the peak, leaks, memory
 * over time). Used by `scope-profiler memory`; includes nothing of the
 * writer's (the format is the contract; src/common/memcap.h spells it).
 *
 * A capture is validated entirely at open (every record's length, checksum,
 * compression and content), so a hostile file is refused before any
 * analysis. A file that ends inside a record (a program that died before
 * stopping its capture) opens with the records before the cut and
 * `truncated` set.
 */
#ifndef SP_READ_MEMCAP_READ_H
#define SP_READ_MEMCAP_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/memcap.h"
#include "common/symbolize.h"
#include "scope_profiler/status.h"

struct sp_memcap_region {
  uint32_t id;
  char *name;
};
struct sp_memcap_thread {
  uint32_t index;
  uint64_t tid;
  char *name;
};
struct sp_memcap_map {
  uint64_t lo, hi, off;
  int exec;
  char *path;
};
struct sp_memcap_stack {
  uint32_t n;
  uint64_t *pc; /* innermost first: pc[0] is the allocation's call site */
};
struct sp_memcap_chunk {
  uint64_t offset; /* of the payload */
  uint32_t stored, raw;
  uint8_t codec;
  uint32_t thread;
  uint64_t nevents;
};

typedef struct sp_memcap {
  char *path;
  unsigned version, flags;
  uint64_t pid, ppid, page_size, max_frames;
  int64_t start_mono_ns, start_real_ns;
  char *program;
  struct sp_memcap_clock {
    uint64_t tick;
    int64_t ns;
  } *clocks;
  size_t nclocks;
  struct sp_memcap_region *regions; /* sorted by id */
  size_t nregions;
  struct sp_memcap_thread *threads;
  size_t nthreads;
  struct sp_memcap_map *maps;
  size_t nmaps;
  struct sp_memcap_stack *stacks; /* stacks[id - 1] */
  size_t nstacks;
  struct sp_memcap_chunk *chunks; /* file order */
  size_t nchunks;
  uint64_t nevents;
  uint64_t tick_min, tick_max;
  int complete;  /* the STAT record is there: the capture was stopped */
  int truncated; /* the file ends inside a record */
  uint64_t truncated_at;
  struct {
    uint64_t events, allocations, lost, unattributed, buffer_peak, waits;
  } stat;
  FILE *f;
} sp_memcap;

/* Opens and validates a capture. SP_ERR_FORMAT (with sp_last_error()
 * naming the record and offset) for anything that is not a well-formed
 * capture, SP_ERR_IO when it cannot be read. */
sp_status sp__memcap_open(const char *path, sp_memcap **out);
void sp__memcap_close(sp_memcap *c);

/* Ticks of the capture to CLOCK_MONOTONIC nanoseconds. */
int64_t sp__memcap_ns(const sp_memcap *c, uint64_t tick);
/* A region's name, or NULL when the capture does not name it. */
const char *sp__memcap_region_name(const sp_memcap *c, uint32_t id);

/* Events of every thread merged in time order (a release before an
 * allocation at the same tick). */
struct sp_memcap_iter;
sp_status sp__memcap_iter_new(sp_memcap *c, struct sp_memcap_iter **out);
/* 1 and *e, *thread filled; 0 at the end; a negative status on a read error. */
int sp__memcap_iter_next(struct sp_memcap_iter *it, struct sp_memcap_event *e, uint32_t *thread);
void sp__memcap_iter_free(struct sp_memcap_iter *it);

/* A symboliser loaded with the modules the capture's mappings name
 * (common/symbolize.h); NULL when out of memory. */
sp_symbolizer *sp__memcap_symbolizer(const sp_memcap *c);
/* The call site (innermost frame) of a site key; 0 when unknown. */
uint64_t sp__memcap_site_pc(const sp_memcap *c, uint64_t key);

/*====== Analysis (read_memstats.c) ======*/

/* Live memory grouped by site: the allocation's return address, or its
 * native stack id when the capture has native traces. */
struct sp_memcap_site {
  uint64_t key;
  uint32_t region; /* region of the group's first allocation */
  uint64_t bytes, requested, count;
};

struct sp_memcap_region_stat {
  uint32_t id;
  uint64_t alloc_bytes, alloc_count, requested_bytes;
  uint64_t freed_bytes, free_count; /* releases made while the region was current */
  uint64_t peak_bytes;              /* allocated in it and live at the process peak */
  uint64_t end_bytes, end_count;    /* allocated in it and never released */
};

struct sp_memcap_point {
  int64_t ns;
  uint64_t bytes; /* highest live bytes in the interval ending at ns */
};

typedef struct sp_memcap_stats {
  uint64_t events, allocations, frees;
  uint64_t alloc_bytes, requested_bytes, freed_bytes;
  uint64_t peak_bytes, peak_count; /* live bytes and allocations at the peak */
  int64_t peak_ns, first_ns, last_ns;
  uint64_t end_bytes, end_count; /* never released */
  uint64_t unmatched_frees, unmatched_free_bytes; /* releases of blocks not seen allocated */
  uint64_t replaced; /* allocations at an address still live (a release was not seen) */
  struct sp_memcap_region_stat *regions; /* by alloc_bytes, largest first */
  size_t nregions;
  struct sp_memcap_site *peak_sites, *leaks; /* by bytes, largest first */
  size_t npeak_sites, nleaks;
  struct sp_memcap_point *timeline;
  size_t ntimeline;
} sp_memcap_stats;

/* Two passes over the events: totals and the peak, then the live set at
 * the peak. `points`: length of the memory-over-time series (0: none). */
sp_status sp__memcap_analyze(sp_memcap *c, size_t points, sp_memcap_stats *out);
void sp__memcap_stats_free(sp_memcap_stats *s);

/*====== A profile's memory figures (read_memgroup.c) ======*/

/* use_memray's rank<N>/memory groups of a profile (docs/file-format.md). */
struct sp_memory_row {
  char *region;
  int64_t rank, calls, alloc_bytes, freed_bytes, alloc_count, peak_bytes;
};
struct sp_memory_timeline {
  int64_t rank;
  int64_t *end_ns, *net_bytes;
  size_t n;
};
struct sp_memory_table {
  struct sp_memory_row *rows; /* every rank's, rank by rank */
  size_t n;
  struct sp_memory_timeline *timelines;
  size_t ntimelines;
};
struct sp_results;
/* Every rank's memory group (none: an empty table). SP_ERR_FORMAT when one
 * is malformed. */
sp_status sp__results_memory(struct sp_results *r, struct sp_memory_table *out);
void sp__memory_table_free(struct sp_memory_table *t);

#endif
