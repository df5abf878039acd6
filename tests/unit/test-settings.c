/* test-settings.c - what setup says about settings: one warning for every
 * setting this build cannot honour when it is turned on (and none for one
 * that is available), one line naming the setting and the fix when a setup
 * fails, nothing under `quiet`; and the checks setup shares with
 * `scope-profiler config check` (signal names, the output directory).
 *
 * The table-driven cases walk every row, so a row marked available that
 * still warns, or a row whose warning disappeared, fails here without
 * anyone having to list it. Each case runs in its own process
 * (tests/harness.h), so the once-per-process warnings start fresh.
 */
#include <fcntl.h>

#include "config/config_internal.h"
#include "config/settings_meta.h"
#include "core/core.h"
#include "harness.h"
#include "setup_util.h"

/*====== Capturing messages ======*/

#define MAXMSG 64
static struct {
  int n;
  sp_message_level level[MAXMSG];
  char text[MAXMSG][2048];
} got;

static void capture(sp_message_level level, const char *text, void *user) {
  (void)user;
  if (got.n < MAXMSG) {
    got.level[got.n] = level;
    snprintf(got.text[got.n], sizeof got.text[0], "%s", text);
  }
  got.n++;
}

static void listen(void) {
  memset(&got, 0, sizeof got);
  sp_set_message_handler(capture, NULL);
}

/* Messages that are about setting `name` ("name = ..."). */
static int about(const char *name) {
  int k = 0;
  size_t n = strlen(name);
  for (int i = 0; i < got.n && i < MAXMSG; i++)
    if (!strncmp(got.text[i], name, n) && !strncmp(got.text[i] + n, " = ", 3)) k++;
  return k;
}

static int unavailable_messages(void) {
  int k = 0;
  for (int i = 0; i < got.n && i < MAXMSG; i++)
    if (strstr(got.text[i], "not available in this build")) k++;
  return k;
}

/* A value of the setting other than its default, as override text. */
static const char *on_value(const struct sp__setting *s, char buf[64]) {
  switch (s->type) {
  case SP__ST_BOOL:
    return s->idef ? "false" : "true";
  case SP__ST_INT:
    snprintf(buf, 64, "%lld", (long long)(s->idef == s->lo ? s->hi : s->lo));
    return buf;
  case SP__ST_ENUM:
    /* the first choice that is not the default */
    snprintf(buf, 64, "%s", s->choices[s->idef == 0 ? 1 : 0]);
    return buf;
  case SP__ST_STR:
    return "x.h5";
  case SP__ST_LIST:
    /* a counter every Linux kernel has, for perf_events */
    return s->sdef && *s->sdef ? "SIGUSR2" : "task-clock";
  }
  return "";
}

/* Set up a fresh manager with "name=value" (plus `extra`, when not NULL);
 * returns setup's status. */
static sp_status setup_with(const char *item, const char *extra) {
  const char *ovr[] = {item, extra, NULL};
  sp_setup_args a = {.overrides = ovr};
  sp_manager *m = sp_manager_create();
  ASSERT(m);
  sp_status st = sp_manager_setup(m, &a);
  sp_manager_destroy(m);
  return st;
}

static void count_cb(const char *name, const char *value, void *user) {
  char *out = user;
  strcat(out, name);
  strcat(out, "=");
  strcat(out, value);
  strcat(out, ";");
}

/*====== Settings this build cannot honour ======*/

/* The builds that CI runs have every feature, so these cases stand in for a
 * build without some: sp__setting_mark_unavailable() (internal, reached by
 * no public call) makes a row UNBUILT or PLANNED in this process only, and
 * the warning is the one such a build gives. tests/unavailable/ runs the
 * same warnings through the CLI and Python on a build configured with those
 * switches really off. Each case runs in its own process, so marks and the
 * once-per-process warnings start fresh. */

/* What a build with every optional switch off lacks: the rows a switch
 * brings (BUILT_IF in their block). Returns how many it marked. */
static int mark_switched_rows(void) {
  int n = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++)
    if (sp__settings[i].build) {
      sp__setting_mark_unavailable(i, SP__SS_UNBUILT);
      n++;
    }
  return n;
}

