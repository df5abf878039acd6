/* cmd_memory.c - `scope-profiler memory CAPTURE [--profile PROFILE.h5]`:
 * what an allocation capture (use_memray, docs/memory-capture.md) says.
 * Prints the summary (peak, totals, memory over time), the regions by
 * bytes allocated, the allocation sites that hold the memory at the peak
 * and the allocations never released. Call sites are symbolised from the program's
 * own files through libdw, so run it where the program's binaries are.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "cli/cli_opts.h"
#include "cli/commands.h"
#include "common/error.h"
#include "read/memcap_read.h"
#include "scope_profiler/reader.h"

#define CMD "memory"

static const char about[] =
    "Summarise an allocation capture written with use_memray (memory_profile_path,\n"
    "by default the profile's path with its suffix replaced by .memray.bin): the\n"
    "peak of live memory and when it happened, totals, memory over time, bytes by\n"
    "region, the allocation sites holding the most memory at the peak, and the\n"
    "allocations never released (leaks at exit). Sizes are what the allocator\n"
    "handed out (malloc_usable_size); sites are symbolised through the program's\n"
    "own files (with debug info), so run this where the program's binaries are.\n";

static const char epilog[] =
    "examples:\n"
    "  scope-profiler memory run.memray.bin\n"
    "  scope-profiler memory run.memray.bin --profile run.h5 --top 20\n";

struct opts {
  struct sp_cli_strs captures;
  const char *profile;
  long top, frames;
};

static const struct sp_cli_opt opt_rows[] = {
    {"--profile", NULL, "FILE", SP_OPT_STR, offsetof(struct opts, profile),
     .help = "the run's profile: adds each region's calls and time"},
    {"--top", NULL, "N", SP_OPT_INT, offsetof(struct opts, top),
     "rows per table, {range} (default {default}; 0: all)", .def = "10", .lo = 0, .hi = 1000000,
     .what = "an integer"},
    {"--frames", NULL, "N", SP_OPT_INT, offsetof(struct opts, frames),
     "stack frames shown per site with native traces, {range} (default {default})", .def = "3",
     .lo = 1, .hi = 256, .what = "an integer"},
};

static const struct sp_cli_spec spec = {
    CMD, "CAPTURE [--profile PROFILE.h5] [--top N] [--frames N]", about, opt_rows,
    SP_CLI_NROWS(opt_rows), offsetof(struct opts, captures),
    "give the capture file (e.g. run.memray.bin)", epilog};

/*====== Formatting ======*/


static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* "function (file.c:12)", "module+0x1f0" or "0x7f...". */
static void fmt_pc(char *buf, size_t size, sp_symbolizer *sym, uint64_t pc) {
  struct sp_sym in;
  if (!pc) {
    snprintf(buf, size, "(unknown site)");
    return;
  }
  /* pc - 1: a return address, whose line is the call's */
  if (!sym || sp__sym_lookup(sym, pc - 1, &in))
    snprintf(buf, size, "0x%" PRIx64, pc);
  else if (in.nframes && in.frames[0].file)
    snprintf(buf, size, "%s (%s:%d)", in.frames[0].function, base_name(in.frames[0].file),
             in.frames[0].line);
  else if (in.symbol)
    snprintf(buf, size, "%s (%s)", in.symbol, in.module ? base_name(in.module) : "?");
  else
    snprintf(buf, size, "%s+0x%" PRIx64, in.module ? base_name(in.module) : "?", in.module_offset);
}

static void fmt_site(char *buf, size_t size, const sp_memcap *c, sp_symbolizer *sym, uint64_t key,
                     int frames) {
  if (!(c->flags & SP_MEMCAP_F_NATIVE) || frames <= 1) {
    fmt_pc(buf, size, sym, sp__memcap_site_pc(c, key));
    return;
  }
  size_t used = 0;
  buf[0] = '\0';
  const struct sp_memcap_stack *st = key && key <= c->nstacks ? &c->stacks[key - 1] : NULL;
  if (!st || !st->n) {
    snprintf(buf, size, "(no stack)");
    return;
  }
  for (uint32_t i = 0; i < st->n && (int)i < frames && used + 8 < size; i++) {
    char one[512];
    fmt_pc(one, sizeof one, sym, st->pc[i]);
    int n = snprintf(buf + used, size - used, "%s%s", i ? " < " : "", one);
    if (n < 0) break;
    used += (size_t)n < size - used ? (size_t)n : size - used - 1;
  }
}

static const char *region_label(const sp_memcap *c, uint32_t id, char *buf, size_t size) {
  if (!id) return "(no region)";
  const char *n = sp__memcap_region_name(c, id);
  if (n) return n;
  snprintf(buf, size, "region %" PRIu32, id);
  return buf;
}

