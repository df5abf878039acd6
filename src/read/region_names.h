/* region_names.h - region ids for readers that meet each region by its name
 * (upstream's hierarchical schema 1, JSON profiles, native traces): the first
 * time a name is seen it becomes the next region of the results, later it is
 * found again through a hash index. One index for all of them, so that the
 * ids, the limit on regions and its message are the same whatever the input.
 */
#ifndef SP_REGION_NAMES_H
#define SP_REGION_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "read/read_internal.h"

struct sp__region_names {
  size_t *slots, nslots; /* name -> region, open addressing; a power of two */
  size_t cap_names;      /* allocated length of r->names */
};

/* The id of region `name` in r, added (a copy) when it is new. `input`
 * names the input in the error when r already holds SP__MAX_REGIONS. */
sp_status sp__region_names_id(sp_results *r, struct sp__region_names *ix, const char *name, const char *input,
                              uint32_t *id);
/* Frees the index (not the names: they belong to r). */
void sp__region_names_free(struct sp__region_names *ix);

#endif
