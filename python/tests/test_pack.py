"""pack / unpack / decompress / compress and the fused encode/decode paths
against `mxpack pack|unpack|decompress|compress|convert` on the same bytes."""

import numpy as np
import pytest

import mxpack

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

LAYOUT_BITS = {"dense4": 4, "dense6": 6, "b4x16_p64": 4, "b6x16_p32": 6}
LAYOUT_FORMATS = {4: ["e2m1"], 6: ["e2m3", "e3m2"]}


def random_codes(n, bits, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << bits, size=n, dtype=np.uint8)


@pytest.mark.parametrize("layout", sorted(LAYOUT_BITS))
@pytest.mark.parametrize("n", [0, 1, 5, 16, 17, 1000, 4099])
def test_pack_unpack_match_cli(cli, layout, n):
    bits = LAYOUT_BITS[layout]
    codes = random_codes(n, bits, seed=n)
    packed = mxpack.pack(codes, layout)
    assert packed.dtype == np.uint8
    assert packed.size == mxpack.packed_bytes(layout, n)
    assert packed.tobytes() == cli.bytes(["pack", f"--layout={layout}"], codes.tobytes())
    back = mxpack.unpack(packed, layout, n)
    assert back.tobytes() == codes.tobytes()
    assert back.tobytes() == cli.bytes(["unpack", f"--layout={layout}", f"--count={n}"],
                                       packed.tobytes())
    for impl in ["scalar"] + mxpack.available_targets():
        assert mxpack.pack(codes, layout, impl=impl).tobytes() == packed.tobytes()
        assert mxpack.unpack(packed, layout, n, impl=impl).tobytes() == codes.tobytes()


@pytest.mark.parametrize("layout", sorted(LAYOUT_BITS))
def test_unpack_default_count_matches_cli(cli, layout):
    nbytes = {"dense4": 50, "dense6": 51, "b4x16_p64": 64, "b6x16_p32": 64}[layout]
    packed = np.random.default_rng(5).integers(0, 256, nbytes, dtype=np.uint8)
    got = mxpack.unpack(packed, layout)
    assert got.tobytes() == cli.bytes(["unpack", f"--layout={layout}"], packed.tobytes())


def test_unpack_default_count_rejects_partial_groups(cli):
    packed = np.zeros(20, dtype=np.uint8)
    with pytest.raises(ValueError, match="multiple of 16"):
        mxpack.unpack(packed, "b4x16_p64")
    assert cli.run(["unpack", "--layout=b4x16_p64"], packed.tobytes(),
                   check=False).returncode == 2


@pytest.mark.parametrize("layout", ["b4x16_p64", "b6x16_p32"])
@pytest.mark.parametrize("container", ["low6", "mid6"])
def test_decompress_compress_match_cli(cli, layout, container):
    bits = LAYOUT_BITS[layout]
    codes = random_codes(16 * 37, bits, seed=11)
    packed = mxpack.pack(codes, layout)
    # Padding is ignored by readers: fill it with garbage.
    garbage = packed.reshape(-1, 16).copy()
    garbage[:, 8 if bits == 4 else 12:] = 0xA5
    garbage = garbage.reshape(-1)
    b8 = mxpack.decompress(garbage, layout, container)
    assert b8.tobytes() == cli.bytes(
        ["decompress", f"--src={layout}", f"--fp6-container={container}"],
        garbage.tobytes())
    c = mxpack.compress(b8, layout, container)
    assert c.tobytes() == packed.tobytes()
    assert c.tobytes() == cli.bytes(
        ["compress", f"--dst={layout}", f"--fp6-container={container}"], b8.tobytes())
    assert mxpack.decompress(garbage, layout, container, impl="scalar").tobytes() == \
        b8.tobytes()


@pytest.mark.parametrize("layout", sorted(LAYOUT_BITS))
def test_encode_packed_matches_cli_convert_then_pack(cli, layout):
    from conftest import f32_sample
    x = f32_sample(1 << 10)[:3001]
    for fmt in LAYOUT_FORMATS[LAYOUT_BITS[layout]]:
        for rounding in ["rn", "rz", "rs"]:
            got = mxpack.encode_packed(x, fmt, layout, rounding, seed=5)
            codes = cli.bytes(["convert", "--from=f32", f"--to={fmt}",
                               f"--rounding={rounding}", "--seed=5"], x.tobytes())
            want = cli.bytes(["pack", f"--layout={layout}"], codes)
            assert got.tobytes() == want, (fmt, rounding)
            # decode_packed == CLI unpack + convert to f32 / bf16.
            for to in ["f32", "bf16"]:
                dec = mxpack.decode_packed(got, fmt, layout, x.size, to=to)
                want_dec = cli.bytes(["convert", f"--from={fmt}", f"--to={to}"], codes)
                assert dec.tobytes() == want_dec


@pytest.mark.parametrize("layout,fmt", [("b4x16_p64", "e2m1"), ("b6x16_p32", "e2m3"),
                                        ("b6x16_p32", "e3m2")])
@pytest.mark.parametrize("container", ["low6", "mid6"])
def test_decode_containers_match_cli(cli, layout, fmt, container):
    codes = random_codes(16 * 20, LAYOUT_BITS[layout], seed=3)
    packed = mxpack.pack(codes, layout)
    b8 = mxpack.decompress(packed, layout, container)
    got = mxpack.decode_containers(b8, fmt, "f16", container)
    want = cli.bytes(["convert", f"--from={fmt}", "--to=f16"], codes.tobytes())
    assert got.dtype == np.float16
    assert got.tobytes() == want


def test_pack_accepts_ml_dtypes_codes():
    if ml_dtypes is None:
        pytest.skip("ml_dtypes not installed")
    x = np.linspace(-6, 6, 64, dtype=np.float32)
    q = mxpack.encode(x, "e2m1")
    assert q.dtype == ml_dtypes.float4_e2m1fn
    assert mxpack.pack(q, "dense4").tobytes() == \
        mxpack.pack(mxpack.encode(x, "e2m1", codes=True), "dense4").tobytes()
