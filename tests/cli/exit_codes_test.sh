#!/usr/bin/env bash
# Exit statuses of the CLI (docs/cli.md, "Exit codes"): 0 success, 1 only for
# a negative verdict (ptx-check: illegal), 2 for every usage or input error,
# including the flag parser's: unknown flag, unparsable or missing value.
source "$(dirname "$0")/../common/cli_lib.sh"

# status WANT NEEDLE CMD...: exit status exactly WANT, NEEDLE on stderr
# (empty NEEDLE: not checked).
status() {
  local want="$1" needle="$2"; shift 2
  "$@" >"$T/out" 2>"$T/err" </dev/null
  local rc=$?
  [ "$rc" -eq "$want" ] && ok || bad "exit status $rc (expected $want): $* ($(head -c 300 "$T/err"))"
  if [ -n "$needle" ]; then
    grep -qF -- "$needle" "$T/err" && ok || bad "stderr of '$*' lacks '$needle': $(cat "$T/err")"
  fi
}
printf '\x00\x00\x80\x3f' >"$T/one.f32"

# Success.
status 0 "" "$MX" convert --from=f32 --to=e4m3 --in="$T/one.f32" --out="$T/o"
status 0 "" "$MX" convert --from f32 --to e4m3 --in "$T/one.f32" --out "$T/o"
status 0 "" "$MX" convert --from=f32 --to=e4m3 --norelu --relu=false --in="$T/one.f32" --out="$T/o"
status 0 "" "$MX" table e2m1
status 0 "" "$MX" --help
status 0 "" "$MX" --version
status 0 "" "$MX" convert --help
status 0 "" "$MX" ptx-check multimem.ld_reduce.relaxed.sys.global.add.f32

# A negative verdict.
status 1 "" "$MX" ptx-check multimem.ld_reduce.add.bogus

# The flag parser's errors.
status 2 "unknown flag --bogus" "$MX" convert --bogus
status 2 "unknown flag --bogus" "$MX" convert --bogus=1 --from=f32 --to=e4m3
status 2 "unknown flag -x" "$MX" table -x e4m3
status 2 "flag --threads: expected a 32-bit integer, got 'abc'" \
  "$MX" quantize-model --format=mxfp4 --threads=abc a b
status 2 "flag --rows: expected a non-negative 64-bit integer, got '-3'" \
  "$MX" quantize --format=mxfp4 --rows=-3 --cols=32
status 2 "flag --relu: expected true or false, got 'maybe'" \
  "$MX" convert --from=f32 --to=e4m3 --relu=maybe
status 2 "flag --from: missing value" "$MX" convert --from
status 2 "flag --from: missing value" "$MX" convert --from --to=e4m3
status 2 "flag --norelu takes no value" "$MX" convert --norelu=1
status 2 "does not apply to 'mxpack table'" "$MX" table e4m3 --rounding=rz
status 2 "does not apply to 'mxpack convert'" "$MX" convert --threads=2

# Usage and input errors of the commands.
status 2 "unknown command 'frobnicate'" "$MX" frobnicate
status 2 "Usage: mxpack COMMAND" "$MX"
status 2 "--from: unknown format 'e9m9'" "$MX" convert --from=e9m9 --to=e4m3 --in="$T/one.f32"
status 2 "--format: unknown MX format 'mxfp9'" "$MX" quantize-model --format=mxfp9 a b
status 2 "cannot open for reading" "$MX" quantize-model "$T/a" "$T/b"
status 2 "expected IN (file or model directory) and OUT" "$MX" quantize-model
status 2 "expected exactly one FORMAT" "$MX" table
status 2 "--out-elements and --out-scales" "$MX" quantize --format=mxfp4 --rows=1 --cols=32
status 2 "expected at least one instruction spelling" "$MX" ptx-check
status 2 "cannot open" "$MX" convert --from=f32 --to=e4m3 --in="$T/missing" --out="$T/o"
status 2 "cannot open" "$MX" inspect "$T/missing"
printf 'abc' >"$T/three"
status 2 "not a multiple" "$MX" convert --from=f32 --to=e4m3 --in="$T/three" --out="$T/o"
status 2 "is a directory" "$MX" convert --from=f32 --to=e4m3 --in="$T/one.f32" --out="$T"
status 2 "unexpected argument 'x'" "$MX" demo x

finish exit_codes_test
