! overhead_fortran.f90 - the Fortran module's loops for bench/overhead.c: a
! begin/end pair by cached handle and by name, called from C so that the
! table shows Fortran beside C in one run.
subroutine bench_fortran_handle(m, n) bind(C, name='bench_fortran_handle')
  use, intrinsic :: iso_c_binding, only: c_ptr, c_long
  use scope_profiler
  implicit none
  type(c_ptr), value :: m
  integer(c_long), value :: n
  type(sp_manager) :: mgr
  type(sp_region) :: h
  integer(c_long) :: i
  mgr%ptr = m
  h = sp_region_intern('bench')
  do i = 1, n
    call sp_region_begin(h, manager=mgr)
    call sp_region_end(h, manager=mgr)
  end do
end subroutine bench_fortran_handle

subroutine bench_fortran_name(m, n) bind(C, name='bench_fortran_name')
  use, intrinsic :: iso_c_binding, only: c_ptr, c_long
  use scope_profiler
  implicit none
  type(c_ptr), value :: m
  integer(c_long), value :: n
  type(sp_manager) :: mgr
  integer(c_long) :: i
  mgr%ptr = m
  do i = 1, n
    call sp_region_begin('bench.interned', manager=mgr)
    call sp_region_end('bench.interned', manager=mgr)
  end do
end subroutine bench_fortran_name

! The default manager (no manager argument): what most programs write.
subroutine bench_fortran_default(n) bind(C, name='bench_fortran_default')
  use, intrinsic :: iso_c_binding, only: c_long
  use scope_profiler
  implicit none
  integer(c_long), value :: n
  type(sp_region) :: h
  integer(c_long) :: i
  h = sp_region_intern('bench')
  do i = 1, n
    call sp_region_begin(h)
    call sp_region_end(h)
  end do
end subroutine bench_fortran_default
