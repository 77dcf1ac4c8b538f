"""The safetensors package's low-level API in gdio.safetensors (TensorSpec, serialize,
serialize_file, deserialize, _safe_open_handle, SafetensorError) against the package itself,
and gdio's errors as the OSError subclasses of their errno."""

import io
import pickle

import numpy as np
import pytest
import safetensors as pkg

import gdio
from gdio import safetensors as gst


def _specs(arrays, lib):
    return {
        k: lib.TensorSpec(dtype=a.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
        for k, a in arrays.items()
    }


def _arrays(rng):
    g = np.random.default_rng(rng.randrange(1 << 30))
    return {
        "w.f32": g.standard_normal((17, 33)).astype(np.float32),
        "b.u8": g.integers(0, 256, 1000, dtype=np.uint8),
        "i64": g.integers(-(1 << 40), 1 << 40, (3, 5, 7), dtype=np.int64),
        "f16": g.standard_normal(129).astype(np.float16),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "flag": np.asarray(True),
    }


def test_serialize_writes_the_package_s_bytes(tmp_path, rng):
    arrays = _arrays(rng)
    # One metadata key: the package keeps metadata in a hash map, so with several keys its
    # order (and the bytes) changes from one process to the next.
    meta = {"format": "np"}
    ours = gst.serialize(_specs(arrays, gst), metadata=meta)
    theirs = pkg.serialize(_specs(arrays, pkg), metadata=meta)
    assert ours == theirs
    several = {"format": "np", "note": "random", "seed": str(rng.random())}
    data = gst.serialize(_specs(arrays, gst), metadata=several)
    with gst._safe_open_handle(io.BytesIO(data), framework="np") as f:
        assert f.metadata() == several
    assert gst.deserialize(data) == sorted(pkg.deserialize(data), key=lambda t: t[0])
    gst.serialize_file(_specs(arrays, gst), tmp_path / "a.safetensors", metadata=meta)
    assert (tmp_path / "a.safetensors").read_bytes() == theirs
    # The package lists tensors in no set order (a hash map's); gdio in name order.
    assert gst.deserialize(theirs) == sorted(pkg.deserialize(theirs), key=lambda t: t[0])
    spec = gst.TensorSpec(dtype="float32", shape=[2, 3], data_ptr=8, data_len=24)
    assert (spec.dtype, spec.shape, spec.data_ptr, spec.data_len) == ("F32", [2, 3], 8, 24)
    # Two F4 values per byte: the storage shape's last dimension is doubled.
    assert gst.TensorSpec(dtype="float4_e2m1fn_x2", shape=[3, 4], data_ptr=8, data_len=12).shape == [3, 8]


def test_bad_specs_and_buffers_are_refused(tmp_path, rng):
    with pytest.raises(gst.SafetensorError, match="unknown dtype 'nonsense'"):
        gst.TensorSpec(dtype="nonsense", shape=[1], data_ptr=0, data_len=0)
    with pytest.raises(TypeError, match="must be a TensorSpec"):
        gst.serialize({"t": {"dtype": "float32", "shape": [1], "data_ptr": 0, "data_len": 0}})
    a = np.arange(10, dtype=np.float32)
    short = gst.TensorSpec(dtype="float32", shape=[10], data_ptr=a.ctypes.data, data_len=36)
    path = tmp_path / "never.safetensors"
    with pytest.raises(gst.SafetensorError, match="holds 40 bytes, not data_len 36"):
        gst.serialize_file({"t": short}, path)
    assert not path.exists(), "a refused serialize_file wrote a file"
    good = pkg.serialize(_specs(_arrays(rng), pkg))
    for bad in (b"\x01", good[:8] + b"[" + good[9:], good[:-1]):
        with pytest.raises(gst.SafetensorError, match="Error while deserializing"):
            gst.deserialize(bad)


def test_safe_open_handle_reads_file_objects(tmp_path, rng):
    arrays = {k: v for k, v in _arrays(rng).items() if k != "flag"}
    data = pkg.serialize(_specs(arrays, pkg), metadata={"m": "1"})
    path = tmp_path / "h.safetensors"
    path.write_bytes(data)
    with open(path, "r") as text, open(path, "rb") as binary:  # a path name: safe_open
        for f in (text, binary, io.BytesIO(data)):  # BytesIO: read through the object
            with gst._safe_open_handle(f, framework="np", device="cpu") as g:
                assert g.keys() == sorted(arrays)
                assert g.metadata() == {"m": "1"}
                for k, a in arrays.items():
                    got = g.get_tensor(k)
                    assert got.dtype == a.dtype and got.shape == a.shape
                    assert got.tobytes() == a.tobytes()
    with pytest.raises(gst.SafetensorError, match="deserializing header"):
        gst._safe_open_handle(io.BytesIO(data[:8] + b"[" + data[9:]), framework="np")


def test_malformed_files_closed_handles_and_bad_slices_are_safetensor_errors(tmp_path, rng):
    arrays = _arrays(rng)
    data = pkg.serialize(_specs(arrays, pkg))
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(data[:8] + b"{" * 4 + data[12:])
    for t in (gst.SafetensorError, gdio.GdioError, RuntimeError):
        with pytest.raises(t, match="malformed safetensors file"):
            gst.safe_open(bad, framework="np")
    good = tmp_path / "good.safetensors"
    good.write_bytes(data)
    with gst.safe_open(good, framework="np") as f:
        s = f.get_slice("w.f32")
        for t in (gst.SafetensorError, IndexError):
            with pytest.raises(t, match="shape \\[17, 33\\]"):
                s[17]
        assert s[3:5].tobytes() == arrays["w.f32"][3:5].tobytes()
    for call in (f.keys, lambda: f.get_tensor("b.u8"), lambda: s[1], f.metadata):
        with pytest.raises(gst.SafetensorError, match="File is closed"):
            call()


def test_errors_are_the_os_subclass_of_their_errno(tmp_path):
    missing = tmp_path / "missing.bin"
    for t in (FileNotFoundError, gdio.GdioError, RuntimeError):
        with pytest.raises(t, match="no such file"):
            gdio.CuFile(missing)
    with pytest.raises(FileNotFoundError) as e:
        gst.safe_open(missing, framework="np")
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is type(e.value) and isinstance(back, FileNotFoundError)
    assert (back.errno, back.filename, str(back)) == (e.value.errno, e.value.filename, str(e.value))
    with pytest.raises(IsADirectoryError):
        gdio.CuFile(tmp_path)
