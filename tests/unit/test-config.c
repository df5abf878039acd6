/* test-config.c - settings: the key setter, the two spellings, "did you
 * mean", every bound and enumeration, the rules between settings, the
 * precedence chain default < file < options < environment < overrides, the
 * derived values and the settings JSON. Each case runs in its own process
 * and temporary directory (tests/harness.h), so setenv() stays local.
 */
#include "config/config_internal.h"
#include "config/settings_meta.h"
#include "harness.h"
#include "setup_util.h"

#ifndef SP_TEST_PYTHON
#define SP_TEST_PYTHON "/usr/bin/python3"
#endif

/* Resolve with the given pieces, expecting success. */
static void resolve_ok(struct sp_config *c, const sp_options *o, const char *path,
                       const char *const *ovr) {
  sp_setup_args a = {0};
  a.options = o;
  a.config_path = path;
  a.overrides = ovr;
  sp_status st = sp__config_resolve(c, &a);
  if (st) SP_FAIL_("resolve failed: %s", sp_last_error());
}

/* Resolve expecting `want`, with a message containing every needle. */
static void resolve_fails(const sp_options *o, const char *path, const char *const *ovr,
                          sp_status want, const char *n1, const char *n2) {
  sp_setup_args a = {0};
  a.options = o;
  a.config_path = path;
  a.overrides = ovr;
  struct sp_config c;
  sp_status st = sp__config_resolve(&c, &a);
  if (st != want) SP_FAIL_("status %d (%s), expected %d", st, sp_last_error(), want);
  if (n1) ASSERT_CONTAINS(sp_last_error(), n1);
  if (n2) ASSERT_CONTAINS(sp_last_error(), n2);
}

static void overrides_fail(const char *const *ovr, sp_status want, const char *n1, const char *n2) {
  resolve_fails(NULL, NULL, ovr, want, n1, n2);
}

/*====== The table ======*/

SP_TEST(table_has_every_setting_once) {
  /* rows are append-only: upstream's 29 come first, in their order */
  ASSERT_EQ(sp_setting_count(), SP__NSETTINGS);
  ASSERT_GE(sp_setting_count(), 29);
  ASSERT_STR_EQ(sp_setting_name(0), "file_path");
  ASSERT_STR_EQ(sp_setting_name(5), "use_memray");
  ASSERT_STR_EQ(sp_setting_name(25), "hdf5_compression");
  ASSERT_STR_EQ(sp_setting_name(28), "enable_tags");
  ASSERT(sp_setting_name(sp_setting_count()) == NULL);
  for (size_t i = 0; i < sp_setting_count(); i++)
    for (size_t j = i + 1; j < sp_setting_count(); j++)
      ASSERT(strcmp(sp_setting_name(i), sp_setting_name(j)) != 0);
  int grouped;
  ASSERT(sp__setting_find("hdf5.compression", &grouped) == &sp__settings[SP__SET_hdf5_compression]);
  ASSERT_EQ(grouped, 1);
  ASSERT(sp__setting_find("use_memray", &grouped) == &sp__settings[SP__SET_use_memray]);
  ASSERT_EQ(grouped, 0);
  ASSERT(sp__setting_find("memray.enabled", &grouped) == &sp__settings[SP__SET_use_memray]);
  ASSERT(sp__setting_find("gpu.nvtx", &grouped) == &sp__settings[SP__SET_use_nvtx]);
  ASSERT(sp__setting_find("enabled", &grouped) == NULL);
  char env[64];
  sp__setting_env_name(&sp__settings[SP__SET_hdf5_compression], env, sizeof env);
  ASSERT_STR_EQ(env, "SCOPE_PROFILER_HDF5_COMPRESSION");
}

/*====== The setter ======*/

SP_TEST(setter_parses_each_type_and_both_spellings) {
  sp_options o = SP_OPTIONS_INIT;
  ASSERT_OK(sp_options_set(&o, "file_path", "run.h5"));
  ASSERT_OK(sp_options_set(&o, "hdf5.compression", "zstd"));
  ASSERT_OK(sp_options_set(&o, "hdf5_compression_level", " 1_9 "));
  ASSERT_OK(sp_options_set(&o, "buffer_limit", "0x400"));
  ASSERT_OK(sp_options_set(&o, "hdf5.chunk_size", "0b1000"));
  ASSERT_OK(sp_options_set(&o, "memray.enabled", "yes"));
  ASSERT_OK(sp_options_set(&o, "perf_events", "cycles, instructions"));
  ASSERT_STR_EQ(o.file_path, "run.h5");
  ASSERT_STR_EQ(o.hdf5.compression, "zstd");
  ASSERT_EQ(o.hdf5_compression_level, 19);
  ASSERT_EQ(o.buffer_limit, 1024);
  ASSERT_EQ(o.hdf5.chunk_size, 8);
  ASSERT_EQ(o.memray.enabled, 1);
  ASSERT_EQ(o.use_memray, SP_UNSET);
  /* values are copies owned by the options */
  char buf[16] = "label-a";
  ASSERT_OK(sp_options_set(&o, "label", buf));
  strcpy(buf, "changed");
  ASSERT_STR_EQ(o.label, "label-a");
  /* NULL unsets */
  ASSERT_OK(sp_options_set(&o, "label", NULL));
  ASSERT(o.label == NULL);
  sp_options_clear(&o);
  ASSERT(o.file_path == NULL && o.hdf5.compression == NULL && o.sp_i_owned == NULL);
  ASSERT_EQ(o.buffer_limit, SP_INT_NONE);
  ASSERT_EQ(o.memray.enabled, SP_UNSET);
  sp_options_clear(&o); /* twice is fine */
}

