"""safetensors through gdio: the ``safetensors`` package's API, loading with gdio's engine.

Change ``from safetensors import safe_open`` to ``from gdio.safetensors import safe_open``
and ``safetensors.torch`` / ``safetensors.numpy`` / ``safetensors.flax`` to
``gdio.safetensors.torch`` / ``.numpy`` / ``.flax``: the functions take the same arguments and
return the same types. Tensors are zero-copy views (DLPack) of gdio's allocations, which
stay alive while any tensor uses them; FP8/FP4 come out as torch's float8/float4 dtypes
(exported as ``uint8`` and viewed). ``safe_open`` adds ``tensors()`` (completion order),
multi-file checkpoints (a list, a directory or an index) and ``process_group=``.
"""

from ._open import Slice, parse_device, safe_open

__all__ = ["Slice", "parse_device", "safe_open"]
