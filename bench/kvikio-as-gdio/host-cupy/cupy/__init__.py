"""A NumPy stand-in for CuPy (bench/kvikio-as-gdio.sh with HOST_CUPY=1): KvikIO's tests import
CuPy at module level, so on a machine without a GPU they skip whole modules. With this on the
path they run their CuPy cases on host memory, which checks gdio's API (flags, errors, sizes,
offsets) everywhere a GPU is not the point. Not a GPU result: the GPU machine runs real CuPy."""

import contextlib

import numpy as _np
from numpy import *  # noqa: F401,F403
from numpy import testing  # noqa: F401


def asnumpy(a):
    return _np.asarray(a)


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1


class _Device:
    def __init__(self, n=0):
        self.id = n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return None


class cuda:  # noqa: N801
    runtime = _Runtime
    Device = _Device
    malloc_async = None

    @staticmethod
    def using_allocator(_allocator=None):
        return contextlib.nullcontext()