SP_TEST(setter_accepts_every_boolean_word) {
  const char *yes[] = {"1", "true", "TRUE", "yes", "Yes", "on", "ON"};
  const char *no[] = {"0", "false", "False", "no", "NO", "off", "Off"};
  sp_options o = SP_OPTIONS_INIT;
  for (size_t i = 0; i < 7; i++) {
    ASSERT_OK(sp_options_set(&o, "use_likwid", yes[i]));
    ASSERT_EQ(o.use_likwid, 1);
    ASSERT_OK(sp_options_set(&o, "use_likwid", no[i]));
    ASSERT_EQ(o.use_likwid, 0);
  }
  ASSERT_EQ(sp_options_set(&o, "use_likwid", "maybe"), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "use_likwid expects a boolean");
  ASSERT_CONTAINS(sp_last_error(), "\"maybe\"");
  ASSERT_EQ(sp_options_set(&o, "gpu.timing", "2"), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "gpu.timing expects a boolean");
  sp_options_clear(&o);
}

SP_TEST(setter_rejects_bad_integers_naming_the_type) {
  sp_options o = SP_OPTIONS_INIT;
  const char *bad[] = {"", "abc", "12abc", "1__0", "_1", "1_", "0x", "9223372036854775808",
                       "1.5", "0o9", "--1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ASSERT_EQ(sp_options_set(&o, "buffer_limit", bad[i]), SP_ERR_INVALID_VALUE);
    ASSERT_CONTAINS(sp_last_error(), "buffer_limit expects an integer");
  }
  ASSERT_EQ(o.buffer_limit, SP_INT_NONE);
  ASSERT_OK(sp_options_set(&o, "buffer_limit", "+1_000_000"));
  ASSERT_EQ(o.buffer_limit, 1000000);
  ASSERT_OK(sp_options_set(&o, "hdf5_chunk_size", "0o17"));
  ASSERT_EQ(o.hdf5_chunk_size, 15);
  sp_options_clear(&o);
}

