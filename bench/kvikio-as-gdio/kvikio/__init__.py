"""A module named ``kvikio`` that is gdio: KvikIO's own tests run against gdio's Python API
(the "change one import" promise). bench/kvikio-as-gdio.sh puts it first on the path."""
import sys as _sys

import gdio as _gdio
from gdio import *  # noqa: F401,F403
from gdio import CompatMode, RemoteEndpointType, RemoteFile, cufile_driver, defaults, numpy  # noqa: F401
from gdio import _remote as remote_file  # noqa: F401

__version__ = _gdio.__version__
for _name in ("defaults", "cufile_driver", "numpy"):
    _sys.modules[f"kvikio.{_name}"] = getattr(_gdio, _name)
_sys.modules["kvikio.remote_file"] = remote_file
