/* cmd_import.c - `scope-profiler import-native IN... -o OUT.h5`: merge the
 * per-rank outputs of native programs (upstream's C and Fortran writers:
 * .spt traces; per-rank HDF5 files, any schema; JSON profiles) into one job
 * profile, as upstream's command of that name does.
 *
 * A directory contributes its *.spt files and its *_rank<N>*.h5 files (not
 * a merged profile, which has no _rank in its name); named files are always
 * read; inputs are recognised by content. Ranks come out ascending; two
 * inputs claiming one rank are an error. The output is upstream's schema 3
 * (hdf5_schema and the compression settings apply): starts, ends, sources
 * and tags; no call ids (the reader nests by the intervals, as for any
 * native file), exclusive totals left to the reader (-1). Its metadata is
 * that of the lowest-ranked HDF5 input, plus source = "native",
 * trace_format_version = 2, start_time_ns (the earliest start) and label
 * (--label, or the output's stem).
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_opts.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/error.h"
#include "config/config_internal.h"
#include "output/output.h"
#include "output/plan.h"

#define CMD "import-native"

static const char about[] =
    "Merge the per-rank outputs of native programs into one profile: native traces\n"
    "(.spt, versions 1 and 2), per-rank HDF5 profiles (any schema) and JSON profiles,\n"
    "recognised by content. A directory contributes its *.spt and *_rank<N>*.h5 files.\n"
    "Each rank may come from one input only.\n";

static const char epilog[] =
    "examples:\n"
    "  scope-profiler import-native traces/ -o job.h5\n"
    "  scope-profiler import-native run_rank00000.spt run_rank00001.spt -o job.h5\n"
    "\n"
    "exit status: 0 success, 2 usage or input error.\n";

struct opts {
  struct sp_cli_strs pos;
  const char *out, *label;
  int quiet;
};

static const struct sp_cli_opt opt_rows[] = {
    {"--output", "-o", "OUT", SP_OPT_STR, offsetof(struct opts, out),
     "the merged profile (upstream's schema 3; required)", .required = "where the merged profile goes"},
    {"--label", NULL, "LABEL", SP_OPT_STR, offsetof(struct opts, label),
     .help = "the profile's label (default: OUT's file name without .h5)"},
    {"--quiet", "-q", NULL, SP_OPT_FLAG, offsetof(struct opts, quiet), .help = "no summary line"},
};

static const struct sp_cli_spec spec = {
    CMD, "IN... -o OUT.h5 [options]", about, opt_rows, SP_CLI_NROWS(opt_rows), offsetof(struct opts, pos),
    "no input given; pass native traces, per-rank profiles or directories", epilog};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Inputs: files as given, directories' *.spt and *_rank<N>*.h5. */
static int collect(const struct sp_cli_strs *args, struct sp_cli_strs *files) {
  for (size_t i = 0; i < args->n; i++) {
    struct stat sb;
    if (stat(args->v[i], &sb) != 0) return sp_cli_error(CMD, "cannot read %s: %s", args->v[i], strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
      if (sp_cli_strs_push(files, args->v[i])) return sp_cli_error(CMD, "out of memory");
      continue;
    }
    DIR *d = opendir(args->v[i]);
    if (!d) return sp_cli_error(CMD, "cannot list %s: %s", args->v[i], strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
      if (fnmatch("*.spt", e->d_name, 0) && fnmatch("*_rank[0-9]*.h5", e->d_name, 0)) continue;
      char *p = sp__asprintf("%s/%s", args->v[i], e->d_name);
      struct stat fb;
      if (p && stat(p, &fb) == 0 && S_ISREG(fb.st_mode) && sp_cli_strs_push(files, p)) rc = 1;
      if (!p) rc = 1;
      free(p);
    }
    closedir(d);
    if (rc) return sp_cli_error(CMD, "out of memory");
  }
  qsort(files->v, files->n, sizeof *files->v, cmp_str);
  size_t k = 0;
  for (size_t i = 0; i < files->n; i++) {
    if (k && !strcmp(files->v[k - 1], files->v[i])) {
      free(files->v[i]);
      continue;
    }
    files->v[k++] = files->v[i];
  }
  files->n = k;
  return 0;
}

