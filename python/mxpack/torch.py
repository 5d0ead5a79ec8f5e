"""torchao-compatible MX / NVFP4 quantization on torch tensors, computed by
mxpack.

The functions carry the names, signatures and output conventions of
``torchao.prototype.mx_formats`` (``mx_tensor.to_mx`` / ``to_dtype``,
``nvfp4_tensor.nvfp4_quantize``, ``utils.to_blocked`` / ``from_blocked``,
``nvfp4_tensor.per_tensor_amax_to_scale``), so code written for torchao's
reference path runs unchanged, on every core, with mxpack's documented
rounding (docs/semantics.md section 5). Importing this module needs torch;
torchao is never imported.

Where mxpack deliberately differs from torchao (Inf / NaN blocks, blocks
whose scale is 2^-127, NVFP4 scales below e4m3's smallest subnormal, RCEIL
near powers of two, the NVFP4 element arithmetic; docs/python.md lists each
with an example), ``compat="torchao"`` reproduces torchao's bytes instead:
the scales follow torchao's formulas in torch / numpy f32 arithmetic and the
elements are still rounded once by mxpack (torchao's element casts are
round-to-nearest-even with saturation, like mxpack's).
"""

from __future__ import annotations

import math
from typing import Optional, Tuple, Union

import numpy as np
import torch

import mxpack
from mxpack import _mxpack

__all__ = [
    "ScaleCalculationMode", "to_mx", "to_dtype", "get_fp_scale", "nvfp4_quantize",
    "nvfp4_dequantize", "per_tensor_amax_to_scale", "to_blocked", "from_blocked",
    "hp_data_dims_to_swizzled_scale_dims_mx",
]

DTYPE_FP6_E2M3 = "fp6_e2m3"
DTYPE_FP6_E3M2 = "fp6_e3m2"


class ScaleCalculationMode:
    """torchao's scale modes by name (torchao's own enum is accepted too)."""
    FLOOR = "floor"
    RCEIL = "rceil"
    CEIL = "ceil"
    EVEN = "even"


# torchao element dtype -> (mxpack MX format, element format, emax, max).
_MX = {
    "float8_e4m3fn": ("mxfp8_e4m3", "e4m3", 8, 448.0),
    "float8_e5m2": ("mxfp8_e5m2", "e5m2", 15, 57344.0),
    DTYPE_FP6_E2M3: ("mxfp6_e2m3", "e2m3", 2, 7.5),
    DTYPE_FP6_E3M2: ("mxfp6_e3m2", "e3m2", 4, 28.0),
    "float4_e2m1fn_x2": ("mxfp4", "e2m1", 2, 6.0),
}
_MAN_BITS = {"e4m3": 3, "e5m2": 2, "e2m3": 3, "e3m2": 2, "e2m1": 1}
_EXP_BITS = {"e4m3": 4, "e5m2": 5, "e2m3": 2, "e3m2": 3, "e2m1": 2}


def _mode(scaling_mode) -> str:
    """A torchao ScaleCalculationMode member, or its name / value."""
    v = getattr(scaling_mode, "value", scaling_mode)
    if isinstance(v, str) and v.lower() in ("floor", "rceil", "ceil", "even"):
        return v.lower()
    raise ValueError(
        f"scaling_mode: expected FLOOR, RCEIL, CEIL or EVEN (torchao's "
        f"ScaleCalculationMode or its name), got {scaling_mode!r}")


def _elem(elem_dtype):
    key = elem_dtype if isinstance(elem_dtype, str) else str(elem_dtype).replace("torch.", "")
    if key not in _MX:
        raise ValueError(
            f"elem_dtype: expected torch.float8_e4m3fn, torch.float8_e5m2, "
            f"'fp6_e2m3', 'fp6_e3m2' or torch.float4_e2m1fn_x2, got {elem_dtype!r}")
    return _MX[key]


def _compat(compat: str) -> bool:
    if compat not in ("mxpack", "torchao"):
        raise ValueError(f"compat: expected 'mxpack' or 'torchao', got {compat!r}")
    return compat == "torchao"


