"""@profile(recursive=True): the Python callees of a decorated call are
regions named <module>.<qualname>, nested as they ran; library code and
explicitly decorated functions are not traced twice; a profile function
already set keeps running."""
import json
import sys

import numpy as np
import pytest

import scope_profiler as sp


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) + leaf(x)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def test_callees_become_regions(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5)

    @pm.profile("root", recursive=True)
    def root():
        json.dumps({"a": 1})  # standard library: not traced
        return middle(1) + fib(5)

    for _ in range(2):
        assert root() == 4 + 5
    res = pm.finalize(verbose=False, return_results=True)
    mod = __name__
    names = set(res.region_names)
    assert {"root", f"{mod}.middle", f"{mod}.leaf", f"{mod}.fib"} <= names
    assert not any(n.startswith("json") for n in names)
    assert res[f"{mod}.middle"].num_calls == 2
    assert res[f"{mod}.leaf"].num_calls == 4
    assert res[f"{mod}.fib"].num_calls == 2 * 15  # fib(5) makes 15 calls
    cs = res.call_stack()
    n = np.array(cs["names"])
    leaf_parents = set(n[cs["parent"][n == f"{mod}.leaf"]].tolist())
    assert leaf_parents == {f"{mod}.middle"}
    assert set(n[cs["parent"][n == f"{mod}.middle"]].tolist()) == {"root"}
    assert cs["overlaps"] == 0
    assert max(cs["depth"][n == f"{mod}.fib"]) >= 4  # the recursion nests


def test_decorated_callee_records_once_and_nonrecursive_untraced(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5)

    @pm.profile("inner_deco")
    def inner_deco():
        return leaf(0)

    @pm.profile("outer", recursive=True)
    def outer():
        return inner_deco()

    @pm.profile("plain")
    def plain():
        return leaf(0)

    outer()
    plain()
    res = pm.finalize(verbose=False, return_results=True)
    assert res["inner_deco"].num_calls == 1
    assert not any(r.endswith(".inner_deco") for r in res.region_names)
    assert res[f"{__name__}.leaf"].num_calls == 1  # under outer only; plain() is not recursive


def test_exception_closes_traced_frames(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5)

    def raises():
        raise ValueError("x")

    def calls_raises():
        raises()

    @pm.profile("r", recursive=True)
    def r():
        try:
            calls_raises()
        except ValueError:
            pass
        return leaf(1)

    assert r() == 2
    res = pm.finalize(verbose=False, return_results=True)
    assert res[f"{__name__}.test_exception_closes_traced_frames.<locals>.raises"].num_calls == 1
    assert pm.problems()["unmatched_ends"] == 0
    cs = res.call_stack()
    n = list(cs["names"])
    assert n[cs["parent"][n.index(f"{__name__}.leaf")]] == "r"


def test_previous_profile_function_chained_and_restored(h5):
    seen = []

    def prof(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    pm = sp.ProfileManager()
    pm.setup(file_path=h5)

    @pm.profile("chained", recursive=True)
    def chained():
        return leaf(2)

    sys.setprofile(prof)
    try:
        chained()
        after = sys.getprofile()
    finally:
        sys.setprofile(None)
    assert after is prof
    assert "leaf" in seen
    res = pm.finalize(verbose=False, return_results=True)
    assert res[f"{__name__}.leaf"].num_calls == 1


def test_run_script_traces_the_script(h5, tmp_path):
    script = tmp_path / "sim_script.py"
    script.write_text(
        "import sys\n"
        "import scope_profiler as sp\n"
        "\n"
        "def helper(x):\n"
        "    return x + 1\n"
        "\n"
        "@sp.profile('decorated_step')\n"
        "def step(x):\n"
        "    return helper(x)\n"
        "\n"
        "class Solver:\n"
        "    def solve(self, n):\n"
        "        return sum(step(i) for i in range(n))\n"
        "\n"
        "RESULT = Solver().solve(int(sys.argv[1]))\n"
        "ARGV = list(sys.argv)\n"
        "SYS_PATH0 = sys.path[0]\n"
        "NAME = __name__\n")
    argv = list(sys.argv)
    sp.setup(file_path=h5)
    g = sp.ProfileManager.run_script(script, ["4"])
    res = sp.finalize(verbose=False, return_results=True)
    assert g["RESULT"] == 1 + 2 + 3 + 4 and g["NAME"] == "__main__"
    assert g["ARGV"] == [str(script), "4"] and g["SYS_PATH0"] == str(tmp_path)
    assert sys.argv == argv and sys.path[0] != str(tmp_path)
    assert res["sim_script.py"].num_calls == 1
    assert res["__main__.Solver.solve"].num_calls == 1
    assert res["__main__.helper"].num_calls == 4
    assert res["decorated_step"].num_calls == 4  # recorded once, by its decorator
    assert "__main__.step" not in res.region_names and "__main__.<module>" not in res.region_names
    tree = {n["name"]: n for n in res.call_tree()}
    parent = res.call_tree()[tree["__main__.Solver.solve"]["parent"]]["name"]
    assert parent == "sim_script.py"
    with pytest.raises(FileNotFoundError):
        sp.ProfileManager.run_script(tmp_path / "missing.py")
