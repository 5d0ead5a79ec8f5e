"""mxpack: bit-exact conversion, packing and reduction of microscaling floats.

Any CPU array in (numpy, torch, DLPack, buffer protocol), the caller's kind
out: numpy in -> numpy out, torch in -> torch out with torch's dtypes where
they exist (``mxpack._arrays``). Every function here maps dtypes to mxpack
format names, allocates the output and calls the C++ library
(``mxpack._mxpack``), which reads the input buffer in place (C-contiguous
arrays only) and runs its kernels with the GIL released, large arrays split
over ``threads`` threads (default: every core; the bytes do not depend on
it). Errors of the C++ library raise ``ValueError`` with its message; wrong
dtypes raise ``TypeError``.

Formats: e2m1, e2m3, e3m2, e4m3, e5m2, ue8m0, ue4m3 (narrow: one code per
byte), f16, bf16, f32 and f64 (encode source only). ml_dtypes spellings
(``float8_e4m3fn``, ...) are accepted as names; when ml_dtypes is installed,
arrays of its dtypes are accepted and returned.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple, Optional

import numpy as np

from . import _mxpack
from ._arrays import NUMPY, TORCH, Array, as_array, wrap

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
    "export_checkpoint", "dequantize_checkpoint",
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


# torch dtypes accepted where a format is named (to=torch.bfloat16, ...).
_FORMAT_OF_TORCH_DTYPE = {
    "torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16",
    "torch.bfloat16": "bf16", "torch.float8_e4m3fn": "e4m3",
    "torch.float8_e5m2": "e5m2", "torch.float8_e8m0fnu": "ue8m0",
}


def _canonical_arg(fmt, arg: str) -> str:
    if isinstance(fmt, str):
        return _mxpack.canonical_format(fmt, arg)
    if type(fmt).__module__ == "torch" and str(fmt) in _FORMAT_OF_TORCH_DTYPE:
        return _FORMAT_OF_TORCH_DTYPE[str(fmt)]
    try:
        return format_of(fmt)
    except TypeError:
        raise TypeError(
            f"{arg}: expected a format name or a float dtype, got {fmt!r}") from None


def _input(x, arg: str) -> Array:
    """Any CPU array as a numpy view of its memory (mxpack._arrays)."""
    return as_array(x, arg)


def _check_array(x, arg: str) -> np.ndarray:
    return _input(x, arg).a


def _threads(threads) -> int:
    """threads=None (every core) -> 0, the C++ spelling; else an int >= 1."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads: expected an int or None, got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads: expected >= 1 (or None for every core), got {threads}")
    return int(threads)


def _hinted(arr: Array, src: Optional[str]) -> Optional[str]:
    """`src`, or the format a torch dtype carried (bf16, float8_*)."""
    if arr.fmt is None or arr.fmt == "e2m1x2":
        return src
    if src is not None and _canonical_arg(src, "src") != arr.fmt:
        raise TypeError(f"x: the tensor's dtype holds {arr.fmt} values, but src={src!r}")
    return arr.fmt


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


def _policy_rbits(src: str, dst: str, n: int, rounding: str, seed: int, rbits,
                  threads: int = 0):
    """The random words for rounding="rs", as `mxpack convert --seed` makes
    them (RandomBits(seed, i)); None when the conversion takes none."""
    if rbits is not None:
        r = _check_array(rbits, "rbits")
        if r.dtype != np.uint32:
            raise TypeError(f"rbits: expected a uint32 array, got dtype {r.dtype}")
        return r
    if isinstance(rounding, str) and rounding.lower() == "rs" and not (
            _mxpack.is_exact_conversion(src, dst)):
        out = np.empty(int(n), dtype=np.uint32)
        _mxpack.random_bits(int(seed), out, threads)
        return out
    return None


def random_bits(seed: int, n: int, *, threads: Optional[int] = None) -> np.ndarray:
    """uint32 words RandomBits(seed, i) for i < n: the counter-based bits
    mxpack (and ``mxpack convert --seed``) uses for rounding="rs"."""
    out = np.empty(int(n), dtype=np.uint32)
    _mxpack.random_bits(int(seed), out, _threads(threads))
    return out


