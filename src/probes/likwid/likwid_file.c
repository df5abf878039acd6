/* likwid_file.c - parsing LIKWID's marker file, and the byte stream the
 * full-API child writes back (likwid_results.h).
 *
 * The marker file is text LIKWID writes at likwid_markerClose(); a crash, a
 * full disk or another program may leave it truncated or odd, and this
 * parser reads it in the process being profiled, so it trusts nothing: every
 * number is range-checked, every count bounded by what the input's length
 * can hold, every line has to be complete.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/likwid/likwid_results.h"

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

int sp__likwid_region_alloc(struct sp_likwid_region *r, uint32_t n, uint32_t e, uint32_t m) {
  memset(r, 0, sizeof *r);
  r->group_id = -1;
  r->nthreads = n;
  r->nevents = e;
  r->nmetrics = m;
  r->tag = calloc(1, 1);
  r->group_name = calloc(1, 1);
  r->cpus = calloc((size_t)n + 1, sizeof *r->cpus);
  r->times = calloc((size_t)n + 1, sizeof *r->times);
  r->counts = calloc((size_t)n + 1, sizeof *r->counts);
  r->events = calloc((size_t)e * n + 1, sizeof *r->events);
  r->metrics = calloc((size_t)m * n + 1, sizeof *r->metrics);
  r->event_names = calloc((size_t)e + 1, sizeof *r->event_names);
  r->metric_names = calloc((size_t)m + 1, sizeof *r->metric_names);
  if (!r->tag || !r->group_name || !r->cpus || !r->times || !r->counts || !r->events || !r->metrics ||
      !r->event_names || !r->metric_names)
    return -1;
  for (uint32_t t = 0; t < n; t++) r->cpus[t] = -1;
  return 0;
}

static void region_free(struct sp_likwid_region *r) {
  free(r->tag);
  free(r->group_name);
  free(r->cpus);
  free(r->times);
  free(r->counts);
  free(r->events);
  free(r->metrics);
  for (uint32_t i = 0; r->event_names && i < r->nevents; i++) free(r->event_names[i]);
  for (uint32_t i = 0; r->counter_names && i < r->nevents; i++) free(r->counter_names[i]);
  for (uint32_t i = 0; r->metric_names && i < r->nmetrics; i++) free(r->metric_names[i]);
  free(r->event_names);
  free(r->counter_names);
  free(r->metric_names);
  memset(r, 0, sizeof *r);
}

void sp__likwid_results_free(struct sp_likwid_results *res) {
  for (size_t i = 0; res->r && i < res->n; i++) region_free(&res->r[i]);
  free(res->r);
  res->r = NULL;
  res->n = 0;
}

/*====== The marker file ======*/

struct text {
  const char *p, *end;
  size_t lineno;
};

/* The next line without its end (\n or \r\n); 0 at the end of the input. */
static int next_line(struct text *t, const char **line, size_t *len) {
  if (t->p >= t->end) return 0;
  const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
  const char *e = nl ? nl : t->end;
  *line = t->p;
  *len = (size_t)(e - t->p);
  if (*len && (*line)[*len - 1] == '\r') (*len)--;
  t->p = nl ? nl + 1 : t->end;
  t->lineno++;
  return 1;
}

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isspace((unsigned char)s[i])) return 0;
  return 1;
}

/* Whitespace-separated tokens of one line. */
struct toks {
  const char *s, *end;
};
static int token(struct toks *k, char *buf, size_t size) {
  while (k->s < k->end && isspace((unsigned char)*k->s)) k->s++;
  if (k->s >= k->end) return 0;
  const char *b = k->s;
  while (k->s < k->end && !isspace((unsigned char)*k->s)) k->s++;
  size_t n = (size_t)(k->s - b);
  if (n >= size) return -1;
  memcpy(buf, b, n);
  buf[n] = 0;
  return 1;
}
static int tok_i64(struct toks *k, int64_t lo, int64_t hi, int64_t *v) {
  char buf[32], *e;
  if (token(k, buf, sizeof buf) != 1) return -1;
  errno = 0;
  long long x = strtoll(buf, &e, 10);
  if (*e || errno || x < lo || x > hi) return -1;
  *v = x;
  return 0;
}
static int tok_f64(struct toks *k, double *v) {
  char buf[64], *e;
  if (token(k, buf, sizeof buf) != 1) return -1;
  *v = strtod(buf, &e); /* nan, inf, -nan: LIKWID writes them for events that did not count */
  return *e ? -1 : 0;
}

