"""gdio tensors (DLPack producers over gdio's memory) -> torch, NumPy, JAX, Paddle; and through
NumPy (host memory, as the safetensors package does) TensorFlow and MLX."""

from __future__ import annotations

from typing import Any

_NAMES = {
    "pt": "pt", "torch": "pt", "pytorch": "pt",
    "np": "np", "numpy": "np",
    "jax": "jax", "flax": "jax",
    "paddle": "paddle",
    "tf": "tf", "tensorflow": "tf",
    "mlx": "mlx",
}

# safetensors dtypes torch has but cannot take through DLPack: exported as uint8 and viewed.
TORCH_VIEWS = {
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "F4": "float4_e2m1fn_x2",
}

# Dtypes every DLPack consumer takes.
DLPACK = {"BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64",
          "I64", "U64"}


def normalize(framework: str) -> str:
    try:
        return _NAMES[framework]
    except KeyError:
        raise ValueError(
            f"framework must be one of {sorted(_NAMES)}, not {framework!r}"
        ) from None


def _raw_shape(t: Any) -> list[int]:
    shape = list(t.shape)
    if not shape:
        return [t.nbytes]
    inner = 1
    for d in shape[:-1]:
        inner *= d
    return shape[:-1] + [t.nbytes // inner if inner else 0]


def to_torch(t: Any) -> Any:
    import torch

    if t.dtype == "BOOL":
        # Through uint8: torch before 2.0 does not take DLPack's bool type.
        return torch.from_dlpack(t.raw()).view(torch.bool).reshape(list(t.shape))
    if t.dtype in DLPACK:
        return torch.from_dlpack(t)
    raw = torch.from_dlpack(t.raw())
    view = getattr(torch, TORCH_VIEWS.get(t.dtype, ""), None)
    if view is not None:
        return raw.view(view).reshape(_raw_shape(t) if t.dtype == "F4" else list(t.shape))
    # A dtype torch lacks (FP6): its packed bytes, one row per last dimension.
    return raw.reshape(_raw_shape(t))


def to_numpy(t: Any) -> Any:
    import numpy as np

    if t.__dlpack_device__()[0] != 1:
        raise ValueError(f"framework 'numpy' needs device='cpu' (tensor {t.name!r})")
    if t.dtype == "BF16" or t.dtype not in DLPACK:
        raise TypeError(f"NumPy has no dtype for {t.dtype} (tensor {t.name!r})")
    return np.from_dlpack(t)


def to_jax(t: Any) -> Any:
    import jax.numpy as jnp

    if t.dtype in DLPACK:
        return jnp.from_dlpack(t)
    import ml_dtypes  # shipped with JAX
    import numpy as np

    from .numpy import ML_DTYPES

    names = {st: ml for ml, st in ML_DTYPES.items()}
    raw = jnp.from_dlpack(t.raw())
    if t.dtype in names and hasattr(ml_dtypes, names[t.dtype]):
        return raw.view(np.dtype(getattr(ml_dtypes, names[t.dtype]))).reshape(list(t.shape))
    return raw.reshape(_raw_shape(t))


def to_paddle(t: Any) -> Any:
    import paddle

    return paddle.utils.dlpack.from_dlpack(t.__dlpack__())


def convert(t: Any, framework: str) -> Any:
    if framework == "pt":
        return to_torch(t)
    if framework == "np":
        return to_numpy(t)
    if framework == "jax":
        return to_jax(t)
    if framework in ("tf", "mlx"):
        return from_numpy(to_numpy(t), framework)
    return to_paddle(t)


def from_numpy(a: Any, framework: str) -> Any:
    """A host NumPy array as a TensorFlow tensor or an MLX array (a copy, as the safetensors
    package makes)."""
    if framework == "tf":
        import tensorflow as tf

        return tf.convert_to_tensor(a)
    import mlx.core as mx

    return mx.array(a)


def convert_torch(t: Any, framework: str) -> Any:
    """A torch tensor (from a multi-rank load) in another framework, through DLPack."""
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.from_dlpack(t)
    if framework in ("tf", "mlx"):
        return from_numpy(t.cpu().numpy(), framework)
    import paddle

    return paddle.utils.dlpack.from_dlpack(t.__dlpack__())
