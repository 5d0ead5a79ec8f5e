"""mxpack.torch against torchao's reference functions
(torchao.prototype.mx_formats): bit-identical on random and structured
matrices (f32 and bf16, every element dtype, every scale mode), each
documented difference (docs/python.md, "mxpack.torch and torchao") asserted
with both sides' bytes, and compat="torchao" equal to torchao everywhere."""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (python_peers did not install it; see its output)")
pytest.importorskip(
    "torchao.prototype.mx_formats",
    reason="torchao is not installed (python_peers did not install it; see its output)")

from torchao.prototype.mx_formats import mx_tensor as ao_mx  # noqa: E402
from torchao.prototype.mx_formats import nvfp4_tensor as ao_nv  # noqa: E402
from torchao.prototype.mx_formats import utils as ao_utils  # noqa: E402
from torchao.prototype.mx_formats.config import ScaleCalculationMode as M  # noqa: E402

import mxpack.torch as mt  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")

ELEMS = [torch.float8_e4m3fn, torch.float8_e5m2, "fp6_e2m3", "fp6_e3m2",
         torch.float4_e2m1fn_x2]
MODES = [M.FLOOR, M.RCEIL, M.CEIL, M.EVEN]


def u8(t):
    return t.contiguous().view(torch.uint8)


def random_matrix(rows, cols, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g) * torch.exp2(
        torch.randint(-6, 6, (rows, 1), generator=g).float())


def structured_matrix():
    """Blocks of 32 (two NVFP4 blocks each) whose amax runs over many
    binades with every mantissa edge (1.0, 1.5, the largest mantissas, the
    element ties), zeros, mixed signs and element ties inside blocks; all
    finite and with scales well above 2^-127 (the documented classes are
    tested separately)."""
    rows = []
    mants = [1.0, 1.0 + 2.0**-23, 1.25, 1.5, 1.75, 1.875, 1.9375, 2.0 - 2.0**-23,
             1.0625, 1.125]
    rng = np.random.default_rng(4)
    for e in range(-40, 41, 3):
        for m in mants:
            amax = m * 2.0**e
            row = amax * rng.choice([-1, 1], 64) * rng.choice(
                [1.0, 0.75, 0.5, 0.25, 0.125, 1 / 3, 0.0, 5 / 6, 7 / 12, 0.0625], 64)
            row[0] = amax
            row[32] = -amax
            rows.append(row)
    return torch.tensor(np.array(rows), dtype=torch.float32)


def rceil_near_pow2(x, elem):
    """Blocks where torchao's RCEIL (f32 log2 of f32 amax / max) may round
    the exponent down: amax / max within 2^-20 above a power of two."""
    max_pos = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "fp6_e2m3": 7.5,
               "fp6_e3m2": 28.0, "float4_e2m1fn_x2": 6.0}[str(elem).replace("torch.", "")]
    amax = x.float().reshape(x.shape[0], -1, 32).abs().amax(-1).double() / max_pos
    frac = amax / torch.exp2(torch.floor(torch.log2(amax)))
    return (frac > 1.0) & (frac < 1.0 + 2.0**-20)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_to_mx_bit_identical_to_torchao(dtype, elem):
    for x in (random_matrix(96, 256, 1), structured_matrix()):
        x = x.to(dtype)
        for mode in MODES:
            s0, d0 = ao_mx.to_mx(x, elem, 32, mode)
            s1, d1 = mt.to_mx(x, elem, 32, mode)
            s2, d2 = mt.to_mx(x, elem, 32, mode.name, compat="torchao")
            assert s1.dtype == s0.dtype and s1.shape == s0.shape
            assert d1.dtype == d0.dtype and d1.shape == d0.shape
            assert torch.equal(u8(s2), u8(s0)) and torch.equal(u8(d2), u8(d0)), mode
            diff = u8(s1) != u8(s0)
            if mode == M.RCEIL:
                # The only class: amax / max just above a power of two, where
                # mxpack's exact rule is one binade above torchao's.
                near = rceil_near_pow2(x, elem)
                assert bool((~diff | near).all()), mode
                assert bool((u8(s1)[diff].int() - u8(s0)[diff].int() == 1).all())
                keep = ~diff.repeat_interleave(32 // (2 if elem == torch.float4_e2m1fn_x2
                                                      else 1), dim=1)
                assert torch.equal(u8(d1)[keep], u8(d0)[keep])
            else:
                assert not diff.any(), mode
                assert torch.equal(u8(d1), u8(d0)), mode


