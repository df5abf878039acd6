/* fuzz_env.c - libFuzzer target for the environment as a source of settings:
 * SCOPE_PROFILER_<SETTING> values (any bytes but NUL), unknown
 * SCOPE_PROFILER_* names, SCOPE_PROFILER_ENABLE_TAGS, and SLURM_* variables
 * as metadata_detail=full records them, through the resolver and the
 * metadata collector.
 *
 * The input is lines of NAME=VALUE. A NAME starting with SLURM_ is used as
 * it is, any other gets the SCOPE_PROFILER_ prefix (the settings' upper-case
 * names, ENABLE_TAGS, and anything else as an unknown variable); scripts/
 * fuzz-all.sh gives libFuzzer the setting names as a dictionary. Besides "no
 * crash, no leak, no undefined behaviour" two properties are checked: a
 * resolved configuration renders, copies and renders again to the same JSON;
 * and with metadata_detail=full no SLURM_* variable whose name looks secret
 * (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, AUTH, any case) has its value
 * recorded.
 *
 * SCOPE_PROFILER_CONFIG is never set here (a path would make this the TOML
 * fuzzer, fuzz_toml.c). Build and run with scripts/fuzz-all.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "config/settings_meta.h"
#include "core/metadata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_VARS = 24 };

static int looks_secret(const char *name) {
  static const char *const pats[] = {"TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL", "AUTH"};
  char up[512];
  size_t i = 0;
  for (; name[i] && i < sizeof up - 1; i++)
    up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
  up[i] = 0;
  for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++)
    if (strstr(up, pats[k])) return 1;
  return 0;
}

static void check_metadata(const struct sp_config *c, char **names, size_t n) {
  struct sp_meta meta = {0};
  if (sp__metadata_collect(c, 0, 1, &meta) == 0) {
    for (size_t i = 0; i < n; i++) {
      if (strncmp(names[i], "SLURM_", 6) != 0 || !looks_secret(names[i])) continue;
      const struct sp_meta_item *it = sp__meta_get(&meta, names[i]);
      if (it && it->type == SP_META_STR && strcmp(it->s, "[redacted]") != 0) {
        fprintf(stderr, "secret-looking %s recorded as '%s'\n", names[i], it->s);
        abort();
      }
    }
  }
  sp__meta_free(&meta);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size + 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  copy[size] = '\0';
  char *names[MAX_VARS];
  size_t n = 0;
  const size_t nset = sp_setting_count();
  for (char *p = copy; *p && n < MAX_VARS;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    char *eq = strchr(p, '=');
    if (eq) {
      *eq = '\0';
      char name[300];
      snprintf(name, sizeof name, "%s%.200s", strncmp(p, "SLURM_", 6) ? "SCOPE_PROFILER_" : "", p);
      if (strcmp(name, "SCOPE_PROFILER_CONFIG") != 0 && setenv(name, eq + 1, 1) == 0 &&
          (names[n] = strdup(name)))
        n++;
    }
    p = nl ? nl + 1 : p + strlen(p);
  }

  struct sp_config c, d;
  if (sp__config_resolve(&c, NULL) == SP_OK) {
    char *json = sp__config_to_json(&c);
    if (sp__config_copy(&d, &c) == SP_OK) {
      char *json2 = sp__config_to_json(&d);
      if (json && json2 && strcmp(json, json2) != 0) {
        fprintf(stderr, "a copied configuration renders differently\n%s\n%s\n", json, json2);
        abort();
      }
      free(json2);
      sp__config_free(&d);
    }
    free(json);
    for (size_t i = 0; i < nset; i++) (void)sp_config_value_text(&c, sp_setting_name(i));
    c.metadata_detail = SP__METADATA_FULL;
    check_metadata(&c, names, n);
    sp__config_free(&c);
  } else if (sp_last_error()[0] == '\0') {
    fprintf(stderr, "the resolver failed without a message\n");
    abort();
  }
  for (size_t i = 0; i < n; i++) {
    unsetenv(names[i]);
    free(names[i]);
  }
  free(copy);
  return 0;
}
