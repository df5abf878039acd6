/* nvtx.c - NVTX ranges around regions (see nvtx.h).
 *
 * Per region, a ready attribute block (registered name, colour) lives in a
 * chunked table indexed by the process-wide region id: chunks are allocated
 * once and never move, and an entry is published with a release store after
 * it is complete, so a push reads it with one acquire load and no lock.
 * Colours come from a fixed palette by a hash of the name: the same region
 * has the same colour in every run and on every rank.
 */
#include "probes/nvtx.h"

#include <stdio.h>

#if defined(SP_HAVE_NVTX)
#  include <pthread.h>
#  include <stdlib.h>
#  include <string.h>

#  include <nvtx3/nvToolsExt.h>

#  define CHUNK 1024u
#  define MAX_CHUNKS 1024u /* the region registry's limit: 1M ids */

struct ent {
  nvtxEventAttributes_t a;
  int ready; /* atomic: a is complete */
};

struct sp__nvtx {
  nvtxDomainHandle_t dom;
  const char *(*name_of)(uint32_t id);
  pthread_mutex_t lock;
  struct ent *chunks[MAX_CHUNKS]; /* atomic pointers */
};

int sp__nvtx_available(void) { return 1; }

/* Distinct, readable on Nsight's dark and light themes. */
static const uint32_t palette[] = {0xFF4E79A7, 0xFFF28E2B, 0xFFE15759, 0xFF76B7B2, 0xFF59A14F,
                                   0xFFEDC948, 0xFFB07AA1, 0xFFFF9DA7, 0xFF9C755F, 0xFFBAB0AC};

static uint32_t colour(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return palette[h % (sizeof palette / sizeof palette[0])];
}

struct sp__nvtx *sp__nvtx_open(const char *domain, const char *(*name_of)(uint32_t id),
                               char *why, size_t whylen) {
  struct sp__nvtx *n = calloc(1, sizeof *n);
  if (!n) {
    snprintf(why, whylen, "out of memory for the NVTX domain");
    return NULL;
  }
  /* Attach a tool (NVTX_INJECTION64_PATH, Nsight) now, at setup, rather
   * than inside the first region. */
  nvtxInitialize(NULL);
  n->dom = nvtxDomainCreateA(domain);
  n->name_of = name_of;
  pthread_mutex_init(&n->lock, NULL);
  return n;
}

static struct ent *entry(struct sp__nvtx *n, uint32_t id, int create) {
  uint32_t c = id / CHUNK;
  if (c >= MAX_CHUNKS) return NULL;
  struct ent *ch = __atomic_load_n(&n->chunks[c], __ATOMIC_ACQUIRE);
  if (!ch && create) {
    ch = calloc(CHUNK, sizeof *ch);
    if (!ch) return NULL;
    __atomic_store_n(&n->chunks[c], ch, __ATOMIC_RELEASE);
  }
  return ch ? &ch[id % CHUNK] : NULL;
}

int sp__nvtx_region(struct sp__nvtx *n, uint32_t id, const char *name) {
  if (!name) return -1;
  pthread_mutex_lock(&n->lock);
  struct ent *e = entry(n, id, 1);
  int rc = e ? 0 : -1;
  if (e && !__atomic_load_n(&e->ready, __ATOMIC_RELAXED)) {
    memset(&e->a, 0, sizeof e->a);
    e->a.version = NVTX_VERSION;
    e->a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    e->a.colorType = NVTX_COLOR_ARGB;
    e->a.color = colour(name);
    /* A tool that does not register strings answers NULL: then the name
     * goes by value. Region names live as long as the process. */
    nvtxStringHandle_t h = nvtxDomainRegisterStringA(n->dom, name);
    if (h) {
      e->a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
      e->a.message.registered = h;
    } else {
      e->a.messageType = NVTX_MESSAGE_TYPE_ASCII;
      e->a.message.ascii = name;
    }
    __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&n->lock);
  return rc;
}

void sp__nvtx_push(struct sp__nvtx *n, uint32_t id) {
  struct ent *e = entry(n, id, 0);
  if (__builtin_expect(e && __atomic_load_n(&e->ready, __ATOMIC_ACQUIRE), 1)) {
    nvtxDomainRangePushEx(n->dom, &e->a);
    return;
  }
  const char *name = n->name_of ? n->name_of(id) : NULL;
  if (name && sp__nvtx_region(n, id, name) == 0 && (e = entry(n, id, 0)) != NULL) {
    nvtxDomainRangePushEx(n->dom, &e->a);
    return;
  }
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name ? name : "scope-profiler region";
  nvtxDomainRangePushEx(n->dom, &a);
}

void sp__nvtx_pop(struct sp__nvtx *n) { nvtxDomainRangePop(n->dom); }

void sp__nvtx_close(struct sp__nvtx *n) {
  if (!n) return;
  /* The domain is left to the tool: NVTX has no way to tell it that ranges
   * of a destroyed domain may still be open on other threads. */
  for (uint32_t c = 0; c < MAX_CHUNKS; c++) free(n->chunks[c]);
  pthread_mutex_destroy(&n->lock);
  free(n);
}

#else /* no NVTX3 headers at build time */

int sp__nvtx_available(void) { return 0; }

struct sp__nvtx *sp__nvtx_open(const char *domain, const char *(*name_of)(uint32_t id),
                               char *why, size_t whylen) {
  (void)domain, (void)name_of;
  snprintf(why, whylen, "this build of scope-profiler has no NVTX support: rebuild it where the "
                        "NVTX3 headers are installed (the CUDA toolkit ships them), with "
                        "-DSP_WITH_NVTX=ON");
  return NULL;
}
int sp__nvtx_region(struct sp__nvtx *n, uint32_t id, const char *name) {
  (void)n, (void)id, (void)name;
  return -1;
}
void sp__nvtx_push(struct sp__nvtx *n, uint32_t id) { (void)n, (void)id; }
void sp__nvtx_pop(struct sp__nvtx *n) { (void)n; }
void sp__nvtx_close(struct sp__nvtx *n) { (void)n; }

#endif