/* "name-<digits>": the group id from the right; -1 when there is none. */
static int64_t split_group(const char *tag, size_t len, size_t *label_len) {
  size_t i = len;
  while (i > 0 && isdigit((unsigned char)tag[i - 1])) i--;
  if (i == len || i <= 1 || tag[i - 1] != '-' || len - i > 9) {
    *label_len = len;
    return -1;
  }
  *label_len = i - 1;
  int64_t g = 0; /* the digits are not NUL-terminated: the tag is a slice of the file */
  for (size_t k = i; k < len; k++) g = g * 10 + (tag[k] - '0');
  return g;
}

/* The g-th '|'-separated entry of LIKWID_EVENTS, or "". */
static char *group_name(const char *groups, int64_t g) {
  if (!groups || g < 0) return dup_n("", 0);
  const char *p = groups;
  for (int64_t i = 0; i < g && p; i++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p) return dup_n("", 0);
  const char *e = strchr(p, '|');
  size_t n = e ? (size_t)(e - p) : strlen(p);
  return dup_n(p, n > 256 ? 256 : n);
}

int sp__likwid_parse_marker_file(const char *text, size_t len, const char *groups, struct sp_likwid_results *out,
                                 char *err, size_t errlen) {
  out->r = NULL;
  out->n = 0;
  struct text t = {text, text + len, 0};
  const char *line;
  size_t ll;
  if (!next_line(&t, &line, &ll))
    return fail(err, errlen, "the marker file is empty (the program ended before likwid_markerClose?)");
  struct toks k = {line, line + ll};
  int64_t nt, nr, ng;
  char extra[8];
  if (tok_i64(&k, 0, SP_LIKWID_MAX_THREADS, &nt) || tok_i64(&k, 0, INT32_MAX, &nr) || tok_i64(&k, 0, INT32_MAX, &ng) ||
      token(&k, extra, sizeof extra) != 0)
    return fail(err, errlen, "line 1 of the marker file is not '<threads> <regions> <groups>'");
  /* Each region needs a line of its own and one per thread: a count the
   * file cannot hold is a damaged file, not an allocation. */
  if ((uint64_t)nr * (1 + (uint64_t)nt) > len)
    return fail(err, errlen, "the marker file announces %lld regions of %lld threads but holds %zu bytes",
                (long long)nr, (long long)nt, len);
  if (nr == 0) return 0;
  if (nt == 0) return fail(err, errlen, "the marker file announces %lld regions but no threads", (long long)nr);
  struct sp_likwid_region *r = calloc((size_t)nr, sizeof *r);
  uint32_t *seen = calloc((size_t)nr, sizeof *seen); /* data lines per region so far */
  unsigned char *named = calloc((size_t)nr, 1);
  int rc = 0;
  if (!r || !seen || !named) {
    rc = fail(err, errlen, "out of memory reading the marker file");
    goto done;
  }
  out->r = r;
  out->n = (size_t)nr;
  for (int64_t i = 0; i < nr; i++) r[i].group_id = -1;
  for (int64_t i = 0; i < nr && rc == 0; i++) {
    if (!next_line(&t, &line, &ll)) {
      rc = fail(err, errlen, "the marker file ends after %lld of its %lld region lines", (long long)i, (long long)nr);
      break;
    }
    const char *colon = memchr(line, ':', ll);
    char idbuf[16];
    size_t idl = colon ? (size_t)(colon - line) : 0;
    char *e;
    long long id = -1;
    if (colon && idl > 0 && idl < sizeof idbuf) {
      memcpy(idbuf, line, idl);
      idbuf[idl] = 0;
      id = strtoll(idbuf, &e, 10);
      if (*e) id = -1;
    }
    if (id < 0 || id >= nr || named[id]) {
      rc = fail(err, errlen, "line %zu of the marker file is not '<id>:<tag>' with a new id below %lld", t.lineno,
                (long long)nr);
      break;
    }
    const char *tag = colon + 1;
    size_t tl = ll - idl - 1, label;
    int64_t gid = split_group(tag, tl, &label);
    named[id] = 1;
    struct sp_likwid_region *x = &r[id];
    x->tag = dup_n(tag, label);
    x->group_id = gid;
    x->group_name = group_name(groups, gid);
    x->source = "marker_file";
    x->nthreads = (uint32_t)nt;
    x->cpus = malloc((size_t)nt * sizeof *x->cpus);
    x->times = calloc((size_t)nt, sizeof *x->times);
    x->counts = calloc((size_t)nt, sizeof *x->counts);
    x->metric_names = calloc(1, sizeof *x->metric_names);
    x->metrics = calloc(1, sizeof *x->metrics);
    if (!x->tag || !x->group_name || !x->cpus || !x->times || !x->counts || !x->metric_names || !x->metrics) {
      rc = fail(err, errlen, "out of memory reading the marker file");
      break;
    }
    for (int64_t c = 0; c < nt; c++) x->cpus[c] = -1;
  }
  /* Data lines: the j-th line of a region is its j-th thread. */
  while (rc == 0 && next_line(&t, &line, &ll)) {
    if (blank(line, ll)) continue;
    k = (struct toks){line, line + ll};
    int64_t rid, gid, cpu, count, nev;
    double time;
    if (tok_i64(&k, 0, nr - 1, &rid) || tok_i64(&k, -1, INT32_MAX, &gid) || tok_i64(&k, -1, INT32_MAX, &cpu) ||
        tok_i64(&k, 0, UINT32_MAX, &count) || tok_f64(&k, &time) || tok_i64(&k, 0, SP_LIKWID_MAX_EVENTS, &nev)) {
      rc = fail(err, errlen,
                "line %zu of the marker file is not '<region> <group> <cpu> <count> <time> <nevents> <values>'",
                t.lineno);
      break;
    }
    struct sp_likwid_region *x = &r[rid];
    if (!named[rid]) {
      rc = fail(err, errlen, "line %zu of the marker file has data for region %lld, which has no name line",
                t.lineno, (long long)rid);
      break;
    }
    if (seen[rid] == x->nthreads) {
      rc = fail(err, errlen, "line %zu of the marker file: region %lld has more than %u thread lines", t.lineno,
                (long long)rid, x->nthreads);
      break;
    }
    if (!x->event_names) { /* the first line sets the region's event count */
      if ((uint64_t)nev * x->nthreads * 2 > len) { /* each value needs at least "0 " */
        rc = fail(err, errlen, "line %zu of the marker file: %lld events for %u threads cannot fit in %zu bytes",
                  t.lineno, (long long)nev, x->nthreads, len);
        break;
      }
      x->nevents = (uint32_t)nev;
      x->events = malloc(((size_t)nev * x->nthreads + 1) * sizeof *x->events);
      x->event_names = calloc((size_t)nev + 1, sizeof *x->event_names);
      if (!x->events || !x->event_names) {
        rc = fail(err, errlen, "out of memory reading the marker file");
        break;
      }
      for (size_t v = 0; v < (size_t)nev * x->nthreads; v++) x->events[v] = NAN;
      for (int64_t v = 0; v < nev && rc == 0; v++) {
        char name[32];
        snprintf(name, sizeof name, "event_%lld", (long long)v);
        if (!(x->event_names[v] = dup_n(name, strlen(name)))) rc = fail(err, errlen, "out of memory");
      }
      if (x->group_id < 0) x->group_id = gid;
    } else if ((uint32_t)nev != x->nevents) {
      rc = fail(err, errlen, "line %zu of the marker file: region %lld had %u events and now %lld", t.lineno,
                (long long)rid, x->nevents, (long long)nev);
      break;
    }
    uint32_t th = seen[rid]++;
    x->cpus[th] = cpu;
    x->counts[th] = count;
    x->times[th] = time;
    for (int64_t v = 0; v < nev && rc == 0; v++)
      if (tok_f64(&k, &x->events[(size_t)v * x->nthreads + th]))
        rc = fail(err, errlen, "line %zu of the marker file has fewer than its %lld values", t.lineno, (long long)nev);
    if (rc == 0 && token(&k, extra, sizeof extra) != 0)
      rc = fail(err, errlen, "line %zu of the marker file has more than its %lld values", t.lineno, (long long)nev);
  }
  /* A region without data lines has no events (LIKWID skips never-stopped
   * regions, so this is rare): keep it, empty. */
  for (int64_t i = 0; rc == 0 && i < nr; i++) {
    if (r[i].event_names) continue;
    r[i].event_names = calloc(1, sizeof *r[i].event_names);
    r[i].events = calloc(1, sizeof *r[i].events);
    if (!r[i].event_names || !r[i].events) rc = fail(err, errlen, "out of memory");
  }
done:
  free(seen);
  free(named);
  if (rc != 0) sp__likwid_results_free(out);
  return rc;
}

