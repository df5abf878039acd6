/* tui_screen.c - the terminal browser of `scope-profiler tui` (ncurses):
 * four views of one profile, switched with 1-4 or Tab,
 *
 *   1 regions  the region table, sorted by total, own or calls (s, t, o, c)
 *   2 tree     the call tree, folded and unfolded (Enter, Space, arrows, + -)
 *   3 ranks    the selected region per rank
 *   4 threads  the selected region per rank and thread (files with thread ids)
 *
 * and under every view the selected region's summary and its calls over time
 * as a sparkline (the mean duration of the calls starting in each column).
 * / searches region names (n: next match). Nothing is read before it is
 * shown (tui_model.h), so a 10M-event file opens at once.
 */
#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_util.h"
#include "tui/tui.h"
#include "tui/tui_model.h"

enum view { V_REGIONS, V_TREE, V_RANKS, V_THREADS, V_COUNT };
static const char *const view_names[V_COUNT] = {"regions", "tree", "ranks", "threads"};

struct ui {
  struct tui_model *m;
  const char *path;
  int utf8;
  enum view view;
  size_t cur[V_COUNT], top[V_COUNT];
  size_t sel;             /* selected region (index in m->regs); SIZE_MAX none */
  int searching;
  char query[128];
  char msg[256];
  int help;
};

/* ---- drawing helpers ---------------------------------------------------------------- */

/* Text clipped to `w` columns at (y, x), padded with spaces. */
static void put(int y, int x, const char *s, size_t w) {
  size_t cols = 0;
  move(y, x);
  const char *p = s;
  while (*p && cols < w) {
    size_t n = 1;
    while (((unsigned char)p[n] & 0xC0) == 0x80) n++;
    addnstr(p, (int)n);
    p += n;
    cols++;
  }
  for (; cols < w; cols++) addch(' ');
}

static void put_right(int y, int x, const char *s, size_t w) {
  size_t len = sp_cli_width(s);
  if (len >= w) {
    put(y, x, s, w);
    return;
  }
  char pad[256];
  size_t k = w - len < sizeof pad - 1 ? w - len : sizeof pad - 1;
  memset(pad, ' ', k);
  pad[k] = '\0';
  move(y, x);
  addstr(pad);
  addstr(s);
}

/* The cursor's row starts with "> " (visible without colours or reverse video). */
static void lead(int y, int on) { put(y, 0, on ? "> " : "  ", 2); }

static void secs(char *buf, size_t size, double ns) { sp_cli_fmt_seconds(buf, size, ns); }

static int list_rows(void) { return LINES - 7 > 1 ? LINES - 7 : 1; }

/* Keep the cursor of the view on the screen. */
static void scroll_to(struct ui *u, size_t n) {
  enum view v = u->view;
  if ((unsigned)v >= V_COUNT) return; /* never; the optimiser sees view_len's default */
  if (n == 0) {
    u->cur[v] = u->top[v] = 0;
    return;
  }
  if (u->cur[v] >= n) u->cur[v] = n - 1;
  size_t rows = (size_t)list_rows();
  if (u->cur[v] < u->top[v]) u->top[v] = u->cur[v];
  if (u->cur[v] >= u->top[v] + rows) u->top[v] = u->cur[v] - rows + 1;
}

static size_t view_len(const struct ui *u) {
  const struct tui_model *m = u->m;
  const struct tui_detail *d = u->sel != SIZE_MAX ? &m->regs[u->sel].d : NULL;
  switch (u->view) {
  case V_REGIONS: return m->nregs;
  case V_TREE: return m->nvisible;
  case V_RANKS: return d ? d->nranks : 0;
  case V_THREADS: return d ? d->nthreads : 0;
  default: return 0;
  }
}

/* The region the cursor of the regions or tree view is on. */
static void follow_cursor(struct ui *u) {
  struct tui_model *m = u->m;
  if (u->view == V_REGIONS && m->nregs) u->sel = m->order[u->cur[V_REGIONS]];
  if (u->view == V_TREE && m->nvisible) {
    size_t node = m->visible[u->cur[V_TREE]].tree;
    u->sel = tui_model_find(m, m->nodes[node].region);
  }
}

