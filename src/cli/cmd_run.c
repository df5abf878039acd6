/* cmd_run.c - `scope-profiler run [OPTIONS] -- PROGRAM ARGS...`: profile a
 * program without editing it.
 *
 * The launcher turns its options into SCOPE_PROFILER_* variables, checks
 * the configuration they make (so a mistake is reported before the program
 * runs), looks at the program's ELF file to choose what to preload, and then
 * replaces itself with the program (execv): the process is the program, so
 * signals reach it unchanged, its exit status is the command's, and under
 * mpirun each rank is the MPI process the launcher expects. Inside, the
 * preloaded library's constructor (src/core/autorun.c) sets up the session,
 * opens the whole-program root region before main and at exit closes it,
 * writes the file (one job file under MPI), prints the summary and says
 * where the file is.
 *
 * What is preloaded: libscope_profiler_mpi.so for MPI programs (and for any
 * program started by an MPI launcher, so that its ranks write one file),
 * else libscope_profiler.so, with libscope_profiler_run.so (its
 * pthread_create hands each thread the program starts to the session, for
 * the line sampler); nothing when the program carries a static copy of the
 * library (its own copy runs the session); plus the memory interposer for
 * --memory.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_opts.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/run_elf.h"
#include "common/diag.h"
#include "common/error.h"
#include "config/config_internal.h"
#include "config/settings_meta.h"

#define CMD "run"

#ifndef SP_RUN_LIBDIR_FROM_BIN
#  define SP_RUN_LIBDIR_FROM_BIN "../lib"
#endif

struct run_opts {
  struct sp_cli_strs pos;
  const char *file, *label, *config, *entrypoint, *perf_events;
  int recursive, line_profile, memory, aggregate, quiet, threads;
  struct sp_cli_strs exclude, exclude_files, set;
  long max_depth, line_rate;
};

static const struct sp_cli_opt rows[] = {
    {"--file", "-o", "PATH", SP_OPT_STR, offsetof(struct run_opts, file),
     .help = "the profile to write (file_path; default: profiling_data.h5, or what the configuration says)"},
    {"--label", NULL, "TEXT", SP_OPT_STR, offsetof(struct run_opts, label), .help = "the run's label (label)"},
    {"--config", NULL, "FILE", SP_OPT_STR, offsetof(struct run_opts, config),
     .help = "settings from this TOML file (SCOPE_PROFILER_CONFIG)"},
    {"--set", NULL, "KEY=VALUE", SP_OPT_LIST, offsetof(struct run_opts, set),
     .help = "any setting, e.g. --set hdf5_compression=auto (repeatable)"},
    {"--entrypoint", NULL, "NAME", SP_OPT_STR, offsetof(struct run_opts, entrypoint),
     .help = "name of the whole-program root region (default: the program's file name)"},
    {"--recursive", NULL, NULL, SP_OPT_FLAG, offsetof(struct run_opts, recursive),
     .help = "every function of a program compiled with -finstrument-functions becomes a region "
             "(recursive_profile)"},
    {"--exclude", NULL, "GLOB", SP_OPT_LIST, offsetof(struct run_opts, exclude),
     .help = "with --recursive: leave out functions whose name matches GLOB (recursive_exclude; repeatable)"},
    {"--exclude-file", NULL, "GLOB", SP_OPT_LIST, offsetof(struct run_opts, exclude_files),
     .help = "with --recursive: leave out functions of source files matching GLOB (recursive_exclude_files)"},
    {"--max-depth", NULL, "N", SP_OPT_INT, offsetof(struct run_opts, max_depth),
     .help = "with --recursive: record instrumented calls only down to depth N (recursive_max_depth), {range}",
     .def = "0", .lo = 0, .hi = 1000000, .what = "a depth"},
    {"--line-profile", NULL, NULL, SP_OPT_FLAG, offsetof(struct run_opts, line_profile),
     .help = "sample the program counter of every profiled thread and keep per-line times "
             "(use_line_profiler)"},
    {"--line-rate", NULL, "HZ", SP_OPT_INT, offsetof(struct run_opts, line_rate),
     .help = "with --line-profile: samples per CPU-second of a thread (line_profile_rate), {range}", .def = "1000",
     .lo = 1, .hi = 100000, .what = "a rate"},
    {"--memory", NULL, NULL, SP_OPT_FLAG, offsetof(struct run_opts, memory),
     .help = "record allocations through the memory interposer (use_memray)"},
    {"--perf-events", NULL, "LIST", SP_OPT_STR, offsetof(struct run_opts, perf_events),
     .help = "perf_event counters per region, e.g. cycles,instructions (perf_events)"},
    {"--aggregate", NULL, NULL, SP_OPT_FLAG, offsetof(struct run_opts, aggregate),
     .help = "keep per-region totals only, no timeline (aggregation_mode)"},
    {"--track-threads", NULL, NULL, SP_OPT_FLAG, offsetof(struct run_opts, threads),
     .help = "record the thread of every call (track_threads)"},
    {"--quiet", "-q", NULL, SP_OPT_FLAG, offsetof(struct run_opts, quiet),
     .help = "print neither the summary nor the file's location"},
};

static const char about[] =
    "Run PROGRAM under a profiling session without editing it: the whole run is\n"
    "one root region (named after the program), under which the program's own\n"
    "regions and, with --recursive, its functions are recorded. The options become\n"
    "SCOPE_PROFILER_* variables, so they outrank what the program sets itself; the\n"
    "configuration is checked before the program starts. At exit the summary and\n"
    "the file's location are printed on the program's stdout.\n";

static const char epilog[] =
    "exit status: the program's (a signal that ends the program ends this command\n"
    "the same way); 127: PROGRAM was not found; 126: it cannot be executed; 2: a\n"
    "usage or configuration error (the program did not run).\n"
    "examples:\n"
    "  scope-profiler run -o solver.h5 --line-profile -- ./solver input.dat\n"
    "  scope-profiler run --recursive --exclude 'vec_*' -- ./solver_instrumented\n"
    "  mpirun -np 4 scope-profiler run -- ./mpi_app      (one job file)\n";

static const struct sp_cli_spec spec = {
    CMD, "[options] [--] PROGRAM [ARGS...]", about, rows, SP_CLI_NROWS(rows), offsetof(struct run_opts, pos), NULL,
    epilog};

/* The options part of argv: up to "--", or up to the first argument that
 * is neither an option nor an option's value (the program). */
