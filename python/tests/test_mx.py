"""quantize / QuantizedTensor against the C++ results: `mxpack quantize` and
`mxpack dequantize` on the same bytes, the scalar reference (impl="scalar"),
and the documented relations between layouts, scales and dequantization."""

import itertools
import os
import tempfile

import numpy as np
import pytest

import mxpack

MX_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "nvfp4"]
SCALE_MODES = ["floor", "rceil", "ceil", "even"]
PACKED_LAYOUTS = {4: ["dense4", "b4x16_p64"], 6: ["dense6", "b6x16_p32"], 8: []}


def element_bits(fmt):
    return mxpack.format_info(mxpack.mx_format_info(fmt)["element"])["bits"]


def layouts(fmt):
    return ["codes"] + PACKED_LAYOUTS[element_bits(fmt)]


def tensor(rows, cols, seed, dtype=np.float32):
    """Normal values with per-block magnitudes spread over many binades, plus
    zeros, a NaN, an Inf and huge/tiny values in separate rows."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-20, 20, (rows, 1)))
    x[0, :5] = 0.0
    if rows > 3:
        x[1, 3] = np.nan
        x[2, 7] = np.inf
        x[3, :] *= 2.0**100
    return x.astype(dtype)


def has_cli_command(cli, name):
    r = cli.run([name, "--help"], check=False)
    return r.returncode == 0


def cli_quantize(cli, x, fmt, mode, layout, scale_layout, src="f32"):
    rows, cols = x.shape
    with tempfile.TemporaryDirectory() as d:
        paths = {k: os.path.join(d, k) for k in ["in", "e", "s", "t"]}
        with open(paths["in"], "wb") as f:
            f.write(x.tobytes())
        args = ["quantize", f"--format={fmt}", f"--rows={rows}", f"--cols={cols}",
                f"--from={src}", f"--layout={layout}", f"--scale-layout={scale_layout}",
                f"--in={paths['in']}", f"--out-elements={paths['e']}",
                f"--out-scales={paths['s']}"]
        if mode:
            args.append(f"--scale-mode={mode}")
        if fmt == "nvfp4":
            args.append(f"--out-tensor-scale={paths['t']}")
        cli.run(args)
        out = [open(paths["e"], "rb").read(), open(paths["s"], "rb").read()]
        out.append(np.frombuffer(open(paths["t"], "rb").read(), np.float32)[0]
                   if fmt == "nvfp4" else np.float32(1.0))
        return out


def cli_dequantize(cli, q, to):
    with tempfile.TemporaryDirectory() as d:
        e, s, t = (os.path.join(d, k) for k in "est")
        q.elements.tofile(e)
        q.scales.tofile(s)
        np.array([q.tensor_scale], np.float32).tofile(t)
        args = ["dequantize", f"--format={q.format}", f"--rows={q.rows}",
                f"--cols={q.cols}", f"--layout={q.layout}",
                f"--scale-layout={q.scale_layout}", f"--in-elements={e}",
                f"--in-scales={s}", f"--to={to}"]
        if q.format == "nvfp4":
            args.append(f"--in-tensor-scale={t}")
        return cli.bytes(args)


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_quantize_matches_cli(cli, fmt):
    if not has_cli_command(cli, "quantize"):
        pytest.skip("this mxpack CLI has no quantize command")
    x = tensor(130, 70, seed=1)
    for mode, layout, scale_layout in itertools.product(
            SCALE_MODES, layouts(fmt), ["linear", "tcgen05"]):
        q = mxpack.quantize(x, fmt, mode, layout, scale_layout, stats=False)
        e, s, t = cli_quantize(cli, x, fmt, mode, layout, scale_layout)
        assert q.elements.tobytes() == e, (mode, layout, scale_layout)
        assert q.scales.tobytes() == s, (mode, layout, scale_layout)
        assert np.float32(q.tensor_scale).tobytes() == np.float32(t).tobytes()
        for to in ["f32", "bf16", "f64"]:
            assert q.dequantize(to).tobytes() == cli_dequantize(cli, q, to), to


@pytest.mark.parametrize("fmt", MX_FORMATS)
@pytest.mark.parametrize("src", ["bf16", "f16"])
def test_quantize_16_bit_sources_match_cli(cli, fmt, src):
    if not has_cli_command(cli, "quantize"):
        pytest.skip("this mxpack CLI has no quantize command")
    rng = np.random.default_rng(2)
    x32 = (rng.standard_normal((40, 100)) * np.exp2(rng.integers(-8, 8, (40, 1))))
    x = mxpack.encode(x32.astype(np.float32), src)      # float16 / bfloat16 array
    q = mxpack.quantize(x, fmt, stats=False)
    e, s, t = cli_quantize(cli, x.view(np.uint16), fmt, None, "codes", "linear", src=src)
    assert q.elements.tobytes() == e and q.scales.tobytes() == s


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_every_option_equals_scalar_reference(fmt):
    x = tensor(129, 97, seed=3)
    for mode, layout, scale_layout in itertools.product(
            SCALE_MODES, layouts(fmt), ["linear", "tcgen05"]):
        best = mxpack.quantize(x, fmt, mode, layout, scale_layout, stats=False)
        ref = mxpack.quantize(x, fmt, mode, layout, scale_layout, stats=False,
                              impl="scalar")
        assert best.elements.tobytes() == ref.elements.tobytes()
        assert best.scales.tobytes() == ref.scales.tobytes()
        assert best.tensor_scale == ref.tensor_scale
        assert best.scale_mode == mode


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_layouts_and_dequantization_relations(fmt):
    rows, cols = 200, 75
    x = tensor(rows, cols, seed=4)
    q = mxpack.quantize(x, fmt)
    info = mxpack.mx_format_info(fmt)
    block = info["block"]
    nblk = -(-cols // block)
    assert q.block_size == block
    assert q.elements.shape == (rows, nblk * block) and q.elements.dtype == np.uint8
    assert q.scales.shape == (rows, nblk)
    # Packed element layouts are the codes layout packed row by row.
    for layout in layouts(fmt)[1:]:
        p = mxpack.quantize(x, fmt, layout=layout, stats=False)
        assert p.scales.tobytes() == q.scales.tobytes()
        for r in range(0, rows, 37):
            assert p.elements[r].tobytes() == mxpack.pack(q.elements[r], layout).tobytes()
    # tcgen05 scale tiles: row r, block k at tile (r // 128, k // 4), byte
    # (r % 32) * 16 + (r % 128 // 32) * 4 + k % 4 (mx.h); padding is 0x00.
    t = mxpack.quantize(x, fmt, scale_layout="tcgen05", stats=False)
    assert t.scales.shape == (-(-rows // 128), -(-nblk // 4), 512)
    want = np.zeros_like(t.scales)
    r, k = np.meshgrid(np.arange(rows), np.arange(nblk), indexing="ij")
    want[r // 128, k // 4, (r % 32) * 16 + (r % 128 // 32) * 4 + k % 4] = q.scales
    assert np.array_equal(t.scales, want)
    assert t.dequantize().tobytes() == q.dequantize().tobytes()
    # f64 dequantization = decode(element) * decode(scale) (* tensor scale).
    elem = mxpack.decode(q.elements, info["element"], "f32").astype(np.float64)
    scale = mxpack.decode(q.scales, info["scale"], "f32").astype(np.float64)
    want = (elem.reshape(rows, nblk, block) * scale[:, :, None]).reshape(rows, -1)[:, :cols]
    if fmt == "nvfp4":
        want = want * np.float64(np.float32(q.tensor_scale))
    got = q.dequantize(np.float64)
    assert got.shape == x.shape and got.dtype == np.float64
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan], want[~nan])
    # Error statistics are recomputable from the object and the input.
    assert q.stats == q.error_stats(x)
    assert q.stats["elements"] == rows * cols
    assert q.stats["nan_inf_inputs"] == 2


def test_nvfp4_tensor_scale():
    x = tensor(64, 64, seed=5)
    finite = x[np.isfinite(x)]
    want = np.float32(np.abs(finite).max()) / np.float32(2688)
    assert mxpack.nvfp4_tensor_scale(x) == want
    q = mxpack.quantize(x, "nvfp4")
    assert np.float32(q.tensor_scale) == want
    q2 = mxpack.quantize(x, "nvfp4", tensor_scale=0.5, stats=False)
    assert q2.tensor_scale == 0.5
    assert q2.elements.tobytes() != q.elements.tobytes()


def test_nd_input_blocks_along_the_last_axis():
    x = tensor(24, 64, seed=6).reshape(2, 3, 4, 64)
    q = mxpack.quantize(x, "mxfp8_e4m3")
    flat = mxpack.quantize(x.reshape(24, 64), "mxfp8_e4m3")
    assert q.elements.tobytes() == flat.elements.tobytes()
    assert q.dequantize().shape == x.shape
    one_d = mxpack.quantize(x.reshape(-1)[:64].copy(), "mxfp4")
    assert one_d.rows == 1 and one_d.dequantize().shape == (64,)


def test_quantized_tensor_from_bytes_round_trips():
    x = tensor(50, 40, seed=7)
    q = mxpack.quantize(x, "mxfp4", layout="b4x16_p64", scale_layout="tcgen05")
    r = mxpack.QuantizedTensor("mxfp4", x.shape, q.elements.reshape(-1).copy(),
                               q.scales.reshape(-1).copy(), layout="b4x16_p64",
                               scale_layout="tcgen05")
    assert r.dequantize().tobytes() == q.dequantize().tobytes()
    with pytest.raises(ValueError, match="elements: expected"):
        mxpack.QuantizedTensor("mxfp4", x.shape, q.elements[:-1], q.scales,
                               layout="b4x16_p64", scale_layout="tcgen05")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's NaN -> int32 cast
def test_quantize_errors():
    x = tensor(4, 32, seed=8)
    with pytest.raises(ValueError, match=r"format: .*'mxfp9'"):
        mxpack.quantize(x, "mxfp9")
    with pytest.raises(ValueError, match=r"scale_mode: .*'round'"):
        mxpack.quantize(x, "mxfp4", "round")
    with pytest.raises(ValueError, match=r"dense4"):
        mxpack.quantize(x, "mxfp8_e4m3", layout="dense4")
    with pytest.raises(ValueError, match=r"scale_layout: "):
        mxpack.quantize(x, "mxfp4", scale_layout="tiled")
    with pytest.raises(TypeError, match=r"x: expected a float array"):
        mxpack.quantize(x.astype(np.int32), "mxfp4")
    with pytest.raises(ValueError, match=r"x: expected a C-contiguous array"):
        mxpack.quantize(x[:, ::2], "mxfp4")
    with pytest.raises(ValueError, match=r"0-d"):
        mxpack.quantize(np.array(1.0, np.float32), "mxfp4")
    with pytest.raises(ValueError):
        mxpack.quantize(x.astype(np.float64), "mxfp4")  # f64 is not an MX source
    with pytest.raises(ValueError, match=r"tensor"):
        mxpack.quantize(x, "nvfp4", tensor_scale=-1.0)
