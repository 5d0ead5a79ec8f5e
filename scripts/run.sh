#!/usr/bin/env bash
# One entry point for newcomers and CI:
#   bash scripts/run.sh demo   # install deps, build, run `mxpack demo`
#   bash scripts/run.sh test   # install deps, build, run the default test suite
#   bash scripts/run.sh sanitize   # the default suite under ASan + UBSan
#   bash scripts/run.sh fuzz [RUNS]  # libFuzzer, every fuzzer RUNS executions
# Environment: BUILD_DIR (default build), MXPACK_CTEST_ARGS (extra ctest args);
# sanitize builds in SANITIZE_BUILD_DIR (build-sanitize) with g++-12, fuzz in
# FUZZ_BUILD_DIR (build-fuzz) with clang++-14 (libFuzzer); CXX overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-demo}"
BUILD_DIR="${BUILD_DIR:-build}"

# Debian packages the build needs; installed only when missing.
pkgs=(cmake ninja-build g++ pkg-config libhwy-dev libabsl-dev libgtest-dev
      libbenchmark-dev nlohmann-json3-dev python3-venv python3-dev)
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

# Highway targets the sanitizer and fuzz builds compile: this machine's best
# x86 target, SSE4 (the CLI tests name it) and EMU128. The Release build
# compiles every attainable target; here the other ones (SSSE3 and the AVX
# levels below or above the best) would only multiply the slow instrumented
# compilations of the SIMD files without reaching code the kept targets miss.
sanitize_hwy_disabled() {
  [ "$(uname -m)" = x86_64 ] || return 0
  local f; f=$(grep -m1 '^flags' /proc/cpuinfo)
  has() { for x in "$@"; do [[ " $f " == *" $x "* ]] || return 1; done; }
  # Linux's names: avx512vbmi, but avx512_vbmi2, avx512_vnni, avx512_bitalg.
  if has avx512f avx512bw avx512dq avx512vl avx512vbmi avx512_vbmi2 avx512_vnni \
         avx512_bitalg avx512_vpopcntdq vpclmulqdq vaes; then
    echo "HWY_SSSE3|HWY_AVX2|HWY_AVX3"
  elif has avx512f avx512bw avx512dq avx512vl; then
    echo "HWY_SSSE3|HWY_AVX2|HWY_AVX3_DL"
  elif has avx2 bmi2 fma f16c; then
    echo "HWY_SSSE3|HWY_AVX3|HWY_AVX3_DL"
  else
    echo "HWY_SSSE3|HWY_AVX2|HWY_AVX3|HWY_AVX3_DL"
  fi
}

# configure_instrumented DIR CXX OPT DISABLED_TARGETS [cmake args...]: OPT
# (-O1, -O2) with line tables, assertions on; no benchmarks, no CUDA backend,
# no install rules. Warnings are not errors here: the instrumentation makes
# GCC's flow-based warnings report false positives, and the Release build
# already enforces -Werror.
configure_instrumented() {
  local dir="$1" cxx="$2" opt="$3" disabled="$4"; shift 4
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS_SANITIZE="$opt -g1" \
    -DMXPACK_SANITIZE=ON -DMXPACK_WERROR=OFF -DMXPACK_BUILD_BENCH=OFF \
    -DMXPACK_CUDA=OFF -DMXPACK_INSTALL=OFF \
    -DMXPACK_HWY_DISABLED_TARGETS="$disabled" "$@" >/dev/null
}

case "$mode" in
  demo|test)
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMXPACK_WERROR="$werror" >/dev/null
    cmake --build "$BUILD_DIR" -j"$(nproc)"
    ;;
esac

case "$mode" in
  demo) "$BUILD_DIR/mxpack" demo ;;
  test) ctest --test-dir "$BUILD_DIR" -LE 'exhaustive' --output-on-failure -j"$(nproc)" ${MXPACK_CTEST_ARGS:-} ;;
  sanitize)
    # Every test of `test` except the python/interop labels (the Python
    # module and its peers are not built with the sanitizer runtime).
    # g++-12: on the Highway kernels it compiles the instrumented code several
    # times faster than clang++-14 (src/convert/convert.cc: about 110 s of CPU
    # against about 700 s), which keeps the CI run short.
    dir="${SANITIZE_BUILD_DIR:-build-sanitize}"
    configure_instrumented "$dir" "${CXX:-g++-12}" -O1 "$(sanitize_hwy_disabled)" \
      -DMXPACK_LIBFUZZER=OFF
    cmake --build "$dir" -j"$(nproc)"
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    ctest --test-dir "$dir" -LE 'exhaustive|python|interop' --output-on-failure \
      -j"$(nproc)" ${MXPACK_CTEST_ARGS:-}
    ;;
  fuzz)
    # The parser fuzzers with libFuzzer (not run by CI): one after the other,
    # one process each, at low priority; new corpus units go to a scratch
    # corpus in the build tree, the seeds are only read. A crash stops the run and leaves
    # crash-<sha1> in the current directory.
    runs="${2:-10000000}"
    dir="${FUZZ_BUILD_DIR:-build-fuzz}"
    # The parsers have no SIMD code: only the portable EMU128 target is
    # compiled (clang++-14 spends minutes per instrumented Highway target),
    # and -O2 speeds up the fuzzers whose time goes to library loops (the
    # tensor-memory model, the dequantizers) several times over -O1.
    configure_instrumented "$dir" "${CXX:-clang++-14}" -O2 \
      "HWY_SSSE3|HWY_SSE4|HWY_AVX2|HWY_AVX3|HWY_AVX3_DL" -DMXPACK_LIBFUZZER=ON
    names=(safetensors_fuzz quant_record_fuzz ptx_check_fuzz tmem_script_fuzz cli_values_fuzz
           checkpoint_fuzz)
    cmake --build "$dir" -j"$(nproc)" --target "${names[@]/%/_libfuzzer}"
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    for name in "${names[@]}"; do
      mkdir -p "$dir/fuzz/corpus/$name"
      echo "== $name: $runs runs"
      # One process, in the foreground (-jobs would fork and log to files).
      nice -n 10 "$dir/fuzz/${name}_libfuzzer" -runs="$runs" -print_final_stats=1 \
        "$dir/fuzz/corpus/$name" "fuzz/corpus/$name"
    done
    ;;
  *) echo "usage: bash scripts/run.sh demo|test|sanitize|fuzz [RUNS]" >&2; exit 2 ;;
esac
