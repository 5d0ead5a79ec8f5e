# Type stubs of the mxpack Python package (see docs/python.md). Array
# arguments take any CPU array (ArrayLike); results follow the caller's kind.
import os
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

DTypeLike = Union[str, npt.DTypeLike, Any]
# numpy arrays, torch tensors, DLPack or buffer-protocol objects (CPU memory).
ArrayLike = Any

def formats() -> list[str]: ...
def format_info(fmt: str) -> dict: ...
def dtype_of(fmt: DTypeLike) -> Optional[np.dtype]: ...
def format_of(dtype: npt.DTypeLike) -> str: ...
def available_targets() -> list[str]: ...
def random_bits(seed: int, n: int, *, threads: Optional[int] = None) -> npt.NDArray[np.uint32]: ...
def convert(x: ArrayLike, fmt: DTypeLike, rounding: str = "rn",
            saturation: str = "satfinite", relu: bool = False, *,
            src: Optional[DTypeLike] = None, seed: int = 0,
            rbits: Optional[ArrayLike] = None,
            overflow_tie: str = "even", codes: bool = False,
            out: Optional[ArrayLike] = None,
            impl: str = "best", threads: Optional[int] = None) -> Any: ...
def encode(x: ArrayLike, fmt: DTypeLike, rounding: str = "rn",
           saturation: str = "satfinite", relu: bool = False, *,
           src: Optional[DTypeLike] = None, seed: int = 0,
           rbits: Optional[ArrayLike] = None,
           overflow_tie: str = "even", codes: bool = False,
           out: Optional[ArrayLike] = None,
           impl: str = "best", threads: Optional[int] = None) -> Any: ...
def decode(codes: ArrayLike, fmt: Optional[DTypeLike] = None,
           to: DTypeLike = np.float32, *, relu: bool = False,
           out: Optional[ArrayLike] = None,
           impl: str = "best", threads: Optional[int] = None) -> Any: ...
def has_simd_path(src: DTypeLike, fmt: DTypeLike, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False,
                  overflow_tie: str = "even") -> bool: ...

def packed_bytes(layout: str, n: int) -> int: ...
def pack(codes: ArrayLike, layout: str, *, impl: str = "best", threads: Optional[int] = None) -> Any: ...
def unpack(packed: ArrayLike, layout: str, count: Optional[int] = None, *,
           impl: str = "best", threads: Optional[int] = None) -> Any: ...
def decompress(packed: ArrayLike, layout: str, fp6_container: str = "low6", *,
               impl: str = "best", threads: Optional[int] = None) -> Any: ...
def compress(b8x16: ArrayLike, layout: str, fp6_container: str = "low6", *,
             impl: str = "best", threads: Optional[int] = None) -> Any: ...
def encode_packed(x: ArrayLike, fmt: DTypeLike, layout: str, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False, *,
                  src: Optional[DTypeLike] = None, seed: int = 0,
                  rbits: Optional[ArrayLike] = None,
                  overflow_tie: str = "even",
                  impl: str = "best", threads: Optional[int] = None) -> Any: ...
def decode_packed(packed: ArrayLike, fmt: DTypeLike, layout: str,
                  count: Optional[int] = None, to: DTypeLike = np.float32, *,
                  impl: str = "best", threads: Optional[int] = None) -> Any: ...
def decode_containers(b8x16: ArrayLike, fmt: DTypeLike, to: DTypeLike = np.float32,
                      fp6_container: str = "low6", *,
                      impl: str = "best", threads: Optional[int] = None) -> Any: ...

def reduce_spec(ptx: Optional[str] = None, model: str = "sequential", *,
                type: Optional[str] = None, op: str = "add",
                acc: str = "none") -> dict: ...
def reduce(replicas: Union[Sequence[ArrayLike], ArrayLike],
           ptx: Optional[str] = None, model: str = "sequential", *,
           type: Optional[str] = None, op: str = "add", acc: str = "none",
           impl: str = "best", threads: Optional[int] = None) -> Any: ...

class PtxCheckResult(NamedTuple):
    ok: bool
    text: str
    def __bool__(self) -> bool: ...

def ptx_check(spelling: str, target: Optional[str] = None) -> PtxCheckResult: ...

def mx_formats() -> list[str]: ...
def mx_format_info(format: str) -> dict: ...
def nvfp4_tensor_scale(x: ArrayLike, *, impl: str = "best", threads: Optional[int] = None) -> float: ...

class QuantizedTensor:
    format: str
    shape: tuple[int, ...]
    rows: int
    cols: int
    layout: str
    scale_layout: str
    scale_mode: str
    block_size: int
    elements: Any
    scales: Any
    kind: str
    tensor_scale: float
    stats: Optional[dict]
    def __init__(self, format: str, shape: Sequence[int], elements: ArrayLike,
                 scales: ArrayLike, tensor_scale: float = 1.0, *,
                 scale_mode: Optional[str] = None, layout: str = "codes",
                 scale_layout: str = "linear", stats: Optional[dict] = None,
                 kind: Optional[str] = None) -> None: ...
    def dequantize(self, to: DTypeLike = np.float32, *, impl: str = "best",
                   threads: Optional[int] = None) -> Any: ...
    def error_stats(self, x: ArrayLike) -> dict: ...

def quantize(x: ArrayLike, format: str, scale_mode: Optional[str] = None,
             layout: str = "codes", scale_layout: str = "linear", *,
             tensor_scale: Optional[float] = None, stats: bool = True,
             src: Optional[DTypeLike] = None, impl: str = "best", threads: Optional[int] = None) -> QuantizedTensor: ...

def quantize_model(in_path: Union[str, "os.PathLike[str]"], out_path: Union[str, "os.PathLike[str]"],
                   format: str = "mxfp4", scale_mode: Optional[str] = None,
                   layout: str = "tcgen05", *, include: Optional[str] = None,
                   exclude: Optional[str] = None, threads: int = 0,
                   error_stats: bool = False, impl: str = "best") -> dict: ...
def export_checkpoint(in_path: Union[str, "os.PathLike[str]"], out_path: Union[str, "os.PathLike[str]"],
                      format: Optional[str] = None, *, scheme: str = "compressed-tensors",
                      include: Optional[str] = None, ignore: Optional[str] = None,
                      dry_run: bool = False, max_shard_bytes: int = 0, threads: int = 0,
                      impl: str = "best") -> dict: ...
def dequantize_checkpoint(in_path: Union[str, "os.PathLike[str]"], out_path: Union[str, "os.PathLike[str]"],
                          to: Optional[DTypeLike] = None, *, threads: int = 0,
                          impl: str = "best") -> dict: ...
def dequantize_model(in_path: Union[str, "os.PathLike[str]"], out_path: Union[str, "os.PathLike[str]"],
                     to: Optional[DTypeLike] = None, *, threads: int = 0,
                     impl: str = "best") -> dict: ...
