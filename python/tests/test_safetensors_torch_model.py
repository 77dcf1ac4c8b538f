"""gdio.safetensors.torch's model functions against the safetensors package on the host:
``save_model`` with tied weights writes the tensors, names and metadata the package writes,
``load_model`` restores random weights and returns what the package returns (strict and not),
aliases that no tensor covers whole are refused by both, ``storage_ptr``/``storage_size`` agree,
and every loader refuses a ``backend=`` the package refuses (nothing written or loaded)."""

import numpy as np
import pytest
import safetensors.numpy as ref_np

import gdio.safetensors.numpy as gst_np
from gdio.safetensors import safe_open

from conftest import need_torch


def tied_model(torch, seed):
    torch.manual_seed(seed)

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(37, 16)
            self.mid = torch.nn.Linear(16, 24)
            self.head = torch.nn.Linear(16, 37, bias=False)
            self.head.weight = self.embed.weight  # tied, as language models tie them
            self.register_buffer("steps", torch.randint(0, 1 << 30, (5,)))

    return Tied()


def test_save_model_with_tied_weights_writes_what_the_package_writes(tmp_path):
    torch = need_torch()
    import safetensors.torch as ref
    import gdio.safetensors.torch as gst

    model = tied_model(torch, 11)
    gst.save_model(model, tmp_path / "gdio.safetensors", metadata={"note": "x"})
    ref.save_model(model, str(tmp_path / "ref.safetensors"), metadata={"note": "x"})
    got = ref.load_file(str(tmp_path / "gdio.safetensors"))
    want = ref.load_file(str(tmp_path / "ref.safetensors"))
    assert sorted(got) == sorted(want)
    assert "head.weight" not in got and "embed.weight" in got
    for k in want:
        assert torch.equal(got[k], want[k]), k
    from safetensors import safe_open as ref_open
    with ref_open(str(tmp_path / "gdio.safetensors"), "pt") as a, \
            ref_open(str(tmp_path / "ref.safetensors"), "pt") as b:
        assert a.metadata() == b.metadata() == {"note": "x", "head.weight": "embed.weight"}


@pytest.mark.parametrize("strict", [True, False])
def test_load_model_restores_random_weights_and_reports_like_the_package(tmp_path, strict):
    torch = need_torch()
    import safetensors.torch as ref
    import gdio.safetensors.torch as gst

    src = tied_model(torch, 12)
    path = tmp_path / "m.safetensors"
    gst.save_model(src, path)
    dst = tied_model(torch, 13)
    assert not torch.equal(dst.mid.weight, src.mid.weight)
    assert gst.load_model(dst, path, strict=strict) == (set(), [])
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert torch.equal(a, b), k
    assert dst.head.weight is dst.embed.weight, "the tie was broken"

    # A file without a tensor the model has, and with one it has not: the same answer.
    state = {k: v.clone() for k, v in src.state_dict().items() if k not in ("mid.bias", "head.weight")}
    state["extra"] = torch.randn(3)
    ref.save_file(state, str(tmp_path / "odd.safetensors"))
    outcomes = []
    for mod in (gst, ref):
        m = tied_model(torch, 14)
        before = m.mid.bias.clone()
        try:
            outcomes.append(("ok", mod.load_model(m, str(tmp_path / "odd.safetensors"), strict=strict)))
        except RuntimeError as e:
            outcomes.append(("error", str(e)))
        if not strict:
            assert torch.equal(m.mid.bias, before), "a missing tensor was overwritten"
            assert torch.equal(m.mid.weight, src.mid.weight)
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == ("error" if strict else "ok")
    if strict:
        assert '"mid.bias"' in outcomes[0][1] and '"extra"' in outcomes[0][1]


def test_aliases_that_no_tensor_covers_whole_are_refused_and_nothing_is_written(tmp_path):
    torch = need_torch()
    import safetensors.torch as ref
    import gdio.safetensors.torch as gst

    class Overlap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            base = torch.randn(10)
            self.a = torch.nn.Parameter(base[:6])
            self.b = torch.nn.Parameter(base[4:])

    m = Overlap()
    with pytest.raises(RuntimeError, match="no suitable name to keep"):
        ref.save_model(m, str(tmp_path / "ref.safetensors"))
    with pytest.raises(RuntimeError, match="no suitable name to keep"):
        gst.save_model(m, tmp_path / "gdio.safetensors")
    assert not (tmp_path / "gdio.safetensors").exists()


def test_storage_ptr_and_size_agree_with_the_package():
    torch = need_torch()
    import safetensors.torch as ref
    import gdio.safetensors.torch as gst

    base = torch.randn(8, 9)
    for t in (base, base[2:5], base[:, 3], base.t(), torch.empty(0), torch.arange(7, dtype=torch.int16)):
        assert gst.storage_ptr(t) == ref.storage_ptr(t)
        assert gst.storage_size(t) == ref.storage_size(t)


def test_an_unknown_backend_is_refused_by_every_loader_and_the_known_ones_load(tmp_path):
    gen = np.random.default_rng(5)
    arrays = {"a": gen.standard_normal((7, 3)).astype(np.float32), "b": gen.integers(0, 9, 11)}
    path = tmp_path / "x.safetensors"
    ref_np.save_file(arrays, str(path))
    for backend in ("mmap", "pread"):
        got = gst_np.load_file(path, backend=backend)
        assert all(np.array_equal(got[k], arrays[k]) for k in arrays)
        with safe_open(path, framework="np", backend=backend) as f:
            assert np.array_equal(f.get_tensor("b"), arrays["b"])
    with pytest.raises(ValueError, match='backend "pre-read" is invalid'):
        gst_np.load_file(path, backend="pre-read")
    with pytest.raises(ValueError, match="invalid"):
        safe_open(path, framework="np", backend="mmapp")
    with pytest.raises(TypeError):
        gst_np.load_file(path, bakend="mmap")  # a misspelt keyword is not swallowed
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    import gdio.safetensors.torch as gst
    with pytest.raises(ValueError, match="invalid"):
        gst.load_file(path, backend="bogus")
    assert np.array_equal(gst.load_file(path, backend="pread")["a"].numpy(), arrays["a"])