/*====== The child's byte stream ======*/

struct wbuf {
  unsigned char *p;
  size_t n, cap;
  int oom;
};

static void put(struct wbuf *w, const void *d, size_t n) {
  if (w->oom) return;
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 4096;
    while (cap < w->n + n) cap *= 2;
    unsigned char *q = realloc(w->p, cap);
    if (!q) {
      w->oom = 1;
      return;
    }
    w->p = q;
    w->cap = cap;
  }
  memcpy(w->p + w->n, d, n);
  w->n += n;
}
static void put_u64(struct wbuf *w, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  put(w, b, 8);
}
static void put_f64(struct wbuf *w, double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  put_u64(w, v);
}
static void put_str(struct wbuf *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  put_u64(w, n);
  put(w, s, n);
}

#define STREAM_MAGIC UINT64_C(0x31776b696c5053) /* "SPlikw1" */

unsigned char *sp__likwid_encode(const struct sp_likwid_results *res, size_t *len) {
  struct wbuf w = {0};
  put_u64(&w, STREAM_MAGIC);
  put_u64(&w, res->n);
  for (size_t i = 0; i < res->n; i++) {
    const struct sp_likwid_region *r = &res->r[i];
    put_str(&w, r->tag);
    put_u64(&w, (uint64_t)r->group_id);
    put_str(&w, r->group_name);
    put_u64(&w, r->nthreads);
    put_u64(&w, r->nevents);
    put_u64(&w, r->nmetrics);
    for (uint32_t t = 0; t < r->nthreads; t++) {
      put_u64(&w, (uint64_t)r->cpus[t]);
      put_f64(&w, r->times[t]);
      put_u64(&w, (uint64_t)r->counts[t]);
    }
    for (uint32_t e = 0; e < r->nevents; e++) {
      put_str(&w, r->event_names[e]);
      put_str(&w, r->counter_names ? r->counter_names[e] : "");
      for (uint32_t t = 0; t < r->nthreads; t++) put_f64(&w, r->events[(size_t)e * r->nthreads + t]);
    }
    for (uint32_t m = 0; m < r->nmetrics; m++) {
      put_str(&w, r->metric_names[m]);
      for (uint32_t t = 0; t < r->nthreads; t++) put_f64(&w, r->metrics[(size_t)m * r->nthreads + t]);
    }
  }
  put_u64(&w, STREAM_MAGIC); /* a complete stream ends as it began */
  if (w.oom) {
    free(w.p);
    return NULL;
  }
  *len = w.n;
  return w.p;
}

