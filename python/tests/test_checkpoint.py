"""export_checkpoint / dequantize_checkpoint against `mxpack quantize-model` /
`dequantize-model` on a sharded model directory: every scheme writes the same
files byte for byte as the CLI, the report lists each tensor's reason, dry runs
write nothing, and errors name the argument."""

import filecmp
import json
import os

import pytest

import mxpack


@pytest.fixture(scope="module")
def model_dir(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("ckpt") / "llama-tiny"
    cli.run(["example-model", "--layers=2", "--shards=2", str(d)])
    return d


def same_tree(a, b):
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b))
    for n in names:
        assert filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False), n


@pytest.mark.parametrize("scheme,fmt", [
    ("compressed-tensors", "nvfp4"), ("compressed-tensors", "mxfp4"),
    ("compressed-tensors", "mxfp8_e4m3"), ("modelopt", "nvfp4"),
    ("modelopt", "mxfp8_e4m3"), ("mxpack", "mxfp6_e2m3")])
def test_export_equals_cli(cli, model_dir, tmp_path, scheme, fmt):
    py_out, cli_out = tmp_path / "py", tmp_path / "cli"
    report = mxpack.export_checkpoint(model_dir, py_out, fmt, scheme=scheme,
                                      threads=2)
    cli.run(["quantize-model", f"--scheme={scheme}", f"--format={fmt}",
             "--quiet", str(model_dir), str(cli_out)])
    same_tree(py_out, cli_out)
    assert report["scheme"] == scheme
    reasons = {t["name"]: t for t in report["tensors"]}
    assert reasons["lm_head.weight"]["quantized"] is False
    assert reasons["model.layers.0.self_attn.q_proj.weight"]["quantized"] is True
    config = json.loads((py_out / "config.json").read_text())
    assert ("quantization_config" in config) == (scheme != "mxpack")


def test_dry_run_writes_nothing(model_dir, tmp_path):
    out = tmp_path / "never"
    report = mxpack.export_checkpoint(model_dir, out, "nvfp4", dry_run=True)
    assert report["dry_run"] is True
    assert not out.exists()


def test_dequantize_checkpoint_equals_cli(cli, model_dir, tmp_path):
    q = tmp_path / "q"
    mxpack.export_checkpoint(model_dir, q, "nvfp4")
    mxpack.dequantize_checkpoint(q, tmp_path / "py", to="bf16")
    cli.run(["dequantize-model", "--to=bf16", "--quiet", str(q), str(tmp_path / "cli")])
    same_tree(tmp_path / "py", tmp_path / "cli")


def test_errors_name_the_argument(model_dir, tmp_path):
    with pytest.raises(ValueError, match="format"):
        mxpack.export_checkpoint(model_dir, tmp_path / "o", "fp5")
    with pytest.raises(ValueError, match="scheme"):
        mxpack.export_checkpoint(model_dir, tmp_path / "o", scheme="nope")
    with pytest.raises(ValueError, match="input"):
        mxpack.export_checkpoint(model_dir, model_dir)   # the input itself
    with pytest.raises(ValueError, match="threads"):
        mxpack.export_checkpoint(model_dir, tmp_path / "o", threads=-1)
    assert not (tmp_path / "o").exists()
