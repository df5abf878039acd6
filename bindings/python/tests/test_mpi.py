"""MPI from Python: `mpirun -np 4 python3 app.py` writes one job file with
every rank's regions and, with profile_mpi_calls, the MPI calls mpi4py made
(through libscope_profiler_mpi's wrappers)."""
import os
import shutil
import subprocess
import sys

import pytest

import scope_profiler as sp

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = shutil.which("mpirun")


def _have_mpi_core():
    import importlib.util
    return importlib.util.find_spec("scope_profiler._core_mpi") is not None


pytestmark = [
    pytest.mark.skipif(MPIRUN is None, reason="no mpirun (openmpi-bin)"),
    pytest.mark.skipif(not _have_mpi_core(), reason="built without libscope_profiler_mpi"),
]


def test_mpirun_four_ranks_one_file(tmp_path):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("no mpi4py (python3-mpi4py)")
    out = str(tmp_path / "job.h5")
    cmd = [MPIRUN, "--oversubscribe", "--allow-run-as-root", "-np", "4", sys.executable,
           os.path.join(HERE, "mpi_app.py"), out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ranks 4" in p.stdout
    res = sp.load(out)
    assert res.ranks == (0, 1, 2, 3)
    assert res["step"].num_calls == 12 and res["compute"].num_calls == 12
    assert all(res["step"][r].num_calls == 3 for r in range(4))
    mpi = sorted(n for n in res.region_names if n.startswith("MPI_"))
    assert mpi == ["MPI_Allreduce", "MPI_Barrier"], res.region_names  # the program's calls, not finalize's
    assert res["MPI_Allreduce"].num_calls_per_rank() == {0: 3, 1: 3, 2: 3, 3: 3}
    cs = res.call_stack(rank=2)
    names = cs["names"]
    i = names.index("MPI_Allreduce")
    assert names[cs["parent"][i]] == "step"
