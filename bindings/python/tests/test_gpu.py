"""gpu_timing_backend from Python: an object with record_event() and
elapsed_time_ns(start, end) becomes the library's callbacks backend; the
device times it reports land in events/gpu_durations."""
import warnings

import h5py
import numpy as np
import pytest

import scope_profiler as sp
from scope_profiler import _core


class FakeEvent:
    def __init__(self, t):
        self.t = t
        self.queried = 0

    def query(self):
        self.queried += 1
        return True


class FakeDevice:
    """A device clock that advances 1000 ns per recorded event."""

    def __init__(self):
        self.t = 0
        self.recorded = 0
        self.asked = 0

    def record_event(self):
        self.t += 1000
        self.recorded += 1
        return FakeEvent(self.t)

    def elapsed_time_ns(self, start, end):
        self.asked += 1
        return end.t - start.t


def test_backend_must_have_the_two_methods(h5):
    with pytest.raises(TypeError, match="record_event"):
        sp.setup(file_path=h5, use_gpu_timing=True, gpu_timing_backend=object())


def test_torch_without_torch_is_a_clear_error(h5):
    try:
        import torch  # noqa: F401
        pytest.skip("PyTorch is installed")
    except ImportError:
        pass
    with pytest.raises(sp.ConfigurationError, match="PyTorch"):
        sp.setup(file_path=h5, use_gpu_timing=True, gpu_timing_backend="torch")


def test_object_backend_times_regions(h5):
    dev = FakeDevice()
    if not _core.gpu_callbacks_available():
        with pytest.warns(sp.ScopeProfilerWarning, match="gpu_timing_backend"):
            sp.setup(file_path=h5, use_gpu_timing=True, gpu_timing_backend=dev)
        sp.finalize(verbose=False)
        pytest.skip("this library has no GPU callbacks backend yet (warned)")
    with warnings.catch_warnings():
        warnings.simplefilter("error", sp.ScopeProfilerWarning)
        sp.setup(file_path=h5, use_gpu_timing=True, gpu=sp.GPUOptions(backend=dev))
    assert sp.get_config().gpu_timing_backend is dev
    for _ in range(3):
        with sp.profile_region("kernel"):
            pass
    with sp.profile_region("outer"):
        with sp.profile_region("kernel"):
            pass
    sp.finalize(verbose=False)
    assert dev.recorded == 10 and dev.asked == 5
    with h5py.File(h5, "r") as f:
        gpu = f["events/gpu_durations"][()]
    assert sorted(gpu.tolist()) == [1000, 1000, 1000, 1000, 3000]
