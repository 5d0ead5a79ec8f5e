#!/usr/bin/env bash
# One entry point for newcomers and CI:
#   bash scripts/run.sh demo   # install deps, build, run `mxpack demo`
#   bash scripts/run.sh test   # install deps, build, run the default test suite
# Environment: BUILD_DIR (default build), MXPACK_CTEST_ARGS (extra ctest args).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-demo}"
BUILD_DIR="${BUILD_DIR:-build}"

# Debian packages the build needs; installed only when missing.
pkgs=(cmake ninja-build g++ pkg-config libhwy-dev libabsl-dev libgtest-dev
      libbenchmark-dev nlohmann-json3-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

werror=OFF; [ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMXPACK_WERROR="$werror" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"

case "$mode" in
  demo) "$BUILD_DIR/mxpack" demo ;;
  test) ctest --test-dir "$BUILD_DIR" -LE 'exhaustive' --output-on-failure -j"$(nproc)" ${MXPACK_CTEST_ARGS:-} ;;
  *) echo "usage: bash scripts/run.sh demo|test" >&2; exit 2 ;;
esac
