"""Shared fixtures of the mxpack Python tests: the C++ CLI (bit-for-bit
reference of every binding) and deterministic test data."""

import os
import subprocess

import numpy as np
import pytest


def _cli_path():
    path = os.environ.get("MXPACK_CLI", "")
    if not path or not os.access(path, os.X_OK):
        pytest.fail(
            "MXPACK_CLI must name the built C++ CLI (<build>/mxpack); ctest sets it. "
            f"Got {path!r}", pytrace=False)
    return path


class Cli:
    """Runs `mxpack CMD ...` with stdin/stdout bytes."""

    def __init__(self, path):
        self.path = path

    def run(self, args, data=b"", check=True):
        r = subprocess.run([self.path] + list(args), input=bytes(data),
                           capture_output=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(
                f"mxpack {' '.join(args)} exited {r.returncode}: "
                f"{r.stderr.decode(errors='replace')}")
        return r

    def bytes(self, args, data=b""):
        return self.run(args, data).stdout


@pytest.fixture(scope="module")
def cli():
    return Cli(_cli_path())


def f32_sample(n_random=1 << 16, seed=1):
    """Structured f32 values (specials, every exponent with edge mantissas,
    ties of every narrow format) plus random bit patterns, as float32."""
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0,
               448.0, 464.0, 464.0001, 480.0, 57344.0, 61440.0, 61441.0, 65536.0,
               6.0, 7.0, 5.0, 0.25, 0.75, 7.5, 7.75, 28.0, 30.0, 32.0, 0.0625,
               0.03125, 2.0**-9, 2.0**-10, 2.0**-16, 2.0**-17, 2.0**-127, 2.0**-126,
               2.0**127, 3.0 * 2.0**126, 1e-45, -1e-45, 3.4028235e38]
    bits = []
    for e in range(256):
        for m in (0, 1, 0x200000, 0x400000, 0x400001, 0x3FFFFF, 0x7FFFFF, 0x100000,
                  0x080000, 0x0C0000, 0x180000, 0x280000):
            for s in (0, 1):
                bits.append((s << 31) | (e << 23) | m)
    rng = np.random.default_rng(seed)
    rnd = rng.integers(0, 1 << 32, size=n_random, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([np.array(special, dtype=np.float32),
                           np.array(bits, dtype=np.uint32).view(np.float32),
                           rnd.view(np.float32)])


def all_f16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def all_bf16_bits():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