static void status(struct ui *u, const char *text) {
  snprintf(u->msg, sizeof u->msg, "%s", text);
  attron(A_REVERSE);
  put(LINES - 1, 0, u->msg, (size_t)COLS);
  attroff(A_REVERSE);
  refresh();
}

/* ---- the views ---------------------------------------------------------------------- */

static void draw_regions(struct ui *u, int y0, int rows) {
  const struct tui_model *m = u->m;
  size_t nw = COLS > 64 ? (size_t)COLS - 58 : 6;
  static const char *const heads[] = {"calls", "total [s]", "own [s]", "avg [s]", "ranks"};
  static const size_t widths[] = {10, 12, 12, 12, 6};
  attron(A_BOLD);
  put(y0 - 1, 0, "  region", nw);
  size_t x = nw;
  for (int c = 0; c < 5; c++) {
    char h[32];
    int sorted = (c == 0 && m->sort == TUI_SORT_CALLS) || (c == 1 && m->sort == TUI_SORT_TOTAL) ||
                 (c == 2 && m->sort == TUI_SORT_OWN);
    snprintf(h, sizeof h, "%s%s", sorted ? "v " : "", heads[c]);
    put_right(y0 - 1, (int)x, h, widths[c]);
    x += widths[c];
  }
  attroff(A_BOLD);
  for (int i = 0; i < rows; i++) {
    size_t pos = u->top[V_REGIONS] + (size_t)i;
    if (pos >= m->nregs) break;
    const struct tui_region *g = &m->regs[m->order[pos]];
    if (pos == u->cur[V_REGIONS]) attron(A_REVERSE);
    char b[5][64];
    snprintf(b[0], 64, "%llu", (unsigned long long)g->s.count);
    secs(b[1], 64, (double)g->s.total_ns);
    secs(b[2], 64, g->s.has_own ? (double)g->s.own_ns : NAN);
    secs(b[3], 64, g->s.mean_ns);
    snprintf(b[4], 64, "%zu", g->s.ranks);
    lead(y0 + i, pos == u->cur[V_REGIONS]);
    put(y0 + i, 2, g->name, nw - 2);
    x = nw;
    for (int c = 0; c < 5; c++) {
      put_right(y0 + i, (int)x, b[c], widths[c]);
      x += widths[c];
    }
    if (pos == u->cur[V_REGIONS]) attroff(A_REVERSE);
  }
}

static void draw_tree(struct ui *u, int y0, int rows) {
  const struct tui_model *m = u->m;
  size_t nw = COLS > 52 ? (size_t)COLS - 46 : 6;
  attron(A_BOLD);
  put(y0 - 1, 0, "  call path", nw);
  put_right(y0 - 1, (int)nw, "calls", 10);
  put_right(y0 - 1, (int)nw + 10, "% session", 12);
  put_right(y0 - 1, (int)nw + 22, "total [s]", 12);
  put_right(y0 - 1, (int)nw + 34, "avg [s]", 12);
  attroff(A_BOLD);
  for (int i = 0; i < rows; i++) {
    size_t pos = u->top[V_TREE] + (size_t)i;
    if (pos >= m->nvisible) break;
    const struct tui_node *v = &m->visible[pos];
    const sp_tree_node *x = &m->nodes[v->tree];
    int has_kids = m->kid_start[v->tree + 1] > m->kid_start[v->tree];
    char line[1024], b[4][64];
    const char *mark = !has_kids          ? (u->utf8 ? "· " : ". ")
                       : m->open[v->tree] ? (u->utf8 ? "▾ " : "- ")
                                          : (u->utf8 ? "▸ " : "+ ");
    size_t ind = v->depth * 2 < 200 ? v->depth * 2 : 200;
    snprintf(line, sizeof line, "%*s%s%s", (int)ind, "", mark,
             sp_results_region_name(m->r, x->region));
    snprintf(b[0], 64, "%llu", (unsigned long long)x->count);
    snprintf(b[1], 64, "%.1f%%", m->session_ns > 0 ? 100.0 * (double)x->total_ns / m->session_ns : 0.0);
    secs(b[2], 64, (double)x->total_ns);
    secs(b[3], 64, x->count ? (double)x->total_ns / (double)x->count : NAN);
    if (pos == u->cur[V_TREE]) attron(A_REVERSE);
    lead(y0 + i, pos == u->cur[V_TREE]);
    put(y0 + i, 2, line, nw - 2);
    put_right(y0 + i, (int)nw, b[0], 10);
    put_right(y0 + i, (int)nw + 10, b[1], 12);
    put_right(y0 + i, (int)nw + 22, b[2], 12);
    put_right(y0 + i, (int)nw + 34, b[3], 12);
    if (pos == u->cur[V_TREE]) attroff(A_REVERSE);
  }
}