SP_TEST(statuses_come_from_the_table_and_its_build_switches) {
  int switched = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    ASSERT_EQ(sp__setting_status(i), s->status);
    if (s->build) {
      /* a switch decides: READY or left out, and the text names the switch */
      switched++;
      ASSERT(s->status == SP__SS_READY || s->status == SP__SS_UNBUILT);
      ASSERT_CONTAINS(s->build, "SP_WITH_");
    } else {
      ASSERT(s->status != SP__SS_UNBUILT);
    }
  }
  ASSERT(sp__settings[SP__SET_use_nvtx].build && sp__settings[SP__SET_perf_events].build);
  ASSERT(sp__settings[SP__SET_use_likwid].build && sp__settings[SP__SET_use_memray].build);
  ASSERT_GT(switched, 3);
  ASSERT_EQ(sp__settings[SP__SET_file_path].status, SP__SS_READY);
  ASSERT_EQ(sp__settings[SP__SET_use_gpu_timing].status, SP__SS_READY);
  /* a mark changes what this process reports, and READY gives the row back */
  sp__setting_mark_unavailable(SP__SET_use_gpu_timing, SP__SS_PLANNED);
  ASSERT_EQ(sp__setting_status(SP__SET_use_gpu_timing), SP__SS_PLANNED);
  sp_setting_info info = {.size = sizeof info};
  ASSERT_OK(sp_setting_info_at(SP__SET_use_gpu_timing, &info));
  ASSERT_EQ(info.status, SP_SETTING_PLANNED);
  sp__setting_mark_unavailable(SP__SET_use_gpu_timing, SP__SS_READY);
  ASSERT_EQ(sp__setting_status(SP__SET_use_gpu_timing), SP__SS_READY);
  ASSERT_OK(sp_setting_info_at(SP__SET_use_gpu_timing, &info));
  ASSERT_EQ(info.status, SP_SETTING_READY);
}

SP_TEST(every_switched_off_setting_warns_once_at_setup) {
  sp_test_clean_env(1);
  listen();
  ASSERT_GT(mark_switched_rows(), 3);
  int warned = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    if (sp__setting_status(i) == SP__SS_READY) continue;
    char buf[64], item[160];
    snprintf(item, sizeof item, "%s=%s", s->name, on_value(s, buf));
    /* memory_profile_path means something only with use_memray, which
     * comes earlier in the table and has had its own warning already */
    const char *extra = i == SP__SET_memory_profile_path ? "use_memray=true" : NULL;
    int before = about(s->name);
    sp_status st = setup_with(item, extra);
    /* a container may forbid perf_event_open: a setup that fails says that instead */
    if (st == SP_ERR_UNSUPPORTED && i == SP__SET_perf_events) continue;
    if (st) SP_FAIL_("setup with %s failed: %s", item, sp_last_error());
    if (about(s->name) - before != 1) SP_FAIL_("%s: %d warnings, expected 1", item, about(s->name) - before);
    warned++;
  }
  ASSERT_GT(warned, 3);
  int unavailable = 0;
  for (int k = 0; k < got.n; k++) {
    if (!strstr(got.text[k], "not available in this build")) continue; /* e.g. likwid's own */
    unavailable++;
    ASSERT_EQ(got.level[k], SP_MESSAGE_WARNING);
    ASSERT_CONTAINS(got.text[k], "in the overrides");
    ASSERT_CONTAINS(got.text[k], "(left out when it was built: rebuild with SP_WITH_");
  }
  ASSERT_EQ(unavailable, warned);
  /* Once per process: a second setup with every one of them is silent. */
  int n = unavailable_messages();
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    char buf[64], item[160];
    if (sp__setting_status(i) == SP__SS_READY || i == SP__SET_perf_events) continue;
    snprintf(item, sizeof item, "%s=%s", s->name, on_value(s, buf));
    ASSERT_OK(setup_with(item, NULL));
  }
  ASSERT_EQ(unavailable_messages(), n);
}

SP_TEST(any_row_marked_unavailable_warns_when_turned_on) {
  /* Through the resolved configuration alone, row by row, so no rule
   * between settings can hide a row: each row as this build has it (only
   * an unavailable one warns), then marked planned (it warns, once). */
  sp_test_clean_env(1);
  listen();
  struct sp_config c;
  ASSERT_OK(sp__config_resolve(&c, NULL));
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    char buf[64];
    const char *old = c.text[i];
    sp_origin oo = c.origin[i];
    c.text[i] = (char *)on_value(s, buf);
    c.origin[i] = SP_ORIGIN_OPTIONS;
    int before = got.n;
    sp__config_warn_unavailable(&c);
    int want = s->status != SP__SS_READY;
    if (got.n - before != want)
      SP_FAIL_("%s (%s): %d warnings, expected %d", s->name, want ? "unavailable" : "available",
               got.n - before, want);
    if (!want) {
      sp__setting_mark_unavailable(i, SP__SS_PLANNED);
      sp__config_warn_unavailable(&c);
      if (got.n - before != 1) SP_FAIL_("%s marked planned: %d warnings, expected 1", s->name, got.n - before);
      ASSERT_CONTAINS(got.text[before], "(not implemented yet)");
      sp__config_warn_unavailable(&c); /* once */
      ASSERT_EQ(got.n - before, 1);
      sp__setting_mark_unavailable(i, SP__SS_READY);
    }
    ASSERT_CONTAINS(got.text[before], s->name);
    c.text[i] = (char *)old;
    c.origin[i] = oo;
  }
  sp__config_free(&c);
}

