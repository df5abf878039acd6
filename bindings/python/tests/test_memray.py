"""memray_trace_python_allocators: Python's object and memory allocators
hooked (PyMem_SetAllocator) onto the allocation capture of
libscope_profiler_memory.so, so the per-call memory columns see Python
objects; the interposer is loaded for the run when not preloaded."""
import os
import subprocess
import sys
import warnings

import h5py
import pytest

import scope_profiler as sp
from scope_profiler import _core, _paths

pytestmark = pytest.mark.skipif(not _paths.MEMORY_LIBRARY, reason="built without SP_WITH_MEMORY")


def _alloc_column(h5, trace):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.ScopeProfilerWarning)
        sp.setup(file_path=h5, use_memray=True, memray_trace_python_allocators=trace, replace=True)
    with sp.profile_region("alloc"):
        keep = [(i, i + 1) for i in range(20000)]
    del keep
    sp.finalize(verbose=False)
    with h5py.File(h5, "r") as f:
        return int(f["events/mem_alloc_count"][0]), int(f["events/mem_alloc_bytes"][0])


def test_python_allocations_reach_the_region(h5):
    count, nbytes = _alloc_column(h5, True)
    assert count >= 20000  # one tuple per item at least
    assert nbytes >= 20000 * 56
    assert _core.memory_library_loaded()
    off_count, _ = _alloc_column(h5, False)
    if not _core.malloc_interposed():
        assert off_count == 0
    assert count > off_count
    assert os.path.exists(os.path.splitext(h5)[0] + ".memray.bin")


def test_hooks_removed_after_the_run(h5):
    _alloc_column(h5, True)
    sp.setup(file_path=h5, replace=True)  # the next setup removes them
    with sp.profile_region("after"):
        keep = [(i, i) for i in range(5000)]
    del keep
    sp.finalize(verbose=False)
    with h5py.File(h5, "r") as f:
        assert "mem_alloc_count" not in f["events"]


def test_not_interposed_warns(h5):
    if _core.malloc_interposed():
        pytest.skip("malloc is interposed here")
    with pytest.warns(sp.ScopeProfilerWarning, match="LD_PRELOAD"):
        sp.setup(file_path=h5, use_memray=True, replace=True)
    sp.finalize(verbose=False)


def test_preloaded_counts_each_block_once(tmp_path):
    """With the interposer preloaded, blocks pymalloc takes from malloc are
    seen by the interposer, and the hooks add only pymalloc's small ones."""
    code = f"""
import scope_profiler as sp
from scope_profiler import _core
assert _core.malloc_interposed()
sp.setup(file_path={str(tmp_path / 'p.h5')!r}, use_memray=True, memray_trace_python_allocators=True)
with sp.profile_region("big"):
    b = [bytearray(4096) for _ in range(100)]
sp.finalize(verbose=False)
import h5py
with h5py.File({str(tmp_path / 'p.h5')!r}) as f:
    n = int(f["events/mem_alloc_count"][0]); nb = int(f["events/mem_alloc_bytes"][0])
print(n, nb)
"""
    env = dict(os.environ, LD_PRELOAD=_paths.MEMORY_LIBRARY)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    n, nb = map(int, out.stdout.split())
    assert 100 * 4096 <= nb < 2 * 100 * 4096 + 65536  # each 4 KiB buffer counted once, not twice