def test_to_mx_swizzled_scales_and_to_blocked():
    x = random_matrix(200, 384, 2)
    s0, _ = ao_mx.to_mx(x, torch.float8_e4m3fn, 32, M.FLOOR, is_swizzled_scales=True)
    s1, _ = mt.to_mx(x, torch.float8_e4m3fn, 32, M.FLOOR, is_swizzled_scales=True)
    assert s1.shape == s0.shape and torch.equal(u8(s1), u8(s0))
    for rows, cols in ((1, 1), (128, 4), (300, 7), (257, 12)):
        sc = torch.randint(0, 256, (rows, cols), dtype=torch.uint8)
        assert torch.equal(mt.to_blocked(sc), ao_utils.to_blocked(sc))
        b = mt.to_blocked(sc.view(torch.float8_e8m0fnu))
        assert b.dtype == torch.float8_e8m0fnu
        assert torch.equal(u8(mt.from_blocked(b, rows, cols)), sc)
        assert torch.equal(u8(ao_utils.from_blocked(b, rows, cols)), sc)


@pytest.mark.parametrize("elem", ELEMS, ids=str)
@pytest.mark.parametrize("target", [torch.float32, torch.bfloat16])
def test_to_dtype_bit_identical_to_torchao(elem, target):
    x = random_matrix(64, 256, 3)
    s, d = ao_mx.to_mx(x, elem, 32, M.FLOOR)
    want = ao_mx.to_dtype(d, s, elem, 32, target)
    got = mt.to_dtype(d, s, elem, 32, target)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    assert torch.equal(mt.get_fp_scale(s), ao_mx.get_fp_scale(s))


def nvfp4_element_double_rounding(x, scales, t):
    """Elements where rounding x / (d t) once (mxpack) and torchao's
    x * f32(f32(1/t) / d) can round differently: the exact quotient within
    2^-20 (relative) of an e2m1 midpoint."""
    d = scales.float().double().repeat_interleave(16, dim=1).reshape(x.shape)
    q = (x.double() / (d * (1.0 if t is None else float(t)))).abs()
    mids = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=torch.float64)
    dist = (q.unsqueeze(-1) - mids).abs().min(-1).values
    return dist <= q * 2.0**-20


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("two_level", [False, True])
def test_nvfp4_quantize_against_torchao(dtype, two_level):
    for x in (random_matrix(96, 256, 5), structured_matrix()):
        x = x.to(dtype)
        t = ao_nv.per_tensor_amax_to_scale(x.abs().max()) if two_level else None
        s0, d0 = ao_nv.nvfp4_quantize(x, 16, t)
        s1, d1 = mt.nvfp4_quantize(x, 16, t)
        s2, d2 = mt.nvfp4_quantize(x, 16, t, compat="torchao")
        assert (s1.dtype, s1.shape, d1.dtype, d1.shape) == (s0.dtype, s0.shape, d0.dtype, d0.shape)
        assert torch.equal(u8(s2), u8(s0)) and torch.equal(u8(d2), u8(d0))
        # Scales: torchao clamps amax / (6 t) to [2^-6, 448] before the cast
        # (no subnormal scales); mxpack rounds it once (ue4m3 subnormals and
        # 0 included). Two-level: torchao divides f32(amax / 6) by t, mxpack
        # amax by f32(6 t): one ulp apart at rounding ties.
        q = x.float().reshape(x.shape[0], -1, 16).abs().amax(-1) / 6.0
        if two_level:
            q = q / t
        clamped = q < 2.0**-6
        diff = u8(s1) != u8(s0)
        if two_level:
            # Only at ties: the exact amax / (6 t) within 2^-20 of the
            # midpoint of the two neighbouring e4m3 values both sides chose.
            exact = (x.double().reshape(x.shape[0], -1, 16).abs().amax(-1)
                     / (6.0 * float(t)))
            lo, hi = s0.double(), s1.double()
            mid = (lo + hi) / 2
            tie = (exact - mid).abs() <= exact * 2.0**-20
            assert bool((~diff | clamped | tie).all())
        else:
            assert not diff[~clamped].any()
        # Elements of blocks with equal scales: the single rounding.
        same = (~diff).repeat_interleave(16, dim=1).reshape(x.shape)
        un = lambda d: torch.stack([u8(d) & 0xF, u8(d) >> 4], -1).reshape(x.shape)
        ediff = (un(d1) != un(d0)) & same
        assert bool((~ediff | nvfp4_element_double_rounding(x.float(), s0, t)).all())


