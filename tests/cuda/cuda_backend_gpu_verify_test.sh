#!/usr/bin/env bash
# `mxpack gpu-verify` with no GPU (all devices hidden): it says so, prints an
# empty summary and exits 0; bad flags are usage errors (exit 2).
# Usage: cuda_backend_gpu_verify_test.sh path/to/mxpack
set -uo pipefail
mxpack="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$(CUDA_VISIBLE_DEVICES= "$mxpack" gpu-verify --gpu_quick 2>&1)"; rc=$?
[ "$rc" = 0 ] || fail "exit $rc without a GPU, expected 0: $out"
grep -q '^gpu-verify: no GPU verification possible: ' <<<"$out" || fail "no 'no GPU' line: $out"
grep -Eq 'built without CUDA|no CUDA GPU' <<<"$out" || fail "no reason given: $out"
grep -q '^checks: 0 run, 0 passed, 0 failed, 0 skipped$' <<<"$out" || fail "no summary: $out"

out="$(CUDA_VISIBLE_DEVICES= "$mxpack" gpu-verify --gpu_groups=cvt,bogus 2>&1)"; rc=$?
[ "$rc" = 2 ] || fail "exit $rc for --gpu_groups=cvt,bogus, expected 2: $out"
grep -q 'gpu_groups: expected cvt, tcgen05 or multimem, got "bogus"' <<<"$out" || fail "$out"

out="$("$mxpack" gpu-verify extra 2>&1)"; rc=$?
[ "$rc" = 2 ] || fail "exit $rc for a positional argument, expected 2: $out"

out="$("$mxpack" gpu-verify --help 2>&1)"
grep -q 'docs/gpu_verify.md' <<<"$out" || fail "help does not point to docs/gpu_verify.md: $out"
echo "PASS"
