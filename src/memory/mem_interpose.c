/* mem_interpose.c - the allocation functions libscope_profiler_memory.so
 * exports in place of the C library's, and the bootstrap that finds the C
 * library's own versions behind them.
 *
 * Every wrapper first calls the real function, then tests one word,
 * mem__hot: zero while no capture runs (one predictable branch). The real
 * functions are found with dlsym(RTLD_NEXT) on first use. dlsym itself may
 * allocate (dlerror's buffer, the loader's scope tables), which re-enters
 * these wrappers before anything is resolved: the resolving thread is then
 * served from a static arena, whose pointers free() ignores and realloc()
 * copies out of; other threads wait for the resolution to finish. Arena
 * pointers are rare, so the wrappers only look for them once the arena
 * has been used (MEM_HOT_ARENA).
 *
 * Ordering, which the capture reader relies on to pair releases with the
 * right allocation when an address is reused: an allocation is timed after
 * the real call returns, a release before the real call frees the block.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memory/mem_internal.h"

/* glibc's own entry points, the fallback if dlsym finds nothing. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

MEM_HIDDEN uint32_t mem__hot;
MEM_HIDDEN MEM_TLS struct mem_tls mem__tls;

#define HOT() __atomic_load_n(&mem__hot, __ATOMIC_RELAXED)
#define REAL(f) __atomic_load_n(&mem__real.f, __ATOMIC_RELAXED)
#define SITE() __builtin_return_address(0)

/*====== The bootstrap arena ======*/

#define ARENA_BYTES (256u * 1024u)
#define ARENA_HEADER 16u /* the block's size, so realloc and usable know it */
static _Alignas(64) unsigned char arena[ARENA_BYTES];
static size_t arena_used;

static int in_arena(const void *p) {
  return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

static size_t arena_size(const void *p) {
  size_t n;
  memcpy(&n, (const unsigned char *)p - ARENA_HEADER, sizeof n);
  return n;
}

/* Bump allocation; the arena starts zeroed and is never reused, so calloc
 * needs no memset. */
static void *arena_alloc(size_t n, size_t align) {
  if (align < ARENA_HEADER) align = ARENA_HEADER;
  if (align & (align - 1) || n > ARENA_BYTES) return NULL;
  size_t old = __atomic_load_n(&arena_used, __ATOMIC_RELAXED), start;
  do {
    start = (old + ARENA_HEADER + align - 1) & ~(align - 1);
    if (start + n > ARENA_BYTES) {
      errno = ENOMEM;
      return NULL;
    }
  } while (!__atomic_compare_exchange_n(&arena_used, &old, start + n, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  memcpy(arena + start - ARENA_HEADER, &n, sizeof n);
  __atomic_or_fetch(&mem__hot, MEM_HOT_ARENA, __ATOMIC_RELAXED);
  return arena + start;
}

/*====== Resolution ======*/

static void *boot_malloc(size_t n);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t m);
static void *boot_realloc(void *p, size_t n);
static int boot_posix_memalign(void **out, size_t al, size_t n);
static void *boot_aligned_alloc(size_t al, size_t n);
static void *boot_memalign(size_t al, size_t n);
static void *boot_valloc(size_t n);
static void *boot_pvalloc(size_t n);
static size_t boot_usable(void *p);
static void *boot_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off);
static int boot_munmap(void *a, size_t len);

MEM_HIDDEN struct mem_real mem__real = {
    boot_malloc,  boot_free,    boot_calloc, boot_realloc, boot_posix_memalign, boot_aligned_alloc,
    boot_memalign, boot_valloc, boot_pvalloc, boot_usable, boot_mmap,           boot_munmap,
};

static int boot_state; /* 0 unresolved, 1 resolving, 2 done */

/* The next definition of `name` after ours, or `fallback` when there is
 * none; never one of our own wrappers (a static link of this library). */
#define FIND(field, name, fallback)                      \
  do {                                                   \
    void *p_ = dlsym(RTLD_NEXT, #name);                  \
    __typeof__(r.field) f_ = NULL;                       \
    if (p_) memcpy(&f_, &p_, sizeof f_);                 \
    r.field = f_ && f_ != name ? f_ : (fallback);         \
  } while (0)

static void *fallback_aligned_alloc(size_t al, size_t n) { return __libc_memalign(al, n); }
static int fallback_posix_memalign(void **out, size_t al, size_t n) {
  if (al < sizeof(void *) || (al & (al - 1))) return EINVAL;
  void *p = __libc_memalign(al, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
static size_t fallback_usable(void *p) {
  (void)p;
  return 0;
}
static void *fallback_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off) {
  return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}
static int fallback_munmap(void *a, size_t len) { return (int)syscall(SYS_munmap, a, len); }

static void resolve(void) {
  int expect = 0;
  if (__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) == 2) return;
  if (__atomic_compare_exchange_n(&boot_state, &expect, 1, 0, __ATOMIC_ACQUIRE,
                                  __ATOMIC_ACQUIRE)) {
    mem__tls.boot = 1;
    int saved = errno;
    struct mem_real r;
    FIND(malloc, malloc, __libc_malloc);
    FIND(free, free, __libc_free);
    FIND(calloc, calloc, __libc_calloc);
    FIND(realloc, realloc, __libc_realloc);
    FIND(posix_memalign, posix_memalign, fallback_posix_memalign);
    FIND(aligned_alloc, aligned_alloc, fallback_aligned_alloc);
    FIND(memalign, memalign, __libc_memalign);
    FIND(valloc, valloc, __libc_valloc);
    FIND(pvalloc, pvalloc, __libc_pvalloc);
    FIND(usable, malloc_usable_size, fallback_usable);
    FIND(mmap, mmap, fallback_mmap);
    FIND(munmap, munmap, fallback_munmap);
    /* Field by field: a thread calling through a field meanwhile sees
     * either the bootstrap function or the real one, both correct. */
#define PUB(f) __atomic_store_n(&mem__real.f, r.f, __ATOMIC_RELEASE)
    PUB(malloc); PUB(free); PUB(calloc); PUB(realloc); PUB(posix_memalign);
    PUB(aligned_alloc); PUB(memalign); PUB(valloc); PUB(pvalloc); PUB(usable);
    PUB(mmap); PUB(munmap);
#undef PUB
    errno = saved;
    mem__tls.boot = 0;
    __atomic_store_n(&boot_state, 2, __ATOMIC_RELEASE);
    return;
  }
  if (mem__tls.boot) return; /* dlsym re-entered us: the caller uses the arena */
  while (__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) != 2) sched_yield();
}

/* 1 when the resolving thread re-entered (serve it from the arena). */
static int booting(void) {
  resolve();
  return __atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) != 2;
}

