"""A safetensors file of random float16 tensors for the host-load benches (bench/host_load.py,
bench/host_load_torch.py): COUNT tensors of ROWS x 1536.

usage: python3 bench/make_host_file.py PATH COUNT ROWS
"""
import sys

import numpy as np
from safetensors.numpy import save_file

path, count, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
gen = np.random.default_rng(5)
save_file({f"layers.{i:04d}.weight": gen.standard_normal((rows, 1536), dtype=np.float32).astype(np.float16)
           for i in range(count)}, path)
