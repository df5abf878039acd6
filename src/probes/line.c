/* line.c - use_line_profiler: line-level profiles by sampling, as a source
 * extension.
 *
 * Every thread that records on the manager is armed at its first call
 * (thread_attach) with its own CPU-time sampling clock (line_sampler.c);
 * the handler tags each program-counter sample with the thread's innermost
 * open region, read through the core's async-signal-safe accessor. Samples
 * taken with no region open are counted, not kept. At finalize the samples
 * are drained (before_snapshot) and mapped to function, file and line
 * through DWARF (common/symbolize.c), giving upstream's line_profiler
 * records: rank<N>/line_profile/<i>, one per (region, function), with the
 * region, file, function, first line and time unit as attributes and the
 * datasets line_numbers, hits and times (ns; unit 1e-9 s). Hits are
 * samples; times are the CPU time those samples stand for, which is self
 * time at the line (a call line does not include its callee, unlike
 * Python's line_profiler).
 *
 * What is attributed where: a sample in code inlined from another function
 * counts at the line of the inlined function, in a record for that function
 * whose `inlined_into` attribute lists the functions and call lines it was
 * inlined at. A sample in code without line information counts at line 0 of
 * a record named by the ELF symbol ("??" when none) whose `module` attribute
 * names the object and whose `addresses` dataset holds each row's address
 * in it (the symbol's start, or the sample's own address without a symbol).
 * The source text of each function's lines goes in `source` (with
 * `source_first_lineno`) when the file is readable at finalize, so the file
 * can be read where the sources are not.
 *
 * A thread with no region open of its own that works in an OpenMP parallel
 * region (or on an adopted sp_context) has its samples counted for the region
 * that opened it (sp_ext_sample_region); the threads of the run's OpenMP
 * teams are sampled from their first parallel region on (SP_EXT_THREADS).
 * Under `scope-profiler run`, samples of a thread with neither count for the
 * whole-program root region (sp_ext_run_root), and every thread the program
 * starts is sampled (src/core/run_threads.c), so a program without regions
 * gets the lines of the whole run.
 *
 * Records made elsewhere (the Python package's line timer) come in through
 * sp_manager_add_line_records() (scope_profiler/lines.h, beside the
 * records' type): copied into the extension's state and written by the next
 * finalize after the sampled ones, in the same rank<N>/line_profile/<i>
 * sequence. The run keeps this extension (without sampling) when the
 * sampler cannot start, so those records are not lost with it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/symbolize.h"
#include "config/config_internal.h"
#include "probes/ext.h"
#include "probes/line_sampler.h"
#include "scope_profiler.h"

#define MAX_SOURCE_LINES 4000 /* longer functions are stored without source */

/* A record handed in by sp_manager_add_line_records, copied. */
struct foreign {
  char *region, *filename, *function, *module, *source;
  int64_t first_lineno, source_first_lineno;
  double unit;
  size_t n;
  int64_t *lines, *hits;
  double *times;
};

struct line_state {
  struct sp_manager *m;
  void **slot;  /* the extension's slot on the manager: points here while set up */
  int sampling; /* the sampler started for this run, as user `user` */
  int user;
  const char *backend; /* the clock its threads got (metadata), kept past the stop */
  struct sp_lp_entry *e; /* drained samples of the run being finalized */
  size_t n;
  struct sp_lp_stats stats;
  int rate;
  struct foreign *fr; /* under foreign_lock */
  size_t nfr, capfr;
};

/* Guards the slots' pointers and the foreign records against a setup or
 * teardown on another thread. */
static pthread_mutex_t foreign_lock = PTHREAD_MUTEX_INITIALIZER;

/* One row: a line (or an address without line information). */
struct row {
  int64_t line;
  uint64_t addr;
  int64_t hits;
  double ns; /* in the record's unit */
};

struct record {
  uint32_t region;
  const char *region_name; /* a foreign record's; NULL: the region's */
  double unit;             /* seconds per unit of the rows' times */
  const char *source;      /* a foreign record's own source text, or NULL */
  int64_t source_first;
  const char *function, *file, *module;
  int first_lineno;
  int has_lines;
  struct row *rows;
  size_t nrows, cap;
  double total;
  char **callers; /* "caller (file:line)" for inlined code */
  size_t ncallers;
};

/* The thread's innermost open region; with none, the region that opened
 * the OpenMP parallel region the thread works in, or else the root of a
 * `scope-profiler run` session (0 otherwise: the sample is only counted). */
