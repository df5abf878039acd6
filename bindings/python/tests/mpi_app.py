"""mpi_app.py OUT - an mpi4py program profiled from Python, started by
test_mpi.py as `mpirun -np 4 python3 mpi_app.py OUT`: every rank records
its regions and (profile_mpi_calls) its MPI calls into one job file."""
import sys

import numpy as np

import scope_profiler as sp
from mpi4py import MPI

assert sp.MPI_BUILD, "the package did not pick libscope_profiler_mpi under mpirun"
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
sp.setup(file_path=sys.argv[1], profile_mpi_calls=True)
for step in range(3):
    with sp.profile_region("step"):
        with sp.profile_region("compute"):
            x = sum(range(1000 * (rank + 1)))
        buf = np.array([x], dtype=np.int64)
        tot = np.zeros(1, dtype=np.int64)
        comm.Allreduce(buf, tot, op=MPI.SUM)
        total = int(tot[0])
        comm.Barrier()
res = sp.finalize(verbose=False, return_results=True)
if rank == 0:
    print("ranks", res.num_ranks, "total", total)
