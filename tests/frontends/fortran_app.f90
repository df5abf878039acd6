! fortran_app.f90 - the Fortran module scope_profiler from a Fortran program:
! nested regions by name and by cached handle, OpenMP threads, pause/resume,
! settings from a TOML file and from keyword arguments (which win), setup
! errors that name the setting, an unmatched end, a second manager. Checked
! in the program and afterwards from the file by h5py (tests/frontends/run.sh
! fortran).
!
! Usage: fortran_app FILE.h5 CONFIG.toml   (exit 0 when every check held)
program fortran_app
  use scope_profiler
  implicit none
  character(len=512) :: path, config
  character(len=20) :: padded = 'padded'
  type(sp_region) :: solve, side_hot
  type(sp_manager) :: side
  integer :: st, step, it, i, failures
  integer(8) :: limit

  failures = 0
  call get_command_argument(1, path)
  call get_command_argument(2, config)

  ! Setup errors say what was wrong, and leave nothing set up.
  call sp_setup(settings=[character(len=32) :: 'no_such_setting=1'], status=st)
  call check(st == SP_ERR_UNKNOWN_SETTING, 'an unknown setting is refused')
  call check(index(sp_last_error(), 'no_such_setting') > 0, 'the message names it: '//sp_last_error())
  call sp_setup(buffer_limit=1.5, status=st)
  call check(st == SP_ERR_INVALID_VALUE, 'a real for an integer setting is refused')
  call check(index(sp_last_error(), 'buffer_limit') > 0, 'the message names it: '//sp_last_error())
  ! Without status=, the failure is said on standard error (run.sh checks it).
  call sp_setup(settings=[character(len=32) :: 'no_such_key_either=1'])
  call check(.not. sp_is_active(), 'nothing is set up after the errors')

  ! The TOML file names another file_path and a label; the keyword wins.
  limit = 64
  call sp_setup(config_path=trim(config), file_path=trim(path), track_threads=.true., &
                buffer_limit=limit, status=st)
  call check(st == SP_OK, 'setup: '//sp_last_error())
  call check(sp_is_active(), 'active after setup')

  solve = sp_region_intern('solve')
  call check(sp_region_name(solve) == 'solve', 'the handle names its region')
  do step = 1, 3
    call sp_region_begin('timestep')
    call sp_region_begin(solve)
    do it = 1, 5
      call sp_region_begin('solve.iter')
      call sp_region_end('solve.iter')
    end do
    call sp_region_end(solve, status=st)
    call check(st == SP_OK, 'end of the handle')
    !$omp parallel private(i)
    call sp_region_begin('halo')
    do i = 1, 10
      call sp_region_begin(solve)
      call sp_region_end(solve)
    end do
    call sp_region_end('halo')
    !$omp end parallel
    call sp_region_end('timestep')
  end do

  ! Trailing blanks are not part of a name.
  call sp_region_begin(padded)
  call sp_region_end('padded', status=st)
  call check(st == SP_OK, 'a blank-padded name is the same region')

  ! Calls begun while paused are not recorded.
  call sp_pause()
  call sp_region_begin('paused')
  call sp_region_end('paused')
  call sp_resume()

  ! An end that does not match the innermost open call is refused.
  call sp_region_begin('a')
  call sp_region_end('b', status=st)
  call check(st == SP_ERR_UNMATCHED_END, 'an unmatched end is refused')
  call sp_region_end('a', status=st)
  call check(st == SP_OK, 'the open call still ends')

  ! A second manager, recording at the same time, nothing on disk.
  call sp_manager_create(side, status=st)
  call check(st == SP_OK, 'sp_manager_create')
  call sp_setup(manager=side, deactivate_file_output=.true., status=st)
  call check(st == SP_OK, 'setup of the second manager: '//sp_last_error())
  side_hot = sp_region_intern('side.hot', tags='fortran,side')
  do i = 1, 7
    call sp_region_begin(side_hot, manager=side)
    call sp_region_end(side_hot, manager=side)
  end do
  call check(sp_num_calls(side_hot, side) == 7, 'the second manager counted its calls')
  call check(sp_num_calls(side_hot) == 0, 'the default manager did not')
  call sp_finalize(manager=side, status=st)
  call check(st == SP_OK, 'finalize of the second manager')
  call sp_manager_destroy(side)

  call sp_finalize(verbose=.true., status=st)
  call check(st == SP_OK, 'finalize: '//sp_last_error())
  call check(sp_output_path() == trim(path), 'written to '//sp_output_path())
  if (failures > 0) then
    print '(a,i0,a)', 'fortran_app: ', failures, ' checks failed'
    stop 1
  end if

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a)', 'fortran_app: check failed: '//what
      failures = failures + 1
    end if
  end subroutine check

end program fortran_app
