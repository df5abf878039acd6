#!/usr/bin/env bash
# Installs the Debian 12 packages scope-profiler builds, tests and demos with.
# Idempotent: packages already present are skipped, so `make demo` and
# `make test` can call it every time at the cost of one dpkg query.
# Usage: scripts/install-deps.sh [--with-browser]
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  libhdf5-dev hdf5-tools            # serial HDF5: writer, reader, h5dump in tests
  libhdf5-openmpi-dev               # parallel HDF5 for output_mode=parallel
  libopenmpi-dev openmpi-bin        # MPI library target and mpirun tests
  libzstd-dev liblzf-dev            # zstd (32015) and lzf (32000) HDF5 filters
  libdw-dev                         # DWARF lines for line profiles and recursive regions
  libunwind-dev                     # native stacks of allocations (memray_native_traces)
  libpfm4-dev libpapi-dev papi-tools # perf_events PMU names (libpfm4) and PAPI_* counters
  likwid                            # use_likwid: marker API (loaded by dlopen) and likwid-perfctr
  zlib1g-dev                        # gzip JSON profiles
  python3-h5py python3-numpy        # independent reader used by the tests
  python3-dev python3-pytest        # the Python package (CPython extension) and its tests
  python3-mpi4py                    # the Python package under mpirun (profile_mpi_calls)
  clang libclang-rt-14-dev          # libFuzzer and TSan builds
  gfortran                          # the Fortran module (bindings/fortran/) and its tests
  valgrind
  libncurses-dev tmux               # the tui command; its pseudo-terminal tests
)
if [[ "${1:-}" == "--with-browser" ]]; then
  pkgs+=(chromium chromium-driver)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "scope-profiler: missing Debian packages: ${missing[*]}" >&2
  echo "Run as root (or with sudo): apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "scope-profiler: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