static void *boot_malloc(size_t n) { return booting() ? arena_alloc(n, 16) : REAL(malloc)(n); }
static void boot_free(void *p) {
  if (in_arena(p)) return;
  if (!booting()) REAL(free)(p);
}
static void *boot_calloc(size_t n, size_t m) {
  size_t b;
  if (__builtin_mul_overflow(n, m, &b)) {
    errno = ENOMEM;
    return NULL;
  }
  return booting() ? arena_alloc(b, 16) : REAL(calloc)(n, m);
}
static void *boot_realloc(void *p, size_t n) {
  if (booting()) {
    void *q = arena_alloc(n, 16);
    if (q && p && in_arena(p)) {
      size_t old = arena_size(p);
      memcpy(q, p, old < n ? old : n);
    }
    return q;
  }
  return REAL(realloc)(p, n);
}
static int boot_posix_memalign(void **out, size_t al, size_t n) {
  if (booting()) {
    void *p = arena_alloc(n, al);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  return REAL(posix_memalign)(out, al, n);
}
static void *boot_aligned_alloc(size_t al, size_t n) {
  return booting() ? arena_alloc(n, al) : REAL(aligned_alloc)(al, n);
}
static void *boot_memalign(size_t al, size_t n) {
  return booting() ? arena_alloc(n, al) : REAL(memalign)(al, n);
}
static void *boot_valloc(size_t n) {
  return booting() ? arena_alloc(n, 4096) : REAL(valloc)(n);
}
static void *boot_pvalloc(size_t n) {
  return booting() ? arena_alloc((n + 4095) & ~(size_t)4095, 4096) : REAL(pvalloc)(n);
}
static size_t boot_usable(void *p) {
  if (in_arena(p)) return arena_size(p);
  return booting() ? 0 : REAL(usable)(p);
}
static void *boot_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off) {
  return booting() ? fallback_mmap(a, len, prot, flags, fd, off)
                   : REAL(mmap)(a, len, prot, flags, fd, off);
}
static int boot_munmap(void *a, size_t len) {
  return booting() ? fallback_munmap(a, len) : REAL(munmap)(a, len);
}

MEM_HIDDEN int mem__usable_fast;

/* Turns the header read of mem__usable on when the allocator behind us is
 * glibc's and agrees with its own malloc_usable_size on blocks of every
 * kind (small, large, mmapped, aligned). */
MEM_HIDDEN void mem__usable_check(void) {
#if defined(__GLIBC__) && defined(__x86_64__)
  static int checked;
  if (checked) return;
  checked = 1;
  Dl_info info;
  void *fn;
  struct mem_real r = mem__real;
  memcpy(&fn, &r.malloc, sizeof fn);
  if (!dladdr(fn, &info) || !info.dli_fname || !strstr(info.dli_fname, "/libc.so")) return;
  static const size_t sizes[] = {0, 1, 24, 25, 100, 1000, 4096, 5000, 70000, 300000, 2000000};
  int ok = 1;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && ok; i++) {
    void *a = r.malloc(sizes[i]), *b = r.memalign(64, sizes[i] + 1), *c = r.calloc(1, sizes[i] + 3);
    __atomic_store_n(&mem__usable_fast, 1, __ATOMIC_RELAXED);
    void *v[3] = {a, b, c};
    for (int k = 0; k < 3; k++)
      if (v[k] && mem__usable(v[k]) != r.usable(v[k])) ok = 0;
    __atomic_store_n(&mem__usable_fast, 0, __ATOMIC_RELAXED);
    r.free(a);
    r.free(b);
    r.free(c);
  }
  __atomic_store_n(&mem__usable_fast, ok, __ATOMIC_RELAXED);
