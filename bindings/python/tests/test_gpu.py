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
    assert _core.gpu_callbacks_available()  # the library always has its callbacks backend
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
    mem = sp.finalize(verbose=False, return_results=True)
    assert dev.recorded == 10 and dev.asked == 5
    with h5py.File(h5, "r") as f:
        gpu = f["events/gpu_durations"][()]
    assert sorted(gpu.tolist()) == [1000, 1000, 1000, 1000, 3000]
    # The reader gives the same device times, per call and per region.
    for res in (mem, sp.load(h5)):
        kernel, outer = res["kernel"], res["outer"]
        assert kernel[0].gpu_durations_ns.tolist() == [1000] * 4
        assert kernel[0].gpu_durations.tolist() == [1e-6] * 4
        assert outer[0].gpu_durations_ns.tolist() == [3000]
        assert (kernel.gpu_num_calls, kernel.gpu_total_duration) == (4, pytest.approx(4e-6))
        assert (outer[0].gpu_num_calls, outer[0].gpu_total_duration) == (1, pytest.approx(3e-6))
        res.close()


def test_no_device_times_without_gpu_timing(h5):
    sp.setup(file_path=h5)
    with sp.profile_region("cpu_only"):
        pass
    res = sp.finalize(verbose=False, return_results=True)
    r = res["cpu_only"]
    assert r[0].gpu_durations_ns is None and r[0].gpu_durations is None
    assert (r.gpu_num_calls, r.gpu_total_duration) == (0, 0.0)


class FailingDevice(FakeDevice):
    def elapsed_time_ns(self, start, end):
        raise RuntimeError("device lost")


def test_backend_exception_is_reported_not_fatal(h5, capfd):
    sp.setup(file_path=h5, use_gpu_timing=True, gpu_timing_backend=FailingDevice())
    with sp.profile_region("k_fail"):
        pass
    res = sp.finalize(verbose=False, return_results=True)
    assert res["k_fail"].num_calls == 1  # the CPU timeline is kept
    assert res["k_fail"][0].gpu_durations_ns.tolist() == [-1]  # no device time for that call
    assert "device lost" in capfd.readouterr().err
