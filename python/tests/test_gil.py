"""The GIL is released during every I/O: while one thread is inside a blocking ``read``,
``write``, ``Future.get()`` or ``gdio.wait``, another Python thread runs. A second thread
stamps the clock as fast as it can; a stamp can only be taken while that thread holds the GIL,
so a call that kept the GIL leaves a gap in the stamps as long as the call (the other thread
may run for a moment as the call begins and ends, not in the middle). Each call moves 256 MiB
(tens of milliseconds at least), and the bytes are checked."""

import os
import sys
import threading
import time

import numpy as np
import pytest

import gdio

SIZE = 256 << 20


@pytest.fixture
def stamps():
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    times, stop = [], threading.Event()

    def stamp():
        while not stop.is_set():
            times.append(time.perf_counter())

    t = threading.Thread(target=stamp)
    t.start()
    while not times:
        time.sleep(0.001)
    yield times
    stop.set()
    t.join()
    sys.setswitchinterval(old)


def inside(times, call):
    """Runs ``call``; returns its result, how long it took, and the longest time within it that
    the other thread took no stamp."""
    t0 = time.perf_counter()
    out = call()
    t1 = time.perf_counter()
    marks = [t0] + sorted(t for t in list(times) if t0 < t < t1) + [t1]
    return out, t1 - t0, max(b - a for a, b in zip(marks, marks[1:]))


# A call shorter than this is too quick to tell. The stamping thread takes the GIL within the
# switch interval (0.2 ms) of its release, so a few milliseconds are plenty; a 256 MiB read out
# of the page cache takes 9-10 ms on the H200 machine (10 ms, the first floor, failed there).
TOO_QUICK = 0.002


def released(took, gap):
    """Whether the other thread ran during the call: ``None`` when the call was too quick to
    tell (the read and write below never are)."""
    return gap < took / 2 if took >= TOO_QUICK else None


def check_released(what, took, gap):
    assert released(took, gap) is not False, (
        f"{what} held the GIL: no other thread ran for {gap:.3f} of {took:.3f} s")
    return took >= TOO_QUICK


# A call that keeps the GIL leaves the gap every time; a busy machine (two cores, the engine's
# workers on both) can keep the stamping thread off the CPU for a while by chance. Each call is
# tried up to this many times and fails only if every try left the gap.
TRIES = 3


def test_the_check_sees_a_call_that_holds_the_gil(stamps):
    big = list(np.random.default_rng(3).random(2_000_000))
    _, took, gap = inside(stamps, lambda: sorted(big))
    assert took >= 0.010 and gap >= took / 2, (took, gap)


def test_blocking_read_write_get_and_wait_let_other_threads_run(tmp_path, stamps):
    gen = np.random.default_rng(31)
    data = gen.integers(0, 256, SIZE, dtype=np.uint8)
    path = tmp_path / "gil.bin"
    with gdio.CuFile(path, "w") as f:
        written, took, gap = inside(stamps, lambda: f.write(data))
        assert written == SIZE
        assert check_released("write", took, gap), f"write took only {took:.4f} s"
    assert os.path.getsize(path) == SIZE
    with gdio.CuFile(path, "r") as f:
        for what in ("read", "get", "wait"):
            for _ in range(TRIES):
                buf = np.zeros(SIZE, dtype=np.uint8)
                if what == "read":
                    got, took, gap = inside(stamps, lambda: f.read(buf))
                elif what == "get":
                    fut = f.pread(buf, task_size=4 << 20)
                    got, took, gap = inside(stamps, fut.get)
                else:
                    futs = [f.pread(buf[i:i + (8 << 20)], file_offset=i) for i in range(0, SIZE, 8 << 20)]
                    _, took, gap = inside(stamps, lambda: gdio.wait(futs))
                    got = sum(x.get() for x in futs)
                assert got == SIZE, what
                assert np.array_equal(buf, data), what
                if released(took, gap) is not False:
                    break
            judged = check_released(what, took, gap)
            if what == "read":
                assert judged, f"read took only {took:.4f} s"
