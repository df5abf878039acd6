"""C and Python in one run: a C extension recording with SP_REGION, called
from profiled Python, nests under the Python region, in one file."""
import numpy as np

import scope_profiler as sp

import sp_c_ext


def test_c_regions_nest_under_python(h5):
    sp.setup(file_path=h5)

    def back_in_python():
        with sp.profile_region("py_callback"):
            pass

    @sp.profile("py_driver")
    def driver():
        sp_c_ext.work(3, back_in_python)

    for _ in range(2):
        driver()
    sp.finalize(verbose=False)
    res = sp.load(h5)
    assert res["c_work"].num_calls == 2 and res["c_inner"].num_calls == 6
    cs = res.call_stack()
    names = np.array(cs["names"])
    parent_name = {n: set(names[cs["parent"][names == n]].tolist()) for n in ("c_work", "c_inner", "py_callback")}
    assert parent_name == {"c_work": {"py_driver"}, "c_inner": {"c_work"}, "py_callback": {"c_work"}}
    assert cs["overlaps"] == 0


def test_c_regions_outside_a_python_run_are_not_recorded(tmp_path):
    pm = sp.ProfileManager()  # an independent manager: C's SP_REGION goes to the default one
    pm.setup(file_path=str(tmp_path / "own.h5"))
    with pm.profile_region("mine"):
        sp_c_ext.work(2)
    res = pm.finalize(verbose=False, return_results=True)
    assert res.region_names == ["mine"]