/* A bar of `frac` of w cells. */
static void bar(char *out, size_t size, double frac, size_t w, int utf8) {
  size_t n = (size_t)(frac * (double)w + 0.5), len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && len + 4 < size; i++) {
    const char *c = utf8 ? "█" : "#";
    memcpy(out + len, c, strlen(c) + 1);
    len += strlen(c);
  }
}

static void draw_ranks(struct ui *u, int y0, int rows) {
  const struct tui_model *m = u->m;
  if (u->sel == SIZE_MAX) return;
  const struct tui_detail *d = &m->regs[u->sel].d;
  attron(A_BOLD);
  put(y0 - 1, 0, "  rank", 8);
  static const char *const heads[] = {"calls", "total [s]", "avg [s]", "min [s]", "max [s]"};
  for (int c = 0; c < 5; c++) put_right(y0 - 1, 8 + c * 12, heads[c], 12);
  put(y0 - 1, 70, "  share of the slowest rank", COLS > 70 ? (size_t)COLS - 70 : 0);
  attroff(A_BOLD);
  int64_t maxt = 1;
  for (size_t i = 0; i < d->nranks; i++)
    if (d->ranks[i].s.total_ns > maxt) maxt = d->ranks[i].s.total_ns;
  for (int i = 0; i < rows; i++) {
    size_t pos = u->top[V_RANKS] + (size_t)i;
    if (pos >= d->nranks) break;
    const sp_region_stats *s = &d->ranks[pos].s;
    char b[6][64], br[512];
    snprintf(b[0], 64, "%lld", (long long)d->ranks[pos].rank);
    snprintf(b[1], 64, "%llu", (unsigned long long)s->count);
    secs(b[2], 64, (double)s->total_ns);
    secs(b[3], 64, s->mean_ns);
    secs(b[4], 64, (double)s->min_ns);
    secs(b[5], 64, (double)s->max_ns);
    if (pos == u->cur[V_RANKS]) attron(A_REVERSE);
    lead(y0 + i, pos == u->cur[V_RANKS]);
    put(y0 + i, 2, b[0], 6);
    for (int c = 0; c < 5; c++) put_right(y0 + i, 8 + c * 12, b[c + 1], 12);
    bar(br, sizeof br, (double)s->total_ns / (double)maxt, COLS > 74 ? (size_t)COLS - 74 : 0, u->utf8);
    put(y0 + i, 68, "  ", 2);
    put(y0 + i, 70, br, COLS > 70 ? (size_t)COLS - 70 : 0);
    if (pos == u->cur[V_RANKS]) attroff(A_REVERSE);
  }
}

