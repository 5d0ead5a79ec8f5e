#!/usr/bin/env bash
# CLI tests of `mxpack quantize` / `mxpack dequantize`: golden bytes, round
# trips, and error paths (message names the flag; no partial output file).
source "$(dirname "$0")/../common/cli_lib.sh"
hex() { od -An -tx1 -v "$1" | tr -d ' \n'; }

# One MXFP4 block: 6, 3, -1.5, 0.25, then 28 zeros (f32 little-endian).
# amax 6 -> floor scale 2^0 (0x7F); codes 7, 5, B (sign|3), 0 (0.25 ties to 0).
{ printf '\x00\x00\xc0\x40\x00\x00\x40\x40\x00\x00\xc0\xbf\x00\x00\x80\x3e'
  head -c 112 /dev/zero; } >"$T/blk.f32"
"$MX" quantize --format=mxfp4 --rows=1 --cols=32 --in="$T/blk.f32" \
  --out-elements="$T/e" --out-scales="$T/s" && ok || bad "quantize codes"
[ "$(hex "$T/e" | cut -c1-8)" = "07050b00" ] && ok || bad "codes: $(hex "$T/e")"
[ "$(stat -c %s "$T/e")" = 32 ] && ok || bad "codes size"
[ "$(hex "$T/s")" = "7f" ] && ok || bad "scale: $(hex "$T/s")"
# b4x16_p64: 8 bytes dense4 (element 2i in the low nibble) + 8 zero bytes.
"$MX" quantize --format=mxfp4 --rows=1 --cols=32 --layout=b4x16_p64 \
  --scale-layout=tcgen05 --in="$T/blk.f32" --out-elements="$T/p" \
  --out-scales="$T/ts" && ok || bad "quantize b4x16_p64"
[ "$(hex "$T/p")" = "570b$(printf '0%.0s' $(seq 60))" ] && ok || bad "b4x16_p64: $(hex "$T/p")"
[ "$(stat -c %s "$T/ts")" = 512 ] && ok || bad "tcgen05 tile size"
[ "$(hex "$T/ts" | cut -c1-2)" = "7f" ] && ok || bad "tile byte 0"
# Round trip: the block is exact in MXFP4 except 0.25 -> 0.
"$MX" dequantize --format=mxfp4 --rows=1 --cols=32 --layout=b4x16_p64 \
  --scale-layout=tcgen05 --in-elements="$T/p" --in-scales="$T/ts" \
  --out="$T/back" && ok || bad "dequantize"
[ "$(hex "$T/back" | cut -c1-32)" = "0000c040000040400000c0bf00000000" ] && ok || bad "dequantized: $(hex "$T/back" | cut -c1-32)"
# --impl=scalar agrees with the SIMD path.
"$MX" quantize --format=mxfp4 --rows=1 --cols=32 --layout=b4x16_p64 --impl=scalar \
  --scale-layout=tcgen05 --in="$T/blk.f32" --out-elements="$T/p2" --out-scales="$T/ts2" && ok || bad "scalar"
cmp -s "$T/p" "$T/p2" && cmp -s "$T/ts" "$T/ts2" && ok || bad "scalar != simd"
# NVFP4 writes a 4-byte tensor scale: amax 6 / 2688.
"$MX" quantize --format=nvfp4 --rows=1 --cols=32 --in="$T/blk.f32" --out-elements="$T/ne" \
  --out-scales="$T/ns" --out-tensor-scale="$T/nt" && ok || bad "nvfp4"
[ "$(stat -c %s "$T/nt")" = 4 ] && [ "$(stat -c %s "$T/ns")" = 2 ] && ok || bad "nvfp4 sizes"
"$MX" dequantize --format=nvfp4 --rows=1 --cols=32 --in-elements="$T/ne" --in-scales="$T/ns" \
  --in-tensor-scale="$T/nt" --to=bf16 --out="$T/nb" && ok || bad "nvfp4 dequantize"
[ "$(stat -c %s "$T/nb")" = 64 ] && ok || bad "bf16 size"
"$MX" quantize --format=mxfp6_e3m2 --rows=1 --cols=32 --stats --in="$T/blk.f32" \
  --out-elements="$T/e" --out-scales="$T/s" 2>"$T/stats" && ok || bad "stats"
grep -q 'SQNR' "$T/stats" && ok || bad "stats line: $(cat "$T/stats")"

# Errors name the flag; nothing is written.
expect_fail "--format: unknown MX format 'mxfp5'" "$MX" quantize --format=mxfp5 --rows=1 --cols=32 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "layout: dense6 cannot hold mxfp4" "$MX" quantize --format=mxfp4 --layout=dense6 --rows=1 --cols=32 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "--scale-mode: unknown scale mode 'up'" "$MX" quantize --format=mxfp4 --scale-mode=up --rows=1 --cols=32 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "in: expected 256 bytes" "$MX" quantize --format=mxfp4 --rows=2 --cols=32 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "--rows and --cols" "$MX" quantize --format=mxfp4 --cols=32 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "--out-tensor-scale: required for nvfp4" "$MX" quantize --format=nvfp4 --rows=1 --cols=32 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "--from: expected f32, bf16 or f16" "$MX" quantize --format=mxfp4 --from=e4m3 --rows=1 --cols=128 --in="$T/blk.f32" --out-elements="$T/never" --out-scales="$T/never2"
expect_fail "scales: expected 512 bytes" "$MX" dequantize --format=mxfp4 --rows=1 --cols=32 --layout=b4x16_p64 --scale-layout=tcgen05 --in-elements="$T/p" --in-scales="$T/s" --out="$T/never"
{ printf '\x47'; head -c 31 "$T/e"; } >"$T/badcodes"
expect_fail "elements\[0\] = 0x47: expected a e3m2 code" "$MX" dequantize --format=mxfp6_e3m2 --rows=1 --cols=32 --in-elements="$T/badcodes" --in-scales="$T/s" --out="$T/never"
expect_fail "--in-tensor-scale: expected 4 bytes" "$MX" dequantize --format=nvfp4 --rows=1 --cols=32 --in-elements="$T/ne" --in-scales="$T/ns" --in-tensor-scale="$T/ns" --out="$T/never"
[ ! -e "$T/never" ] && [ ! -e "$T/never2" ] && ok || bad "partial output left behind"

finish mx_cli_test
