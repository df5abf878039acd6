/* test-toml.c - the TOML 1.0 reader (src/config/toml.c) on its corpus and on
 * hand-picked cases.
 *
 * Every tests/config/valid/<name>.toml must parse to exactly the flattened
 * dump in <name>.expect; those files were produced by an independent parser
 * (Python's tomllib, tests/config/tomllib_dump.py), and one case re-checks
 * that when tomllib is available. The files in tests/config/invalid/ start with
 * `# error: <text>`: loading the file as a profiling configuration must fail
 * with a message that names the file and contains <text> (which includes
 * line:column).
 */
#include <dirent.h>

#include "config/settings_meta.h"
#include "config/toml.h"
#include "harness.h"

#ifndef SP_TEST_SOURCE_DIR
#define SP_TEST_SOURCE_DIR "."
#endif
#ifndef SP_TEST_PYTHON
#define SP_TEST_PYTHON "/usr/bin/python3"
#endif

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  *len = n;
  return buf;
}

/* Sorted *.toml names of a corpus directory. */
static int list_corpus(const char *dir, char names[][256], int max) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    size_t l = strlen(e->d_name);
    if (l > 5 && !strcmp(e->d_name + l - 5, ".toml")) snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char t[256];
      memcpy(t, names[j], 256);
      memcpy(names[j], names[j - 1], 256);
      memcpy(names[j - 1], t, 256);
    }
  return n;
}

static sp__toml_value *parse_ok(const char *text) {
  sp__toml_value *root = NULL;
  sp_status st = sp__toml_parse(text, strlen(text), "t.toml", &root);
  if (st) SP_FAIL_("parse failed: %s", sp_last_error());
  return root;
}

static void parse_fails(const char *text, const char *expect) {
  sp__toml_value *root = (sp__toml_value *)1;
  sp_status st = sp__toml_parse(text, strlen(text), "t.toml", &root);
  if (st != SP_ERR_PARSE) SP_FAIL_("expected a parse error for <%s>, got %d", text, st);
  ASSERT(root == NULL);
  ASSERT_CONTAINS(sp_last_error(), expect);
}

static char corpus[200][256];

SP_TEST(valid_corpus_matches_expected_dumps) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/config/valid", SP_TEST_SOURCE_DIR);
  int n = list_corpus(dir, corpus, 200);
  ASSERT_GE(n, 20);
  int failed = 0;
  for (int i = 0; i < n; i++) {
    char path[1400], exp_path[1400];
    snprintf(path, sizeof path, "%s/%.255s", dir, corpus[i]);
    snprintf(exp_path, sizeof exp_path, "%.*s.expect", (int)(strlen(path) - 5), path);
    size_t len, elen;
    char *text = read_all(path, &len), *expect = read_all(exp_path, &elen);
    ASSERT(text && expect);
    sp__toml_value *root = NULL;
    if (sp__toml_parse(text, len, corpus[i], &root)) {
      fprintf(stderr, "  %s: %s\n", corpus[i], sp_last_error());
      failed++;
    } else {
      char *dump = sp__toml_dump(root);
      ASSERT(dump);
      if (strcmp(dump, expect) != 0) {
        fprintf(stderr, "  %s: dump differs\n--- expected\n%s--- got\n%s", corpus[i], expect, dump);
        failed++;
      }
      free(dump);
      sp__toml_free(root);
    }
    free(text);
    free(expect);
  }
  ASSERT_EQ(failed, 0);
}

SP_TEST(invalid_corpus_reports_file_line_and_column) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/config/invalid", SP_TEST_SOURCE_DIR);
  int n = list_corpus(dir, corpus, 200);
  ASSERT_GE(n, 60);
  int failed = 0;
  for (int i = 0; i < n; i++) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%.255s", dir, corpus[i]);
    size_t len;
    char *text = read_all(path, &len);
    ASSERT(text);
    if (strncmp(text, "# error: ", 9) != 0) SP_FAIL_("%s: first line is not '# error: ...'", corpus[i]);
    char expect[512];
    size_t el = strcspn(text + 9, "\n");
    snprintf(expect, sizeof expect, "%.*s", (int)el, text + 9);
    free(text);
    sp_options o = SP_OPTIONS_INIT;
    sp_status st = sp_load_profiling_config(path, &o);
    const char *msg = sp_last_error();
    char prefix[1500];
    snprintf(prefix, sizeof prefix, "%s:", path);
    if (st == SP_OK) {
      fprintf(stderr, "  %s: accepted, expected an error containing \"%s\"\n", corpus[i], expect);
      failed++;
    } else if (!strstr(msg, expect) || strncmp(msg, prefix, strlen(prefix)) != 0) {
      fprintf(stderr, "  %s:\n    expected \"%s\"\n    got      \"%s\"\n", corpus[i], expect, msg);
      failed++;
    }
    sp_options_clear(&o);
  }
  ASSERT_EQ(failed, 0);
}

