"""JAX on the host (CPU backend): gdio.safetensors.flax and safe_open(framework="jax") against
the safetensors package, random data in every dtype JAX has (BF16 and FP8 through ml_dtypes),
and raw I/O with JAX arrays. test.sh installs JAX; where it is missing (the GPU machine) these
skip."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")

import safetensors.flax as ref_flax  # noqa: E402
import safetensors.numpy as ref_np  # noqa: E402

import gdio  # noqa: E402
import gdio.safetensors.flax as gst_flax  # noqa: E402
from gdio.safetensors import safe_open  # noqa: E402

# JAX keeps 32-bit integers unless x64 is enabled, so no 64-bit types here.
PLAIN = [np.float32, np.float16, np.int32, np.uint32, np.int16, np.uint16, np.int8, np.uint8,
         np.bool_, np.complex64]
ML = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def host_array(gen, dtype, shape):
    """Random bits of `dtype` (finite values only, so that equal arrays compare equal)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return gen.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "fcV" or dtype in [np.dtype(t) for t in ML]:
        return gen.standard_normal(n).astype(np.float32).astype(dtype).reshape(shape) * 3
    raw = gen.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def random_jax(seed):
    gen = np.random.default_rng(seed)
    out = {}
    for i, dt in enumerate(PLAIN + ML):
        shape = [int(gen.integers(1, 7)), int(gen.integers(1, 41))]
        out[f"w{i}.{np.dtype(dt).name}"] = jnp.asarray(host_array(gen, dt, shape))
    out["scalar"] = jnp.asarray(np.float32(gen.standard_normal()))
    out["empty"] = jnp.zeros((0, 3), dtype=jnp.bfloat16)
    return out


def bits(a):
    a = np.asarray(a)
    return a.dtype, a.shape, a.reshape(-1).view(np.uint8).tobytes()


def assert_same(got, want):
    assert set(got) == set(want)
    for k in want:
        assert isinstance(got[k], jax.Array), (k, type(got[k]))
        assert bits(got[k]) == bits(want[k]), k


def test_flax_save_file_writes_what_safetensors_writes(tmp_path):
    t = random_jax(1)
    meta = {"framework": "flax"}
    gst_flax.save_file(t, tmp_path / "g.safetensors", metadata=meta)
    # Byte for byte the file the safetensors package makes (its loaders cannot read BF16/FP8
    # back into NumPy or JAX, so its bytes are the reference).
    assert (tmp_path / "g.safetensors").read_bytes() == ref_flax.save(t, metadata=meta)
    from safetensors import safe_open as ref_open

    with ref_open(str(tmp_path / "g.safetensors"), framework="np") as f:
        assert f.metadata() == meta
        assert sorted(f.keys()) == sorted(t)
        assert f.get_slice("w10.bfloat16").get_dtype() == "BF16"
        assert f.get_slice("w11.float8_e4m3fn").get_dtype() == "F8_E4M3"
    assert_same(gst_flax.load_file(tmp_path / "g.safetensors"), t)


def test_flax_load_file_of_a_safetensors_file(tmp_path):
    t = random_jax(2)
    ref_flax.save_file(t, str(tmp_path / "r.safetensors"))
    got = gst_flax.load_file(tmp_path / "r.safetensors")
    assert_same(got, t)
    assert got["w10.bfloat16"].dtype == jnp.bfloat16
    assert got["w12.float8_e5m2"].dtype == jnp.float8_e5m2


def test_flax_bytes_round_trip_both_ways():
    t = random_jax(3)
    assert_same(gst_flax.load(ref_flax.save(t)), t)
    plain = {k: v for k, v in t.items() if np.dtype(v.dtype) in [np.dtype(d) for d in PLAIN]}
    assert_same(ref_flax.load(gst_flax.save(plain)), plain)
    # Same bytes as the safetensors package writes, BF16 and FP8 included.
    assert gst_flax.save(t, metadata={"a": "b"}) == ref_flax.save(t, metadata={"a": "b"})


def test_safe_open_jax_tensors_slices_and_completion_order(tmp_path):
    t = random_jax(4)
    ref_flax.save_file(t, str(tmp_path / "s.safetensors"))
    with safe_open(tmp_path / "s.safetensors", framework="jax") as f:
        assert f.keys() == sorted(t)
        for k in t:
            assert bits(f.get_tensor(k)) == bits(t[k]), k
        sl = f.get_slice("w0.float32")
        n = sl.get_shape()[0]
        assert bits(sl[1:n]) == bits(t["w0.float32"][1:n])
        seen = {name: arr for name, arr in f.tensors()}
    assert sorted(seen) == sorted(t)
    # Arrays handed out stay valid after the file is closed.
    for k in t:
        assert bits(seen[k]) == bits(t[k]), k


def test_write_from_a_jax_array_and_read_back(tmp_path, rng):
    gen = np.random.default_rng(rng.randrange(1 << 30))
    a = jnp.asarray(gen.standard_normal(50_001).astype(np.float32))
    path = tmp_path / "j.bin"
    off = rng.randrange(1, 1 << 16)
    with gdio.CuFile(path, "w") as f:
        assert f.pwrite(a, file_offset=off).get() == a.nbytes
    data = path.read_bytes()
    assert data[off:] == np.asarray(a).tobytes()
    assert data[:off] == bytes(off)
    host = np.empty(50_001, dtype=np.float32)
    with gdio.CuFile(path, "r") as f:
        assert f.read(host, file_offset=off) == a.nbytes
    assert np.array_equal(host, np.asarray(a))


def test_reading_into_a_jax_array_is_refused_and_leaves_it_unchanged(tmp_path, rng):
    path = tmp_path / "r.bin"
    path.write_bytes(rng.randbytes(4096))
    a = jnp.arange(1024, dtype=jnp.float32)
    before = np.asarray(a).copy()
    with gdio.CuFile(path, "r") as f:
        with pytest.raises(BufferError, match="JAX arrays are immutable"):
            f.read(a)
        with pytest.raises(BufferError, match="JAX arrays are immutable"):
            f.pread(a).get()
    assert np.array_equal(np.asarray(a), before)
