"""mxpack: bit-exact conversion, packing and reduction of microscaling floats.

numpy in, numpy out. Every function here maps numpy dtypes to mxpack format
names, allocates the output and calls the C++ library (``mxpack._mxpack``),
which reads the input buffer in place (C-contiguous arrays only) and runs its
kernels with the GIL released. Errors of the C++ library raise ``ValueError``
with its message; wrong dtypes raise ``TypeError``.

Formats: e2m1, e2m3, e3m2, e4m3, e5m2, ue8m0, ue4m3 (narrow: one code per
byte), f16, bf16, f32 and f64 (encode source only). ml_dtypes spellings
(``float8_e4m3fn``, ...) are accepted as names; when ml_dtypes is installed,
arrays of its dtypes are accepted and returned.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _mxpack

try:  # Optional: the numpy dtypes of JAX & co. for these formats.
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    _ml_dtypes = None

__all__ = [
    "formats", "format_info", "dtype_of", "format_of", "available_targets",
    "encode", "decode", "convert", "random_bits", "has_simd_path",
    "pack", "unpack", "packed_bytes", "decompress", "compress",
    "encode_packed", "decode_packed", "decode_containers",
    "reduce", "reduce_spec", "PtxCheckResult", "ptx_check",
    "mx_formats", "mx_format_info", "QuantizedTensor", "quantize",
    "nvfp4_tensor_scale", "quantize_model", "dequantize_model",
]

_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def formats() -> list:
    """Canonical names of every format, in the C++ enum order."""
    return list(_mxpack.format_names())


def format_info(fmt: str) -> dict:
    """Traits of a format (bits, exponent/mantissa bits, bias, max code, ...)."""
    return dict(_mxpack.format_info(_name(fmt, "fmt")))


def available_targets() -> list:
    """SIMD targets compiled into mxpack that this CPU supports, best first.

    Any of them (or "best", "scalar") can be passed as ``impl=``."""
    return list(_mxpack.available_targets())


def _name(value, arg: str) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"{arg}: expected a format name (str), got {type(value).__name__}")


def _build_dtype_tables():
    by_format, by_dtype = {}, {}
    for name in _mxpack.format_names():
        spelling = _mxpack.format_info(name)["ml_dtypes"]
        dt = None
        if spelling in ("float16", "float32", "float64"):
            dt = np.dtype(spelling)
        elif _ml_dtypes is not None and hasattr(_ml_dtypes, spelling):
            dt = np.dtype(getattr(_ml_dtypes, spelling))
        if dt is not None:
            by_format[name] = dt
            by_dtype[dt] = name
    return by_format, by_dtype


_DTYPE_OF_FORMAT, _FORMAT_OF_DTYPE = _build_dtype_tables()


def dtype_of(fmt: str) -> Optional[np.dtype]:
    """The numpy / ml_dtypes dtype of a format, or None (ue4m3, or ml_dtypes
    not installed)."""
    return _DTYPE_OF_FORMAT.get(_canonical_arg(fmt, "fmt"))


def format_of(dtype) -> str:
    """The mxpack format of a float dtype (float16/32/64 or an ml_dtypes
    dtype). TypeError for anything else."""
    dt = np.dtype(dtype)
    if dt in _FORMAT_OF_DTYPE:
        return _FORMAT_OF_DTYPE[dt]
    raise TypeError(
        f"dtype {dt}: not an mxpack float format; expected one of "
        + ", ".join(str(d) for d in _FORMAT_OF_DTYPE))


def _canonical_arg(fmt, arg: str) -> str:
    if isinstance(fmt, str):
        return _mxpack.canonical_format(fmt, arg)
    try:
        return format_of(fmt)
    except TypeError:
        raise TypeError(
            f"{arg}: expected a format name or a float dtype, got {fmt!r}") from None


def _check_array(x, arg: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(
            f"{arg}: expected a numpy.ndarray, got {type(x).__name__} "
            f"(use numpy.asarray)")
    return x


def _raw(x: np.ndarray) -> np.ndarray:
    """The same buffer as unsigned integers of the same size (zero-copy)."""
    if x.dtype.itemsize not in _RAW or x.dtype.kind not in "fuiV":
        raise TypeError(f"unsupported dtype {x.dtype}")
    return x.view(_RAW[x.dtype.itemsize])


def _wrap(raw: np.ndarray, fmt: str, codes: bool) -> np.ndarray:
    """Views raw output codes of `fmt` with the format's dtype when wanted."""
    if codes:
        return raw
    dt = _DTYPE_OF_FORMAT.get(fmt)
    return raw.view(dt) if dt is not None else raw