/* The .expect files must stay what tomllib says, not what we print. */
SP_TEST(expected_dumps_agree_with_tomllib) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%.512s -c 'import tomllib' 2>/dev/null", SP_TEST_PYTHON);
  if (sp_test_sh(cmd) != 0) SKIP("no python3 with tomllib");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/config/valid", SP_TEST_SOURCE_DIR);
  int n = list_corpus(dir, corpus, 200);
  for (int i = 0; i < n; i++) {
    snprintf(cmd, sizeof cmd, "%.512s %.512s/tests/config/tomllib_dump.py %.1000s/%.255s > got.txt "
             "&& cmp -s got.txt %.1000s/%.*s.expect", SP_TEST_PYTHON, SP_TEST_SOURCE_DIR, dir, corpus[i], dir,
             (int)(strlen(corpus[i]) - 5), corpus[i]);
    if (sp_test_sh(cmd) != 0) SP_FAIL_("%s: tomllib's dump differs from the .expect file", corpus[i]);
  }
}

SP_TEST(scalars_are_exact) {
  sp__toml_value *r = parse_ok("i = -9223372036854775808\nj = 0x7FFFFFFFFFFFFFFF\nk = 0b1_0\n"
                               "f = 6.25e-1\ns = \"a\\u0000b\"\nb = false\nt = true\n");
  ASSERT_EQ(sp__toml_find(r, "i")->value->u.integer, INT64_MIN);
  ASSERT_EQ(sp__toml_find(r, "j")->value->u.integer, INT64_MAX);
  ASSERT_EQ(sp__toml_find(r, "k")->value->u.integer, 2);
  ASSERT(sp__toml_find(r, "f")->value->type == SP__TOML_FLOAT);
  ASSERT(sp__toml_find(r, "f")->value->u.flt == 0.625);
  const sp__toml_value *s = sp__toml_find(r, "s")->value;
  ASSERT_EQ(s->u.str.len, 3);
  ASSERT(memcmp(s->u.str.ptr, "a\0b", 3) == 0);
  ASSERT_EQ(sp__toml_find(r, "b")->value->u.boolean, 0);
  ASSERT_EQ(sp__toml_find(r, "t")->value->u.boolean, 1);
  ASSERT(sp__toml_find(r, "missing") == NULL);
  sp__toml_free(r);
}

SP_TEST(positions_are_lines_and_character_columns) {
  sp__toml_value *r = parse_ok("# c\r\na = 1\r\n[t]\r\n  \"é\" = \"x\"\n  b =   [1,\n 2]\n");
  const sp__toml_entry *a = sp__toml_find(r, "a");
  ASSERT_EQ(a->line, 2);
  ASSERT_EQ(a->col, 1);
  ASSERT_EQ(a->value->col, 5);
  const sp__toml_value *t = sp__toml_find(r, "t")->value;
  ASSERT_EQ(t->line, 3);
  const sp__toml_entry *e = sp__toml_find(t, "é");
  ASSERT_EQ(e->line, 4);
  ASSERT_EQ(e->col, 3);
  ASSERT_EQ(e->value->col, 9); /* é is one column, two bytes */
  const sp__toml_entry *b = sp__toml_find(t, "b");
  ASSERT_EQ(b->value->line, 5);
  ASSERT_EQ(b->value->col, 9);
  ASSERT_EQ(b->value->u.arr.items[1]->line, 6);
  sp__toml_free(r);
  /* an error after a multi-line string counts its lines */
  parse_fails("s = \"\"\"\none\ntwo\"\"\" x\n", "t.toml:3:8: unexpected 'x'");
}

SP_TEST(dotted_keys_inline_tables_and_headers_build_one_tree) {
  const char *forms[] = {
      "[p]\nh.c = \"gzip\"\nh.l = 4\n",
      "[p.h]\nc = \"gzip\"\nl = 4\n",
      "[p]\nh = {c = \"gzip\", l = 4}\n",
      "p.h.c = \"gzip\"\np.h.l = 4\n",
      "p = {h = {c = \"gzip\", l = 4}}\n",
  };
  char *first = NULL;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    sp__toml_value *r = parse_ok(forms[i]);
    char *d = sp__toml_dump(r);
    if (!first)
      first = d;
    else {
      ASSERT_STR_EQ(d, first);
      free(d);
    }
    sp__toml_free(r);
  }
  ASSERT_STR_EQ(first, "p.h.c = \"gzip\"\np.h.l = 4\n");
  free(first);
}

