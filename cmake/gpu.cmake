# cmake/gpu.cmake - build switches for GPU timing and NVTX ranges. Included
# from the top-level CMakeLists.txt after sp_objects is defined (so that
# cmake/mpi.cmake copies the settings into the MPI library too).
#
# CUDA-event timing needs nothing at build time: the driver is loaded at run
# time (src/probes/gpu/cuda_api.h declares what is used). The CUDA toolkit's
# cuda.h, when found, only lets the tests check those declarations and
# compile the mock driver against the real prototypes.
#
# NVTX ranges need the header-only NVTX3 (nvtx3/nvToolsExt.h, shipped with
# the CUDA toolkit). SP_WITH_NVTX: AUTO (use it when found), ON (required),
# OFF. Without it use_nvtx warns that it is not available in this build.
set(SP_WITH_NVTX AUTO CACHE STRING "NVTX ranges for Nsight (header-only NVTX3): AUTO, ON or OFF")
set_property(CACHE SP_WITH_NVTX PROPERTY STRINGS AUTO ON OFF)
set(sp_cuda_hints $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include /usr/local/cuda/include)
find_path(SP_CUDA_INCLUDE_DIR cuda.h HINTS ${sp_cuda_hints})
find_path(SP_NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${sp_cuda_hints})

set(SP_HAVE_NVTX OFF)
if(NOT SP_WITH_NVTX STREQUAL "OFF")
  if(SP_NVTX3_INCLUDE_DIR)
    set(SP_HAVE_NVTX ON)
  elseif(SP_WITH_NVTX STREQUAL "ON")
    message(FATAL_ERROR "SP_WITH_NVTX=ON but nvtx3/nvToolsExt.h was not found: install the CUDA "
                        "toolkit (it ships NVTX3), set CUDA_HOME, or pass -DSP_NVTX3_INCLUDE_DIR=<dir>")
  endif()
endif()
if(SP_HAVE_NVTX)
  # -isystem: the header-only implementation is not ours to keep warning-clean.
  # As a compile option, so cmake/mpi.cmake copies it with the others.
  target_compile_options(sp_objects PRIVATE -isystem ${SP_NVTX3_INCLUDE_DIR})
  target_compile_definitions(sp_objects PRIVATE SP_HAVE_NVTX=1)
endif()
message(STATUS "scope-profiler GPU: CUDA-event timing (driver loaded at run time), "
               "nvtx=${SP_HAVE_NVTX}, cuda.h for tests=${SP_CUDA_INCLUDE_DIR}")