def _source_format(x: np.ndarray, src: Optional[str], arg: str) -> str:
    """The format of the values in `x`: its float dtype, or `src` for raw
    unsigned integer codes."""
    if src is not None:
        fmt = _canonical_arg(src, "src")
        info = _mxpack.format_info(fmt)
        if x.dtype in _FORMAT_OF_DTYPE and _FORMAT_OF_DTYPE[x.dtype] != fmt:
            raise TypeError(
                f"{arg}: dtype {x.dtype} holds {_FORMAT_OF_DTYPE[x.dtype]} values, "
                f"but src={src!r}")
        if x.dtype.kind != "f" and x.dtype not in _FORMAT_OF_DTYPE and (
                x.dtype.kind != "u" or x.dtype.itemsize != info["storage_bytes"]):
            raise TypeError(
                f"{arg}: expected uint{8 * info['storage_bytes']} codes of {fmt} "
                f"(or the format's float dtype), got dtype {x.dtype}")
        return fmt
    if x.dtype in _FORMAT_OF_DTYPE:
        return _FORMAT_OF_DTYPE[x.dtype]
    raise TypeError(
        f"{arg}: expected a float array (float32, float64, float16, bfloat16 or an "
        f"ml_dtypes dtype), got dtype {x.dtype}; pass src=FORMAT for raw codes")


def _policy_rbits(src: str, dst: str, n: int, rounding: str, seed: int, rbits):
    """The random words for rounding="rs", as `mxpack convert --seed` makes
    them (RandomBits(seed, i)); None when the conversion takes none."""
    if rbits is not None:
        r = _check_array(rbits, "rbits")
        if r.dtype != np.uint32:
            raise TypeError(f"rbits: expected a uint32 array, got dtype {r.dtype}")
        return r
    if isinstance(rounding, str) and rounding.lower() == "rs" and not (
            _mxpack.is_exact_conversion(src, dst)):
        return random_bits(seed, n)
    return None


def random_bits(seed: int, n: int) -> np.ndarray:
    """uint32 words RandomBits(seed, i) for i < n: the counter-based bits
    mxpack (and ``mxpack convert --seed``) uses for rounding="rs"."""
    out = np.empty(int(n), dtype=np.uint32)
    _mxpack.random_bits(int(seed), out)
    return out


def convert(x: np.ndarray, fmt: str, rounding: str = "rn",
            saturation: str = "satfinite", relu: bool = False, *,
            src: Optional[str] = None, seed: int = 0,
            rbits: Optional[np.ndarray] = None, overflow_tie: str = "even",
            codes: bool = False, out: Optional[np.ndarray] = None,
            impl: str = "best") -> np.ndarray:
    """Converts every element of `x` to `fmt` (mxpack::ConvertArray).

    `x` is a float array (its dtype names the source format) or raw unsigned
    codes with ``src=`` naming their format. Decodes (every source code exact
    in `fmt`) ignore rounding and saturation. ``rounding="rs"`` draws its
    random bits from ``random_bits(seed, n)`` unless ``rbits`` (uint32, one
    per element) is given. Returns an array of x's shape: the format's dtype
    (numpy or ml_dtypes) when there is one and ``codes`` is false, otherwise
    unsigned integer codes (uint8 for narrow formats). With ``out=`` (a
    C-contiguous array of x.size elements of the destination's storage size,
    e.g. reused between calls) the result is written there and `out` is
    returned."""
    x = _check_array(x, "x")
    from_fmt = _source_format(x, src, "x")
    to_fmt = _canonical_arg(fmt, "fmt")
    out_bytes = _mxpack.format_info(to_fmt)["storage_bytes"]
    if out is None:
        raw_out = np.empty(x.shape, dtype=_RAW[out_bytes])
    else:
        _check_array(out, "out")
        if out.dtype.itemsize != out_bytes or out.size != x.size:
            raise ValueError(
                f"out: expected {x.size} elements of {out_bytes} byte(s) for {to_fmt}, "
                f"got {out.size} of dtype {out.dtype}")
        raw_out = _raw(out)
    rb = _policy_rbits(from_fmt, to_fmt, x.size, rounding, seed, rbits)
    _mxpack.convert(from_fmt, to_fmt, _raw(x), raw_out, rounding, saturation,
                    bool(relu), overflow_tie, rb, impl)
    return out if out is not None else _wrap(raw_out, to_fmt, codes)


