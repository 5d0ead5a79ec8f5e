"""Every entry point with torch tensors, numpy arrays, DLPack objects and
memoryviews: the same bytes as the numpy path, torch dtypes out for torch
callers, errors that name the argument; and threads=1 vs threads=N
identical on arrays large enough to be split."""

import numpy as np
import pytest

import mxpack
from conftest import f32_sample

torch = pytest.importorskip(
    "torch", reason="torch is not installed (python_peers did not install it; see its output)")


class DLPackOnly:
    """An array that speaks only DLPack (not numpy, not torch)."""

    def __init__(self, a, device=(1, 0)):
        self._a = a
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


def as_bytes(r):
    if isinstance(r, torch.Tensor):
        return r.contiguous().view(torch.uint8).numpy().tobytes()
    return np.ascontiguousarray(r).tobytes()


def kinds(a):
    """The same values as numpy, torch (CPU, zero-copy), DLPack-only and
    memoryview inputs."""
    t = torch.from_numpy(a)
    return {"numpy": a, "torch": t, "dlpack": DLPackOnly(a), "memoryview": memoryview(a)}


def bf16_torch(x32):
    return torch.from_numpy(x32).to(torch.bfloat16)


X = f32_sample(1 << 12, seed=5)[: 10240].reshape(-1, 64)    # 160 rows x 64


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m1", "e2m3", "e3m2", "ue8m0", "bf16", "f16"])
def test_encode_every_input_kind_matches_numpy(fmt):
    rounding = "rz" if fmt == "ue8m0" else "rn"
    ref = mxpack.encode(X, fmt, rounding, codes=True)
    for kind, x in kinds(X).items():
        r = mxpack.encode(x, fmt, rounding, codes=True)
        assert as_bytes(r) == ref.tobytes(), kind
        assert isinstance(r, torch.Tensor) == (kind == "torch"), kind


def test_torch_results_carry_torch_dtypes():
    t = torch.from_numpy(X)
    assert mxpack.encode(t, "e4m3").dtype == torch.float8_e4m3fn
    assert mxpack.encode(t, "e5m2").dtype == torch.float8_e5m2
    assert mxpack.encode(t, "ue8m0", "rp").dtype == torch.float8_e8m0fnu
    assert mxpack.encode(t, "bf16").dtype == torch.bfloat16
    assert mxpack.encode(t, "f16").dtype == torch.float16
    assert mxpack.encode(t, "e2m1").dtype == torch.uint8          # no unpacked fp4 dtype
    assert mxpack.encode(t, "e4m3", codes=True).dtype == torch.uint8
    p = mxpack.encode_packed(t, "e2m1", "dense4")
    assert p.dtype == torch.float4_e2m1fn_x2 and p.numel() == X.size // 2
    assert mxpack.encode_packed(t, "e2m1", "b4x16_p64").dtype == torch.uint8
    # bf16 / float8 tensors in: the format comes from the dtype.
    b = bf16_torch(X)
    e = mxpack.encode(b, "e4m3")
    assert as_bytes(e) == mxpack.encode(as_bytes_u16(b), "e4m3", src="bf16", codes=True).tobytes()
    d = mxpack.decode(e)
    assert d.dtype == torch.float32 and d.shape == b.shape
    assert mxpack.decode(e, to=torch.bfloat16).dtype == torch.bfloat16
    assert mxpack.decode(mxpack.encode(t, "ue8m0", "rz")).dtype == torch.float32


def as_bytes_u16(t):
    return t.view(torch.int16).numpy().view(np.uint16)


def test_torch_float8_matches_torch_where_semantics_agree():
    """mxpack's satfinite e4m3 equals torch's cast (which saturates finite
    values since torch 2.13) on finite inputs; NaN keeps its sign in torch."""
    x = torch.from_numpy(X)
    finite = torch.isfinite(x)
    ours = mxpack.encode(x, "e4m3").view(torch.uint8)
    theirs = x.to(torch.float8_e4m3fn).view(torch.uint8)
    big = x.abs() > 464   # torch < 2.13 gives NaN there
    ok = finite & ~big
    assert torch.equal(ours[ok], theirs[ok])


def test_decode_float4_x2_unpacks_low_nibble_first():
    codes = np.arange(16, dtype=np.uint8)
    packed = torch.from_numpy(mxpack.pack(codes, "dense4")).view(torch.float4_e2m1fn_x2)
    got = mxpack.decode(packed.reshape(2, 4))
    assert got.shape == (2, 8) and got.dtype == torch.float32
    assert got.numpy().tobytes() == mxpack.decode(codes, "e2m1").tobytes()


