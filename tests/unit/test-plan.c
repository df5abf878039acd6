/* test-plan.c - the dataset plan (src/output/plan.c): it is consistent
 * (unique names per group, tables contiguous, ids in range), docs/file-
 * format.md lists every entry exactly as the plan declares it, no other
 * source file spells a dataset name, extensions can declare event columns
 * and rank groups (which every writer then writes and the reader checks),
 * and the upstream fixtures are unchanged.
 *
 * `test-plan --markdown` prints the rows docs/file-format.md must hold.
 */
#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config_internal.h"
#include "harness.h"
#include "h5util.h"
#include "output/output.h"
#include "output/plan.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

static const char *dtype_name(enum sp_dtype t) {
  switch (t) {
  case SP_DT_I8: return "int8";
  case SP_DT_U32: return "uint32";
  case SP_DT_I64: return "int64";
  case SP_DT_U64: return "uint64";
  case SP_DT_F64: return "float64";
  case SP_DT_STR: return "vlen str";
  case SP_DT_SUMMARY: return "compound";
  }
  return "?";
}

/* The docs row of dataset `id`. */
static void row(int id, char *buf, size_t size) {
  const struct sp_plan_ds *d = sp__plan(id);
  snprintf(buf, size, "| `%s` | %s | %s%s |", d->name, dtype_name(d->dtype), d->when & SP_W_OURS ? "*(ours)* " : "",
           d->doc);
}

static void attr_row(int id, char *buf, size_t size) {
  const struct sp_plan_attr *a = sp__plan_attr(id);
  snprintf(buf, size, "| `@%s` | %s | %s%s |", a->name, dtype_name(a->dtype), a->when & SP_W_OURS ? "*(ours)* " : "",
           a->doc);
}

