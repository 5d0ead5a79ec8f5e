"""Array interchange of the mxpack package: any CPU array in, the caller's
kind of array out, without copies.

Inputs may be numpy arrays, torch tensors, objects that speak DLPack
(``__dlpack__``) or the buffer protocol / ``__array_interface__`` (memoryview,
bytearray, array.array, ...). Each becomes a numpy array over the same memory
(``numpy.from_dlpack``, ``Tensor.numpy()`` or ``numpy.asarray``); torch
dtypes numpy does not have (bfloat16, float8_*, float4_e2m1fn_x2) are viewed
as unsigned integers of their size first and carry their mxpack format along.
Results are numpy arrays that the C++ library wrote; for torch callers they
are handed back as torch tensors over the same memory
(``torch.from_numpy(...).view(dtype)``), with torch's dtype of the format
where torch has one and uint8 otherwise. torch is imported only when the
caller passed a torch tensor, so the package never requires it.
"""

from __future__ import annotations

import sys
from typing import NamedTuple, Optional

import numpy as np

# DLPack device types that are host memory: kDLCPU, kDLCUDAHost (pinned),
# kDLCUDAManaged is not host-only and is refused.
_DLPACK_HOST_DEVICES = (1, 3)

NUMPY, TORCH = "numpy", "torch"


class Array(NamedTuple):
    """An input as a numpy array over the caller's memory.

    fmt: the mxpack format its dtype stands for when numpy cannot say it
      (torch bfloat16 / float8 / packed fp4 viewed as unsigned integers);
      "e2m1x2" marks two packed e2m1 codes per byte. None otherwise.
    kind: "torch" when the caller passed a torch tensor (results go back as
      torch tensors), else "numpy".
    """
    a: np.ndarray
    fmt: Optional[str]
    kind: str


def _torch():
    return sys.modules.get("torch")


def is_torch_tensor(x) -> bool:
    t = _torch()
    return t is not None and isinstance(x, t.Tensor)


# torch dtype name -> (unsigned view width in bytes, mxpack format). Names,
# not objects, so older torch versions without a dtype still work.
_TORCH_IN = {
    "bfloat16": (2, "bf16"),
    "float8_e4m3fn": (1, "e4m3"),
    "float8_e5m2": (1, "e5m2"),
    "float8_e8m0fnu": (1, "ue8m0"),
    "float4_e2m1fn_x2": (1, "e2m1x2"),
}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _torch_to_numpy(x, arg: str) -> Array:
    torch = _torch()
    if x.device.type != "cpu":
        raise ValueError(
            f"{arg}: expected a CPU tensor, got a tensor on device '{x.device}' "
            f"(this mxpack build has no GPU path; pass {arg}.cpu())")
    if x.layout != torch.strided:
        raise TypeError(f"{arg}: expected a dense (strided) tensor, got layout {x.layout}")
    if not x.is_contiguous():
        raise ValueError(
            f"{arg}: expected a C-contiguous tensor, got shape {tuple(x.shape)} with "
            f"element strides {tuple(x.stride())}; pass {arg}.contiguous()")
    x = x.detach()
    name = str(x.dtype).replace("torch.", "")
    if name in _TORCH_IN:
        width, fmt = _TORCH_IN[name]
        view = x.view(torch.uint8 if width == 1 else torch.int16)
        a = view.numpy()
        return Array(a.view(_UINT[width]), fmt, TORCH)
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    try:
        a = np.from_dlpack(x)
    except (TypeError, RuntimeError, BufferError):
        a = x.numpy()
    return Array(a, None, TORCH)


def as_array(x, arg: str) -> Array:
    """Any CPU array -> Array (numpy view of the same memory). TypeError for
    objects that are not arrays, ValueError (naming `arg`) for arrays in
    device memory."""
    if isinstance(x, np.ndarray):
        return Array(x, None, NUMPY)
    if is_torch_tensor(x):
        return _torch_to_numpy(x, arg)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev = x.__dlpack_device__()
        if int(dev[0]) not in _DLPACK_HOST_DEVICES:
            raise ValueError(
                f"{arg}: expected an array in CPU memory, got DLPack device "
                f"{tuple(int(d) for d in dev)} (this mxpack build has no GPU path)")
        try:
            return Array(np.from_dlpack(x), None, NUMPY)
        except (TypeError, RuntimeError, BufferError) as e:
            if not hasattr(x, "__array_interface__"):
                raise TypeError(f"{arg}: numpy cannot view this DLPack array: {e}") from None
    if hasattr(x, "__array_interface__") or hasattr(x, "__array_struct__"):
        return Array(np.asarray(x), None, NUMPY)
    try:
        memoryview(x)
    except TypeError:
        raise TypeError(
            f"{arg}: expected an array (numpy.ndarray, torch.Tensor, or an object "
            f"with __dlpack__, __array_interface__ or the buffer protocol), got "
            f"{type(x).__name__}") from None
    return Array(np.asarray(memoryview(x)), None, NUMPY)


# mxpack format -> torch dtype name of results for torch callers (others:
# uint8 codes, or the unsigned integer of the element size).
_TORCH_OUT = {
    "f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
    "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "ue8m0": "float8_e8m0fnu",
    "e2m1x2": "float4_e2m1fn_x2",
}


def torch_dtype(fmt: Optional[str]):
    """torch's dtype for results of `fmt`, or None where torch has none."""
    torch = _torch()
    name = _TORCH_OUT.get(fmt or "")
    return getattr(torch, name, None) if name else None


def to_torch(a: np.ndarray, fmt: Optional[str] = None):
    """A torch tensor over the memory of the numpy result `a`, typed as
    torch's dtype of `fmt` (when given and torch has it) or as a's own
    dtype (unsigned integers wider than a byte: torch's unsigned type of
    that width)."""
    torch = _torch()
    size = a.dtype.itemsize
    dt = torch_dtype(fmt)
    if dt is None and a.dtype.kind in "fiub" and a.dtype.name in (
            "float16", "float32", "float64", "uint8", "int8", "int16", "int32",
            "int64", "bool"):
        return torch.from_numpy(a)
    if dt is None:
        dt = getattr(torch, f"uint{8 * size}", None)
    # torch.from_numpy takes signed integers of every width; view from there.
    base = torch.from_numpy(a.view(_INT[size] if size > 1 else np.uint8))
    return base.view(dt) if dt is not None and dt.itemsize == size else base


def wrap(a: np.ndarray, kind: str, fmt: Optional[str] = None):
    """Result `a` (numpy) in the caller's kind."""
    if kind == TORCH:
        return to_torch(a, fmt)
    return a
