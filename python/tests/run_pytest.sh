#!/usr/bin/env bash
# ctest driver of the pytest suite (after setup_venv.sh installed mxpack into
# BUILD/venv-python). MXPACK_CLI (set by tests/python.cmake) is the C++ CLI
# the bindings are compared with. Exit 77 (skipped) when the setup skipped.
# Usage: run_pytest.sh BUILD_DIR SOURCE_DIR [pytest args...]
set -euo pipefail
build="$1"
src="$2"
shift 2
venv="$build/venv-python"
if [ ! -f "$venv/.mxpack-installed" ]; then
  echo "SKIPPED: mxpack is not installed in $venv (python_setup was skipped; see its output)"
  exit 77
fi
cd "$build"
PYTHONDONTWRITEBYTECODE=1 exec "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$src/python/tests" "$@"
