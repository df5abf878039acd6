! mixed_kernel.f90 - the Fortran part of tests/frontends/mixed_main.cpp: a
! kernel called from C++ that records through the Fortran module and calls
! the C helper inside its region.
subroutine mixed_fortran_kernel(steps) bind(C, name='mixed_fortran_kernel')
  use, intrinsic :: iso_c_binding, only: c_int
  use scope_profiler
  implicit none
  integer(c_int), value :: steps
  interface
    subroutine mixed_c_helper() bind(C, name='mixed_c_helper')
    end subroutine mixed_c_helper
  end interface
  type(sp_region), save :: kernel
  integer :: i
  if (kernel%id == 0) kernel = sp_region_intern('fortran.kernel')
  call sp_region_begin(kernel)
  do i = 1, steps
    call mixed_c_helper()
  end do
  ! begun here by name, ended in C by handle (mixed_helper.c)
  call sp_region_begin('shared')
  call mixed_c_end_shared()
  call sp_region_end(kernel)
contains
  subroutine mixed_c_end_shared()
    interface
      function mixed_c_shared_end() bind(C, name='mixed_c_shared_end') result(rc)
        import :: c_int
        integer(c_int) :: rc
      end function mixed_c_shared_end
    end interface
    if (mixed_c_shared_end() /= 0) error stop 'the C end of a Fortran begin was refused'
  end subroutine mixed_c_end_shared
end subroutine mixed_fortran_kernel
