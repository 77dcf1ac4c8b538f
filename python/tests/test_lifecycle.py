"""Random sequences of what a program does with ``gdio.CuFile``s, checked against a model of the
file: several handles on one file opened and closed in any order, reads and writes started as
futures and waited for in any order (or never), closes with I/O in flight. I/O started before a
close finishes with the right bytes; I/O through a closed handle raises ``EBADF`` and touches
nothing; at the end the file holds exactly what the model says."""

import errno
import random

import numpy as np
import pytest

import gdio

STRIPE = 64 * 1024
STRIPES = 8


@pytest.mark.parametrize("seed", range(24))
def test_random_lifecycles_match_the_model(tmp_path, seed):
    r = random.Random(f"lifecycle-{seed}")
    path = tmp_path / "f.bin"
    model = bytearray(r.randbytes(STRIPES * STRIPE))
    path.write_bytes(model)
    handles = []  # open CuFiles
    closed = []  # closed ones, kept to be misused
    # (future, buffer, offset, size) of reads in flight, and the bytes they must get.
    reads = []
    # Stripes with a write in flight: no other I/O touches them until it is waited for.
    writing = {}

    def settle_write(stripe):
        fut, n = writing.pop(stripe)
        assert fut.get() == n

    for step in range(200):
        what = r.choice(["open", "open", "close", "read", "read", "write", "wait", "misuse", "sync"])
        if what == "open" or not handles:
            handles.append(gdio.CuFile(path, "r+"))
            continue
        f = r.choice(handles)
        stripe = r.randrange(STRIPES)
        if what == "close":
            handles.remove(f)
            f.close()  # reads in flight through it still land (checked when waited for)
            closed.append(f)
        elif what in ("read", "sync"):
            if stripe in writing:
                settle_write(stripe)
            off = stripe * STRIPE + r.randrange(STRIPE // 2)
            size = r.randrange(1, STRIPE // 2)
            buf = np.full(size, 0xA5, dtype=np.uint8)
            if what == "sync":
                assert f.pread(buf, size, off).get() == size
                assert buf.tobytes() == bytes(model[off:off + size]), f"step {step}"
            else:
                reads.append((f.pread(buf, size, off), buf, bytes(model[off:off + size])))
        elif what == "write":
            # No read in flight may cover the stripe written: settle those first.
            for fut, buf, want in reads:
                assert fut.get() == len(want) and buf.tobytes() == want, f"step {step}"
            reads.clear()
            if stripe in writing:
                settle_write(stripe)
            off = stripe * STRIPE + r.randrange(STRIPE // 2)
            data = r.randbytes(r.randrange(1, STRIPE // 2))
            writing[stripe] = (f.pwrite(np.frombuffer(data, dtype=np.uint8), len(data), off),
                               len(data))
            model[off:off + len(data)] = data
        elif what == "wait" and reads:
            fut, buf, want = reads.pop(r.randrange(len(reads)))
            assert fut.get() == len(want) and buf.tobytes() == want, f"step {step}"
        elif what == "misuse" and closed:
            g = r.choice(closed)
            buf = np.full(100, 0x5A, dtype=np.uint8)
            for call in (lambda: g.pread(buf, 100, 0), lambda: g.pwrite(buf, 100, 0),
                         lambda: g.read(buf), lambda: g.write(buf)):
                with pytest.raises(gdio.GdioError) as ei:
                    call()
                assert ei.value.errno == errno.EBADF, f"step {step}"
            assert (buf == 0x5A).all()
    for fut, buf, want in reads:
        assert fut.get() == len(want) and buf.tobytes() == want
    for stripe in list(writing):
        settle_write(stripe)
    for f in handles:
        f.close()
    assert path.read_bytes() == bytes(model)
