#!/usr/bin/python3
"""staged_vds.py - measures a design for publishing a streamed run without
copying it: the staged blocks are written into the run's HDF5 file while it
runs, and at publish the schema-3 event columns become HDF5 virtual datasets
(source file ".", the same file) whose mappings are the rows' segments in
the blocks, so publishing writes the index and the mappings, not the events.

  staged_vds.py convert IN OUT [--blocks K]
      IN, a schema-3 file we wrote, rewritten as that design would write it:
      each row cut into K segments, block b holding segment b of every row
      (block-major, as streamed blocks are), /events/* virtual. Then reads
      both files: every column equal through h5py, and the time h5py takes
      to read the columns whole (what upstream's reader does) and row by
      row, for each file.
  staged_vds.py synth OUT [--events N] [--blocks B] [--regions R]
      A run's worth of synthetic blocks (N events in B blocks of R regions,
      four int64 columns: 32 B/event, the 200M-event case is 6.1 GiB)
      written block by block with a flush after each (the run), then
      published: the index columns and four virtual columns with B x R
      mappings each, the file closed and fsynced (the blocks are fsynced
      before, as a long run's are on disk by its end). Baseline in the same run:
      one read + write + fsync copy of the staged bytes (what any design
      that reads the staged calls back and writes them again pays at least).
  staged_vds.py crash OUT [--trials T]
      A writer of blocks (flush after each) killed with SIGKILL at a random
      moment, T times: whether the file still opens and how many whole
      blocks it gives back (the design's crash recovery).

Wall time on this shared VM moves with the load: the CPU time of the
publishing step is printed beside it.
"""
import argparse
import os
import random
import resource
import signal
import sys
import time

import h5py
import numpy as np


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def vds(g, name, parts, n, dtype):
    """parts: (virtual offset, count, source dataset name, source offset)."""
    lay = h5py.VirtualLayout(shape=(n,), dtype=dtype)
    shapes = {}
    for voff, cnt, src, soff in parts:
        if cnt == 0:
            continue
        if src not in shapes:
            shapes[src] = g[src].shape
        lay[voff:voff + cnt] = h5py.VirtualSource(".", src, shape=shapes[src])[soff:soff + cnt]
    return g.create_virtual_dataset(name, lay, fillvalue=-1)


