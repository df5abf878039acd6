/* cli_lines.h - printing a profile's line-profile records (cli_lines.c). */
#ifndef SP_CLI_LINES_H
#define SP_CLI_LINES_H

#include <stdio.h>

#include "scope_profiler/reader.h"

/* The records of `region` as line_profiler's tables on `out`: 0, or 2
 * after an error on stderr (unreadable records, no such region). */
int sp_cli_print_lines(FILE *out, sp_results *r, const char *region, const char *cmd);

#endif
