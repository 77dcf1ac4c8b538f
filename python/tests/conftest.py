import os
import random

import pytest


def gpu_skip(why: str) -> None:
    """Skips a GPU test, or fails it when GDIO_REQUIRE_GPU=1 (the GPU machine)."""
    if os.environ.get("GDIO_REQUIRE_GPU") == "1":
        pytest.fail(f"GDIO_REQUIRE_GPU=1 but this GPU test would be skipped: {why}")
    pytest.skip(why)


def need_torch():
    """torch, or a skip where it is not installed; a failure instead when GDIO_REQUIRE_TORCH=1
    (test.sh's torch venv, where the tests that need torch on the host must run)."""
    try:
        import torch
    except ImportError as e:
        if os.environ.get("GDIO_REQUIRE_TORCH") == "1":
            pytest.fail(f"GDIO_REQUIRE_TORCH=1 but torch cannot be imported: {e}")
        pytest.skip("torch is not installed")
    return torch


@pytest.fixture
def rng(request):
    # One seed per test, printed on failure through the test id.
    return random.Random(f"gdio-{request.node.nodeid}")


@pytest.fixture
def data_file(tmp_path, rng):
    """A file of random bytes (an odd size, so the end is not aligned) and its contents."""
    size = 3 * (1 << 20) + rng.randrange(1, 4096)
    data = rng.randbytes(size)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    return path, data