static int split_at_program(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) return i;
    if (a[0] != '-' || !a[1]) return i;
    const char *eq = strchr(a, '=');
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
    const struct sp_cli_opt *row = NULL;
    for (size_t k = 0; k < SP_CLI_NROWS(rows); k++)
      if (!strcmp(rows[k].name, name) || (rows[k].alias && !strcmp(rows[k].alias, name))) row = &rows[k];
    if (row && row->kind != SP_OPT_FLAG && !eq) i++; /* its value */
  }
  return argc;
}

static int set_env(const char *name, const char *value) {
  if (setenv(name, value, 1) == 0) return 0;
  return sp_cli_error(CMD, "cannot set %s in the environment: %s", name, strerror(errno));
}

/* SCOPE_PROFILER_<setting> = value, for a setting given by name. */
static int set_setting(const char *key, const char *value) {
  int grouped = 0;
  const struct sp__setting *s = sp__setting_find(key, &grouped);
  if (!s) {
    sp__unknown_setting(key);
    return sp_cli_usage_error(CMD, "--set %s: %s", key, sp_last_error());
  }
  sp__value v;
  if (sp__parse_text(s, key, value, &v) != SP_OK || sp__check_value(s, key, &v) != SP_OK)
    return sp_cli_usage_error(CMD, "%s", sp_last_error());
  char env[128];
  sp__setting_env_name(s, env, sizeof env);
  return set_env(env, value);
}

static char *join_list(const struct sp_cli_strs *l) {
  size_t len = 1;
  for (size_t i = 0; i < l->n; i++) len += strlen(l->v[i]) + 1;
  char *s = malloc(len), *p = s;
  if (!s) return NULL;
  for (size_t i = 0; i < l->n; i++) p += sprintf(p, "%s%s", i ? "," : "", l->v[i]);
  *p = 0;
  return s;
}