def convert(x, fmt: str, rounding: str = "rn",
            saturation: str = "satfinite", relu: bool = False, *,
            src: Optional[str] = None, seed: int = 0,
            rbits=None, overflow_tie: str = "even",
            codes: bool = False, out=None,
            impl: str = "best", threads: Optional[int] = None):
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
    returned. Torch tensors in give torch tensors out (float8 / bfloat16
    dtypes where torch has the format, uint8 codes otherwise). ``threads``:
    threads for large arrays (None: every core); results do not depend on
    it."""
    arr = _input(x, "x")
    x = arr.a
    from_fmt = _source_format(x, _hinted(arr, src), "x")
    to_fmt = _canonical_arg(fmt, "fmt")
    out_bytes = _mxpack.format_info(to_fmt)["storage_bytes"]
    nt = _threads(threads)
    if out is None:
        raw_out = np.empty(x.shape, dtype=_RAW[out_bytes])
    else:
        o = _check_array(out, "out")
        if o.dtype.itemsize != out_bytes or o.size != x.size:
            raise ValueError(
                f"out: expected {x.size} elements of {out_bytes} byte(s) for {to_fmt}, "
                f"got {o.size} of dtype {o.dtype}")
        raw_out = _raw(o)
    rb = _policy_rbits(from_fmt, to_fmt, x.size, rounding, seed, rbits, nt)
    _mxpack.convert(from_fmt, to_fmt, _raw(x), raw_out, rounding, saturation,
                    bool(relu), overflow_tie, rb, impl, nt)
    if out is not None:
        return out
    if arr.kind == TORCH:
        return wrap(raw_out, TORCH, None if codes else to_fmt)
    return _wrap(raw_out, to_fmt, codes)


def encode(x, fmt: str, rounding: str = "rn",
           saturation: str = "satfinite", relu: bool = False, *,
           src: Optional[str] = None, seed: int = 0,
           rbits=None, overflow_tie: str = "even",
           codes: bool = False, out=None,
           impl: str = "best", threads: Optional[int] = None):
    """Encodes f32/f64/f16/bf16 values to `fmt`, rounded once from the exact
    source value (docs/semantics.md section 1).

    rounding: rn (default), rz, rm, rp, rs (ue8m0: rz or rp only).
    saturation: satfinite (default) or nosat (not for e2m1/e2m3/e3m2).
    relu: negative values and -0 become +0 (not for ue8m0/ue4m3).
    overflow_tie: "even" (IEEE/CUDA, default) or "max_finite" (rn only).
    Returns the ml_dtypes array of `fmt` when ml_dtypes is installed and the
    format has a dtype (and ``codes`` is false), else uint8 codes (uint16 for
    bf16 without ml_dtypes), with x's shape; ``out=`` writes into an
    existing array instead (see convert()). Torch tensors in, torch out
    (``torch.float8_e4m3fn``, ``float8_e5m2``, ``float8_e8m0fnu``,
    ``bfloat16``; uint8 codes for formats torch lacks)."""
    return convert(x, fmt, rounding, saturation, relu, src=src, seed=seed,
                   rbits=rbits, overflow_tie=overflow_tie, codes=codes, out=out,
                   impl=impl, threads=threads)


def decode(codes, fmt: Optional[str] = None, to=np.float32, *,
           relu: bool = False, out=None,
           impl: str = "best", threads: Optional[int] = None):
    """Decodes codes of `fmt` exactly to `to` (float32, float16 or bfloat16;
    a dtype, a torch dtype or a format name). `codes` is uint8 (uint16 for
    f16/bf16), the format's ml_dtypes dtype or torch float8 dtype (then
    `fmt` may be omitted), or torch ``float4_e2m1fn_x2`` (two e2m1 codes per
    byte, element 2i in the low nibble; the result's last axis doubles). NaN
    codes give the canonical NaN; ue8m0 -> f16 is an error."""
    arr = _input(codes, "codes")
    c = arr.a
    to_fmt = _canonical_arg(to, "to")
    if arr.fmt == "e2m1x2":
        if fmt is not None and _canonical_arg(fmt, "fmt") != "e2m1":
            raise TypeError(f"codes: float4_e2m1fn_x2 holds e2m1 codes, but fmt={fmt!r}")
        flat = decode_packed(c.reshape(-1), "e2m1", "dense4", 2 * c.size, to_fmt,
                             impl=impl, threads=threads)
        shape = c.shape[:-1] + (2 * c.shape[-1],) if c.ndim else (2,)
        return wrap(np.asarray(flat).reshape(shape), arr.kind, to_fmt)
    if fmt is None:
        if arr.fmt is not None:
            fmt = arr.fmt
        elif c.dtype in _FORMAT_OF_DTYPE:
            fmt = _FORMAT_OF_DTYPE[c.dtype]
        else:
            raise TypeError(
                f"codes: dtype {c.dtype} does not name a format; pass fmt=")
    fmt = _canonical_arg(fmt, "fmt")
    if arr.fmt is not None and arr.fmt != fmt:
        raise TypeError(f"codes: the tensor's dtype holds {arr.fmt} codes, but fmt={fmt!r}")
    return convert(codes if arr.kind == TORCH else c, to_fmt, relu=relu,
                   src=fmt, out=out, impl=impl, threads=threads)


def has_simd_path(src: str, fmt: str, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False,
                  overflow_tie: str = "even") -> bool:
    """True when the conversion runs a SIMD kernel (else the scalar reference)."""
    return _mxpack.has_simd_path(_canonical_arg(src, "src"), _canonical_arg(fmt, "fmt"),
                                 rounding, saturation, bool(relu), overflow_tie)


# ---------------------------------------------------------------------------
# Packed layouts and tcgen05.cp decompression (mxpack/pack.h).

def _codes_u8(codes, arg: str) -> np.ndarray:
    return _codes_in(codes, arg).a


def _codes_in(codes, arg: str) -> Array:
    """One-byte codes (uint8, a 1-byte ml_dtypes dtype, a torch float8 or
    float4_e2m1fn_x2 tensor) as a uint8 numpy view."""
    arr = _input(codes, arg)
    c = arr.a
    if c.dtype == np.uint8:
        return arr
    if c.dtype in _FORMAT_OF_DTYPE and c.dtype.itemsize == 1:
        return arr._replace(a=c.view(np.uint8))
    raise TypeError(f"{arg}: expected uint8 codes (or a 1-byte ml_dtypes dtype), "
                    f"got dtype {c.dtype}")


def _packed_fmt(layout: str, kind: str) -> Optional[str]:
    """torch's dtype of packed bytes: float4_e2m1fn_x2 for dense4 (two e2m1
    codes per byte, element 2i in the low nibble, as torch and torchao pack
    them); uint8 for the other layouts."""
    return "e2m1x2" if kind == TORCH and layout == "dense4" else None


def packed_bytes(layout: str, n: int) -> int:
    """Bytes that `n` elements take in `layout` (padded layouts hold whole
    groups of 16)."""
    return _mxpack.packed_bytes(layout, int(n))


def pack(codes, layout: str, *, impl: str = "best", threads: Optional[int] = None):
    """Packs one-code-per-byte `codes` (uint8 or an fp4/fp6 ml_dtypes array,
    read in C order) into `layout`: dense4, dense6, b4x16_p64 or b6x16_p32.
    Returns a 1-D uint8 array of packed_bytes(layout, codes.size) bytes (torch
    in: a torch tensor, float4_e2m1fn_x2 for dense4)."""
    arr = _codes_in(codes, "codes")
    c = arr.a
    out = np.empty(_mxpack.packed_bytes(layout, c.size), dtype=np.uint8)
    _mxpack.pack(layout, c, out, impl, _threads(threads))
    return wrap(out, arr.kind, _packed_fmt(layout, arr.kind))


def unpack(packed, layout: str, count: Optional[int] = None, *,
           impl: str = "best", threads: Optional[int] = None):
    """Unpacks `count` elements (default: every whole element `packed` holds,
    as ``mxpack unpack``) to one code per byte (uint8)."""
    arr = _codes_in(packed, "packed")
    p = arr.a
    n = _mxpack.whole_elements(layout, p.size) if count is None else int(count)
    if n < 0:
        raise ValueError(f"count: expected >= 0, got {n}")
    out = np.empty(n, dtype=np.uint8)
    _mxpack.unpack(layout, p, out, impl, _threads(threads))
    return wrap(out, arr.kind)


def decompress(packed, layout: str, fp6_container: str = "low6", *,
               impl: str = "best", threads: Optional[int] = None):
    """tcgen05.cp decompression: b4x16_p64 / b6x16_p32 bytes (a multiple of 16)
    to b8x16 containers (uint8, same length). 4-bit codes sit in bits [5:2];
    6-bit codes as `fp6_container` says (low6: [5:0], mid6: [6:1])."""
    arr = _codes_in(packed, "packed")
    p = arr.a
    out = np.empty(p.size, dtype=np.uint8)
    _mxpack.decompress(layout, p, out, fp6_container, impl, _threads(threads))
    return wrap(out, arr.kind)


def compress(b8x16, layout: str, fp6_container: str = "low6", *,
             impl: str = "best", threads: Optional[int] = None):
    """Inverse of decompress(): containers to b4x16_p64 / b6x16_p32 bytes."""
    arr = _codes_in(b8x16, "b8x16")
    b = arr.a
    out = np.empty(b.size, dtype=np.uint8)
    _mxpack.compress(layout, b, out, fp6_container, impl, _threads(threads))
    return wrap(out, arr.kind)


def encode_packed(x, fmt: str, layout: str, rounding: str = "rn",
                  saturation: str = "satfinite", relu: bool = False, *,
                  src: Optional[str] = None, seed: int = 0,
                  rbits=None, overflow_tie: str = "even", impl: str = "best",
                  threads: Optional[int] = None):
    """Encodes `x` (C order) to `fmt` (e2m1 for 4-bit layouts, e2m3/e3m2 for
    6-bit ones) and packs the codes into `layout` in one pass. Returns uint8
    of packed_bytes(layout, x.size) bytes; the final group is zero-padded
    (torch in: a torch tensor, float4_e2m1fn_x2 for dense4)."""
    arr = _input(x, "x")
    x = arr.a
    from_fmt = _source_format(x, _hinted(arr, src), "x")
    elem = _canonical_arg(fmt, "fmt")
    nt = _threads(threads)
    out = np.empty(_mxpack.packed_bytes(layout, x.size), dtype=np.uint8)
    rb = _policy_rbits(from_fmt, elem, x.size, rounding, seed, rbits, nt)
    _mxpack.encode_packed(from_fmt, elem, layout, _raw(x), out, rounding,
                          saturation, bool(relu), overflow_tie, rb, impl, nt)
    return wrap(out, arr.kind, _packed_fmt(layout, arr.kind))


def decode_packed(packed, fmt: str, layout: str,
                  count: Optional[int] = None, to=np.float32, *,
                  impl: str = "best", threads: Optional[int] = None):
    """Decodes `count` packed elements of `fmt` (default: every whole element)
    to `to` (float32, float16 or bfloat16) in one pass."""
    arr = _codes_in(packed, "packed")
    p = arr.a
    n = _mxpack.whole_elements(layout, p.size) if count is None else int(count)
    if n < 0:
        raise ValueError(f"count: expected >= 0, got {n}")
    to_fmt = _canonical_arg(to, "to")
    out = np.empty(n, dtype=_RAW[_mxpack.format_info(to_fmt)["storage_bytes"]])
    _mxpack.decode_packed(layout, _canonical_arg(fmt, "fmt"), to_fmt, p, out, impl,
                          _threads(threads))
    if arr.kind == TORCH:
        return wrap(out, TORCH, to_fmt)
    return _wrap(out, to_fmt, False)


def decode_containers(b8x16, fmt: str, to=np.float32,
                      fp6_container: str = "low6", *,
                      impl: str = "best", threads: Optional[int] = None):
    """Decodes tcgen05.cp containers (one per byte) of `fmt` to `to`."""
    arr = _codes_in(b8x16, "b8x16")
    b = arr.a
    to_fmt = _canonical_arg(to, "to")
    out = np.empty(b.shape, dtype=_RAW[_mxpack.format_info(to_fmt)["storage_bytes"]])
    _mxpack.decode_containers(_canonical_arg(fmt, "fmt"), to_fmt, b, out,
                              fp6_container, impl, _threads(threads))
    if arr.kind == TORCH:
        return wrap(out, TORCH, to_fmt)
    return _wrap(out, to_fmt, False)


# ---------------------------------------------------------------------------
# multimem reductions (mxpack/multimem.h) and PTX spelling checks.

def reduce_spec(ptx: Optional[str] = None, model: str = "sequential", *,
                type: Optional[str] = None, op: str = "add",
                acc: str = "none") -> dict:
    """The element-wise reduction a multimem.ld_reduce spelling (or type/op/
    acc) performs: type, op, acc, model, element format and sizes."""
    return dict(_mxpack.reduce_spec(ptx or "", type or "", op, acc, model))


def reduce(replicas, ptx: Optional[str] = None, model: str = "sequential", *,
           type: Optional[str] = None, op: str = "add", acc: str = "none",
           impl: str = "best", threads: Optional[int] = None):
    """multimem.ld_reduce over N replicas (host model, docs/semantics.md section 4).

    `replicas` is a sequence of equally shaped arrays (or one array whose
    first axis indexes replicas), reduced element-wise in replica order.
    Give the instruction as ``ptx="multimem.ld_reduce.add.acc::f16.v4.e4m3"``
    or as ``type=``/``op=``/``acc=``. Float add follows ``model``:
    sequential (default), tree, exact or nccl. Element dtypes: the element's
    float dtype (float16/32/64, bfloat16, float8_*) or unsigned integer
    codes of the element size (signed integers for s32/s64). Returns an array
    of replicas[0]'s dtype and shape (torch tensors in: a torch tensor)."""
    if isinstance(replicas, (list, tuple)):
        ins = [_input(r, f"replicas[{i}]") for i, r in enumerate(replicas)]
    else:
        whole = _input(replicas, "replicas")
        if whole.a.ndim < 2:
            raise ValueError(
                f"replicas: expected a sequence of arrays or an array with a "
                f"replica axis (ndim >= 2), got ndim {whole.a.ndim}")
        ins = [whole._replace(a=whole.a[i]) for i in range(whole.a.shape[0])]
    if not ins:
        raise ValueError("replicas: expected at least one replica, got 0")
    reps = [r.a for r in ins]
    info = _mxpack.reduce_spec(ptx or "", type or "", op, acc, model)
    hint = ins[0].fmt
    for i, r in enumerate(ins):
        if r.fmt != hint:
            raise TypeError(f"replicas[{i}]: expected the dtype of replicas[0]")
    if hint is not None and (not info["is_float"] or hint != info["element"]):
        want = info["element"] if info["is_float"] else "integer"
        raise TypeError(f"replicas: the tensors hold {hint} values, but "
                        f"{info['type']} elements are {want}")
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
                   [_raw(r) for r in reps], _raw(out), impl, _threads(threads))
    return wrap(out, ins[0].kind, hint)


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
      kind: "torch" when quantized from a torch tensor: elements, scales and
        dequantize() are then torch tensors over the same bytes (elements
        float8_e4m3fn / float8_e5m2 for MXFP8 codes, float4_e2m1fn_x2 for
        dense4, else uint8; scales float8_e8m0fnu, or float8_e4m3fn for the
        NVFP4 ue4m3 codes, whose sign bit is 0).
    """

    def __init__(self, format: str, shape, elements, scales,
                 tensor_scale: float = 1.0, *, scale_mode: Optional[str] = None,
                 layout: str = "codes", scale_layout: str = "linear",
                 stats: Optional[dict] = None, kind: Optional[str] = None):
        self.shape = tuple(int(d) for d in shape)
        self.rows, self.cols = _rows_cols(self.shape, "shape")
        info = _mxpack.mx_shape(format, layout, scale_layout, self.rows, self.cols)
        self.format = info["format"]
        self.layout = info["layout"]
        self.scale_layout = info["scale_layout"]
        self.scale_mode = scale_mode or _mxpack.mx_format_info(format)["default_scale_mode"]
        self.block_size = info["block"]
        e_in, s_in = _codes_in(elements, "elements"), _codes_in(scales, "scales")
        self._elements, self._scales = e_in.a, s_in.a
        self.kind = kind or e_in.kind
        for arr, key, arg in ((self._elements, "element_bytes", "elements"),
                              (self._scales, "scale_bytes", "scales")):
            if arr.size != info[key]:
                raise ValueError(f"{arg}: expected {info[key]} bytes for {self.format} "
                                 f"{self.shape} ({layout}/{scale_layout}), got {arr.size}")
        self.tensor_scale = float(tensor_scale)
        self.stats = stats

    @property
    def elements(self):
        if self.kind != TORCH:
            return self._elements
        elem = _mxpack.mx_format_info(self.format)["element"]
        fmt = {"codes": elem if elem in ("e4m3", "e5m2") else None,
               "dense4": "e2m1x2"}.get(self.layout)
        return wrap(self._elements, TORCH, fmt)

    @property
    def scales(self):
        if self.kind != TORCH:
            return self._scales
        return wrap(self._scales, TORCH, "e4m3" if self.format == "nvfp4" else "ue8m0")

    def _args(self):
        return (self.format, self.layout, self.scale_layout, self.rows, self.cols,
                self._elements, self._scales, self.tensor_scale)

    def dequantize(self, to=np.float32, *, impl: str = "best",
                   threads: Optional[int] = None):
        """The dequantized tensor in `to` (float32, float64, float16 or
        bfloat16; a dtype, torch dtype or format name) with the original
        shape (mxpack::DequantizeMx: f64 exact, f32 exact for MX within f32
        range); a torch tensor when quantized from one."""
        to_fmt = _canonical_arg(to, "to")
        out = np.empty(self.shape, dtype=_RAW[_mxpack.format_info(to_fmt)["storage_bytes"]])
        f, l, sl, r, c, e, s, t = self._args()
        _mxpack.dequantize(f, l, sl, r, c, e, s, t, to_fmt, out, impl, _threads(threads))
        if self.kind == TORCH:
            return wrap(out, TORCH, to_fmt)
        return _wrap(out, to_fmt, False)

    def error_stats(self, x) -> dict:
        """Error statistics of this tensor against the input `x`
        (mxpack::ComputeMxErrorStats against the f64 dequantization)."""
        arr = _input(x, "x")
        x = arr.a
        if tuple(x.shape) != self.shape:
            raise ValueError(f"x: expected shape {self.shape}, got {tuple(x.shape)}")
        src = _source_format(x, _hinted(arr, None), "x")
        return dict(_mxpack.error_stats(src, _raw(x), *self._args()))

    def __repr__(self) -> str:
        return (f"QuantizedTensor(format={self.format!r}, shape={self.shape}, "
                f"scale_mode={self.scale_mode!r}, layout={self.layout!r}, "
                f"scale_layout={self.scale_layout!r}, tensor_scale={self.tensor_scale})")


def quantize(x, format: str, scale_mode: Optional[str] = None,
             layout: str = "codes", scale_layout: str = "linear", *,
             tensor_scale: Optional[float] = None, stats: bool = True,
             src: Optional[str] = None, impl: str = "best",
             threads: Optional[int] = None) -> QuantizedTensor:
    """MX / NVFP4 block quantization of `x` (float32, bfloat16 or float16)
    along its last axis (mxpack::QuantizeMx).

    format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4 or nvfp4.
    scale_mode: floor (MX default, OCP), rceil, ceil, even (NVFP4 default).
    layout: codes, dense4, dense6, b4x16_p64, b6x16_p32 (element bytes).
    scale_layout: linear or tcgen05 (block-scaled MMA scale tiles).
    tensor_scale: NVFP4 only; default amax / 2688 over the finite inputs.
    stats: compute error statistics (QuantizedTensor.stats; one thread, and
      slower than quantizing).
    threads: rows of large tensors are split over this many threads (None:
      every core); the bytes do not depend on it."""
    arr = _input(x, "x")
    x = arr.a
    from_fmt = _source_format(x, _hinted(arr, src), "x")
    rows, cols = _rows_cols(x.shape, "x")
    raw = _raw(x)
    elements, scales, ts, mode = _mxpack.quantize(
        format, from_fmt, raw, rows, cols, scale_mode or "", layout, scale_layout,
        None if tensor_scale is None else float(tensor_scale), impl,
        _threads(threads))
    info = _mxpack.mx_shape(format, layout, scale_layout, rows, cols)
    elements = elements.reshape(rows, info["element_row_bytes"])
    if info["scale_layout"] == "tcgen05":
        scales = scales.reshape(-(-rows // 128), -(-info["blocks_per_row"] // 4), 512)
    else:
        scales = scales.reshape(rows, info["blocks_per_row"])
    q = QuantizedTensor(format, x.shape, elements, scales, ts, scale_mode=mode,
                        layout=layout, scale_layout=scale_layout, kind=arr.kind)
    if stats:
        q.stats = dict(_mxpack.error_stats(from_fmt, raw, *q._args()))
    return q


def nvfp4_tensor_scale(x, *, impl: str = "best", threads: Optional[int] = None) -> float:
    """The NVFP4 tensor scale quantize() uses: amax over finite values / 2688
    (f32), or 1.0 when that amax is 0."""
    arr = _input(x, "x")
    return float(_mxpack.nvfp4_tensor_scale(
        _source_format(arr.a, _hinted(arr, None), "x"), _raw(arr.a), impl,
        _threads(threads)))


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


def export_checkpoint(in_path, out_path, format: Optional[str] = None, *,
                      scheme: str = "compressed-tensors",
                      include: Optional[str] = None, ignore: Optional[str] = None,
                      dry_run: bool = False, max_shard_bytes: int = 0,
                      threads: int = 0, impl: str = "best") -> dict:
    """The deployable-checkpoint export of ``mxpack quantize-model``: a
    .safetensors file or a Hugging Face model directory (shards with
    model.safetensors.index.json) in, a checkpoint of `scheme`
    ("compressed-tensors", "modelopt", "gpt-oss" or "mxpack") out, with its
    quantization_config and the directory's other files (docs/checkpoints.md).
    format: "nvfp4", "mxfp4", "mxfp8_e4m3", ... (None: the scheme's default).
    include / ignore: regexes that add / remove tensors from the default
    selection of linear-layer weights. dry_run: return the plan, write
    nothing. max_shard_bytes: largest output shard (0: 5 GB). The output is
    staged and renamed at the end; a failure leaves nothing. Returns the
    report (tensors, reasons, outputs, bytes) as a dict."""
    if threads < 0:
        raise ValueError(f"threads: expected >= 0, got {threads}")
    if max_shard_bytes < 0:
        raise ValueError(f"max_shard_bytes: expected >= 0, got {max_shard_bytes}")
    return json.loads(_mxpack.export_checkpoint(
        os.fspath(in_path), os.fspath(out_path), scheme, format or "",
        include or "", ignore or "", bool(dry_run), int(max_shard_bytes),
        int(threads), impl))


def dequantize_checkpoint(in_path, out_path, to: Optional[str] = None, *,
                          threads: int = 0, impl: str = "best") -> dict:
    """Inverse of export_checkpoint() for every scheme (as ``mxpack
    dequantize-model``): each quantized tensor becomes a plain tensor again
    (its original dtype where recorded, else bf16; `to`: f32, bf16, f16),
    quantization_config is dropped. Returns the report as a dict."""
    if threads < 0:
        raise ValueError(f"threads: expected >= 0, got {threads}")
    to_fmt = "" if to is None else _canonical_arg(to, "to")
    return json.loads(_mxpack.dequantize_checkpoint(
        os.fspath(in_path), os.fspath(out_path), to_fmt, int(threads), impl))


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