SP_TEST(unknown_settings_name_the_closest) {
  sp_options o = SP_OPTIONS_INIT;
  struct {
    const char *key, *want;
  } cases[] = {
      {"file_pth", "did you mean 'file_path'?"},
      {"FILE_PATH", "did you mean 'file_path'?"},
      {"fiel_path", "did you mean 'file_path'?"},
      {"hdf5.compresion", "did you mean 'hdf5.compression'?"},
      {"compression", "did you mean 'hdf5.compression'?"},
      {"memray.enable", "did you mean 'memray.enabled'?"},
      {"gpu_timing", "did you mean 'gpu.timing'?"},
      {"use_gpu_timming", "did you mean 'use_gpu_timing'?"},
      {"buffer-limit", "did you mean 'buffer_limit'?"},
      {"enable_tag", "did you mean 'enable_tags'?"},
      {"xyzzy_plugh", "the closest is"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ASSERT_EQ(sp_options_set(&o, cases[i].key, "1"), SP_ERR_UNKNOWN_SETTING);
    ASSERT_CONTAINS(sp_last_error(), "unknown setting");
    ASSERT_CONTAINS(sp_last_error(), cases[i].want);
  }
  ASSERT_EQ(sp_options_set(&o, NULL, "1"), SP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sp_options_set(NULL, "label", "1"), SP_ERR_INVALID_ARGUMENT);
}

SP_TEST(both_spellings_conflict_in_options) {
  sp_options o = SP_OPTIONS_INIT;
  ASSERT_OK(sp_options_set(&o, "use_memray", "1"));
  ASSERT_EQ(sp_options_set(&o, "memray.enabled", "1"), SP_ERR_CONFLICT);
  ASSERT_CONTAINS(sp_last_error(), "memray.enabled and use_memray are both set; keep one");
  ASSERT_OK(sp_options_set(&o, "hdf5.chunk_size", "10"));
  ASSERT_EQ(sp_options_set(&o, "hdf5_chunk_size", "10"), SP_ERR_CONFLICT);
  ASSERT_CONTAINS(sp_last_error(), "hdf5_chunk_size and hdf5.chunk_size are both set");
  /* the same spelling twice just replaces */
  ASSERT_OK(sp_options_set(&o, "use_memray", "0"));
  ASSERT_EQ(o.use_memray, 0);
  sp_options_clear(&o);

  /* fields assigned directly: caught by each_set and by resolve */
  sp_test_clean_env(0);
  sp_options d = SP_OPTIONS_INIT;
  d.use_memray = 1;
  d.memray.enabled = 0;
  ASSERT_EQ(sp_options_each_set(&d, NULL, NULL), SP_ERR_INVALID_ARGUMENT);
  resolve_fails(&d, NULL, NULL, SP_ERR_CONFLICT, "use_memray and memray.enabled are both set; keep one",
                "options");
}

static void count_cb(const char *name, const char *value, void *user) {
  char *out = user;
  strcat(out, name);
  strcat(out, "=");
  strcat(out, value);
  strcat(out, ";");
}

SP_TEST(each_set_lists_explicit_settings_under_flat_names) {
  sp_options o = SP_OPTIONS_INIT;
  char out[1024] = "";
  ASSERT_OK(sp_options_each_set(&o, count_cb, out));
  ASSERT_STR_EQ(out, "");
  o.use_likwid = 1;
  o.buffer_limit = 512;
  ASSERT_OK(sp_options_each_set(&o, count_cb, out));
  ASSERT_STR_EQ(out, "use_likwid=true;buffer_limit=512;");
  out[0] = '\0';
  o.hdf5.compression = "gzip";
  o.gpu.timing = 0;
  o.perf_events = "cycles,instructions";
  ASSERT_OK(sp_options_each_set(&o, count_cb, out));
  ASSERT_STR_EQ(out, "use_likwid=true;perf_events=cycles,instructions;use_gpu_timing=false;"
                     "buffer_limit=512;hdf5_compression=gzip;");
  out[0] = '\0';
  o.hdf5_compression = "lzf";
  ASSERT_EQ(sp_options_each_set(&o, count_cb, out), SP_ERR_CONFLICT);
  ASSERT_CONTAINS(sp_last_error(), "hdf5_compression and hdf5.compression are both set; keep one");
  ASSERT_STR_EQ(out, ""); /* nothing was called */
}

/*====== Validation ======*/

SP_TEST(every_bound) {
  sp_test_clean_env(0);
  struct {
    const char *ov[3];
    sp_status want;
    const char *msg;
  } cases[] = {
      {{"buffer_limit=0"}, SP_ERR_INVALID_VALUE, "buffer_limit must be at least 1, got 0"},
      {{"buffer_limit=-5"}, SP_ERR_INVALID_VALUE, "buffer_limit must be at least 1"},
      {{"buffer_limit=1"}, SP_OK, NULL},
      {{"buffer_limit=1099511627776"}, SP_OK, NULL},
      {{"buffer_limit=1099511627777"}, SP_ERR_INVALID_VALUE, "between 1 and 1099511627776"},
      {{"hdf5_chunk_size=0"}, SP_ERR_INVALID_VALUE, "hdf5_chunk_size must be at least 1, got 0"},
      {{"hdf5.chunk_size=1"}, SP_OK, NULL},
      {{"hdf5.chunk_size=4294967296"}, SP_OK, NULL},
      {{"hdf5.chunk_size=4294967297"}, SP_ERR_INVALID_VALUE, "hdf5.chunk_size must be between 1 and 4294967296"},
      {{"hdf5_compression=gzip", "hdf5_compression_level=0"}, SP_OK, NULL},
      {{"hdf5_compression=gzip", "hdf5_compression_level=9"}, SP_OK, NULL},
      {{"hdf5_compression=gzip", "hdf5_compression_level=10"}, SP_ERR_INVALID_VALUE, "out of range for hdf5_compression = \"gzip\": gzip levels run from 0 to 9; use 0-9"},
      {{"hdf5_compression=zstd", "hdf5_compression_level=1"}, SP_OK, NULL},
      {{"hdf5_compression=zstd", "hdf5_compression_level=22"}, SP_OK, NULL},
      {{"hdf5_compression=zstd", "hdf5_compression_level=0"}, SP_ERR_INVALID_VALUE, "out of range for hdf5_compression = \"zstd\""},
      {{"hdf5_compression=zstd", "hdf5_compression_level=23"}, SP_ERR_INVALID_VALUE, "between 0 and 22"},
      {{"hdf5_compression=auto", "hdf5_compression_level=1"}, SP_OK, NULL},
      {{"hdf5_compression=auto", "hdf5_compression_level=9"}, SP_OK, NULL},
      {{"hdf5_compression=auto", "hdf5_compression_level=10"}, SP_ERR_INVALID_VALUE, "for hdf5_compression = \"auto\": auto may pick gzip or zstd; use 1-9"},
      {{"hdf5_compression=auto", "hdf5_compression_level=0"}, SP_ERR_INVALID_VALUE, "for hdf5_compression = \"auto\": auto may pick gzip or zstd; use 1-9"},
      {{"hdf5_compression=lzf", "hdf5_compression_level=1"}, SP_ERR_INVALID_VALUE, "cannot be used with hdf5_compression = \"lzf\": the lzf filter has no levels"},
      {{"hdf5_compression=lzf"}, SP_OK, NULL},
      {{"hdf5_compression_level=4"}, SP_ERR_CONFLICT, "hdf5_compression_level (set in the overrides) requires hdf5_compression: a level belongs to a compression filter; set hdf5_compression to auto, gzip or zstd, or remove hdf5_compression_level"},
      {{"hdf5_compression=none", "hdf5_compression_level=4"}, SP_ERR_CONFLICT, "requires hdf5_compression"},
      {{"hdf5_compression_level=-1"}, SP_ERR_INVALID_VALUE, "between 0 and 22, got -1"},
      {{"file_path="}, SP_ERR_INVALID_VALUE, "file_path (set in the overrides) is empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct sp_config c;
    sp_setup_args a = {0};
    a.overrides = cases[i].ov;
    sp_status st = sp__config_resolve(&c, &a);
    if (st != cases[i].want) SP_FAIL_("case %zu (%s): status %d: %s", i, cases[i].ov[0], st, sp_last_error());
    if (st == SP_OK) sp__config_free(&c);
    if (cases[i].msg) ASSERT_CONTAINS(sp_last_error(), cases[i].msg);
  }
}

SP_TEST(every_enumeration) {
  sp_test_clean_env(0);
  int enums = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    if (s->type != SP__ST_ENUM) continue;
    enums++;
    ASSERT_GE(s->nchoices, 2);
    ASSERT(s->choices[s->nchoices] == NULL);
    ASSERT(s->idef >= 0 && s->idef < s->nchoices);
    for (int k = 0; k < s->nchoices; k++) {
      const char *tok = s->choices[k];
      char item[160];
      snprintf(item, sizeof item, "%s=%s", s->name, tok);
      const char *ov[] = {item, NULL};
      struct sp_config c;
      resolve_ok(&c, NULL, NULL, ov);
      /* the word, and the C enum the code uses: choices are in enum order */
      ASSERT_STR_EQ(sp_config_value_text(&c, s->name), tok);
      ASSERT_EQ(*(const int *)((const char *)&c + s->cfg_off), k);
      ASSERT_STR_EQ(sp__enum_word(i, k), tok);
      sp__config_free(&c);
    }
    char item[160], listed[160];
    snprintf(item, sizeof item, "%s=bogus", s->name);
    snprintf(listed, sizeof listed, "%s must be one of: ", s->name);
    const char *ov[] = {item, NULL};
    overrides_fail(ov, SP_ERR_INVALID_VALUE, listed, "got \"bogus\"");
    /* every choice is listed */
    for (int k = 0; k < s->nchoices; k++) ASSERT_CONTAINS(sp_last_error(), s->choices[k]);
  }
  ASSERT_GE(enums, 4);
  const char *upper[] = {"metadata_detail=FULL", NULL};
  overrides_fail(upper, SP_ERR_INVALID_VALUE, "(write it in lowercase)", NULL);
  sp_options o = SP_OPTIONS_INIT;
  ASSERT_EQ(sp_options_set(&o, "gpu.backend", "torch"), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "gpu.backend must be one of: auto, cuda, callbacks");
  /* assigned straight into the struct: caught at resolve */
  o.output_mode = "serial";
  resolve_fails(&o, NULL, NULL, SP_ERR_INVALID_VALUE, "options: output_mode must be one of: auto, direct, parallel",
                NULL);
  sp_options d = SP_OPTIONS_INIT;
  d.use_likwid = 5;
  resolve_fails(&d, NULL, NULL, SP_ERR_INVALID_VALUE, "use_likwid must be 0 (false), 1 (true) or SP_UNSET",
                NULL);
  sp_options b = SP_OPTIONS_INIT;
  b.buffer_limit = 0;
  resolve_fails(&b, NULL, NULL, SP_ERR_INVALID_VALUE, "options: buffer_limit must be at least 1", NULL);
}

SP_TEST(incompatible_settings) {
  sp_test_clean_env(0);
  const char *partners[] = {"use_line_profiler", "use_gpu_timing", "use_nvtx", "use_likwid"};
  for (size_t i = 0; i < 4; i++) {
    char item[64];
    snprintf(item, sizeof item, "%s=1", partners[i]);
    const char *ov[] = {"aggregation_mode=1", item, NULL};
    overrides_fail(ov, SP_ERR_CONFLICT, "aggregation_mode (set in the overrides) cannot be combined with",
                   partners[i]);
  }
  /* the message says where each value came from */
  setenv("SCOPE_PROFILER_USE_NVTX", "on", 1);
  sp_test_write_file("agg.toml", "[profiling]\naggregation_mode = true\n");
  resolve_fails(NULL, "agg.toml", NULL, SP_ERR_CONFLICT, "aggregation_mode (set in agg.toml)",
                "use_nvtx (set by SCOPE_PROFILER_USE_NVTX)");
  unsetenv("SCOPE_PROFILER_USE_NVTX");

  const char *sync[] = {"gpu_sync_on_exit=1", NULL};
  overrides_fail(sync, SP_ERR_CONFLICT, "gpu_sync_on_exit (set in the overrides) requires use_gpu_timing", NULL);
  const char *sync_ok[] = {"gpu.sync_on_exit=1", "gpu.timing=1", NULL};
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, sync_ok);
  ASSERT_EQ(sp_config_gpu_sync_on_exit(&c), 1);
  sp__config_free(&c);

  /* track_async implies track_threads */
  const char *as[] = {"track_async=1", NULL};
  resolve_ok(&c, NULL, NULL, as);
  ASSERT_EQ(c.track_threads, 1);
  ASSERT_EQ(sp_config_track_threads(&c), 1);
  ASSERT_EQ(sp_config_origin(&c, "track_threads"), SP_ORIGIN_OVERRIDE);
  sp__config_free(&c);
  const char *as2[] = {"track_async=1", "track_threads=0", NULL};
  resolve_ok(&c, NULL, NULL, as2);
  ASSERT_EQ(c.track_threads, 1);
  sp__config_free(&c);
}