static void draw_threads(struct ui *u, int y0, int rows) {
  const struct tui_model *m = u->m;
  if (u->sel == SIZE_MAX) return;
  const struct tui_detail *d = &m->regs[u->sel].d;
  if (!sp_results_has_threads(m->r)) {
    put(y0, 0, "This file has no thread ids: record them with track_threads = true.", (size_t)COLS);
    return;
  }
  attron(A_BOLD);
  put(y0 - 1, 0, "  rank", 8);
  put_right(y0 - 1, 8, "thread", 8);
  put_right(y0 - 1, 16, "calls", 12);
  put_right(y0 - 1, 28, "total [s]", 12);
  put_right(y0 - 1, 40, "avg [s]", 12);
  put(y0 - 1, 52, "  share of the busiest thread", COLS > 52 ? (size_t)COLS - 52 : 0);
  attroff(A_BOLD);
  int64_t maxt = 1;
  for (size_t i = 0; i < d->nthreads; i++)
    if (d->threads[i].total_ns > maxt) maxt = d->threads[i].total_ns;
  for (int i = 0; i < rows; i++) {
    size_t pos = u->top[V_THREADS] + (size_t)i;
    if (pos >= d->nthreads) break;
    const struct tui_thread_row *t = &d->threads[pos];
    char b[5][64], br[512];
    snprintf(b[0], 64, "%lld", (long long)t->rank);
    snprintf(b[1], 64, "%lld", (long long)t->thread);
    snprintf(b[2], 64, "%llu", (unsigned long long)t->calls);
    secs(b[3], 64, (double)t->total_ns);
    secs(b[4], 64, t->calls ? (double)t->total_ns / (double)t->calls : NAN);
    if (pos == u->cur[V_THREADS]) attron(A_REVERSE);
    lead(y0 + i, pos == u->cur[V_THREADS]);
    put(y0 + i, 2, b[0], 6);
    put_right(y0 + i, 8, b[1], 8);
    put_right(y0 + i, 16, b[2], 12);
    put_right(y0 + i, 28, b[3], 12);
    put_right(y0 + i, 40, b[4], 12);
    bar(br, sizeof br, (double)t->total_ns / (double)maxt, COLS > 56 ? (size_t)COLS - 56 : 0, u->utf8);
    put(y0 + i, 52, "  ", 2);
    put(y0 + i, 54, br, COLS > 54 ? (size_t)COLS - 54 : 0);
    if (pos == u->cur[V_THREADS]) attroff(A_REVERSE);
  }
}

static void draw_detail(struct ui *u) {
  struct tui_model *m = u->m;
  int y = LINES - 4;
  mvhline(y, 0, u->utf8 ? ACS_HLINE : '-', COLS);
  if (u->sel == SIZE_MAX) {
    put(y + 1, 0, "(no region selected)", (size_t)COLS);
    put(y + 2, 0, "", (size_t)COLS);
    return;
  }
  struct tui_region *g = &m->regs[u->sel];
  char line[1024], t[64], o[64], a[64], lo[64], hi[64];
  secs(t, sizeof t, (double)g->s.total_ns);
  secs(o, sizeof o, g->s.has_own ? (double)g->s.own_ns : NAN);
  secs(a, sizeof a, g->s.mean_ns);
  secs(lo, sizeof lo, (double)g->s.min_ns);
  secs(hi, sizeof hi, (double)g->s.max_ns);
  snprintf(line, sizeof line, "%s: %llu call(s) on %zu rank(s); total %s s, own %s s, avg %s s, min %s s, max %s s",
           g->name, (unsigned long long)g->s.count, g->s.ranks, t, o, a, lo, hi);
  attron(A_BOLD);
  put(y + 1, 0, line, (size_t)COLS);
  attroff(A_BOLD);
  size_t w = COLS > 12 ? (size_t)COLS - 12 : 1;
  if (!sp_results_has_events(m->r)) {
    put(y + 2, 0, "calls over time: not stored (aggregate layout)", (size_t)COLS);
    return;
  }
  char spark[TUI_SPARK_MAX * 4 + 1];
  if (g->d.loaded && g->d.nbuckets == (w < TUI_SPARK_MAX ? w : TUI_SPARK_MAX)) {
    tui_sparkline(&g->d, u->utf8, spark, sizeof spark);
    put(y + 2, 0, "over time: ", 12);
    put(y + 2, 12, spark, w);
  } else {
    put(y + 2, 0, "over time: (reading...)", (size_t)COLS);
  }
}

