/* fuzz_names.c - libFuzzer target for region names and the begin/end path
 * they feed: any bytes through sp_region_intern / sp_region_intern_ex (name
 * validation, interning, tag splitting, opt-in tags), begin and end in any
 * order (unmatched ends, invalid handles, calls left open at finalize), then
 * a finalize into an in-memory image that the reader opens.
 *
 * The input is records separated by NUL bytes; a record's first byte is an
 * opcode, the rest its text:
 *   0 intern the text and begin it          1 end the innermost call begun
 *   2 end the region the text names (may be unmatched)
 *   3 intern_ex "name|file|tags" and begin + end it
 *   4 register one of four opt-in tags    5 pause, 6 resume
 * Besides "no crash, no leak, no undefined behaviour" one property is
 * checked: every name whose call was begun and ended comes back from the
 * written image byte for byte (names are any UTF-8 of 1..1024 bytes, control
 * characters included).
 *
 * Region names are interned process-wide and never freed, as in a real
 * program: after a million distinct names interning reports its limit,
 * which this target accepts. Build and run with scripts/fuzz-all.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"
#include "scope_profiler/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_OPS = 64, MAX_DEPTH = 32 };

static const char *const overrides[] = {"deactivate_file_output=true", "signals=",
                                        "crash_spill=false", "finalize_on_exit=false", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size + 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  copy[size] = '\0';
  sp_manager *m = sp_manager_create();
  sp_setup_args setup = {.overrides = overrides};
  if (!m || sp_manager_setup(m, &setup) != SP_OK) {
    fprintf(stderr, "setup failed: %s\n", sp_last_error());
    abort();
  }
  sp_region stack[MAX_DEPTH];
  size_t depth = 0, ops = 0;
  const char *done[MAX_OPS]; /* names of completed calls */
  size_t ndone = 0;
  for (const char *p = copy; p < copy + size && ops < MAX_OPS; p += strlen(p) + 1, ops++) {
    if (!*p) continue;
    const char *text = p + 1;
    sp_region r;
    switch ((unsigned char)*p % 7) {
    case 0:
      r = sp_region_intern(text);
      if (depth < MAX_DEPTH && sp_region_begin(m, r) == 0) stack[depth++] = r;
      break;
    case 1:
      if (depth && sp_region_end(m, stack[depth - 1]) == 0 && ndone < MAX_OPS)
        done[ndone++] = sp_region_name(stack[depth - 1]);
      if (depth) depth--;
      break;
    case 2:
      r = sp_region_intern(text);
      if (sp_region_end(m, r) == 0 && depth && stack[depth - 1] == r) {
        if (ndone < MAX_OPS) done[ndone++] = sp_region_name(r);
        depth--;
      }
      break;
    case 3: {
      char buf[3 * 1100];
      snprintf(buf, sizeof buf, "%s", text);
      char *file = strchr(buf, '|'), *tags = NULL;
      if (file) {
        *file++ = '\0';
        tags = strchr(file, '|');
        if (tags) *tags++ = '\0';
      }
      r = sp_region_intern_ex(buf, file, 42, "fuzz", tags);
      if (sp_region_begin(m, r) == 0 && sp_region_end(m, r) == 0 && ndone < MAX_OPS)
        done[ndone++] = sp_region_name(r);
      break;
    }
    case 4: {
      /* Opt-in tags are process-wide and permanent, and each registration
       * rescans every region: a few fixed ones, as a program has. */
      static const char *const tags[] = {"debug", "io", "fuzz", "\xc3\xa9t\xc3\xa9"};
      (void)sp_register_opt_in_tag(tags[(unsigned char)*text % 4]);
      break;
    }
    case 5: sp_manager_pause(m); break;
    case 6: sp_manager_resume(m); break;
    }
  }
  sp_finalize_args fin = {.return_results = 1};
  sp_results *res = NULL;
  sp_status st = sp_manager_finalize(m, &fin, &res);
  if (st != SP_OK && st != SP_ERR_OPEN_SCOPES) {
    fprintf(stderr, "finalize failed: %s\n", sp_last_error());
    abort();
  }
  for (size_t i = 0; res && i < ndone; i++) {
    size_t idx;
    /* A call completed while paused, or of a region left disabled by an
     * opt-in tag, is not recorded: only names with calls in the file count. */
    if (!done[i] || sp_manager_num_calls(m, sp_region_intern(done[i])) == 0) continue;
    if (sp_results_find_region(res, done[i], &idx) != SP_OK) {
      fprintf(stderr, "region '%s' was recorded but is not in the written image\n", done[i]);
      abort();
    }
  }
  sp_results_free(res);
  sp_manager_destroy(m);
  free(copy);
  return 0;
}
