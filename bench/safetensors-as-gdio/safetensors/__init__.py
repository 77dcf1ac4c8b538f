"""A package named ``safetensors`` that is ``gdio.safetensors``: the safetensors package's own
tests run against gdio's (the "change one import" promise). bench/safetensors-as-gdio.sh puts
it first on the path."""
import sys as _sys

import gdio.safetensors as _g
from gdio.safetensors import *  # noqa: F401,F403

for _name in ("torch", "numpy", "flax", "paddle", "tensorflow", "mlx"):
    _sys.modules[f"safetensors.{_name}"] = __import__(f"gdio.safetensors.{_name}", fromlist=["_"])
for _name in dir(_g):
    if not _name.startswith("__"):
        globals()[_name] = getattr(_g, _name)
__version__ = getattr(_g, "__version__", "0")
