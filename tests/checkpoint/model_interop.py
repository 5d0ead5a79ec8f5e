"""mxpack <-> Python safetensors interoperability (run by model_interop_test.sh).

Python writes a checkpoint with safetensors.numpy; mxpack inspects, quantizes
and dequantizes it; Python loads every mxpack output with the reference
loader, checks names/dtypes/shapes/metadata, and decodes the dense MXFP4
bytes itself (e2m1 nibbles, ue8m0 scales) to compare with mxpack's
dequantize-model output value for value.
"""
import json
import subprocess
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

MX, T = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def mx(*args):
    r = subprocess.run([MX, *args, "--quiet"] if args[0] != "inspect" else [MX, *args],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"mxpack {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


rng = np.random.default_rng(1234)
w = (rng.standard_normal((64, 96)) * 0.05).astype(np.float32)
w[3, 5] = 4.0  # outlier
h = (rng.standard_normal((32, 64)) * 0.5).astype(np.float16)
tensors = {
    "layer.weight": w,
    "layer.half": h,
    "layer.bias": rng.standard_normal(96).astype(np.float32),
    "ids": np.arange(5, dtype=np.int64),
    "mask": np.array([1, 0, 1], dtype=np.uint8),
}
src = f"{T}/py.safetensors"
save_file(tensors, src, metadata={"format": "np", "origin": "python"})

# Python -> mxpack: inspect lists everything Python wrote.
out = mx("inspect", src)
for name, a in tensors.items():
    shape = "[" + ", ".join(str(d) for d in a.shape) + "]"
    check(any(line.split()[:1] == [name] and shape in line for line in out.splitlines()),
          f"inspect lists {name} {shape}: {out}")
check("origin = python" in out, "inspect shows Python metadata")

# mxpack quantizes (dense layout) and Python loads the result.
q = f"{T}/q.safetensors"
mx("quantize-model", src, q, "--format=mxfp4", "--layout=dense", "--include=^layer.half$")
loaded = load_file(q)
check(set(loaded) == {"layer.weight.qdata", "layer.weight.scales", "layer.half.qdata",
                      "layer.half.scales", "layer.bias", "ids", "mask"},
      f"quantized tensor names: {sorted(loaded)}")
qd, sc = loaded["layer.weight.qdata"], loaded["layer.weight.scales"]
check(qd.dtype == np.uint8 and qd.shape == (64, 48), f"qdata {qd.dtype} {qd.shape}")
check(sc.dtype == np.uint8 and sc.shape == (64, 3), f"scales {sc.dtype} {sc.shape}")
for name in ("layer.bias", "ids", "mask"):
    check(np.array_equal(loaded[name], tensors[name]) and loaded[name].dtype == tensors[name].dtype,
          f"copied tensor {name} unchanged")
with safe_open(q, framework="numpy") as f:
    meta = f.metadata()
check(meta.get("origin") == "python", "input metadata kept")
check("mxpack.version" in meta, "mxpack.version recorded")
rec = json.loads(meta["mxpack.tensor.layer.weight"])
for k, v in {"format": "mxfp4", "layout": "dense", "element_layout": "dense4",
             "scale_layout": "linear", "scale_mode": "floor", "dtype": "F32",
             "shape": [64, 96], "block_size": 32, "qdata": "layer.weight.qdata",
             "scales": "layer.weight.scales"}.items():
    check(rec.get(k) == v, f"record {k} = {rec.get(k)!r}, expected {v!r}")

# Decode dense4 e2m1 + ue8m0 in numpy (element 2i in the low nibble).
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
codes = np.empty((64, 96), dtype=np.uint8)
codes[:, 0::2] = qd & 0xF
codes[:, 1::2] = qd >> 4
scale = np.ldexp(1.0, sc.astype(np.int64) - 127)
ref = (E2M1[codes] * np.repeat(scale, 32, axis=1)).astype(np.float32)

# mxpack dequantizes and Python compares.
b = f"{T}/back.safetensors"
mx("dequantize-model", q, b)
back = load_file(b)
check(back["layer.weight"].dtype == np.float32 and back["layer.weight"].shape == (64, 96),
      "dequantized dtype/shape")
check(np.array_equal(back["layer.weight"], ref),
      f"dequantized values == numpy decode (max diff {np.abs(back['layer.weight'] - ref).max()})")
check(back["layer.half"].dtype == np.float16 and back["layer.half"].shape == (32, 64),
      "f16 tensor dequantized to f16")
err = np.abs(back["layer.weight"] - w)
check(err.max() <= 0.5 * np.abs(w).max() and err.mean() < 0.02, f"error sane: {err.max()} {err.mean()}")
with safe_open(b, framework="numpy") as f:
    check(not any(k.startswith("mxpack.") for k in f.metadata()), "mxpack keys dropped")

# tcgen05 layout and nvfp4 files load too (padded elements, 512-byte tiles).
t = f"{T}/t.safetensors"
mx("quantize-model", src, t, "--format=nvfp4", "--layout=tcgen05", "--include=^layer.half$")
lt = load_file(t)
check(lt["layer.weight.qdata"].shape == (64, 96), f"b4x16_p64 qdata {lt['layer.weight.qdata'].shape}")
check(lt["layer.weight.scales"].shape == (1, 2, 512), f"tcgen05 scales {lt['layer.weight.scales'].shape}")
check(lt["layer.weight.tscale"].dtype == np.float32 and lt["layer.weight.tscale"].shape == (1,),
      "tscale F32 [1]")
check(abs(lt["layer.weight.tscale"][0] - np.float32(4.0) / np.float32(2688)) == 0,
      f"tscale = amax / 2688: {lt['layer.weight.tscale'][0]}")

print(f"model_interop: {'FAILED' if failures else 'ok'} ({len(failures)} failures)")
sys.exit(1 if failures else 0)