def encode(x: np.ndarray, fmt: str, rounding: str = "rn",
           saturation: str = "satfinite", relu: bool = False, *,
           src: Optional[str] = None, seed: int = 0,
           rbits: Optional[np.ndarray] = None, overflow_tie: str = "even",
           codes: bool = False, out: Optional[np.ndarray] = None,
           impl: str = "best") -> np.ndarray:
    """Encodes f32/f64/f16/bf16 values to `fmt`, rounded once from the exact
    source value (docs/semantics.md section 1).

    rounding: rn (default), rz, rm, rp, rs (ue8m0: rz or rp only).
    saturation: satfinite (default) or nosat (not for e2m1/e2m3/e3m2).
    relu: negative values and -0 become +0 (not for ue8m0/ue4m3).
    overflow_tie: "even" (IEEE/CUDA, default) or "max_finite" (rn only).
    Returns the ml_dtypes array of `fmt` when ml_dtypes is installed and the
    format has a dtype (and ``codes`` is false), else uint8 codes (uint16 for
    bf16 without ml_dtypes), with x's shape; ``out=`` writes into an
    existing array instead (see convert())."""
    return convert(x, fmt, rounding, saturation, relu, src=src, seed=seed,
                   rbits=rbits, overflow_tie=overflow_tie, codes=codes, out=out,
                   impl=impl)


def decode(codes: np.ndarray, fmt: Optional[str] = None, to=np.float32, *,
           relu: bool = False, out: Optional[np.ndarray] = None,
           impl: str = "best") -> np.ndarray:
    """Decodes codes of `fmt` exactly to `to` (float32, float16 or bfloat16;
    a dtype or a format name). `codes` is uint8 (uint16 for f16/bf16) or the
    format's ml_dtypes dtype, in which case `fmt` may be omitted. NaN codes
    give the canonical NaN; ue8m0 -> f16 is an error."""
    codes = _check_array(codes, "codes")
    if fmt is None:
        if codes.dtype not in _FORMAT_OF_DTYPE:
            raise TypeError(
                f"codes: dtype {codes.dtype} does not name a format; pass fmt=")
        fmt = _FORMAT_OF_DTYPE[codes.dtype]
    fmt = _canonical_arg(fmt, "fmt")
    to_fmt = _canonical_arg(to, "to")
    return convert(codes, to_fmt, relu=relu, src=fmt, out=out, impl=impl)


def has_simd_path(src: str, fmt: str, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False,
                  overflow_tie: str = "even") -> bool:
    """True when the conversion runs a SIMD kernel (else the scalar reference)."""
    return _mxpack.has_simd_path(_canonical_arg(src, "src"), _canonical_arg(fmt, "fmt"),
                                 rounding, saturation, bool(relu), overflow_tie)


# ---------------------------------------------------------------------------
# Packed layouts and tcgen05.cp decompression (mxpack/pack.h).

def _codes_u8(codes, arg: str) -> np.ndarray:
    codes = _check_array(codes, arg)
    if codes.dtype == np.uint8:
        return codes
    if codes.dtype in _FORMAT_OF_DTYPE and codes.dtype.itemsize == 1:
        return codes.view(np.uint8)
    raise TypeError(f"{arg}: expected uint8 codes (or a 1-byte ml_dtypes dtype), "
                    f"got dtype {codes.dtype}")


def packed_bytes(layout: str, n: int) -> int:
    """Bytes that `n` elements take in `layout` (padded layouts hold whole
    groups of 16)."""
    return _mxpack.packed_bytes(layout, int(n))


def pack(codes: np.ndarray, layout: str, *, impl: str = "best") -> np.ndarray:
    """Packs one-code-per-byte `codes` (uint8 or an fp4/fp6 ml_dtypes array,
    read in C order) into `layout`: dense4, dense6, b4x16_p64 or b6x16_p32.
    Returns a 1-D uint8 array of packed_bytes(layout, codes.size) bytes."""
    c = _codes_u8(codes, "codes")
    out = np.empty(_mxpack.packed_bytes(layout, c.size), dtype=np.uint8)
    _mxpack.pack(layout, c, out, impl)
    return out