static int settings_to_env(const struct run_opts *o) {
  int rc = 0;
  if (o->config) rc |= set_env("SCOPE_PROFILER_CONFIG", o->config);
  if (o->file) rc |= set_setting("file_path", o->file);
  if (o->label) rc |= set_setting("label", o->label);
  if (o->recursive) rc |= set_setting("recursive_profile", "1");
  if (o->line_profile) rc |= set_setting("use_line_profiler", "1");
  if (o->memory) rc |= set_setting("use_memray", "1");
  if (o->aggregate) rc |= set_setting("aggregation_mode", "1");
  if (o->threads) rc |= set_setting("track_threads", "1");
  if (o->perf_events) rc |= set_setting("perf_events", o->perf_events);
  if (rc) return 2;
  /* Settings of extensions this build may not have yet: only when asked. */
  const struct {
    const char *key;
    const struct sp_cli_strs *list;
  } lists[] = {{"recursive_exclude", &o->exclude}, {"recursive_exclude_files", &o->exclude_files}};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    if (!lists[i].list->n) continue;
    char *v = join_list(lists[i].list);
    if (!v) return sp_cli_error(CMD, "out of memory");
    rc = set_setting(lists[i].key, v);
    free(v);
    if (rc) return rc;
  }
  char num[32];
  if (o->max_depth > 0) {
    snprintf(num, sizeof num, "%ld", o->max_depth);
    if ((rc = set_setting("recursive_max_depth", num))) return rc;
  }
  if (o->line_rate != 1000) {
    snprintf(num, sizeof num, "%ld", o->line_rate);
    if ((rc = set_setting("line_profile_rate", num))) return rc;
  }
  for (size_t i = 0; i < o->set.n; i++) {
    char *kv = o->set.v[i], *eq = strchr(kv, '=');
    if (!eq || eq == kv) return sp_cli_usage_error(CMD, "--set %s: write KEY=VALUE, e.g. --set label=baseline", kv);
    *eq = 0;
    rc = set_setting(kv, eq + 1);
    *eq = '=';
    if (rc) return rc;
  }
  return 0;
}

/* PROGRAM as execvp would find it; NULL (errno set) when it would not. */
static char *find_program(const char *prog) {
  if (strchr(prog, '/')) return access(prog, F_OK) == 0 ? strdup(prog) : NULL;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  int saw_eacces = 0;
  for (const char *p = path;;) {
    const char *c = strchr(p, ':');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    char *cand = sp__asprintf("%.*s%s%s", (int)n, p, n ? "/" : "", prog);
    struct stat st;
    if (cand && stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(cand, X_OK) == 0) return cand;
      saw_eacces = 1;
    }
    free(cand);
    if (!c) break;
    p = c + 1;
  }
  errno = saw_eacces ? EACCES : ENOENT;
  return NULL;
}

/* The directory of this executable. */
static int self_dir(char *buf, size_t size) {
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return -1;
  *slash = 0;
  return 0;
}

/* A library of ours in the install's library directory or next to this
 * executable (the build tree, where the memory interposer is built in
 * src/memory/); malloc'd, NULL when none has it. */
static char *find_library(const char *file) {
  char dir[PATH_MAX];
  if (self_dir(dir, sizeof dir) != 0) return NULL;
  const char *const where[] = {"/" SP_RUN_LIBDIR_FROM_BIN "/", "/", "/src/memory/"};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
    char *p = sp__asprintf("%s%s%s", dir, where[i], file);
    if (p && access(p, R_OK) == 0) {
      char *real = realpath(p, NULL);
      free(p);
      return real;
    }
    free(p);
  }
  return NULL;
}

static int preload(const char *lib) {
  const char *old = getenv("LD_PRELOAD");
  char *v = old && *old ? sp__asprintf("%s:%s", lib, old) : strdup(lib);
  if (!v) return sp_cli_error(CMD, "out of memory");
  int rc = set_env("LD_PRELOAD", v);
  free(v);
  return rc;
}

/* Check the configuration the environment now makes, as setup will. */
static int check_config(void) {
  struct sp_config cfg;
  if (sp__config_resolve(&cfg, NULL) != SP_OK)
    return sp_cli_error(CMD, "%s (nothing was run)", sp_last_error());
  sp__config_free(&cfg);
  return 0;
}