def test_nvfp4_dequantize_against_torchao():
    x = random_matrix(64, 256, 6)
    for t in (None, ao_nv.per_tensor_amax_to_scale(x.abs().max())):
        ref = ao_nv.NVFP4Tensor.to_nvfp4(x, per_tensor_scale=t)
        for out in (torch.float32, torch.bfloat16):
            want = ref.dequantize(out)
            got = mt.nvfp4_dequantize(ref.qdata, ref.scale, t, out, compat="torchao")
            assert torch.equal(got.view(torch.int16 if out == torch.bfloat16 else torch.int32),
                               want.view(torch.int16 if out == torch.bfloat16 else torch.int32))
            mine = mt.nvfp4_dequantize(ref.qdata, ref.scale, t, out)
            if t is None:   # e * d is exact: both orders agree
                assert torch.equal(mine.view(torch.uint8), want.view(torch.uint8))
            else:           # (e d) t vs e f32(t d): at most one f32 ulp apart
                assert torch.allclose(mine.float(), want.float(), rtol=2**-7, atol=0)


# ---------------------------------------------------------------------------
# The documented differences, each with both sides' bytes (docs/python.md).

def block(values, dtype=torch.float32):
    row = list(values) + [0.0] * (32 - len(values))
    return torch.tensor([row], dtype=dtype)


def both(x, elem, mode):
    s0, d0 = ao_mx.to_mx(x, elem, 32, mode)
    s1, d1 = mt.to_mx(x, elem, 32, mode)
    s2, d2 = mt.to_mx(x, elem, 32, mode, compat="torchao")
    assert torch.equal(u8(s2), u8(s0)) and torch.equal(u8(d2), u8(d0))
    return (u8(s0).flatten().tolist(), u8(d0).flatten()[:4].tolist(),
            u8(s1).flatten().tolist(), u8(d1).flatten()[:4].tolist())


def test_difference_nan_block():
    x = block([float("nan"), 1.0, -2.0])
    # torchao: scale 0xFF, the block divided by +Inf (finite -> +-0, NaN kept
    # with its sign). mxpack: scale 0xFF, every element encode(NaN) = 0x7F.
    assert both(x, torch.float8_e4m3fn, M.FLOOR) == ([255], [0x7F, 0x00, 0x80, 0x00],
                                                     [255], [0x7F] * 4)
    assert both(block([-float("nan"), 1.0]), torch.float8_e4m3fn, M.FLOOR)[1][0] == 0xFF
    # fp4: torchao's bit conversion has no NaN case (0x7FC00000 -> code 3);
    # mxpack: +max (0x7) in every element.
    assert both(x, torch.float4_e2m1fn_x2, M.FLOOR) == ([255], [0x03, 0x08, 0x00, 0x00],
                                                        [255], [0x77] * 4)


def test_difference_inf_block():
    x = block([float("inf"), 1.0, -2.0])
    # torchao: Inf enters amax (FLOOR: exponent 128 - 8 -> scale 0xF7; RCEIL
    # 0xFE), every finite element flushes to 0, Inf saturates to 448.
    # mxpack: Inf stays out of amax (scale from 2.0 -> 2^-7 = 0x78), Inf
    # encodes as 448 and the other elements keep their values.
    assert both(x, torch.float8_e4m3fn, M.FLOOR) == ([0xF7], [0x7E, 0x00, 0x80, 0x00],
                                                     [0x78], [0x7E, 0x70, 0xF8, 0x00])
    assert both(x, torch.float8_e4m3fn, M.RCEIL)[0] == [0xFE]