static void draw_help(void) {
  static const char *const lines[] = {
      "keys",
      "  1 2 3 4, Tab    regions, call tree, ranks, threads of the selected region",
      "  Up Down j k     move;  PgUp PgDn  a page;  Home End g G  first, last",
      "  s               next sort order of the region table (total, own, calls)",
      "  t o c           sort by total, own or calls",
      "  Enter Space     fold or unfold a call-tree node;  Right l unfold, Left h fold",
      "  + -             unfold or fold the whole tree",
      "  /               search region names (Enter: go, Esc: cancel);  n  next match",
      "  ?               this help;  q  quit",
      "",
      "The line under the views is the selected region; \"over time\" is the mean",
      "duration of its calls starting in each column, from the first entry to the",
      "last exit of the file (low to high: _ . - ~ = + * # without UTF-8).",
      NULL};
  int y = 3;
  for (int i = 0; lines[i] && y < LINES - 1; i++, y++) put(y, 0, lines[i], (size_t)COLS);
  for (; y < LINES - 4; y++) put(y, 0, "", (size_t)COLS);
}

static void draw(struct ui *u) {
  struct tui_model *m = u->m;
  erase();
  char line[1024];
  snprintf(line, sizeof line, " %s (%s)  %zu rank(s)  %zu region(s)  %llu events  schema %d %s",
           u->path, sp_results_display_label(m->r), sp_results_num_ranks(m->r), m->nregs,
           (unsigned long long)sp_results_num_events(m->r), sp_results_schema(m->r),
           sp_results_layout(m->r));
  attron(A_REVERSE);
  put(0, 0, line, (size_t)COLS);
  attroff(A_REVERSE);
  size_t len = 0;
  line[0] = '\0';
  for (int v = 0; v < V_COUNT; v++)
    len += (size_t)snprintf(line + len, sizeof line - len, v == (int)u->view ? "[%d %s] " : " %d %s  ",
                            v + 1, view_names[v]);
  snprintf(line + len, sizeof line - len, "   sort: %s", tui_sort_name(m->sort));
  put(1, 0, line, (size_t)COLS);
  int y0 = 3, rows = list_rows();
  if (u->help) draw_help();
  else if (u->view == V_REGIONS) draw_regions(u, y0, rows);
  else if (u->view == V_TREE) draw_tree(u, y0, rows);
  else if (u->view == V_RANKS) draw_ranks(u, y0, rows);
  else draw_threads(u, y0, rows);
  draw_detail(u);
  if (u->searching) snprintf(line, sizeof line, "/%s", u->query);
  else if (u->msg[0]) snprintf(line, sizeof line, "%s", u->msg);
  else snprintf(line, sizeof line, "q quit  1-4 views  arrows move  s sort  Enter fold  / search  n next  ? help");
  attron(A_REVERSE);
  put(LINES - 1, 0, line, (size_t)COLS);
  attroff(A_REVERSE);
  if (u->searching) move(LINES - 1, (int)strlen(u->query) + 1);
  refresh();
}

/* ---- actions ------------------------------------------------------------------------ */

/* Progress of a long read on the status line (at most every 1% of it). */
struct progress {
  struct ui *u;
  const char *what;
  int last;
};
static void progress_cb(void *ctx, uint64_t done, uint64_t total) {
  struct progress *p = ctx;
  int pct = total ? (int)(100 * done / total) : 100;
  if (pct == p->last) return;
  p->last = pct;
  char line[128];
  snprintf(line, sizeof line, "%s... %d%% (%llu of %llu events)", p->what, pct,
           (unsigned long long)done, (unsigned long long)total);
  status(p->u, line);
}

static int ensure_tree(struct ui *u) {
  if (u->m->tree_loaded) return 0;
  struct progress p = {u, "building the call tree", -1};
  status(u, "building the call tree...");
  sp_results_set_progress(u->m->r, progress_cb, &p);
  sp_status st = tui_model_tree(u->m);
  sp_results_set_progress(u->m->r, NULL, NULL);
  u->msg[0] = '\0';
  if (st != SP_OK) {
    snprintf(u->msg, sizeof u->msg, "no call tree: %s", sp_last_error());
    return -1;
  }
  return 0;
}

