"""Regenerates the compressed-tensors golden files of golden_test.cc.

The expected bytes come from compressed-tensors itself, driven the way
llm-compressor drives it (observer statistics in the weight's dtype, fused
q/k/v and gate/up groups sharing one global scale), on CPU:

  global scale  generate_gparam(-absmax, absmax) over the fused group
  block scales  calculate_qparams(per-group min, max, args, global_scale)
  bytes         <Format>Compressor.compress({weight, weight_scale, ...}, scheme)
  dequantized   <Format>Compressor.decompress(compressed, scheme)

ModelOpt's NVFP4 comes from NVFP4QTensor (nvidia-modelopt) the way its HF
export calls it: t = amax.float() / (6 * 448) with amax the fused group's
(get_weights_scaling_factor_2_from_quantizer, preprocess_linear_fusion), then
NVFP4QTensor.quantize(weight, 16, weights_scaling_factor_2=t) and
NVFP4QTensor.dequantize. Its MXFP8 is the export's MXFP8 branch:
MXFP8QTensor.get_weights_scaling_factor(weight) (no stored scale), then
MXFP8QTensor.quantize_with_scale and MXFP8QTensor.dequantize. 3-D expert
tensors are not part of that export.

Usage: python make_golden.py OUT_DIR   (needs torch, compressed-tensors,
nvidia-modelopt, safetensors; the versions used are stored in the files'
metadata). Writes input.safetensors and, per format F in nvfp4 / mxfp4 /
mxfp8 / modelopt_nvfp4 / modelopt_mxfp8, F.safetensors (the quantized tensors) and
F.dequant.safetensors (bf16).
"""
import sys

import compressed_tensors
import modelopt
import torch
from compressed_tensors.compressors import BaseCompressor
from compressed_tensors.quantization import preset_name_to_scheme
from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam
from safetensors.torch import save_file

OUT = sys.argv[1]
META = {"torch": torch.__version__, "compressed_tensors": compressed_tensors.__version__,
        "modelopt": modelopt.__version__, "format": "pt"}


def weights(seed, shape, dtype):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 0.05
    x = x * torch.exp(torch.randn(shape[:-1] + (1,), generator=g, dtype=torch.float64))
    x = x.to(dtype)
    flat = x.view(-1, shape[-1])
    if flat.shape[0] < 5:
        return x
    flat[0, :32] = 0.0                         # an all-zero block (MX and NVFP4)
    flat[1, 0] = -0.0                          # negative zero
    flat[1, 1:17] = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0,
                                  -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, -6.0],
                                 dtype=torch.float64).to(dtype) * 0.0625
    flat[2, 5] = 7.5                           # an outlier
    flat[3, 0:16] = torch.tensor(1.7e-3, dtype=torch.float64).to(dtype)
    flat[4, 0:32] = (torch.arange(32, dtype=torch.float64) - 15.5).to(dtype) * 1e-6
    return x


# name -> tensor; names as in a Llama / MoE checkpoint (default selection).
tensors = {
    "model.layers.0.self_attn.q_proj.weight": weights(1, (32, 64), torch.bfloat16),
    "model.layers.0.self_attn.k_proj.weight": weights(2, (16, 64), torch.bfloat16),
    "model.layers.0.self_attn.v_proj.weight": weights(3, (16, 64), torch.bfloat16),
    "model.layers.0.self_attn.o_proj.weight": weights(4, (64, 32), torch.float32),
    "model.layers.0.mlp.gate_proj.weight": weights(5, (32, 64), torch.float16),
    "model.layers.0.mlp.up_proj.weight": weights(6, (32, 64), torch.float16),
    "model.layers.0.mlp.down_proj.weight": weights(7, (64, 96), torch.float32),
    "model.layers.1.mlp.experts.gate_up_proj": weights(8, (2, 32, 64), torch.bfloat16),
    "model.layers.1.mlp.gate.weight": weights(9, (2, 64), torch.bfloat16),
    "model.norm.weight": torch.ones(64, dtype=torch.bfloat16),
    "lm_head.weight": weights(10, (8, 64), torch.bfloat16),
}
tensors["model.layers.0.self_attn.k_proj.weight"][0, 40] = 9.0  # group amax from k
QUANTIZED = [n for n in tensors if "proj" in n]
GROUPS = {"q_proj": "qkv", "k_proj": "qkv", "v_proj": "qkv", "gate_proj": "gu",
          "up_proj": "gu"}
save_file(tensors, f"{OUT}/input.safetensors", metadata=META)

PRESETS = {"nvfp4": "NVFP4A16", "mxfp4": "MXFP4A16", "mxfp8": "MXFP8A16"}
COMPRESSORS = {"nvfp4": "nvfp4-pack-quantized", "mxfp4": "mxfp4-pack-quantized",
               "mxfp8": "mxfp8-quantized"}


