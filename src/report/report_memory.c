/* report_memory.c - the report's memory views, for profiles written with
 * use_memray (docs/memory-capture.md):
 *  - memory: per file, rank and region, the calls and the bytes allocated
 *    and freed, allocations and the largest call's peak (rank<N>/memory);
 *  - memory_time: memory over time per rank (the capture's net bytes);
 *  - memory_peak: a flame graph of the memory live at the peak, from the
 *    capture file itself (--memory CAPTURE, or the profile's own
 *    memory_profile when it is found beside the profile): native stacks
 *    from the outermost frame in, or region then call site without them;
 *    boxes are coloured by the region that allocated them, like the report's
 *    flame graph.
 * The views are data (the page's JSON blob); report.js draws them with the
 * "table", "series" and "flamegraph" renderers (docs/report.md).
 */
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/memcap_read.h"
#include "report/report_internal.h"

int rp_view_memory(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  int several = m->nfiles > 1, first = 1;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    struct sp_memory_table t;
    if (sp__results_memory(f->r, &t) != SP_OK) return sp_cli_error(cmd, "%s", sp_last_error());
    for (size_t k = 0; k < t.n; k++) {
      const struct sp_memory_row *x = &t.rows[k];
      size_t ri;
      if (!sp_filter_match_rank(m->f, x->rank) ||
          sp_results_find_region(f->r, x->region, &ri) != SP_OK || f->gidx[ri] == SIZE_MAX)
        continue;
      if (first) {
        *notes = "Memory while each region's calls were open (use_memray), per rank: bytes "
                 "allocated and freed by the calling thread and allocations (sums over the "
                 "calls), and the largest call's peak of live bytes above its entry. The rank "
                 "selector filters the rows; a click highlights the region.";
        fprintf(o, "{\"renderer\":\"table\",\"rank_column\":%d,\"region_column\":%d,\"columns\":[",
                several, several + 1);
        if (several) fputs("{\"key\":\"file\",\"label\":\"file\",\"text\":true},", o);
        fputs("{\"key\":\"rank\",\"label\":\"rank\"},"
              "{\"key\":\"region\",\"label\":\"region\",\"text\":true,\"region\":true},"
              "{\"key\":\"calls\",\"label\":\"calls\"},"
              "{\"key\":\"alloc\",\"label\":\"allocated\",\"unit\":\"bytes\"},"
              "{\"key\":\"freed\",\"label\":\"freed\",\"unit\":\"bytes\"},"
              "{\"key\":\"allocs\",\"label\":\"allocations\"},"
              "{\"key\":\"peak\",\"label\":\"largest peak\",\"unit\":\"bytes\"}],\"rows\":[",
              o);
        first = 0;
      } else {
        fputc(',', o);
      }
      fputc('[', o);
      if (several) {
        rp_json_str(o, f->label);
        fputc(',', o);
      }
      fprintf(o, "%lld,%zu,%lld,%lld,%lld,%lld,%lld]", (long long)x->rank, f->gidx[ri],
              (long long)x->calls, (long long)x->alloc_bytes, (long long)x->freed_bytes,
              (long long)x->alloc_count, (long long)x->peak_bytes);
    }
    sp__memory_table_free(&t);
  }
  if (first) return 0;
  fputs("]}", o);
  return 1;
}

