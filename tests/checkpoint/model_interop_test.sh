#!/usr/bin/env bash
# Interoperability with the reference safetensors implementation: files
# written by Python's `safetensors` (PyPI, numpy) load in mxpack, and files
# written by mxpack load in Python. The packages live in a virtualenv in the
# build tree (created once, reused). Exit 77 = SKIPPED, with the reason.
set -u
MX="$1"; VENV="$2"; PY="$3"
skip() { echo "SKIPPED: $*"; exit 77; }
command -v python3 >/dev/null || skip "python3 not found"
if ! "$VENV/bin/python" -c 'import safetensors, numpy' 2>/dev/null; then
  log=$(mktemp)
  rm -rf "$VENV"
  python3 -m venv "$VENV" >"$log" 2>&1 \
    || { r=$(tail -2 "$log"); rm -rf "$VENV" "$log"; skip "python3 -m venv failed (python3-venv missing?): $r"; }
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check safetensors numpy >"$log" 2>&1 \
    || { r=$(tail -2 "$log"); rm -rf "$VENV" "$log"; skip "pip install safetensors numpy failed (PyPI unreachable?): $r"; }
  rm -f "$log"
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$VENV/bin/python" "$PY" "$MX" "$T"