struct rbuf {
  const unsigned char *p;
  size_t n, at;
  int bad;
};
static uint64_t get_u64(struct rbuf *r) {
  if (r->bad || r->n - r->at < 8) {
    r->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)r->p[r->at + (size_t)i] << (8 * i);
  r->at += 8;
  return v;
}
static double get_f64(struct rbuf *r) {
  uint64_t v = get_u64(r);
  double d;
  memcpy(&d, &v, 8);
  return d;
}
static char *get_str(struct rbuf *r) {
  uint64_t n = get_u64(r);
  if (r->bad || n > r->n - r->at || n > 4096) {
    r->bad = 1;
    return NULL;
  }
  char *s = dup_n((const char *)r->p + r->at, (size_t)n);
  r->at += (size_t)n;
  if (!s) r->bad = 1;
  return s;
}

int sp__likwid_decode(const unsigned char *buf, size_t len, struct sp_likwid_results *out, char *err, size_t errlen) {
  out->r = NULL;
  out->n = 0;
  struct rbuf r = {buf, len, 0, 0};
  if (get_u64(&r) != STREAM_MAGIC) return fail(err, errlen, "the LIKWID reader's output is not ours (bad magic)");
  uint64_t n = get_u64(&r);
  if (r.bad || n > len / 48) return fail(err, errlen, "the LIKWID reader's output is truncated");
  if (n && !(out->r = calloc((size_t)n, sizeof *out->r))) return fail(err, errlen, "out of memory");
  out->n = (size_t)n;
  for (uint64_t i = 0; i < n && !r.bad; i++) {
    struct sp_likwid_region *x = &out->r[i];
    char *tag = get_str(&r);
    int64_t gid = (int64_t)get_u64(&r);
    char *gname = get_str(&r);
    uint64_t nt = get_u64(&r), ne = get_u64(&r), nm = get_u64(&r);
    /* every thread needs 24 bytes, every value 8: bounded by what is left */
    size_t left = r.n - r.at;
    if (r.bad || nt > SP_LIKWID_MAX_THREADS || ne > SP_LIKWID_MAX_EVENTS || nm > SP_LIKWID_MAX_METRICS ||
        nt * (3 + ne + nm) * 8 > left || sp__likwid_region_alloc(x, (uint32_t)nt, (uint32_t)ne, (uint32_t)nm) != 0) {
      free(tag);
      free(gname);
      r.bad = 1;
      break;
    }
    free(x->tag);
    free(x->group_name);
    x->tag = tag;
    x->group_name = gname;
    x->group_id = gid < -1 ? -1 : gid;
    x->source = "full_api";
    x->counter_names = calloc(ne + 1, sizeof *x->counter_names);
    if (!x->counter_names) r.bad = 1;
    for (uint64_t t = 0; t < nt && !r.bad; t++) {
      x->cpus[t] = (int64_t)get_u64(&r);
      x->times[t] = get_f64(&r);
      x->counts[t] = (int64_t)get_u64(&r);
    }
    for (uint64_t e = 0; e < ne && !r.bad; e++) {
      x->event_names[e] = get_str(&r);
      x->counter_names[e] = get_str(&r);
      for (uint64_t t = 0; t < nt; t++) x->events[e * nt + t] = get_f64(&r);
    }
    for (uint64_t m = 0; m < nm && !r.bad; m++) {
      x->metric_names[m] = get_str(&r);
      for (uint64_t t = 0; t < nt; t++) x->metrics[m * nt + t] = get_f64(&r);
    }
  }
  if (!r.bad && get_u64(&r) != STREAM_MAGIC) r.bad = 1;
  if (r.bad || r.at != r.n) {
    sp__likwid_results_free(out);
    return fail(err, errlen, "the LIKWID reader's output is truncated or damaged");
  }
  return 0;
}
