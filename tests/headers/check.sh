#!/usr/bin/env bash
# The installed headers are clean C and clean C++ (ctest label "headers"):
#
#   check.sh names   no reserved identifier in include/ (a double underscore
#                    anywhere, or _ and a capital first: reserved in C++, and
#                    the latter in C), comments and strings left out, besides
#                    the compiler's own (__GNUC__, __attribute__, ...)
#   check.sh c       every header alone, then tests/headers/use_all.c, with
#                    gcc and clang in -std=c99/c11/c17 (no _POSIX_C_SOURCE: the
#                    headers must not need it) and gnu11, -Wall -Wextra
#                    -Wpedantic -Werror, profiling on and -DSP_DISABLE; built
#                    and run
#   check.sh cxx     every header alone, then use_all.cpp (scope_profiler.hpp),
#                    with g++ and clang++ in C++11/14/17/20, the same warnings,
#                    on and -DSP_DISABLE_PROFILING (then linked without the
#                    library: it must vanish); built and run
# A compiler that is not installed is skipped (77 when none is).
set -euo pipefail
inc="$SP_SRC/include"
lib="$SP_BUILD"
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-headers-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
headers=$(cd "$inc" && find . -name '*.h' -o -name '*.hpp' | sed 's|^\./||' | sort)
warn=(-Wall -Wextra -Wpedantic -Werror)
fail=0

run_prog() { # run_prog EXE WHAT: the program must exit 0 and write nothing unexpected
  if ! SCOPE_PROFILER_FILE_PATH="$work/out.h5" "./$1" > "$1.out" 2>&1; then
    echo "FAIL: $2: the program failed"; cat "$1.out"; fail=1
  fi
}

case "$1" in
names)
  allowed='^(__[A-Za-z0-9_]+__|__atomic_[a-z_]+|__builtin_[a-z0-9_]+|__ATOMIC_[A-Z_]+|__thread|__func__|__extension__|__declspec|__cplusplus|__x86_64__|_Thread_local|_WIN32|_MSVC_LANG)$'
  for h in $headers; do
    # comments out (the preprocessor, without expanding anything), strings out
    found=$(gcc -fpreprocessed -dD -E -P -x c "$inc/$h" 2>/dev/null | sed -E 's/"([^"\\]|\\.)*"//g' |
      grep -oE '\b[A-Za-z_][A-Za-z0-9_]*\b' | grep -E '__|^_[A-Z]' | grep -vE "$allowed" | sort -u || true)
    if [ -n "$found" ]; then
      echo "FAIL: include/$h has reserved identifiers: $(echo $found)"
      fail=1
    fi
  done
  ;;
c)
  ccs=()
  for cc in gcc clang; do command -v $cc > /dev/null && ccs+=($cc); done
  [ ${#ccs[@]} -gt 0 ] || { echo "no C compiler"; exit 77; }
  for cc in "${ccs[@]}"; do
    for h in $headers; do
      case "$h" in *.hpp) continue ;; esac
      # (a declaration after it: export.h alone declares nothing, and ISO C
      # forbids an empty translation unit)
      printf '#include <%s>\ntypedef int sp_check_one;\n' "$h" > one.c
      $cc -std=c99 "${warn[@]}" -I"$inc" -fsyntax-only one.c 2> err.txt ||
        { echo "FAIL: $cc -std=c99: $h alone:"; cat err.txt; fail=1; }
    done
    for std in c99 c11 c17 gnu11; do
      for mode in on off; do
        def=(); [ $mode = off ] && def=(-DSP_DISABLE)
        exe=c_${cc}_${std}_$mode
        if $cc -std=$std "${warn[@]}" -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef \
          "${def[@]}" -I"$inc" "$SP_SRC/tests/headers/use_all.c" -o $exe -L"$lib" -lscope_profiler \
          -Wl,-rpath,"$lib" 2> err.txt; then
          run_prog $exe "$cc -std=$std ($mode)"
        else
          echo "FAIL: $cc -std=$std ($mode):"; cat err.txt; fail=1
        fi
      done
    done
  done
  ;;
cxx)
  cxxs=()
  for cxx in g++ clang++; do command -v $cxx > /dev/null && cxxs+=($cxx); done
  [ ${#cxxs[@]} -gt 0 ] || { echo "no C++ compiler"; exit 77; }
  for cxx in "${cxxs[@]}"; do
    for h in $headers; do
      printf '#include <%s>\n' "$h" > one.cpp
      $cxx -std=c++11 "${warn[@]}" -I"$inc" -fsyntax-only one.cpp 2> err.txt ||
        { echo "FAIL: $cxx -std=c++11: $h alone:"; cat err.txt; fail=1; }
    done
    for std in c++11 c++14 c++17 c++20; do
      for mode in on off; do
        exe=cxx_${cxx}_${std}_$mode
        if [ $mode = on ]; then
          link=(-L"$lib" -lscope_profiler -Wl,-rpath,"$lib"); def=()
        else
          link=(); def=(-DSP_DISABLE_PROFILING)
        fi
        if $cxx -std=$std "${warn[@]}" -Wshadow -Wundef "${def[@]}" -I"$inc" \
          "$SP_SRC/tests/headers/use_all.cpp" -o $exe "${link[@]}" 2> err.txt; then
          run_prog $exe "$cxx -std=$std ($mode)"
          if [ $mode = off ] && nm -u $exe | grep -q ' sp_'; then
            echo "FAIL: $cxx -std=$std: compiled out, yet it needs the library: $(nm -u $exe | grep ' sp_' | head -3)"
            fail=1
          fi
        else
          echo "FAIL: $cxx -std=$std ($mode):"; cat err.txt; fail=1
        fi
      done
    done
  done
  ;;
*)
  echo "usage: check.sh names|c|cxx" >&2
  exit 2
  ;;
esac
[ $fail = 0 ] && echo ok
exit $fail
