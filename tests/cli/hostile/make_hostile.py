#!/usr/bin/python3
"""Generate the hostile HDF5 files the tests/cli/hostile/*.sh golden tests feed
to `scope-profiler inspect`. Each is broken in one way that a profile from
elsewhere (a truncated copy, another tool's file, a hand edit, a malicious
file) can be broken; every one must give exit status 2 and a message naming
the problem, never a crash, a hang or a read of a file the profile names.

    /usr/bin/python3 tests/cli/hostile/make_hostile.py [OUTDIR]

The files are committed in tests/cli/hostile/files/ (a few KiB each, built on
a minimal valid profile); regenerate them only when a case must change, and
update the golden outputs with it. tests/golden/hostile_*.h5 (the reader's own
fixtures) cover a first set of defects; these add truncation, more wrong
types, missing groups, huge claimed sizes, link cycles, links and storage
that point outside the file.
"""
import os
import sys

import h5py
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "files")
STR = h5py.string_dtype(encoding="utf-8")
SUMMARY = np.dtype([
    ("total", "<i8"), ("minimum", "<i8"), ("maximum", "<i8"), ("first", "<i8"),
    ("last", "<i8"), ("start_minimum", "<i8"), ("end_maximum", "<i8"),
    ("gpu_count", "<u8"), ("gpu_total", "<i8"), ("mean", "<f8"), ("m2", "<f8"),
])


def p(name):
    return os.path.join(OUT, name)


def build(name, drop=(), then=None):
    """The smallest profile our reader accepts: one region "solve", one rank,
    two calls [10, 15) and [20, 33), laid out as our writer lays it out
    (schema 2), less the objects in `drop`; then `then(f)` breaks it. Objects
    are left out rather than deleted afterwards, which keeps the files small."""
    def ds(f, path, **kw):
        if path not in drop:
            f.create_dataset(path, **kw)

    with h5py.File(p(name), "w", libver="earliest") as f:
        f.attrs["scope_profiler_schema"] = np.int64(2)
        f.attrs.create("storage_layout", "columnar", dtype=STR)
        f.create_group("metadata").attrs.create("label", "hostile", dtype=STR)
        for g in ("region_table", "rank_region_index", "events"):
            if g not in drop:
                f.create_group(g)
        ds(f, "region_table/names", data=["solve"], dtype=STR)
        ds(f, "rank_region_index/region_ids", data=np.array([0], np.uint32))
        ds(f, "rank_region_index/ranks", data=np.array([0], np.uint32))
        ds(f, "rank_region_index/event_offsets", data=np.array([0], np.uint64))
        ds(f, "rank_region_index/event_counts", data=np.array([2], np.uint64))
        ds(f, "rank_region_index/summary_statistics", data=np.array(
            [(18, 5, 13, 5, 13, 10, 33, 0, 0, 9.0, 32.0)], SUMMARY))
        ds(f, "events/start_times", data=np.array([10, 20], np.int64))
        ds(f, "events/end_times", data=np.array([15, 33], np.int64))
        ds(f, "events/call_ids", data=np.array([0, 1], np.int64))
        ds(f, "events/parent_ids", data=np.array([-1, -1], np.int64))
        if then:
            then(f)


def huge(f, path, n, dtype):
    """A dataset claiming n values whose chunks were never written: a few
    bytes on disk, n times the value size if a reader believed it."""
    f.create_dataset(path, shape=(n,), maxshape=(None,), dtype=dtype, chunks=(1024,))