/*====== Precedence ======*/

SP_TEST(precedence_default_file_options_env_override) {
  sp_test_clean_env(0);
  sp_test_write_file("p.toml", "[profiling]\nbuffer_limit = 2\nlabel = \"file\"\noutput_mode = \"direct\"\n"
                       "metadata_detail = \"full\"\n[profiling.hdf5]\nchunk_size = 5\n");
  sp_options o = SP_OPTIONS_INIT;
  o.buffer_limit = 3;
  o.label = "opts";
  o.output_mode = "parallel";
  setenv("SCOPE_PROFILER_BUFFER_LIMIT", "4", 1);
  setenv("SCOPE_PROFILER_LABEL", "env", 1);
  const char *ov[] = {"buffer_limit=5", NULL};
  struct sp_config c;
  resolve_ok(&c, &o, "p.toml", ov);
  ASSERT_EQ(sp_config_buffer_limit(&c), 5);
  ASSERT_EQ(sp_config_origin(&c, "buffer_limit"), SP_ORIGIN_OVERRIDE);
  ASSERT_STR_EQ(sp_config_label(&c), "env");
  ASSERT_EQ(sp_config_origin(&c, "label"), SP_ORIGIN_ENV);
  ASSERT_STR_EQ(sp_config_output_mode(&c), "parallel");
  ASSERT_EQ(sp_config_origin(&c, "output_mode"), SP_ORIGIN_OPTIONS);
  ASSERT_STR_EQ(sp_config_metadata_detail(&c), "full");
  ASSERT_EQ(sp_config_origin(&c, "metadata_detail"), SP_ORIGIN_FILE);
  ASSERT_EQ(sp_config_hdf5_chunk_size(&c), 5);
  ASSERT_EQ(sp_config_origin(&c, "hdf5.chunk_size"), SP_ORIGIN_FILE);
  ASSERT_STR_EQ(sp_config_gpu_timing_backend(&c), "auto");
  ASSERT_EQ(sp_config_origin(&c, "gpu_timing_backend"), SP_ORIGIN_DEFAULT);
  sp__config_free(&c);

  /* peel the layers off one by one */
  resolve_ok(&c, &o, "p.toml", NULL);
  ASSERT_EQ(sp_config_buffer_limit(&c), 4);
  ASSERT_EQ(sp_config_origin(&c, "buffer_limit"), SP_ORIGIN_ENV);
  sp__config_free(&c);
  unsetenv("SCOPE_PROFILER_BUFFER_LIMIT");
  resolve_ok(&c, &o, "p.toml", NULL);
  ASSERT_EQ(sp_config_buffer_limit(&c), 3);
  ASSERT_EQ(sp_config_origin(&c, "buffer_limit"), SP_ORIGIN_OPTIONS);
  sp__config_free(&c);
  resolve_ok(&c, NULL, "p.toml", NULL);
  ASSERT_EQ(sp_config_buffer_limit(&c), 2);
  ASSERT_EQ(sp_config_origin(&c, "buffer_limit"), SP_ORIGIN_FILE);
  sp__config_free(&c);
  resolve_ok(&c, NULL, NULL, NULL);
  ASSERT_EQ(sp_config_buffer_limit(&c), 1024);
  ASSERT_EQ(sp_config_origin(&c, "buffer_limit"), SP_ORIGIN_DEFAULT);
  sp__config_free(&c);

  /* the group spelling of one layer beats the flat spelling of a lower one */
  sp_options g = SP_OPTIONS_INIT;
  g.hdf5.chunk_size = 7;
  resolve_ok(&c, &g, "p.toml", NULL);
  ASSERT_EQ(c.hdf5_chunk_size, 7);
  sp__config_free(&c);
  const char *flat[] = {"hdf5_chunk_size=9", NULL};
  resolve_ok(&c, &g, "p.toml", flat);
  ASSERT_EQ(c.hdf5_chunk_size, 9);
  sp__config_free(&c);

  /* NULL args: defaults plus environment */
  struct sp_config d;
  ASSERT_OK(sp__config_resolve(&d, NULL));
  ASSERT_STR_EQ(d.label, "env");
  sp__config_free(&d);
}