int rp_view_memory_time(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  int first = 1;
  for (size_t fi = 0; fi < m->nfiles; fi++) {
    struct rp_file *f = &m->files[fi];
    struct sp_memory_table t;
    if (sp__results_memory(f->r, &t) != SP_OK) return sp_cli_error(cmd, "%s", sp_last_error());
    for (size_t k = 0; k < t.ntimelines; k++) {
      const struct sp_memory_timeline *tl = &t.timelines[k];
      if (!sp_filter_match_rank(m->f, tl->rank) || !tl->n) continue;
      if (first) {
        *notes = "Net bytes the process allocated since its capture started (use_memray: every "
                 "allocation and release of the process, usable sizes), at the end of each of "
                 "up to 1,024 intervals, against seconds from the file's first region entry.";
        fputs("{\"renderer\":\"series\",\"x_unit\":\"s\",\"y_unit\":\"bytes\",\"series\":[", o);
        first = 0;
      } else {
        fputc(',', o);
      }
      char label[512];
      if (m->nfiles > 1)
        snprintf(label, sizeof label, "%s rank %lld", f->label, (long long)tl->rank);
      else
        snprintf(label, sizeof label, "rank %lld", (long long)tl->rank);
      fputs("{\"label\":", o);
      rp_json_str(o, label);
      fprintf(o, ",\"rank\":%lld,\"points\":[", (long long)tl->rank);
      for (size_t i = 0; i < tl->n; i++)
        fprintf(o, "%s[%.9g,%lld]", i ? "," : "", (double)(tl->end_ns[i] - f->origin) / 1e9,
                (long long)tl->net_bytes[i]);
      fputs("]}", o);
    }
    sp__memory_table_free(&t);
  }
  if (first) return 0;
  fputs("]}", o);
  return 1;
}

/*====== The flame graph of the memory live at the peak ======*/

struct fnode {
  size_t parent;
  char *label;
  uint64_t bytes;
  uint32_t region; /* of the largest allocation group below it */
  uint64_t region_bytes;
  size_t first_kid, next_sib; /* SIZE_MAX: none */
};

struct ftree {
  struct fnode *v;
  size_t n, cap;
};

static size_t child(struct ftree *t, size_t parent, const char *label) {
  for (size_t k = t->v[parent].first_kid; k != SIZE_MAX; k = t->v[k].next_sib)
    if (!strcmp(t->v[k].label, label)) return k;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct fnode *v = realloc(t->v, cap * sizeof *v);
    if (!v) return SIZE_MAX;
    t->v = v;
    t->cap = cap;
  }
  char *l = strdup(label);
  if (!l) return SIZE_MAX;
  t->v[t->n] = (struct fnode){parent, l, 0, 0, 0, SIZE_MAX, t->v[parent].first_kid};
  t->v[parent].first_kid = t->n;
  return t->n++;
}

static void frame_label(char *buf, size_t size, sp_symbolizer *sym, uint64_t pc) {
  struct sp_sym in;
  if (sym && !sp__sym_lookup(sym, pc - 1, &in) && in.nframes && in.frames[0].file) {
    const char *b = strrchr(in.frames[0].file, '/');
    snprintf(buf, size, "%s (%s:%d)", in.frames[in.nframes - 1].function,
             b ? b + 1 : in.frames[0].file, in.frames[0].line);
  } else if (sym && !sp__sym_lookup(sym, pc - 1, &in) && in.symbol) {
    snprintf(buf, size, "%s", in.symbol);
  } else {
    snprintf(buf, size, "0x%" PRIx64, pc);
  }
}

/* The capture for the flame graph: --memory, or a single profile's own. */
static char *capture_path(struct rp_model *m, int *given) {
  *given = m->o->memory != NULL;
  if (m->o->memory) return strdup(m->o->memory);
  if (m->nfiles != 1) return NULL;
  const sp_metadata_entry *e = sp_results_metadata(m->files[0].r, "memory_profile");
  if (!e || e->kind != SP_VALUE_STRING || !e->s || !*e->s) return NULL;
  struct stat st;
  if (e->s[0] != '/') { /* relative to where the run was: try beside the profile first */
    char *dir = strdup(m->files[0].path), *p = NULL;
    if (dir && asprintf(&p, "%s/%s", dirname(dir), e->s) >= 0 && !stat(p, &st)) {
      free(dir);
      return p;
    }
    free(p);
    free(dir);
  }
  return stat(e->s, &st) ? NULL : strdup(e->s);
}

