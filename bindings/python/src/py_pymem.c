/* py_pymem.c - memray_trace_python_allocators: Python's object and memory
 * allocators (PyMem_SetAllocator, domains PYMEM_DOMAIN_OBJ and
 * PYMEM_DOMAIN_MEM) hooked onto the allocation capture of
 * libscope_profiler_memory.so through its entry points for foreign
 * allocators (sp_memory_record_alloc/free).
 *
 * The hooks call the allocators they replace, on the same pointers, so they
 * can be installed and removed at any time. Python's small-object allocator
 * serves most objects from its own arenas, which the interposer never sees
 * as separate blocks: those are what the hooks add. A block larger than
 * pymalloc's threshold comes from malloc, which the interposer already
 * records when it is preloaded, so the hooks leave those alone then (no
 * block is counted twice). A release is recorded only for a block whose
 * allocation the hooks recorded, with its size, which they keep in a table
 * of their own (the allocator does not know a block's size at free): the
 * per-thread counters, and so the per-region memory columns, stay exact.
 * Both domains are called with the GIL held, which is what serialises the
 * table.
 */
#include "py_core.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "scope_profiler/memory.h"

/* pymalloc's largest small request (Objects/obmalloc.c SMALL_REQUEST_THRESHOLD). */
#define PYMALLOC_THRESHOLD 512

static const struct sp_memory_api *api;
static PyMemAllocatorEx orig_obj, orig_mem;
static int installed;
static size_t limit; /* record blocks up to this size (SIZE_MAX: all) */

/*====== Block sizes: open addressing on the block address ======*/

struct slot {
  uintptr_t p; /* 0 empty, 1 deleted */
  size_t size;
};
static struct slot *tab;
static size_t cap, used, live;

static size_t hash(uintptr_t p) {
  uint64_t x = (uint64_t)p >> 4;
  x *= 0x9E3779B97F4A7C15u;
  return (size_t)(x >> 20);
}

/* mmap, not malloc: the table's own memory must not enter the capture. */
static struct slot *table_alloc(size_t n) {
  void *m = mmap(NULL, n * sizeof(struct slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

static int table_grow(void) {
  size_t ncap = cap ? cap * 2 : 1u << 16;
  struct slot *n = table_alloc(ncap);
  if (!n) return -1;
  for (size_t i = 0; i < cap; i++) {
    if (tab[i].p <= 1) continue;
    size_t j = hash(tab[i].p) & (ncap - 1);
    while (n[j].p) j = (j + 1) & (ncap - 1);
    n[j] = tab[i];
  }
  if (tab) munmap(tab, cap * sizeof *tab);
  tab = n;
  cap = ncap;
  used = live;
  return 0;
}

static void table_put(void *ptr, size_t size) {
  if ((used + 1) * 4 >= cap * 3 && table_grow() < 0) return; /* unrecorded: its free is skipped too */
  uintptr_t p = (uintptr_t)ptr;
  size_t j = hash(p) & (cap - 1), tomb = SIZE_MAX;
  while (tab[j].p) {
    if (tab[j].p == p) { /* a stale entry of a block freed behind our back */
      tab[j].size = size;
      return;
    }
    if (tab[j].p == 1 && tomb == SIZE_MAX) tomb = j;
    j = (j + 1) & (cap - 1);
  }
  if (tomb != SIZE_MAX) {
    j = tomb;
  } else {
    used++;
  }
  tab[j].p = p;
  tab[j].size = size;
  live++;
}

/* The recorded size of ptr, removing it; 0 when it was not recorded. */
static size_t table_take(void *ptr) {
  if (!cap) return 0;
  uintptr_t p = (uintptr_t)ptr;
  for (size_t j = hash(p) & (cap - 1); tab[j].p; j = (j + 1) & (cap - 1)) {
    if (tab[j].p == p) {
      size_t s = tab[j].size;
      tab[j].p = 1;
      live--;
      return s;
    }
  }
  return 0;
}

/*====== The hooks ======*/

static void note_alloc(void *p, size_t size) {
  if (!p || size > limit) return;
  table_put(p, size ? size : 1);
  api->record_alloc(p, size);
}

static void note_free(void *p) {
  if (!p) return;
  size_t s = table_take(p);
  if (s) api->record_free(p, s);
}

#define HOOKS(dom, orig)                                                                      \
  static void *dom##_malloc(void *ctx, size_t size) {                                        \
    (void)ctx;                                                                                 \
    void *p = orig.malloc(orig.ctx, size);                                                     \
    note_alloc(p, size);                                                                       \
    return p;                                                                                  \
  }                                                                                            \
  static void *dom##_calloc(void *ctx, size_t n, size_t size) {                              \
    (void)ctx;                                                                                 \
    void *p = orig.calloc(orig.ctx, n, size);                                                  \
    note_alloc(p, n * size);                                                                   \
    return p;                                                                                  \
  }                                                                                            \
  static void *dom##_realloc(void *ctx, void *old, size_t size) {                            \
    (void)ctx;                                                                                 \
    void *p = orig.realloc(orig.ctx, old, size);                                               \
    if (!p && size) return p; /* failed: old is untouched */                                   \
    size_t had = old ? table_take(old) : 0;                                                    \
    if (had) api->record_free(old, had);                                                       \
    /* pymalloc keeps a resized malloc block in malloc: unrecorded stays so */                 \
    if (!old || had || limit == SIZE_MAX) note_alloc(p, size);                                 \
    return p;                                                                                  \
  }                                                                                            \
  static void dom##_free(void *ctx, void *p) {                                               \
    (void)ctx;                                                                                 \
    note_free(p);                                                                              \
    orig.free(orig.ctx, p);                                                                    \
  }