def test_difference_scale_2_pow_minus_127():
    x = block([2.0**-130, 2.0**-133, -(2.0**-135)])
    # Scale code 0 (2^-127) on both sides. torchao FLOOR divides by 2^-126
    # (its scale is clamped to the smallest normal f32), RCEIL multiplies by
    # 1.0; mxpack divides by the 2^-127 it records: 2^-3, 2^-6, -2^-8.
    assert both(x, torch.float8_e4m3fn, M.FLOOR) == ([0], [0x18, 0x04, 0x81, 0x00],
                                                     [0], [0x20, 0x08, 0x82, 0x00])
    assert both(x, torch.float8_e4m3fn, M.RCEIL) == ([0], [0x00, 0x00, 0x80, 0x00],
                                                     [0], [0x20, 0x08, 0x82, 0x00])


def test_difference_rceil_near_powers_of_two():
    v = float(np.nextafter(np.float32(448.0 * 2.0**10), np.float32(np.inf)))
    x = block([v, 1.0])
    # amax / 448 = 2^10 (1 + 2^-23): the smallest s with amax <= 448 * 2^s is
    # 11 (mxpack, 0x8A); torchao's f32 log2 rounds to exactly 10 (0x89), so
    # its largest element saturates at 448 (0x7E) instead of rounding to 224.
    assert both(x, torch.float8_e4m3fn, M.RCEIL) == ([0x89], [0x7E, 0x00, 0x00, 0x00],
                                                     [0x8A], [0x76, 0x00, 0x00, 0x00])


def test_difference_nvfp4_tiny_scales():
    x = torch.tensor([[1e-3] + [0.0] * 15], dtype=torch.float32)
    s0, d0 = ao_nv.nvfp4_quantize(x, 16, None)
    s1, d1 = mt.nvfp4_quantize(x, 16, None)
    # amax / 6 = 1.67e-4: torchao clamps to e4m3's smallest normal 2^-6
    # (code 0x08) and the element rounds to 0; mxpack rounds it once to
    # ue4m3: below half the smallest subnormal 2^-9, so code 0x00, and the
    # elements are encode(x * 0) = 0.
    assert u8(s0).flatten().tolist() == [0x08] and u8(d0).flatten()[0].item() == 0
    assert u8(s1).flatten().tolist() == [0x00]
    x = torch.tensor([[7e-3] + [0.0] * 15], dtype=torch.float32)
    s0, d0 = ao_nv.nvfp4_quantize(x, 16, None)
    s1, d1 = mt.nvfp4_quantize(x, 16, None)
    # amax / 6 = 1.17e-3: torchao 2^-6 again (element 7e-3 * 64 = 0.45 ->
    # 0.5, code 0x1); mxpack: ue4m3 rn gives the subnormal 2^-9 (0x01) and
    # the element 7e-3 * 512 = 3.58 -> 4 (code 0x6).
    assert u8(s0).flatten().tolist() == [0x08] and u8(d0).flatten()[0].item() == 0x01
    assert u8(s1).flatten().tolist() == [0x01] and u8(d1).flatten()[0].item() == 0x06


def f32_bits(b):
    return float(np.array([b], np.uint32).view(np.float32)[0])


def test_difference_nvfp4_element_rounding():
    # Block [x, amax] with t = f32 0x3e65e24e: both sides pick scale d = 14
    # (0x56). x = f32 0x41300143 = 11.000308; x / (d t) = 3.4999998 exactly,
    # which mxpack rounds once to 3 (code 0x5). torchao multiplies by
    # f32(f32(1 / t) / d) and the f32 product is 3.5, a tie that goes to 4
    # (code 0x6). compat="torchao" gives torchao's 0x6.
    x = torch.tensor([[f32_bits(0x41300143), f32_bits(0x4196DC83)] + [0.0] * 14])
    t = torch.tensor(f32_bits(0x3E65E24E))
    s0, d0 = ao_nv.nvfp4_quantize(x, 16, t)
    s1, d1 = mt.nvfp4_quantize(x, 16, t)
    s2, d2 = mt.nvfp4_quantize(x, 16, t, compat="torchao")
    assert u8(s0).flatten().tolist() == u8(s1).flatten().tolist() == [0x56]
    assert u8(d0)[0, 0].item() & 0xF == 0x6 and u8(d2)[0, 0].item() & 0xF == 0x6
    assert u8(d1)[0, 0].item() & 0xF == 0x5
