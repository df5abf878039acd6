/* read_filter.c - region and rank selection shared by every read-side command:
 * include/exclude regular expressions with Python re.match semantics (anchored
 * at the start of the name, not at the end) and rank specs such as "0,2,4-7".
 *
 * POSIX regexec() reports the leftmost match, so "some match starts at 0" is
 * exactly "the leftmost match starts at 0": no need to rewrite the pattern.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "read/read_internal.h"

#define MAX_RANGE ((int64_t)1 << 24)

struct pattern {
  char *text;
  regex_t re;
};

struct sp_filter {
  struct pattern *inc, *exc;
  size_t ninc, nexc;
  int64_t *ranks;
  size_t nranks;
};

sp_status sp_filter_create(sp_filter **out) {
  if (!out) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_filter_create: out is NULL");
  *out = calloc(1, sizeof **out);
  return *out ? SP_OK : sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
}

void sp_filter_free(sp_filter *f) {
  if (!f) return;
  for (size_t i = 0; i < f->ninc; i++) {
    regfree(&f->inc[i].re);
    free(f->inc[i].text);
  }
  for (size_t i = 0; i < f->nexc; i++) {
    regfree(&f->exc[i].re);
    free(f->exc[i].text);
  }
  free(f->inc);
  free(f->exc);
  free(f->ranks);
  free(f);
}

static sp_status add_pattern(struct pattern **v, size_t *n, const char *regex, const char *what) {
  if (!regex)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "%s pattern is NULL", what);
  struct pattern *nv = realloc(*v, (*n + 1) * sizeof *nv);
  if (!nv) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  *v = nv;
  struct pattern *p = &nv[*n];
  int rc = regcomp(&p->re, regex, REG_EXTENDED);
  if (rc != 0) {
    char msg[256];
    regerror(rc, &p->re, msg, sizeof msg);
    return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                         "invalid %s pattern '%s': %s (patterns are POSIX extended regular "
                         "expressions matched at the start of region names)",
                         what, regex, msg);
  }
  p->text = sp__strdup(regex);
  if (!p->text) {
    regfree(&p->re);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  (*n)++;
  return SP_OK;
}

sp_status sp_filter_include(sp_filter *f, const char *regex) {
  if (!f) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_filter_include: NULL filter");
  return add_pattern(&f->inc, &f->ninc, regex, "include");
}

sp_status sp_filter_exclude(sp_filter *f, const char *regex) {
  if (!f) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_filter_exclude: NULL filter");
  return add_pattern(&f->exc, &f->nexc, regex, "exclude");
}

static int match_start(const regex_t *re, const char *name) {
  regmatch_t m;
  return regexec(re, name, 1, &m, 0) == 0 && m.rm_so == 0;
}

int sp_filter_match_region(const sp_filter *f, const char *name) {
  if (!f || !name) return 1;
  int keep = f->ninc == 0;
  for (size_t i = 0; i < f->ninc && !keep; i++) keep = match_start(&f->inc[i].re, name);
  for (size_t i = 0; i < f->nexc && keep; i++)
    if (match_start(&f->exc[i].re, name)) keep = 0;
  return keep;
}

int sp__filter_has_patterns(const sp_filter *f) { return f && (f->ninc || f->nexc); }

static sp_status spec_error(const char *spec, const char *item, const char *why) {
  return sp__set_error(SP_ERR_INVALID_ARGUMENT,
                       "invalid rank spec '%s': %s '%s'; use comma-separated ranks and "
                       "inclusive ranges, e.g. 0,2,4-7",
                       spec, why, item);
}

/* A non-negative decimal number filling [s, e), spaces around allowed. */
static int parse_num(const char *s, const char *e, int64_t *out) {
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
  if (s == e) return 0;
  int64_t v = 0;
  for (; s < e; s++) {
    if (*s < '0' || *s > '9') return 0;
    v = v * 10 + (*s - '0');
    if (v > SP__MAX_RANK) return 0;
  }
  *out = v;
  return 1;
}

