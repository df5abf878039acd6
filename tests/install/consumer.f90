! consumer.f90 - a tiny outside Fortran program built against an installed
! scope-profiler through find_package (ScopeProfiler::fortran), pkg-config
! (scope_profiler_fortran) and examples/fortran/Makefile's flags by
! tests/integration/test_install_frontends.sh.
program consumer
  use scope_profiler
  implicit none
  integer :: i, st
  call sp_setup(status=st) ! the file path from SCOPE_PROFILER_FILE_PATH
  if (st /= SP_OK) error stop 'setup failed'
  do i = 1, 3
    call sp_region_begin('consumer')
    call sp_region_end('consumer')
  end do
  call sp_finalize(status=st)
  if (st /= SP_OK) error stop 'finalize failed'
  print '(a)', 'consumer_fortran ok'
end program consumer
