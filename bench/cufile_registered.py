#!/usr/bin/env python3
"""What buffer registration saves: cuFileRead of small requests into a device buffer, with and
without cuFileBufRegister, through whichever libcufile.so.0 is loaded (LD_PRELOAD gdio's).
Prints one JSON line per (size, registered).

usage: cufile_registered.py FILE [ITERATIONS]
"""
import ctypes
import json
import os
import sys
import time

import cupy


class Err(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class Descr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("handle", ctypes.c_void_p), ("fs_ops", ctypes.c_void_p)]


def main():
    path, iters = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    lib = ctypes.CDLL("libcufile.so.0", use_errno=True)
    for name, res in [("cuFileHandleRegister", Err), ("cuFileBufRegister", Err), ("cuFileBufDeregister", Err),
                      ("cuFileDriverOpen", Err), ("cuFileDriverClose_v2", Err)]:
        getattr(lib, name).restype = res
    lib.cuFileRead.restype = ctypes.c_ssize_t
    lib.cuFileRead.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_int64]
    lib.cuFileHandleDeregister.argtypes = [ctypes.c_void_p]
    lib.cuFileBufRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.cuFileBufDeregister.argtypes = [ctypes.c_void_p]
    assert lib.cuFileDriverOpen().err == 0
    fd = os.open(path, os.O_RDONLY)
    fh = ctypes.c_void_p()
    d = Descr(1, fd, None)
    assert lib.cuFileHandleRegister(ctypes.byref(fh), ctypes.byref(d)).err == 0
    buf = cupy.empty(1 << 20, dtype=cupy.uint8)
    ptr = buf.data.ptr
    for size in (4096, 65536, 1 << 20):
        for registered in (False, True):
            if registered:
                assert lib.cuFileBufRegister(ptr, 1 << 20, 0).err == 0
            n = max(200, iters * 4096 // size)
            for _ in range(50):
                lib.cuFileRead(fh, ptr, size, 0, 0)
            t = time.perf_counter()
            for i in range(n):
                r = lib.cuFileRead(fh, ptr, size, (i * size) % (1 << 30), 0)
                assert r == size, r
            dt = (time.perf_counter() - t) / n
            if registered:
                assert lib.cuFileBufDeregister(ptr).err == 0
            print(json.dumps({"test": "cufile_read_registered", "size": size, "registered": registered,
                              "us_per_call": dt * 1e6}), flush=True)
    lib.cuFileHandleDeregister(fh)
    os.close(fd)
    lib.cuFileDriverClose_v2()


if __name__ == "__main__":
    main()
