#!/usr/bin/env bash
# ctest fixture setup of the Python tests: creates BUILD/venv-python when
# missing, installs the test and build requirements once, then builds and
# installs the repository's `mxpack` package into it (pip install . with a
# persistent scikit-build-core build dir, so reruns are incremental).
# Exit 77 (reported by ctest as skipped) when python3/venv/Python.h are absent.
# Usage: setup_venv.sh BUILD_DIR SOURCE_DIR [PYTHON3 [WERROR=ON|OFF]]
set -euo pipefail
build="$1"
src="$2"
py="${3:-python3}"
werror="${4:-OFF}"
venv="$build/venv-python"
marker="$venv/.mxpack-installed"

skip() { echo "SKIPPED: $*"; exit 77; }

rm -f "$marker"
command -v "$py" >/dev/null 2>&1 || skip "no python3 interpreter found"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$venv"
  if ! "$py" -m venv "$venv"; then
    rm -rf "$venv"
    skip "'$py -m venv' failed (on Debian: apt-get install python3-venv)"
  fi
fi
"$venv/bin/python" - <<'PY' || skip "Python.h not found (on Debian: apt-get install python3-dev)"
import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)
PY

if ! "$venv/bin/python" -c "import numpy, ml_dtypes, safetensors, pytest, scikit_build_core, nanobind" 2>/dev/null; then
  echo "installing numpy ml_dtypes safetensors pytest scikit-build-core nanobind into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    numpy ml_dtypes safetensors pytest "scikit-build-core>=0.10" "nanobind>=2.0"
fi

# Optional peers of the torch tests (python/tests/test_torch*.py): torch and
# torchao. torch comes from its CPU wheel index when that is reachable, else
# from PyPI (whose wheel also pulls the CUDA libraries);
# MXPACK_TORCH_INDEX=URL|pypi forces one. When no registry answers they stay
# absent and those tests report "skipped" with the reason.
install_torch() {  # install_torch URL|pypi
  local index_args=()
  [ "$1" = pypi ] || index_args=(--index-url "$1")
  echo "installing torch from $1 into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --retries 1 \
    --timeout 30 "${index_args[@]}" torch
}
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  if [ -n "${MXPACK_TORCH_INDEX:-}" ]; then
    install_torch "$MXPACK_TORCH_INDEX" || true
  else
    install_torch https://download.pytorch.org/whl/cpu || install_torch pypi || true
  fi
  "$venv/bin/python" -c "import torch" 2>/dev/null \
    || echo "torch not installed (registries unreachable?): torch tests will be skipped"
fi
if "$venv/bin/python" -c "import torch" 2>/dev/null && \
   ! "$venv/bin/python" -c "import torchao" 2>/dev/null; then
  echo "installing torchao into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps torchao \
    || echo "torchao not installed (registry unreachable?): torchao tests will be skipped"
fi

echo "pip install $src (build dir $build/py-build)"
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps --force-reinstall \
  -Cbuild-dir="$build/py-build" -Ccmake.build-type=Release \
  -Ccmake.define.MXPACK_WERROR="$werror" "$src"
echo "installed in $(( $(date +%s) - start )) s"
(cd "$build" && "$venv/bin/python" -c "import mxpack; print('mxpack', mxpack.__file__, mxpack.available_targets())")
touch "$marker"