def test_packing_entry_points_every_input_kind():
    codes = mxpack.encode(X, "e2m1", codes=True).reshape(-1)
    codes6 = mxpack.encode(X, "e2m3", codes=True).reshape(-1)
    for layout, c in (("dense4", codes), ("b4x16_p64", codes), ("dense6", codes6),
                      ("b6x16_p32", codes6)):
        ref = mxpack.pack(c, layout)
        for kind, v in kinds(c).items():
            assert as_bytes(mxpack.pack(v, layout)) == ref.tobytes(), (layout, kind)
        for kind, v in kinds(ref).items():
            assert as_bytes(mxpack.unpack(v, layout, c.size)) == c.tobytes(), (layout, kind)
            elem = "e2m1" if "4" in layout else "e2m3"
            want = mxpack.decode_packed(ref, elem, layout, c.size)
            got = mxpack.decode_packed(v, elem, layout, c.size)
            assert as_bytes(got) == want.tobytes(), (layout, kind)
        if layout.startswith("b"):
            b8 = mxpack.decompress(ref, layout)
            for kind, v in kinds(ref).items():
                assert as_bytes(mxpack.decompress(v, layout)) == b8.tobytes(), kind
            for kind, v in kinds(b8).items():
                assert as_bytes(mxpack.compress(v, layout)) == ref.tobytes(), kind
                want = mxpack.decode_containers(b8, elem)
                assert as_bytes(mxpack.decode_containers(v, elem)) == want.tobytes(), kind
    for kind, x in kinds(X).items():
        got = mxpack.encode_packed(x, "e2m1", "b4x16_p64")
        assert as_bytes(got) == mxpack.encode_packed(X, "e2m1", "b4x16_p64").tobytes(), kind


def test_reduce_every_input_kind():
    rng = np.random.default_rng(3)
    reps = [rng.standard_normal(4096).astype(np.float32) for _ in range(3)]
    ref = mxpack.reduce(reps, type="f32")
    assert as_bytes(mxpack.reduce([torch.from_numpy(r) for r in reps], type="f32")) == ref.tobytes()
    assert as_bytes(mxpack.reduce(torch.from_numpy(np.stack(reps)), type="f32")) == ref.tobytes()
    assert as_bytes(mxpack.reduce([DLPackOnly(r) for r in reps], type="f32")) == ref.tobytes()
    # bf16 and float8 tensors: the element format comes from the dtype.
    b = [bf16_torch(r) for r in reps]
    out = mxpack.reduce(b, type="bf16")
    assert out.dtype == torch.bfloat16
    assert as_bytes(out) == mxpack.reduce([as_bytes_u16(t) for t in b], type="bf16").tobytes()
    e = [mxpack.encode(torch.from_numpy(r), "e4m3") for r in reps]
    out = mxpack.reduce(e, ptx="multimem.ld_reduce.add.acc::f16.v4.e4m3")
    assert out.dtype == torch.float8_e4m3fn
    with pytest.raises(TypeError, match="replicas"):
        mxpack.reduce(b, type="f16")


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp4", "nvfp4", "mxfp6_e3m2"])
def test_quantize_every_input_kind(fmt):
    layout = "dense4" if fmt in ("mxfp4", "nvfp4") else "codes"
    ref = mxpack.quantize(X, fmt, layout=layout, stats=True)
    for kind, x in kinds(X).items():
        q = mxpack.quantize(x, fmt, layout=layout, stats=True)
        assert as_bytes(q.elements) == ref.elements.tobytes(), kind
        assert as_bytes(q.scales) == ref.scales.tobytes(), kind
        assert q.tensor_scale == ref.tensor_scale and q.stats == ref.stats, kind
        assert as_bytes(q.dequantize()) == ref.dequantize().tobytes(), kind
        assert q.error_stats(x) == ref.stats, kind
    q = mxpack.quantize(torch.from_numpy(X), fmt, layout=layout, stats=False)
    assert q.scales.dtype == (torch.float8_e4m3fn if fmt == "nvfp4" else torch.float8_e8m0fnu)
    assert q.dequantize(torch.bfloat16).dtype == torch.bfloat16
    if layout == "dense4":
        assert q.elements.dtype == torch.float4_e2m1fn_x2
    b = bf16_torch(X)
    qb = mxpack.quantize(b, fmt, layout=layout, stats=False)
    rb = mxpack.quantize(as_bytes_u16(b), fmt, layout=layout, src="bf16", stats=False)
    assert as_bytes(qb.elements) == rb.elements.tobytes()
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert mxpack.nvfp4_tensor_scale(b) == mxpack.nvfp4_tensor_scale(
        as_bytes_u16(b).view(ml_dtypes.bfloat16))
    assert mxpack.nvfp4_tensor_scale(torch.from_numpy(X)) == mxpack.nvfp4_tensor_scale(X)


