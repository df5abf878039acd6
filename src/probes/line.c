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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/symbolize.h"
#include "config/config_internal.h"
#include "probes/ext.h"
#include "probes/line_sampler.h"

#define MAX_SOURCE_LINES 4000 /* longer functions are stored without source */

struct line_state {
  struct sp_manager *m;
  struct sp_lp_entry *e; /* drained samples of the run being finalized */
  size_t n;
  struct sp_lp_stats stats;
  int rate;
};

/* One row: a line (or an address without line information). */
struct row {
  int64_t line;
  uint64_t addr;
  int64_t hits;
  double ns;
};

struct record {
  uint32_t region;
  const char *function, *file, *module;
  int first_lineno;
  int has_lines;
  struct row *rows;
  size_t nrows, cap;
  double total;
  char **callers; /* "caller (file:line)" for inlined code */
  size_t ncallers;
};

static uint32_t current_region(void *ctx) { return sp_ext_current_region(ctx); }

static int line_wanted(const struct sp_config *cfg) { return cfg->use_line_profiler && !cfg->aggregation_mode; }

static enum sp_lp_backend backend_of(enum sp__line_profile_sampler s) {
  switch (s) {
  case SP__LINE_SAMPLER_PERF: return SP_LP_PERF;
  case SP__LINE_SAMPLER_TIMER: return SP_LP_TIMER;
  case SP__LINE_SAMPLER_AUTO: break;
  }
  return SP_LP_AUTO;
}

static sp_status line_setup(struct sp_ext_setup *s, void **proc) {
  struct line_state *st = calloc(1, sizeof *st);
  if (!st) return sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory");
  st->m = s->manager;
  st->rate = (int)s->cfg->line_profile_rate;
  struct sp_lp_params p = {.rate_hz = st->rate,
                           .backend = backend_of(s->cfg->line_profile_sampler),
                           .current_region = current_region,
                           .ctx = s->manager};
  sp_status rc = sp__lp_start(&p);
  if (rc != SP_OK) {
    free(st);
    /* The run goes on without line samples; say why once. */
    sp_ext_warn(s->manager, "use_line_profiler is off for this run: %s", sp_last_error());
    s->decline = 1;
    return SP_OK;
  }
  *proc = st;
  return SP_OK;
}

static void line_teardown(void *proc) {
  struct line_state *st = proc;
  sp__lp_stop();
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
  (void)proc;
  (void)th;
  *thr = NULL;
  /* A thread neither clock can sample is counted (arm_failures) and runs
   * without samples; it still records its calls. */
  (void)sp__lp_thread_arm();
  return 0;
}

static void line_before_snapshot(void *proc) {
  struct line_state *st = proc;
  free(st->e);
  st->e = NULL;
  st->n = 0;
  if (sp__lp_collect(&st->e, &st->n, &st->stats, 1) != 0) {
    st->e = NULL;
    st->n = 0;
  }
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
  const char *region = sp_region_name(r->region);
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
         sp_ext_group_attr_i64(g, "first_lineno", r->first_lineno) || sp_ext_group_attr_f64(g, "unit", 1e-9) ||
         sp_ext_group_attr_i64(g, "samples", samples) || sp_ext_group_attr_str(g, "module", r->module) ||
         sp_ext_group_dset(g, "line_numbers", SP_EXT_I64, 1, dims, lines) ||
         sp_ext_group_dset(g, "hits", SP_EXT_I64, 1, dims, hits) ||
         sp_ext_group_dset(g, "times", SP_EXT_F64, 1, dims, times);
  if (rc == 0 && !r->has_lines) rc = sp_ext_group_dset(g, "addresses", SP_EXT_U64, 1, dims, addrs);
  if (rc == 0 && r->ncallers)
    rc = sp_ext_group_attr_strlist(g, "inlined_into", (const char *const *)r->callers, r->ncallers);
  if (rc == 0 && r->has_lines && lo > 0 && hi >= lo && hi - lo < MAX_SOURCE_LINES) {
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

static sp_status line_emit(void *proc, struct sp_ext_emit *out) {
  struct line_state *st = proc;
  const char *backend = sp__lp_backend_name();
  if (sp_ext_meta_str(out, "line_profile_sampler", backend ? backend : "none") ||
      sp_ext_meta_i64(out, "line_profile_rate_hz", st->rate) ||
      sp_ext_meta_i64(out, "line_profile_samples", (int64_t)st->stats.samples) ||
      sp_ext_meta_i64(out, "line_profile_samples_outside_regions", (int64_t)st->stats.outside) ||
      sp_ext_meta_i64(out, "line_profile_samples_dropped", (int64_t)st->stats.dropped) ||
      sp_ext_meta_i64(out, "line_profile_threads_unsampled", (int64_t)st->stats.arm_failures))
    return sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory for metadata");
  if (!st->n) return SP_OK;
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
  free(st->e);
  st->e = NULL;
  st->n = 0;
  return rc ? sp__set_error(SP_ERR_NO_MEMORY, "line profiling: out of memory building the records") : SP_OK;
}

const struct sp_ext sp__ext_line = {
    .abi = SP_EXT_ABI,
    .name = "line_profiler",
    .kind = SP_EXT_SOURCE,
    .wanted = line_wanted,
    .setup = line_setup,
    .teardown = line_teardown,
    .region_added = line_region_added,
    .thread_attach = line_attach,
    .before_snapshot = line_before_snapshot,
    .emit = line_emit,
};