/* One rank of an input as a part of the merged file. */
static sp_status make_part(sp_results *r, int64_t rank, struct sp_run *p) {
  memset(p, 0, sizeof *p);
  p->layout = "columnar";
  size_t nreg = sp_results_num_regions(r), nev = 0;
  p->names = calloc(nreg + 1, sizeof *p->names);
  p->rows = calloc(nreg + 1, sizeof *p->rows);
  sp_events *ev = calloc(nreg + 1, sizeof *ev);
  sp_status st = p->names && p->rows && ev ? SP_OK : sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t g = 0; g < nreg && st == SP_OK; g++) {
    sp_region_stats s;
    st = sp_results_region_rank_stats(r, g, rank, 0, &s);
    if (st != SP_OK || s.count == 0) continue;
    st = sp_results_events(r, g, rank, &ev[g]);
    if (st != SP_OK) break;
    struct sp_row *w = &p->rows[p->nrows];
    const char *file = "", *text = "";
    int64_t line = -1;
    sp_results_region_source(r, g, &file, &line, &text);
    w->region = (uint32_t)p->nnames;
    w->rank = (uint32_t)rank;
    w->offset = nev;
    w->count = ev[g].count;
    w->source_line = line;
    w->exclusive_total = -1; /* the reader rebuilds it from the intervals */
    w->aggregate_count = (int64_t)ev[g].count;
    w->stats = (struct sp_summary){s.total_ns, s.min_ns, s.max_ns, s.first_ns, s.last_ns, s.first_start_ns,
                                   s.last_end_ns, 0, 0, s.mean_ns, isnan(s.std_ns) ? 0 : s.std_ns * s.std_ns * (double)s.count};
    w->source_file = sp__strdup(file);
    w->source_text = sp__strdup(text);
    w->tags_json = sp__strdup(sp_results_region_tags(r, g));
    p->names[p->nnames++] = sp__strdup(sp_results_region_name(r, g));
    p->nrows++;
    nev += ev[g].count;
    if (!w->source_file || !w->source_text || !w->tags_json || !p->names[p->nnames - 1])
      st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  p->nevents = nev;
  p->start = malloc((nev ? nev : 1) * sizeof *p->start);
  p->end = malloc((nev ? nev : 1) * sizeof *p->end);
  if (st == SP_OK && (!p->start || !p->end)) st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  for (size_t g = 0, at = 0; st == SP_OK && g < nreg; g++) {
    if (!ev[g].count) continue;
    memcpy(p->start + at, ev[g].start_ns, ev[g].count * sizeof *p->start);
    memcpy(p->end + at, ev[g].end_ns, ev[g].count * sizeof *p->end);
    at += ev[g].count;
  }
  for (size_t g = 0; ev && g < nreg; g++) sp_events_free(&ev[g]);
  free(ev);
  return st;
}

/* The lowest-ranked HDF5 input's metadata, as upstream keeps it. */
static int copy_meta(sp_results *r, struct sp_meta *m) {
  int rc = 0;
  for (size_t i = 0; i < sp_results_num_metadata(r); i++) {
    const sp_metadata_entry *e = sp_results_metadata_at(r, i);
    switch (e->kind) {
    case SP_VALUE_INT:
    case SP_VALUE_BOOL: rc |= sp__meta_i64(m, e->key, e->i); break;
    case SP_VALUE_FLOAT: rc |= sp__meta_f64(m, e->key, e->f); break;
    case SP_VALUE_STRING: rc |= sp__meta_str(m, e->key, e->s); break;
    case SP_VALUE_STRING_ARRAY: rc |= sp__meta_strlist(m, e->key, (char **)e->strings, e->n); break;
    default: rc |= sp__meta_str(m, e->key, e->text); break;
    }
  }
  return rc;
}

struct owner {
  int64_t rank;
  size_t input;
};

