#!/usr/bin/env bash
# ctest fixture setups of the tests that need Python: one virtualenv,
# BUILD/venv-python, holds every Python peer (torch is several GB, so it is
# installed once, not once per test).
#   peers:   creates the venv when missing and installs the peers once:
#            numpy ml_dtypes safetensors pytest (the package tests), torch and
#            torchao (the torch tests), compressed-tensors (the checkpoint
#            interop test, tests/checkpoint/ct_interop_test.sh).
#   package: builds and installs the repository's `mxpack` package into it
#            (pip install . with a persistent scikit-build-core build dir, so
#            reruns are incremental).
# Exit 77 (reported by ctest as skipped) when python3/venv/Python.h are absent.
# A peer that no registry serves stays absent; the tests needing it report
# "skipped" with the reason.
# Usage: setup_venv.sh peers|package BUILD_DIR SOURCE_DIR [PYTHON3 [WERROR=ON|OFF]]
set -euo pipefail
mode="$1"
build="$2"
src="$3"
py="${4:-python3}"
werror="${5:-OFF}"
venv="$build/venv-python"
marker="$venv/.mxpack-installed"

skip() { echo "SKIPPED: $*"; exit 77; }
pip_install() { "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"; }
has() { "$venv/bin/python" -c "import $1" 2>/dev/null; }

case "$mode" in
  peers)
    command -v "$py" >/dev/null 2>&1 || skip "no python3 interpreter found"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
      rm -rf "$venv"
      if ! "$py" -m venv "$venv"; then
        rm -rf "$venv"
        skip "'$py -m venv' failed (on Debian: apt-get install python3-venv)"
      fi
    fi
    if ! has "numpy, ml_dtypes, safetensors, pytest"; then
      echo "installing numpy ml_dtypes safetensors pytest into $venv"
      pip_install numpy ml_dtypes safetensors pytest \
        || skip "pip install numpy ml_dtypes safetensors pytest failed (PyPI unreachable?)"
    fi
    # torch comes from its CPU wheel index when that is reachable, else from
    # PyPI (whose wheel also pulls the CUDA libraries);
    # MXPACK_TORCH_INDEX=URL|pypi forces one. With its CUDA libraries it
    # unpacks to about 6 GB in the venv, plus pip's temporary files: below
    # MXPACK_TORCH_MIN_FREE_GB (default 10) free on either file system it is
    # not attempted, rather than fill the disk that the rest of the run
    # writes to.
    install_torch() {  # install_torch URL|pypi
      local index_args=()
      [ "$1" = pypi ] || index_args=(--index-url "$1")
      echo "installing torch from $1 into $venv"
      pip_install --retries 1 --timeout 30 "${index_args[@]}" torch
    }
    free_gb() { df -Pk "$1" | awk 'NR == 2 { print int($4 / 1048576) }'; }
    if ! has torch; then
      min_free_gb="${MXPACK_TORCH_MIN_FREE_GB:-10}"
      tmp_dir="${TMPDIR:-/tmp}"
      venv_gb=$(free_gb "$venv")
      tmp_gb=$(free_gb "$tmp_dir")
      if [ "$venv_gb" -lt "$min_free_gb" ] || [ "$tmp_gb" -lt "$min_free_gb" ]; then
        echo "torch not installed: $venv_gb GB free for $venv and $tmp_gb GB for $tmp_dir," \
             "under the $min_free_gb GB it needs (MXPACK_TORCH_MIN_FREE_GB): the torch, torchao and" \
             "compressed-tensors tests will be skipped"
        exit 0
      fi
      if [ -n "${MXPACK_TORCH_INDEX:-}" ]; then
        install_torch "$MXPACK_TORCH_INDEX" || true
      else
        install_torch https://download.pytorch.org/whl/cpu || install_torch pypi || true
      fi
      if ! has torch; then
        echo "torch not installed (registries unreachable?): the torch, torchao and compressed-tensors tests will be skipped"
        exit 0
      fi
    fi
    if ! has torchao; then
      echo "installing torchao into $venv"
      pip_install --no-deps torchao \
        || echo "torchao not installed (registry unreachable?): torchao tests will be skipped"
    fi
    if ! has compressed_tensors; then
      # With the torch installed above, which satisfies its requirement.
      echo "installing compressed-tensors into $venv"
      pip_install compressed-tensors \
        || echo "compressed-tensors not installed (registry unreachable?): ct_interop_test will be skipped"
    fi
    ;;
  package)
    rm -f "$marker"
    [ -x "$venv/bin/python" ] || skip "no virtualenv at $venv (python_peers was skipped; see its output)"
    "$venv/bin/python" - <<'PY' || skip "Python.h not found (on Debian: apt-get install python3-dev)"
import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)
PY
    if ! has "scikit_build_core, nanobind"; then
      echo "installing scikit-build-core nanobind into $venv"
      pip_install "scikit-build-core>=0.10" "nanobind>=2.0" \
        || skip "pip install scikit-build-core nanobind failed (PyPI unreachable?)"
    fi
    echo "pip install $src (build dir $build/py-build)"
    start=$(date +%s)
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      pip_install --no-build-isolation --no-deps --force-reinstall \
      -Cbuild-dir="$build/py-build" -Ccmake.build-type=Release \
      -Ccmake.define.MXPACK_WERROR="$werror" "$src"
    echo "installed in $(( $(date +%s) - start )) s"
    (cd "$build" && "$venv/bin/python" -c "import mxpack; print('mxpack', mxpack.__file__, mxpack.available_targets())")
    touch "$marker"
    ;;
  *) echo "usage: setup_venv.sh peers|package BUILD_DIR SOURCE_DIR [PYTHON3 [WERROR]]" >&2; exit 2 ;;
esac