SP_TEST(available_settings_never_warn) {
  sp_test_clean_env(1);
  listen();
  /* use_gpu_timing works here through the test driver; without a driver it
   * would warn that this machine has none, which is not about the build. */
  setenv("SCOPE_PROFILER_CUDA_LIBRARY", SP_TEST_BINARY_DIR "/tests/mock_cuda/libcuda.so.1", 1);
  int tried = 0;
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    if (sp__setting_status(i) != SP__SS_READY || i == SP__SET_quiet) continue;
    char buf[64], item[160];
    snprintf(item, sizeof item, "%s=%s", s->name, on_value(s, buf));
    const char *extra = i == SP__SET_hdf5_compression_level ? "hdf5_compression=gzip"
                        : i == SP__SET_gpu_sync_on_exit        ? "use_gpu_timing=true"
                                                                : NULL;
    sp_status st = setup_with(item, extra);
    /* a container may forbid perf_event_open: the setting works, the place does not */
    if (st == SP_ERR_UNSUPPORTED && i == SP__SET_perf_events) continue;
    if (st) SP_FAIL_("setup with %s failed: %s", item, sp_last_error());
    tried++;
    /* use_likwid works, and says when it cannot here (no likwid-perfctr) */
    if (i == SP__SET_use_likwid) got.n = 0;
    if (unavailable_messages()) SP_FAIL_("%s warns: %s", item, got.text[0]);
  }
  ASSERT_GT(tried, 15);
  ASSERT_EQ(got.n, 0);
}

SP_TEST(a_setting_at_its_default_does_not_warn) {
  sp_test_clean_env(1);
  listen();
  mark_switched_rows();
  sp__setting_mark_unavailable(SP__SET_gpu_timing_backend, SP__SS_PLANNED);
  ASSERT_OK(setup_with("use_nvtx=false", "gpu_timing_backend=auto"));
  ASSERT_OK(setup_with("use_memray=false", "memray.native_traces=false"));
  ASSERT_EQ(got.n, 0);
  ASSERT_OK(setup_with("use_nvtx=true", NULL));
  ASSERT_EQ(got.n, 1);
  ASSERT_CONTAINS(got.text[0], "use_nvtx = true");
}

SP_TEST(the_warning_says_where_the_setting_came_from) {
  sp_test_clean_env(1);
  listen();
  mark_switched_rows();
  setenv("SCOPE_PROFILER_USE_NVTX", "1", 1);
  sp_test_write_file("p.toml", "[profiling.memray]\nenabled = true\n");
  sp_options o = SP_OPTIONS_INIT;
  o.memray.native_traces = 1;
  sp_setup_args a = {.options = &o, .config_path = "p.toml"};
  ASSERT_OK(sp_setup(&a));
  ASSERT_EQ(got.n, 3);
  ASSERT_EQ(about("use_nvtx"), 1);
  ASSERT_EQ(about("use_memray"), 1);
  ASSERT_EQ(about("memray_native_traces"), 1);
  for (int k = 0; k < 3; k++) {
    if (strstr(got.text[k], "use_nvtx")) {
      ASSERT_CONTAINS(got.text[k], "use_nvtx = true (set by SCOPE_PROFILER_USE_NVTX)");
      ASSERT_CONTAINS(got.text[k], "rebuild with SP_WITH_NVTX=ON and the NVTX3 headers");
    }
    if (strstr(got.text[k], "use_memray")) ASSERT_CONTAINS(got.text[k], "set in p.toml");
    if (strstr(got.text[k], "memray_native_traces")) {
      ASSERT_CONTAINS(got.text[k], "memray_native_traces = true (set in the options)");
      ASSERT_CONTAINS(got.text[k], "rebuild with SP_WITH_MEMORY=ON");
    }
  }
}

SP_TEST(quiet_or_deactivated_runs_say_nothing) {
  sp_test_clean_env(1);
  listen();
  mark_switched_rows();
  ASSERT_OK(setup_with("use_nvtx=true", "quiet=true"));
  ASSERT_OK(setup_with("use_memray=true", "deactivate_profiling=true"));
  setenv("SCOPE_PROFILER_QUIET", "yes", 1);
  ASSERT_OK(setup_with("memray_follow_fork=true", NULL));
  ASSERT_EQ(got.n, 0);
  /* not used up by the quiet setups: the next one that speaks warns */
  unsetenv("SCOPE_PROFILER_QUIET");
  ASSERT_OK(setup_with("use_nvtx=true", NULL));
  ASSERT_EQ(about("use_nvtx"), 1);
}

SP_TEST(only_rank_zero_of_a_job_warns) {
  sp_test_clean_env(1);
  listen();
  mark_switched_rows();
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  ASSERT_OK(setup_with("use_nvtx=true", NULL));
  ASSERT_EQ(got.n, 0);
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ASSERT_OK(setup_with("use_nvtx=true", NULL));
  ASSERT_EQ(got.n, 1);
}

/*====== A setup that fails says so ======*/

