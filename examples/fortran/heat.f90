! heat.f90 - a small instrumented Fortran program: explicit 1-D heat
! diffusion, one region per time step, the stencil sweep on OpenMP threads,
! a cached handle for the per-step region. Built by the Makefile beside it
! (docs/fortran.md):
!
!   make PREFIX=/where/scope-profiler/is && ./heat && scope-profiler inspect heat.h5
program heat
  use scope_profiler
  implicit none
  integer, parameter :: n = 200000, steps = 50
  real(8), allocatable :: u(:), v(:)
  type(sp_region) :: sweep
  integer :: i, step, st

  call sp_setup(file_path='heat.h5', label='heat', status=st)
  if (st /= SP_OK) print '(a)', 'profiling is off: '//sp_last_error()
  sweep = sp_region_intern('sweep')

  call sp_region_begin('init')
  allocate (u(n), v(n))
  u = 0
  u(n/2) = 1
  call sp_region_end('init')

  do step = 1, steps
    call sp_region_begin('step')
    call sp_region_begin(sweep)
    !$omp parallel do
    do i = 2, n - 1
      v(i) = u(i) + 0.25d0*(u(i - 1) - 2*u(i) + u(i + 1))
    end do
    !$omp end parallel do
    call sp_region_end(sweep)
    u(2:n - 1) = v(2:n - 1)
    call sp_region_end('step')
  end do

  print '(a,es12.5)', 'heat: total ', sum(u)
  call sp_finalize(verbose=.true.)
end program heat