def _check_hp(data_hp, block_size: int, arg: str = "data_hp"):
    if not isinstance(data_hp, torch.Tensor):
        raise TypeError(f"{arg}: expected a torch.Tensor, got {type(data_hp).__name__}")
    if data_hp.dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"{arg}: expected torch.float32 or torch.bfloat16, got {data_hp.dtype}")
    if data_hp.dim() == 0 or data_hp.shape[-1] % block_size != 0:
        raise ValueError(
            f"{arg}: the last dimension of shape {tuple(data_hp.shape)} must be "
            f"divisible by block_size {block_size}")
    if data_hp.device.type != "cpu":
        raise ValueError(f"{arg}: expected a CPU tensor, got device '{data_hp.device}' "
                         f"(this mxpack build has no GPU path)")
    if not data_hp.is_contiguous():
        raise ValueError(f"{arg}: expected a contiguous tensor; pass {arg}.contiguous()")


def _u8(t: torch.Tensor) -> np.ndarray:
    """The bytes of a contiguous 1-byte tensor as numpy uint8 (no copy)."""
    return t.detach().contiguous().view(torch.uint8).numpy()


def _as_torch(a: np.ndarray, shape, dtype=None) -> torch.Tensor:
    t = torch.from_numpy(np.ascontiguousarray(a)).reshape(shape)
    return t.view(dtype) if dtype is not None else t


def _f32(data_hp: torch.Tensor) -> np.ndarray:
    """data_hp as numpy float32 (bf16 widened exactly)."""
    x = data_hp.detach()
    if x.dtype == torch.bfloat16:
        x = x.float()
    return x.numpy()


# ---------------------------------------------------------------------------
# The tcgen05 / cuBLAS 128x4 scale swizzle.

