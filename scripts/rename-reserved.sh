#!/usr/bin/env bash
# The rename of the reserved sp__/SP__ names of the installed headers to
# sp_i_/SP_I_ (a double underscore anywhere in a name is reserved in C++),
# kept so that branches written before it can follow it.
#
#   scripts/rename-reserved.sh apply [FILE...]  rename in FILEs (default: every
#                                               tracked text file but this one)
#   scripts/rename-reserved.sh rebase R         move the current branch onto R,
#                                               the rename's commit on main
#
# rebase: commit your work first. It rebases onto R^ (main just before the
# rename; ordinary conflicts are resolved there as usual), turns your commits
# since R^ into patches, renames inside them, resets the branch to R and
# applies them with `git am`: R is exactly `apply` run on R^, so they apply
# without conflicts. The old head stays as <branch>-before-rename. Then
# `git rebase main` for what landed after R.
#
# Only the names below change (word-bounded): they are every sp__/SP__ name
# that the installed headers of any branch used. Internal sp__ names of src/
# stay. tests/headers/check.sh names fails on any new reserved name in include/.
set -euo pipefail
self="scripts/rename-reserved.sh"
names="
SP__ACC_T_ SP__ACC_T_BOOL SP__ACC_T_ENUM SP__ACC_T_INT SP__ACC_T_LIST SP__ACC_T_STR SP__CAT
SP__CAT2 SP__CLEANUP SP__CONFIG_ACCESSOR SP__FLAT_FIELD SP__FLAT_INIT SP__GHOST_BIT
SP__GPU_FIELD SP__GPU_FIELDS SP__GPU_INIT SP__GROUP_FIELD SP__GROUP_INIT SP__HDF5_FIELD
SP__HDF5_FIELDS SP__HDF5_INIT SP__INLINE SP__IN_ SP__IN_GPU_ SP__IN_GPU_GPU SP__IN_GPU_HDF5
SP__IN_GPU_MEMRAY SP__IN_GPU_NONE SP__IN_HDF5_ SP__IN_HDF5_GPU SP__IN_HDF5_HDF5
SP__IN_HDF5_MEMRAY SP__IN_HDF5_NONE SP__IN_MEMRAY_ SP__IN_MEMRAY_GPU SP__IN_MEMRAY_HDF5
SP__IN_MEMRAY_MEMRAY SP__IN_MEMRAY_NONE SP__LIKELY SP__MAX_MANAGERS SP__MEMRAY_FIELD
SP__MEMRAY_FIELDS SP__MEMRAY_INIT SP__OPTION_FIELDS SP__OPT_T_ SP__OPT_T_BOOL SP__OPT_T_ENUM
SP__OPT_T_INT SP__OPT_T_LIST SP__OPT_T_STR SP__OPT_UNSET_ SP__OPT_UNSET_BOOL SP__OPT_UNSET_ENUM
SP__OPT_UNSET_INT SP__OPT_UNSET_LIST SP__OPT_UNSET_STR SP__REGION_IMPL SP__REGION_SLOW_BIT
SP__SITE SP__STATE_AGGREGATE SP__STATE_EXT SP__STATE_OFF SP__STATE_SLOW SP__STATE_TIMELINE
SP__STATUS_ENUM SP__TLS SP__UNLIKELY SP__UNUSED sp__agg sp__agg_begin sp__agg_close sp__agg_end
sp__arena sp__begin sp__begin_slow sp__begin_slow_v3 sp__clock_tsc sp__default sp__end
sp__end_slow sp__end_slow_v3 sp__event sp__ext_plain sp__hot sp__manual_ticks sp__optin_off
sp__optstore sp__owned sp__plain_region sp__scope_ sp__site_ sp__site_register sp__size
sp__state sp__thread sp__ticks sp__tls sp__tls_block sp__version
"
sed_script() {
  local n
  for n in $names; do
    case $n in
    sp__*) printf 's/\\b%s\\b/sp_i_%s/g\n' "$n" "${n#sp__}" ;;
    SP__*) printf 's/\\b%s\\b/SP_I_%s/g\n' "$n" "${n#SP__}" ;;
    esac
  done
}
sedf=$(mktemp "${TMPDIR:-/tmp}/sp-rename-XXXXXX.sed")
trap 'rm -f "$sedf"' EXIT
sed_script > "$sedf"

case "${1:-}" in
apply)
  shift
  cd "$(git rev-parse --show-toplevel)"
  if [ $# -eq 0 ]; then
    # text files only (grep -I), never this script (it holds the old names)
    git ls-files -z | xargs -0 grep -lIE '\b(sp__|SP__)' -- 2>/dev/null | grep -vxF "$self" |
      while IFS= read -r f; do sed -i -f "$sedf" "$f"; done
  else
    sed -i -f "$sedf" "$@"
  fi
  ;;
rebase)
  R=${2:?usage: $0 rebase <the rename commit on main>}
  br=$(git symbolic-ref --short HEAD)
  git diff --quiet && git diff --cached --quiet || { echo "commit or stash your changes first" >&2; exit 1; }
  git branch -f "$br-before-rename" HEAD
  if ! git merge-base --is-ancestor "$R^" HEAD; then
    git rebase "$R^" || { echo "resolve, 'git rebase --continue', then run this again" >&2; exit 1; }
  fi
  if git merge-base --is-ancestor "$R" HEAD; then echo "already on top of $R"; exit 0; fi
  mbox=$(mktemp "${TMPDIR:-/tmp}/$br-renamed-XXXXXX.mbox")
  git format-patch --stdout "$R^..HEAD" | sed -f "$sedf" > "$mbox"
  git reset -q --hard "$R"
  [ -s "$mbox" ] && git am -q "$mbox"
  left=$(git grep -nE '\b(sp__|SP__)' -- include/ || true)
  [ -z "$left" ] || { echo "still reserved in include/ (name them sp_i_/SP_I_):"; echo "$left"; }
  echo "$br is on $R with the rename applied (old head: $br-before-rename)"
  ;;
*)
  sed -n '2,19p' "$0" >&2
  exit 2
  ;;
esac