def unpack(packed: np.ndarray, layout: str, count: Optional[int] = None, *,
           impl: str = "best") -> np.ndarray:
    """Unpacks `count` elements (default: every whole element `packed` holds,
    as ``mxpack unpack``) to one code per byte (uint8)."""
    p = _codes_u8(packed, "packed")
    n = _mxpack.whole_elements(layout, p.size) if count is None else int(count)
    if n < 0:
        raise ValueError(f"count: expected >= 0, got {n}")
    out = np.empty(n, dtype=np.uint8)
    _mxpack.unpack(layout, p, out, impl)
    return out


def decompress(packed: np.ndarray, layout: str, fp6_container: str = "low6", *,
               impl: str = "best") -> np.ndarray:
    """tcgen05.cp decompression: b4x16_p64 / b6x16_p32 bytes (a multiple of 16)
    to b8x16 containers (uint8, same length). 4-bit codes sit in bits [5:2];
    6-bit codes as `fp6_container` says (low6: [5:0], mid6: [6:1])."""
    p = _codes_u8(packed, "packed")
    out = np.empty(p.size, dtype=np.uint8)
    _mxpack.decompress(layout, p, out, fp6_container, impl)
    return out


def compress(b8x16: np.ndarray, layout: str, fp6_container: str = "low6", *,
             impl: str = "best") -> np.ndarray:
    """Inverse of decompress(): containers to b4x16_p64 / b6x16_p32 bytes."""
    b = _codes_u8(b8x16, "b8x16")
    out = np.empty(b.size, dtype=np.uint8)
    _mxpack.compress(layout, b, out, fp6_container, impl)
    return out


def encode_packed(x: np.ndarray, fmt: str, layout: str, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False, *,
                  src: Optional[str] = None, seed: int = 0,
                  rbits: Optional[np.ndarray] = None,
                  overflow_tie: str = "even", impl: str = "best") -> np.ndarray:
    """Encodes `x` (C order) to `fmt` (e2m1 for 4-bit layouts, e2m3/e3m2 for
    6-bit ones) and packs the codes into `layout` in one pass. Returns uint8
    of packed_bytes(layout, x.size) bytes; the final group is zero-padded."""
    x = _check_array(x, "x")
    from_fmt = _source_format(x, src, "x")
    elem = _canonical_arg(fmt, "fmt")
    out = np.empty(_mxpack.packed_bytes(layout, x.size), dtype=np.uint8)
    rb = _policy_rbits(from_fmt, elem, x.size, rounding, seed, rbits)
    _mxpack.encode_packed(from_fmt, elem, layout, _raw(x), out, rounding,
                          saturation, bool(relu), overflow_tie, rb, impl)
    return out


def decode_packed(packed: np.ndarray, fmt: str, layout: str,
                  count: Optional[int] = None, to=np.float32, *,
                  impl: str = "best") -> np.ndarray:
    """Decodes `count` packed elements of `fmt` (default: every whole element)
    to `to` (float32, float16 or bfloat16) in one pass."""
    p = _codes_u8(packed, "packed")
    n = _mxpack.whole_elements(layout, p.size) if count is None else int(count)
    if n < 0:
        raise ValueError(f"count: expected >= 0, got {n}")
    to_fmt = _canonical_arg(to, "to")
    out = np.empty(n, dtype=_RAW[_mxpack.format_info(to_fmt)["storage_bytes"]])
    _mxpack.decode_packed(layout, _canonical_arg(fmt, "fmt"), to_fmt, p, out, impl)
    return _wrap(out, to_fmt, False)


def decode_containers(b8x16: np.ndarray, fmt: str, to=np.float32,
                      fp6_container: str = "low6", *,
                      impl: str = "best") -> np.ndarray:
    """Decodes tcgen05.cp containers (one per byte) of `fmt` to `to`."""
    b = _codes_u8(b8x16, "b8x16")
    to_fmt = _canonical_arg(to, "to")
    out = np.empty(b.shape, dtype=_RAW[_mxpack.format_info(to_fmt)["storage_bytes"]])
    _mxpack.decode_containers(_canonical_arg(fmt, "fmt"), to_fmt, b, out,
                              fp6_container, impl)
    return _wrap(out, to_fmt, False)


# ---------------------------------------------------------------------------
# multimem reductions (mxpack/multimem.h) and PTX spelling checks.

