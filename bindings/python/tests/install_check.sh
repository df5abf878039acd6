#!/bin/sh
# install_check.sh BUILD_DIR PYTHON - `make install` of the whole project into
# a staging directory (DESTDIR), then the installed package, alone (no build
# tree on PYTHONPATH, run from elsewhere), records a run and reads it back.
set -eu
build=$1 py=$2
stage=$(mktemp -d "${TMPDIR:-/tmp}/sp-py-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage cmake --install "$build" >"$stage/install.log" 2>&1 || { cat "$stage/install.log"; exit 1; }
site=$(sed -n 's/^SP_PYTHON_INSTALL_DIR:PATH=//p' "$build/CMakeCache.txt")
libdir=$(dirname "$(find "$stage" -name 'libscope_profiler.so' | head -1)")
test -f "$stage$site/scope_profiler/__init__.py" || { echo "no package under $stage$site"; exit 1; }
ls "$stage$site"/scope_profiler/_core.*.so >/dev/null
cd "$stage"
PYTHONPATH=$stage$site LD_LIBRARY_PATH=$libdir "$py" - <<'PY'
import os, scope_profiler as sp
assert os.path.realpath(sp.__file__).startswith(os.path.realpath(os.getcwd())), sp.__file__
from scope_profiler import _paths
sp.setup(file_path="installed.h5")
with sp.profile_region("installed"):
    pass
sp.finalize(verbose=False)
assert sp.load("installed.h5")["installed"].num_calls == 1
print("installed package OK:", sp.__file__, "memory library:", _paths.MEMORY_LIBRARY or "(not built)")
PY
