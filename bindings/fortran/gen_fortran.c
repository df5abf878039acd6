/* gen_fortran.c - writes the Fortran module scope_profiler.f90 from its
 * template, at build time.
 *
 *   gen_fortran TEMPLATE OUTPUT
 *
 * The template's marker lines are replaced by what the library itself says,
 * so the module never carries a hand-kept copy of a list:
 *   !@SP_STATUS_CODES@  one integer parameter per status (SP_STATUS_MAP)
 *   !@SP_SETUP@         sp_setup with one optional keyword argument per
 *                       setting of the settings table, read through the
 *                       public table (the SP_SETTINGS rows of settings.h,
 *                       or the run-time API sp_setting_count/sp_setting_info_at):
 *                       logical for booleans, character(len=*) for strings,
 *                       choices and lists, and any integer kind for integers.
 * A setting whose name is not a Fortran name, or that collides with one of
 * sp_setup's own arguments, stops the build with a message naming it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"

/* The module declares sp_setup_args and sp_finalize_args as bind(C) types
 * (c_setup_args, c_finalize_args in the template): a change of either struct
 * must stop the build here rather than shift the fields under Fortran. */
#include <stddef.h>
_Static_assert(offsetof(sp_setup_args, options) == 0 &&
                   offsetof(sp_setup_args, config_path) == sizeof(void *) &&
                   offsetof(sp_setup_args, overrides) == 2 * sizeof(void *) &&
                   offsetof(sp_setup_args, replace) == 3 * sizeof(void *) &&
                   offsetof(sp_setup_args, auto_finalize) == 3 * sizeof(void *) + sizeof(int),
               "sp_setup_args changed: update c_setup_args in scope_profiler.f90.in");
_Static_assert(offsetof(sp_finalize_args, verbose) == 0 &&
                   offsetof(sp_finalize_args, summary_stream) == sizeof(void *) &&
                   offsetof(sp_finalize_args, return_results) == 2 * sizeof(void *),
               "sp_finalize_args changed: update c_finalize_args in scope_profiler.f90.in");

static const char *const fixed_args[] = {"config_path", "settings", "replace", "auto_finalize",
                                         "manager", "status", NULL};

static int die(const char *what) {
  fprintf(stderr, "gen_fortran: %s\n", what);
  return 1;
}

/* Fortran free form allows 132 columns; keep docs comments shorter. */
static void comment(FILE *o, const char *indent, const char *text) {
  fprintf(o, "%s! ", indent);
  size_t col = strlen(indent) + 2;
  for (const char *p = text; *p; p++) {
    if (col > 120) {
      fputs("...", o);
      break;
    }
    fputc(*p, o);
    col++;
  }
  fputc('\n', o);
}