SP_TEST(config_file_from_environment) {
  sp_test_clean_env(0);
  sp_test_write_file("env.toml", "buffer_limit = 11\n");
  sp_test_write_file("arg.toml", "buffer_limit = 12\n");
  setenv("SCOPE_PROFILER_CONFIG", "env.toml", 1);
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, NULL);
  ASSERT_EQ(c.buffer_limit, 11);
  ASSERT_EQ(c.origin[SP__SET_buffer_limit], SP_ORIGIN_FILE);
  sp__config_free(&c);
  resolve_ok(&c, NULL, "arg.toml", NULL); /* config_path wins */
  ASSERT_EQ(c.buffer_limit, 12);
  sp__config_free(&c);
  setenv("SCOPE_PROFILER_CONFIG", "", 1); /* empty: no file */
  resolve_ok(&c, NULL, NULL, NULL);
  ASSERT_EQ(c.buffer_limit, 1024);
  sp__config_free(&c);
  setenv("SCOPE_PROFILER_CONFIG", "missing.toml", 1);
  resolve_fails(NULL, NULL, NULL, SP_ERR_NOT_FOUND, "SCOPE_PROFILER_CONFIG: cannot open config file missing.toml",
                NULL);
  sp_test_write_file("bad.toml", "[profiling]\nbuffer_limt = 1\n");
  setenv("SCOPE_PROFILER_CONFIG", "bad.toml", 1);
  resolve_fails(NULL, NULL, NULL, SP_ERR_UNKNOWN_SETTING, "bad.toml:2:1: unknown setting 'buffer_limt'",
                "did you mean 'buffer_limit'?");
  /* `config check` ignores the environment entirely */
  sp_setup_args a = {0};
  ASSERT_OK(sp__config_resolve_ex(&c, &a, SP__RESOLVE_NO_ENV));
  sp__config_free(&c);
  sp_setup_args e = {0};
  e.config_path = "";
  ASSERT_EQ(sp__config_resolve(&c, &e), SP_ERR_INVALID_ARGUMENT);
}