/* Memory over time as one line of block characters. */
static void sparkline(FILE *out, const sp_memcap_stats *s) {
  static const char *bars[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584",
                               "\u2585", "\u2586", "\u2587", "\u2588"};
  if (!s->ntimeline || !s->peak_bytes) return;
  fputs("Memory over time: ", out);
  for (size_t i = 0; i < s->ntimeline; i++) {
    uint64_t b = s->timeline[i].bytes;
    int level = b ? 1 + (int)((long double)b * 7 / s->peak_bytes + 0.5L) : 0;
    if (level > 8) level = 8;
    fputs(bars[level], out);
  }
  fputc('\n', out);
}

/*====== Site tables ======*/

/* Sites regrouped by call site (a native capture's stacks that share their
 * innermost frame are one site), largest first. */
struct row {
  uint64_t pc, key; /* key: the largest member's, for its frames */
  uint64_t bytes, requested, count, key_bytes;
  uint32_t region;
};

static int cmp_row(const void *a, const void *b) {
  const struct row *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static struct row *site_rows(const sp_memcap *c, const struct sp_memcap_site *s, size_t n,
                             size_t *nrows) {
  struct row *r = calloc(n ? n : 1, sizeof *r);
  size_t nr = 0;
  if (!r) return NULL;
  for (size_t i = 0; i < n; i++) {
    uint64_t pc = sp__memcap_site_pc(c, s[i].key);
    size_t j = 0;
    while (j < nr && r[j].pc != pc) j++; /* sites are few after grouping */
    if (j == nr) r[nr++] = (struct row){pc, s[i].key, 0, 0, 0, 0, s[i].region};
    r[j].bytes += s[i].bytes;
    r[j].requested += s[i].requested;
    r[j].count += s[i].count;
    if (s[i].bytes > r[j].key_bytes) {
      r[j].key_bytes = s[i].bytes;
      r[j].key = s[i].key;
      r[j].region = s[i].region;
    }
  }
  if (nr) qsort(r, nr, sizeof *r, cmp_row);
  *nrows = nr;
  return r;
}

static void site_table(FILE *out, const char *title, const sp_memcap *c, sp_symbolizer *sym,
                       const struct sp_memcap_site *s, size_t n, size_t top, int frames) {
  size_t nr = 0;
  struct row *r = site_rows(c, s, n, &nr);
  fprintf(out, "\n%s\n", title);
  if (!r || !nr) {
    fprintf(out, "  (none)\n");
    free(r);
    return;
  }
  fprintf(out, "  %12s %10s  %-24s %s\n", "bytes", "blocks", "region", "site");
  for (size_t i = 0; i < nr && (!top || i < top); i++) {
    char b[32], site[2048], rb[32];
    sp_cli_fmt_bytes(b, sizeof b, r[i].bytes);
    fmt_site(site, sizeof site, c, sym, r[i].key, frames);
    fprintf(out, "  %12s %10" PRIu64 "  %-24s %s\n", b, r[i].count,
            region_label(c, r[i].region, rb, sizeof rb), site);
  }
  if (top && nr > top) fprintf(out, "  ... %zu more sites (--top 0 shows all)\n", nr - top);
  free(r);
}

/*====== Regions ======*/

static void region_table(FILE *out, const sp_memcap *c, const sp_memcap_stats *s, sp_results *prof,
                         size_t top) {
  fprintf(out, "\nBy region (where the allocating thread was):\n");
  fprintf(out, "  %-24s %12s %10s %12s %12s %12s", "region", "allocated", "allocs", "freed",
          "at peak", "leaked");
  if (prof) fprintf(out, " %10s %12s", "calls", "time [s]");
  fputc('\n', out);
  for (size_t i = 0; i < s->nregions && (!top || i < top); i++) {
    const struct sp_memcap_region_stat *r = &s->regions[i];
    char a[32], f[32], p[32], l[32], rb[32];
    sp_cli_fmt_bytes(a, sizeof a, r->alloc_bytes);
    sp_cli_fmt_bytes(f, sizeof f, r->freed_bytes);
    sp_cli_fmt_bytes(p, sizeof p, r->peak_bytes);
    sp_cli_fmt_bytes(l, sizeof l, r->end_bytes);
    const char *name = region_label(c, r->id, rb, sizeof rb);
    fprintf(out, "  %-24s %12s %10" PRIu64 " %12s %12s %12s", name, a, r->alloc_count, f, p, l);
    size_t ri;
    sp_region_stats rs;
    if (prof && r->id && sp_results_find_region(prof, name, &ri) == SP_OK &&
        sp_results_region_stats(prof, ri, NULL, 0, &rs) == SP_OK) {
      char t[32];
      sp_cli_fmt_seconds(t, sizeof t, (double)rs.total_ns);
      fprintf(out, " %10" PRIu64 " %12s", rs.count, t);
    } else if (prof) {
      fprintf(out, " %10s %12s", "-", "-");
    }
    fputc('\n', out);
  }
  if (top && s->nregions > top)
    fprintf(out, "  ... %zu more regions (--top 0 shows all)\n", s->nregions - top);
}

/*====== The command ======*/

static int summarise(const char *capture, const char *profile, long top, long frames);

int sp_cmd_memory(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  int prc = sp_cli_parse(&spec, argc, argv, &o);
  if (!prc && o.captures.n > 1)
    prc = sp_cli_usage_error(CMD, "one capture at a time (got %s and %s)", o.captures.v[0],
                             o.captures.v[1]);
  if (prc) {
    sp_cli_opts_free(&spec, &o);
    return prc == SP_CLI_HELP ? 0 : prc;
  }
  int rc = summarise(o.captures.v[0], o.profile, o.top, o.frames);
  sp_cli_opts_free(&spec, &o);
  return rc;
}

static int summarise(const char *capture, const char *profile, long top, long frames) {
  sp_memcap *c;
  if (sp__memcap_open(capture, &c) != SP_OK) return sp_cli_error(CMD, "%s", sp_last_error());
  sp_results *prof = NULL;
  if (profile && sp_cli_open(CMD, profile, &prof)) {
    sp__memcap_close(c);
    return 2;
  }
  sp_memcap_stats s;
  if (sp__memcap_analyze(c, 60, &s) != SP_OK) {
    int rc = sp_cli_error(CMD, "%s", sp_last_error());
    sp__memcap_close(c);
    sp_results_free(prof);
    return rc;
  }
  sp_symbolizer *sym = sp__memcap_symbolizer(c);
  FILE *out = stdout;
  char b1[32], b2[32], b3[32], t[32];
  fprintf(out, "Memory capture: %s\n", capture);
  fprintf(out, "Program: %s (pid %" PRIu64 "%s), %zu threads, native traces: %s\n",
          c->program && *c->program ? c->program : "?", c->pid,
          (c->flags & SP_MEMCAP_F_FORK_CHILD) ? ", a forked child" : "", c->nthreads,
          (c->flags & SP_MEMCAP_F_NATIVE) ? "yes" : "no");
  sp_cli_fmt_seconds(t, sizeof t, (double)(s.last_ns - s.first_ns));
  fprintf(out, "Duration: %s s\n", t);
  sp_cli_fmt_bytes(b1, sizeof b1, s.peak_bytes);
  sp_cli_fmt_seconds(t, sizeof t, (double)(s.peak_ns - s.first_ns));
  fprintf(out, "Peak memory: %s (%" PRIu64 " bytes) in %" PRIu64 " blocks, at %s s\n", b1,
          s.peak_bytes, s.peak_count, t);
  sp_cli_fmt_bytes(b1, sizeof b1, s.alloc_bytes);
  sp_cli_fmt_bytes(b2, sizeof b2, s.requested_bytes);
  fprintf(out, "Allocated: %s in %" PRIu64 " allocations (%s requested)\n", b1, s.allocations, b2);
  sp_cli_fmt_bytes(b1, sizeof b1, s.freed_bytes);
  fprintf(out, "Freed: %s in %" PRIu64 " releases\n", b1, s.frees);
  sp_cli_fmt_bytes(b1, sizeof b1, s.end_bytes);
  fprintf(out, "Never freed: %s in %" PRIu64 " blocks\n", b1, s.end_count);
  sparkline(out, &s);
  if (s.unmatched_frees) {
    sp_cli_fmt_bytes(b3, sizeof b3, s.unmatched_free_bytes);
    fprintf(out, "Releases of blocks allocated before the capture: %" PRIu64 " (%s)\n",
            s.unmatched_frees, b3);
  }
  if (!c->complete)
    fprintf(out, "Warning: the capture was not stopped (the program ended without finalize, or "
                 "died)%s; what it holds so far is shown\n",
            c->truncated ? " and its last record is cut short" : "");
  if (c->stat.lost || c->stat.unattributed)
    fprintf(out, "Warning: %" PRIu64 " events were lost and %" PRIu64
                 " allocations made in signal handlers during the profiler's own work were not "
                 "recorded\n",
            c->stat.lost, c->stat.unattributed);
  region_table(out, c, &s, prof, (size_t)top);
  site_table(out, "Top allocation sites at the peak:", c, sym, s.peak_sites, s.npeak_sites,
             (size_t)top, (int)frames);
  site_table(out, "Leaks at exit (allocated, never freed):", c, sym, s.leaks, s.nleaks,
             (size_t)top, (int)frames);
  int rc = 0;
  sp__sym_free(sym);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
  sp_results_free(prof);
  return rc;
}
