/* nvtx.h - NVTX ranges around regions, so Nsight Systems (or any NVTX tool)
 * shows them on its timeline.
 *
 * One NVTX domain per manager; each region's name is registered once in it
 * (nvtxDomainRegisterStringA) with a colour derived from the name, so a
 * region's push is one call with a prepared attribute block and its pop is
 * one call. NVTX3 is header-only: with no tool injected (NVTX_INJECTION64_PATH
 * unset, no Nsight) a push is a load and a branch. Built only where the NVTX3
 * headers were found (SP_HAVE_NVTX); elsewhere sp__nvtx_open fails with a
 * message saying so.
 *
 * Thread-safe: pushes and pops come from any thread (NVTX ranges nest per
 * thread, as regions do); registration takes a lock and never moves what a
 * push reads.
 */
#ifndef SP_NVTX_H
#define SP_NVTX_H

#include <stddef.h>
#include <stdint.h>

struct sp__nvtx;

/* 1 when this build has NVTX. */
int sp__nvtx_available(void);
/* A domain named `domain`; `name_of` gives a region's name for regions
 * first pushed before they were registered. NULL with the reason in `why`. */
struct sp__nvtx *sp__nvtx_open(const char *domain, const char *(*name_of)(uint32_t id),
                               char *why, size_t whylen);
/* Register region `id` (a process-wide region handle) under `name`;
 * idempotent. -1 when out of memory or the id is out of range. */
int sp__nvtx_region(struct sp__nvtx *n, uint32_t id, const char *name);
/* Push/pop a range for region `id`. A region not registered yet is
 * registered on its first push (once, under the lock); one that cannot be
 * is pushed with its plain name, so the nesting is always kept. */
void sp__nvtx_push(struct sp__nvtx *n, uint32_t id);
void sp__nvtx_pop(struct sp__nvtx *n);
void sp__nvtx_close(struct sp__nvtx *n);

#endif