static void meta_row(size_t i, char *buf, size_t size) {
  static const char *const kinds[] = {"str", "int", "float", "list of str"};
  const struct sp_plan_meta *m = &sp__plan_meta[i];
  snprintf(buf, size, "| `%s` | %s | %s%s |", m->key, kinds[m->kind], m->when & SP_W_OURS ? "*(ours)* " : "", m->doc);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

SP_TEST(plan_is_consistent) {
  for (int i = 0; i < SP_DS_NBUILTIN; i++) {
    const struct sp_plan_ds *d = sp__plan(i);
    ASSERT(d && d->name && d->name[0] && d->doc && d->doc[0]);
    for (int j = 0; j < i; j++)
      if (sp__plan(j)->group == d->group && !strcmp(sp__plan(j)->name, d->name))
        SP_FAIL_("%s declared twice in group %s", d->name, sp__plan_group_name(d->group));
    ASSERT_EQ(sp__plan_find(d->group, d->name), i);
    /* every entry is read or written by some schema */
    ASSERT(d->when & (SP_W_SCHEMAS | SP_W_SCHEMA1));
  }
  /* a table's columns are contiguous, so sp_table columns follow plan order */
  enum sp_group tables[] = {SP_GRP_THREAD_TABLE, SP_GRP_TASK_TABLE, SP_GRP_RANKS};
  for (int t = 0; t < 3; t++) {
    int first = -1, n = 0;
    ASSERT_OK(sp__plan_table_columns(tables[t], &first, &n));
    for (int i = 0; i < SP_DS_NBUILTIN; i++)
      ASSERT_EQ(sp__plan(i)->group == tables[t], i >= first && i < first + n);
  }
  ASSERT_STR_EQ(sp__plan_path(SP_DS_START_DELTAS), "/events/start_deltas");
  ASSERT_STR_EQ(sp__plan_path(SP_DS_REGION_IDS), "/rank_region_index/region_ids");
  ASSERT(sp__plan(-1) == NULL && sp__plan(sp__plan_count()) == NULL);
  for (size_t i = 0; i < sp__plan_nmeta; i++) ASSERT_EQ(sp__plan_meta_kind(sp__plan_meta[i].key), sp__plan_meta[i].kind);
}

SP_TEST(docs_list_every_entry) {
  char *doc = slurp(SP_TEST_SOURCE_DIR "/docs/file-format.md");
  ASSERT(doc != NULL);
  char buf[512];
  for (int i = 0; i < SP_DS_NBUILTIN; i++) {
    row(i, buf, sizeof buf);
    if (!strstr(doc, buf)) SP_FAIL_("docs/file-format.md lacks the row\n  %s\n(test-plan --markdown prints them)", buf);
  }
  for (int i = 0; i < SP_AT_NBUILTIN; i++) {
    attr_row(i, buf, sizeof buf);
    if (!strstr(doc, buf)) SP_FAIL_("docs/file-format.md lacks the row\n  %s", buf);
  }
  for (size_t i = 0; i < sp__plan_nmeta; i++) {
    meta_row(i, buf, sizeof buf);
    if (!strstr(doc, buf)) SP_FAIL_("docs/file-format.md lacks the row\n  %s", buf);
  }
  free(doc);
}

/* Dataset names that are also ordinary words elsewhere (JSON keys, CLI
 * words) are left out of the source scan; the rest must appear quoted in
 * no file of src/ but plan.c. */
static int ambiguous(const char *name) {
  static const char *const words[] = {"names", "ranks", "index", "name", "kind", "steps", "tags", "durations",
                                      "ident", "daemon", "regions", "start_ns", "end_ns", "cpu_ns", NULL};
  for (int i = 0; words[i]; i++)
    if (!strcmp(name, words[i])) return 1;
  return 0;
}

static void scan_dir(const char *dir, int *bad) {
  DIR *d = opendir(dir);
  ASSERT(d != NULL);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) != 0) continue;
    if (S_ISDIR(sb.st_mode)) {
      scan_dir(path, bad);
      continue;
    }
    size_t n = strlen(e->d_name);
    if (n < 2 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h"))) continue;
    if (!strcmp(e->d_name, "plan.c") || !strcmp(e->d_name, "plan.h")) continue;
    /* the JSON profile's keys (upstream's JSON format, not HDF5 names)
     * share some names with datasets */
    int json = !strcmp(e->d_name, "read_native.c") || !strcmp(e->d_name, "read_export.c") ||
               !strcmp(e->d_name, "export_profile.c");
    /* upstream's LIKWID groups hold a dataset called "events"
     * (rank<N>/likwid/regions/<tag>/events), a name of the extension's own
     * tree, not the /events group; the probe writes it, read_likwid.c reads it */
    int likwid = strstr(path, "/probes/likwid/") != NULL || !strcmp(e->d_name, "read_likwid.c");
    char *src = slurp(path);
    for (int id = 0; src && id < SP_DS_NBUILTIN; id++) {
      const char *name = sp__plan(id)->name;
      if (ambiguous(name) || (json && (sp__plan(id)->group == SP_GRP_EVENTS || sp__plan(id)->group == SP_GRP_THREAD_TABLE ||
                                       sp__plan(id)->group == SP_GRP_TASK_TABLE || sp__plan(id)->group == SP_GRP_HIER_REGION)))
        continue;
      char quoted[96];
      snprintf(quoted, sizeof quoted, "\"%s\"", name);
      if (strstr(src, quoted)) {
        fprintf(stderr, "  %s spells the dataset name %s\n", path, quoted);
        (*bad)++;
      }
    }
    for (int g = 1; src && g < SP_NGROUPS; g++) {
      char quoted[96];
      snprintf(quoted, sizeof quoted, "\"%s\"", sp__plan_group_name((enum sp_group)g));
      if (likwid && g == SP_GRP_EVENTS) continue;
      if (!json && !ambiguous(sp__plan_group_name((enum sp_group)g)) && strstr(src, quoted)) {
        fprintf(stderr, "  %s spells the group name %s\n", path, quoted);
        (*bad)++;
      }
    }
    free(src);
  }
  closedir(d);
}

SP_TEST(no_dataset_name_outside_the_plan) {
  int bad = 0;
  scan_dir(SP_TEST_SOURCE_DIR "/src", &bad);
  ASSERT_EQ(bad, 0);
}

