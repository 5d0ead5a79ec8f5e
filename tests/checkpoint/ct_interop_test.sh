#!/usr/bin/env bash
# Interoperability with compressed-tensors (vLLM's loader of NVFP4 / MXFP4 /
# MXFP8 checkpoints): runs ct_interop.py with torch + compressed-tensors +
# safetensors from a virtualenv kept in the build tree (created once, reused;
# torch is a large download the first time). MXPACK_INTEROP_PYTHON may name an
# interpreter that already has the packages. Exit 77 = SKIPPED, with the reason.
set -u
MX="$1"; VENV="$2"; PY="$3"
skip() { echo "SKIPPED: $*"; exit 77; }
PYTHON="${MXPACK_INTEROP_PYTHON:-$VENV/bin/python}"
if ! "$PYTHON" -c 'import torch, compressed_tensors, safetensors' 2>/dev/null; then
  [ -n "${MXPACK_INTEROP_PYTHON:-}" ] && skip "MXPACK_INTEROP_PYTHON=$MXPACK_INTEROP_PYTHON lacks torch / compressed-tensors / safetensors"
  command -v python3 >/dev/null || skip "python3 not found"
  log=$(mktemp)
  rm -rf "$VENV"
  python3 -m venv "$VENV" >"$log" 2>&1 \
    || { r=$(tail -2 "$log"); rm -rf "$VENV" "$log"; skip "python3 -m venv failed (python3-venv missing?): $r"; }
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check compressed-tensors safetensors >"$log" 2>&1 \
    || { r=$(tail -2 "$log"); rm -rf "$VENV" "$log"; skip "pip install compressed-tensors safetensors failed (PyPI unreachable?): $r"; }
  rm -f "$log"
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PYTHON" "$PY" "$MX" "$T"
