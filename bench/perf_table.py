#!/usr/bin/env python3
"""Runs mxpack_bench once and prints every kernel's speed as a ratio to memcpy.

Every SIMD benchmark is read against BM_Memcpy of the same working-set size
from the same run (best of the repetitions for both), at the L2 and the DRAM
size, next to its speed-up over the scalar reference; the end-to-end model
benchmarks are read against BM_MemcpyModel. The output is the Markdown of
docs/performance.md, so that document is regenerated, never edited:

  python3 bench/perf_table.py --bench build/bench/mxpack_bench \
      --out docs/performance.md [--repetitions 5] [--filter REGEX] \
      [--peers build/peers.json]

--json FILE reads a finished run (benchmark JSON) instead of running the
binary. --peers adds the table written by python/benchmarks/bench_torch.py --json (mxpack
against torch and torchao, same machine).
"""
import argparse
import collections
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys

L1, L2, DRAM = 24 << 10, 768 << 10, 256 << 20
FLOOR, RS_FLOOR, MODEL_FLOOR, STATS_FLOOR = 0.5, 0.3, 0.8, 0.5


def parse_name(name):
    """(kernel, size, impl) of a benchmark name; impl is 'simd' or 'scalar'."""
    parts = name.split('/')
    base = parts[0]
    impl = 'simd'
    size = None
    rest = []
    for p in parts[1:]:
        m = re.fullmatch(r'bytes:(\d+)', p)
        if m:
            size = int(m.group(1))
            continue
        if p in ('scalar:1', 'scalar'):
            impl = 'scalar'
            continue
        if p in ('scalar:0', 'simd') or p in ('real_time',) or p.startswith('iterations:'):
            continue
        if size is None and re.fullmatch(r'\d{4,}', p):
            size = int(p)
            continue
        rest.append(p)
    if base.endswith('Scalar'):
        base, impl = base[:-len('Scalar')], 'scalar'
    return '/'.join([base] + rest), size, impl


def best_rates(benchmarks):
    """Largest bytes/s per benchmark name over repetitions."""
    best = collections.defaultdict(float)
    for b in benchmarks:
        if b.get('run_type') == 'aggregate' or 'bytes_per_second' not in b:
            continue
        name = b.get('run_name', b['name'])
        best[name] = max(best[name], b['bytes_per_second'])
    return best


# End-to-end benchmarks and the memcpy of the same bytes each is read against.
MODEL_BASELINES = {
    'BM_QuantizeModel': 'BM_MemcpyModel',
    'BM_DequantizeModel': 'BM_MemcpyModel',
    'BM_QuantizeCheckpoint': 'BM_MemcpyCheckpoint',
    'BM_ExportCheckpoint': 'BM_MemcpyCheckpoint',
    'BM_DequantizeCheckpoint': 'BM_MemcpyCheckpoint',
}


# Second baselines: the checkpoint runs against writing their output files
# alone (the same format's files, to the same disk, in the same run).
DISK_BASELINES = {
    'BM_QuantizeCheckpoint': 'BM_WriteCheckpointOutput',
    'BM_DequantizeCheckpoint': 'BM_WriteDequantizedOutput',
}


def disk_baseline_of(kernel):
    for prefix, base in DISK_BASELINES.items():
        if kernel.startswith(prefix + '/'):
            return base + kernel[len(prefix):]
    return None


def baseline_of(kernel):
    for prefix, base in MODEL_BASELINES.items():
        if kernel.startswith(prefix):
            return base
    return None


def floor_of(kernel):
    if kernel.startswith('BM_QuantizeModelErrorStats'):
        return STATS_FLOOR
    if baseline_of(kernel):
        return MODEL_FLOOR
    return RS_FLOOR if '/rs.' in kernel or kernel.endswith('/rs') else FLOOR


def table(best):
    memcpy, disk = {}, {}
    model_memcpy = None
    rows = collections.OrderedDict()
    for name, rate in sorted(best.items()):
        kernel, size, impl = parse_name(name)
        if kernel == 'BM_Memcpy' and size is not None:
            memcpy[size] = rate
            continue
        if kernel in MODEL_BASELINES.values():
            model_memcpy = model_memcpy or {}
            model_memcpy[kernel] = rate
            continue
        if any(kernel.startswith(b + '/') for b in DISK_BASELINES.values()):
            disk[kernel] = rate
            continue
        rows.setdefault(kernel, {})[(size, impl)] = rate
    kernels, models = [], []
    for kernel, rates in rows.items():
        base = baseline_of(kernel)
        if base:
            r = max(rates.values())
            b = (model_memcpy or {}).get(base)
            w = disk.get(disk_baseline_of(kernel) or '')
            models.append((kernel, r / b if b else None, r / w if w else None))
            continue

        def ratio(size):
            r = rates.get((size, 'simd'))
            return r / memcpy[size] if r and size in memcpy else None

        simd, scal = rates.get((L2, 'simd')), rates.get((L2, 'scalar'))
        speedup = simd / scal if simd and scal else None
        if not any(s == 'simd' for (_, s) in rates):
            continue
        kernels.append((kernel, ratio(L2), ratio(DRAM), speedup))
    return kernels, models, memcpy, model_memcpy


def fmt(x, digits=2):
    return '–' if x is None else f'{x:.{digits}f}'


