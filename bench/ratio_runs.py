#!/usr/bin/env python3
"""Noise-resistant ratios to BM_Memcpy from repeated benchmark processes.

On a shared VM the throughput of one process can move by a factor of two
between runs, and compute-bound kernels lose more to other tenants than
memcpy does. Each process here measures the kernels and BM_Memcpy of the
same working set back to back; the figure reported is the median over
processes of the per-process ratio.

  ratio_runs.py [--runs=N] --filter=REGEX BIN
      one binary: median ratio per benchmark (and, for a `scalar:1`
      benchmark whose `scalar:0` twin ran too, the median SIMD/scalar ratio)
  ratio_runs.py [--runs=N] --filter=REGEX OLD_BIN NEW_BIN
      two binaries run alternately (old, new, new, old, ...): median ratio of
      each and new/old

The filter must select the BM_Memcpy working sets the kernels use, e.g.
  --filter='BM_Memcpy/786432$|BM_QuantizeMx/mxfp4_f32/bytes:786432/scalar:0'

--best=R: each process runs every benchmark R times briefly (0.05 s) and
takes its fastest repetition, kernels and BM_Memcpy alike, before the ratio.
The other tenants of a shared VM only ever slow a process down, and they
slow compute-bound kernels (which share the core's vector ports with a
sibling hyperthread) more than memcpy (load/store bound), so the per-run
ratio of means mixes the kernel's cost with the neighbours' load; the
ratio of bests estimates the kernel on an unshared core. Report both.
"""
import argparse
import json
import re
import statistics
import subprocess


def run(binary, flt, best=0):
    args = [binary, "--benchmark_filter=" + flt, "--benchmark_format=json"]
    if best:
        args += ["--benchmark_min_time=0.05", "--benchmark_repetitions=%d" % best]
    else:
        args += ["--benchmark_min_time=0.3"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    bps = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates of --benchmark_repetitions
        bps[b["run_name"]] = max(bps.get(b["run_name"], 0.0), b["bytes_per_second"])
    ratios = {}
    for name, v in bps.items():
        if name.startswith("BM_Memcpy/"):
            continue
        size = re.search(r"(?:bytes:|/)(\d+)", name.split("BM_", 1)[1]).group(1)
        memcpy = bps.get("BM_Memcpy/" + size)
        if memcpy is None:
            raise SystemExit(f"{name}: the filter must include BM_Memcpy/{size}")
        ratios[name] = (v / memcpy, v)
    return ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--filter", required=True)
    ap.add_argument("--best", type=int, default=0,
                    help="repetitions per process; ratio of the fastest ones")
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    if len(a.binaries) > 2:
        raise SystemExit("one binary, or OLD and NEW")
    res = {b: {} for b in a.binaries}
    for it in range(a.runs):
        order = a.binaries if it % 2 == 0 else a.binaries[::-1]
        for b in order:
            for name, rv in run(b, a.filter, a.best).items():
                res[b].setdefault(name, []).append(rv)
    if len(a.binaries) == 1:
        r = res[a.binaries[0]]
        for name in sorted(r):
            ratios = [x for x, _ in r[name]]
            line = "%-58s %.3f (runs %.3f-%.3f)" % (name, statistics.median(ratios),
                                                     min(ratios), max(ratios))
            twin = name.replace("scalar:1", "scalar:0")
            if "scalar:1" in name and twin in r:
                line += "  SIMD/scalar %.0fx" % statistics.median(
                    [s[1] / x[1] for s, x in zip(r[twin], r[name])])
            print(line)
        return
    old, new = (res[b] for b in a.binaries)
    for name in sorted(new):
        o = statistics.median(x for x, _ in old[name])
        n = statistics.median(x for x, _ in new[name])
        print("%-58s old %.3f new %.3f new/old %.2f" % (name, o, n, n / o))


if __name__ == "__main__":
    main()
