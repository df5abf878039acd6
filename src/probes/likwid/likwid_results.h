/* likwid_results.h - LIKWID counter results per region, as the use_likwid
 * probe collects them (likwid.c) from one of three sources, and the two
 * parsers that read them (likwid_file.c): LIKWID's own marker file, and the
 * stream a child process writes back after reading it through LIKWID's API.
 * Both parsers take any bytes: what does not parse is an error with a
 * message, never a crash or an allocation larger than the input justifies.
 */
#ifndef SP_LIKWID_RESULTS_H
#define SP_LIKWID_RESULTS_H

#include <stddef.h>
#include <stdint.h>

struct sp_likwid_region {
  char *tag;        /* the region's tag, its group id split off */
  int64_t group_id; /* -1 unknown */
  char *group_name; /* "" unknown */
  const char *source; /* "full_api", "marker_file" or "marker_api" (static) */
  uint32_t nthreads, nevents, nmetrics;
  int64_t *cpus;       /* [T] hardware threads, -1 unknown */
  double *times;       /* [T] seconds */
  int64_t *counts;     /* [T] calls */
  double *events;      /* [E][T] raw counter values */
  double *metrics;     /* [M][T] derived metrics */
  char **event_names;  /* [E] */
  char **counter_names; /* [E], or NULL: none known */
  char **metric_names; /* [M] */
};

struct sp_likwid_results {
  struct sp_likwid_region *r;
  size_t n;
};

/* Limits a parsed input must respect. */
#define SP_LIKWID_MAX_THREADS 65536
#define SP_LIKWID_MAX_EVENTS 1024
#define SP_LIKWID_MAX_METRICS 1024

/* LIKWID's marker file (LIKWID_FILEPATH, written by likwid_markerClose):
 *   <threads> <regions> <groups>
 *   <id>:<tag>-<group id>              one per region
 *   <id> <group> <cpu> <count> <time> <nevents> <value>...   one per region and thread
 * The group id is split off the tag from the right (tags may hold '-').
 * Event names are placeholders event_<i>; there are no metrics. `groups`,
 * when not NULL, is LIKWID_EVENTS: the name of group g is its g-th
 * '|'-separated entry. 0, or -1 with a message in err. */
int sp__likwid_parse_marker_file(const char *text, size_t len, const char *groups, struct sp_likwid_results *out,
                                 char *err, size_t errlen);

/* The results as a byte stream (length-prefixed little-endian fields), and
 * back: how the child that reads the marker file through LIKWID's API hands
 * its results to the profiled process. encode: malloc'd buffer or NULL. */
unsigned char *sp__likwid_encode(const struct sp_likwid_results *res, size_t *len);
int sp__likwid_decode(const unsigned char *buf, size_t len, struct sp_likwid_results *out, char *err, size_t errlen);

void sp__likwid_results_free(struct sp_likwid_results *res);
/* A region with n threads, e events, m metrics, zeroed, names empty; 0 or -1. */
int sp__likwid_region_alloc(struct sp_likwid_region *r, uint32_t n, uint32_t e, uint32_t m);

#endif
