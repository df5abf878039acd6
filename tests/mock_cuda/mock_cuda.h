/* tests/mock_cuda/mock_cuda.h - the test-only entry points of our mock CUDA
 * driver (libcuda.so.1 in the build's tests/mock_cuda/), looked up by tests
 * with dlsym on the library the profiler loaded.
 *
 * The mock keeps a device clock per stream: work is "launched" with
 * mock_cuda_launch(stream, ns), which advances that stream's clock by ns, and
 * an event recorded on a stream takes the stream's clock. So the elapsed time
 * between two records is exactly the work launched in between on that
 * stream (SP_MOCK_CUDA_CLOCK=manual, the default), or that plus real time
 * (SP_MOCK_CUDA_CLOCK=real: the clock also follows CLOCK_MONOTONIC and
 * kernels run "asynchronously" for their duration).
 *
 * Environment, read by cuInit:
 *   SP_MOCK_CUDA_DEVICES=N          devices (default 1; 0: cuInit answers
 *                                   CUDA_ERROR_NO_DEVICE, as a driver does
 *                                   on a machine without a GPU)
 *   SP_MOCK_CUDA_INIT_ERROR=CODE    cuInit returns CODE
 *   SP_MOCK_CUDA_MAX_EVENTS=N       cuEventCreate fails with
 *                                   CUDA_ERROR_OUT_OF_MEMORY past N live events
 *   SP_MOCK_CUDA_RECORD_FAIL_AFTER=N  records past the Nth fail with
 *                                   SP_MOCK_CUDA_RECORD_ERROR (default 700,
 *                                   CUDA_ERROR_ILLEGAL_ADDRESS)
 *   SP_MOCK_CUDA_LAG=K              (manual clock) an event completes only
 *                                   K steps after its record (a step is any
 *                                   record or query: the device works on while
 *                                   the CPU polls), or once a synchronize
 *                                   covered it
 *   SP_MOCK_CUDA_CLOCK=manual|real
 */
#ifndef SP_MOCK_CUDA_H
#define SP_MOCK_CUDA_H

#include <stdint.h>

struct mock_cuda_stats {
  uint64_t created, destroyed, live, max_live;
  uint64_t create_failures, records, record_failures;
  uint64_t queries, not_ready, elapsed_calls;
  uint64_t event_syncs, stream_syncs, ctx_syncs;
  uint64_t primary_retains, set_current, push_current, pop_current;
  uint64_t calls_without_context; /* calls that needed a current context and had none */
  uint64_t bad_handles;           /* calls on destroyed or foreign handles */
};

/* Queue `ns` of device work on `stream` (NULL: the legacy default stream of
 * the calling thread's current context). */
void mock_cuda_launch(void *stream, uint64_t ns);
void mock_cuda_get_stats(struct mock_cuda_stats *out);
typedef void (*mock_cuda_launch_fn)(void *stream, uint64_t ns);
typedef void (*mock_cuda_stats_fn)(struct mock_cuda_stats *out);

#endif