SP_TEST(a_failed_setup_prints_one_line_naming_the_setting) {
  sp_test_clean_env(1);
  listen();
  setenv("SCOPE_PROFILER_BUFFER_LIMIT", "abc", 1);
  sp_status st = sp_setup(NULL);
  ASSERT_EQ(st, SP_ERR_INVALID_VALUE);
  ASSERT_EQ(got.n, 1);
  ASSERT_EQ(got.level[0], SP_MESSAGE_ERROR);
  ASSERT_CONTAINS(got.text[0], "setup failed");
  ASSERT_CONTAINS(got.text[0], "SCOPE_PROFILER_BUFFER_LIMIT");
  ASSERT_CONTAINS(got.text[0], "fix or unset it");
  /* the message for the program is still the setup's own */
  ASSERT_CONTAINS(got.text[0], sp_last_error());
  ASSERT(strstr(sp_last_error(), "setup failed") == NULL);
  ASSERT_EQ(sp_is_active(), 0);

  setenv("SCOPE_PROFILER_BUFFER_LIMIT", "64", 1);
  setenv("SCOPE_PROFILER_OUTPUT_MODE", "Direct", 1);
  ASSERT_EQ(sp_setup(NULL), SP_ERR_INVALID_VALUE);
  ASSERT_EQ(got.n, 2);
  ASSERT_CONTAINS(got.text[1], "SCOPE_PROFILER_OUTPUT_MODE");
  ASSERT_CONTAINS(got.text[1], "write it in lowercase");
}

SP_TEST(a_bad_config_file_prints_its_line) {
  sp_test_clean_env(1);
  listen();
  sp_test_write_file("bad.toml", "[profiling]\nbuffer_limit = \"big\"\n");
  sp_setup_args a = {.config_path = "bad.toml"};
  ASSERT_EQ(sp_setup(&a), SP_ERR_INVALID_VALUE);
  ASSERT_EQ(got.n, 1);
  ASSERT_CONTAINS(got.text[0], "bad.toml:2:16");
  setenv("SCOPE_PROFILER_CONFIG", "missing.toml", 1);
  ASSERT_EQ(sp_setup(NULL), SP_ERR_NOT_FOUND);
  ASSERT_EQ(got.n, 2);
  ASSERT_CONTAINS(got.text[1], "SCOPE_PROFILER_CONFIG");
  ASSERT_CONTAINS(got.text[1], "missing.toml");
}

SP_TEST(quiet_from_any_layer_silences_a_failed_setup) {
  sp_test_clean_env(1);
  listen();
  setenv("SCOPE_PROFILER_BUFFER_LIMIT", "abc", 1);
  const char *ovr[] = {" quiet = on", NULL};
  sp_setup_args a = {.overrides = ovr};
  ASSERT_EQ(sp_setup(&a), SP_ERR_INVALID_VALUE);
  sp_options o = SP_OPTIONS_INIT; /* quiet has no field: it is set by key */
  ASSERT_OK(sp_options_set(&o, "quiet", "1"));
  sp_setup_args b = {.options = &o};
  ASSERT_EQ(sp_setup(&b), SP_ERR_INVALID_VALUE);
  sp_options_clear(&o);
  sp_test_write_file("q.toml", "[profiling]\nquiet = true\n");
  sp_setup_args c = {.config_path = "q.toml"};
  ASSERT_EQ(sp_setup(&c), SP_ERR_INVALID_VALUE);
  ASSERT_EQ(got.n, 0);
  /* the hint left the setup's message alone */
  ASSERT_CONTAINS(sp_last_error(), "SCOPE_PROFILER_BUFFER_LIMIT");
  /* a higher layer turning quiet off again wins */
  setenv("SCOPE_PROFILER_QUIET", "0", 1);
  ASSERT_EQ(sp_setup(&c), SP_ERR_INVALID_VALUE);
  ASSERT_EQ(got.n, 1);
}