SP_TEST(byte_order_mark_and_empty_input) {
  sp__toml_value *r = parse_ok("\xEF\xBB\xBF" "a = 1\n");
  ASSERT_EQ(sp__toml_find(r, "a")->value->u.integer, 1);
  sp__toml_free(r);
  r = parse_ok("");
  ASSERT_EQ(r->u.tab.n, 0);
  char *d = sp__toml_dump(r);
  ASSERT_STR_EQ(d, "");
  free(d);
  sp__toml_free(r);
}

SP_TEST(errors_are_precise) {
  parse_fails("a = 1\na = 2\n", "t.toml:2:1: duplicate key a");
  parse_fails("x = 1979-05-27\n", "t.toml:1:5: dates and times are not supported");
  parse_fails("[[x]]\n", "t.toml:1:1: arrays of tables");
  parse_fails("a = \"\\x\"", "t.toml:1:6: invalid escape \\x");
  parse_fails("a = 1\n\n  b = yes\n", "t.toml:3:7: 'yes' is not a value");
  parse_fails("a = [1, 2", "t.toml:1:5: unterminated array");
  parse_fails("a = 1 2", "t.toml:1:7: unexpected '2' after the value");
  parse_fails("a = {x = 1,}", "trailing comma in an inline table");
  parse_fails("\"a\nb\" = 1", "t.toml:1:1: unterminated string");
  parse_fails("a = \"x\x80\"", "t.toml:1:7: invalid UTF-8 byte 0x80");
  /* a NUL byte in the file is a control character, not the end of text */
  sp__toml_value *root = NULL;
  ASSERT_EQ(sp__toml_parse("a = \"x\0\"", 8, "n.toml", &root), SP_ERR_PARSE);
  ASSERT_CONTAINS(sp_last_error(), "n.toml:1:7:");
}

SP_TEST(type_names) {
  ASSERT_STR_EQ(sp__toml_type_name(SP__TOML_STRING), "string");
  ASSERT_STR_EQ(sp__toml_type_name(SP__TOML_INTEGER), "integer");
  ASSERT_STR_EQ(sp__toml_type_name(SP__TOML_FLOAT), "float");
  ASSERT_STR_EQ(sp__toml_type_name(SP__TOML_BOOL), "boolean");
  ASSERT_STR_EQ(sp__toml_type_name(SP__TOML_ARRAY), "array");
  ASSERT_STR_EQ(sp__toml_type_name(SP__TOML_TABLE), "table");
}

SP_TEST(profiling_loader_reads_every_spelling_alike) {
  /* the same settings through every TOML form end up in the same places */
  const char *names[] = {"profiling-header.toml", "profiling-dotted.toml", "profiling-inline.toml",
                         "profiling-root-dotted.toml"};
  for (size_t i = 0; i < 4; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/config/valid/%s", SP_TEST_SOURCE_DIR, names[i]);
    sp_options o = SP_OPTIONS_INIT;
    ASSERT_OK(sp_load_profiling_config(path, &o));
    ASSERT_STR_EQ(o.file_path, "run.h5");
    ASSERT_STR_EQ(o.hdf5.compression, "gzip");
    ASSERT_EQ(o.hdf5.compression_level, 4);
    ASSERT(o.hdf5_compression == NULL);
    sp_options_clear(&o);
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/config/valid/profiling-flat.toml", SP_TEST_SOURCE_DIR);
  sp_options o = SP_OPTIONS_INIT;
  ASSERT_OK(sp_load_profiling_config(path, &o));
  ASSERT_STR_EQ(o.hdf5_compression, "gzip");
  ASSERT_EQ(o.hdf5_compression_level, 4);
  sp_options_clear(&o);
  /* a shared file: other tables ignored, lists from arrays or strings */
  snprintf(path, sizeof path, "%s/tests/config/valid/shared-file.toml", SP_TEST_SOURCE_DIR);
  ASSERT_OK(sp_load_profiling_config(path, &o));
  ASSERT_STR_EQ(o.perf_events, "cycles,instructions");
  ASSERT_STR_EQ(o.enable_tags, "io, mpi");
  ASSERT_EQ(o.memray.enabled, 1);
  ASSERT_EQ(o.memray.native_traces, 1);
  ASSERT_STR_EQ(o.gpu.backend, "cuda");
  ASSERT_EQ(o.gpu.sync_on_exit, 1);
  sp_options_clear(&o);
}

SP_TEST(missing_config_file_is_not_found) {
  sp_options o = SP_OPTIONS_INIT;
  ASSERT_EQ(sp_load_profiling_config("no-such-dir/x.toml", &o), SP_ERR_NOT_FOUND);
  ASSERT_CONTAINS(sp_last_error(), "cannot open config file no-such-dir/x.toml");
  ASSERT_EQ(sp_load_profiling_config(NULL, &o), SP_ERR_INVALID_ARGUMENT);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
