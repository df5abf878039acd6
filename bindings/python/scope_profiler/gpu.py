"""gpu_timing_backend from Python: ``"torch"``, ``"cupy"``, or any object
with ``record_event()`` and ``elapsed_time_ns(start_event, end_event)``.

The object is registered as the C library's callbacks backend for the
manager (``_core.set_gpu_backend``): at every timed region begin and end
the library calls ``record_event()`` on the recording thread, and later,
when the end event is done (its ``query()`` when it has one), asks
``elapsed_time_ns(start, end)``; the device time lands in
``events/gpu_durations`` like the CUDA backend's. ``"auto"`` and ``"cuda"``
stay the library's own (CUDA events through the driver).
"""

from __future__ import annotations

from . import _core


class TorchBackend:
    """CUDA events of PyTorch on its current stream."""

    def __init__(self):
        import torch  # noqa: F401 - a clear ImportError when PyTorch is missing

        self._torch = torch
        if not torch.cuda.is_available():
            raise _core.ConfigurationError("gpu_timing_backend='torch': torch.cuda.is_available() is False")

    def record_event(self):
        e = self._torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def elapsed_time_ns(self, start, end) -> int:
        return int(round(start.elapsed_time(end) * 1e6))


class CupyBackend:
    """CUDA events of CuPy on its current stream."""

    def __init__(self):
        import cupy

        self._cupy = cupy

    def record_event(self):
        e = self._cupy.cuda.Event()
        e.record()
        return e

    def elapsed_time_ns(self, start, end) -> int:
        return int(round(self._cupy.cuda.get_elapsed_time(start, end) * 1e6))


def resolve(value):
    """The backend object for a gpu_timing_backend value, or None when the
    library's own backend (a word it knows) applies."""
    if value is None:
        return None
    if isinstance(value, str):
        if value == "torch":
            try:
                return TorchBackend()
            except ImportError as e:
                raise _core.ConfigurationError(f"gpu_timing_backend='torch' needs PyTorch: {e}") from None
        if value == "cupy":
            try:
                return CupyBackend()
            except ImportError as e:
                raise _core.ConfigurationError(f"gpu_timing_backend='cupy' needs CuPy: {e}") from None
        return None
    if not (callable(getattr(value, "record_event", None)) and callable(getattr(value, "elapsed_time_ns", None))):
        raise TypeError(f"gpu_timing_backend {value!r} must be 'auto', 'cuda', 'torch', 'cupy' or an object "
                        "with record_event() and elapsed_time_ns(start_event, end_event)")
    return value
