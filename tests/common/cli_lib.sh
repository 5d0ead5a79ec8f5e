# Shared helpers of the CLI test scripts (sourced; $1 is the mxpack binary):
# a temporary directory $T removed on exit, pass/fail counters, and
# expect_fail / expect_fail_fixed, which require a non-zero exit status and a
# stderr line matching a regex / containing a fixed string.
set -u
MX="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0; passes=0
ok() { passes=$((passes+1)); }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }
_expect_fail() {  # _expect_fail GREP_FLAGS "needle" cmd...
  local flags="$1" needle="$2"; shift 2
  if "$@" >"$T/out" 2>"$T/err"; then bad "expected failure: $*"; return; fi
  grep $flags -- "$needle" "$T/err" && ok || bad "stderr of '$*' lacks '$needle': $(cat "$T/err")"
}
expect_fail() { _expect_fail -q "$@"; }
expect_fail_fixed() { _expect_fail -qF "$@"; }
# finish NAME: prints the counts; the script's exit status is the verdict.
finish() { echo "$1: $passes passed, $fails failed"; [ "$fails" -eq 0 ]; }
