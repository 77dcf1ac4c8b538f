"""process_group=: two ranks (gloo, host memory) each read a share of a sharded checkpoint and
end with every tensor. Skips without torch (fails instead when GDIO_REQUIRE_TORCH=1)."""

import json
import os
import socket

import numpy as np
import pytest

from conftest import need_torch


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, world, port, index, out):
    import torch
    import torch.distributed as dist

    import gdio.safetensors.torch as gst

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        # With the logger at DEBUG, a group load says how long each of its steps took.
        import logging

        records = []
        handler = logging.Handler()
        handler.emit = records.append
        log = logging.getLogger("gdio.safetensors")
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)
        try:
            got = gst.load_file(index, process_group=dist.group.WORLD)
        finally:
            log.removeHandler(handler)
            log.setLevel(logging.NOTSET)
        steps = [r.getMessage() for r in records]
        assert len(steps) == 1 and f"rank {rank} of {world}" in steps[0], steps
        assert all(w in steps[0] for w in ("layout", "read share", "all_gather", "views")), steps
        torch.save({k: v.clone() for k, v in got.items()}, os.path.join(out, f"rank{rank}.pt"))
        # The safetensors idiom, tensor by tensor: one group load, not one per tensor.
        from gdio.safetensors import _dist, safe_open

        calls = []
        real = _dist.load
        _dist.load = lambda *a: calls.append(1) or real(*a)
        try:
            with safe_open(index, framework="pt", process_group=dist.group.WORLD) as f:
                each = {k: f.get_tensor(k).clone() for k in f.keys()}
                streamed = {k: t.clone() for k, t in f.tensors()}
        finally:
            _dist.load = real
        assert len(calls) == 1, calls
        torch.save({"each": each, "streamed": streamed}, os.path.join(out, f"rank{rank}-each.pt"))
        # Tensor parallelism: the planned tensors come back as this rank's parts.
        plan = {"m0": 1, "m1": 0, "w0": 0}
        parts = gst.load_file(index, process_group=dist.group.WORLD, plan=plan)
        torch.save({k: v.clone() for k, v in parts.items()}, os.path.join(out, f"rank{rank}-plan.pt"))
    finally:
        dist.destroy_process_group()


def test_two_ranks_gloo(tmp_path):
    torch = need_torch()
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import safetensors.torch as ref_t

    if not dist.is_available() or not dist.is_gloo_available():
        if os.environ.get("GDIO_REQUIRE_TORCH") == "1":
            pytest.fail("GDIO_REQUIRE_TORCH=1 but this torch has no gloo backend")
        pytest.skip("this torch has no gloo backend")

    g = torch.Generator().manual_seed(11)
    tensors = {}
    for i in range(23):
        dt = [torch.float32, torch.bfloat16, torch.int64, torch.uint8, torch.float16][i % 5]
        n = int(torch.randint(1, 5000, (1,), generator=g))
        tensors[f"w{i}"] = torch.randint(-100, 100, (n,), generator=g).to(dt)
    tensors["m0"] = torch.randn(5, 7, generator=g)
    tensors["m1"] = torch.randn(9, 4, generator=g).to(torch.bfloat16)
    names = sorted(tensors)
    weight_map = {}
    for s, part in enumerate([names[:9], names[9:]]):
        fname = f"model-{s + 1:05d}-of-00002.safetensors"
        ref_t.save_file({n: tensors[n] for n in part}, str(tmp_path / fname))
        weight_map.update({n: fname for n in part})
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    mp.spawn(_rank, args=(2, _free_port(), str(index), str(tmp_path)), nprocs=2, join=True)
    for r in range(2):
        got = torch.load(tmp_path / f"rank{r}.pt")
        assert got.keys() == tensors.keys()
        for k in tensors:
            assert got[k].dtype == tensors[k].dtype and torch.equal(got[k], tensors[k]), (r, k)
        both = torch.load(tmp_path / f"rank{r}-each.pt")
        for how in ("each", "streamed"):
            assert both[how].keys() == tensors.keys(), (r, how)
            for k in tensors:
                assert torch.equal(both[how][k], tensors[k]), (r, how, k)
        parts = torch.load(tmp_path / f"rank{r}-plan.pt")
        assert parts.keys() == tensors.keys()
        plan = {"m0": 1, "m1": 0, "w0": 0}
        for k in tensors:
            want = torch.tensor_split(tensors[k], 2, dim=plan[k])[r] if k in plan else tensors[k]
            assert parts[k].dtype == want.dtype and torch.equal(parts[k], want), (r, k)
