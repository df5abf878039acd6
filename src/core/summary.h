/* summary.h - printing the per-region summary of a run (summary.c). */
#ifndef SP_SUMMARY_H
#define SP_SUMMARY_H

#include <stdio.h>

#include "output/output.h"

void sp__summary_print(FILE *out, const struct sp_run *run, const char *label);

#endif