static uint32_t current_region(void *ctx) { return sp_ext_sample_region(ctx); }

static int line_wanted(const struct sp_config *cfg) { return cfg->use_line_profiler && !cfg->aggregation_mode; }

static enum sp_lp_backend backend_of(enum sp__line_profile_sampler s) {
  switch (s) {
  case SP__LINE_SAMPLER_PERF: return SP_LP_PERF;
  case SP__LINE_SAMPLER_TIMER: return SP_LP_TIMER;
  case SP__LINE_SAMPLER_AUTO: break;
  }
  return SP_LP_AUTO;
}

static void free_foreign(struct line_state *st) {
  for (size_t i = 0; i < st->nfr; i++) {
    struct foreign *f = &st->fr[i];
    free(f->region), free(f->filename), free(f->function), free(f->module), free(f->source);
    free(f->lines), free(f->hits), free(f->times);
  }
  free(st->fr);
  st->fr = NULL;
  st->nfr = st->capfr = 0;
}

static sp_status line_setup(struct sp_ext_setup *s, void **proc) {
  struct line_state *st = calloc(1, sizeof *st);
  if (!st) return sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory");
  st->m = s->manager;
  st->slot = s->user;
  st->rate = (int)s->cfg->line_profile_rate;
  struct sp_lp_params p = {.rate_hz = st->rate,
                           .backend = backend_of(s->cfg->line_profile_sampler),
                           .current_region = current_region,
                           .ctx = s->manager};
  if (sp__lp_start(&p, &st->user) == SP_OK) {
    st->sampling = 1;
  } else {
    /* The run goes on without line samples (records handed in through
     * sp_manager_add_line_records are still written); say why once. */
    sp_ext_warn(s->manager, "use_line_profiler: native code lines are not sampled in this run: %s",
                sp_last_error());
  }
  if (st->slot) {
    pthread_mutex_lock(&foreign_lock);
    *st->slot = st;
    pthread_mutex_unlock(&foreign_lock);
  }
  *proc = st;
  return SP_OK;
}

static void line_teardown(void *proc) {
  struct line_state *st = proc;
  if (st->sampling) sp__lp_stop(st->user);
  pthread_mutex_lock(&foreign_lock);
  if (st->slot && *st->slot == st) *st->slot = NULL;
  free_foreign(st);
  pthread_mutex_unlock(&foreign_lock);
  free(st->e);
  free(st);
}

static int line_region_added(void *proc, uint32_t id, const struct sp_ext_region *r) {
  (void)proc;
  (void)id;
  (void)r;
  return 0; /* no per-call hooks: every region stays on the inlined path */
}

static int line_attach(void *proc, const struct sp_ext_thread *th, void **thr) {
  struct line_state *st = proc;
  (void)th;
  *thr = NULL;
  /* A thread neither clock can sample is counted (arm_failures) and runs
   * without samples; it still records its calls. */
  if (st->sampling) (void)sp__lp_thread_arm(st->user);
  return 0;
}