static int cmp_owner(const void *a, const void *b) {
  const struct owner *x = a, *y = b;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int sp_cmd_import_native(int argc, char **argv) {
  struct opts o;
  memset(&o, 0, sizeof o);
  struct sp_cli_strs files = {0};
  sp_results **rs = NULL;
  struct owner *own = NULL;
  struct sp_run *parts = NULL;
  size_t nown = 0, nparts = 0;
  struct sp_config cfg;
  int have_cfg = 0;
  int rc = sp_cli_parse(&spec, argc, argv, &o);
  if (rc) {
    rc = rc == SP_CLI_HELP ? 0 : rc;
    goto done;
  }
  const struct sp_cli_strs pos = o.pos;
  const char *out_s = o.out, *label = o.label;
  if ((rc = collect(&pos, &files))) goto done;
  if (!files.n) {
    rc = sp_cli_error(CMD, "no .spt or *_rank<N>.h5 file in %s", pos.v[0]);
    goto done;
  }
  rs = calloc(files.n, sizeof *rs);
  if (!rs) {
    rc = sp_cli_error(CMD, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < files.n; i++) {
    if ((rc = sp_cli_open(CMD, files.v[i], &rs[i]))) goto done;
    if (!sp_results_has_events(rs[i])) {
      rc = sp_cli_error(CMD, "%s is in the aggregate layout (no calls); import-native merges timelines", files.v[i]);
      goto done;
    }
    for (size_t k = 0; k < sp_results_num_ranks(rs[i]); k++) {
      struct owner *grown = realloc(own, (nown + 1) * sizeof *grown);
      if (!grown) {
        rc = sp_cli_error(CMD, "out of memory");
        goto done;
      }
      own = grown;
      own[nown++] = (struct owner){sp_results_rank(rs[i], k), i};
    }
  }
  qsort(own, nown, sizeof *own, cmp_owner);
  for (size_t k = 1; k < nown; k++)
    if (own[k].rank == own[k - 1].rank) {
      rc = sp_cli_error(CMD,
                        "rank %lld is in both %s and %s; each process must write its own rank (pass the MPI "
                        "rank to sp_init() in the native writer, or import the runs separately)",
                        (long long)own[k].rank, files.v[own[k - 1].input], files.v[own[k].input]);
      goto done;
    }
  parts = calloc(nown + 1, sizeof *parts);
  if (!parts && nown) {
    rc = sp_cli_error(CMD, "out of memory");
    goto done;
  }
  int64_t first_start = INT64_MAX;
  for (size_t k = 0; k < nown; k++) {
    if (make_part(rs[own[k].input], own[k].rank, &parts[k]) != SP_OK) {
      rc = sp_cli_error(CMD, "%s: %s", files.v[own[k].input], sp_last_error());
      goto done;
    }
    nparts = k + 1;
    for (size_t i = 0; i < parts[k].nrows; i++)
      if (parts[k].rows[i].count && parts[k].rows[i].stats.start_minimum < first_start)
        first_start = parts[k].rows[i].stats.start_minimum;
  }
  if (!nparts) {
    rc = sp_cli_error(CMD, "the inputs hold no calls");
    goto done;
  }
  /* metadata: the lowest-ranked HDF5 input's, then the native marks */
  struct sp_meta *meta = &parts[0].meta;
  for (size_t k = 0; k < nown; k++)
    if (!strcmp(sp_results_source_format(rs[own[k].input]), "hdf5")) {
      if (copy_meta(rs[own[k].input], meta)) rc = 1;
      break;
    }
  char *stem = NULL;
  if (!label) {
    const char *base = strrchr(out_s, '/') ? strrchr(out_s, '/') + 1 : out_s;
    const char *dot = strrchr(base, '.');
    stem = sp__strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
    label = stem ? stem : base;
  }
  rc |= sp__meta_str(meta, SP_META_SOURCE, "native");
  rc |= sp__meta_i64(meta, SP_META_TRACE_FORMAT_VERSION, 2);
  if (first_start != INT64_MAX) rc |= sp__meta_i64(meta, SP_META_START_TIME_NS, first_start);
  rc |= sp__meta_str(meta, SP_META_LABEL, label);
  free(stem);
  if (rc) {
    rc = sp_cli_error(CMD, "out of memory");
    goto done;
  }
  sp_setup_args args = {0};
  if (sp__config_resolve(&cfg, &args) != SP_OK) {
    rc = sp_cli_error(CMD, "%s", sp_last_error());
    goto done;
  }
  have_cfg = 1;
  if (sp__h5_write_parts(parts, (int)nparts, &cfg, out_s) != SP_OK) {
    rc = sp_cli_error(CMD, "%s", sp_last_error());
    goto done;
  }
  if (!o.quiet) {
    uint64_t ev = 0;
    for (size_t k = 0; k < nparts; k++) ev += parts[k].nevents;
    printf("import-native: %zu input(s), ranks %lld-%lld (%zu), %llu calls -> %s\n", files.n, (long long)own[0].rank,
           (long long)own[nown - 1].rank, nparts, (unsigned long long)ev, out_s);
  }
done:
  for (size_t k = 0; k < nparts; k++) sp__run_free(&parts[k]);
  free(parts);
  free(own);
  for (size_t i = 0; rs && i < files.n; i++) sp_results_free(rs[i]);
  free(rs);
  if (have_cfg) sp__config_free(&cfg);
  sp_cli_opts_free(&spec, &o);
  sp_cli_strs_free(&files);
  return rc;
}