def reduce_spec(ptx: Optional[str] = None, model: str = "sequential", *,
                type: Optional[str] = None, op: str = "add",
                acc: str = "none") -> dict:
    """The element-wise reduction a multimem.ld_reduce spelling (or type/op/
    acc) performs: type, op, acc, model, element format and sizes."""
    return dict(_mxpack.reduce_spec(ptx or "", type or "", op, acc, model))


def reduce(replicas: Union[Sequence[np.ndarray], np.ndarray],
           ptx: Optional[str] = None, model: str = "sequential", *,
           type: Optional[str] = None, op: str = "add", acc: str = "none",
           impl: str = "best") -> np.ndarray:
    """multimem.ld_reduce over N replicas (host model, docs/semantics.md section 4).

    `replicas` is a sequence of equally shaped arrays (or one array whose
    first axis indexes replicas), reduced element-wise in replica order.
    Give the instruction as ``ptx="multimem.ld_reduce.add.acc::f16.v4.e4m3"``
    or as ``type=``/``op=``/``acc=``. Float add follows ``model``:
    sequential (default), tree, exact or nccl. Element dtypes: the element's
    float dtype (float16/32/64, bfloat16, float8_*) or unsigned integer
    codes of the element size (signed integers for s32/s64). Returns an array
    of replicas[0]'s dtype and shape."""
    if isinstance(replicas, np.ndarray):
        if replicas.ndim < 2:
            raise ValueError(
                f"replicas: expected a sequence of arrays or an array with a "
                f"replica axis (ndim >= 2), got ndim {replicas.ndim}")
        reps = [replicas[i] for i in range(replicas.shape[0])]
    else:
        reps = list(replicas)
    if not reps:
        raise ValueError("replicas: expected at least one replica, got 0")
    for i, r in enumerate(reps):
        _check_array(r, f"replicas[{i}]")
    info = _mxpack.reduce_spec(ptx or "", type or "", op, acc, model)
    dt0 = reps[0].dtype
    for i, r in enumerate(reps):
        if r.dtype != dt0 or r.shape != reps[0].shape:
            raise ValueError(
                f"replicas[{i}]: expected dtype {dt0} and shape {reps[0].shape} "
                f"(those of replicas[0]), got {r.dtype} and {r.shape}")
    ebytes = info["element_bytes"]
    if dt0.itemsize != ebytes or dt0.kind not in "fuiV":
        raise TypeError(
            f"replicas: {info['type']} elements are {ebytes} bytes; got dtype {dt0}")
    if dt0 in _FORMAT_OF_DTYPE:
        if not info["is_float"] or _FORMAT_OF_DTYPE[dt0] != info["element"]:
            want = info["element"] if info["is_float"] else "integer"
            raise TypeError(
                f"replicas: dtype {dt0} holds {_FORMAT_OF_DTYPE[dt0]} values, but "
                f"{info['type']} elements are {want}")
    n = reps[0].size
    if ptx and n % info["access_elements"] != 0:
        raise ValueError(
            f"replicas: {n} elements is not a multiple of the "
            f"{info['access_elements']}-element access of {ptx}")
    out = np.empty(reps[0].shape, dtype=dt0)
    _mxpack.reduce(ptx or "", type or "", op, acc, model,
                   [_raw(r) for r in reps], _raw(out), impl)
    return out


class PtxCheckResult(NamedTuple):
    """Result of ptx_check(): ``ok`` (legal, and on `target` when given) and
    ``text`` (decoded instruction and requirements, or the violated rule)."""
    ok: bool
    text: str

    def __bool__(self) -> bool:
        return self.ok


def ptx_check(spelling: str, target: Optional[str] = None) -> PtxCheckResult:
    """Decodes a PTX spelling (multimem.*, tcgen05.*; bare opcode or full
    line) and reports its legality and target / PTX ISA requirements, as
    ``mxpack ptx-check`` does."""
    if not isinstance(spelling, str):
        raise TypeError(f"spelling: expected str, got {type(spelling).__name__}")
    if target is not None and not isinstance(target, str):
        raise TypeError(f"target: expected str or None, got {type(target).__name__}")
    ok, text = _mxpack.ptx_check(spelling, target or "")
    return PtxCheckResult(bool(ok), text)


# ---------------------------------------------------------------------------
# MX / NVFP4 block quantization (mxpack/mx.h).

def mx_formats() -> list:
    """MX format names: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2,
    mxfp4, nvfp4."""
    return list(_mxpack.mx_format_names())