sp_status sp_parse_rank_spec(const char *spec, int64_t **ranks, size_t *n) {
  if (!spec || !ranks || !n)
    return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_parse_rank_spec: NULL argument");
  *ranks = NULL;
  *n = 0;
  size_t cap = 16, len = 0;
  int64_t *v = malloc(cap * sizeof *v);
  if (!v) return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  const char *p = spec;
  sp_status st = SP_OK;
  for (;;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    char item[64];
    snprintf(item, sizeof item, "%.*s", (int)(end - p > 60 ? 60 : end - p), p);
    const char *dash = memchr(p, '-', (size_t)(end - p));
    int64_t a = 0, b = -1; /* set on every path that reaches the loop; an optimiser cannot tell */
    if (end == p || strspn(item, " \t") == strlen(item)) {
      st = spec_error(spec, item, "empty item");
    } else if (dash) {
      if (!parse_num(p, dash, &a) || !parse_num(dash + 1, end, &b))
        st = spec_error(spec, item, dash == p ? "negative or malformed rank" : "malformed range");
      else if (a > b)
        st = spec_error(spec, item, "reversed range");
      else if (b - a >= MAX_RANGE)
        st = spec_error(spec, item, "range too large");
    } else if (!parse_num(p, end, &a)) {
      st = spec_error(spec, item, "not a rank number:");
    } else {
      b = a;
    }
    if (st != SP_OK) break;
    for (int64_t x = a; x <= b; x++) {
      if (len == cap) {
        if (cap >= (size_t)MAX_RANGE * 4) {
          st = spec_error(spec, item, "too many ranks in");
          break;
        }
        int64_t *nv = realloc(v, cap * 2 * sizeof *nv);
        if (!nv) {
          st = sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
          break;
        }
        v = nv;
        cap *= 2;
      }
      v[len++] = x;
    }
    if (st != SP_OK || !*end) break;
    p = end + 1;
  }
  if (st != SP_OK) {
    free(v);
    return st;
  }
  qsort(v, len, sizeof *v, sp__cmp_i64);
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
  *ranks = v;
  *n = k;
  return SP_OK;
}

sp_status sp_filter_ranks(sp_filter *f, const char *spec) {
  if (!f) return sp__set_error(SP_ERR_INVALID_ARGUMENT, "sp_filter_ranks: NULL filter");
  int64_t *v;
  size_t n;
  sp_status st = sp_parse_rank_spec(spec, &v, &n);
  if (st != SP_OK) return st;
  int64_t *all = realloc(f->ranks, (f->nranks + n + 1) * sizeof *all);
  if (!all) {
    free(v);
    return sp__set_error(SP_ERR_NO_MEMORY, "out of memory");
  }
  memcpy(all + f->nranks, v, n * sizeof *v);
  free(v);
  size_t len = f->nranks + n;
  qsort(all, len, sizeof *all, sp__cmp_i64);
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    if (k == 0 || all[k - 1] != all[i]) all[k++] = all[i];
  f->ranks = all;
  f->nranks = k;
  return SP_OK;
}

int sp_filter_match_rank(const sp_filter *f, int64_t rank) {
  if (!f || f->nranks == 0) return 1;
  return bsearch(&rank, f->ranks, f->nranks, sizeof *f->ranks, sp__cmp_i64) != NULL;
}

size_t sp_filter_num_ranks(const sp_filter *f) { return f ? f->nranks : 0; }
const int64_t *sp_filter_rank_list(const sp_filter *f) { return f ? f->ranks : NULL; }
size_t sp_filter_num_includes(const sp_filter *f) { return f ? f->ninc : 0; }
const char *sp_filter_include_at(const sp_filter *f, size_t i) {
  return f && i < f->ninc ? f->inc[i].text : NULL;
}
size_t sp_filter_num_excludes(const sp_filter *f) { return f ? f->nexc : 0; }
const char *sp_filter_exclude_at(const sp_filter *f, size_t i) {
  return f && i < f->nexc ? f->exc[i].text : NULL;
}

sp_status sp_filter_check_ranks(const sp_filter *f, const sp_results *r) {
  if (!f || !r) return SP_OK;
  for (size_t i = 0; i < f->nranks; i++)
    if (!sp_results_has_rank(r, f->ranks[i])) {
      char have[256] = "";
      size_t len = 0;
      size_t nr = sp_results_num_ranks(r);
      for (size_t k = 0; k < nr && len < sizeof have - 24; k++)
        len += (size_t)snprintf(have + len, sizeof have - len, "%s%lld", k ? "," : "",
                                (long long)sp_results_rank(r, k));
      if (nr == 0) snprintf(have, sizeof have, "none");
      return sp__set_error(SP_ERR_NOT_FOUND, "rank %lld is not in %s (ranks present: %s)",
                           (long long)f->ranks[i],
                           sp_results_path(r) ? sp_results_path(r) : "the results", have);
    }
  return SP_OK;
}
