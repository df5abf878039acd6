/* tests/nvtx_tool/nvtx_record.c - an NVTX tool for the tests: a library that
 * NVTX3 loads from NVTX_INJECTION64_PATH (it exports InitializeInjectionNvtx2),
 * the way Nsight Systems attaches. It takes over the domain, string
 * registration and push/pop entry points and writes one line per call to
 * $SP_NVTX_RECORD (default nvtx-record.txt), so a test can check names,
 * nesting and counts against the profile:
 *
 *   D <domain-id> <name>                    nvtxDomainCreateA
 *   S <domain-id> <string-id> <text>        nvtxDomainRegisterStringA
 *   P <tid> <domain-id> <depth> <colour> <kind> <text>
 *                                           a push; depth before it, kind
 *                                           "reg" (registered string) or "ascii"
 *   O <tid> <domain-id> <depth>             a pop; depth before it (0 = a pop
 *                                           with nothing open: an error)
 *
 * Ranges nest per thread and per domain, as in NVTX. With
 * SP_NVTX_RECORD_NO_STRINGS=1 it registers no strings (answers NULL, as some
 * tools do), so callers must fall back to passing names by value.
 * Thread-safe (one lock).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#define TOOL_API __attribute__((visibility("default")))
#define MAX_DOMAINS 64
#define MAX_STRINGS 65536

struct domain {
  int id;
  char *name;
};
struct string {
  int id;
  struct domain *dom;
  char *text;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static struct domain domains[MAX_DOMAINS];
static int ndomains;
static struct string *strings[MAX_STRINGS];
static int nstrings;
static __thread int depth[MAX_DOMAINS + 1]; /* [0]: the default domain */

static void open_out(void) {
  if (out) return;
  const char *p = getenv("SP_NVTX_RECORD");
  out = fopen(p && *p ? p : "nvtx-record.txt", "w");
  if (!out) out = stderr;
  setvbuf(out, NULL, _IOLBF, 0);
}

static long tid(void) { return (long)syscall(SYS_gettid); }

static int dom_index(nvtxDomainHandle_t d) {
  struct domain *p = (struct domain *)d;
  return p ? p->id : 0;
}

static nvtxDomainHandle_t NVTX_API create_domain(const char *name) {
  pthread_mutex_lock(&lock);
  open_out();
  for (int i = 0; i < ndomains; i++)
    if (!strcmp(domains[i].name, name)) { /* one domain per name, as Nsight does */
      pthread_mutex_unlock(&lock);
      return (nvtxDomainHandle_t)&domains[i];
    }
  struct domain *d = NULL;
  if (ndomains < MAX_DOMAINS) {
    d = &domains[ndomains];
    d->id = ++ndomains;
    d->name = strdup(name);
    fprintf(out, "D %d %s\n", d->id, name);
  }
  pthread_mutex_unlock(&lock);
  return (nvtxDomainHandle_t)d;
}

static void NVTX_API destroy_domain(nvtxDomainHandle_t d) { (void)d; }

static nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t d, const char *text) {
  pthread_mutex_lock(&lock);
  open_out();
  struct string *s = NULL;
  const char *no = getenv("SP_NVTX_RECORD_NO_STRINGS");
  if (no && *no == '1') {
    pthread_mutex_unlock(&lock);
    return NULL;
  }
  if (nstrings < MAX_STRINGS && (s = calloc(1, sizeof *s)) != NULL) {
    s->id = nstrings;
    s->dom = (struct domain *)d;
    s->text = strdup(text);
    strings[nstrings++] = s;
    fprintf(out, "S %d %d %s\n", dom_index(d), s->id, text);
  }
  pthread_mutex_unlock(&lock);
  return (nvtxStringHandle_t)s;
}

static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  int di = dom_index(d);
  const char *kind = "?", *text = "?";
  unsigned colour = 0;
  if (a) {
    if (a->colorType == NVTX_COLOR_ARGB) colour = a->color;
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
      const struct string *s = (const struct string *)a->message.registered;
      kind = "reg";
      text = s ? s->text : "(null)";
    } else if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
      kind = "ascii";
      text = a->message.ascii ? a->message.ascii : "(null)";
    }
  }
  pthread_mutex_lock(&lock);
  open_out();
  fprintf(out, "P %ld %d %d %08x %s %s\n", tid(), di, depth[di], colour, kind, text);
  pthread_mutex_unlock(&lock);
  return depth[di]++;
}

static int pop(nvtxDomainHandle_t d) {
  int di = dom_index(d);
  pthread_mutex_lock(&lock);
  open_out();
  fprintf(out, "O %ld %d %d\n", tid(), di, depth[di]);
  pthread_mutex_unlock(&lock);
  if (depth[di] == 0) return -1;
  return --depth[di];
}

static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return push(d, a); }
static int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(d); }
static int NVTX_API plain_push_ex(const nvtxEventAttributes_t *a) { return push(NULL, a); }
static int NVTX_API plain_pop(void) { return pop(NULL); }
static int NVTX_API plain_push_a(const char *msg) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  return push(NULL, &a);
}

static int set(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn) {
  if (id >= size || !table[id]) return 0;
  *table[id] = fn;
  return 1;
}

TOOL_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);
TOOL_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const NvtxExportTableCallbacks *cb =
      (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb) return 0;
  NvtxFunctionTable core = NULL, core2 = NULL;
  unsigned ncore = 0, ncore2 = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &ncore) ||
      !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &ncore2))
    return 0;
  int ok = set(core2, ncore2, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)create_domain) &&
           set(core2, ncore2, NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)destroy_domain) &&
           set(core2, ncore2, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)register_string) &&
           set(core2, ncore2, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)domain_push) &&
           set(core2, ncore2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)domain_pop) &&
           set(core, ncore, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)plain_push_ex) &&
           set(core, ncore, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)plain_push_a) &&
           set(core, ncore, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)plain_pop);
  return ok;
}
