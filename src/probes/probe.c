/* probe.c - the table of probes and the selection made at setup. Probes are
 * data: adding one is one file plus one row here. */
#include "probes/probe.h"

#include <stddef.h>

static const struct sp_probe *registered[SP_MAX_PROBES];
static int nregistered;

void sp__probe_register(const struct sp_probe *p) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == p) return;
  if (nregistered < SP_MAX_PROBES) registered[nregistered++] = p;
}

int sp__probes_select(const struct sp_config *cfg, const struct sp_probe **out, int max) {
  int n = 0;
  for (int i = 0; i < nregistered && n < max; i++)
    if (registered[i]->wanted(cfg)) out[n++] = registered[i];
  return n;
}
