/* dlopen_host.c - a C program that is not linked with scope-profiler and
 * loads it at run time, the way Python's ctypes/cffi, a Fortran program's
 * plugin loader or a tool's LD_AUDIT hook do.
 *
 * Usage: dlopen-host LIBRARY OUTPUT.h5
 * Loads LIBRARY with dlopen(RTLD_NOW | RTLD_LOCAL), checks that the library's
 * thread-local block is at most 256 bytes (glibc serves initial-exec TLS of a
 * dlopen()ed library from a small static surplus), then records through the
 * out-of-line entry points only: sp_region_intern_n() with counted names that
 * are not NUL-terminated, sp_region_begin_fn()/sp_region_end_fn() on the
 * default manager and on a manager of its own, from two threads. Every check
 * prints what failed; exit 0 on success.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t region_t;
typedef void manager_t;
/* The leading fields of sp_setup_args (scope_profiler.h), zeroed. */
struct setup_args {
  const void *options;
  const char *config_path;
  const char *const *overrides;
  int replace;
  int auto_finalize;
};

static region_t (*intern_n)(const char *, size_t);
static int (*begin_fn)(manager_t *, region_t);
static int (*end_fn)(manager_t *, region_t);
static int (*setup_m)(manager_t *, const struct setup_args *);
static int (*finalize_m)(manager_t *, const void *, void **);
static uint64_t (*num_calls)(const manager_t *, region_t);
static const char *(*last_error)(void);
static const char *(*region_name)(region_t);

static int failures;
#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) {                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);               \
      fputc('\n', stderr);                        \
      failures++;                                 \
    }                                             \
  } while (0)

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "FAIL: %s is not exported: %s\n", name, dlerror());
    exit(1);
  }
  return p;
}

struct tls_probe {
  const char *path;
  size_t memsz;
  int found;
};

static int find_tls(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct tls_probe *p = data;
  const char *base = strrchr(info->dlpi_name, '/');
  base = base ? base + 1 : info->dlpi_name;
  if (!*base || strncmp(base, p->path, strlen(p->path)) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS) p->memsz = info->dlpi_phdr[i].p_memsz;
  p->found = 1;
  return 1;
}

struct worker {
  manager_t *m;
  region_t outer, inner;
  int n;
  int rc;
};

static void *work(void *arg) {
  struct worker *w = arg;
  for (int i = 0; i < w->n; i++) {
    w->rc |= begin_fn(w->m, w->outer);
    w->rc |= begin_fn(w->m, w->inner);
    w->rc |= end_fn(w->m, w->inner);
    w->rc |= end_fn(w->m, w->outer);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY OUTPUT.h5\n", argv[0]);
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "FAIL: dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  const char *base = strrchr(argv[1], '/');
  struct tls_probe tp = {base ? base + 1 : argv[1], 0, 0};
  dl_iterate_phdr(find_tls, &tp);
  CHECK(tp.found, "the loaded library %s is not in the link map", tp.path);
  CHECK(tp.memsz <= 256, "the library's thread-local block is %zu bytes; it must stay <= 256 for dlopen", tp.memsz);
  printf("thread-local block: %zu bytes\n", tp.memsz);

  *(void **)&intern_n = sym(h, "sp_region_intern_n");
  *(void **)&begin_fn = sym(h, "sp_region_begin_fn");
  *(void **)&end_fn = sym(h, "sp_region_end_fn");
  *(void **)&setup_m = sym(h, "sp_manager_setup");
  *(void **)&finalize_m = sym(h, "sp_manager_finalize");
  *(void **)&num_calls = sym(h, "sp_manager_num_calls");
  *(void **)&last_error = sym(h, "sp_last_error");
  *(void **)&region_name = sym(h, "sp_region_name");
  manager_t *(*default_manager)(void);
  manager_t *(*create)(void);
  void (*destroy)(manager_t *);
  *(void **)&default_manager = sym(h, "sp_default_manager");
  *(void **)&create = sym(h, "sp_manager_create");
  *(void **)&destroy = sym(h, "sp_manager_destroy");

  /* Counted names cut out of one buffer: no terminator after each. */
  static const char names[] = "dl.outerdl.innerXX";
  region_t outer = intern_n(names, 8), inner = intern_n(names + 8, 8);
  CHECK(outer && inner && outer != inner, "intern_n gave %u and %u (%s)", outer, inner, last_error());
  CHECK(outer && strcmp(region_name(outer), "dl.outer") == 0, "region name is %s", outer ? region_name(outer) : "-");
  CHECK(intern_n("dl.outer", 8) == outer, "the same counted name gave another handle");
  CHECK(intern_n("a\0b", 3) == 0 && strstr(last_error(), "NUL"), "a NUL inside the name was accepted (%s)",
        last_error());
  CHECK(intern_n(names, 0) == 0, "an empty counted name was accepted");
  CHECK(begin_fn(NULL, outer) < 0, "a NULL manager was accepted");

  char path_kv[4200];
  snprintf(path_kv, sizeof path_kv, "file_path=%s", argv[2]);
  const char *ov[] = {path_kv, "buffer_limit=16", NULL};
  struct setup_args sa = {0};
  sa.overrides = ov;
  manager_t *dm = default_manager();
  CHECK(dm != NULL, "sp_default_manager() is NULL");
  int st = setup_m(dm, &sa);
  CHECK(st == 0, "setup: %d %s", st, last_error());

  /* A second manager, recording with in-memory output only. */
  manager_t *own = create();
  const char *ov2[] = {"deactivate_file_output=true", NULL};
  struct setup_args sa2 = {0};
  sa2.overrides = ov2;
  CHECK(own && setup_m(own, &sa2) == 0, "own manager: %s", last_error());

  enum { N = 500 }; /* beyond buffer_limit: growth runs behind the out-of-line calls too */
  struct worker w[3] = {{dm, outer, inner, N, 0}, {dm, outer, inner, N, 0}, {own, inner, outer, N, 0}};
  pthread_t th[3];
  for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, work, &w[i]);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++) CHECK(w[i].rc == 0, "worker %d saw a begin/end failure", i);
  CHECK(end_fn(dm, outer) < 0, "an unmatched end was accepted");

  st = finalize_m(dm, NULL, NULL);
  CHECK(st == 0, "finalize: %d %s", st, last_error());
  CHECK(num_calls(dm, outer) == 2 * N, "outer: %llu calls on the default manager, want %d",
        (unsigned long long)num_calls(dm, outer), 2 * N);
  CHECK(num_calls(dm, inner) == 2 * N, "inner: %llu calls, want %d", (unsigned long long)num_calls(dm, inner), 2 * N);
  st = finalize_m(own, NULL, NULL);
  CHECK(st == 0, "finalize own: %d %s", st, last_error());
  CHECK(num_calls(own, outer) == N, "own manager: %llu calls, want %d", (unsigned long long)num_calls(own, outer), N);
  destroy(own);
  FILE *f = fopen(argv[2], "rb");
  CHECK(f != NULL, "no output file %s", argv[2]);
  if (f) fclose(f);
  if (failures) return 1;
  printf("ok: %d calls per thread through the out-of-line entry points\n", N);
  return 0;
}
