"""Shared fixtures of the Python package's tests: a fresh default manager
state per test (finalized or replaced), and a temporary directory."""
import os
import warnings

import pytest

import scope_profiler as sp


@pytest.fixture(autouse=True)
def _clean_default_manager():
    yield
    if sp.is_active():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sp.finalize(verbose=False)


@pytest.fixture
def h5(tmp_path):
    """A path for an output file in the test's own directory."""
    return str(tmp_path / "run.h5")


def binary_dir():
    return os.environ.get("SP_TEST_BINARY_DIR", "")
