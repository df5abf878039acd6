"""A small simulation profiled from Python (run by `make demo`).

    PYTHONPATH=build/python python3 examples/python/sim.py [--steps N] [--out FILE]

Each time step is a region; the solver is a decorated function; the halo
exchange a context-manager region inside it. The run is one session: it
writes the file, prints the summary, and hands the results back.
"""
import argparse
import math

import scope_profiler as sp


@sp.profile("solve")
def solve(grid):
    with sp.profile_region("halo_exchange"):
        grid[0], grid[-1] = grid[-2], grid[1]
    return [0.5 * (grid[i - 1] + grid[i + 1]) for i in range(1, len(grid) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--out", default="profiling_data_python.h5")
    args = ap.parse_args()
    grid = [math.sin(i / 10) for i in range(2000)]
    with sp.session(file_path=args.out, label="python-demo", verbose=True, return_results=True) as run:
        for _ in range(args.steps):
            with sp.profile_region("time_step"):
                inner = solve(grid)
                grid = [inner[0]] + inner + [inner[-1]]
    res = run.results
    step = res["time_step"]
    print(f"{step.num_calls} time steps, {step.average_duration * 1e3:.3f} ms each; "
          f"solve own time {res['solve'].stats()['own_ns'] / 1e6:.3f} ms; file {args.out}")


if __name__ == "__main__":
    main()
