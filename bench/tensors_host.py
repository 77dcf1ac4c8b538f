"""`safe_open(...).tensors()` walked to the end into torch CPU tensors, timed (torch's import
is not), in a fresh process: views of the page cache, or with GDIO_SAFETENSORS_MAP_HOST=false
read by the engine.

usage: python3 bench/tensors_host.py FILE [LABEL]
"""
import sys
import time

import torch  # noqa: F401  (imported before the clock starts)
from gdio.safetensors import safe_open

path = sys.argv[1]
label = sys.argv[2] if len(sys.argv) > 2 else "gdio"
t = time.perf_counter()
with safe_open(path, framework="pt") as f:
    n = sum(1 for _ in f.tensors())
print(f"{label:5s} tensors() {n} tensors in {(time.perf_counter() - t) * 1e3:.1f} ms")