def markdown(run, kernels, models, memcpy, model_memcpy, command, peers):
    ctx = run.get('context', {})
    caches = ', '.join(f"L{c['level']} {c['type'][0].lower()} {c['size'] >> 10} KiB"
                       for c in ctx.get('caches', []) if c['type'] != 'Instruction')
    cpu = ctx.get('mxpack_cpu') or platform.processor() or 'unknown CPU'
    out = ['# Performance', '',
           'Generated by `bench/perf_table.py` from one run of `mxpack_bench`; do not edit by hand.', '',
           f"- Date: {ctx.get('date', datetime.date.today().isoformat())}",
           f"- Machine: {cpu}, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz; {caches}",
           f"- SIMD target: {ctx.get('mxpack_target', '?')}",
           f"- Command: `{command}`",
           f"- memcpy baseline (`BM_Memcpy`, bytes read + written): "
           + ', '.join(f"{s >> 10} KiB {memcpy[s] / 1e9:.1f} GB/s" for s in sorted(memcpy)),
           '',
           'Each ratio is the kernel\'s bytes/s over `BM_Memcpy` of the same working set '
           '(L2: 768 KiB, DRAM: 256 MiB) in the same run, best of the repetitions for both. '
           'Bytes are every byte a kernel reads or writes: the scale bytes of the MX rows, every '
           'source of the multimem rows, the 4-byte random word per element of the `rs` rows. '
           'SIMD/scalar is the speed-up over the scalar reference at the L2 size. '
           f'Floor: {FLOOR}x memcpy ({RS_FLOOR}x for stochastic rounding `rs`); '
           'rows below it are marked.', '',
           '| kernel | x memcpy (L2) | x memcpy (DRAM) | SIMD / scalar | |',
           '|---|---|---|---|---|']
    below = 0
    for kernel, l2, dram, speedup in kernels:
        mark = ''
        if l2 is not None and l2 < floor_of(kernel):
            mark, below = 'below floor', below + 1
        out.append(f'| `{kernel}` | {fmt(l2)} | {fmt(dram)} | {fmt(speedup, 0)} | {mark} |')
    if models:
        out += ['', '## End to end', '',
                'Whole checkpoints (>= 1 GiB) against a memcpy of the same bytes in the '
                'same run: `BM_QuantizeModel` (f32 in memory to mxpack records, each '
                'format), `BM_QuantizeModelErrorStats` (the same with error statistics) '
                'and `BM_DequantizeModel` (back to f32) against `BM_MemcpyModel`; '
                '`BM_QuantizeCheckpoint` (sharded bf16 files on disk to a '
                'compressed-tensors checkpoint on disk; `nvfp4:0` is MXFP4) and '
                '`BM_DequantizeCheckpoint` (that checkpoint back to bf16 files) against '
                f'`BM_MemcpyCheckpoint`. Floor {MODEL_FLOOR}x ({STATS_FLOOR}x with error '
                'statistics). Both checkpoint runs write their output with fsync; '
                '"x disk write" reads them against `BM_WriteCheckpointOutput` and '
                '`BM_WriteDequantizedOutput`, which write the same output files (direct '
                'writes, fsync, rename) to the same disk and nothing else: 1.0 is the '
                'speed of the disk.', '',
                '| benchmark | x memcpy | x disk write | |', '|---|---|---|---|']
        for kernel, r, w in models:
            mark = 'below floor' if r is not None and r < floor_of(kernel) else ''
            out.append(f'| `{kernel}` | {fmt(r, 3)} | {fmt(w, 3)} | {mark} |')
    if peers:
        out += ['', '## Against peer libraries', '', peers.get('note', ''), '',
                '| operation | mxpack | peer | peer time / mxpack time |', '|---|---|---|---|']
        for p in peers.get('rows', []):
            out.append(f"| {p['op']} | {p['mxpack']} | {p['peer']} | {p['ratio']:.1f} |")
        if peers.get('command'):
            out += ['', f"Command: `{peers['command']}`"]
    out += ['', f'{len(kernels)} kernels, {below} below the floor.', '']
    return '\n'.join(out), below


def cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bench', default='build/bench/mxpack_bench')
    ap.add_argument('--json', help='read this benchmark JSON instead of running')
    ap.add_argument('--repetitions', type=int, default=5)
    ap.add_argument('--filter', default='', help='--benchmark_filter for the run')
    ap.add_argument('--min-time', default='0.1')
    ap.add_argument('--peers', help='JSON written by python/benchmarks/bench_torch.py --json')
    ap.add_argument('--out', help='write the Markdown here (default: stdout)')
    ap.add_argument('--save-json', help='also keep the raw benchmark JSON here')
    args = ap.parse_args()

    if args.json:
        with open(args.json) as f:
            run = json.load(f)
        command = f'mxpack_bench (from {os.path.basename(args.json)})'
    else:
        cmd = [args.bench, '--benchmark_format=json',
               f'--benchmark_repetitions={args.repetitions}',
               f'--benchmark_min_time={args.min_time}',
               '--benchmark_enable_random_interleaving=true']
        if args.filter:
            cmd.append(f'--benchmark_filter={args.filter}')
        command = ' '.join(shlex.quote(c) for c in cmd)
        print(f'running: {command}', file=sys.stderr)
        res = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
        run = json.loads(res.stdout)
        if args.save_json:
            with open(args.save_json, 'w') as f:
                f.write(res.stdout.decode())
    run.setdefault('context', {})['mxpack_cpu'] = cpu_model()
    peers = None
    if args.peers:
        with open(args.peers) as f:
            peers = json.load(f)
    kernels, models, memcpy, model_memcpy = table(best_rates(run['benchmarks']))
    text, below = markdown(run, kernels, models, memcpy, model_memcpy, command, peers)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text)
        print(f'wrote {args.out}: {len(kernels)} kernels, {below} below the floor', file=sys.stderr)
    else:
        print(text)


if __name__ == '__main__':
    main()