SP_TEST(environment_variables) {
  sp_test_clean_env(0);
  setenv("SCOPE_PROFILER_FILE_PATH", "out/env.h5", 1);
  setenv("SCOPE_PROFILER_AGGREGATION_MODE", "1", 1);
  setenv("SCOPE_PROFILER_HDF5_COMPRESSION", "zstd", 1);
  setenv("SCOPE_PROFILER_HDF5_COMPRESSION_LEVEL", "0x3", 1);
  setenv("SCOPE_PROFILER_PERF_EVENTS", "cycles,,instructions, cycles", 1);
  setenv("SCOPE_PROFILER_MPI", "1", 1);                /* read elsewhere, not a setting */
  setenv("SCOPE_PROFILER_NOT_A_SETTING", "whatever", 1); /* ignored */
  setenv("SCOPE_PROFILER_LABEL", "", 1);                /* empty counts as unset */
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, NULL);
  ASSERT_STR_EQ(sp_config_file_path(&c), "out/env.h5");
  ASSERT_EQ(sp_config_aggregation_mode(&c), 1);
  ASSERT_STR_EQ(sp_config_hdf5_compression(&c), "zstd");
  ASSERT_EQ(sp_config_hdf5_compression_level(&c), 3);
  const char *const *pe = sp_config_perf_events(&c);
  ASSERT_EQ(sp_config_list_len(pe), 2);
  ASSERT_STR_EQ(pe[0], "cycles");
  ASSERT_STR_EQ(pe[1], "instructions");
  ASSERT(sp_config_label(&c) == NULL);
  ASSERT_EQ(sp_config_origin(&c, "file_path"), SP_ORIGIN_ENV);
  sp__config_free(&c);
  setenv("SCOPE_PROFILER_BUFFER_LIMIT", "lots", 1);
  resolve_fails(NULL, NULL, NULL, SP_ERR_INVALID_VALUE, "environment variable SCOPE_PROFILER_BUFFER_LIMIT",
                "buffer_limit expects an integer");
  setenv("SCOPE_PROFILER_BUFFER_LIMIT", "8", 1);
  setenv("SCOPE_PROFILER_OUTPUT_MODE", "serial", 1);
  resolve_fails(NULL, NULL, NULL, SP_ERR_INVALID_VALUE, "SCOPE_PROFILER_OUTPUT_MODE", "auto, direct, parallel");
}

SP_TEST(enable_tags_from_environment_are_added) {
  sp_test_clean_env(0);
  sp_options o = SP_OPTIONS_INIT;
  o.enable_tags = "a, b";
  setenv("SCOPE_PROFILER_ENABLE_TAGS", "b,c", 1);
  struct sp_config c;
  resolve_ok(&c, &o, NULL, NULL);
  const char *const *t = sp_config_enable_tags(&c);
  ASSERT_EQ(sp_config_list_len(t), 3);
  ASSERT_STR_EQ(t[0], "a");
  ASSERT_STR_EQ(t[1], "b");
  ASSERT_STR_EQ(t[2], "c");
  ASSERT_EQ(sp_config_origin(&c, "enable_tags"), SP_ORIGIN_ENV);
  ASSERT(sp__config_tag_enabled(&c, "c"));
  ASSERT(!sp__config_tag_enabled(&c, "d"));
  sp__config_free(&c);
  /* even an override is added to, not replaced */
  const char *ov[] = {"enable_tags=x", NULL};
  resolve_ok(&c, &o, NULL, ov);
  t = sp_config_enable_tags(&c);
  ASSERT_EQ(sp_config_list_len(t), 3);
  ASSERT_STR_EQ(t[0], "x");
  ASSERT_STR_EQ(t[1], "b");
  ASSERT_STR_EQ(t[2], "c");
  ASSERT_EQ(sp_config_origin(&c, "enable_tags"), SP_ORIGIN_OVERRIDE);
  sp__config_free(&c);
  setenv("SCOPE_PROFILER_ENABLE_TAGS", "*", 1);
  resolve_ok(&c, NULL, NULL, NULL);
  ASSERT(sp__config_tag_enabled(&c, "anything"));
  sp__config_free(&c);
  unsetenv("SCOPE_PROFILER_ENABLE_TAGS");
  resolve_ok(&c, NULL, NULL, NULL);
  ASSERT(c.enable_tags == NULL);
  ASSERT_EQ(sp_config_list_len(sp_config_enable_tags(&c)), 0);
  ASSERT(sp_config_enable_tags(&c) != NULL);
  ASSERT(!sp__config_tag_enabled(&c, "x"));
  sp__config_free(&c);
}

