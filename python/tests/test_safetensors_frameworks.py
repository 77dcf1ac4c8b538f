"""gdio.safetensors.tensorflow, .mlx and .paddle against the safetensors package's files, with
stand-ins for the frameworks (none is installed in CI): what each module hands the framework
and takes from it, random data, round trips both ways."""

import sys
import types

import numpy as np
import pytest
import safetensors.numpy as ref_np


class Held:
    """A framework tensor stand-in: holds a NumPy array the way each framework gives one back."""

    def __init__(self, a, place="cpu"):
        self.a, self.place = np.asarray(a), place

    def numpy(self):
        return self.a

    def detach(self):
        return self

    def cpu(self):
        return self

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


class Capsule:
    """Gives NumPy the DLPack capsule a framework's `from_dlpack(capsule)` receives."""

    def __init__(self, c):
        self.c = c

    def __dlpack__(self, **_kw):
        return self.c

    def __dlpack_device__(self):
        return (1, 0)


@pytest.fixture
def frameworks(monkeypatch):
    tf = types.ModuleType("tensorflow")
    tf.convert_to_tensor = lambda a: Held(np.array(a, copy=True))
    mlx, mx = types.ModuleType("mlx"), types.ModuleType("mlx.core")
    mx.array = lambda a: Held(np.array(a, copy=True))
    mlx.core = mx
    paddle = types.ModuleType("paddle")
    paddle.to_tensor = lambda a, place="cpu": Held(np.array(a, copy=True), place)
    paddle.utils = types.SimpleNamespace(
        dlpack=types.SimpleNamespace(from_dlpack=lambda c: Held(np.from_dlpack(Capsule(c))))
    )
    for name, m in (("tensorflow", tf), ("mlx", mlx), ("mlx.core", mx), ("paddle", paddle)):
        monkeypatch.setitem(sys.modules, name, m)


def _random(seed):
    g = np.random.default_rng(seed)
    out = {
        "f32": g.standard_normal((7, 5)).astype(np.float32),
        "i64": g.integers(-1000, 1000, (33,), dtype=np.int64),
        "u8": g.integers(0, 256, (3, 4, 5), dtype=np.uint8),
        "f16": g.standard_normal((9,)).astype(np.float16),
    }
    return out


@pytest.mark.parametrize("module", ["tensorflow", "mlx", "paddle"])
def test_save_and_load_round_trip_against_the_package(tmp_path, frameworks, module):
    import importlib

    m = importlib.import_module(f"gdio.safetensors.{module}")
    want = _random({"tensorflow": 1, "mlx": 2, "paddle": 3}[module])
    held = {k: Held(v) for k, v in want.items()}
    p = tmp_path / "m.safetensors"
    m.save_file(held, str(p), metadata={"by": module})
    ref = ref_np.load_file(str(p))
    assert ref.keys() == want.keys()
    for k in want:
        assert ref[k].dtype == want[k].dtype and np.array_equal(ref[k], want[k]), k
    got = m.load_file(str(p))
    assert got.keys() == want.keys()
    for k in want:
        assert isinstance(got[k], Held), (module, k)
        a = np.asarray(got[k])
        assert a.dtype == want[k].dtype and np.array_equal(a, want[k]), (module, k)
    raw = m.save(held)
    assert ref_np.load(raw).keys() == want.keys()
    back = m.load(raw)
    for k in want:
        assert np.array_equal(np.asarray(back[k]), want[k]), (module, k)


def test_paddle_load_puts_tensors_where_asked(tmp_path, frameworks):
    import gdio.safetensors.paddle as gp

    want = _random(5)
    back = gp.load(ref_np.save(want), device="gpu:1")
    assert all(t.place == "gpu:1" for t in back.values())


@pytest.mark.parametrize("framework", ["tf", "tensorflow", "mlx"])
def test_safe_open_hands_tf_and_mlx_their_arrays(tmp_path, frameworks, framework):
    from gdio.safetensors import safe_open

    want = _random(11)
    p = tmp_path / "m.safetensors"
    ref_np.save_file(want, str(p))
    with safe_open(str(p), framework=framework) as f:
        for k in want:
            t = f.get_tensor(k)
            assert isinstance(t, Held) and np.array_equal(np.asarray(t), want[k]), (framework, k)
        streamed = dict(f.tensors())
    assert streamed.keys() == want.keys()
    assert all(np.array_equal(np.asarray(streamed[k]), want[k]) for k in want)
