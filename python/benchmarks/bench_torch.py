"""mxpack against torch and torchao on the same CPU tensors, in one process,
with the same number of threads for everyone (torch.set_num_threads and
mxpack's threads=), printed as a Markdown table:

  python python/benchmarks/bench_torch.py [--mib 64] [--threads 2] [--reps 5]

Rows: f32 -> e4m3 and bf16 -> e4m3 (mxpack.encode vs Tensor.to(
torch.float8_e4m3fn)), MXFP4 (mxpack.torch.to_mx vs torchao's to_mx, FLOOR)
and NVFP4 (mxpack.torch.nvfp4_quantize vs torchao's nvfp4_quantize with a
per-tensor scale). Every input is --mib MiB; each time is the median of
--reps calls that allocate their outputs, after one warm-up call. The
speedup is the peer's time over mxpack's. torchao rows are left out when
torchao is not installed.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import mxpack
import mxpack.torch as mt


def median_ms(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=64, help="input size in MiB")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--peer-reps", type=int, default=3,
                    help="repetitions of the (slow) torchao calls")
    ap.add_argument("--json", help="also write the rows here, as the --peers "
                    "input of bench/perf_table.py")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    nt = args.threads

    g = torch.Generator().manual_seed(0)
    cols = 4096
    rows32 = int(args.mib * (1 << 20)) // 4 // cols
    x32 = torch.randn(rows32, cols, generator=g)
    x16 = torch.randn(rows32 * 2, cols, generator=g).to(torch.bfloat16)
    mib = lambda t: t.numel() * t.element_size() / (1 << 20)

    rows = []

    def row(op, inp, ours, peer_name, peer, target, reps=args.reps, peer_reps=args.reps):
        a = median_ms(ours, reps)
        b = median_ms(peer, peer_reps)
        rows.append((op, inp, a, peer_name, b, b / a, target))

    row("f32 -> e4m3", f"f32 {mib(x32):g} MiB",
        lambda: mxpack.encode(x32, "e4m3", threads=nt),
        "torch `.to(float8_e4m3fn)`", lambda: x32.to(torch.float8_e4m3fn), 2.0)
    row("bf16 -> e4m3", f"bf16 {mib(x16):g} MiB",
        lambda: mxpack.encode(x16, "e4m3", threads=nt),
        "torch `.to(float8_e4m3fn)`", lambda: x16.to(torch.float8_e4m3fn), 2.0)

    try:
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import (
            nvfp4_quantize, per_tensor_amax_to_scale)
        have_torchao = True
    except ImportError:
        have_torchao = False
    if have_torchao:
        for name, x in (("f32", x32), ("bf16", x16)):
            row("MXFP4 (FLOOR)", f"{name} {mib(x):g} MiB",
                lambda x=x: mt.to_mx(x, torch.float4_e2m1fn_x2, 32, "floor", threads=nt),
                "torchao `to_mx`",
                lambda x=x: to_mx(x, torch.float4_e2m1fn_x2, 32), 50.0,
                peer_reps=args.peer_reps)
            t = per_tensor_amax_to_scale(x.abs().max())
            row("NVFP4", f"{name} {mib(x):g} MiB",
                lambda x=x, t=t: mt.nvfp4_quantize(x, 16, t, threads=nt),
                "torchao `nvfp4_quantize`",
                lambda x=x, t=t: nvfp4_quantize(x, 16, t), 50.0,
                peer_reps=args.peer_reps)

    versions = f"torch {torch.__version__}"
    if have_torchao:
        import torchao
        versions += f", torchao {torchao.__version__}"
    if args.json:
        import json
        import sys
        with open(args.json, "w") as f:
            json.dump({
                "note": f"{args.threads} threads for everyone ({versions}); median "
                        f"of {args.reps} calls (torchao: {args.peer_reps}), "
                        f"{args.mib:g} MiB inputs",
                "command": "python " + " ".join(sys.argv),
                "rows": [{"op": f"{op}, {inp}", "mxpack": f"{a:.1f} ms",
                          "peer": f"{peer} {b:.1f} ms", "ratio": ratio}
                         for op, inp, a, peer, b, ratio, _ in rows]}, f, indent=1)
    print(f"{args.threads} threads for everyone ({versions}; mxpack targets "
          f"{', '.join(mxpack.available_targets()[:1])}); median ms of "
          f"{args.reps} calls (torchao: {args.peer_reps})\n")
    print("| operation | input | mxpack ms | peer | peer ms | speedup | target |")
    print("|---|---|---:|---|---:|---:|---:|")
    for op, inp, a, peer, b, ratio, target in rows:
        mark = "" if ratio >= target else " (below)"
        print(f"| {op} | {inp} | {a:.1f} | {peer} | {b:.1f} | {ratio:.1f}x{mark} | "
              f">= {target:g}x |")


if __name__ == "__main__":
    main()