def mx_format_info(format: str) -> dict:
    """Element format, scale format, block size and default scale mode."""
    return dict(_mxpack.mx_format_info(format))


def _rows_cols(shape, arg: str):
    if len(shape) == 0:
        raise ValueError(f"{arg}: expected at least 1 dimension (blocks run along the "
                         f"last axis), got a 0-d array")
    cols = int(shape[-1])
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    return rows, cols


class QuantizedTensor:
    """A block-quantized tensor (mxpack::MxTensor): element bytes, scale
    bytes and, for NVFP4, the f32 tensor scale.

    The tensor is row-major [rows][cols] with rows = prod(shape[:-1]) and
    cols = shape[-1]; blocks (32 elements, 16 for NVFP4) run along the last
    axis, rows padded with zeros to whole blocks.

    Attributes:
      format, scale_mode, layout, scale_layout: names as in mxpack/mx.h.
      shape: the original array shape; rows, cols.
      elements: uint8 [rows, element_row_bytes] (codes, dense4/6 or
        b4x16_p64/b6x16_p32 bytes).
      scales: uint8 scale codes (ue8m0, or ue4m3 for NVFP4): linear
        [rows, blocks_per_row]; tcgen05 [ceil(rows/128), ceil(blocks/4), 512].
      tensor_scale: float (NVFP4; 1.0 otherwise).
      stats: error statistics against the input (dict: elements,
        nan_inf_inputs, nan_outputs, saturated, max_abs_error, rmse,
        signal_power, sqnr_db), or None when quantize(stats=False).
    """

    def __init__(self, format: str, shape, elements: np.ndarray, scales: np.ndarray,
                 tensor_scale: float = 1.0, *, scale_mode: Optional[str] = None,
                 layout: str = "codes", scale_layout: str = "linear",
                 stats: Optional[dict] = None):
        self.shape = tuple(int(d) for d in shape)
        self.rows, self.cols = _rows_cols(self.shape, "shape")
        info = _mxpack.mx_shape(format, layout, scale_layout, self.rows, self.cols)
        self.format = info["format"]
        self.layout = info["layout"]
        self.scale_layout = info["scale_layout"]
        self.scale_mode = scale_mode or _mxpack.mx_format_info(format)["default_scale_mode"]
        self.block_size = info["block"]
        self.elements = _codes_u8(elements, "elements")
        self.scales = _codes_u8(scales, "scales")
        for arr, key, arg in ((self.elements, "element_bytes", "elements"),
                              (self.scales, "scale_bytes", "scales")):
            if arr.size != info[key]:
                raise ValueError(f"{arg}: expected {info[key]} bytes for {self.format} "
                                 f"{self.shape} ({layout}/{scale_layout}), got {arr.size}")
        self.tensor_scale = float(tensor_scale)
        self.stats = stats

    def _args(self):
        return (self.format, self.layout, self.scale_layout, self.rows, self.cols,
                self.elements, self.scales, self.tensor_scale)

    def dequantize(self, to=np.float32, *, impl: str = "best") -> np.ndarray:
        """The dequantized tensor in `to` (float32, float64, float16 or
        bfloat16) with the original shape (mxpack::DequantizeMx: f64 exact,
        f32 exact for MX within f32 range)."""
        to_fmt = _canonical_arg(to, "to")
        out = np.empty(self.shape, dtype=_RAW[_mxpack.format_info(to_fmt)["storage_bytes"]])
        f, l, sl, r, c, e, s, t = self._args()
        _mxpack.dequantize(f, l, sl, r, c, e, s, t, to_fmt, out, impl)
        return _wrap(out, to_fmt, False)

    def error_stats(self, x: np.ndarray) -> dict:
        """Error statistics of this tensor against the input `x`
        (mxpack::ComputeMxErrorStats against the f64 dequantization)."""
        x = _check_array(x, "x")
        if tuple(x.shape) != self.shape:
            raise ValueError(f"x: expected shape {self.shape}, got {tuple(x.shape)}")
        src = _source_format(x, None, "x")
        return dict(_mxpack.error_stats(src, _raw(x), *self._args()))

    def __repr__(self) -> str:
        return (f"QuantizedTensor(format={self.format!r}, shape={self.shape}, "
                f"scale_mode={self.scale_mode!r}, layout={self.layout!r}, "
                f"scale_layout={self.scale_layout!r}, tensor_scale={self.tensor_scale})")