SP_TEST(extensions_declare_columns_and_groups) {
  struct sp_plan_col_decl d = {"cache_misses", SP_DT_U64, "count", -1, "an extension's counter"};
  int id = sp__plan_add_event_column(&d);
  ASSERT_GE(id, SP_DS_NBUILTIN);
  ASSERT_EQ(sp__plan_add_event_column(&d), id); /* the same again: the same id */
  ASSERT_EQ(sp__plan_find(SP_GRP_EVENTS, "cache_misses"), id);
  ASSERT_STR_EQ(sp__plan_path(id), "/events/cache_misses");
  struct sp_plan_col_decl clash = {"durations", SP_DT_I64, "ns", -1, "no"};
  ASSERT_EQ(sp__plan_add_event_column(&clash), -1);
  ASSERT_CONTAINS(sp_last_error(), "already declared");
  struct sp_plan_col_decl bad = {"Bad Name", SP_DT_I64, "", -1, ""};
  ASSERT_EQ(sp__plan_add_event_column(&bad), -1);
  struct sp_plan_col_decl other = {"cache_misses", SP_DT_F64, "", -1, ""};
  ASSERT_EQ(sp__plan_add_event_column(&other), -1);
  int g = sp__plan_add_rank_group(&(struct sp_plan_group_decl){"counters", "an extension's per-rank group"});
  ASSERT_GE(g, SP_RG_NBUILTIN);
  ASSERT_EQ(sp__plan_find_rank_group("perf_events"), SP_RG_PERF_EVENTS);

  /* a run carrying both: the writer follows the plan */
  unsetenv("SCOPE_PROFILER_CONFIG");
  unsetenv("SCOPE_PROFILER_HDF5_SCHEMA");
  struct sp_config c;
  sp_setup_args a = {0};
  ASSERT_OK(sp__config_resolve(&c, &a));
  char *names[] = {"solve"};
  int64_t st[3] = {10, 20, 40}, en[3] = {15, 33, 55};
  struct sp_row r = {.offset = 0, .count = 3, .source_line = 7, .source_file = "solver.c", .source_text = "",
                     .tags_json = "[\"golden\"]"};
  struct sp_run run = {.layout = "columnar", .names = names, .nnames = 1, .rows = &r, .nrows = 1, .start = st,
                       .end = en, .nevents = 3};
  uint64_t *misses = sp__run_add_column(&run, id);
  ASSERT(misses != NULL);
  misses[0] = 1, misses[1] = 2, misses[2] = UINT64_MAX;
  struct sp_node *grp = sp__run_add_group(&run, SP_RG_PERF_EVENTS);
  ASSERT(grp != NULL);
  struct sp_node *solve = sp__node_add_child(grp, "solve");
  ASSERT(solve != NULL);
  ASSERT_EQ(sp__meta_i64(&solve->attrs, "calls", 3), 0);
  char *evn[] = {"cycles", "instructions"};
  ASSERT_EQ(sp__meta_strlist(&solve->attrs, "event_names", evn, 2), 0);
  uint64_t dims[1] = {2};
  struct sp_node_ds *vals = sp__node_add_ds(solve, "values", SP_DT_U64, 1, dims);
  ASSERT(vals != NULL);
  ((uint64_t *)vals->data)[0] = 1000, ((uint64_t *)vals->data)[1] = 2500;
  ASSERT_OK(sp__h5_write_file(&run, &c, "ext.h5"));
  long long n = 0;
  uint64_t *got = h5_read_as("ext.h5", "/events/cache_misses", H5T_NATIVE_UINT64, &n);
  ASSERT(got && n == 3 && got[2] == UINT64_MAX);
  free(got);
  int64_t *pv = h5_i64("ext.h5", "/rank0/perf_events/solve/values", &n);
  ASSERT(pv && n == 2 && pv[1] == 2500);
  free(pv);
  ASSERT_EQ(h5_attr_i64("ext.h5", "/rank0/perf_events/solve", "calls"), 3);
  /* the reader checks the declared column and reads the file */
  sp_results *res = NULL;
  ASSERT_OK(sp_results_open("ext.h5", &res));
  ASSERT_EQ(sp_results_num_events(res), 3);
  sp_results_free(res);
  sp__run_free(&(struct sp_run){.extra = run.extra, .nextra = run.nextra, .groups = run.groups, .ngroups = run.ngroups});
  sp__config_free(&c);
}

SP_TEST(fixtures_unchanged) {
  /* the upstream fixtures are inputs, never regenerated */
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd '%s/tests/fixtures/upstream' && sha256sum --quiet -c SHA256SUMS",
           SP_TEST_SOURCE_DIR);
  ASSERT_EQ(system(cmd), 0);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--markdown")) {
    char buf[512];
    enum sp_group last = SP_NGROUPS;
    for (int i = 0; i < SP_DS_NBUILTIN; i++) {
      if (sp__plan(i)->group != last) printf("\n/%s\n", sp__plan_group_name(last = sp__plan(i)->group));
      row(i, buf, sizeof buf);
      puts(buf);
    }
    puts("\nattributes");
    for (int i = 0; i < SP_AT_NBUILTIN; i++) {
      attr_row(i, buf, sizeof buf);
      puts(buf);
    }
    puts("\nmetadata");
    for (size_t i = 0; i < sp__plan_nmeta; i++) {
      meta_row(i, buf, sizeof buf);
      puts(buf);
    }
    return 0;
  }
  return sp_test_main(argc, argv);
}