static void load_detail(struct ui *u) {
  if (u->sel == SIZE_MAX) return;
  size_t w = COLS > 12 ? (size_t)COLS - 12 : 1;
  struct tui_region *g = &u->m->regs[u->sel];
  if (g->d.loaded && g->d.nbuckets == (w < TUI_SPARK_MAX ? w : TUI_SPARK_MAX)) return;
  draw(u); /* shows "(reading...)" while the events are read */
  if (tui_model_detail(u->m, u->sel, w) != SP_OK)
    snprintf(u->msg, sizeof u->msg, "cannot read %s: %s", g->name, sp_last_error());
}

static void search(struct ui *u, int next) {
  struct tui_model *m = u->m;
  if (!u->query[0]) return;
  if (u->view == V_TREE && m->tree_loaded) {
    size_t from = m->nvisible ? m->visible[u->cur[V_TREE]].tree : SIZE_MAX;
    size_t node = tui_model_search_tree(m, u->query, next ? from : (from == SIZE_MAX ? from : from));
    if (node == SIZE_MAX) {
      snprintf(u->msg, sizeof u->msg, "no call path matches '%s'", u->query);
      return;
    }
    tui_model_reveal(m, node);
    for (size_t i = 0; i < m->nvisible; i++)
      if (m->visible[i].tree == node) u->cur[V_TREE] = i;
  } else {
    if (u->view != V_REGIONS) u->view = V_REGIONS;
    size_t pos = tui_model_search(m, u->query, u->cur[V_REGIONS]);
    if (pos == SIZE_MAX) {
      snprintf(u->msg, sizeof u->msg, "no region matches '%s'", u->query);
      return;
    }
    u->cur[V_REGIONS] = pos;
  }
  snprintf(u->msg, sizeof u->msg, "/%s  (n: next match)", u->query);
}

static void fold(struct ui *u, int how) { /* how: -1 fold, 1 unfold, 0 toggle */
  struct tui_model *m = u->m;
  if (!m->nvisible) return;
  struct tui_node *v = &m->visible[u->cur[V_TREE]];
  int has_kids = m->kid_start[v->tree + 1] > m->kid_start[v->tree];
  if (how < 0 && (!has_kids || !m->open[v->tree])) { /* Left on a leaf or folded node: its parent */
    int64_t p = m->nodes[v->tree].parent;
    for (size_t i = 0; p >= 0 && i < m->nvisible; i++)
      if (m->visible[i].tree == (size_t)p) u->cur[V_TREE] = i;
    return;
  }
  if (!has_kids) return;
  m->open[v->tree] = how == 0 ? !m->open[v->tree] : how > 0;
  tui_model_relist(m);
}

static void fold_all(struct ui *u, int open) {
  struct tui_model *m = u->m;
  size_t node = m->nvisible ? m->visible[u->cur[V_TREE]].tree : 0;
  for (size_t i = 0; i < m->nnodes; i++) m->open[i] = (unsigned char)open;
  if (!open)
    for (size_t i = 0; i < m->nroots; i++) m->open[m->roots[i]] = 0;
  tui_model_relist(m);
  u->cur[V_TREE] = 0;
  for (size_t i = 0; i < m->nvisible; i++)
    if (m->visible[i].tree == node) u->cur[V_TREE] = i;
}

