#!/usr/bin/env bash
# Installs this build into a temporary prefix, then configures, builds and runs
# tests/install/consumer against it with find_package(mxpack).
# Usage: consumer_test.sh BUILD_DIR SOURCE_DIR CMAKE_COMMAND
set -euo pipefail
build="$1"; src="$2"; cmake="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/mxpack/mx.h"
test -x "$work/prefix/bin/mxpack"
"$cmake" -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
"$cmake" --build "$work/consumer" >/dev/null
"$work/consumer/consumer"
"$work/prefix/bin/mxpack" --version
