"""``await`` support for gdio futures: the worker that finishes the I/O wakes the loop."""

from __future__ import annotations

import asyncio


def _settle(aio_future: asyncio.Future, future) -> None:
    if aio_future.done():
        return
    try:
        aio_future.set_result(future.get())
    except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
        aio_future.set_exception(e)


def await_future(future):
    """The iterator ``Future.__await__`` returns, on the running loop."""
    loop = asyncio.get_running_loop()
    aio_future = loop.create_future()

    def done(f) -> None:
        try:
            loop.call_soon_threadsafe(_settle, aio_future, f)
        except RuntimeError:  # the loop closed while the I/O ran: nobody is waiting
            pass

    future.add_done_callback(done)
    return aio_future.__await__()