def group_key(name):
    for k, g in GROUPS.items():
        if f".{k}." in name:
            return name.split(f".{k}.")[0] + g
    return name


def matrices(name):
    """(suffix, 2-D matrix) per expert."""
    t = tensors[name]
    if t.dim() == 3:
        return [(e, t[e]) for e in range(t.shape[0])]
    return [(None, t)]


for fmt, preset in PRESETS.items():
    scheme = preset_name_to_scheme(preset, ["Linear"])
    args = scheme.weights
    comp = BaseCompressor.get_value_from_registry(COMPRESSORS[fmt])
    # Fused-group absmax in the weight dtype, per expert index.
    absmax = {}
    for name in QUANTIZED:
        for e, w in matrices(name):
            key = (group_key(name), e)
            m = w.abs().max()
            absmax[key] = m if key not in absmax else torch.max(absmax[key], m)
    out, deq = {}, {}
    for name in QUANTIZED:
        parts = []
        for e, w in matrices(name):
            g = w.reshape(w.shape[0], -1, args.group_size)
            gs = None
            if fmt == "nvfp4":
                m = absmax[(group_key(name), e)]
                gs = generate_gparam(-m.reshape(1), m.reshape(1))
            scale, _ = calculate_qparams(g.amin(-1), g.amax(-1), args, global_scale=gs)
            sd = {"weight": w, "weight_scale": scale}
            if gs is not None:
                sd["weight_global_scale"] = gs
            c = comp.compress(sd, scheme)
            d = comp.decompress(dict(c), scheme)
            parts.append((c, d["weight"]))
        stacked = len(parts) > 1 or tensors[name].dim() == 3
        for key in parts[0][0]:
            vals = [p[0][key] for p in parts]
            v = torch.stack(vals) if stacked else vals[0]
            out_name = name if key == "weight" else f"{name}_{key.removeprefix('weight_')}"
            out[out_name] = v.contiguous()
        dv = [p[1] for p in parts]
        deq[name] = (torch.stack(dv) if stacked else dv[0]).contiguous()
    save_file(out, f"{OUT}/{fmt}.safetensors", metadata=META)
    save_file(deq, f"{OUT}/{fmt}.dequant.safetensors", metadata=META)
    print(fmt, {k: (str(v.dtype), tuple(v.shape)) for k, v in out.items()})

# ModelOpt NVFP4 (2-D weights only).
from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor  # noqa: E402

amax = {}
for name in QUANTIZED:
    if tensors[name].dim() == 2:
        key = group_key(name)
        m = tensors[name].abs().max()
        amax[key] = m if key not in amax else torch.max(amax[key], m)
out, deq = {}, {}
for name in QUANTIZED:
    w = tensors[name]
    if w.dim() != 2:
        continue
    t = amax[group_key(name)].float() / (6.0 * 448.0)
    q, scale, t = NVFP4QTensor.quantize(w, 16, weights_scaling_factor_2=t)
    base = name.removesuffix(".weight")
    out[name] = q._quantized_data.contiguous()
    out[base + ".weight_scale"] = scale.contiguous()
    out[base + ".weight_scale_2"] = t.reshape(()).contiguous()
    deq[name] = q.dequantize(dtype=torch.bfloat16, scale=scale, double_scale=t,
                             block_sizes={-1: 16}).contiguous()
save_file(out, f"{OUT}/modelopt_nvfp4.safetensors", metadata=META)
save_file(deq, f"{OUT}/modelopt_nvfp4.dequant.safetensors", metadata=META)
print("modelopt_nvfp4", {k: (str(v.dtype), tuple(v.shape)) for k, v in out.items()})

# ModelOpt MXFP8 (2-D weights only).
from modelopt.torch.quantization.qtensor.mxfp8_tensor import MXFP8QTensor  # noqa: E402

out, deq = {}, {}
for name in QUANTIZED:
    w = tensors[name]
    if w.dim() != 2:
        continue
    scale = MXFP8QTensor.get_weights_scaling_factor(w)
    q = MXFP8QTensor.quantize_with_scale(w, scale)
    base = name.removesuffix(".weight")
    out[name] = q.contiguous()
    out[base + ".weight_scale"] = scale.contiguous()
    deq[name] = MXFP8QTensor(w.shape, w.dtype, q).dequantize(
        dtype=torch.bfloat16, scale=scale).contiguous()
save_file(out, f"{OUT}/modelopt_mxfp8.safetensors", metadata=META)
save_file(deq, f"{OUT}/modelopt_mxfp8.dequant.safetensors", metadata=META)
print("modelopt_mxfp8", {k: (str(v.dtype), tuple(v.shape)) for k, v in out.items()})
