"""One safetensors load into host memory, timed, in a fresh process (so that alternating runs
of different builds compare like with like).

usage: python3 bench/host_load.py gdio|package FILE [LABEL]
  gdio     gdio.safetensors.numpy.load_file (the gdio on PYTHONPATH)
  package  the safetensors package's safetensors.numpy.load_file
Prints one line: label, GB/s of file bytes, milliseconds.
"""

import os
import sys
import time

which, path = sys.argv[1], sys.argv[2]
label = sys.argv[3] if len(sys.argv) > 3 else which
if which == "gdio":
    from gdio.safetensors.numpy import load_file
elif which == "package":
    from safetensors.numpy import load_file
else:
    sys.exit(f"unknown loader {which!r}: gdio or package")
size = os.path.getsize(path)
t0 = time.perf_counter()
tensors = load_file(path)
took = time.perf_counter() - t0
print(f"{label:8s} {size / took / 1e9:5.2f} GB/s {took * 1e3:7.1f} ms ({len(tensors)} tensors)")