/* stderr of fn() run in a child, in buf. */
static void stderr_of(void (*fn)(void), char *buf, size_t size) {
  fflush(stderr);
  int fd = open("stderr.txt", O_CREAT | O_TRUNC | O_WRONLY, 0600);
  ASSERT(fd >= 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    fn();
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  close(fd);
  FILE *f = fopen("stderr.txt", "r");
  size_t n = f ? fread(buf, 1, size - 1, f) : 0;
  buf[n] = '\0';
  if (f) fclose(f);
}

static void bad_env_setup(void) {
  setenv("SCOPE_PROFILER_HDF5_SCHEMA", "7", 1);
  setenv("SCOPE_PROFILER_USE_NVTX", "1", 1);
  (void)sp_setup(NULL);
}

static void unavailable_setup(void) {
  setenv("SCOPE_PROFILER_USE_NVTX", "1", 1);
  (void)sp_setup(NULL);
}

SP_TEST(messages_go_to_stderr_as_one_line_each) {
  sp_test_clean_env(1);
  mark_switched_rows();
  char buf[4096];
  stderr_of(bad_env_setup, buf, sizeof buf);
  ASSERT_CONTAINS(buf, "scope-profiler: error: setup failed, so this run records nothing: ");
  ASSERT_CONTAINS(buf, "SCOPE_PROFILER_HDF5_SCHEMA");
  ASSERT_CONTAINS(buf, "between 2 and 3");
  ASSERT(strchr(buf, '\n') == buf + strlen(buf) - 1);
  stderr_of(unavailable_setup, buf, sizeof buf);
  ASSERT_CONTAINS(buf, "scope-profiler: warning: use_nvtx = true (set by "
                       "SCOPE_PROFILER_USE_NVTX) is not available in this build");
  ASSERT(strchr(buf, '\n') == buf + strlen(buf) - 1);
  setenv("PMI_RANK", "5", 1);
  stderr_of(bad_env_setup, buf, sizeof buf);
  ASSERT_CONTAINS(buf, "scope-profiler (rank 5): error: setup failed");
  /* a handler, then NULL again: back to stderr */
  listen();
  sp_set_message_handler(NULL, NULL);
  unsetenv("PMI_RANK");
  stderr_of(unavailable_setup, buf, sizeof buf);
  ASSERT_CONTAINS(buf, "scope-profiler: warning: use_nvtx");
  ASSERT_EQ(got.n, 0);
}

/*====== The checks setup and `config check` share ======*/

/* Setup and the check config check runs fail alike, with one message. */
static void both_refuse(const char *toml, sp_status want, const char *needle) {
  sp_test_write_file("c.toml", toml);
  sp_setup_args a = {.config_path = "c.toml"};
  struct sp_config c;
  sp_status st = sp__config_for_setup(&c, &a, SP__RESOLVE_NO_ENV);
  if (st != want) SP_FAIL_("check: status %d (%s), expected %d", st, sp_last_error(), want);
  ASSERT_CONTAINS(sp_last_error(), needle);
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", sp_last_error());
  sp_manager *m = sp_manager_create();
  ASSERT_EQ(sp_manager_setup(m, &a), want);
  ASSERT_STR_EQ(sp_last_error(), msg);
  ASSERT_EQ(sp_manager_is_active(m), 0);
  sp_manager_destroy(m);
}

SP_TEST(unknown_signal_names_are_refused_by_check_and_setup) {
  sp_test_clean_env(1);
  listen();
  both_refuse("[profiling]\nsignals = [\"SIGTERM\", \"SIGFOO\"]\n", SP_ERR_INVALID_VALUE,
              "signals (set in c.toml) names \"SIGFOO\"");
  both_refuse("[profiling]\nsignals = \"TERM,KILL\"\n", SP_ERR_INVALID_VALUE, "\"KILL\"");
  sp_test_write_file("ok.toml", "[profiling]\nsignals = [\"TERM\", \"SIGUSR2\"]\n");
  sp_setup_args a = {.config_path = "ok.toml"};
  struct sp_config c;
  ASSERT_OK(sp__config_for_setup(&c, &a, SP__RESOLVE_NO_ENV));
  sp__config_free(&c);
  ASSERT_EQ(sp__signal_from_name("SIGXCPU"), SIGXCPU);
  ASSERT_EQ(sp__signal_from_name("USR1"), SIGUSR1);
  ASSERT_EQ(sp__signal_from_name("SIGKILL"), 0);
  ASSERT_EQ(sp__signal_from_name(""), 0);
}

SP_TEST(the_output_directory_is_checked_at_setup) {
  sp_test_clean_env(1);
  listen();
  both_refuse("[profiling]\nfile_path = \"no/such/dir/run.h5\"\n", SP_ERR_IO,
              "no/such/dir: No such file or directory; create it first");
  ASSERT_EQ(mkdir("out", 0700), 0);
  both_refuse("[profiling]\nfile_path = \"out\"\n", SP_ERR_IO, "file_path out (set in c.toml) is a "
              "directory; name a file inside it, e.g. out/profiling_data.h5");
  both_refuse("[profiling]\nfile_path = \"out/\"\n", SP_ERR_IO, "is a directory");
  sp_test_write_file("plain", "x");
  both_refuse("[profiling]\nfile_path = \"plain/run.h5\"\n", SP_ERR_IO, "plain");
  if (geteuid() != 0) {
    ASSERT_EQ(mkdir("ro", 0500), 0);
    both_refuse("[profiling]\nfile_path = \"ro/run.h5\"\n", SP_ERR_IO, "cannot create files in ro");
  }
  /* A run that writes nothing does not need a directory. */
  sp_test_write_file("c.toml", "[profiling]\nfile_path = \"no/such/run.h5\"\ndeactivate_file_output = true\n");
  sp_setup_args a = {.config_path = "c.toml"};
  ASSERT_OK(sp_setup(&a));
  /* ...and a good one passes and finalizes into place */
  const char *ovr[] = {"file_path=out/run.h5", NULL};
  sp_setup_args b = {.overrides = ovr, .replace = 1};
  ASSERT_OK(sp_setup(&b));
  ASSERT_OK(sp_finalize(NULL, NULL));
  ASSERT(sp_test_file_exists("out/run.h5"));
  ASSERT_EQ(got.n, 4 + (geteuid() != 0)); /* one line per refused setup */
}

/*====== The table, as programs and bindings read it ======*/

SP_TEST(the_public_table_matches_the_internal_one) {
  ASSERT_EQ(sp_setting_count(), SP__NSETTINGS);
  /* upstream's settings keep upstream's order */
  static const char *const upstream[] = {"file_path", "label", "use_likwid", "perf_events",
                                         "use_line_profiler", "use_memray"};
  for (size_t i = 0; i < sizeof upstream / sizeof upstream[0]; i++) ASSERT_STR_EQ(sp_setting_name(i), upstream[i]);
  ASSERT_STR_EQ(sp_setting_name(28), "enable_tags");
  for (size_t i = 0; i < SP__NSETTINGS; i++) {
    const struct sp__setting *s = &sp__settings[i];
    ASSERT(s->name != NULL); /* no hole in the numbering */
    sp_setting_info info = {.size = sizeof info};
    ASSERT_OK(sp_setting_info_at(i, &info));
    ASSERT_STR_EQ(info.name, s->name);
    ASSERT_STR_EQ(info.group, sp__groups[s->group].name);
    ASSERT_STR_EQ(info.doc, s->doc);
    char env[96];
    sp__setting_env_name(s, env, sizeof env);
    ASSERT_STR_EQ(info.env, env);
    ASSERT_EQ(info.status, s->status == SP__SS_READY     ? SP_SETTING_READY
                           : s->status == SP__SS_PLANNED ? SP_SETTING_PLANNED
                                                         : SP_SETTING_UNBUILT);
    if (sp__groups[s->group].spelled) {
      char dotted[128];
      snprintf(dotted, sizeof dotted, "%s.%s", info.group, info.field);
      ASSERT_STR_EQ(info.spelling, dotted);
    } else {
      ASSERT(info.spelling == NULL);
    }
    size_t at = 99;
    ASSERT_OK(sp_setting_find(s->name, &at));
    ASSERT_EQ(at, i);
    if (info.spelling) {
      ASSERT_OK(sp_setting_find(info.spelling, &at));
      ASSERT_EQ(at, i);
    }
    /* the default is a value the setter takes */
    if (info.has_default) ASSERT_OK(sp_setting_check(s->name, info.default_text));
    if (info.type == SP_SETTING_ENUM) {
      ASSERT(info.choices && info.choices[0]);
      for (size_t k = 0; info.choices[k]; k++) ASSERT_OK(sp_setting_check(s->name, info.choices[k]));
      ASSERT_EQ(sp_setting_check(s->name, "no-such-choice"), SP_ERR_INVALID_VALUE);
    } else {
      ASSERT(info.choices == NULL);
    }
    if (info.type == SP_SETTING_INT) {
      char t[32];
      snprintf(t, sizeof t, "%lld", (long long)info.min);
      ASSERT_OK(sp_setting_check(s->name, t));
      if (info.min > INT64_MIN) {
        snprintf(t, sizeof t, "%lld", (long long)info.min - 1);
        ASSERT_EQ(sp_setting_check(s->name, t), SP_ERR_INVALID_VALUE);
      }
    }
    /* the frozen fields are exactly the settings that have one */
    ASSERT_EQ(info.options_field, sp__options_has_field(i, 0));
    if (sp__options_has_field(i, 1)) ASSERT_STR_EQ(sp__options_group_field(i), s->short_name);
    else ASSERT(!s->dotted || i >= 35 || i == SP__SET_quiet);
  }
  ASSERT_EQ(sp_setting_find("hdf5_compresion", &(size_t){0}), SP_ERR_UNKNOWN_SETTING);
  ASSERT_CONTAINS(sp_last_error(), "did you mean 'hdf5_compression'");
  ASSERT_EQ(sp_setting_check("buffer_limit", "lots"), SP_ERR_INVALID_VALUE);
  ASSERT_CONTAINS(sp_last_error(), "buffer_limit expects an integer");
  sp_setting_info none = {0};
  ASSERT_EQ(sp_setting_info_at(0, &none), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "info->size");
  sp_setting_info big = {.size = sizeof big};
  ASSERT_EQ(sp_setting_info_at(SP__NSETTINGS, &big), SP_ERR_INVALID_ARGUMENT);
}

SP_TEST(an_older_caller_gets_only_the_fields_it_knows) {
  /* a struct cut after `field`, as a program built against a release whose
   * info ended there would pass */
  struct {
    sp_setting_info head;
    char canary[64];
  } v;
  memset(&v, 0x5a, sizeof v);
  v.head.size = offsetof(sp_setting_info, field) + sizeof v.head.field;
  ASSERT_OK(sp_setting_info_at(SP__SET_hdf5_compression, &v.head));
  ASSERT_STR_EQ(v.head.name, "hdf5_compression");
  ASSERT_STR_EQ(v.head.field, "compression");
  const unsigned char *after = (const unsigned char *)&v.head + v.head.size;
  ASSERT_EQ(*after, 0x5a);
  /* and a newer one, with fields this library does not know: zeroed */
  memset(&v, 0x5a, sizeof v);
  v.head.size = sizeof v;
  ASSERT_OK(sp_setting_info_at(SP__SET_hdf5_compression, &v.head));
  ASSERT_EQ(v.head.size, sizeof v);
  ASSERT_EQ(v.canary[0], 0);
  ASSERT_EQ(v.canary[63], 0);
  ASSERT_STR_EQ(v.head.choices[2], "gzip");
}

SP_TEST(groups_and_rules_are_read_from_the_table) {
  ASSERT_EQ(sp_setting_group_count(), SP__NGROUPS);
  int spelled = 0;
  for (size_t g = 0; g < sp_setting_group_count(); g++) {
    sp_setting_group_info gi = {.size = sizeof gi};
    ASSERT_OK(sp_setting_group_at(g, &gi));
    ASSERT(gi.name && gi.title && gi.doc);
    spelled += gi.spelled;
  }
  ASSERT_EQ(spelled, 3); /* the seed's memray, gpu and hdf5 */
  char *md = sp__config_markdown(), *help = sp__config_help_text();
  ASSERT(md && help);
  int kinds[5] = {0};
  ASSERT_EQ(sp_setting_rule_count(), SP__NRULES);
  for (size_t k = 0; k < sp_setting_rule_count(); k++) {
    sp_setting_rule_info ri = {.size = sizeof ri};
    ASSERT_OK(sp_setting_rule_at(k, &ri));
    ASSERT(ri.kind >= SP_RULE_CONFLICTS && ri.kind <= SP_RULE_RANGE);
    kinds[ri.kind]++;
    ASSERT_OK(sp_setting_find(ri.a, &(size_t){0}));
    ASSERT_OK(sp_setting_find(ri.b, &(size_t){0}));
    ASSERT_EQ(ri.choice != NULL, ri.kind == SP_RULE_RANGE);
    /* --help and the docs expand every rule */
    ASSERT_CONTAINS(help, ri.text);
    ASSERT_CONTAINS(md, ri.why);
  }
  ASSERT(kinds[SP_RULE_CONFLICTS] && kinds[SP_RULE_REQUIRES] && kinds[SP_RULE_IMPLIES] && kinds[SP_RULE_RANGE]);
  free(md);
  free(help);
}

/* Overrides text turning setting i on ("name=true", "name=<a choice>"). */
static const char *on_item(size_t i, int choice, char *buf, size_t size) {
  const struct sp__setting *s = &sp__settings[i];
  switch (s->type) {
  case SP__ST_BOOL: snprintf(buf, size, "%s=true", s->name); break;
  case SP__ST_INT: snprintf(buf, size, "%s=%lld", s->name, (long long)(s->lo > 1 ? s->lo : 1)); break;
  case SP__ST_ENUM: snprintf(buf, size, "%s=%s", s->name, s->choices[choice >= 0 ? choice : s->idef == 0 ? 1 : 0]); break;
  default: snprintf(buf, size, "%s=x", s->name); break;
  }
  return buf;
}

SP_TEST(every_rule_of_the_table_is_enforced) {
  sp_test_clean_env(1);
  for (size_t k = 0; k < sp__nrules; k++) {
    const struct sp__rule *r = &sp__rules[k];
    const char *an = sp__settings[r->a].name, *bn = sp__settings[r->b].name;
    char ia[160], ib[160], lv[160];
    struct sp_config c;
    sp_setup_args args = {0};
    switch (r->kind) {
    case SP__RULE_CONFLICTS: {
      const char *ov[] = {on_item((size_t)r->a, -1, ia, sizeof ia), on_item((size_t)r->b, -1, ib, sizeof ib), NULL};
      args.overrides = ov;
      ASSERT_EQ(sp__config_resolve(&c, &args), SP_ERR_CONFLICT);
      ASSERT_CONTAINS(sp_last_error(), an);
      ASSERT_CONTAINS(sp_last_error(), bn);
      ASSERT_CONTAINS(sp_last_error(), r->why);
      break;
    }
    case SP__RULE_REQUIRES: {
      const char *alone[] = {on_item((size_t)r->a, -1, ia, sizeof ia), NULL};
      args.overrides = alone;
      ASSERT_EQ(sp__config_resolve(&c, &args), SP_ERR_CONFLICT);
      ASSERT_CONTAINS(sp_last_error(), r->why);
      ASSERT_CONTAINS(sp_last_error(), bn);
      break;
    }
    case SP__RULE_IMPLIES: {
      const char *ov[] = {on_item((size_t)r->a, -1, ia, sizeof ia), NULL};
      args.overrides = ov;
      ASSERT_OK(sp__config_resolve(&c, &args));
      ASSERT(sp__config_is_on(&c, (size_t)r->b));
      ASSERT_EQ(c.origin[r->b], SP_ORIGIN_OVERRIDE);
      sp__config_free(&c);
      break;
    }
    case SP__RULE_RANGE: {
      on_item((size_t)r->b, r->choice, ib, sizeof ib);
      /* just outside the rule, inside the setting's own bounds */
      const struct sp__setting *as = &sp__settings[r->a];
      int64_t bad = r->lo > r->hi ? r->lo : r->hi < as->hi ? r->hi + 1 : r->lo - 1;
      ASSERT(bad >= as->lo && bad <= as->hi);
      snprintf(lv, sizeof lv, "%s=%lld", an, (long long)bad);
      const char *ov[] = {ib, lv, NULL};
      args.overrides = ov;
      ASSERT_EQ(sp__config_resolve(&c, &args), SP_ERR_INVALID_VALUE);
      ASSERT_CONTAINS(sp_last_error(), r->why);
      if (r->lo <= r->hi) {
        snprintf(lv, sizeof lv, "%s=%lld", an, (long long)r->lo);
        ASSERT_OK(sp__config_resolve(&c, &args));
        ASSERT_EQ(c.hdf5_compression_level, r->lo);
        sp__config_free(&c);
      }
      break;
    }
    }
  }
}

/*====== Options: frozen fields, everything else by key ======*/

SP_TEST(a_setting_without_a_field_is_set_and_read_by_key) {
  sp_test_clean_env(1);
  ASSERT_EQ(sp__options_has_field(SP__SET_quiet, 0), 0);
  sp_options o = SP_OPTIONS_INIT;
  char t[64];
  ASSERT_EQ(sp_options_get(&o, "quiet", t, sizeof t), SP_ERR_NOT_FOUND);
  ASSERT_OK(sp_options_set(&o, "quiet", "yes"));
  ASSERT_OK(sp_options_get(&o, "quiet", t, sizeof t));
  ASSERT_STR_EQ(t, "true");
  ASSERT_OK(sp_options_set(&o, "quiet", "off"));
  ASSERT_OK(sp_options_get(&o, "quiet", t, sizeof t));
  ASSERT_STR_EQ(t, "false");
  o.buffer_limit = 77; /* a field, read by key the same way */
  ASSERT_OK(sp_options_get(&o, "buffer_limit", t, sizeof t));
  ASSERT_STR_EQ(t, "77");
  ASSERT_EQ(sp_options_get(&o, "buffer_limit", t, 2), SP_ERR_LIMIT);
  ASSERT_OK(sp_options_set(&o, "hdf5.compression", "zstd"));
  ASSERT_OK(sp_options_get(&o, "hdf5_compression", t, sizeof t));
  ASSERT_STR_EQ(t, "zstd");
  ASSERT_STR_EQ(o.hdf5.compression, "zstd");
  ASSERT_EQ(sp_options_get(&o, "nope", t, sizeof t), SP_ERR_UNKNOWN_SETTING);
  char out[512] = "";
  ASSERT_OK(sp_options_each_set(&o, count_cb, out));
  ASSERT_STR_EQ(out, "buffer_limit=77;hdf5_compression=zstd;quiet=false;");
  /* resolved like any other setting, with its origin */
  ASSERT_OK(sp_options_set(&o, "quiet", "1"));
  sp_setup_args a = {.options = &o};
  struct sp_config c;
  ASSERT_OK(sp__config_resolve(&c, &a));
  ASSERT_EQ(c.quiet, 1);
  ASSERT_EQ(sp_config_bool(&c, "quiet"), 1);
  ASSERT_EQ(sp_config_origin(&c, "quiet"), SP_ORIGIN_OPTIONS);
  ASSERT_EQ(sp_config_int(&c, "buffer_limit"), 77);
  ASSERT_EQ(sp_config_int(&c, "quiet"), SP_INT_NONE); /* wrong type */
  ASSERT(sp_config_list(&c, "signals")[0] != NULL);
  ASSERT(sp_config_list(&c, "quiet")[0] == NULL);
  sp__config_free(&c);
  /* unset again: gone from the storage */
  ASSERT_OK(sp_options_set(&o, "quiet", NULL));
  ASSERT_EQ(sp_options_get(&o, "quiet", t, sizeof t), SP_ERR_NOT_FOUND);
  sp_options_clear(&o);
  ASSERT(o.sp_i_owned == NULL && o.buffer_limit == SP_INT_NONE);
  ASSERT_EQ(o.sp_i_size, sizeof(sp_options));
}

SP_TEST(options_not_from_SP_OPTIONS_INIT_are_refused) {
  sp_test_clean_env(1);
  sp_options zero;
  memset(&zero, 0, sizeof zero);
  ASSERT_EQ(sp_options_set(&zero, "label", "x"), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "SP_OPTIONS_INIT");
  sp_setup_args a = {.options = &zero};
  struct sp_config c;
  ASSERT_EQ(sp__config_resolve(&c, &a), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "SP_OPTIONS_INIT");
  ASSERT_EQ(sp_load_profiling_config("whatever.toml", &zero), SP_ERR_INVALID_ARGUMENT);
  sp_options newer = SP_OPTIONS_INIT;
  newer.sp_i_size += 8; /* from a later release */
  ASSERT_EQ(sp_options_set(&newer, "label", "x"), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "rebuild");
  sp_options ok = SP_OPTIONS_INIT;
  ASSERT_OK(sp_options_set(&ok, "label", "x"));
  sp_options_clear(&ok);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