SP_TEST(override_list_errors) {
  sp_test_clean_env(0);
  const char *noeq[] = {"aggregation_mode", NULL};
  overrides_fail(noeq, SP_ERR_INVALID_ARGUMENT, "override \"aggregation_mode\" is not key=value", NULL);
  const char *unk[] = {"buffer_limt=3", NULL};
  overrides_fail(unk, SP_ERR_UNKNOWN_SETTING, "override \"buffer_limt=3\": unknown setting",
                 "did you mean 'buffer_limit'?");
  const char *bad[] = {"buffer_limit=abc", NULL};
  overrides_fail(bad, SP_ERR_INVALID_VALUE, "override \"buffer_limit=abc\": buffer_limit expects an integer", NULL);
  const char *both[] = {"use_memray=1", "memray.enabled=1", NULL};
  overrides_fail(both, SP_ERR_CONFLICT, "use_memray and memray.enabled are both set in the overrides; keep one",
                 NULL);
  const char *twice[] = {"label=a", "label=b", NULL};
  overrides_fail(twice, SP_ERR_CONFLICT, "the overrides set label twice", NULL);
  /* blanks around the key are fine; the value is kept as given */
  const char *spaced[] = {" label = a b ", NULL};
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, spaced);
  ASSERT_STR_EQ(c.label, " a b ");
  sp__config_free(&c);
}

/*====== Derived values ======*/

SP_TEST(display_label_is_label_or_stem) {
  sp_test_clean_env(0);
  struct {
    const char *path, *label, *want;
  } cases[] = {
      {NULL, NULL, "profiling_data"},   {"out/run.h5", NULL, "run"},
      {"run.tar.h5", NULL, "run.tar"},  {".hidden", NULL, ".hidden"},
      {"noext", NULL, "noext"},         {"dir.d/file", NULL, "file"},
      {"run.h5", "baseline", "baseline"}, {"run.h5", "", "run"},
      {"/abs/x.y.z", NULL, "x.y"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sp_options o = SP_OPTIONS_INIT;
    o.file_path = cases[i].path;
    o.label = cases[i].label;
    struct sp_config c;
    resolve_ok(&c, &o, NULL, NULL);
    ASSERT_STR_EQ(sp_config_display_label(&c), cases[i].want);
    if (cases[i].label)
      ASSERT_STR_EQ(sp_config_label(&c), cases[i].label);
    else
      ASSERT(sp_config_label(&c) == NULL);
    sp__config_free(&c);
  }
}

SP_TEST(memory_profile_path_default) {
  sp_test_clean_env(0);
  struct {
    const char *ov[4];
    const char *want;
  } cases[] = {
      {{NULL}, NULL},
      {{"memory_profile_path=m.bin"}, NULL}, /* memray off: no capture path */
      {{"use_memray=1"}, "profiling_data.memray.bin"},
      {{"use_memray=1", "file_path=out/run.h5"}, "out/run.memray.bin"},
      {{"memray.enabled=1", "file_path=dir.d/run"}, "dir.d/run.memray.bin"},
      {{"use_memray=1", "memray.path=m.bin"}, "m.bin"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct sp_config c;
    resolve_ok(&c, NULL, NULL, cases[i].ov);
    if (cases[i].want) {
      ASSERT_STR_EQ(sp_config_memory_profile_path(&c), cases[i].want);
      ASSERT_STR_EQ(c.memory_profile_path_resolved, cases[i].want);
    } else {
      ASSERT(sp_config_memory_profile_path(&c) == NULL);
      ASSERT(c.memory_profile_path_resolved == NULL);
    }
    sp__config_free(&c);
  }
}

SP_TEST(hdf5_compression_none_is_unset) {
  sp_test_clean_env(0);
  const char *ov[] = {"hdf5_compression=none", NULL};
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, ov);
  ASSERT(sp_config_hdf5_compression(&c) == NULL);
  ASSERT_EQ(c.hdf5_compression, SP__COMPRESSION_NONE);
  ASSERT_STR_EQ(sp_config_value_text(&c, "hdf5_compression"), "none");
  ASSERT_EQ(sp_config_origin(&c, "hdf5_compression"), SP_ORIGIN_OVERRIDE);
  char *json = sp__config_to_json(&c);
  ASSERT_CONTAINS(json, "\"hdf5_compression\": \"none\"");
  free(json);
  sp__config_free(&c);
}

SP_TEST(value_text_accessors_and_null_safety) {
  sp_test_clean_env(0);
  const char *ov[] = {"perf_events=a,b", "hdf5.chunk_size=64", NULL};
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, ov);
  ASSERT_STR_EQ(sp_config_value_text(&c, "buffer_limit"), "1024");
  ASSERT_STR_EQ(sp_config_value_text(&c, "use_likwid"), "false");
  ASSERT_STR_EQ(sp_config_value_text(&c, "label"), "");
  ASSERT_STR_EQ(sp_config_value_text(&c, "perf_events"), "a,b");
  ASSERT_STR_EQ(sp_config_value_text(&c, "hdf5.chunk_size"), "64");
  ASSERT(sp_config_value_text(&c, "nope") == NULL);
  ASSERT_EQ(sp_config_origin(&c, "nope"), SP_ORIGIN_DEFAULT);
  ASSERT_EQ(sp_config_start_time_ns(&c), 0);
  c.start_time_ns = 42;
  c.paused = 1;
  ASSERT_EQ(sp_config_start_time_ns(&c), 42);
  ASSERT_EQ(sp_config_paused(&c), 1);
  struct sp_config d;
  ASSERT_OK(sp__config_copy(&d, &c));
  char *j1 = sp__config_to_json(&c), *j2 = sp__config_to_json(&d);
  ASSERT_STR_EQ(j1, j2);
  ASSERT(d.perf_events != c.perf_events && d.file_path != c.file_path);
  ASSERT_STR_EQ(sp_config_display_label(&d), "profiling_data");
  ASSERT_EQ(sp_config_start_time_ns(&d), 42);
  free(j1);
  free(j2);
  sp__config_free(&c);
  ASSERT_STR_EQ(d.perf_events[1], "b"); /* the copy is independent */
  sp__config_free(&d);
  ASSERT(d.file_path == NULL);
  /* accessors accept NULL */
  ASSERT_EQ(sp_config_list_len(NULL), 0);
  ASSERT(sp_config_perf_events(NULL) != NULL && sp_config_perf_events(NULL)[0] == NULL);
  ASSERT(sp_config_file_path(NULL) == NULL);
  ASSERT_EQ(sp_config_buffer_limit(NULL), SP_INT_NONE);
  ASSERT(sp_config_display_label(NULL) == NULL);
  sp__config_free(NULL);
}