static int valid_name(const char *n) {
  if (!isalpha((unsigned char)n[0]) || strlen(n) > 63) return 0;
  for (const char *p = n; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') return 0;
  for (int i = 0; fixed_args[i]; i++)
    if (!strcmp(fixed_args[i], n)) return 0;
  return 1;
}

static int write_status(FILE *o) {
#define SP_GEN_STATUS(name, value, text) \
  fprintf(o, "  integer, parameter, public :: %-24s = %3d ! %s\n", #name, value, text);
  SP_STATUS_MAP(SP_GEN_STATUS)
#undef SP_GEN_STATUS
  return 0;
}

/* What the module needs of a setting. */
enum kind { K_BOOL, K_INT, K_TEXT };
struct setting {
  const char *name, *doc;
  enum kind kind;
};

#if defined(SP_SETTINGS)
/* The table is the public X-macro of scope_profiler/settings.h. */
#  define SP_GEN_KIND_BOOL K_BOOL
#  define SP_GEN_KIND_INT K_INT
#  define SP_GEN_KIND_STR K_TEXT
#  define SP_GEN_KIND_ENUM K_TEXT
#  define SP_GEN_KIND_LIST K_TEXT
#  define SP_GEN_ROW(name, G, s, T, def, lo, hi, choices, doc, ...) {#name, doc, SP_GEN_KIND_##T},
static const struct setting table[] = {SP_SETTINGS(SP_GEN_ROW)};
static struct setting *settings(size_t *n) {
  *n = sizeof table / sizeof table[0];
  struct setting *out = malloc(sizeof table);
  if (out) memcpy(out, table, sizeof table);
  return out;
}
#else
/* The table through its public run-time API. */
static struct setting *settings(size_t *n) {
  *n = sp_setting_count();
  struct setting *out = calloc(*n ? *n : 1, sizeof *out);
  for (size_t i = 0; out && i < *n; i++) {
    sp_setting_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (sp_setting_info_at(i, &info) != SP_OK) {
      fprintf(stderr, "gen_fortran: setting %zu: %s\n", i, sp_last_error());
      free(out);
      return NULL;
    }
    out[i].name = info.name;
    out[i].doc = info.doc;
    out[i].kind = info.type == SP_SETTING_BOOL ? K_BOOL : info.type == SP_SETTING_INT ? K_INT : K_TEXT;
  }
  return out;
}
#endif

static int write_setup(FILE *o) {
  size_t n;
  struct setting *info = settings(&n);
  if (!info) return die("cannot read the settings table");
  for (size_t i = 0; i < n; i++) {
    if (!valid_name(info[i].name)) {
      fprintf(stderr, "gen_fortran: setting '%s' cannot be a keyword argument of sp_setup (not a Fortran name, or one of sp_setup's own)\n",
              info[i].name);
      return free(info), 1;
    }
  }
  fputs("  !> Resolve the settings and start a run (of the default manager, or of\n"
        "  !> `manager`). config_path: a TOML file with a [profiling] table;\n"
        "  !> settings: 'key=value' strings; then one optional argument per setting\n"
        "  !> (generated from the settings table, docs/configuration.md). A second\n"
        "  !> setup while a run is active fails unless replace=.true.\n"
        "  subroutine sp_setup(config_path, settings, replace, auto_finalize, manager, status",
        o);
  for (size_t i = 0; i < n; i++) fprintf(o, ", &\n                      %s", info[i].name);
  fputs(")\n"
        "    character(len=*), intent(in), optional :: config_path\n"
        "    character(len=*), intent(in), optional :: settings(:)\n"
        "    logical, intent(in), optional :: replace, auto_finalize\n"
        "    type(sp_manager), intent(in), optional :: manager\n"
        "    integer, intent(out), optional :: status\n",
        o);
  for (size_t i = 0; i < n; i++) {
    comment(o, "    ", info[i].doc ? info[i].doc : "");
    switch (info[i].kind) {
    case K_BOOL:
      fprintf(o, "    logical, intent(in), optional :: %s\n", info[i].name);
      break;
    case K_INT:
      fprintf(o, "    class(*), intent(in), optional :: %s ! an integer of any kind\n", info[i].name);
      break;
    default:
      fprintf(o, "    character(len=*), intent(in), optional :: %s\n", info[i].name);
      break;
    }
  }
  fputs("    type(sp_kv), target :: kv\n"
        "    integer :: i\n"
        "    if (present(settings)) then\n"
        "      do i = 1, size(settings)\n"
        "        if (len_trim(settings(i)) > 0) call kv_add(kv, trim(settings(i)))\n"
        "      end do\n"
        "    end if\n",
        o);
  for (size_t i = 0; i < n; i++) {
    const char *fn = info[i].kind == K_BOOL ? "kv_bool" : info[i].kind == K_INT ? "kv_any" : "kv_str";
    fprintf(o, "    if (present(%s)) call %s(kv, '%s', %s)\n", info[i].name, fn, info[i].name,
            info[i].name);
  }
  fputs("    call setup_common(kv, config_path, replace, auto_finalize, manager, status)\n"
        "  end subroutine sp_setup\n",
        o);
  free(info);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) return die("usage: gen_fortran TEMPLATE OUTPUT");
  FILE *in = fopen(argv[1], "r");
  if (!in) return perror(argv[1]), 1;
  FILE *o = fopen(argv[2], "w");
  if (!o) return perror(argv[2]), fclose(in), 1;
  char line[4096];
  int rc = 0, markers = 0;
  while (!rc && fgets(line, sizeof line, in)) {
    if (!strncmp(line, "!@SP_STATUS_CODES@", 18))
      rc = write_status(o), markers++;
    else if (!strncmp(line, "!@SP_SETUP@", 11))
      rc = write_setup(o), markers++;
    else
      fputs(line, o);
  }
  fclose(in);
  if (!rc && markers != 2) rc = die("the template lacks a marker line (!@SP_STATUS_CODES@, !@SP_SETUP@)");
  if (fclose(o) != 0 && !rc) rc = die("cannot write the output");
  if (rc) remove(argv[2]);
  return rc;
}