def test_errors_name_the_argument():
    t = torch.from_numpy(X)
    with pytest.raises(ValueError, match=r"x: expected a C-contiguous tensor, got shape"):
        mxpack.encode(t[:, ::2], "e4m3")
    with pytest.raises(ValueError, match=r"x: expected a C-contiguous tensor"):
        mxpack.quantize(t.t(), "mxfp4")
    with pytest.raises(ValueError, match=r"codes: expected a C-contiguous tensor"):
        mxpack.pack(torch.zeros(64, dtype=torch.uint8)[::2], "dense4")
    with pytest.raises(ValueError, match=r"x: expected a CPU tensor, got a tensor on device 'meta'"):
        mxpack.encode(torch.empty(8, device="meta"), "e4m3")
    with pytest.raises(ValueError, match=r"x: expected an array in CPU memory, got DLPack device \(2, 0\)"):
        mxpack.encode(DLPackOnly(X, device=(2, 0)), "e4m3")
    with pytest.raises(TypeError, match=r"x: expected a float array .* got dtype int32"):
        mxpack.encode(torch.zeros(4, dtype=torch.int32), "e4m3")
    with pytest.raises(TypeError, match=r"x: the tensor's dtype holds bf16 values, but src='f16'"):
        mxpack.encode(torch.zeros(4, dtype=torch.bfloat16), "e4m3", src="f16")
    with pytest.raises(TypeError, match=r"codes: the tensor's dtype holds e4m3 codes, but fmt='e5m2'"):
        mxpack.decode(torch.zeros(4, dtype=torch.float8_e4m3fn), "e5m2")
    with pytest.raises(ValueError, match=r"threads: expected >= 1"):
        mxpack.encode(X, "e4m3", threads=0)


# ---------------------------------------------------------------------------
# Threads: large inputs split over threads give the same bytes.

BIG = f32_sample(1 << 19, seed=9)[: 1 << 19].reshape(-1, 256)   # 512 Ki values


@pytest.mark.parametrize("threads", [2, 3, None])
def test_threads_give_identical_bytes(threads):
    def run(n):
        out = [mxpack.encode(BIG, f, codes=True, threads=n).tobytes()
               for f in ("e4m3", "e2m1", "bf16")]
        out.append(mxpack.encode(BIG, "e2m1", "rs", seed=3, codes=True, threads=n).tobytes())
        out.append(mxpack.random_bits(7, BIG.size, threads=n).tobytes())
        c = mxpack.encode(BIG, "e2m1", codes=True, threads=1).reshape(-1)
        for layout in ("dense4", "b4x16_p64"):
            p = mxpack.pack(c, layout, threads=n)
            out += [p.tobytes(), mxpack.unpack(p, layout, c.size, threads=n).tobytes(),
                    mxpack.encode_packed(BIG, "e2m1", layout, threads=n).tobytes(),
                    mxpack.decode_packed(p, "e2m1", layout, c.size, threads=n).tobytes()]
        p = mxpack.pack(mxpack.encode(BIG, "e3m2", codes=True, threads=1).reshape(-1), "b6x16_p32")
        b8 = mxpack.decompress(p, "b6x16_p32", threads=n)
        out += [b8.tobytes(), mxpack.compress(b8, "b6x16_p32", threads=n).tobytes(),
                mxpack.decode_containers(b8, "e3m2", threads=n).tobytes()]
        reps = [BIG, BIG[::-1].copy(), -BIG]
        out.append(mxpack.reduce(reps, type="f32", model="tree", threads=n).tobytes())
        for fmt, layout, sl in (("mxfp8_e4m3", "codes", "linear"), ("mxfp4", "b4x16_p64", "tcgen05"),
                                ("nvfp4", "dense4", "tcgen05"), ("mxfp6_e2m3", "dense6", "linear")):
            q = mxpack.quantize(BIG, fmt, layout=layout, scale_layout=sl, stats=False, threads=n)
            out += [q.elements.tobytes(), q.scales.tobytes(), np.float32(q.tensor_scale).tobytes(),
                    q.dequantize(threads=n).tobytes(), q.dequantize("bf16", threads=n).tobytes()]
        out.append(np.float32(mxpack.nvfp4_tensor_scale(BIG, threads=n)).tobytes())
        return out

    one, many = run(1), run(threads)
    assert len(one) == len(many)
    for i, (a, b) in enumerate(zip(one, many)):
        assert a == b, i


def test_threaded_quantize_matches_the_cli_path():
    """threads=1 is the library's own QuantizeMx (also what the CLI runs);
    the split path must equal it, including the NVFP4 tensor amax with NaN,
    Inf and the largest value in different chunks."""
    x = BIG.copy()
    x[5, 3] = np.nan
    x[-3, 1] = np.inf
    x[-1, -1] = 3.0e38
    for fmt in ("nvfp4", "mxfp8_e5m2"):
        a = mxpack.quantize(x, fmt, stats=False, threads=1)
        b = mxpack.quantize(x, fmt, stats=False, threads=4)
        assert a.tensor_scale == b.tensor_scale
        assert a.elements.tobytes() == b.elements.tobytes()
        assert a.scales.tobytes() == b.scales.tobytes()
