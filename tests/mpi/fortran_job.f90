! fortran_job.f90 - an MPI + OpenMP Fortran program through the module
! scope_profiler and libscope_profiler_mpi (tests/mpi/run.sh fortran): every
! rank records nested regions, a team region on each OpenMP thread and its
! MPI exchange, and the job writes one file (checked by check_mpi.py).
!
! Usage: mpirun -np N fortran_job FILE.h5
program fortran_job
  use mpi
  use scope_profiler
  implicit none
  character(len=512) :: path
  integer :: ierr, rank, size, st, step, total, provided
  type(sp_region) :: exchange

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, path)
  call sp_setup(file_path=trim(path), track_threads=.true., status=st)
  if (st /= SP_OK) then
    print '(a)', 'fortran_job: setup: '//sp_last_error()
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  exchange = sp_region_intern('exchange', tags='mpi')
  do step = 1, 4
    call sp_region_begin('step')
    !$omp parallel
    call sp_region_begin('work')
    call sp_region_end('work')
    !$omp end parallel
    call sp_region_begin(exchange)
    call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call sp_region_end(exchange)
    call sp_region_end('step')
  end do
  if (total /= size*(size - 1)/2) then
    print '(a)', 'fortran_job: wrong sum'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  ! Collective, before MPI_Finalize (Fortran's MPI_Finalize reaches MPI
  ! through PMPI_Finalize, past the library's wrapper).
  call sp_finalize(status=st)
  if (st /= SP_OK) then
    print '(a)', 'fortran_job: finalize: '//sp_last_error()
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Finalize(ierr)
end program fortran_job