def quantize(x: np.ndarray, format: str, scale_mode: Optional[str] = None,
             layout: str = "codes", scale_layout: str = "linear", *,
             tensor_scale: Optional[float] = None, stats: bool = True,
             src: Optional[str] = None, impl: str = "best") -> QuantizedTensor:
    """MX / NVFP4 block quantization of `x` (float32, bfloat16 or float16)
    along its last axis (mxpack::QuantizeMx).

    format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4 or nvfp4.
    scale_mode: floor (MX default, OCP), rceil, ceil, even (NVFP4 default).
    layout: codes, dense4, dense6, b4x16_p64, b6x16_p32 (element bytes).
    scale_layout: linear or tcgen05 (block-scaled MMA scale tiles).
    tensor_scale: NVFP4 only; default amax / 2688 over the finite inputs.
    stats: compute error statistics (QuantizedTensor.stats)."""
    x = _check_array(x, "x")
    from_fmt = _source_format(x, src, "x")
    rows, cols = _rows_cols(x.shape, "x")
    raw = _raw(x)
    elements, scales, ts, mode = _mxpack.quantize(
        format, from_fmt, raw, rows, cols, scale_mode or "", layout, scale_layout,
        None if tensor_scale is None else float(tensor_scale), impl)
    info = _mxpack.mx_shape(format, layout, scale_layout, rows, cols)
    elements = elements.reshape(rows, info["element_row_bytes"])
    if info["scale_layout"] == "tcgen05":
        scales = scales.reshape(-(-rows // 128), -(-info["blocks_per_row"] // 4), 512)
    else:
        scales = scales.reshape(rows, info["blocks_per_row"])
    q = QuantizedTensor(format, x.shape, elements, scales, ts, scale_mode=mode,
                        layout=layout, scale_layout=scale_layout)
    if stats:
        q.stats = dict(_mxpack.error_stats(from_fmt, raw, *q._args()))
    return q


def nvfp4_tensor_scale(x: np.ndarray, *, impl: str = "best") -> float:
    """The NVFP4 tensor scale quantize() uses: amax over finite values / 2688
    (f32), or 1.0 when that amax is 0."""
    x = _check_array(x, "x")
    return float(_mxpack.nvfp4_tensor_scale(_source_format(x, None, "x"), _raw(x), impl))


# ---------------------------------------------------------------------------
# Whole checkpoints (mxpack/model.h): safetensors in, safetensors out.

def quantize_model(in_path, out_path, format: str = "mxfp4",
                   scale_mode: Optional[str] = None, layout: str = "tcgen05", *,
                   include: Optional[str] = None, exclude: Optional[str] = None,
                   threads: int = 0, error_stats: bool = False,
                   impl: str = "best") -> dict:
    """Quantizes every 2-D F32/F16/BF16 tensor of the safetensors file
    `in_path` whose name matches `include` and not `exclude` (ECMAScript
    regexes, searched) and writes `out_path` (as ``mxpack quantize-model``):
    NAME.qdata, NAME.scales (and NAME.tscale for NVFP4) plus an
    "mxpack.tensor.NAME" metadata record per tensor; other tensors are
    copied. layout: "tcgen05" (TMA/tcgen05.cp element layout and scale
    tiles) or "dense". threads=0 uses every core. error_stats adds per-tensor
    SQNR / max error / RMSE to the report (much slower than quantizing, as
    with the CLI's --error-stats; the file bytes do not change). Returns the
    report (ModelReportJson) as a dict."""
    if threads < 0:
        raise ValueError(f"threads: expected >= 0, got {threads}")
    return json.loads(_mxpack.quantize_model(
        os.fspath(in_path), os.fspath(out_path), format, scale_mode or "", layout,
        include or "", exclude or "", int(threads), bool(error_stats), impl))


def dequantize_model(in_path, out_path, to: Optional[str] = None, *,
                     threads: int = 0, impl: str = "best") -> dict:
    """Inverse of quantize_model(): rebuilds every quantized tensor in its
    original dtype (or `to`: f32, bf16, f16) and drops the mxpack metadata.
    Returns the report as a dict."""
    if threads < 0:
        raise ValueError(f"threads: expected >= 0, got {threads}")
    to_fmt = "" if to is None else _canonical_arg(to, "to")
    return json.loads(_mxpack.dequantize_model(
        os.fspath(in_path), os.fspath(out_path), to_fmt, int(threads), impl))
