# Type stubs of the mxpack Python package (see docs/python.md).
import os
from typing import NamedTuple, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

DTypeLike = Union[str, npt.DTypeLike]

def formats() -> list[str]: ...
def format_info(fmt: str) -> dict: ...
def dtype_of(fmt: DTypeLike) -> Optional[np.dtype]: ...
def format_of(dtype: npt.DTypeLike) -> str: ...
def available_targets() -> list[str]: ...
def random_bits(seed: int, n: int) -> npt.NDArray[np.uint32]: ...
def convert(x: np.ndarray, fmt: DTypeLike, rounding: str = "rn",
            saturation: str = "satfinite", relu: bool = False, *,
            src: Optional[DTypeLike] = None, seed: int = 0,
            rbits: Optional[npt.NDArray[np.uint32]] = None,
            overflow_tie: str = "even", codes: bool = False,
            out: Optional[np.ndarray] = None,
            impl: str = "best") -> np.ndarray: ...
def encode(x: np.ndarray, fmt: DTypeLike, rounding: str = "rn",
           saturation: str = "satfinite", relu: bool = False, *,
           src: Optional[DTypeLike] = None, seed: int = 0,
           rbits: Optional[npt.NDArray[np.uint32]] = None,
           overflow_tie: str = "even", codes: bool = False,
           out: Optional[np.ndarray] = None,
           impl: str = "best") -> np.ndarray: ...
def decode(codes: np.ndarray, fmt: Optional[DTypeLike] = None,
           to: DTypeLike = np.float32, *, relu: bool = False,
           out: Optional[np.ndarray] = None,
           impl: str = "best") -> np.ndarray: ...
def has_simd_path(src: DTypeLike, fmt: DTypeLike, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False,
                  overflow_tie: str = "even") -> bool: ...

def packed_bytes(layout: str, n: int) -> int: ...
def pack(codes: np.ndarray, layout: str, *, impl: str = "best") -> npt.NDArray[np.uint8]: ...
def unpack(packed: np.ndarray, layout: str, count: Optional[int] = None, *,
           impl: str = "best") -> npt.NDArray[np.uint8]: ...
def decompress(packed: np.ndarray, layout: str, fp6_container: str = "low6", *,
               impl: str = "best") -> npt.NDArray[np.uint8]: ...
def compress(b8x16: np.ndarray, layout: str, fp6_container: str = "low6", *,
             impl: str = "best") -> npt.NDArray[np.uint8]: ...
def encode_packed(x: np.ndarray, fmt: DTypeLike, layout: str, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False, *,
                  src: Optional[DTypeLike] = None, seed: int = 0,
                  rbits: Optional[npt.NDArray[np.uint32]] = None,
                  overflow_tie: str = "even",
                  impl: str = "best") -> npt.NDArray[np.uint8]: ...
def decode_packed(packed: np.ndarray, fmt: DTypeLike, layout: str,
                  count: Optional[int] = None, to: DTypeLike = np.float32, *,
                  impl: str = "best") -> np.ndarray: ...
def decode_containers(b8x16: np.ndarray, fmt: DTypeLike, to: DTypeLike = np.float32,
                      fp6_container: str = "low6", *,
                      impl: str = "best") -> np.ndarray: ...

def reduce_spec(ptx: Optional[str] = None, model: str = "sequential", *,
                type: Optional[str] = None, op: str = "add",
                acc: str = "none") -> dict: ...
def reduce(replicas: Union[Sequence[np.ndarray], np.ndarray],
           ptx: Optional[str] = None, model: str = "sequential", *,
           type: Optional[str] = None, op: str = "add", acc: str = "none",
           impl: str = "best") -> np.ndarray: ...

class PtxCheckResult(NamedTuple):
    ok: bool
    text: str
    def __bool__(self) -> bool: ...

def ptx_check(spelling: str, target: Optional[str] = None) -> PtxCheckResult: ...

def mx_formats() -> list[str]: ...
def mx_format_info(format: str) -> dict: ...
def nvfp4_tensor_scale(x: np.ndarray, *, impl: str = "best") -> float: ...

class QuantizedTensor:
    format: str
    shape: tuple[int, ...]
    rows: int
    cols: int
    layout: str
    scale_layout: str
    scale_mode: str
    block_size: int
    elements: npt.NDArray[np.uint8]
    scales: npt.NDArray[np.uint8]
    tensor_scale: float
    stats: Optional[dict]
    def __init__(self, format: str, shape: Sequence[int], elements: np.ndarray,
                 scales: np.ndarray, tensor_scale: float = 1.0, *,
                 scale_mode: Optional[str] = None, layout: str = "codes",
                 scale_layout: str = "linear", stats: Optional[dict] = None) -> None: ...
    def dequantize(self, to: DTypeLike = np.float32, *, impl: str = "best") -> np.ndarray: ...
    def error_stats(self, x: np.ndarray) -> dict: ...

def quantize(x: np.ndarray, format: str, scale_mode: Optional[str] = None,
             layout: str = "codes", scale_layout: str = "linear", *,
             tensor_scale: Optional[float] = None, stats: bool = True,
             src: Optional[DTypeLike] = None, impl: str = "best") -> QuantizedTensor: ...

def quantize_model(in_path: Union[str, "os.PathLike[str]"], out_path: Union[str, "os.PathLike[str]"],
                   format: str = "mxfp4", scale_mode: Optional[str] = None,
                   layout: str = "tcgen05", *, include: Optional[str] = None,
                   exclude: Optional[str] = None, threads: int = 0,
                   error_stats: bool = False, impl: str = "best") -> dict: ...
def dequantize_model(in_path: Union[str, "os.PathLike[str]"], out_path: Union[str, "os.PathLike[str]"],
                     to: Optional[DTypeLike] = None, *, threads: int = 0,
                     impl: str = "best") -> dict: ...
