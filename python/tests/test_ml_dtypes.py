"""Cross-check with ml_dtypes (numpy dtypes of JAX & co.): for e4m3, e5m2,
e2m3, e3m2, e2m1 and e8m0, every f16 input, every bf16 input and a large f32
sample agree with mxpack except in the documented classes (README "Python",
docs/semantics.md section 1 last paragraph). Each difference class is asserted
exactly (which inputs, and both sides' values), so a silent change on either
side fails."""

import numpy as np
import pytest

import mxpack
from conftest import all_f16, f32_sample

ml_dtypes = pytest.importorskip("ml_dtypes")

# numpy warns when casting NaN / out-of-range values; those are the point here.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FORMATS = {
    "e2m1": "float4_e2m1fn", "e2m3": "float6_e2m3fn", "e3m2": "float6_e3m2fn",
    "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "ue8m0": "float8_e8m0fnu",
}


def inputs(src):
    if src == "f16":
        return all_f16()
    if src == "bf16":
        return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16)
    return f32_sample(1 << 20, seed=2)


def ml_encode(x, fmt):
    return x.astype(getattr(ml_dtypes, FORMATS[fmt])).view(np.uint8)


def mx_encode(x, fmt, rounding="rn", saturation="satfinite"):
    return mxpack.encode(x, fmt, rounding, saturation, codes=True)


def exact(x):
    return x.astype(np.float64)


SOURCES = ["f16", "bf16", "f32"]


@pytest.mark.parametrize("src", SOURCES)
@pytest.mark.parametrize("fmt", ["e2m1", "e2m3", "e3m2"])
def test_fp4_fp6(src, fmt):
    """Agree with satfinite (ml_dtypes saturates fp4/fp6 too, Inf included)
    except NaN: mxpack gives +max finite (PTX cvt .satfinite), ml_dtypes gives
    a zero (documented: ml_dtypes maps fp4/fp6 NaN to -0/+0)."""
    x = inputs(src)
    ml, mx = ml_encode(x, fmt), mx_encode(x, fmt)
    nan = np.isnan(exact(x))
    assert nan.any()
    assert np.array_equal(ml[~nan], mx[~nan])
    info = mxpack.format_info(fmt)
    sign = 1 << (info["bits"] - 1)
    assert np.all(mx[nan] == info["max_code"])          # +max
    assert np.all((ml[nan] & np.uint8(0xFF ^ sign)) == 0)   # +-0
    # ml_dtypes' zero takes the inverted NaN sign bit (observed: +NaN -> -0).
    neg = np.signbit(exact(x)[nan])
    assert np.all((ml[nan] == sign) == ~neg)


@pytest.mark.parametrize("src", SOURCES)
def test_e4m3(src):
    """ml_dtypes float8_e4m3fn is non-saturating: it equals mxpack nosat
    except that NaN inputs keep their sign in ml_dtypes (0xFF for -NaN) where
    mxpack returns the canonical 0x7F. Under mxpack's default satfinite,
    |x| > 464 (the rn overflow threshold) and +-Inf give +-448 (0x7E/0xFE) in
    mxpack and +-NaN in ml_dtypes."""
    x = inputs(src)
    v = exact(x)
    ml = ml_encode(x, "e4m3")
    nan = np.isnan(v)
    neg_nan = nan & np.signbit(v)
    nosat = mx_encode(x, "e4m3", saturation="nosat")
    assert np.array_equal(ml[~neg_nan], nosat[~neg_nan])
    assert np.all(ml[neg_nan] == 0xFF) and np.all(nosat[neg_nan] == 0x7F)

    sat = mx_encode(x, "e4m3")
    over = ~nan & (np.abs(v) > 464)
    assert over.any()
    differ = ml != sat
    assert np.array_equal(differ, over | neg_nan)
    assert np.all(sat[over] == np.where(np.signbit(v[over]), 0xFE, 0x7E))
    assert np.all(ml[over] == np.where(np.signbit(v[over]), 0xFF, 0x7F))


@pytest.mark.parametrize("src", SOURCES)
def test_e5m2(src):
    """ml_dtypes float8_e5m2 overflows to Inf like mxpack nosat (ties at 61440
    go to Inf in both: IEEE ties-to-even). NaN inputs keep sign and the top
    mantissa bits in ml_dtypes (a NaN code of the input's sign); mxpack returns
    the canonical 0x7F. Under satfinite, |x| >= 61440 and +-Inf give
    +-57344 (0x7B/0xFB) in mxpack and +-Inf in ml_dtypes."""
    x = inputs(src)
    v = exact(x)
    ml = ml_encode(x, "e5m2")
    nan = np.isnan(v)
    nosat = mx_encode(x, "e5m2", saturation="nosat")
    assert np.array_equal(ml[~nan], nosat[~nan])
    assert np.all(nosat[nan] == 0x7F)
    assert np.all(((ml[nan] & 0x7C) == 0x7C) & ((ml[nan] & 0x03) != 0))   # a NaN code
    assert np.array_equal((ml[nan] & 0x80) != 0, np.signbit(v[nan]))

    sat = mx_encode(x, "e5m2")
    over = ~nan & (np.abs(v) >= 61440)
    assert over.any()
    assert np.array_equal(ml[~nan] != sat[~nan], over[~nan])
    assert np.all(sat[over] == np.where(np.signbit(v[over]), 0xFB, 0x7B))
    assert np.all(ml[over] == np.where(np.signbit(v[over]), 0xFC, 0x7C))