static void key(struct ui *u, int ch, int *quit) {
  struct tui_model *m = u->m;
  if (u->searching) {
    size_t n = strlen(u->query);
    if (ch == 27) u->searching = 0, u->query[0] = '\0';
    else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) u->searching = 0, search(u, 0);
    else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n) u->query[n - 1] = '\0';
    else if (ch >= 32 && ch < 127 && n + 1 < sizeof u->query) u->query[n] = (char)ch, u->query[n + 1] = '\0';
    scroll_to(u, view_len(u));
    follow_cursor(u);
    return;
  }
  u->msg[0] = '\0';
  if (u->help && ch != '?') u->help = 0;
  size_t page = (size_t)list_rows();
  enum view v = u->view;
  switch (ch) {
  case 'q': case 'Q': *quit = 1; return;
  case '?': u->help = !u->help; return;
  case '1': case '2': case '3': case '4': u->view = (enum view)(ch - '1'); break;
  case '\t': u->view = (enum view)((u->view + 1) % V_COUNT); break;
  case KEY_BTAB: u->view = (enum view)((u->view + V_COUNT - 1) % V_COUNT); break;
  case KEY_UP: case 'k': if (u->cur[v]) u->cur[v]--; break;
  case KEY_DOWN: case 'j': u->cur[v]++; break;
  case KEY_PPAGE: u->cur[v] = u->cur[v] > page ? u->cur[v] - page : 0; break;
  case KEY_NPAGE: u->cur[v] += page; break;
  case KEY_HOME: case 'g': u->cur[v] = 0; break;
  case KEY_END: case 'G': u->cur[v] = SIZE_MAX / 2; break;
  case 's': tui_model_sort(m, (enum tui_sort)((m->sort + 1) % TUI_NSORTS)); break;
  case 't': tui_model_sort(m, TUI_SORT_TOTAL); break;
  case 'o': tui_model_sort(m, TUI_SORT_OWN); break;
  case 'c': tui_model_sort(m, TUI_SORT_CALLS); break;
  case '/': u->searching = 1; u->query[0] = '\0'; return;
  case 'n': search(u, 1); break;
  case '\n': case '\r': case KEY_ENTER: case ' ': if (v == V_TREE) fold(u, 0); break;
  case KEY_RIGHT: case 'l': if (v == V_TREE) fold(u, 1); break;
  case KEY_LEFT: case 'h': if (v == V_TREE) fold(u, -1); break;
  case '+': if (v == V_TREE) fold_all(u, 1); break;
  case '-': if (v == V_TREE) fold_all(u, 0); break;
  default: break;
  }
  if (u->view == V_TREE) ensure_tree(u);
  if ((ch == 's' || ch == 't' || ch == 'o' || ch == 'c') && u->sel != SIZE_MAX && u->view == V_REGIONS)
    for (size_t i = 0; i < m->nregs; i++)
      if (m->order[i] == u->sel) u->cur[V_REGIONS] = i; /* the cursor stays on its region */
  scroll_to(u, view_len(u));
  follow_cursor(u);
}

int sp_tui_run(sp_results *r, const char *path, const sp_filter *f) {
  struct tui_model m;
  if (tui_model_open(&m, r, path, f) != SP_OK) {
    fprintf(stderr, "scope-profiler tui: %s\n", sp_last_error());
    tui_model_free(&m);
    return 2;
  }
  setlocale(LC_ALL, "");
  struct ui u;
  memset(&u, 0, sizeof u);
  u.m = &m;
  u.path = path;
  u.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
  u.sel = m.nregs ? m.order[0] : SIZE_MAX;
  /* newterm, not initscr: an unknown TERM is an error we report, not an exit */
  const char *term = getenv("TERM");
  SCREEN *scr = newterm(NULL, stdout, stdin);
  if (!scr) {
    fprintf(stderr,
            "scope-profiler tui: cannot drive the terminal TERM=%s (no terminfo entry); try "
            "TERM=xterm-256color or TERM=vt100\n",
            term ? term : "(unset)");
    tui_model_free(&m);
    return 2;
  }
  set_term(scr);
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  int quit = 0;
  while (!quit) {
    load_detail(&u);
    draw(&u);
    curs_set(u.searching ? 1 : 0);
    int ch = getch();
    if (ch == ERR) break; /* the terminal went away */
    if (ch == KEY_RESIZE) {
      scroll_to(&u, view_len(&u));
      continue;
    }
    key(&u, ch, &quit);
  }
  endwin();
  delscreen(scr);
  tui_model_free(&m);
  return 0;
}
