/* mixed_helper.c - the C part of tests/frontends/mixed_main.cpp: a helper
 * called from Fortran that records with the C macros and calls back into
 * C++, and the C end of a region Fortran began by name. */
#include "scope_profiler.h"

void mixed_cxx_leaf(void); /* mixed_main.cpp */
void mixed_c_helper(void);
int mixed_c_shared_end(void);

void mixed_c_helper(void) {
  SP_REGION("c.helper");
  mixed_cxx_leaf();
}

int mixed_c_shared_end(void) { return sp_end(sp_region_intern("shared")); }