HOOKS(obj, orig_obj)
HOOKS(mem, orig_mem)

static const struct sp_memory_api *find_api(void) {
  void *sym = dlsym(RTLD_DEFAULT, "sp_memory_api_v1");
  const struct sp_memory_api *a = sym;
  if (!a || a->abi != SP_MEMORY_ABI || a->size < sizeof *a) return NULL;
  return a;
}

/* 1 when malloc itself goes through the interposer (it was preloaded or
 * linked before libc), so the blocks pymalloc takes from malloc are seen.
 * Symbols resolve in link-map order, which dl_iterate_phdr walks; a library
 * dlopen'ed later comes after libc and interposes nothing. (dlsym of
 * "malloc" cannot tell: a non-PIE executable such as Debian's python3
 * answers with its own PLT slot.) */
struct order {
  int i, mem, libc;
};

static int order_cb(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  struct order *o = user;
  const char *n = info->dlpi_name ? info->dlpi_name : "";
  const char *base = strrchr(n, '/');
  base = base ? base + 1 : n;
  if (o->mem < 0 && strstr(base, "libscope_profiler_memory")) o->mem = o->i;
  if (o->libc < 0 && !strncmp(base, "libc.so", 7)) o->libc = o->i;
  o->i++;
  return 0;
}

static int malloc_interposed(void) {
  struct order o = {0, -1, -1};
  dl_iterate_phdr(order_cb, &o);
  return o.mem >= 0 && (o.libc < 0 || o.mem < o.libc);
}

/* pymalloc_hooks(on) -> dict(installed, all_sizes) */
static PyObject *py_pymalloc_hooks(PyObject *self, PyObject *arg) {
  (void)self;
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  if (on && !installed) {
    if (!(api = find_api()))
      return PyErr_Format(sp_py_state_error, "memray_trace_python_allocators: libscope_profiler_memory.so is not "
                                             "loaded, so there is no capture to trace into");
    PyMemAllocatorEx raw;
    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &raw);
    PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
    PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
    /* Without pymalloc (PYTHONMALLOC=malloc) every object is a malloc block. */
    int pymalloc = orig_obj.malloc != raw.malloc;
    limit = malloc_interposed() ? (pymalloc ? PYMALLOC_THRESHOLD : 0) : SIZE_MAX;
    PyMemAllocatorEx h_obj = {NULL, obj_malloc, obj_calloc, obj_realloc, obj_free};
    PyMemAllocatorEx h_mem = {NULL, mem_malloc, mem_calloc, mem_realloc, mem_free};
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &h_obj);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &h_mem);
    installed = 1;
  } else if (!on && installed) {
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
    installed = 0;
    if (tab) munmap(tab, cap * sizeof *tab);
    tab = NULL;
    cap = used = live = 0;
  }
  return Py_BuildValue("{s:O,s:O}", "installed", installed ? Py_True : Py_False, "all_sizes",
                       installed && limit == SIZE_MAX ? Py_True : Py_False);
}

static PyObject *py_malloc_interposed(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return PyBool_FromLong(malloc_interposed());
}

static PyObject *py_memory_library_loaded(PyObject *self, PyObject *noargs) {
  (void)self, (void)noargs;
  return PyBool_FromLong(find_api() != NULL);
}

static PyMethodDef pymem_methods[] = {
    {"memory_library_loaded", py_memory_library_loaded, METH_NOARGS,
     "Whether libscope_profiler_memory.so (sp_memory_api_v1) is visible in this process."},
    {"pymalloc_hooks", py_pymalloc_hooks, METH_O,
     "Install (True) or remove (False) the hooks of Python's object and memory allocators."},
    {"malloc_interposed", py_malloc_interposed, METH_NOARGS,
     "Whether malloc goes through libscope_profiler_memory.so in this process."},
    {NULL, NULL, 0, NULL},
};

int sp_py_pymem_init(PyObject *module) { return PyModule_AddFunctions(module, pymem_methods); }