static int cmp_entry(const void *a, const void *b) {
  const struct sp_lp_entry *x = a, *y = b;
  if (x->region != y->region) return x->region < y->region ? -1 : 1;
  return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The samples drained now joined to those an earlier finalize of the same
 * run drained (a kept run's retry): sorted by (region, pc) with equal
 * pairs merged, as one collect gives them (emit_sampled looks back within
 * a region). 0, or -1 with both left as they were. */
static int join_entries(struct line_state *st, struct sp_lp_entry *e, size_t n) {
  if (!st->n) {
    free(st->e);
    st->e = e;
    st->n = n;
    return 0;
  }
  struct sp_lp_entry *all = realloc(st->e, (st->n + n) * sizeof *all);
  if (!all) return -1;
  if (n) memcpy(all + st->n, e, n * sizeof *e);
  free(e);
  size_t m = st->n + n, w = 0;
  qsort(all, m, sizeof *all, cmp_entry);
  for (size_t i = 0; i < m; i++) {
    if (w && all[w - 1].region == all[i].region && all[w - 1].pc == all[i].pc) {
      all[w - 1].hits += all[i].hits;
      all[w - 1].ns += all[i].ns;
    } else {
      all[w++] = all[i];
    }
  }
  st->e = all;
  st->n = w;
  return 0;
}

static void line_before_snapshot(void *proc) {
  struct line_state *st = proc;
  if (!st->sampling) return;
  /* The sampler goes on until the run is written (line_written): a kept
   * run (its file could not be written, ext.h emit) records on, and its
   * retry drains the samples taken since and adds them to those the failed
   * finalize drained, which are still here. */
  struct sp_lp_entry *e = NULL;
  size_t n = 0;
  struct sp_lp_stats now;
  if (sp__lp_collect(st->user, &e, &n, &now, 1) != 0) return;
  if (join_entries(st, e, n) != 0) {
    free(e);
    now.dropped += now.samples; /* (no memory to keep them) */
    now.samples = 0;
  }
  st->stats.samples += now.samples;
  st->stats.outside += now.outside;
  st->stats.dropped += now.dropped;
  st->stats.dropped_ns += now.dropped_ns;
  if (now.max_ns > st->stats.max_ns) st->stats.max_ns = now.max_ns;
  st->stats.threads_perf = now.threads_perf; /* (the user's own counts, whole-run already) */
  st->stats.threads_timer = now.threads_timer;
  st->stats.arm_failures = now.arm_failures;
}

/*====== Records ======*/

static struct record *find_record(struct record **recs, size_t *n, size_t *cap, uint32_t region, const char *fn,
                                  const char *file, const char *module, int has_lines) {
  for (size_t i = *n; i-- > 0;) { /* entries come sorted by region: look back */
    struct record *r = &(*recs)[i];
    if (r->region != region) break;
    if (r->has_lines == has_lines && !strcmp(r->function, fn) && !strcmp(r->file, file) &&
        !strcmp(r->module, module))
      return r;
  }
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 16;
    struct record *nr = realloc(*recs, ncap * sizeof *nr);
    if (!nr) return NULL;
    *recs = nr;
    *cap = ncap;
  }
  struct record *r = &(*recs)[(*n)++];
  memset(r, 0, sizeof *r);
  r->region = region;
  r->function = fn;
  r->file = file;
  r->module = module;
  r->has_lines = has_lines;
  r->unit = 1e-9;
  return r;
}

static int add_row(struct record *r, int64_t line, uint64_t addr, uint64_t hits, uint64_t ns) {
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i].line == line && r->rows[i].addr == addr) {
      r->rows[i].hits += (int64_t)hits;
      r->rows[i].ns += (double)ns;
      r->total += (double)ns;
      return 0;
    }
  if (r->nrows == r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 8;
    struct row *nr = realloc(r->rows, ncap * sizeof *nr);
    if (!nr) return -1;
    r->rows = nr;
    r->cap = ncap;
  }
  r->rows[r->nrows++] = (struct row){line, addr, (int64_t)hits, (double)ns};
  r->total += (double)ns;
  return 0;
}

static int add_caller(struct record *r, const struct sp_sym_frame *caller) {
  const char *f = caller->file ? strrchr(caller->file, '/') : NULL;
  f = f ? f + 1 : caller->file ? caller->file : "??";
  char *c = sp__asprintf("%s (%s:%d)", caller->function, f, caller->line);
  if (!c) return -1;
  for (size_t i = 0; i < r->ncallers; i++)
    if (!strcmp(r->callers[i], c)) {
      free(c);
      return 0;
    }
  char **nc = realloc(r->callers, (r->ncallers + 1) * sizeof *nc);
  if (!nc) {
    free(c);
    return -1;
  }
  r->callers = nc;
  r->callers[r->ncallers++] = c;
  return 0;
}

static int cmp_row(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  if (x->line != y->line) return x->line < y->line ? -1 : 1;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Region name first, then the most time first. */
static int cmp_record(const void *a, const void *b) {
  const struct record *x = a, *y = b;
  if (x->region != y->region) {
    const char *nx = sp_region_name(x->region), *ny = sp_region_name(y->region);
    int c = strcmp(nx ? nx : "", ny ? ny : "");
    if (c) return c;
    return x->region < y->region ? -1 : 1;
  }
  if (x->total != y->total) return x->total > y->total ? -1 : 1;
  return strcmp(x->function, y->function);
}

/* Lines [first, last] of `path`; malloc'd, NULL when unreadable or short. */
static char *read_lines(const char *path, int first, int last) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return NULL;
  size_t len = 0, cap = 4096;
  char *out = malloc(cap), line[4096];
  int no = 0;
  while (out && fgets(line, sizeof line, f)) {
    size_t l = strlen(line);
    if (l && line[l - 1] == '\n') no++;
    else if (!feof(f)) continue; /* the rest of an over-long line */
    else no++;
    if (no < first) continue;
    if (no > last) break;
    if (len + l + 2 > cap) {
      char *n = realloc(out, cap * 2 + l);
      if (!n) {
        free(out);
        out = NULL;
        break;
      }
      out = n;
      cap = cap * 2 + l;
    }
    memcpy(out + len, line, l);
    len += l;
    if (!l || line[l - 1] != '\n') out[len++] = '\n';
  }
  fclose(f);
  if (out && no < last) { /* the file is not the one compiled: no source */
    free(out);
    return NULL;
  }
  if (out) out[len] = 0;
  return out;
}