SP_TEST(settings_json_is_valid_json) {
  sp_test_clean_env(0);
  const char *ov[] = {"label=q\"uote\\back\nline\ttab\x01 é 😀", "perf_events=a\"b,c", "track_async=1",
                      "hdf5_compression=gzip", "hdf5.compression_level=6", NULL};
  setenv("SCOPE_PROFILER_FILE_PATH", "bad\xff\xfe" "byte.h5", 1);
  struct sp_config c;
  resolve_ok(&c, NULL, NULL, ov);
  char *json = sp__config_to_json(&c);
  ASSERT(json);
  sp_test_write_file("settings.json", json);
  free(json);
  sp__config_free(&c);
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "%s -c 'import json,sys\n"
           "d = json.load(open(\"settings.json\", encoding=\"utf-8\"))\n"
           "assert len(d) == %d, len(d)\n"
           "assert d[\"label\"] == \"q\\\"uote\\\\back\\nline\\ttab\\x01 é 😀\", d[\"label\"]\n"
           "assert d[\"perf_events\"] == [\"a\\\"b\", \"c\"]\n"
           "assert d[\"enable_tags\"] == []\n"
           "assert d[\"track_threads\"] is True and d[\"track_async\"] is True\n"
           "assert d[\"hdf5_compression_level\"] == 6 and d[\"hdf5_chunk_size\"] is None\n"
           "assert d[\"buffer_limit\"] == 1024 and d[\"memory_profile_path\"] is None\n"
           "assert d[\"file_path\"] == \"bad\\xff\\xfebyte.h5\"\n"
           "assert list(d)[0] == \"file_path\" and list(d)[28] == \"enable_tags\"\n"
           "'",
           SP_TEST_PYTHON, (int)SP__NSETTINGS);
  if (!sp_test_file_exists(SP_TEST_PYTHON)) SKIP("no %s", SP_TEST_PYTHON);
  ASSERT_EQ(sp_test_sh(cmd), 0);
}

SP_TEST(generated_docs_cover_every_setting) {
  char *md = sp__config_markdown(), *help = sp__config_help_text();
  ASSERT(md && help);
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    char cell[96];
    snprintf(cell, sizeof cell, "| `%s` |", sp__settings[i].name);
    ASSERT_CONTAINS(md, cell);
    ASSERT_CONTAINS(help, sp__settings[i].name);
    ASSERT_CONTAINS(help, sp__settings[i].doc);
    if (sp__settings[i].dotted) ASSERT_CONTAINS(md, sp__settings[i].dotted);
  }
  ASSERT_CONTAINS(md, "built-in default < TOML file < options < environment < overrides");
  ASSERT_CONTAINS(md, "SCOPE_PROFILER_ENABLE_TAGS");
  ASSERT_CONTAINS(help, "one of none, auto, gzip, lzf, zstd");
  ASSERT_CONTAINS(help, "integer >= 1; default 1024");
  free(md);
  free(help);
}

/* The TOML examples in the generated docs load, and all mean the same. */
SP_TEST(documented_toml_examples_agree) {
  sp_test_clean_env(0);
  char *md = sp__config_markdown();
  ASSERT(md);
  char *first = NULL;
  int n = 0;
  for (char *p = strstr(md, "```toml\n"); p; p = strstr(p, "```toml\n")) {
    p += 8;
    char *end = strstr(p, "```");
    ASSERT(end);
    char name[32];
    snprintf(name, sizeof name, "doc%d.toml", n++);
    FILE *f = fopen(name, "w");
    ASSERT(f);
    fwrite(p, 1, (size_t)(end - p), f);
    fclose(f);
    struct sp_config c;
    resolve_ok(&c, NULL, name, NULL);
    ASSERT_EQ(sp_config_origin(&c, "hdf5_compression_level"), SP_ORIGIN_FILE);
    char *json = sp__config_to_json(&c);
    sp__config_free(&c);
    if (!first) {
      first = json;
    } else {
      ASSERT_STR_EQ(json, first);
      free(json);
    }
    p = end + 3;
  }
  ASSERT_EQ(n, 4);
  ASSERT_CONTAINS(first, "\"perf_events\": [\"cycles\", \"instructions\"]");
  free(first);
  free(md);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