int rp_view_memory_peak(FILE *o, struct rp_model *m, const char *cmd, const char **notes) {
  int given;
  char *path = capture_path(m, &given);
  if (!path) return 0;
  sp_memcap *c;
  sp_memcap_stats s;
  if (sp__memcap_open(path, &c) != SP_OK) {
    free(path);
    if (!given) return 0; /* someone else's file beside the profile: leave it */
    return sp_cli_error(cmd, "%s", sp_last_error());
  }
  if (sp__memcap_analyze(c, 0, &s) != SP_OK) {
    sp__memcap_close(c);
    free(path);
    return sp_cli_error(cmd, "%s", sp_last_error());
  }
  sp_symbolizer *sym = sp__memcap_symbolizer(c);
  struct ftree t = {0};
  int rc = 1;
  t.v = calloc(256, sizeof *t.v);
  t.cap = t.v ? 256 : 0;
  if (t.v) t.v[t.n++] = (struct fnode){SIZE_MAX, strdup("all"), 0, 0, 0, SIZE_MAX, SIZE_MAX};
  int native = (c->flags & SP_MEMCAP_F_NATIVE) != 0;
  for (size_t i = 0; i < s.npeak_sites && t.v && rc == 1; i++) {
    const struct sp_memcap_site *x = &s.peak_sites[i];
    char label[1024];
    size_t at = 0;
    t.v[0].bytes += x->bytes;
    if (native && x->key && x->key <= c->nstacks) {
      const struct sp_memcap_stack *st = &c->stacks[x->key - 1];
      for (uint32_t k = st->n; k-- > 0 && at != SIZE_MAX;) {
        frame_label(label, sizeof label, sym, st->pc[k]);
        at = child(&t, at, label);
        if (at != SIZE_MAX) t.v[at].bytes += x->bytes;
      }
    } else {
      const char *rn = x->region ? sp__memcap_region_name(c, x->region) : "(no region)";
      snprintf(label, sizeof label, "%s", rn ? rn : "(unnamed region)");
      at = child(&t, at, label);
      if (at != SIZE_MAX) {
        t.v[at].bytes += x->bytes;
        frame_label(label, sizeof label, sym, sp__memcap_site_pc(c, x->key));
        at = child(&t, at, label);
        if (at != SIZE_MAX) t.v[at].bytes += x->bytes;
      }
    }
    if (at == SIZE_MAX) rc = -1;
    /* colour: the region of the largest group under each box */
    for (size_t p = at; rc == 1 && p != SIZE_MAX; p = t.v[p].parent)
      if (x->bytes > t.v[p].region_bytes) {
        t.v[p].region_bytes = x->bytes;
        t.v[p].region = x->region;
      }
  }
  if (!t.v) rc = -1;
  if (rc == 1 && s.peak_bytes) {
    *notes = "The memory live at the capture's peak, by where it was allocated (native stacks "
             "with memray_native_traces, else region and call site); width = bytes. Boxes are "
             "coloured by the region that allocated them.";
    fputs("{\"renderer\":\"flamegraph\",\"unit\":\"bytes\",\"capture\":", o);
    rp_json_str(o, path);
    fprintf(o, ",\"peak_bytes\":%llu,\"peak_s\":%.9g,\"nodes\":[", (unsigned long long)s.peak_bytes,
            m->nfiles ? (double)(s.peak_ns - m->files[0].origin) / 1e9 : 0.0);
    for (size_t i = 0; i < t.n; i++) {
      /* color by the capture region's name in the report's regions */
      const char *rn = t.v[i].region ? sp__memcap_region_name(c, t.v[i].region) : NULL;
      size_t gi = rn ? rp_global_region(m, rn) : SIZE_MAX;
      fprintf(o, "%s[%lld,", i ? "," : "", i ? (long long)t.v[i].parent : -1LL);
      rp_json_str(o, t.v[i].label);
      fprintf(o, ",%llu,%lld]", (unsigned long long)t.v[i].bytes,
              gi == SIZE_MAX ? -1LL : (long long)gi);
    }
    fputs("]}", o);
  } else if (rc == 1) {
    rc = 0;
  }
  for (size_t i = 0; i < t.n; i++) free(t.v[i].label);
  free(t.v);
  sp__sym_free(sym);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
  free(path);
  return rc;
}
