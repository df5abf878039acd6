# cmake/mpi.cmake - libscope_profiler_mpi, the library MPI programs link
# instead of libscope_profiler (docs/mpi.md). Included from the top-level
# CMakeLists.txt after the serial library is defined.
#
# Two HDF5 libraries cannot live in one process (same symbols), so this is the
# whole library again: the same sources (SP_LIB_SOURCES) with the same compile
# settings, plus src/mpi/, built against parallel HDF5 (hdf5-openmpi, else
# hdf5-mpich) and MPI instead of serial HDF5. The serial library never sees
# mpi.h. Shared and static, installed, exported as
# ScopeProfiler::scope_profiler_mpi(_static), with scope_profiler_mpi.pc.
#
# SP_MPI_FLAVOR picks the parallel HDF5 build: "auto" (Open MPI's, else
# MPICH's), "openmpi" or "mpich". It must match the MPI that FindMPI finds:
# with both installed, an MPICH build is
#   cmake -DSP_MPI_FLAVOR=mpich -DMPI_C_COMPILER=mpicc.mpich \
#         -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich ...
set(SP_MPI_FLAVOR auto CACHE STRING "parallel HDF5 to build libscope_profiler_mpi on: auto, openmpi or mpich")
set_property(CACHE SP_MPI_FLAVOR PROPERTY STRINGS auto openmpi mpich)
find_package(MPI COMPONENTS C QUIET)
if(SP_MPI_FLAVOR STREQUAL "auto")
  set(SP_MPI_HDF5_CANDIDATES hdf5-openmpi hdf5-mpich)
elseif(SP_MPI_FLAVOR STREQUAL "openmpi" OR SP_MPI_FLAVOR STREQUAL "mpich")
  set(SP_MPI_HDF5_CANDIDATES hdf5-${SP_MPI_FLAVOR})
else()
  message(FATAL_ERROR "SP_MPI_FLAVOR=${SP_MPI_FLAVOR}: use auto, openmpi or mpich")
endif()
# pkg_check_modules runs on every configure: it makes the imported target,
# which is not cached.
set(sp_hdf5_mpi_found FALSE)
foreach(pc ${SP_MPI_HDF5_CANDIDATES})
  if(NOT sp_hdf5_mpi_found)
    pkg_check_modules(HDF5_MPI QUIET IMPORTED_TARGET ${pc})
    set(SP_MPI_HDF5_PC ${pc})
    set(sp_hdf5_mpi_found ${HDF5_MPI_FOUND})
  endif()
endforeach()
set(SP_WITH_MPI_DEFAULT OFF)
if(MPI_C_FOUND AND HDF5_MPI_FOUND)
  set(SP_WITH_MPI_DEFAULT ON)
endif()
option(SP_WITH_MPI "Build libscope_profiler_mpi (needs MPI and parallel HDF5)" ${SP_WITH_MPI_DEFAULT})
if(NOT SP_WITH_MPI)
  message(STATUS "scope-profiler: no MPI library (MPI found: ${MPI_C_FOUND}, parallel HDF5 found: ${HDF5_MPI_FOUND})")
  return()
endif()
if(NOT MPI_C_FOUND OR NOT HDF5_MPI_FOUND)
  message(FATAL_ERROR "SP_WITH_MPI=ON needs MPI (found: ${MPI_C_FOUND}) and parallel HDF5 "
                      "(pkg-config hdf5-openmpi or hdf5-mpich; found: ${HDF5_MPI_FOUND}); on Debian: "
                      "apt-get install libopenmpi-dev openmpi-bin libhdf5-openmpi-dev")
endif()

