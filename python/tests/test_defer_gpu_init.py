"""``defer_gpu_init``: a process that only reads files into host memory never looks for CUDA
(on a GPU machine, loading libcuda and ``cuInit`` cost a fixed fraction of a second); the first
call that needs the GPU runtime finds it. Each case runs in a process of its own, so that no
earlier test's driver or import has looked already."""

import json
import os
import subprocess
import sys

import numpy as np
import safetensors.numpy as ref_np

_SCRIPT = r"""
import json, sys
import numpy as np
import gdio
from gdio import _native
import gdio.safetensors.numpy as gst

st, raw = sys.argv[1], sys.argv[2]
out = {}
loaded = gst.load_file(st)
out["tensors"] = {k: v.tobytes().hex() for k, v in loaded.items()}
with gdio.CuFile(raw, "r") as f:
    a = np.empty(100_000, dtype=np.uint8)
    out["n"] = f.pread(a, 100_000, 12_345).get()
    out["read"] = a.tobytes().hex()
out["found_after_host_io"] = _native.gpu_runtime_found()
info = gdio.runtime_info()
out["found_after_runtime_info"] = _native.gpu_runtime_found()
out["runtime"] = info["runtime"]
print(json.dumps(out))
"""


def _run(tmp_path, defer: bool) -> dict:
    gen = np.random.default_rng(91)
    tensors = {f"w.{i}": gen.integers(-2**31, 2**31, size=(64, 33), dtype=np.int32) for i in range(6)}
    st = tmp_path / "m.safetensors"
    ref_np.save_file(tensors, str(st))
    raw = tmp_path / "raw.bin"
    data = gen.integers(0, 256, size=300_000, dtype=np.uint8).tobytes()
    raw.write_bytes(data)
    env = dict(os.environ)
    env.pop("GDIO_SIMULATE_GPUS", None)
    # Read, not views of the page cache: the engine's read path is what must not need CUDA.
    env.update(GDIO_DEFER_GPU_INIT="1" if defer else "0", GDIO_SAFETENSORS_MAP_HOST="0")
    p = subprocess.run([sys.executable, "-c", _SCRIPT, str(st), str(raw)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert {k: bytes.fromhex(v) for k, v in out["tensors"].items()} == {
        k: v.tobytes() for k, v in tensors.items()}
    assert out["n"] == 100_000 and bytes.fromhex(out["read"]) == data[12_345:112_345]
    return out


def test_host_reads_never_look_for_cuda_and_the_first_question_does(tmp_path):
    out = _run(tmp_path, defer=True)
    assert out["found_after_host_io"] is False, "a host read looked for the GPU runtime"
    assert out["found_after_runtime_info"] is True
    assert out["runtime"] in ("cuda", "host")


def test_without_it_the_driver_looks_at_once(tmp_path):
    out = _run(tmp_path, defer=False)
    assert out["found_after_host_io"] is True
    assert out["runtime"] in ("cuda", "host")
