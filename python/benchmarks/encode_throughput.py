"""Throughput of mxpack.encode on a large f32 array, in the units of the C++
benchmark BM_Convert (bytes read + written per second), so the two compare
directly:

  python python/benchmarks/encode_throughput.py [--mib 64] [--fmt e4m3] [--reps 9]
  build/bench/mxpack_bench --benchmark_filter='BM_Memcpy/268435456|BM_Convert/f32->e4m3/rn.satfinite/simd/bytes:268435456' \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

The input is the C++ benchmark's data: input byte i = (uint8) RandomBits(1, i).
Prints the median of --reps timed calls with a reused output (out=) and
with a fresh output array per call (what encode(x, fmt) does by default),
in wall time and in process CPU time (Google Benchmark's bytes_per_second
uses CPU time; on a shared machine the two differ).
"""

import argparse
import statistics
import time

import numpy as np

import mxpack


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=64, help="f32 input size in MiB")
    ap.add_argument("--fmt", default="e4m3")
    ap.add_argument("--rounding", default="rn")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--impl", default="best")
    args = ap.parse_args()

    n = int(args.mib * (1 << 20)) // 4
    x = mxpack.random_bits(1, 4 * n).astype(np.uint8).view(np.float32)
    ob = mxpack.format_info(args.fmt)["storage_bytes"]
    moved = n * (4 + ob)
    out = np.empty(n, dtype={1: np.uint8, 2: np.uint16, 4: np.uint32}[ob])
    mxpack.encode(x, args.fmt, args.rounding, out=out, impl=args.impl)  # warm up

    def timed(fn):
        wall, cpu = [], []
        for _ in range(args.reps):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        return statistics.median(wall), statistics.median(cpu)

    t_out = timed(lambda: mxpack.encode(x, args.fmt, args.rounding, out=out,
                                        impl=args.impl))
    t_new = timed(lambda: mxpack.encode(x, args.fmt, args.rounding, impl=args.impl))
    print(f"mxpack.encode f32 -> {args.fmt} ({args.rounding}), {n} elements "
          f"({args.mib:g} MiB in), impl={args.impl}, median of {args.reps}:")
    print(f"  (bytes read + written: {moved}; GiB/s = 2^30 bytes/s like Google Benchmark)")
    for label, (wall, cpu) in (("out= reused", t_out), ("new output ", t_new)):
        print(f"  {label}: wall {wall * 1e3:8.2f} ms {moved / wall / 2**30:6.2f} GiB/s | "
              f"cpu {cpu * 1e3:8.2f} ms {moved / cpu / 2**30:6.2f} GiB/s")


if __name__ == "__main__":
    main()
