#!/usr/bin/env bash
# Interoperability with compressed-tensors (vLLM's loader of NVFP4 / MXFP4 /
# MXFP8 checkpoints): runs ct_interop.py with torch + compressed-tensors +
# safetensors from the build tree's shared virtualenv, which the python_peers
# fixture (python/tests/setup_venv.sh) fills. MXPACK_INTEROP_PYTHON may name
# an interpreter that already has the packages. Exit 77 = SKIPPED, with the
# reason.
set -u
MX="$1"; VENV="$2"; PY="$3"
skip() { echo "SKIPPED: $*"; exit 77; }
PYTHON="${MXPACK_INTEROP_PYTHON:-$VENV/bin/python}"
[ -x "$PYTHON" ] || skip "no interpreter at $PYTHON (python_peers was skipped; see its output)"
if ! err=$("$PYTHON" -c 'import torch, compressed_tensors, safetensors' 2>&1); then
  skip "$PYTHON lacks torch / compressed-tensors / safetensors (see python_peers' output): $(echo "$err" | tail -1)"
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PYTHON" "$PY" "$MX" "$T"
