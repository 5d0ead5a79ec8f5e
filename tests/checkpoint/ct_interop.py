"""mxpack quantize-model -> compressed-tensors (run by ct_interop_test.sh).

Writes a small Llama-like and a small MoE model directory (bf16, sharded),
exports each with `mxpack quantize-model` in every compressed-tensors format,
then checks with compressed-tensors itself: config.json's quantization_config
validates as a QuantizationConfig, and the format's compressor decompresses
every quantized module back to exactly the bf16 values `mxpack
dequantize-model` reports (bit for bit; a 3-D expert tensor one expert at a
time). Unquantized tensors must be byte-identical to the input.
"""
import json
import os
import subprocess
import sys

import torch
from compressed_tensors.compressors import BaseCompressor
from compressed_tensors.quantization import QuantizationConfig, QuantizationScheme
from safetensors.torch import load_file, save_file

MX, T = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    r = subprocess.run([MX, *args], capture_output=True, text=True)
    check(r.returncode == 0, f"mxpack {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def rand(g, *shape):
    x = torch.randn(*shape, generator=g) * 0.02
    x[..., 3] *= 20  # an outlier input channel
    return x.to(torch.bfloat16)


def write_model(d, tensors, config, shards=2):
    os.makedirs(d)
    names = list(tensors)
    per = (len(names) + shards - 1) // shards
    wm = {}
    for s in range(shards):
        part = names[s * per:(s + 1) * per]
        f = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        save_file({n: tensors[n].contiguous() for n in part}, f"{d}/{f}", metadata={"format": "pt"})
        wm.update({n: f for n in part})
    with open(f"{d}/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f)
    with open(f"{d}/config.json", "w") as f:
        json.dump(config, f)


g = torch.Generator().manual_seed(7)
H, I, V, E = 64, 128, 96, 4
llama = {"model.embed_tokens.weight": rand(g, V, H), "model.norm.weight": torch.ones(H).bfloat16(),
         "lm_head.weight": rand(g, V, H)}
for l in range(2):
    p = f"model.layers.{l}."
    llama.update({p + "input_layernorm.weight": torch.ones(H).bfloat16(),
                  p + "self_attn.q_proj.weight": rand(g, H, H), p + "self_attn.k_proj.weight": rand(g, 32, H),
                  p + "self_attn.v_proj.weight": rand(g, 32, H), p + "self_attn.o_proj.weight": rand(g, H, H),
                  p + "mlp.gate_proj.weight": rand(g, I, H), p + "mlp.up_proj.weight": rand(g, I, H),
                  p + "mlp.down_proj.weight": rand(g, H, I)})
moe = {"model.embed_tokens.weight": rand(g, V, H), "lm_head.weight": rand(g, V, H)}
p = "model.layers.0."
moe.update({p + "self_attn.q_proj.weight": rand(g, H, H), p + "block_sparse_moe.gate.weight": rand(g, E, H)})
for e in range(E):
    q = f"{p}block_sparse_moe.experts.{e}."
    moe.update({q + "w1.weight": rand(g, I, H), q + "w2.weight": rand(g, H, I), q + "w3.weight": rand(g, I, H)})
moe["model.layers.1.mlp.experts.gate_up_proj"] = rand(g, E, 2 * I, H)
moe["model.layers.1.mlp.experts.down_proj"] = rand(g, E, H, I)

models = {"llama": (llama, {"model_type": "llama"}), "moe": (moe, {"model_type": "mixtral"})}
for mname, (tensors, config) in models.items():
    src = f"{T}/{mname}"
    write_model(src, tensors, config)
    for fmt in ("nvfp4", "mxfp4", "mxfp8_e4m3"):
        out, back = f"{T}/{mname}-{fmt}", f"{T}/{mname}-{fmt}-back"
        run("quantize-model", src, out, f"--format={fmt}", "--max-shard-size=40KB", "--quiet")
        run("dequantize-model", out, back)
        if not os.path.exists(f"{out}/config.json") or not os.path.exists(back):
            continue
        with open(f"{out}/config.json") as f:
            qc = json.load(f)["quantization_config"]
        cfg = QuantizationConfig.model_validate(qc)
        group = cfg.config_groups["group_0"]
        scheme = QuantizationScheme(targets=group.targets, weights=group.weights)
        comp = BaseCompressor.get_value_from_registry(cfg.format)
        got, ref = {}, {}
        for f in os.listdir(out):
            if f.endswith(".safetensors"):
                got.update(load_file(f"{out}/{f}"))
        for f in os.listdir(back):
            if f.endswith(".safetensors"):
                ref.update(load_file(f"{back}/{f}"))
        checked = 0
        for name, x in tensors.items():
            key = name + ("_packed" if fmt != "mxfp8_e4m3" else "")
            if fmt == "mxfp8_e4m3" and name + "_scale" not in got:
                key = None
            if key is None or key not in got:
                check(name in got and torch.equal(got[name].view(torch.int16), x.view(torch.int16)),
                      f"{mname} {fmt}: unquantized {name} unchanged")
                continue
            experts = x.shape[0] if x.dim() == 3 else None
            for e in range(experts or 1):
                def part(k):
                    t = got[name + k]
                    return t[e] if experts else t
                sd = {"weight_scale": part("_scale")}
                if fmt == "mxfp8_e4m3":
                    sd["weight"] = part("")
                else:
                    sd["weight_packed"] = part("_packed")
                if fmt == "nvfp4":
                    sd["weight_global_scale"] = part("_global_scale")
                w = comp.decompress(sd, scheme)["weight"]
                r = ref[name][e] if experts else ref[name]
                check(w.dtype == torch.bfloat16 and r.dtype == torch.bfloat16
                      and torch.equal(w.view(torch.int16), r.view(torch.int16)),
                      f"{mname} {fmt}: {name}[{e}] compressed-tensors decompress == mxpack dequantize-model")
                err = (w.float() - (x[e] if experts else x).float()).abs().max().item()
                check(err < 0.5 * x.float().abs().max().item(), f"{mname} {fmt}: {name} error sane ({err})")
                checked += 1
        check(checked > 0, f"{mname} {fmt}: quantized modules found")
        ignore = qc.get("ignore", [])
        check("lm_head" in ignore, f"{mname} {fmt}: lm_head ignored ({ignore})")
        if mname == "moe":
            check("model.layers.0.block_sparse_moe.gate" in ignore, f"moe {fmt}: router ignored")
            if fmt == "nvfp4":
                gs1 = got[p + "block_sparse_moe.experts.1.w1.weight_global_scale"]
                gs3 = got[p + "block_sparse_moe.experts.1.w3.weight_global_scale"]
                check(torch.equal(gs1, gs3), "moe nvfp4: expert w1/w3 share a global scale")
        print(f"{mname} {fmt}: {checked} matrices decompressed by compressed-tensors")

# gpt-oss: transformers' own MXFP4 dequantizer (convert_moe_packed_tensors)
# reads mxpack's *_blocks / *_scales back to exactly dequantize-model's values,
# in gpt-oss's [E, in, out] parameter layout.
try:
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
except ImportError as e:  # transformers is optional here
    convert_moe_packed_tensors = None
    print("gpt-oss: skipped (transformers not installed):", e)
if convert_moe_packed_tensors is not None:
    go = {"model.embed_tokens.weight": rand(g, V, H), "lm_head.weight": rand(g, V, H),
          "model.layers.0.self_attn.q_proj.weight": rand(g, H, H),
          "model.layers.0.mlp.router.weight": rand(g, E, H),
          "model.layers.0.mlp.experts.gate_up_proj": rand(g, E, H, 2 * I),
          "model.layers.0.mlp.experts.gate_up_proj_bias": rand(g, E, 2 * I),
          "model.layers.0.mlp.experts.down_proj": rand(g, E, I, H),
          "model.layers.0.mlp.experts.down_proj_bias": rand(g, E, H)}
    src = f"{T}/gptoss"
    write_model(src, go, {"model_type": "gpt_oss"}, shards=1)
    run("quantize-model", src, f"{T}/gptoss-q", "--scheme=gpt-oss", "--quiet")
    run("dequantize-model", f"{T}/gptoss-q", f"{T}/gptoss-back")
    if os.path.exists(f"{T}/gptoss-back"):
        got = load_file(f"{T}/gptoss-q/model.safetensors")
        ref = load_file(f"{T}/gptoss-back/model.safetensors")
        with open(f"{T}/gptoss-q/config.json") as f:
            qc = json.load(f)["quantization_config"]
        check(qc["quant_method"] == "mxfp4", f"gpt-oss quant_method: {qc}")
        for proj in ("gate_up_proj", "down_proj"):
            n = f"model.layers.0.mlp.experts.{proj}"
            b, s = got[n + "_blocks"], got[n + "_scales"]
            check(b.dtype == torch.uint8 and b.dim() == 4 and b.shape[-1] == 16, f"gpt-oss {proj} blocks {b.shape}")
            w = convert_moe_packed_tensors(b, s, dtype=torch.bfloat16)
            check(w.shape == go[n].shape and torch.equal(w.view(torch.int16), ref[n].view(torch.int16)),
                  f"gpt-oss {proj}: transformers dequantize == mxpack dequantize-model")
            err = (w.float() - go[n].float()).abs().max().item()
            check(err < 0.5 * go[n].float().abs().max().item(), f"gpt-oss {proj}: error sane ({err})")
            check(torch.equal(got[n + "_bias"].view(torch.int16), go[n + "_bias"].view(torch.int16)),
                  f"gpt-oss {proj} bias kept")
        check("model.layers.0.self_attn.q_proj.weight" in got, "gpt-oss attention kept in bf16")
        print("gpt-oss: experts dequantized by transformers")

print(f"ct_interop: {'FAILED' if failures else 'ok'} ({len(failures)} failures)")
sys.exit(1 if failures else 0)
