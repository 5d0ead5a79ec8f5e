#!/usr/bin/env bash
# CLI behaviour tests: outputs, round trips and every error path of
# `mxpack table` and `mxpack convert` (exit codes, messages, no partial output).
source "$(dirname "$0")/../common/cli_lib.sh"

# table: 16 codes for e2m1 plus 2 header lines; exact values and classes.
"$MX" table e2m1 >"$T/t" && ok || bad "table e2m1"
[ "$(grep -c '^0x' "$T/t")" = 16 ] && ok || bad "e2m1 table rows"
grep -q '^0x07  0.11.1  *normal  *6$' "$T/t" && ok || bad "e2m1 0x07 row: $(grep '^0x07' "$T/t")"
grep -q '^0x09  1.00.1  *subnormal  *-0.5$' "$T/t" && ok || bad "e2m1 0x09 row"
"$MX" table e4m3 | grep -q '^0x7F .* nan' && ok || bad "e4m3 0x7F nan"
"$MX" table e5m2 | grep -q '^0xFC .* -inf' && ok || bad "e5m2 0xFC -inf"
"$MX" table ue8m0 | grep -q '^0xFE .* 170141183460469231731687303715884105728$' && ok || bad "ue8m0 max exact"
expect_fail "unknown format 'e9m9'" "$MX" table e9m9
expect_fail "expected a narrow format" "$MX" table f32
expect_fail "exactly one FORMAT" "$MX" table

# convert: f32 {1.0, 464, 465, -0.25} -> e4m3 satfinite: 38 7E 7E A8 (465 saturates).
printf '\x00\x00\x80\x3f\x00\x00\xe8\x43\x00\x80\xe8\x43\x00\x00\x80\xbe' >"$T/in.f32"
"$MX" convert --from=f32 --to=e4m3 --in="$T/in.f32" --out="$T/o" && ok || bad "convert"
[ "$(od -An -tx1 "$T/o" | tr -d ' \n')" = "387e7ea8" ] && ok || bad "e4m3 bytes: $(od -An -tx1 "$T/o")"
"$MX" convert --from=f32 --to=e4m3 --saturation=nosat --in="$T/in.f32" --out="$T/o" && ok || bad "nosat"
[ "$(od -An -tx1 "$T/o" | tr -d ' \n')" = "387e7fa8" ] && ok || bad "e4m3 nosat bytes: $(od -An -tx1 "$T/o")"
# stdin/stdout and decode back.
"$MX" convert --from=f32 --to=e4m3 <"$T/in.f32" | "$MX" convert --from=e4m3 --to=f32 >"$T/back" && ok || bad "pipe"
[ "$(od -An -tx1 "$T/back" | tr -d ' \n')" = "0000803f0000e0430000e043000080be" ] && ok || bad "decoded: $(od -An -tx1 "$T/back")"
# --impl=scalar is reachable and agrees.
"$MX" convert --from=f32 --to=e2m1 --impl=scalar --in="$T/in.f32" --out="$T/s" && ok || bad "impl=scalar"
"$MX" convert --from=f32 --to=e2m1 --in="$T/in.f32" --out="$T/a" && ok || bad "impl=best"
"$MX" convert --from=f32 --to=e2m1 --impl=sse4 --in="$T/in.f32" --out="$T/b" && cmp -s "$T/s" "$T/b" && ok || bad "impl=sse4"
cmp -s "$T/s" "$T/a" && ok || bad "scalar vs best differ"
# rs with a seed is deterministic.
"$MX" convert --from=f32 --to=e2m1 --rounding=rs --seed=7 --in="$T/in.f32" --out="$T/r1" && ok || bad "rs"
"$MX" convert --from=f32 --to=e2m1 --rounding=rs --seed=7 --in="$T/in.f32" --out="$T/r2" && cmp -s "$T/r1" "$T/r2" && ok || bad "rs determinism"

# Errors: nothing written to --out.
rm -f "$T/never"
expect_fail "not a multiple of the f32 element size" sh -c "printf 'abc' | '$MX' convert --from=f32 --to=e4m3 --out='$T/never'"
[ ! -e "$T/never" ] && ok || bad "output written on error"
expect_fail "--from: unknown format 'f99'" "$MX" convert --from=f99 --to=e4m3 --in="$T/in.f32" --out="$T/never"
expect_fail "--to: unknown format" "$MX" convert --from=f32 --to=nope --in="$T/in.f32" --out="$T/never"
expect_fail "nosat is not available for e2m1" "$MX" convert --from=f32 --to=e2m1 --saturation=nosat --in="$T/in.f32" --out="$T/never"
expect_fail "rz or rp" "$MX" convert --from=f32 --to=ue8m0 --in="$T/in.f32" --out="$T/never"
expect_fail "unknown rounding 'rq'" "$MX" convert --from=f32 --to=e4m3 --rounding=rq --in="$T/in.f32" --out="$T/never"
expect_fail "unknown saturation" "$MX" convert --from=f32 --to=e4m3 --saturation=clamp --in="$T/in.f32" --out="$T/never"
expect_fail "do not all fit f16" "$MX" convert --from=ue8m0 --to=f16 --in="$T/in.f32" --out="$T/never"
printf '\x01\x10' >"$T/badcodes"
expect_fail "input\[1\] = 0x10 is not a e2m1 code" "$MX" convert --from=e2m1 --to=f32 --in="$T/badcodes" --out="$T/never"
expect_fail "cannot open" "$MX" convert --from=f32 --to=e4m3 --in="$T/missing" --out="$T/never"
expect_fail "does not apply to 'mxpack table'" "$MX" table e4m3 --rounding=rz
expect_fail_fixed "unknown flag --bogus" "$MX" convert --bogus=1
expect_fail "unknown command 'frobnicate'" "$MX" frobnicate
expect_fail "--impl: unknown or unavailable implementation 'avx9000'" "$MX" convert --from=f32 --to=e4m3 --impl=avx9000 --in="$T/in.f32" --out="$T/never"
[ ! -e "$T/never" ] && ok || bad "output written on error"
"$MX" convert --help | grep -q -- "--saturation" && ok || bad "convert --help"
"$MX" --help | grep -q "convert" && ok || bad "top help"
"$MX" demo | grep -q '^verify: ok' && ok || bad "demo"

finish cli_test
