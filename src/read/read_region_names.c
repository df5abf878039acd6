/* read_region_names.c - the name-to-region index of region_names.h. The
 * index is rebuilt at twice the size whenever it gets half full, so probes
 * stay short; FNV-1a is enough for names a program chose.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/region_names.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
  return h;
}

sp_status sp__region_names_id(sp_results *r, struct sp__region_names *ix, const char *name, const char *input,
                              uint32_t *id) {
  if (r->nregions * 2 >= ix->nslots) {
    size_t ns = ix->nslots ? ix->nslots * 2 : 64;
    size_t *slots = malloc(ns * sizeof *slots);
    if (!slots) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < ns; i++) slots[i] = SIZE_MAX;
    for (size_t i = 0; i < r->nregions; i++) {
      size_t s = hash_str(r->names[i]) & (ns - 1);
      while (slots[s] != SIZE_MAX) s = (s + 1) & (ns - 1);
      slots[s] = i;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->nslots = ns;
  }
  size_t s = hash_str(name) & (ix->nslots - 1);
  while (ix->slots[s] != SIZE_MAX) {
    if (!strcmp(r->names[ix->slots[s]], name)) {
      *id = (uint32_t)ix->slots[s];
      return SP_OK;
    }
    s = (s + 1) & (ix->nslots - 1);
  }
  if (r->nregions >= SP__MAX_REGIONS) return sp__set_error(SP_ERR_FORMAT, "%s: too many regions", input);
  if (r->nregions == ix->cap_names) {
    size_t cap = ix->cap_names ? ix->cap_names * 2 : 16;
    char **v = realloc(r->names, cap * sizeof *v);
    if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
    r->names = v;
    ix->cap_names = cap;
  }
  if (!(r->names[r->nregions] = sp__strdup(name))) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  ix->slots[s] = r->nregions;
  *id = (uint32_t)r->nregions++;
  return SP_OK;
}

void sp__region_names_free(struct sp__region_names *ix) {
  free(ix->slots);
  memset(ix, 0, sizeof *ix);
}