def main():
    os.makedirs(OUT, exist_ok=True)
    build("valid.h5")
    index = ["region_ids", "ranks", "event_offsets", "event_counts"]

    # wrong types: each column in a class the reader must refuse
    build("dtype_names_int.h5", {"region_table/names"},
          lambda f: f.create_dataset("region_table/names", data=np.array([7])))
    build("dtype_start_string.h5", {"events/start_times"},
          lambda f: f.create_dataset("events/start_times", data=["10", "20"], dtype=STR))
    build("dtype_region_ids_float.h5", {"rank_region_index/region_ids"},
          lambda f: f.create_dataset("rank_region_index/region_ids", data=np.array([0.0])))
    build("dtype_summary_int.h5", {"rank_region_index/summary_statistics"},
          lambda f: f.create_dataset("rank_region_index/summary_statistics",
                                     data=np.array([18], np.int64)))
    build("dtype_events_2d.h5", {"events/end_times"},
          lambda f: f.create_dataset("events/end_times", data=np.array([[15, 33]], np.int64)))
    build("dtype_names_scalar.h5", {"region_table/names"},
          lambda f: f.create_dataset("region_table/names", data="solve", dtype=STR))
    build("dtype_schema_string.h5", (),
          lambda f: f.attrs.create("scope_profiler_schema", "2", dtype=STR))
    build("dtype_events_group.h5", {"events/start_times"},
          lambda f: f.create_group("events/start_times"))

    # missing pieces
    build("missing_region_table.h5", {"region_table", "region_table/names"})
    build("missing_index.h5", {"rank_region_index"} | {"rank_region_index/" + k for k in
                                                       index + ["summary_statistics"]})
    build("missing_events.h5", {"events"} | {"events/" + k for k in
                                             ("start_times", "end_times", "call_ids",
                                              "parent_ids")})
    build("missing_start_times.h5", {"events/start_times"})
    build("missing_ranks.h5", {"rank_region_index/ranks"})

    # huge claimed sizes with (almost) no storage behind them
    build("huge_events.h5", {"events/start_times", "events/end_times"},
          lambda f: (huge(f, "events/start_times", 1 << 50, np.int64),
                     huge(f, "events/end_times", 1 << 50, np.int64)))
    build("huge_names.h5", {"region_table/names"},
          lambda f: huge(f, "region_table/names", 1 << 40, STR))
    build("huge_index.h5", {"rank_region_index/" + k for k in index},
          lambda f: [huge(f, "rank_region_index/" + k, 1 << 26, np.uint64) for k in index])
    build("huge_offsets.h5", {"rank_region_index/event_offsets"},
          lambda f: f.create_dataset("rank_region_index/event_offsets",
                                     data=np.array([(1 << 64) - 1], np.uint64)))

    # a string whose stored length is corrupt (0x55555555, as a fuzzer made
    # it): HDF5 would allocate and zero 1.4 GB for it before finding its
    # bytes missing; contiguous and chunked storage
    for name, chunks in (("strlen_contiguous.h5", None), ("strlen_chunked.h5", (4,))):
        build(name, {"region_table/names"},
              lambda f, chunks=chunks: f.create_dataset(
                  "region_table/names", data=["solve"], dtype=STR, chunks=chunks,
                  maxshape=(None,) if chunks else None))
        with h5py.File(p(name), "r") as f:
            d = f["region_table/names"].id
            where = d.get_chunk_info(0).byte_offset if chunks else d.get_offset()
        with open(p(name), "r+b") as raw:
            raw.seek(where)
            assert int.from_bytes(raw.read(4), "little") == len("solve")
            raw.seek(where)
            raw.write((0x55555555).to_bytes(4, "little"))

    # link cycles, and links and storage that leave the file
    build("cycle_soft.h5", {"events"} | {"events/" + k for k in
                                         ("start_times", "end_times", "call_ids",
                                          "parent_ids")},
          lambda f: f.__setitem__("events", h5py.SoftLink("/events")))
    build("cycle_soft_pair.h5", {"region_table", "region_table/names"},
          lambda f: (f.__setitem__("region_table", h5py.SoftLink("/loop")),
                     f.__setitem__("loop", h5py.SoftLink("/region_table"))))
    build("external_link.h5", {"region_table", "region_table/names"},
          lambda f: f.__setitem__("region_table",
                                  h5py.ExternalLink("valid.h5", "/region_table")))
    build("external_link_self.h5", {"region_table", "region_table/names"},
          lambda f: f.__setitem__("region_table",
                                  h5py.ExternalLink("external_link_self.h5", "/region_table")))
    # A soft link (in the file) whose target crosses an external link: the
    # other file must not be opened (a FIFO there would block the reader).
    build("soft_to_external.h5", {"region_table", "region_table/names"},
          lambda f: (f.__setitem__("away", h5py.ExternalLink("valid.h5", "/")),
                     f.__setitem__("region_table", h5py.SoftLink("/away/region_table"))))
    # The per-rank groups (rank<N>/memory, line_profile, likwid), or a rank
    # group itself, behind an external link.
    for name, where, sub in (("external_rank.h5", "rank0", None),
                             ("external_memory.h5", "rank0", "memory"),
                             ("external_line_profile.h5", "rank0", "line_profile"),
                             ("external_likwid.h5", "rank0", "likwid")):
        build(name, (), lambda f, where=where, sub=sub: (
            f.__setitem__(where, h5py.ExternalLink("valid.h5", "/")) if sub is None else
            f.create_group(where).__setitem__(sub, h5py.ExternalLink("valid.h5", "/"))))
    # A dataset whose bytes live in another file: a profile must never make
    # the reader read (and print) a local file such as a private key.
    build("external_storage.h5", {"region_table/names"},
          lambda f: f.create_dataset("region_table/names", shape=(1,), dtype="S64",
                                     external=[("secret.txt", 0, 64)]))
    # The same in a per-rank memory table (its peak_bytes column).
    def memory_external(f):
        g = f.create_group("rank0/memory")
        for c in ("calls", "alloc_bytes", "freed_bytes", "alloc_count"):
            g.create_dataset(c, data=np.array([5], np.int64))
        g.create_dataset("peak_bytes", shape=(1,), dtype="<i8", external=[("secret.txt", 0, 8)])
        g.create_dataset("regions", data=["solve"], dtype=STR)
    build("external_storage_memory.h5", (), memory_external)
    # Hierarchical layout (schema 1): a group holding two hard links to
    # itself, so every level doubles the paths a naive walk visits.
    for name, with_events in (("cycle_hard.h5", False), ("cycle_hard_region.h5", True)):
        with h5py.File(p(name), "w", libver="earliest") as f:
            f.create_group("metadata")
            g = f.create_group("rank0/regions/step")
            if with_events:
                g.create_dataset("start_times", data=np.array([10], np.int64))
                g.create_dataset("end_times", data=np.array([15], np.int64))
            g["again"] = g
            g["more"] = g
    # Hierarchical layout: 28 groups in a chain, each linking the next twice,
    # with events at the end: no cycle, but 2^27 paths to walk (and as many
    # regions to name) for a reader that does not notice shared groups.
    with h5py.File(p("dag_hard.h5"), "w", libver="earliest") as f:
        f.create_group("metadata")
        chain = [f.create_group("rank0/regions/l0")] + [f.create_group(f"pool/l{i}")
                                                        for i in range(1, 28)]
        for a, b in zip(chain, chain[1:]):
            a["x"] = b
            a["y"] = b
        chain[-1].create_dataset("start_times", data=np.array([10], np.int64))
        chain[-1].create_dataset("end_times", data=np.array([15], np.int64))
    print("hostile files written to", OUT)


if __name__ == "__main__":
    main()