def convert(args):
    t0 = time.time()
    with h5py.File(args.src, "r") as f, h5py.File(args.dst, "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        for k in f:
            if k != "events":
                f.copy(f[k], g, name=k)
        ev = f["events"]
        off = f["rank_region_index/event_offsets"][:].astype(np.int64)
        cnt = f["rank_region_index/event_counts"][:].astype(np.int64)
        n = int(cnt.sum())
        cols = list(ev.keys())
        parts = {c: [] for c in cols}
        for c in cols:
            col = ev[c][:]
            for b in range(args.blocks):
                pieces, soff = [], 0
                for r in range(len(off)):
                    lo = cnt[r] * b // args.blocks
                    hi = cnt[r] * (b + 1) // args.blocks
                    pieces.append(col[off[r] + lo:off[r] + hi])
                    parts[c].append((int(off[r] + lo), int(hi - lo), f"staging/{b:06d}/{c}", soff))
                    soff += int(hi - lo)
                g.create_dataset(f"staging/{b:06d}/{c}", data=np.concatenate(pieces))
        t1, c1 = time.time(), cpu()
        for c in cols:
            d = vds(g, "events/" + c, parts[c], n, ev[c].dtype)
            for k, v in ev[c].attrs.items():
                d.attrs[k] = v
    fsync_path(args.dst)
    t2, c2 = time.time(), cpu()
    print(f"converted {n} events, {len(off)} rows x {args.blocks} blocks: {len(off) * args.blocks} mappings per column")
    print(f"  writing the blocks {t1 - t0:.2f} s; the virtual columns, close and fsync {t2 - t1:.3f} s (CPU {c2 - c1:.3f} s)")
    print(f"  size: {os.path.getsize(args.src) / 2**20:.1f} MiB -> {os.path.getsize(args.dst) / 2**20:.1f} MiB")
    compare(args.src, args.dst)


def read_times(path):
    """(values, (wall, CPU) reading the columns whole, (wall, CPU) row by row)"""
    with h5py.File(path, "r") as f:
        ev = f["events"]
        t, c = time.time(), cpu()
        vals = {k: ev[k][:] for k in ev}
        whole = (time.time() - t, cpu() - c)
        off = f["rank_region_index/event_offsets"][:].astype(np.int64)
        cnt = f["rank_region_index/event_counts"][:].astype(np.int64)
        t, c = time.time(), cpu()
        for k in ("start_deltas", "durations"):
            for o, n in zip(off, cnt):
                np.cumsum(ev[k][o:o + n]) if k == "start_deltas" else ev[k][o:o + n]
        rows = (time.time() - t, cpu() - c)
    return vals, whole, rows


def compare(a, b, reps=3):
    """Both files read in turn, reps times; the minimum of each figure."""
    ta, tb = [], []
    for _ in range(reps):
        va, wa, ra = read_times(a)
        vb, wb, rb = read_times(b)
        ta.append(wa + ra)
        tb.append(wb + rb)
    for c in va:
        if not np.array_equal(va[c], vb[c]):
            sys.exit(f"column {c} differs")
    with h5py.File(b, "r") as f:
        virtual = all(f["events"][c].is_virtual for c in f["events"])
    print(f"  every column equal through h5py; virtual: {virtual}")
    for i, what in ((0, "columns read whole"), (2, "row by row, start_deltas + durations")):
        for j, unit in ((0, "wall"), (1, "CPU")):
            x, y = min(t[i + j] for t in ta), min(t[i + j] for t in tb)
            print(f"  h5py, {what}, {unit} (min of {reps}): contiguous {x:.3f} s, virtual {y:.3f} s ({y / x:.2f}x)")


def stage_block(g, b, sizes, rng_base):
    """Block b: R segments of sizes[r] calls, each column one contiguous
    dataset of the block (the values are synthetic, as cheap as possible)."""
    m = int(sizes.sum())
    base = np.arange(rng_base, rng_base + m, dtype=np.int64)
    for c, k in (("start_deltas", 0), ("durations", 1), ("call_ids", 2), ("parent_ids", 3)):
        g.create_dataset(f"staging/{b:06d}/{c}", data=base + k, dtype=np.int64)
    return m


def synth(args):
    n, B, R = args.events, args.blocks, args.regions
    per_block = n // B
    # uneven regions, as a real run's: region r takes a share ~ 1/(r+1)
    w = 1.0 / np.arange(1, R + 1)
    sizes = np.floor(w / w.sum() * per_block).astype(np.int64)
    sizes[0] += per_block - sizes.sum()
    if os.path.exists(args.dst):
        os.remove(args.dst)
    t0, c0 = time.time(), cpu()
    f = h5py.File(args.dst, "w")
    done = 0
    for b in range(B):
        done += stage_block(f, b, sizes, done)
        f.flush()
    # a long run's old blocks are on disk by its end (the kernel writes
    # dirty pages back within 30 s): publish then fsyncs only its own writes
    fsync_path(args.dst)
    t1, c1 = time.time(), cpu()
    print(f"run: {done} events in {B} blocks of {R} regions staged, fsynced: {t1 - t0:.1f} s (CPU {c1 - c0:.1f} s)")
    # publish: index columns (rows = regions), then the virtual columns
    count = sizes * B
    off = np.concatenate([[0], np.cumsum(count)[:-1]])
    rri = f.create_group("rank_region_index")
    rri["region_ids"] = np.arange(R, dtype=np.uint32)
    rri["ranks"] = np.zeros(R, np.uint32)
    rri["event_offsets"] = off.astype(np.uint64)
    rri["event_counts"] = count.astype(np.uint64)
    f["region_table/names"] = np.array([f"r{i}" for i in range(R)], dtype=h5py.string_dtype())
    for c in ("start_deltas", "durations", "call_ids", "parent_ids"):
        parts = []
        for b in range(B):
            soff = 0
            for r in range(R):
                parts.append((int(off[r] + sizes[r] * b), int(sizes[r]), f"staging/{b:06d}/{c}", soff))
                soff += int(sizes[r])
        vds(f, "events/" + c, parts, done, np.int64)
    f.close()
    fsync_path(args.dst)
    t2, c2 = time.time(), cpu()
    size = os.path.getsize(args.dst)
    print(f"publish (index, {B * R} mappings per column x 4, close, fsync): {t2 - t1:.3f} s (CPU {c2 - c1:.3f} s)")
    print(f"file: {size / 2**20:.1f} MiB, {size / done:.2f} B/event")
    with h5py.File(args.dst, "r") as g:
        t, c = time.time(), cpu()
        d = g["events/durations"][:]
        tr, cr = time.time() - t, cpu() - c
        ok = d[0] == 1 and len(d) == done
    print(f"h5py reads events/durations whole: {tr:.2f} s, CPU {cr:.2f} s ({'values as staged' if ok else 'WRONG VALUES'})")
    if args.copy:
        t, cp = time.time(), cpu()
        with open(args.dst, "rb") as src, open(args.dst + ".copy", "wb") as dst:
            while True:
                buf = src.read(1 << 22)
                if not buf:
                    break
                dst.write(buf)
            dst.flush()
            os.fsync(dst.fileno())
        tc = time.time() - t
        os.remove(args.dst + ".copy")
        print(f"baseline, one copy of the file (read, write, fsync): {tc:.1f} s (CPU {cpu() - cp:.1f} s); "
              f"publish / copy {(t2 - t1) / tc:.4f}")
    if not args.keep:
        os.remove(args.dst)


def crash(args):
    R, per = 32, 200000
    sizes = np.full(R, per // R, np.int64)
    results = []
    for trial in range(args.trials):
        if os.path.exists(args.dst):
            os.remove(args.dst)
        pid = os.fork()
        if pid == 0:
            f = h5py.File(args.dst, "w")
            b = 0
            while True:
                stage_block(f, b, sizes, b * per)
                f["staging"][f"{b:06d}"].attrs["complete"] = 1
                f.flush()
                b += 1
        time.sleep(random.uniform(0.3, 3.0))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        try:
            with h5py.File(args.dst, "r") as f:
                whole = sum(1 for k in f["staging"] if f["staging"][k].attrs.get("complete") == 1)
                ok = all(np.array_equal(f[f"staging/{k}/durations"][:],
                                        np.arange(int(k) * per, (int(k) + 1) * per) + 1)
                         for k in f["staging"] if f["staging"][k].attrs.get("complete") == 1)
            results.append((True, whole, ok))
        except Exception as e:  # the file did not open
            results.append((False, 0, str(e).splitlines()[0][:80]))
    opened = sum(1 for r in results if r[0])
    print(f"crash: {opened} of {len(results)} killed files opened; blocks given back: {[r[1] for r in results]}")
    for r in results:
        if not r[0] or r[2] is not True:
            print("  ", r)
    os.remove(args.dst)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s = p.add_subparsers(dest="cmd", required=True)
    c = s.add_parser("convert")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--blocks", type=int, default=24)
    y = s.add_parser("synth")
    y.add_argument("dst")
    y.add_argument("--events", type=int, default=200_000_000)
    y.add_argument("--blocks", type=int, default=24)
    y.add_argument("--regions", type=int, default=32)
    y.add_argument("--copy", action="store_true", help="also time one copy of the file (the baseline)")
    y.add_argument("--keep", action="store_true")
    k = s.add_parser("crash")
    k.add_argument("dst")
    k.add_argument("--trials", type=int, default=20)
    a = p.parse_args()
    {"convert": convert, "synth": synth, "crash": crash}[a.cmd](a)


if __name__ == "__main__":
    main()
