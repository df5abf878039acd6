/* metadata.c - the /metadata attributes of a run.
 *
 * "minimal" (the default) records versions, platform, CPU model, thread and
 * rank counts, the label and the run start; never the user, host, working
 * directory or environment. "full" adds those, the loaded modules, PATH,
 * LD_LIBRARY_PATH and every SLURM_* variable, with values of secret-looking
 * variables redacted. Source paths of regions follow the same rule (relative
 * at minimal, absolute at full), applied in source_path_for().
 */
#include <dlfcn.h>
#include <hdf5.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/metadata.h"

#ifndef SP_COMPILER_ID
#define SP_COMPILER_ID "unknown"
#endif

extern char **environ;

/* The threads OpenMP runs with: the default team size, or the largest team
 * a parallel region actually had (num_threads(8) on a 2-core machine). */
int sp__omp_max_threads(void) {
  sp__int_fn fn = sp__find_int_fn("omp_get_max_threads");
  int team = sp__omp_max_team();
  if (fn) return fn() > team ? fn() : team;
  if (team > 0) return team;
  const char *e = getenv("OMP_NUM_THREADS");
  if (e && atoi(e) > 0) return atoi(e); /* first item of a nested list */
  return 1;
}

static char *cpu_model(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  char *model = NULL;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Processor", 9) == 0) {
      char *c = strchr(line, ':');
      if (c) {
        c++;
        while (*c == ' ' || *c == '\t') c++;
        c[strcspn(c, "\n")] = 0;
        model = sp__strdup(c);
        break;
      }
    }
  }
  if (f) fclose(f);
  return model ? model : sp__strdup("unknown");
}

/* Secret-looking names (docs/reliability.md lists them). */
int sp__env_name_is_secret(const char *name) {
  static const char *const pats[] = {"TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL", "AUTH"};
  char up[256];
  size_t i = 0;
  for (; name[i] && i < sizeof up - 1; i++) up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
  up[i] = 0;
  for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++)
    if (strstr(up, pats[k])) return 1;
  return 0;
}

static void env_attr(struct sp_meta *m, const char *name, const char *value) {
  sp__meta_str(m, name, sp__env_name_is_secret(name) ? "[redacted]" : value);
}

int sp__metadata_collect(const struct sp_config *cfg, int64_t start_time_ns, int mpi_size, struct sp_meta *m) {
  int rc = 0;
  char buf[512];
  unsigned maj, min, rel;
  H5get_libversion(&maj, &min, &rel);
  snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, rel);
  rc |= sp__meta_str(m, SP_META_VERSION, SP_VERSION_STRING);
  rc |= sp__meta_str(m, SP_META_HDF5_VERSION, buf);
  rc |= sp__meta_str(m, SP_META_COMPILER, SP_COMPILER_ID);
  rc |= sp__meta_str(m, SP_META_SOURCE, "native");
  rc |= sp__meta_str(m, SP_META_SOURCE_LANGUAGE, "c");
  struct utsname u;
  if (uname(&u) == 0) {
    snprintf(buf, sizeof buf, "%s-%s-%s", u.sysname, u.release, u.machine);
    rc |= sp__meta_str(m, SP_META_PLATFORM, buf);
  }
  char *cpu = cpu_model();
  rc |= sp__meta_str(m, SP_META_CHIP, cpu);
  free(cpu);
  int threads = sp__omp_max_threads();
  rc |= sp__meta_i64(m, SP_META_OMP_THREADS, threads);
  rc |= sp__meta_i64(m, SP_META_MPI_SIZE, mpi_size);
  rc |= sp__meta_i64(m, SP_META_TOTAL_CORES, (int64_t)mpi_size * threads);
  rc |= sp__meta_i64(m, SP_META_START_TIME_NS, start_time_ns);
  rc |= sp__meta_str(m, SP_META_CLOCK, sp__clock_name());
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  rc |= sp__meta_str(m, SP_META_TIMESTAMP, buf);
  rc |= sp__meta_str(m, SP_META_LABEL, cfg->display_label ? cfg->display_label : "");
  rc |= sp__meta_str(m, SP_META_DETAIL, SP__ENUM_WORD(metadata_detail, cfg->metadata_detail));
  char *settings = sp__config_to_json(cfg);
  if (settings) rc |= sp__meta_str(m, SP_META_SETTINGS, settings);
  free(settings);

  if (cfg->metadata_detail == SP__METADATA_FULL) {
    struct passwd pw, *pwr = NULL;
    char pwbuf[1024];
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &pwr) == 0 && pwr) rc |= sp__meta_str(m, SP_META_USER, pw.pw_name);
    if (gethostname(buf, sizeof buf) == 0) {
      buf[sizeof buf - 1] = 0;
      rc |= sp__meta_str(m, SP_META_HOSTNAME, buf);
    }
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) rc |= sp__meta_str(m, SP_META_CWD, cwd);
    /* uname names the host, so only at "full" */
    if (uname(&u) == 0) {
      char *un = sp__asprintf("uname_result(system='%s', node='%s', release='%s', version='%s', machine='%s')",
                              u.sysname, u.nodename, u.release, u.version, u.machine);
      if (un) rc |= sp__meta_str(m, SP_META_UNAME, un);
      free(un);
    }
    const char *mods = getenv("LOADEDMODULES");
    char *modcopy = sp__strdup(mods ? mods : "");
    char *list[256];
    size_t nm = 0;
    for (char *save = NULL, *tok = modcopy ? strtok_r(modcopy, ":", &save) : NULL; tok && nm < 256;
         tok = strtok_r(NULL, ":", &save))
      list[nm++] = tok;
    rc |= sp__meta_strlist(m, SP_META_MODULES, list, nm);
    free(modcopy);
    static const char *const vars[] = {"PATH", "LD_LIBRARY_PATH", "LOADEDMODULES", "MODULEPATH",
                                       "MODULESHOME", "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
      const char *v = getenv(vars[i]);
      if (v) env_attr(m, vars[i], v);
    }
    for (char **e = environ; e && *e; e++) {
      if (strncmp(*e, "SLURM_", 6) != 0 && strncmp(*e, "SLURMD_", 7) != 0) continue;
      const char *eq = strchr(*e, '=');
      if (!eq) continue;
      char *name = sp__strndup(*e, (size_t)(eq - *e));
      if (name) env_attr(m, name, eq + 1);
      free(name);
    }
  }
  return rc ? -1 : 0;
}

char *sp__source_path_for(const char *file, int full) {
  if (!file) return sp__strdup("");
  char abs[PATH_MAX], cwd[PATH_MAX];
  const char *a = realpath(file, abs) ? abs : file;
  if (full) return sp__strdup(a);
  if (a[0] == '/' && getcwd(cwd, sizeof cwd)) {
    size_t n = strlen(cwd);
    if (strncmp(a, cwd, n) == 0 && a[n] == '/') return sp__strdup(a + n + 1);
    const char *base = strrchr(a, '/');
    return sp__strdup(base ? base + 1 : a); /* outside the cwd: the name only */
  }
  return sp__strdup(a);
}
