"""Bad input raises TypeError / ValueError with the C++ message and the
argument's name: wrong dtypes, shapes, non-contiguous arrays, bad names,
illegal policies and invalid codes."""

import numpy as np
import pytest

import mxpack


def test_wrong_dtypes_are_type_errors():
    with pytest.raises(TypeError, match=r"x: expected a float array .* got dtype int32"):
        mxpack.encode(np.zeros(4, np.int32), "e4m3")
    with pytest.raises(TypeError, match=r"x: expected uint8 codes of e4m3"):
        mxpack.decode(np.zeros(4, np.uint16), "e4m3")
    with pytest.raises(TypeError, match=r"codes: dtype int32 does not name a format"):
        mxpack.decode(np.zeros(4, np.float32).view(np.uint32).view(np.int32))
    with pytest.raises(TypeError, match=r"holds f16 values, but src='bf16'"):
        mxpack.encode(np.zeros(4, np.float16), "e4m3", src="bf16")
    with pytest.raises(TypeError, match=r"codes: expected uint8 codes"):
        mxpack.pack(np.zeros(4, np.float32), "dense4")
    with pytest.raises(TypeError, match=r"x: expected an array \(numpy.ndarray, torch.Tensor, .*\), got list"):
        mxpack.encode([1.0, 2.0], "e4m3")
    with pytest.raises(TypeError, match=r"rbits: expected a uint32 array"):
        mxpack.encode(np.zeros(4, np.float32), "e2m1", "rs",
                      rbits=np.zeros(4, np.int64))
    with pytest.raises(TypeError, match="fmt"):
        mxpack.encode(np.zeros(4, np.float32), 3)


def test_non_contiguous_inputs_name_the_argument():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match=r"x: expected a C-contiguous array"):
        mxpack.encode(x[:, ::2], "e4m3")
    with pytest.raises(ValueError, match=r"x: expected a C-contiguous array"):
        mxpack.encode(x.T, "e4m3")
    with pytest.raises(ValueError, match=r"codes: expected a C-contiguous array"):
        mxpack.pack(np.zeros(32, np.uint8)[::2], "dense4")
    with pytest.raises(ValueError, match=r"packed: expected a C-contiguous array"):
        mxpack.decompress(np.zeros(64, np.uint8)[::2], "b4x16_p64")
    with pytest.raises(ValueError, match=r"rbits: expected a C-contiguous array"):
        mxpack.encode(np.zeros(4, np.float32), "e2m1", "rs",
                      rbits=np.zeros(8, np.uint32)[::2])
    # Contiguous slices and size-1 axes are fine.
    mxpack.encode(x[2:4], "e4m3")
    mxpack.encode(x[:, :1].reshape(8, 1)[3:4], "e4m3")


def test_bad_names_carry_the_cpp_message():
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"fmt: unknown format 'e9m9'; expected one of: e2m1"):
        mxpack.encode(x, "e9m9")
    with pytest.raises(ValueError, match=r"rounding: .*'round'"):
        mxpack.encode(x, "e4m3", "round")
    with pytest.raises(ValueError, match=r"saturation: .*'clamp'"):
        mxpack.encode(x, "e4m3", saturation="clamp")
    with pytest.raises(ValueError, match=r"impl: unknown or unavailable implementation 'avx9'"):
        mxpack.encode(x, "e4m3", impl="avx9")
    with pytest.raises(ValueError, match=r"layout: .*'dense5'"):
        mxpack.pack(np.zeros(4, np.uint8), "dense5")
    with pytest.raises(ValueError, match=r"fp6_container: .*'high6'"):
        mxpack.decompress(np.zeros(16, np.uint8), "b6x16_p32", "high6")
    with pytest.raises(ValueError, match=r"to: unknown format"):
        mxpack.decode(np.zeros(4, np.uint8), "e4m3", to="f8")
    with pytest.raises(ValueError, match=r"ptx: "):
        mxpack.reduce([np.zeros(4, np.uint8)] * 2, ptx="multimem.ld_reduce.add.e9m9")
    with pytest.raises(ValueError, match=r"type: "):
        mxpack.reduce([np.zeros(4, np.uint8)] * 2, type="e9m9")
    # ml_dtypes spellings are aliases.
    assert mxpack.encode(x, "float8_e4m3fn", codes=True).tobytes() == \
        mxpack.encode(x, "e4m3", codes=True).tobytes()


def test_illegal_policies_carry_the_cpp_message(cli):
    x = np.ones(4, np.float32)
    cases = [("e2m1", "rn", "nosat", False), ("ue8m0", "rn", "satfinite", False),
             ("ue4m3", "rn", "satfinite", True), ("e4m3", "rz", "satfinite", False)]
    for fmt, rounding, sat, relu in cases:
        args = ["convert", "--from=f32", f"--to={fmt}", f"--rounding={rounding}",
                f"--saturation={sat}"] + (["--relu"] if relu else [])
        r = cli.run(args, x.tobytes(), check=False)
        if r.returncode == 0:  # e4m3 rz is legal: the binding must agree
            assert mxpack.encode(x, fmt, rounding, sat, relu, codes=True).tobytes() == r.stdout
            continue
        msg = r.stderr.decode().strip().split("error: ", 1)[1]
        with pytest.raises(ValueError) as e:
            mxpack.encode(x, fmt, rounding, sat, relu)
        assert str(e.value) == msg


def test_invalid_codes_and_sizes_carry_the_cpp_message(cli):
    codes = np.array([1, 2, 0x10, 3], np.uint8)
    r = cli.run(["convert", "--from=e2m1", "--to=f32"], codes.tobytes(), check=False)
    assert r.returncode == 2
    with pytest.raises(ValueError) as e:
        mxpack.decode(codes, "e2m1")
    assert str(e.value) == r.stderr.decode().strip().split("error: ", 1)[1]
    with pytest.raises(ValueError, match=r"codes\[2\]"):
        mxpack.pack(codes, "dense4")
    with pytest.raises(ValueError, match="multiple of 16"):
        mxpack.decompress(np.zeros(20, np.uint8), "b4x16_p64")
    with pytest.raises(ValueError, match="rbits"):
        mxpack.encode(np.zeros(4, np.float32), "e2m1", "rs", rbits=np.zeros(3, np.uint32))
    with pytest.raises(ValueError, match="e2m1"):
        mxpack.encode_packed(np.zeros(4, np.float32), "e4m3", "dense4")
    with pytest.raises(ValueError, match="count"):
        mxpack.unpack(np.zeros(8, np.uint8), "dense4", count=-1)
    with pytest.raises(ValueError, match="bytes"):
        mxpack.unpack(np.zeros(8, np.uint8), "dense4", count=5)
