! consumer_mpi.f90 - an outside MPI Fortran program built against the
! installed ScopeProfiler::fortran_mpi (tests/integration/test_install_frontends.sh
! builds it and runs it as an MPI singleton; tests/mpi/run.sh fortran runs the
! job program under mpirun).
program consumer_mpi
  use mpi
  use scope_profiler
  implicit none
  integer :: ierr, rank, st, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call sp_setup(status=st)
  call sp_region_begin('consumer')
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call sp_region_end('consumer')
  call sp_finalize(status=st) ! collective, before MPI_Finalize
  call MPI_Finalize(ierr)
end program consumer_mpi
