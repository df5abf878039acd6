/* nvtx.c - NVTX ranges around regions (see nvtx.h).
 *
 * Per region, a ready attribute block (registered name, colour) lives in a
 * chunked table indexed by the process-wide region id: chunks are allocated
 * once and never move, and an entry is published with a release store after
 * it is complete, so a push reads it with one acquire load and no lock.
 * Colours come from a fixed palette by a hash of the name: the same region
 * has the same colour in every run and on every rank.
 *
 * The "nvtx" extension (use_nvtx) at the end is a forwarder: outside the
 * timestamps, so a range encloses the region's measured interval and its
 * cost stays out of it. The default manager's domain is "scope-profiler";
 * another manager's is "scope-profiler:<its file name>", so Nsight shows
 * each profile as its own row.
 */
#include "probes/nvtx.h"

#include <stdio.h>
#include <string.h>

#include "config/config_internal.h"
#include "probes/ext.h"
#include "scope_profiler.h"

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

/*====== The extension ======*/

/* Without NVTX3 the setting is UNBUILT in this build: setup already warned. */
static int nvtx_wanted(const struct sp_config *cfg) {
  return cfg->use_nvtx && !cfg->aggregation_mode && sp__nvtx_available();
}

static sp_status nvtx_setup(struct sp_ext_setup *s, void **proc) {
  char why[512], domain[300];
  const char *path = s->cfg->file_path ? s->cfg->file_path : "";
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (s->manager == sp_default_manager() || !*base)
    snprintf(domain, sizeof domain, "scope-profiler");
  else
    snprintf(domain, sizeof domain, "scope-profiler:%s", base);
  struct sp__nvtx *n = sp__nvtx_open(domain, sp_region_name, why, sizeof why);
  if (!n) {
    sp_ext_warn(s->manager, "use_nvtx: no NVTX ranges in this run: %s", why);
    s->decline = 1;
    return SP_OK;
  }
  *proc = n;
  return SP_OK;
}

static void nvtx_teardown(void *proc) { sp__nvtx_close(proc); }

static int nvtx_region_added(void *proc, uint32_t id, const struct sp_ext_region *r) {
  if (r->internal) return 0;
  (void)sp__nvtx_region(proc, id, r->name); /* if it fails, the first push retries */
  return 1;
}

static void nvtx_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)thr;
  sp__nvtx_push(proc, c->region);
}

static void nvtx_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  (void)thr, (void)c;
  sp__nvtx_pop(proc);
}

const struct sp_ext sp__ext_nvtx = {
    .abi = SP_EXT_ABI,
    .name = "nvtx",
    .kind = SP_EXT_FORWARD,
    .wanted = nvtx_wanted,
    .setup = nvtx_setup,
    .teardown = nvtx_teardown,
    .after_fork = nvtx_teardown, /* frees memory only: no NVTX call */
    .region_added = nvtx_region_added,
    .enter = nvtx_enter,
    .exit = nvtx_exit,
};