file(GLOB SP_MPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/mpi/*.c)
add_library(sp_mpi_objects OBJECT ${SP_LIB_SOURCES} ${SP_MPI_SOURCES})
# Whatever the serial objects are compiled with, with parallel HDF5 in place
# of serial HDF5.
foreach(prop COMPILE_DEFINITIONS COMPILE_OPTIONS INCLUDE_DIRECTORIES)
  get_target_property(v sp_objects ${prop})
  if(v)
    set_property(TARGET sp_mpi_objects PROPERTY ${prop} ${v})
  endif()
endforeach()
get_target_property(SP_MPI_OBJ_LIBS sp_objects LINK_LIBRARIES)
if(NOT SP_MPI_OBJ_LIBS)
  set(SP_MPI_OBJ_LIBS "")
endif()
list(TRANSFORM SP_MPI_OBJ_LIBS REPLACE "^PkgConfig::HDF5$" "PkgConfig::HDF5_MPI")
target_link_libraries(sp_mpi_objects PRIVATE ${SP_MPI_OBJ_LIBS} MPI::MPI_C)
target_compile_definitions(sp_mpi_objects PRIVATE SP_WITH_MPI)
set_target_properties(sp_mpi_objects PROPERTIES C_VISIBILITY_PRESET hidden)

set(SP_MPI_PRIVATE_LIBS ${SP_PRIVATE_LIBS})
list(TRANSFORM SP_MPI_PRIVATE_LIBS REPLACE "^PkgConfig::HDF5$" "PkgConfig::HDF5_MPI")

add_library(scope_profiler_mpi SHARED $<TARGET_OBJECTS:sp_mpi_objects>)
add_library(scope_profiler_mpi_static STATIC $<TARGET_OBJECTS:sp_mpi_objects>)
foreach(t scope_profiler_mpi scope_profiler_mpi_static)
  target_include_directories(${t} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${t} PRIVATE ${SP_MPI_PRIVATE_LIBS})
  # Public, so that a program linking only this library gets MPI, and gets it
  # after this library on the link line: the PMPI wrappers must come first.
  target_link_libraries(${t} PUBLIC MPI::MPI_C)
endforeach()
target_link_libraries(scope_profiler_mpi_static INTERFACE ${SP_MPI_PRIVATE_LIBS})
# Nothing references the object holding the ops table's constructor; make
# the linker keep it from the archive.
target_link_options(scope_profiler_mpi_static INTERFACE "LINKER:-u,sp__mpi_anchor")
set_target_properties(scope_profiler_mpi PROPERTIES VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR} C_VISIBILITY_PRESET hidden EXPORT_NAME scope_profiler_mpi)
set_target_properties(scope_profiler_mpi_static PROPERTIES OUTPUT_NAME scope_profiler_mpi
  EXPORT_NAME scope_profiler_mpi_static)
add_library(ScopeProfiler::scope_profiler_mpi ALIAS scope_profiler_mpi)
add_library(ScopeProfiler::scope_profiler_mpi_static ALIAS scope_profiler_mpi_static)
# scope_profiler.hpp over the MPI library (ScopeProfiler::cxx_mpi).
add_library(scope_profiler_cxx_mpi INTERFACE)
target_link_libraries(scope_profiler_cxx_mpi INTERFACE scope_profiler_mpi)
target_compile_features(scope_profiler_cxx_mpi INTERFACE cxx_std_11)
set_target_properties(scope_profiler_cxx_mpi PROPERTIES EXPORT_NAME cxx_mpi)
add_library(ScopeProfiler::cxx_mpi ALIAS scope_profiler_cxx_mpi)

install(TARGETS scope_profiler_mpi scope_profiler_mpi_static scope_profiler_cxx_mpi
        EXPORT ScopeProfilerMPITargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT ScopeProfilerMPITargets NAMESPACE ScopeProfiler::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ScopeProfiler)
# Relocatable like scope_profiler.pc: the prefix from the .pc file's place.
file(RELATIVE_PATH SP_MPI_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" SP_MPI_PC_TO_PREFIX "${SP_MPI_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/scope_profiler_mpi.pc.in
               ${PROJECT_BINARY_DIR}/scope_profiler_mpi.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/scope_profiler_mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
message(STATUS "scope-profiler: MPI library with ${MPI_C_LIBRARY_VERSION_STRING} and parallel HDF5 "
               "${HDF5_MPI_VERSION} (${SP_MPI_HDF5_PC})")
