"""safetensors through gdio: the ``safetensors`` package's API, loading with gdio's engine.

Change ``from safetensors import safe_open`` to ``from gdio.safetensors import safe_open``
and ``safetensors.torch`` / ``safetensors.numpy`` / ``safetensors.flax`` to
``gdio.safetensors.torch`` / ``.numpy`` / ``.flax``: the functions take the same arguments and
return the same types. Tensors are zero-copy views (DLPack) of gdio's allocations, which
stay alive while any tensor uses them; FP8/FP4 come out as torch's float8/float4 dtypes
(exported as ``uint8`` and viewed). ``safe_open`` adds ``tensors()`` (completion order),
multi-file checkpoints (a list, a directory or an index) and ``process_group=``. The
package's low-level API is here too: ``SafetensorError`` (gdio's errors for a malformed file
are also this), ``TensorSpec``, ``serialize``, ``serialize_file``, ``deserialize`` and
``_safe_open_handle`` (a file object).
"""

from .._errors import SafetensorError
from ._handle import _safe_open_handle
from ._open import Slice, parse_device, safe_open
from ._raw import TensorSpec, deserialize, serialize, serialize_file

__version__ = "0.8.0"
"""The version of the ``safetensors`` package whose API this module follows (code that checks
``safetensors.__version__`` for a feature sees the features it has)."""

__all__ = [
    "SafetensorError",
    "Slice",
    "TensorSpec",
    "_safe_open_handle",
    "deserialize",
    "parse_device",
    "safe_open",
    "serialize",
    "serialize_file",
]