static int launch(struct run_opts *o) {
  const char *prog = o->pos.v[0];
  char *path = find_program(prog);
  if (!path) {
    int e = errno;
    fprintf(stderr, "scope-profiler %s: %s: %s\n", CMD, prog, e == EACCES ? "permission denied" : "not found");
    return e == EACCES ? 126 : 127;
  }
  struct sp_run_elf elf;
  int known = sp_run_elf_read(path, &elf) == 0;
  int rc = settings_to_env(o);
  if (rc) goto out;
  const char *base = strrchr(prog, '/');
  base = base ? base + 1 : prog;
  if ((rc = set_env("SCOPE_PROFILER_RUN", o->entrypoint ? o->entrypoint : base))) goto out;
  if (o->quiet && (rc = set_env("SCOPE_PROFILER_RUN_QUIET", "1"))) goto out;
  if ((rc = check_config())) goto out;

  int has_regions = known && elf.readable && (elf.links_sp || elf.links_sp_mpi || elf.static_sp);
  if (known && elf.readable && !elf.dynamic && !elf.static_sp) {
    rc = sp_cli_error(CMD, "%s is statically linked without scope-profiler: nothing can be preloaded into it; "
                      "link it dynamically, or link it with libscope_profiler.a", prog);
    goto out;
  }
  if (!(known && elf.static_sp)) {
    int mpi = (known && (elf.links_sp_mpi || (elf.needs_mpi && !elf.links_sp))) ||
              (!(known && elf.links_sp) && sp__launcher_rank() >= 0);
    const char *file = mpi ? "libscope_profiler_mpi.so.0" : "libscope_profiler.so.0";
    char *lib = find_library(file);
    if (!lib) {
      rc = sp_cli_error(CMD, "cannot find %s next to this executable or in its library directory "
                        "(%s); reinstall scope-profiler%s", file, SP_RUN_LIBDIR_FROM_BIN,
                        mpi ? " built with MPI (SP_WITH_MPI=ON)" : "");
      goto out;
    }
    rc = preload(lib);
    free(lib);
    if (rc) goto out;
    /* Its pthread_create: threads the program starts join the session. */
    if (!(lib = find_library("libscope_profiler_run.so.0"))) {
      rc = sp_cli_error(CMD, "cannot find libscope_profiler_run.so.0 next to this executable or in its library "
                        "directory (%s); reinstall scope-profiler", SP_RUN_LIBDIR_FROM_BIN);
      goto out;
    }
    rc = preload(lib);
    free(lib);
    if (rc) goto out;
  }
  if (o->memory) {
    char *lib = find_library("libscope_profiler_memory.so.0");
    if (!lib) {
      rc = sp_cli_error(CMD, "--memory needs the memory interposer libscope_profiler_memory.so, which this "
                        "installation does not have");
      goto out;
    }
    rc = preload(lib);
    free(lib);
    if (rc) goto out;
  }
  if (known && elf.readable && !o->quiet && sp__launcher_rank() <= 0) {
    if (!has_regions && !elf.instrumented)
      fprintf(stderr, "scope-profiler %s: %s has no scope-profiler regions and was not compiled with "
              "-finstrument-functions: only the whole-program region is recorded%s\n", CMD, prog,
              o->line_profile ? ", with line samples of the whole run" : " (add --line-profile for hot lines)");
    else if (o->recursive && !elf.instrumented)
      fprintf(stderr, "scope-profiler %s: --recursive: %s was not compiled with -finstrument-functions, so no "
              "function becomes a region; rebuild it with -finstrument-functions\n", CMD, prog);
  }
  fflush(stdout);
  fflush(stderr);
  char **av = calloc(o->pos.n + 1, sizeof *av); /* NULL-terminated */
  if (!av) {
    rc = sp_cli_error(CMD, "out of memory");
    goto out;
  }
  memcpy(av, o->pos.v, o->pos.n * sizeof *av);
  execv(path, av);
  free(av);
  int e = errno;
  fprintf(stderr, "scope-profiler %s: cannot execute %s: %s\n", CMD, prog, strerror(e));
  rc = e == ENOENT ? 127 : 126;
out:
  free(path);
  return rc;
}

int sp_cmd_run(int argc, char **argv) {
  struct run_opts o;
  memset(&o, 0, sizeof o);
  int split = split_at_program(argc, argv);
  int rc = sp_cli_parse(&spec, split, argv, &o);
  if (rc == SP_CLI_HELP) return 0;
  if (rc) return rc;
  if (split < argc && !strcmp(argv[split], "--")) split++;
  for (int i = split; i < argc; i++)
    if (sp_cli_strs_push(&o.pos, argv[i]) != 0) {
      sp_cli_opts_free(&spec, &o);
      return sp_cli_error(CMD, "out of memory");
    }
  if (o.pos.n == 0) {
    sp_cli_opts_free(&spec, &o);
    return sp_cli_usage_error(CMD, "no PROGRAM given: scope-profiler run [options] -- PROGRAM [ARGS...]");
  }
  rc = launch(&o);
  sp_cli_opts_free(&spec, &o);
  return rc;
}
