/* tui.h - `scope-profiler tui FILE`: the terminal browser (tui_screen.c,
 * ncurses) over the data of tui_model.h. */
#ifndef SP_TUI_H
#define SP_TUI_H

#include "scope_profiler/reader.h"

/* Runs until the user quits; the exit status (0, or 2 after printing why). */
int sp_tui_run(sp_results *r, const char *path, const sp_filter *f);

#endif
