import os
import random

import pytest


def gpu_skip(why: str) -> None:
    """Skips a GPU test, or fails it when GDIO_REQUIRE_GPU=1 (the GPU machine)."""
    if os.environ.get("GDIO_REQUIRE_GPU") == "1":
        pytest.fail(f"GDIO_REQUIRE_GPU=1 but this GPU test would be skipped: {why}")
    pytest.skip(why)


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
