#!/usr/bin/env bash
# scripts/gpu-check.sh under CTest: GPU timing and NVTX checked on a real
# NVIDIA GPU. Skipped (77) on machines without one, which is every CI machine;
# on a GPU machine it is the only test that exercises the real driver.
set -u
exec bash "$SP_SRC/scripts/gpu-check.sh" "$SP_BUILD"