static int emit_record(struct sp_ext_emit *out, size_t index, const struct record *r) {
  char path[64];
  snprintf(path, sizeof path, "line_profile/%zu", index);
  struct sp_ext_group *g = sp_ext_group(out, path);
  if (!g) return -1;
  const char *region = r->region_name ? r->region_name : sp_region_name(r->region);
  size_t n = r->nrows;
  int64_t *lines = malloc((n + 1) * sizeof *lines), *hits = malloc((n + 1) * sizeof *hits);
  double *times = malloc((n + 1) * sizeof *times);
  uint64_t *addrs = malloc((n + 1) * sizeof *addrs);
  int rc = !lines || !hits || !times || !addrs ? -1 : 0;
  int64_t samples = 0, lo = r->first_lineno, hi = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    lines[i] = r->rows[i].line;
    hits[i] = r->rows[i].hits;
    times[i] = r->rows[i].ns;
    addrs[i] = r->rows[i].addr;
    samples += hits[i];
    if (lines[i] > 0 && (lo <= 0 || lines[i] < lo)) lo = lines[i];
    if (lines[i] > hi) hi = lines[i];
  }
  uint64_t dims[1] = {n};
  if (rc == 0)
    rc = sp_ext_group_attr_str(g, "region", region ? region : "") ||
         sp_ext_group_attr_str(g, "filename", r->file) || sp_ext_group_attr_str(g, "function", r->function) ||
         sp_ext_group_attr_i64(g, "first_lineno", r->first_lineno) || sp_ext_group_attr_f64(g, "unit", r->unit) ||
         (r->region_name ? 0 : sp_ext_group_attr_i64(g, "samples", samples)) ||
         (r->module ? sp_ext_group_attr_str(g, "module", r->module) : 0) ||
         sp_ext_group_dset(g, "line_numbers", SP_EXT_I64, 1, dims, lines) ||
         sp_ext_group_dset(g, "hits", SP_EXT_I64, 1, dims, hits) ||
         sp_ext_group_dset(g, "times", SP_EXT_F64, 1, dims, times);
  if (rc == 0 && !r->has_lines) rc = sp_ext_group_dset(g, "addresses", SP_EXT_U64, 1, dims, addrs);
  if (rc == 0 && r->ncallers)
    rc = sp_ext_group_attr_strlist(g, "inlined_into", (const char *const *)r->callers, r->ncallers);
  if (rc == 0 && r->source) {
    rc = sp_ext_group_attr_str(g, "source", r->source) ||
         sp_ext_group_attr_i64(g, "source_first_lineno", r->source_first);
  } else if (rc == 0 && r->has_lines && lo > 0 && hi >= lo && hi - lo < MAX_SOURCE_LINES) {
    char *src = read_lines(r->file, (int)lo, (int)hi);
    if (src)
      rc = sp_ext_group_attr_str(g, "source", src) || sp_ext_group_attr_i64(g, "source_first_lineno", lo);
    free(src);
  }
  free(lines);
  free(hits);
  free(times);
  free(addrs);
  return rc;
}

static void free_records(struct record *recs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(recs[i].rows);
    for (size_t k = 0; k < recs[i].ncallers; k++) free(recs[i].callers[k]);
    free(recs[i].callers);
  }
  free(recs);
}