@pytest.mark.parametrize("src", SOURCES)
def test_e8m0(src):
    """ml_dtypes float8_e8m0fnu rounds to nearest, mxpack offers only the PTX
    modes rz (floor) and rp (ceil): for positive finite x with
    2^-127 <= x <= 2^127, ml_dtypes equals rp when the significand of x is
    >= 1.5 and rz otherwise. Further documented differences: ml_dtypes gives
    NaN (0xFF) for zero, negative inputs and values that round above 2^127;
    mxpack encodes |x|, gives 0x00 for zero and saturates to 0xFE (satfinite).
    Subnormal sources: in [2^-127, 2^-126) ml_dtypes equals rp (everything
    above 2^-127 becomes 2^-126); below 2^-127 it gives 0x00, as mxpack rz
    does."""
    x = inputs(src)
    v = exact(x)
    ml = ml_encode(x, "ue8m0")
    rz = mx_encode(x, "ue8m0", "rz")
    rp = mx_encode(x, "ue8m0", "rp")
    rp_nosat = mx_encode(x, "ue8m0", "rp", "nosat")
    nan = np.isnan(v)
    assert np.all(ml[nan] == 0xFF) and np.all(rz[nan] == 0xFF) and np.all(rp[nan] == 0xFF)

    pos = ~nan & (v > 0) & np.isfinite(v)
    normal = pos & (v >= 2.0**-126)
    m, _ = np.frexp(v[normal])                    # v = m * 2^e, m in [0.5, 1)
    up = m >= 0.75                                # significand >= 1.5
    assert up.any() and (~up).any()
    assert np.array_equal(ml[normal], np.where(up, rp_nosat[normal], rz[normal]))
    # Subnormal sources in [2^-127, 2^-126): ml_dtypes rounds every value
    # above 2^-127 up to 2^-126 (0x01), i.e. it equals rp there.
    sub = pos & (v >= 2.0**-127) & (v < 2.0**-126)
    if src != "f16":
        assert sub.any()
    assert np.array_equal(ml[sub], rp[sub])
    in_range = normal | sub
    # From 1.5 * 2^127 on ml_dtypes rounds up past 2^127 to NaN; mxpack rp
    # satfinite saturates at 0xFE (nosat gives 0xFF).
    over = in_range & (v >= 1.5 * 2.0**127)
    if src != "f16":
        assert over.any()
    assert np.all(rp[over] == 0xFE) and np.all(ml[over] == 0xFF)

    tiny = pos & (v < 2.0**-127)
    assert np.all(ml[tiny] == 0x00) and np.all(rz[tiny] == 0x00)

    zero_or_neg = ~nan & (v <= 0)
    assert zero_or_neg.any()
    assert np.all(ml[zero_or_neg] == 0xFF)
    z = zero_or_neg & (v == 0)
    assert np.all(rz[z] == 0x00) and np.all(rp[z] == 0x00)
    neg = zero_or_neg & (v < 0)
    assert np.array_equal(rz[neg], mx_encode(np.abs(x[neg]), "ue8m0", "rz"))

    inf = np.isinf(v)
    assert np.all(ml[inf] == 0xFF) and np.all(rp[inf] == 0xFE) and np.all(rp_nosat[inf] == 0xFF)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_decode_every_code(fmt):
    """Decoding agrees on every code; NaN codes are NaN on both sides (mxpack
    returns the canonical 0x7FFFFFFF, ml_dtypes keeps the sign)."""
    bits = mxpack.format_info(fmt)["bits"]
    codes = np.arange(1 << bits, dtype=np.uint8)
    ml = codes.view(getattr(ml_dtypes, FORMATS[fmt])).astype(np.float32)
    mx = mxpack.decode(codes, fmt)
    nan = np.isnan(ml)
    assert np.array_equal(np.isnan(mx), nan)
    assert np.array_equal(ml[~nan].view(np.uint32), mx[~nan].view(np.uint32))
    assert np.all(mx[nan].view(np.uint32) == 0x7FFFFFFF)
    for to in ["f16", "bf16"]:
        if fmt == "ue8m0" and to == "f16":
            continue
        got = mxpack.decode(codes, fmt, to).astype(np.float32)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan], ml[~nan])


def test_bf16_and_f16_encode_agree_with_ml_dtypes():
    """f32 -> bf16 / f16 (rn, nosat = IEEE) agree with ml_dtypes / numpy
    except NaN payloads: mxpack returns the canonical 0x7FFF."""
    x = f32_sample(1 << 20, seed=4)
    nan = np.isnan(x)
    for fmt, dt in [("bf16", ml_dtypes.bfloat16), ("f16", np.float16)]:
        mx = mxpack.encode(x, fmt, saturation="nosat", codes=True)
        ref = x.astype(dt).view(np.uint16)
        assert np.array_equal(mx[~nan], ref[~nan])
        assert np.all(mx[nan] == 0x7FFF)
