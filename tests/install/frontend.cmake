# frontend.cmake - what the one-language consumer projects (cxx/, fortran/)
# share, included after their project() has enabled that language alone:
# find the installed package with the front end's component SP_FRONTEND (cxx,
# fortran) and, when the package was built with MPI (SP_EXPECT_MPI=ON), its
# mpi component too, so that a missing MPI library is an error, not a silent
# loss. Builds consumer_<frontend> from SP_CONSUMER_SOURCE and, with MPI,
# consumer_<frontend>_mpi from SP_CONSUMER_MPI_SOURCE, also linked with MPI's
# own bindings for SP_CONSUMER_MPI_LANG when the program calls MPI itself.
option(SP_EXPECT_MPI "the package has the MPI library" OFF)
set(sp_components ${SP_FRONTEND})
if(SP_EXPECT_MPI)
  list(APPEND sp_components mpi)
endif()
find_package(ScopeProfiler REQUIRED COMPONENTS ${sp_components})
add_executable(consumer_${SP_FRONTEND} ${SP_CONSUMER_SOURCE})
target_link_libraries(consumer_${SP_FRONTEND} PRIVATE ScopeProfiler::${SP_FRONTEND})
if(SP_EXPECT_MPI)
  set(sp_mpi_libs "")
  if(SP_CONSUMER_MPI_LANG)
    find_package(MPI REQUIRED COMPONENTS ${SP_CONSUMER_MPI_LANG})
    set(sp_mpi_libs MPI::MPI_${SP_CONSUMER_MPI_LANG})
  endif()
  add_executable(consumer_${SP_FRONTEND}_mpi ${SP_CONSUMER_MPI_SOURCE})
  target_link_libraries(consumer_${SP_FRONTEND}_mpi PRIVATE ScopeProfiler::${SP_FRONTEND}_mpi ${sp_mpi_libs})
endif()