/* The sampled records, symbolised: rank<N>/line_profile/0..*emitted-1. */
static sp_status emit_sampled(struct line_state *st, struct sp_ext_emit *out, size_t *emitted) {
  sp_symbolizer *sym = sp__sym_new();
  if (!sym) return sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory");
  sp__sym_add_self(sym);
  struct record *recs = NULL;
  size_t nrec = 0, cap = 0;
  int rc = 0;
  for (size_t i = 0; i < st->n && rc == 0; i++) {
    const struct sp_lp_entry *e = &st->e[i];
    struct sp_sym s;
    sp__sym_lookup(sym, e->pc, &s);
    const char *module = s.module ? s.module : "??";
    struct record *r;
    if (s.nframes > 0) {
      const struct sp_sym_frame *fr = &s.frames[0];
      r = find_record(&recs, &nrec, &cap, e->region, fr->function, fr->file ? fr->file : "??", module, 1);
      if (!r || add_row(r, fr->line, 0, e->hits, e->ns) || (s.nframes > 1 && add_caller(r, &s.frames[1])))
        rc = -1;
      else if (fr->decl_line && (!r->first_lineno || fr->decl_line < r->first_lineno))
        r->first_lineno = fr->decl_line;
    } else {
      uint64_t addr = s.symbol ? s.module_offset - s.symbol_offset : s.module_offset ? s.module_offset : e->pc;
      r = find_record(&recs, &nrec, &cap, e->region, s.symbol ? s.symbol : "??", module, module, 0);
      if (!r || add_row(r, 0, addr, e->hits, e->ns)) rc = -1;
    }
  }
  if (rc == 0) {
    qsort(recs, nrec, sizeof *recs, cmp_record);
    for (size_t i = 0; i < nrec && rc == 0; i++) {
      qsort(recs[i].rows, recs[i].nrows, sizeof *recs[i].rows, cmp_row);
      rc = emit_record(out, i, &recs[i]);
    }
  }
  free_records(recs, nrec);
  sp__sym_free(sym); /* the records' strings pointed into it: emitted copies remain */
  *emitted = nrec;
  return rc ? sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory building the records") : SP_OK;
}


/* The records handed in, after the sampled ones (dropped once written). */
static sp_status emit_foreign(struct line_state *st, struct sp_ext_emit *out, size_t first) {
  pthread_mutex_lock(&foreign_lock);
  int rc = 0;
  for (size_t i = 0; i < st->nfr && rc == 0; i++) {
    const struct foreign *f = &st->fr[i];
    struct record r;
    memset(&r, 0, sizeof r);
    r.region_name = f->region;
    r.unit = f->unit;
    r.function = f->function;
    r.file = f->filename;
    r.module = f->module;
    r.first_lineno = (int)f->first_lineno;
    r.has_lines = 1;
    r.source = f->source;
    r.source_first = f->source_first_lineno;
    if (f->n && !(r.rows = malloc(f->n * sizeof *r.rows))) {
      rc = -1;
      break;
    }
    for (size_t k = 0; k < f->n; k++) r.rows[k] = (struct row){f->lines[k], 0, f->hits[k], f->times[k]};
    r.nrows = f->n;
    rc = emit_record(out, first + i, &r);
    free(r.rows);
  }
  pthread_mutex_unlock(&foreign_lock);
  return rc ? sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory writing the records handed in") : SP_OK;
}

/*====== Records made elsewhere ======*/

static char *dup_or_null(const char *s) { return s ? sp__strdup(s) : NULL; }