def hp_data_dims_to_swizzled_scale_dims_mx(hp_data_M: int, hp_data_K: int) -> Tuple[int, int]:
    """(rows, cols) of the swizzled MX scales of an M x K tensor, as torchao
    shapes them: ceil(M/128)*32 x ceil(K/128)*16."""
    return -(-hp_data_M // 128) * 32, -(-hp_data_K // 128) * 16


def _relayout(scales: np.ndarray, rows: int, cols: int, to: str) -> np.ndarray:
    """RelayoutScales of a rows x cols byte matrix (one byte per block)."""
    src = "tcgen05" if to == "linear" else "linear"
    info = _mxpack.mx_shape("mxfp8_e4m3", "codes", to, rows, cols * 32)
    out = np.empty(info["scale_bytes"], np.uint8)
    _mxpack.relayout_scales("mxfp8_e4m3", "codes", src, rows, cols * 32, scales, to, out)
    return out


def to_blocked(input_matrix: torch.Tensor, use_triton_kernel: bool = False) -> torch.Tensor:
    """torchao's ``to_blocked``: a (H, W) matrix of 1-byte scales in the
    tcgen05 / cuBLAS block-scaled layout (rows padded to 128, columns to 4,
    zero padding, 128x4 tiles of 512 bytes, row r and column k of a tile at
    (r % 32) * 16 + (r // 32) * 4 + k), flattened; same dtype."""
    del use_triton_kernel
    if input_matrix.dim() != 2 or input_matrix.element_size() != 1:
        raise ValueError(f"input_matrix: expected a 2-D tensor of 1-byte scales, got "
                         f"shape {tuple(input_matrix.shape)} dtype {input_matrix.dtype}")
    rows, cols = input_matrix.shape
    out = _relayout(_u8(input_matrix).reshape(-1), rows, cols, "tcgen05")
    return torch.from_numpy(out).view(input_matrix.dtype)


def from_blocked(blocked_tensor: torch.Tensor, original_rows: int,
                 original_cols: int) -> torch.Tensor:
    """Inverse of to_blocked(): the (original_rows, original_cols) matrix."""
    out = _relayout(_u8(blocked_tensor).reshape(-1), original_rows, original_cols, "linear")
    return torch.from_numpy(out).view(blocked_tensor.dtype).reshape(original_rows,
                                                                     original_cols)


# ---------------------------------------------------------------------------
# torchao's arithmetic, for compat="torchao" (scales in f32, then one
# element rounding by mxpack).

def _torchao_nan_codes(y: np.ndarray, elem: str) -> np.ndarray:
    """The codes torchao's casts give NaN inputs: float8 casts keep the sign
    (0x7F | sign); the fp4 / fp6 bit conversion, which has no NaN case, runs
    its normal-number path on the NaN's bits (8 bits kept, sign added)."""
    bits = y.view(np.uint32).astype(np.int64)
    sign = (bits >> 31) & 1
    if elem in ("e4m3", "e5m2"):
        return (0x7F | (sign << 7)).astype(np.uint8)
    e, m = _EXP_BITS[elem], _MAN_BITS[elem]
    bias = (1 << (e - 1)) - 1
    mag = bits & 0x7FFFFFFF
    odd = (mag >> (23 - m)) & 1
    v = mag + ((bias - 127) << 23) + ((1 << (23 - m - 1)) - 1) + odd
    code = (v >> (23 - m)) & 0xFF
    return (code | (sign << (e + m))).astype(np.uint8)


def _encode_torchao(y: np.ndarray, elem: str, threads) -> np.ndarray:
    """torchao's element cast of the scaled f32 values `y`: rn + saturation
    on finite values (mxpack's encode), NaN as _torchao_nan_codes."""
    codes = mxpack.encode(y, elem, codes=True, threads=threads)
    nan = np.isnan(y)
    if nan.any():
        codes[nan] = _torchao_nan_codes(y[nan], elem)
    return codes


def _pack_uint4(codes: np.ndarray) -> np.ndarray:
    """Two codes per byte, element 2i in the low nibble (no masking, as
    torchao's pack_uint4)."""
    flat = codes.reshape(-1)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


def _torchao_mx(x: np.ndarray, elem: str, emax: int, max_pos: float, mode: str):
    """torchao's to_mx on float32 rows x cols (cols % 32 == 0): (scale
    codes [rows, blocks], scaled f32 values to cast)."""
    rows, cols = x.shape
    xb = x.reshape(rows, cols // 32, 32)
    with np.errstate(all="ignore"):
        amax = np.max(np.abs(xb), axis=-1).astype(np.float32)
        if mode == "rceil":
            descale = torch.from_numpy(amax / np.float32(max_pos))
            e = torch.clamp(torch.ceil(torch.log2(descale)), -127, 127) + 127
            e = torch.where(torch.isinf(descale), 254.0, e)
            e = torch.where(torch.isnan(descale), 255.0, e)
            code = e.to(torch.uint8).numpy()
            rcp = np.exp2(np.float32(127) - code.astype(np.float32)).astype(np.float32)
            rcp = np.where(code == 0, np.float32(1.0), rcp)
            rcp = np.where(code == 254, np.float32(2.0**-127), rcp)
            rcp = np.where(code == 255, np.float32(np.nan), rcp).astype(np.float32)
            y = (xb * rcp[..., None]).astype(np.float32)
            y = np.clip(y, np.float32(-max_pos), np.float32(max_pos))
            return code, y.reshape(rows, cols)
        bits = amax.view(np.int32).astype(np.int64)
        if mode == "even":
            m = _MAN_BITS[elem]
            bits = (bits + (1 << (23 - m - 1))) & (0x1FF << 23)
            nan = np.isnan(amax)
        else:
            nan = np.isnan(amax)
        pow2 = ((bits >> 23) & 0xFF) - 127
        if mode == "ceil":
            pow2 = pow2 + ((bits & 0x7FFFFF) > 0)
        s = np.clip(pow2 - emax, -127, 128)
        code = (s + 127).astype(np.uint8)
        code[nan] = 255
        scale = (code.astype(np.int32) << 23).view(np.float32)
        scale = np.maximum(scale, np.float32(2.0**-126))
        y = (xb / scale[..., None]).astype(np.float32)
        if elem in ("e4m3", "e5m2"):
            y = np.clip(y, np.float32(-max_pos), np.float32(max_pos))
        return code, y.reshape(rows, cols)


# ---------------------------------------------------------------------------
# MX.

def to_mx(data_hp: torch.Tensor, elem_dtype: Union[torch.dtype, str], block_size: int,
          scaling_mode=ScaleCalculationMode.FLOOR, is_swizzled_scales: bool = False, *,
          compat: str = "mxpack", threads: Optional[int] = None):
    """MX quantization of `data_hp` (float32 or bfloat16, contiguous, last
    dimension a multiple of 32) along its last dimension, as torchao's
    ``mx_tensor.to_mx``: returns ``(scale_e8m0, data_lp)``.

    elem_dtype: torch.float8_e4m3fn, torch.float8_e5m2, "fp6_e2m3",
      "fp6_e3m2" or torch.float4_e2m1fn_x2.
    block_size: 32 (the MX block; mxpack has no other).
    scaling_mode: FLOOR, RCEIL, CEIL or EVEN (torchao's enum or its name).
    scale_e8m0: torch.float8_e8m0fnu of shape (*data_hp.shape[:-1], K/32),
      or with is_swizzled_scales the to_blocked() bytes shaped as torchao
      shapes them.
    data_lp: float8 elements of data_hp's shape; fp6 codes one per byte
      (uint8, data_hp's shape); fp4 as uint8 (*shape[:-1], K/2), two codes
      per byte, element 2i in the low nibble.
    compat: "mxpack" (default: docs/semantics.md section 5) or "torchao"
      (torchao's bytes; docs/python.md lists where they differ).
    threads: threads for large tensors (None: every core)."""
    fmt, elem, emax, max_pos = _elem(elem_dtype)
    mode = _mode(scaling_mode)
    if block_size != 32:
        raise ValueError(f"block_size: MX blocks are 32 elements in mxpack, got {block_size}")
    _check_hp(data_hp, block_size)
    shape = tuple(data_hp.shape)
    cols = shape[-1]
    rows = math.prod(shape[:-1])
    packed = elem == "e2m1"
    if _compat(compat):
        code, y = _torchao_mx(_f32(data_hp).reshape(rows, cols), elem, emax, max_pos, mode)
        codes = _encode_torchao(y, elem, threads)
        elements = _pack_uint4(codes) if packed else codes
        scales = code.reshape(-1)
        if is_swizzled_scales:
            scales = _relayout(scales, rows, cols // 32, "tcgen05")
    else:
        q = mxpack.quantize(data_hp.detach().reshape(rows, cols), fmt, mode,
                            "dense4" if packed else "codes",
                            "tcgen05" if is_swizzled_scales else "linear",
                            stats=False, threads=threads)
        elements, scales = q._elements, q._scales
    if packed:
        data_lp = _as_torch(elements, shape[:-1] + (cols // 2,))
    elif elem in ("e4m3", "e5m2"):
        data_lp = _as_torch(elements, shape, getattr(torch, str(elem_dtype).replace("torch.", "")))
    else:
        data_lp = _as_torch(elements, shape)
    if is_swizzled_scales:
        m, k = (shape[-2], shape[-1]) if len(shape) >= 2 else (1, shape[-1])
        sm, sk = hp_data_dims_to_swizzled_scale_dims_mx(m, k)
        scale = _as_torch(scales, (-1,), torch.float8_e8m0fnu).view(*shape[:-2], sm, sk)
    else:
        scale = _as_torch(scales, shape[:-1] + (cols // 32,), torch.float8_e8m0fnu)
    return scale, data_lp


def get_fp_scale(scale_e8m0: torch.Tensor) -> torch.Tensor:
    """The float32 value of e8m0 scale codes (2^(code - 127); 0xFF: NaN), as
    torchao's ``get_fp_scale``."""
    out = mxpack.decode(_u8(scale_e8m0), "ue8m0", np.float32)
    return torch.from_numpy(out).reshape(scale_e8m0.shape)


def to_dtype(data_lp: torch.Tensor, scale_e8m0: torch.Tensor, elem_dtype,
             block_size: int, target_dtype: torch.dtype, *,
             threads: Optional[int] = None) -> torch.Tensor:
    """Dequantizes to_mx() results (linear scales) to `target_dtype`
    (float32, bfloat16, float16), as torchao's ``mx_tensor.to_dtype``: each
    element times its 2^s, rounded once (mxpack::DequantizeMx). A 2-D
    transposed data_lp / scale pair (``.t()`` of contiguous tensors) is
    dequantized in row-major order and transposed back, as torchao does."""
    fmt, elem, _, _ = _elem(elem_dtype)
    if block_size != 32:
        raise ValueError(f"block_size: MX blocks are 32 elements in mxpack, got {block_size}")
    transposed = not data_lp.is_contiguous()
    if transposed:
        data_lp, scale_e8m0 = data_lp.t(), scale_e8m0.t()
    packed = elem == "e2m1"
    shape = tuple(data_lp.shape)
    cols = shape[-1] * (2 if packed else 1)
    rows = math.prod(shape[:-1])
    q = mxpack.QuantizedTensor(fmt, (rows, cols), _u8(data_lp).reshape(-1),
                               _u8(scale_e8m0.contiguous()).reshape(-1),
                               layout="dense4" if packed else "codes")
    to = mxpack._canonical_arg(target_dtype, "target_dtype")
    out = _dequant_torch(q, to, threads)
    out = out.reshape(*shape[:-1], cols)
    return out.t() if transposed else out


def _dequant_torch(q: "mxpack.QuantizedTensor", to: str, threads) -> torch.Tensor:
    q.kind = "torch"
    return q.dequantize(to, threads=threads)


# ---------------------------------------------------------------------------
# NVFP4.

def per_tensor_amax_to_scale(amax: torch.Tensor) -> torch.Tensor:
    """torchao's NVFP4 per-tensor scale of an amax: amax / (448 * 6) in f32,
    the tensor scale mxpack computes itself when it sees the whole tensor."""
    return amax.to(torch.float32) / (448.0 * 6.0)


def _tensor_scale(per_tensor_scale) -> Optional[float]:
    if per_tensor_scale is None:
        return None
    t = per_tensor_scale
    if isinstance(t, torch.Tensor):
        if t.numel() != 1:
            raise ValueError(f"per_tensor_scale: expected one value, got shape "
                             f"{tuple(t.shape)} (per-expert scales are not supported)")
        t = t.detach().to(torch.float32).cpu().reshape(())
        return float(t.item())
    return float(np.float32(t))


def _torchao_nvfp4(x: np.ndarray, t: Optional[float]):
    """torchao's nvfp4_quantize arithmetic on float32 rows x cols: (e4m3
    scale codes [rows, blocks], scaled f32 values to cast)."""
    rows, cols = x.shape
    xb = x.reshape(rows, cols // 16, 16)
    with np.errstate(all="ignore"):
        amax = np.max(np.abs(xb), axis=-1).astype(np.float32)
        bs = (amax / np.float32(6.0)).astype(np.float32)
        if t is not None:
            bs = (bs / np.float32(t)).astype(np.float32)
        clamped = np.clip(bs, np.float32(2.0**-6), np.float32(448.0))
        code = mxpack.encode(clamped, "e4m3", codes=True)
        d = mxpack.decode(code, "e4m3", np.float32)
        if t is None:
            r = (np.float32(1.0) / d).astype(np.float32)
        else:
            r = ((np.float32(1.0) / np.float32(t)) / d).astype(np.float32)
        y = (xb * r[..., None]).astype(np.float32)
        y = np.clip(y, np.float32(-6.0), np.float32(6.0))
    return code, y.reshape(rows, cols)


def nvfp4_quantize(data_hp: torch.Tensor, block_size: int = 16,
                   per_tensor_scale: Optional[torch.Tensor] = None, *,
                   compat: str = "mxpack", threads: Optional[int] = None):
    """NVFP4 quantization as torchao's ``nvfp4_tensor.nvfp4_quantize``:
    returns ``(scales, data_lp)``.

    data_hp: float32 or bfloat16, contiguous, last dimension a multiple of 16.
    per_tensor_scale: the f32 tensor scale t (torchao's convention, e.g.
      per_tensor_amax_to_scale(amax) = amax / 2688); None: single-level
      scaling, t = 1.
    scales: torch.float8_e4m3fn block scales (ue4m3 codes; sign bit 0) of
      shape (data_hp.shape[0], numel / data_hp.shape[0] / 16).
    data_lp: uint8 (*data_hp.shape[:-1], K/2), two e2m1 codes per byte,
      element 2i in the low nibble.
    compat: "mxpack" (default; block scale ue4m3(amax / (6 t)) rounded once,
      elements rounded once from the exact x / (d t), docs/semantics.md
      section 5) or "torchao" (torchao's f32 arithmetic: scale
      e4m3(clamp(f32(f32(amax / 6) / t), 2^-6, 448)), elements
      x * f32(f32(1 / t) / d)). docs/python.md shows where they differ.
    threads: threads for large tensors (None: every core)."""
    if block_size != 16:
        raise ValueError(f"block_size: NVFP4 blocks are 16 elements, got {block_size}")
    _check_hp(data_hp, block_size)
    shape = tuple(data_hp.shape)
    cols = shape[-1]
    rows = math.prod(shape[:-1])
    t = _tensor_scale(per_tensor_scale)
    if _compat(compat):
        code, y = _torchao_nvfp4(_f32(data_hp).reshape(rows, cols), t)
        elements = _pack_uint4(_encode_torchao(y, "e2m1", threads))
        scales = code
    else:
        q = mxpack.quantize(data_hp.detach().reshape(rows, cols), "nvfp4", "even",
                            "dense4", tensor_scale=1.0 if t is None else t,
                            stats=False, threads=threads)
        elements, scales = q._elements, q._scales
    scale = _as_torch(scales, (shape[0] if len(shape) > 1 else 1, -1), torch.float8_e4m3fn)
    data_lp = _as_torch(elements, shape[:-1] + (cols // 2,))
    return scale, data_lp


def nvfp4_dequantize(qdata: torch.Tensor, scale: torch.Tensor,
                     per_tensor_scale: Optional[torch.Tensor] = None,
                     output_dtype: torch.dtype = torch.float32, block_size: int = 16, *,
                     compat: str = "mxpack", threads: Optional[int] = None) -> torch.Tensor:
    """Dequantizes nvfp4_quantize() results (linear scales), as torchao's
    ``NVFP4Tensor.dequantize(output_dtype)``: e * d * t in f32, then one
    rounding to output_dtype. mxpack computes (e * d) * t (e * d exact, one
    f32 rounding); compat="torchao" computes e * f32(t * d) as torchao's
    get_hp_scales does (the same when per_tensor_scale is None)."""
    if block_size != 16:
        raise ValueError(f"block_size: NVFP4 blocks are 16 elements, got {block_size}")
    shape = tuple(qdata.shape)
    cols = shape[-1] * 2
    rows = math.prod(shape[:-1])
    t = _tensor_scale(per_tensor_scale)
    to = mxpack._canonical_arg(output_dtype, "output_dtype")
    if _compat(compat):
        e = mxpack.decode_packed(_u8(qdata).reshape(-1), "e2m1", "dense4", rows * cols,
                                 threads=threads).reshape(rows, cols // 16, 16)
        d = mxpack.decode(_u8(scale).reshape(rows, cols // 16), "e4m3", np.float32)
        if t is not None:
            d = (np.float32(t) * d).astype(np.float32)
        with np.errstate(all="ignore"):
            f = (e * d[..., None]).astype(np.float32).reshape(*shape[:-1], cols)
        out = torch.from_numpy(f)
        return out if output_dtype == torch.float32 else out.to(output_dtype)
    q = mxpack.QuantizedTensor("nvfp4", (rows, cols), _u8(qdata).reshape(-1),
                               _u8(scale).reshape(-1), 1.0 if t is None else t,
                               layout="dense4")
    return _dequant_torch(q, to, threads).reshape(*shape[:-1], cols)
