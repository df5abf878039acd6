/* fuzz_toml.c - libFuzzer target for everything that reads configuration
 * text: the TOML reader, the [profiling] loader with the resolver and the
 * settings JSON behind it, and the key setter / override list.
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks one property:
 * the flattened dump of any document the reader accepts is itself TOML, and
 * reading it back must give the very same dump. A reader that misreads a
 * value (a lost escape, a wrong float, a key in the wrong table) breaks that.
 *
 * Build and run with scripts/fuzz.sh; it compiles this file together with
 * src/common/ and src/config/ only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "config/settings_meta.h"
#include "config/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void reader(const char *text, size_t size) {
  sp__toml_value *root = NULL;
  if (sp__toml_parse(text, size, "fuzz.toml", &root) != SP_OK) return;
  char *dump = sp__toml_dump(root);
  sp__toml_free(root);
  if (!dump) return;
  sp__toml_value *again = NULL;
  if (sp__toml_parse(dump, strlen(dump), "dump.toml", &again) != SP_OK) {
    fprintf(stderr, "the dump of an accepted document does not parse: %s\n--- dump\n%s",
            sp_last_error(), dump);
    abort();
  }
  char *dump2 = sp__toml_dump(again);
  sp__toml_free(again);
  if (dump2 && strcmp(dump, dump2) != 0) {
    fprintf(stderr, "dump is not stable\n--- first\n%s--- second\n%s", dump, dump2);
    abort();
  }
  free(dump2);
  free(dump);
}

static void resolve_and_render(const sp_options *o, const char *const *overrides) {
  sp_setup_args a = {0};
  a.options = o;
  a.overrides = overrides;
  struct sp_config c, d;
  if (sp__config_resolve_ex(&c, &a, SP__RESOLVE_NO_ENV) != SP_OK) return;
  char *json = sp__config_to_json(&c);
  if (sp__config_copy(&d, &c) == SP_OK) {
    char *json2 = sp__config_to_json(&d);
    if (json && json2 && strcmp(json, json2) != 0) abort();
    free(json2);
    sp__config_free(&d);
  }
  for (size_t i = 0; i < sp_setting_count(); i++) (void)sp_config_value_text(&c, sp_setting_name(i));
  (void)sp_config_list_len(sp_config_enable_tags(&c));
  free(json);
  sp__config_free(&c);
}

static void loader(const char *text, size_t size) {
  sp_options o = SP_OPTIONS_INIT;
  if (sp__load_profiling_text(text, size, "fuzz.toml", &o) == SP_OK) resolve_and_render(&o, NULL);
  sp_options_clear(&o);
}

static void each_cb(const char *name, const char *value, void *user) {
  (void)name;
  (void)value;
  (*(size_t *)user)++;
}

/* Lines of "key=value": through sp_options_set, and as an override list. */
static void setter(const char *text, size_t size) {
  enum { MAX_LINES = 16 }; /* each unknown key costs a did-you-mean search */
  char *copy = malloc(size + 1);
  if (!copy) return;
  memcpy(copy, text, size);
  copy[size] = '\0';
  const char *lines[MAX_LINES + 1];
  size_t n = 0;
  for (char *p = copy; p && *p && n < MAX_LINES;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    lines[n++] = p;
    p = nl ? nl + 1 : NULL;
  }
  lines[n] = NULL;
  sp_options o = SP_OPTIONS_INIT;
  for (size_t i = 0; i < n; i++) {
    char *eq = strchr(lines[i], '=');
    if (!eq) {
      (void)sp_options_set(&o, lines[i], NULL);
      continue;
    }
    char key[256];
    size_t kl = (size_t)(eq - lines[i]);
    if (kl >= sizeof key) kl = sizeof key - 1;
    memcpy(key, lines[i], kl);
    key[kl] = '\0';
    (void)sp_options_set(&o, key, eq + 1);
  }
  size_t count = 0;
  (void)sp_options_each_set(&o, each_cb, &count);
  resolve_and_render(&o, NULL);
  resolve_and_render(NULL, lines);
  sp_options_clear(&o);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  reader(text, size);
  loader(text, size);
  setter(text, size);
  return 0;
}