sp_status sp_manager_add_line_records(struct sp_manager *m, const sp_line_profile *recs, size_t n) {
  if (!m || (n && !recs))
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_add_line_records: NULL manager or records");
  for (size_t i = 0; i < n; i++) {
    const sp_line_profile *p = &recs[i];
    if (!p->function || !*p->function || !p->filename || !*p->filename)
      return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_add_line_records: record %zu has no %s; give "
                           "the function's name and its file", i, !p->function || !*p->function ? "function" : "filename");
    if (p->n && (!p->line_numbers || !p->hits || !p->times))
      return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_add_line_records: record %zu (%s) has %zu rows "
                           "but no line_numbers, hits or times", i, p->function, p->n);
    if (!(p->unit > 0))
      return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_manager_add_line_records: record %zu (%s) has unit %g; "
                           "give the seconds per unit of `times` (1e-9 for nanoseconds)", i, p->function, p->unit);
  }
  void **slot = sp__ext_user_slot(m, "line_profiler");
  if (!slot) return sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_add_line_records: out of memory");
  pthread_mutex_lock(&foreign_lock);
  struct line_state *st = *slot;
  sp_status rc = SP_OK;
  if (!st) {
    rc = sp__set_error(SP_ERR_INACTIVE, "sp_manager_add_line_records: the manager has no run with "
                       "use_line_profiler on; set it up with use_line_profiler = true first");
  } else if (st->nfr + n > st->capfr) {
    size_t ncap = st->capfr ? st->capfr : 8;
    while (ncap < st->nfr + n) ncap *= 2;
    struct foreign *nf = realloc(st->fr, ncap * sizeof *nf);
    if (nf) {
      st->fr = nf;
      st->capfr = ncap;
    } else {
      rc = sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_add_line_records: out of memory");
    }
  }
  for (size_t i = 0; rc == SP_OK && i < n; i++) {
    const sp_line_profile *p = &recs[i];
    struct foreign *f = &st->fr[st->nfr];
    memset(f, 0, sizeof *f);
    f->region = dup_or_null(p->region ? p->region : "");
    f->filename = dup_or_null(p->filename);
    f->function = dup_or_null(p->function);
    f->module = dup_or_null(p->module);
    f->source = dup_or_null(p->source);
    f->first_lineno = p->first_lineno;
    f->source_first_lineno = p->source_first_lineno;
    f->unit = p->unit;
    f->n = p->n;
    size_t rows = p->n ? p->n : 1;
    f->lines = malloc(rows * sizeof *f->lines);
    f->hits = malloc(rows * sizeof *f->hits);
    f->times = malloc(rows * sizeof *f->times);
    st->nfr++; /* freed with the others even when incomplete */
    if (!f->region || !f->filename || !f->function || (p->module && !f->module) || (p->source && !f->source) ||
        !f->lines || !f->hits || !f->times) {
      rc = sp__set_error(SP_ERR_NO_MEMORY, "sp_manager_add_line_records: out of memory");
      break;
    }
    if (p->n) {
      memcpy(f->lines, p->line_numbers, p->n * sizeof *f->lines);
      memcpy(f->hits, p->hits, p->n * sizeof *f->hits);
      memcpy(f->times, p->times, p->n * sizeof *f->times);
    }
  }
  pthread_mutex_unlock(&foreign_lock);
  return rc;
}

static sp_status line_emit(void *proc, struct sp_ext_emit *out) {
  struct line_state *st = proc;
  const char *backend = st->sampling ? sp__lp_backend_name(st->user) : st->backend;
  if (sp_ext_meta_str(out, "line_profile_sampler", backend ? backend : "none") ||
      sp_ext_meta_i64(out, "line_profile_rate_hz", st->rate) ||
      sp_ext_meta_i64(out, "line_profile_samples", (int64_t)st->stats.samples) ||
      sp_ext_meta_i64(out, "line_profile_samples_outside_regions", (int64_t)st->stats.outside) ||
      sp_ext_meta_i64(out, "line_profile_samples_dropped", (int64_t)st->stats.dropped) ||
      sp_ext_meta_i64(out, "line_profile_max_sample_ns", (int64_t)st->stats.max_ns) ||
      sp_ext_meta_i64(out, "line_profile_threads_unsampled", (int64_t)st->stats.arm_failures))
    return sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory for metadata");
  size_t nrec = 0;
  sp_status rc = st->n ? emit_sampled(st, out, &nrec) : SP_OK;
  if (rc == SP_OK) rc = emit_foreign(st, out, nrec);
  return rc;
}

/* The samples and the records handed in went into a written file (or the
 * run was given up). The run ends here: its threads stop being sampled
 * for it now, not at the manager's next setup or destroy (a finalized
 * manager that lives on, as Python's often do, would hold a user of the
 * sampler and its threads' clocks for nothing). */
static void line_written(void *proc) {
  struct line_state *st = proc;
  if (st->sampling) {
    st->backend = sp__lp_backend_name(st->user);
    sp__lp_stop(st->user);
    st->sampling = 0;
  }
  free(st->e);
  st->e = NULL;
  st->n = 0;
  memset(&st->stats, 0, sizeof st->stats);
  pthread_mutex_lock(&foreign_lock);
  free_foreign(st);
  pthread_mutex_unlock(&foreign_lock);
}

const struct sp_ext sp__ext_line = {
    .abi = SP_EXT_ABI,
    .name = "line_profiler",
    .kind = SP_EXT_SOURCE | SP_EXT_THREADS,
    .wanted = line_wanted,
    .setup = line_setup,
    .teardown = line_teardown,
    .region_added = line_region_added,
    .thread_attach = line_attach,
    .before_snapshot = line_before_snapshot,
    .emit = line_emit,
    .written = line_written,
};