#endif
}

/* Resolve before main, while the process has one thread. */
__attribute__((constructor(101))) static void mem_init(void) { resolve(); }

/*====== The wrappers ======*/

#define ON(h) MEM_UNLIKELY((h)&MEM_HOT_ON)

SP_API void *malloc(size_t n) {
  void *p = REAL(malloc)(n);
  if (ON(HOT())) mem__on_alloc(p, n, SP_MEMCAP_MALLOC, SITE());
  return p;
}

SP_API void free(void *p) {
  uint32_t h = HOT();
  if (MEM_UNLIKELY(h)) {
    if ((h & MEM_HOT_ARENA) && in_arena(p)) return;
    if ((h & MEM_HOT_ON) && p) mem__on_free(p, SP_MEMCAP_FREE);
  }
  REAL(free)(p);
}

SP_API void *calloc(size_t n, size_t m) {
  void *p = REAL(calloc)(n, m);
  if (ON(HOT())) mem__on_alloc(p, n * m, SP_MEMCAP_CALLOC, SITE());
  return p;
}

static inline __attribute__((always_inline)) void *do_realloc(void *p, size_t n, void *site) {
  uint32_t h = HOT();
  if (MEM_LIKELY(!h)) return REAL(realloc)(p, n);
  if ((h & MEM_HOT_ARENA) && in_arena(p)) {
    /* Out of the arena: a fresh block through our own malloc, so a running
     * capture sees it. */
    void *q = malloc(n);
    if (q) {
      size_t old = arena_size(p);
      memcpy(q, p, old < n ? old : n);
    }
    return q;
  }
  if (h & MEM_HOT_ON) return mem__realloc(p, n, site);
  return REAL(realloc)(p, n);
}

SP_API void *realloc(void *p, size_t n) { return do_realloc(p, n, SITE()); }

/* glibc's reallocarray goes to its realloc without our wrapper seeing it. */
SP_API void *reallocarray(void *p, size_t n, size_t m) {
  size_t b;
  if (__builtin_mul_overflow(n, m, &b)) {
    errno = ENOMEM;
    return NULL;
  }
  return do_realloc(p, b, SITE());
}

SP_API int posix_memalign(void **out, size_t al, size_t n) {
  int r = REAL(posix_memalign)(out, al, n);
  if (ON(HOT()) && r == 0) mem__on_alloc(*out, n, SP_MEMCAP_POSIX_MEMALIGN, SITE());
  return r;
}

SP_API void *aligned_alloc(size_t al, size_t n) {
  void *p = REAL(aligned_alloc)(al, n);
  if (ON(HOT())) mem__on_alloc(p, n, SP_MEMCAP_ALIGNED_ALLOC, SITE());
  return p;
}

SP_API void *memalign(size_t al, size_t n) {
  void *p = REAL(memalign)(al, n);
  if (ON(HOT())) mem__on_alloc(p, n, SP_MEMCAP_MEMALIGN, SITE());
  return p;
}

SP_API void *valloc(size_t n) {
  void *p = REAL(valloc)(n);
  if (ON(HOT())) mem__on_alloc(p, n, SP_MEMCAP_VALLOC, SITE());
  return p;
}

SP_API void *pvalloc(size_t n) {
  void *p = REAL(pvalloc)(n);
  if (ON(HOT())) mem__on_alloc(p, n, SP_MEMCAP_PVALLOC, SITE());
  return p;
}

SP_API size_t malloc_usable_size(void *p) {
  if (MEM_UNLIKELY(HOT() & MEM_HOT_ARENA) && in_arena(p)) return arena_size(p);
  return REAL(usable)(p);
}

SP_API void *mmap(void *a, size_t len, int prot, int flags, int fd, off_t off) {
  void *p = REAL(mmap)(a, len, prot, flags, fd, off);
  if (MEM_UNLIKELY(HOT() & MEM_HOT_MMAP) && p != MAP_FAILED && (flags & MAP_ANONYMOUS))
    mem__on_mmap(p, len, SITE());
  return p;
}

SP_API int munmap(void *a, size_t len) {
  if (MEM_UNLIKELY(HOT() & MEM_HOT_MMAP)) mem__on_munmap(a, len);
  return REAL(munmap)(a, len);
}
