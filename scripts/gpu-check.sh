#!/usr/bin/env bash
# GPU timing and NVTX on real NVIDIA hardware, which the test suite cannot
# reach (it runs the "cuda" backend on a mock driver). Builds a small CUDA
# program (scripts/gpu-check/: regions around kernels that spin for a known
# time on the GPU's global timer) against this build's library, runs it on
# the real driver and checks the recorded device times, gpu_sync_on_exit,
# streams and threads; with Nsight Systems (nsys) installed, also that the
# NVTX ranges show up in its report.
#
#   scripts/gpu-check.sh [BUILD_DIR]     (default: $SP_BUILD, else build/)
#
# Exit status: 0 all checks passed, 1 a check failed, 77 no GPU here (no
# nvidia-smi, no device, or no nvcc): CTest reports that as skipped, so CI
# machines without a GPU skip it.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${SP_BUILD:-$root/build}}

skip() { echo "gpu-check: skipped: $*"; exit 77; }
command -v nvidia-smi > /dev/null 2>&1 || skip "no nvidia-smi (no NVIDIA driver)"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
[[ ${gpus:-0} -gt 0 ]] || skip "nvidia-smi lists no GPU"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || skip "no nvcc (install the CUDA toolkit, or put it on PATH)"
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
lib=$build/libscope_profiler.so
[[ -f $lib ]] || { echo "gpu-check: $lib is not built; build the project first"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sp-gpu-check-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "gpu-check: $(nvidia-smi -L | head -n 1); nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

"$nvcc" -O2 -c "$root/scripts/gpu-check/spin.cu" -o "$work/spin.o" ||
  { echo "gpu-check: nvcc failed"; exit 1; }
cc -O2 -std=gnu11 -Wall -Wextra -I"$root/include" -c "$root/scripts/gpu-check/gpu_check.c" -o "$work/gpu_check.o" ||
  { echo "gpu-check: compiling gpu_check.c failed"; exit 1; }
# Only the program links the CUDA runtime; the profiler loads the driver itself.
c++ -o "$work/gpu_check" "$work/gpu_check.o" "$work/spin.o" -L"$build" -Wl,-rpath,"$build" -lscope_profiler \
  -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" -lcudart -lpthread ||
  { echo "gpu-check: linking failed"; exit 1; }

status=0
cd "$work" || exit 1
# The real driver: never the test mock, whatever the caller's environment.
unset SCOPE_PROFILER_CUDA_LIBRARY NVTX_INJECTION64_PATH
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH//mock_cuda/}
for mode in timing sync streams; do
  echo "== $mode"
  ./gpu_check "$mode"
  rc=$?
  [[ $rc -eq 77 ]] && skip "the program found no usable GPU"
  [[ $rc -ne 0 ]] && status=1
done

echo "== nvtx"
if command -v nsys > /dev/null 2>&1; then
  nsys profile -t nvtx,cuda -o "$work/nvtx" --force-overwrite true ./gpu_check nvtx > nsys.log 2>&1 ||
    { echo "FAIL  nsys profile"; tail -n 20 nsys.log; status=1; }
  rep=$(ls "$work"/nvtx.nsys-rep "$work"/nvtx.qdrep 2> /dev/null | head -n 1)
  if [[ -n $rep ]]; then
    # The report is called nvtx_sum in recent Nsight Systems, nvtxsum before.
    nsys stats --report nvtx_sum --format csv "$rep" > stats.csv 2> /dev/null ||
      nsys stats --report nvtxsum --format csv "$rep" > stats.csv 2> /dev/null
    for name in nvtx_outer nvtx_kernel; do
      # the range's row (its name may carry the domain as a prefix) has a
      # field that is exactly 5: its "Instances" (older: "Count") column
      if grep -F "$name" stats.csv | grep -qE '(^|,)"?5"?(,|$)'; then
        echo "PASS  NVTX range $name seen 5 times by Nsight Systems"
      else
        echo "FAIL  NVTX range $name: not 5 instances in nsys stats"; grep -i "$name" stats.csv; status=1
      fi
    done
  else
    echo "FAIL  nsys wrote no report"; status=1
  fi
else
  ./gpu_check nvtx || status=1
  echo "SKIP  NVTX ranges: nsys (Nsight Systems) is not installed; the run itself passed"
fi
[[ $status -eq 0 ]] && echo "gpu-check: all checks passed" || echo "gpu-check: FAILED"
exit $status
