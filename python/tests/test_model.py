"""quantize_model / dequantize_model against `mxpack quantize-model` /
`dequantize-model` (identical output files, byte for byte) and against
quantize() on the same tensors; the files open with the safetensors package."""

import json
import os

import numpy as np
import pytest

import mxpack

safetensors_numpy = pytest.importorskip("safetensors.numpy")
from safetensors import safe_open  # noqa: E402

# (format, model layout) -> (element layout, scale layout) of quantize().
LAYOUTS = {
    ("mxfp8_e4m3", "dense"): ("codes", "linear"),
    ("mxfp8_e4m3", "tcgen05"): ("codes", "tcgen05"),
    ("mxfp6_e3m2", "dense"): ("dense6", "linear"),
    ("mxfp6_e3m2", "tcgen05"): ("b6x16_p32", "tcgen05"),
    ("mxfp4", "dense"): ("dense4", "linear"),
    ("mxfp4", "tcgen05"): ("b4x16_p64", "tcgen05"),
    ("nvfp4", "dense"): ("dense4", "linear"),
    ("nvfp4", "tcgen05"): ("b4x16_p64", "tcgen05"),
}


def raw_tensor(path, name):
    """The bytes of tensor `name` from the file's own header (safetensors'
    numpy loader has no float8 dtypes for F8_E4M3 / F8_E5M2 tensors)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        begin, end = header[name]["data_offsets"]
        f.seek(8 + n + begin)
        return header[name]["dtype"], f.read(end - begin)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    rng = np.random.default_rng(77)
    tensors = {
        "layer0.weight": (rng.standard_normal((130, 96)) * 0.05).astype(np.float32),
        "layer0.bias": rng.standard_normal(96).astype(np.float32),
        "layer1.weight": (rng.standard_normal((64, 48)) * 0.5).astype(np.float16),
        "ids": np.arange(7, dtype=np.int64),
    }
    tensors["layer0.weight"][5, 7] = 3.0
    path = str(tmp_path_factory.mktemp("ckpt") / "in.safetensors")
    safetensors_numpy.save_file(tensors, path, metadata={"origin": "pytest"})
    return path, tensors


@pytest.mark.parametrize("fmt,layout", sorted(LAYOUTS))
def test_quantize_model_matches_cli_and_quantize(cli, checkpoint, tmp_path, fmt, layout):
    src, tensors = checkpoint
    out_py = str(tmp_path / "py.safetensors")
    out_cli = str(tmp_path / "cli.safetensors")
    report = mxpack.quantize_model(src, out_py, fmt, layout=layout, threads=2)
    cli.run(["quantize-model", src, out_cli, f"--format={fmt}", f"--layout={layout}",
             "--quiet"])
    with open(out_py, "rb") as a, open(out_cli, "rb") as b:
        assert a.read() == b.read()

    assert report["quantized_tensors"] == 2
    names = [t["name"] for t in report["tensors"]]
    assert sorted(names) == sorted(tensors)

    # The safetensors package opens the file; quantized bytes equal quantize().
    elem_layout, scale_layout = LAYOUTS[(fmt, layout)]
    with safe_open(out_py, framework="numpy") as f:
        meta = f.metadata()
        keys = set(f.keys())
        assert meta["origin"] == "pytest" and "mxpack.version" in meta
        for name in ["layer0.weight", "layer1.weight"]:
            rec = json.loads(meta[f"mxpack.tensor.{name}"])
            assert rec["format"] == fmt and rec["element_layout"] == elem_layout
            q = mxpack.quantize(tensors[name], fmt, layout=elem_layout,
                                scale_layout=scale_layout, stats=False)
            dtype, qbytes = raw_tensor(out_py, f"{name}.qdata")
            if fmt.startswith("mxfp8"):
                assert dtype == "F8_E4M3"
            else:
                assert dtype == "U8"
                assert f.get_tensor(f"{name}.qdata").tobytes() == qbytes
            scales = f.get_tensor(f"{name}.scales")
            assert qbytes == q.elements.tobytes()
            assert scales.tobytes() == q.scales.tobytes()
            if fmt == "nvfp4":
                assert f.get_tensor(f"{name}.tscale").tobytes() == \
                    np.float32(q.tensor_scale).tobytes()
        for name in ["layer0.bias", "ids"]:
            assert name in keys
            assert np.array_equal(f.get_tensor(name), tensors[name])

    # dequantize_model == dequantize-model == QuantizedTensor.dequantize().
    back_py = str(tmp_path / "back_py.safetensors")
    back_cli = str(tmp_path / "back_cli.safetensors")
    rep = mxpack.dequantize_model(out_py, back_py)
    assert rep["operation"] == "dequantize"
    cli.run(["dequantize-model", out_py, back_cli, "--quiet"])
    with open(back_py, "rb") as a, open(back_cli, "rb") as b:
        assert a.read() == b.read()
    back = safetensors_numpy.load_file(back_py)
    for name in ["layer0.weight", "layer1.weight"]:
        x = tensors[name]
        q = mxpack.quantize(x, fmt, layout=elem_layout, scale_layout=scale_layout,
                            stats=False)
        assert back[name].dtype == x.dtype and back[name].shape == x.shape
        assert back[name].tobytes() == q.dequantize(x.dtype).tobytes()


def test_quantize_model_options(checkpoint, tmp_path):
    src, _ = checkpoint
    out = tmp_path / "inc.safetensors"
    rep = mxpack.quantize_model(src, out, "mxfp8_e5m2", "rceil", "dense",
                                include="layer0", error_stats=True)
    assert rep["quantized_tensors"] == 1
    q = [t for t in rep["tensors"] if t["quantized"]]
    assert q[0]["name"] == "layer0.weight" and "stats" in q[0]
    with safe_open(str(out), framework="numpy") as f:
        rec = json.loads(f.metadata()["mxpack.tensor.layer0.weight"])
    assert rec["scale_mode"] == "rceil"
    rep = mxpack.quantize_model(src, tmp_path / "exc.safetensors", exclude="weight")
    assert rep["quantized_tensors"] == 0
    back = tmp_path / "back16.safetensors"
    mxpack.dequantize_model(out, back, to="f16")
    assert safetensors_numpy.load_file(str(back))["layer0.weight"].dtype == np.float16


def test_model_outputs_never_replace_inputs(checkpoint, tmp_path):
    """docs/cli.md "Output files": an output that is the input (any spelling,
    a hard link) or a directory is refused; a symbolic link is written through."""
    src, _ = checkpoint
    before = open(src, "rb").read()
    d = os.path.dirname(src)
    os.link(src, tmp_path / "hard.safetensors")
    for out in (src, os.path.join(d, ".", os.path.basename(src)),
                tmp_path / "hard.safetensors"):
        with pytest.raises(ValueError, match="same file as input"):
            mxpack.quantize_model(src, out)
    with pytest.raises(ValueError, match="is a directory"):
        mxpack.dequantize_model(src, tmp_path)
    assert open(src, "rb").read() == before
    os.symlink("target.safetensors", tmp_path / "link.safetensors")
    (tmp_path / "target.safetensors").write_bytes(b"old")
    mxpack.quantize_model(src, tmp_path / "link.safetensors")
    assert os.path.islink(tmp_path / "link.safetensors")
    assert (tmp_path / "target.safetensors").read_bytes()[:8] != b"old"
    assert not [p for p in os.listdir(tmp_path) if "mxpack-tmp" in p]


def test_quantize_model_errors(checkpoint, tmp_path):
    src, _ = checkpoint
    with pytest.raises(ValueError, match=r"format: .*'mxfp3'"):
        mxpack.quantize_model(src, tmp_path / "x.safetensors", "mxfp3")
    with pytest.raises(ValueError, match=r"layout: .*'tiled'"):
        mxpack.quantize_model(src, tmp_path / "x.safetensors", layout="tiled")
    with pytest.raises(ValueError, match="threads"):
        mxpack.quantize_model(src, tmp_path / "x.safetensors", threads=-1)
    missing = str(tmp_path / "missing.safetensors")
    with pytest.raises((ValueError, RuntimeError), match="missing.safetensors"):
        mxpack.quantize_model(missing, tmp_path / "x.safetensors")
    assert not os.path.exists(tmp_path / "x.safetensors")
    not_st = tmp_path / "garbage.safetensors"
    not_st.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(ValueError):
        mxpack.quantize_model(not_st, tmp_path / "y.safetensors")
