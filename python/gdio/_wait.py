"""``gdio.wait``: wait on many futures at once, as ``concurrent.futures.wait`` does."""

from __future__ import annotations

import threading
import time
from collections import namedtuple
from typing import Iterable

FIRST_COMPLETED = "FIRST_COMPLETED"
FIRST_EXCEPTION = "FIRST_EXCEPTION"
ALL_COMPLETED = "ALL_COMPLETED"

DoneAndNotDoneFutures = namedtuple("DoneAndNotDoneFutures", "done not_done")


def _failed(f) -> bool:
    try:
        f.get(0)
    except TimeoutError:
        return False
    except BaseException:  # noqa: BLE001
        return True
    return False


def wait(futures: Iterable, timeout: float | None = None, return_when: str = ALL_COMPLETED):
    """Waits until the futures are done (``ALL_COMPLETED``), one is (``FIRST_COMPLETED``) or
    one failed (``FIRST_EXCEPTION``), or ``timeout`` seconds passed. Returns
    ``(done, not_done)`` sets, like ``concurrent.futures.wait``. The GIL is released while it
    waits."""
    if return_when not in (FIRST_COMPLETED, FIRST_EXCEPTION, ALL_COMPLETED):
        raise ValueError(f"return_when must be FIRST_COMPLETED, FIRST_EXCEPTION or ALL_COMPLETED, not {return_when!r}")
    futures = set(futures)
    deadline = None if timeout is None else time.monotonic() + timeout

    def split():
        done = {f for f in futures if f.done()}
        return DoneAndNotDoneFutures(done, futures - done)

    if return_when == ALL_COMPLETED:
        for f in futures:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                f.get(left)
            except TimeoutError:
                if not f.done():
                    break
            except BaseException:  # noqa: BLE001 - failures count as done
                pass
        return split()

    def enough(done) -> bool:
        if return_when == FIRST_COMPLETED:
            return bool(done)
        return any(_failed(f) for f in done) or len(done) == len(futures)

    now = split()
    if enough(now.done):
        return now
    wake = threading.Event()
    for f in now.not_done:
        f.add_done_callback(lambda _f: wake.set())
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return split()
        wake.wait(left)
        wake.clear()
        now = split()
        if enough(now.done):
            return now
