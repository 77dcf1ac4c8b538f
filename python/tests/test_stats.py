"""gdio.stats() and gdio.explain(): which path each I/O took and why, from Python. Reads of
random ranges move the serving backend's counters by exactly their count and bytes; that
backend is the one explain() names, with the same decision `gdio check --json` prints; bad
arguments are errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

import gdio


def served(before, after):
    """{backend: (ops, bytes)} moved between two snapshots."""
    out = {}
    for name, b in after["backends"].items():
        a = before["backends"].get(name, {"ops": 0, "bytes": 0})
        if b["ops"] != a["ops"] or b["bytes"] != a["bytes"]:
            out[name] = (b["ops"] - a["ops"], b["bytes"] - a["bytes"])
    return out


def test_reads_move_the_serving_backend_by_their_count_and_bytes(data_file, rng):
    path, data = data_file
    with gdio.CuFile(path) as f:
        f.read(np.empty(4096, dtype=np.uint8))  # the driver exists before the first snapshot
        before = gdio.stats()
        total = 0
        for _ in range(7):
            off = rng.randrange(0, len(data) - 1)
            n = rng.randrange(1, min(300_000, len(data) - off) + 1)
            buf = np.empty(n, dtype=np.uint8)
            assert f.read(buf, file_offset=off) == n
            assert buf.tobytes() == data[off:off + n]
            total += n
        after = gdio.stats()
    moved = served(before, after)
    assert len(moved) == 1, moved
    (name, (ops, nbytes)), = moved.items()
    assert (ops, nbytes) == (7, total)
    assert name == gdio.explain(path, "read", "cpu")["backend"]
    assert after["runtime"] == gdio.runtime_info()["runtime"]
    for key in ("buffered_read_bytes", "direct_read_bytes", "inline_requests", "worker_time"):
        assert key in after["engine"], key
    assert all(after["engine"]["worker_time"][k] >= before["engine"]["worker_time"][k]
               for k in after["engine"]["worker_time"])


@pytest.mark.parametrize("op", ["read", "write"])
@pytest.mark.parametrize("aligned", [True, False])
def test_explain_says_what_gdio_check_says(data_file, op, aligned):
    path, _ = data_file
    got = gdio.explain(path, op, "cpu", aligned=aligned)
    with gdio.CuFile(path) as f:
        assert gdio.explain(f, op, "cpu", aligned=aligned) == got
    r = subprocess.run([sys.executable, "-m", "gdio", "check", str(path), "--memory", "host", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    decisions = json.loads(r.stdout)["paths"][0]["decisions"]
    want = next(d for d in decisions if d["op"] == op and d["aligned"] == aligned)
    assert got["backend"] == want["backend"] and got["reason"] == want["reason"]
    assert got["scores"] == want["scores"] and got["rejected"] == want["rejected"]
    assert got["backend"] is not None and got["reason"]
    assert {s["backend"] for s in got["scores"]} >= {got["backend"]}
    assert got["file"]["size"] == path.stat().st_size


def test_explain_refuses_bad_arguments(data_file, tmp_path):
    path, _ = data_file
    with pytest.raises(ValueError, match="op must be"):
        gdio.explain(path, "append", "cpu")
    with pytest.raises(ValueError, match="device"):
        gdio.explain(path, "read", "tpu:0")
    with pytest.raises(OSError):
        gdio.explain(tmp_path / "missing.bin", "read", "cpu")
