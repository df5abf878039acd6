"""ctypes_load.py - load scope-profiler into a Python interpreter with ctypes.

Usage: python3 ctypes_load.py LIBRARY OUTPUT.h5

The Python front end loads the library this way: a plain ctypes.CDLL, which is
dlopen() from a process that was not linked with it. Loading fails outright
("cannot allocate memory in static TLS block") when the library's
thread-local block outgrows glibc's static surplus, so this is the check that
it does not. Then it records through the out-of-line entry points
(sp_region_intern_n with bytes, sp_region_begin_fn / sp_region_end_fn),
finalizes, and reads the file back with h5py.
"""
import ctypes
import sys

import h5py

lib_path, out = sys.argv[1], sys.argv[2]
lib = ctypes.CDLL(lib_path)

lib.sp_default_manager.restype = ctypes.c_void_p
lib.sp_region_intern_n.restype = ctypes.c_uint32
lib.sp_region_intern_n.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.sp_region_begin_fn.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
lib.sp_region_end_fn.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
lib.sp_manager_num_calls.restype = ctypes.c_uint64
lib.sp_manager_num_calls.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
lib.sp_last_error.restype = ctypes.c_char_p
lib.sp_setup.argtypes = [ctypes.c_void_p]
lib.sp_finalize.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


class SetupArgs(ctypes.Structure):
    _fields_ = [("options", ctypes.c_void_p), ("config_path", ctypes.c_char_p),
                ("overrides", ctypes.POINTER(ctypes.c_char_p)), ("replace", ctypes.c_int),
                ("auto_finalize", ctypes.c_int)]


ov = (ctypes.c_char_p * 2)(("file_path=" + out).encode(), None)
args = SetupArgs(None, None, ov, 0, 0)
st = lib.sp_setup(ctypes.byref(args))
assert st == 0, (st, lib.sp_last_error())

m = lib.sp_default_manager()
name = "py.step \u00e9".encode()  # counted UTF-8, no terminator needed
step = lib.sp_region_intern_n(name, len(name))
solve = lib.sp_region_intern_n(b"py.solveXXXX", 8)  # only the first 8 bytes count
assert step and solve and step != solve, lib.sp_last_error()
assert lib.sp_region_intern_n(b"bad\0name", 8) == 0
for _ in range(1000):
    assert lib.sp_region_begin_fn(m, step) == 0
    assert lib.sp_region_begin_fn(m, solve) == 0
    assert lib.sp_region_end_fn(m, solve) == 0
    assert lib.sp_region_end_fn(m, step) == 0
assert lib.sp_region_end_fn(m, step) < 0  # unmatched: refused, not recorded
assert lib.sp_region_begin_fn(None, step) < 0  # NULL manager: refused, no crash
st = lib.sp_finalize(None, None)
assert st == 0, (st, lib.sp_last_error())
assert lib.sp_manager_num_calls(m, step) == 1000
assert lib.sp_manager_num_calls(m, solve) == 1000

with h5py.File(out, "r") as f:
    names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][()]]
    rri = f["rank_region_index"]
    counts = {names[i]: int(c) for i, c in zip(rri["region_ids"][()], rri["event_counts"][()])}
assert counts.get("py.step \u00e9") == 1000, counts
assert counts.get("py.solve") == 1000, counts
print("ok: loaded with ctypes,", sorted(counts.items()))
