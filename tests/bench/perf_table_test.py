#!/usr/bin/env python3
"""bench/perf_table.py on a made-up benchmark run: each ratio is the best
repetition over the memcpy of the same size (or the end-to-end baseline),
rows below their floor are marked, baselines are not listed as kernels, and
the checkpoint export is also read against writing its output alone.

  perf_table_test.py SRC_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SRC = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
SCRIPT = os.path.join(SRC, 'bench', 'perf_table.py')


def bench(name, rate, aggregate=False):
    b = {'name': name, 'run_name': name, 'bytes_per_second': rate}
    if aggregate:
        b['run_type'] = 'aggregate'
        b['name'] = name + '_mean'
    return b


L2, DRAM = 'bytes:786432', 'bytes:268435456'
RUN = {
    'context': {'date': '2026-01-01', 'num_cpus': 2, 'mhz_per_cpu': 1000, 'caches': []},
    'benchmarks': [
        # Best of the repetitions: 100 and 30 GB/s; the aggregate is ignored.
        bench('BM_Memcpy/786432', 90e9), bench('BM_Memcpy/786432', 100e9),
        bench('BM_Memcpy/786432', 500e9, aggregate=True),
        bench('BM_Memcpy/268435456', 30e9),
        bench(f'BM_Convert/f32->e4m3/rn.satfinite/{L2}/scalar:0', 60e9),
        bench(f'BM_Convert/f32->e4m3/rn.satfinite/{L2}/scalar:0', 55e9),
        bench(f'BM_Convert/f32->e4m3/rn.satfinite/{DRAM}/scalar:0', 15e9),
        bench(f'BM_Convert/f32->e4m3/rn.satfinite/{L2}/scalar:1', 1e9),
        # Stochastic rounding: floor 0.3.
        bench(f'BM_Convert/f32->e4m3/rs/{L2}/scalar:0', 35e9),
        bench(f'BM_QuantizeMx/nvfp4_f32/{L2}/scalar:0', 30e9),
        bench('BM_MemcpyModel/iterations:3/real_time', 10e9),
        bench('BM_QuantizeModel/mxfp4/threads:2/iterations:3/real_time', 20e9),
        bench('BM_MemcpyCheckpoint/iterations:3/real_time', 10e9),
        bench('BM_QuantizeCheckpoint/nvfp4:0/iterations:1/real_time', 6e9),
        bench('BM_QuantizeCheckpoint/nvfp4:1/iterations:1/real_time', 4e9),
        bench('BM_WriteCheckpointOutput/nvfp4:0/iterations:1/real_time', 5e9),
        bench('BM_WriteCheckpointOutput/nvfp4:1/iterations:1/real_time', 5e9),
        bench('BM_DequantizeCheckpoint/nvfp4:0/iterations:1/real_time', 8e9),
        bench('BM_DequantizeCheckpoint/nvfp4:1/iterations:1/real_time', 2e9),
        bench('BM_WriteDequantizedOutput/nvfp4:1/iterations:1/real_time', 4e9),
    ],
}


class PerfTableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as d:
            run, out = os.path.join(d, 'run.json'), os.path.join(d, 'out.md')
            with open(run, 'w') as f:
                json.dump(RUN, f)
            subprocess.run([sys.executable, SCRIPT, '--json', run, '--out', out], check=True,
                           stderr=subprocess.DEVNULL)
            with open(out) as f:
                cls.lines = f.read().splitlines()

    def row(self, name):
        rows = [line for line in self.lines if line.startswith(f'| `{name}` |')]
        self.assertEqual(len(rows), 1, name)
        return [c.strip() for c in rows[0].strip('|').split('|')]

    def test_kernel_ratios_are_best_over_memcpy_of_the_same_size(self):
        self.assertEqual(self.row('BM_Convert/f32->e4m3/rn.satfinite')[1:],
                         ['0.60', '0.50', '60', ''])

    def test_floors(self):
        self.assertEqual(self.row('BM_Convert/f32->e4m3/rs')[1:3], ['0.35', '–'])
        self.assertEqual(self.row('BM_Convert/f32->e4m3/rs')[4], '')
        self.assertEqual(self.row('BM_QuantizeMx/nvfp4_f32')[4], 'below floor')
        self.assertIn('3 kernels, 1 below the floor.', self.lines)

    def test_end_to_end_against_memcpy_and_the_disk(self):
        self.assertEqual(self.row('BM_QuantizeModel/mxfp4/threads:2')[1:], ['2.000', '–', ''])
        self.assertEqual(self.row('BM_QuantizeCheckpoint/nvfp4:0')[1:],
                         ['0.600', '1.200', 'below floor'])
        self.assertEqual(self.row('BM_QuantizeCheckpoint/nvfp4:1')[1:],
                         ['0.400', '0.800', 'below floor'])
        # Its own disk baseline, of the same format; none in the run: memcpy only.
        self.assertEqual(self.row('BM_DequantizeCheckpoint/nvfp4:1')[1:],
                         ['0.200', '0.500', 'below floor'])
        self.assertEqual(self.row('BM_DequantizeCheckpoint/nvfp4:0')[1:], ['0.800', '–', ''])

    def test_baselines_are_not_rows(self):
        for name in ('BM_Memcpy', 'BM_MemcpyModel', 'BM_MemcpyCheckpoint',
                     'BM_WriteCheckpointOutput/nvfp4:0', 'BM_WriteCheckpointOutput/nvfp4:1',
                     'BM_WriteDequantizedOutput/nvfp4:1'):
            self.assertFalse([l for l in self.lines if l.startswith(f'| `{name}` |')], name)


if __name__ == '__main__':
    unittest.main()
