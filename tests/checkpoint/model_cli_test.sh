#!/usr/bin/env bash
# CLI tests of `mxpack quantize-model`, `dequantize-model`, `inspect` and
# `demo`: reports, metadata listing, --threads determinism, --json, and every
# error path (exit status 2, message naming the argument, no output file).
source "$(dirname "$0")/../common/cli_lib.sh"
no_output() { [ ! -e "$T/o.safetensors" ] && [ ! -e "$T/o.safetensors.mxpack-tmp" ] && ok || bad "output file left behind after: $*"; rm -f "$T/o.safetensors"; }

# A hand-made safetensors file: w F32 [4, 64] (values +-0.125..8), norm F32
# [64], ids I64 [2]. Header padded with spaces to a multiple of 8 bytes.
le64() { local n=$1 s="" i; for i in 0 1 2 3 4 5 6 7; do s="$s$(printf '\\x%02x' $(( (n >> (8*i)) & 255 )))"; done; printf "$s"; }
make_file() {  # make_file PATH
  local h='{"w":{"dtype":"F32","shape":[4,64],"data_offsets":[0,1024]},"norm":{"dtype":"F32","shape":[64],"data_offsets":[1024,1280]},"ids":{"dtype":"I64","shape":[2],"data_offsets":[1280,1296]},"__metadata__":{"format":"pt"}}'
  while [ $(( ${#h} % 8 )) -ne 0 ]; do h="$h "; done
  {
    le64 ${#h}; printf '%s' "$h"
    local i exps=(3e 3f be bf 40 c0 3d bd)
    for i in $(seq 0 255); do
      printf "\\x$(printf %02x $(( (i*37) % 256 )))\\x$(printf %02x $(( (i*11) % 256 )))\\x$(printf %02x $(( 128 | (i % 64) )))\\x${exps[$((i % 8))]}"
    done
    for i in $(seq 0 63); do printf '\x00\x00\x80\x3f'; done
    printf '\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00'
  } >"$1"
}
make_file "$T/in.safetensors"

# inspect the input.
"$MX" inspect "$T/in.safetensors" >"$T/i" 2>&1 && ok || bad "inspect input: $(cat "$T/i")"
grep -q '^w  *F32  *\[4, 64\]  *1024$' "$T/i" && ok || bad "inspect w row: $(cat "$T/i")"
grep -q '3 tensors, 1296 data bytes, 1 metadata entries' "$T/i" && ok || bad "inspect summary"

# The default selection finds nothing in a file of names that are no linear
# layers: an error naming the way out.
expect_fail_fixed "no tensor selected for quantization among 3 tensors" "$MX" quantize-model "$T/in.safetensors" "$T/o.safetensors"; no_output empty selection

# quantize-model (mxpack scheme): report, metadata, inspect.
"$MX" quantize-model "$T/in.safetensors" "$T/q.safetensors" --scheme=mxpack --format=mxfp4 --layout=tcgen05 --include='^w$' --quiet >"$T/r" 2>&1 \
  && ok || bad "quantize-model: $(cat "$T/r")"
grep -q '^quantize-model: scheme mxpack, format mxfp4; 1 input shard -> 1 output shard' "$T/r" \
  && ok || bad "report header: $(head -1 "$T/r")"
grep -q '^total: 1 quantized, 2 copied' "$T/r" && ok || bad "report total: $(grep total "$T/r")"
grep -q "^w  *\[4, 64\]  *F32  *mxfp4  *matches --include '^w\$'" "$T/r" && ok || bad "report w row: $(grep '^w ' "$T/r")"
grep -q '^ids  *\[2\]  *I64  *copied  *dtype I64 (not F32/F16/BF16)' "$T/r" && ok || bad "report ids row: $(grep '^ids' "$T/r")"
grep -q '^norm  *\[64\]  *F32  *copied  *1-D (not a matrix)' "$T/r" && ok || bad "report norm row"
"$MX" inspect "$T/q.safetensors" >"$T/i" && ok || bad "inspect quantized"
grep -q '^  w: F32 \[4, 64\] -> mxfp4, layout tcgen05 (elements b4x16_p64, scales tcgen05), scale mode floor, block 32; w.qdata + w.scales$' "$T/i" \
  && ok || bad "inspect record: $(cat "$T/i")"
grep -q '^w.qdata  *U8  *\[4, 64\]  *256$' "$T/i" && ok || bad "inspect qdata row"
grep -q '^w.scales  *U8  *\[1, 1, 512\]  *512$' "$T/i" && ok || bad "inspect scales row (one tcgen05 tile)"
grep -q '^  mxpack.version = ' "$T/i" && ok || bad "inspect version"

# Same bytes for any thread count.
for n in 1 2 3; do
  "$MX" quantize-model "$T/in.safetensors" "$T/q$n.safetensors" --scheme=mxpack --format=mxfp4 --layout=tcgen05 --include='^w$' --threads=$n --quiet >/dev/null \
    && ok || bad "quantize --threads=$n"
done
cmp -s "$T/q1.safetensors" "$T/q2.safetensors" && cmp -s "$T/q1.safetensors" "$T/q3.safetensors" \
  && cmp -s "$T/q1.safetensors" "$T/q.safetensors" && ok || bad "output differs between thread counts"

# The mxpack scheme's default layout is dense; nvfp4 has a tensor scale.
"$MX" quantize-model "$T/in.safetensors" "$T/d.safetensors" --scheme=mxpack --format=nvfp4 --include='^w$' --quiet >/dev/null \
  && ok || bad "quantize nvfp4 dense"
"$MX" inspect "$T/d.safetensors" | grep -q 'w: F32 \[4, 64\] -> nvfp4, layout dense (elements dense4, scales linear), scale mode even, block 16; w.qdata + w.scales + w.tscale' \
  && ok || bad "inspect nvfp4 dense"
"$MX" quantize-model "$T/in.safetensors" "$T/e.safetensors" --scheme=mxpack --format=mxfp8_e4m3 --scale-mode=rceil --include='^w$' --quiet >/dev/null \
  && ok || bad "quantize mxfp8 rceil"
"$MX" inspect "$T/e.safetensors" | grep -q '^w.qdata  *F8_E4M3  *\[4, 64\]' && ok || bad "mxfp8 qdata dtype"

# compressed-tensors (the default scheme): NVFP4 names, dtypes and shapes.
"$MX" quantize-model "$T/in.safetensors" "$T/ct.safetensors" --include='^w$' --quiet >"$T/r" && ok || bad "ct quantize: $(cat "$T/r")"
"$MX" inspect "$T/ct.safetensors" >"$T/i" && ok || bad "inspect ct"
grep -q '^w_packed  *U8  *\[4, 32\]  *128$' "$T/i" && grep -q '^w_scale  *F8_E4M3  *\[4, 4\]  *16$' "$T/i" \
  && grep -q '^w_global_scale  *F32  *\[1\]  *4$' "$T/i" && ok || bad "ct tensors: $(cat "$T/i")"
grep -q '^  w: compressed-tensors nvfp4 \[4, 64\] <- w_packed + w_scale + w_global_scale$' "$T/i" && ok || bad "inspect ct record: $(cat "$T/i")"

# --json report and inspect --json.
"$MX" quantize-model "$T/in.safetensors" "$T/j.safetensors" --scheme=mxpack --format=mxfp6_e2m3 --include='^w$' --json --quiet >"$T/j" \
  && ok || bad "quantize --json"
grep -q '"format": "mxfp6_e2m3"' "$T/j" && grep -q '"scheme": "mxpack"' "$T/j" \
  && ok || bad "json report: $(head -20 "$T/j")"
if command -v python3 >/dev/null; then
  python3 -m json.tool "$T/j" >/dev/null && ok || bad "json report does not parse"
  "$MX" inspect --json "$T/j.safetensors" | python3 -m json.tool >/dev/null && ok || bad "inspect --json does not parse"
fi

# dequantize-model restores names, dtypes and shapes.
"$MX" dequantize-model "$T/q.safetensors" "$T/b.safetensors" >"$T/r" 2>&1 && ok || bad "dequantize-model: $(cat "$T/r")"
grep -q '^total: 1 dequantized, 2 copied' "$T/r" && ok || bad "dequantize report: $(cat "$T/r")"
"$MX" inspect "$T/b.safetensors" >"$T/i" && ok || bad "inspect dequantized"
grep -q '^w  *F32  *\[4, 64\]  *1024$' "$T/i" && ! grep -q 'mxpack' "$T/i" && ok || bad "dequantized listing: $(cat "$T/i")"
"$MX" dequantize-model "$T/q.safetensors" "$T/h.safetensors" --to=bf16 >/dev/null && ok || bad "dequantize --to=bf16"
"$MX" inspect "$T/h.safetensors" | grep -q '^w  *BF16  *\[4, 64\]  *512$' && ok || bad "bf16 dequant listing"
"$MX" dequantize-model "$T/ct.safetensors" "$T/ctb.safetensors" >/dev/null && ok || bad "dequantize ct"
"$MX" inspect "$T/ctb.safetensors" | grep -q '^w  *BF16  *\[4, 64\]  *512$' && ok || bad "ct dequant listing (bf16, as compressed-tensors)"

# Errors: status 2, the argument named, no output file.
O="$T/o.safetensors"
expect_fail_fixed "--format: " "$MX" quantize-model "$T/in.safetensors" "$O" --format=mxfp5; no_output bad format
expect_fail_fixed "format: scheme 'compressed-tensors' has no mxfp6_e2m3; schemes with mxfp6_e2m3: mxpack" "$MX" quantize-model "$T/in.safetensors" "$O" --format=mxfp6_e2m3 --include=w; no_output format of another scheme
expect_fail_fixed "scheme: unknown scheme 'vllm'; expected one of compressed-tensors, modelopt, gpt-oss, mxpack" "$MX" quantize-model "$T/in.safetensors" "$O" --scheme=vllm; no_output bad scheme
expect_fail_fixed "expected dense or tcgen05" "$MX" quantize-model "$T/in.safetensors" "$O" --scheme=mxpack --format=mxfp4 --layout=b4x16_p64; no_output bad layout
expect_fail_fixed "--scale-mode and --layout apply to --scheme=mxpack only" "$MX" quantize-model "$T/in.safetensors" "$O" --scheme=compressed-tensors --layout=dense; no_output layout without mxpack
expect_fail_fixed "--scale-mode: " "$MX" quantize-model "$T/in.safetensors" "$O" --scheme=mxpack --scale-mode=up; no_output bad scale mode
expect_fail_fixed "--threads: expected 0 (all cores) .. 1024, got -1" "$MX" quantize-model "$T/in.safetensors" "$O" --threads=-1; no_output threads
expect_fail_fixed "--max-shard-size: expected a number of bytes" "$MX" quantize-model "$T/in.safetensors" "$O" --max-shard-size=5XB; no_output shard size
expect_fail_fixed "include: invalid regular expression '('" "$MX" quantize-model "$T/in.safetensors" "$O" --include='('; no_output regex
expect_fail_fixed "ignore: invalid regular expression '['" "$MX" quantize-model "$T/in.safetensors" "$O" --ignore='['; no_output regex ignore
expect_fail_fixed "expected IN (file or model directory) and OUT, got 1 arguments" "$MX" quantize-model "$T/in.safetensors"
expect_fail_fixed "flag --rounding does not apply to 'mxpack quantize-model'" "$MX" quantize-model "$T/in.safetensors" "$O" --rounding=rz; no_output foreign flag
expect_fail_fixed "cannot open for reading" "$MX" quantize-model "$T/missing.safetensors" "$O"; no_output missing input
head -c 100 "$T/in.safetensors" >"$T/trunc.safetensors"
expect_fail_fixed "exceeds the 92 bytes that follow the length field" "$MX" quantize-model "$T/trunc.safetensors" "$O"; no_output truncated
expect_fail_fixed "exceeds the 92 bytes" "$MX" dequantize-model "$T/trunc.safetensors" "$O"; no_output truncated dequantize
expect_fail_fixed "exceeds the 92 bytes" "$MX" inspect "$T/trunc.safetensors"
expect_fail_fixed "--to: " "$MX" dequantize-model "$T/q.safetensors" "$O" --to=f8; no_output bad to
expect_fail_fixed "to: expected f32, bf16 or f16, got e4m3" "$MX" dequantize-model "$T/q.safetensors" "$O" --to=e4m3; no_output to e4m3
expect_fail_fixed "cannot open for writing" "$MX" quantize-model "$T/in.safetensors" "$T/no/such/dir.safetensors" --include=w
ls "$T" | grep -q 'mxpack-tmp' && bad "staging files left behind: $(ls "$T")" || ok

# --dry-run prints the plan and writes nothing.
"$MX" quantize-model "$T/in.safetensors" "$T/dry" --include='^w$' --dry-run >"$T/r" && ok || bad "dry run: $(cat "$T/r")"
[ ! -e "$T/dry" ] && ok || bad "dry run wrote output"
grep -q '^quantize-model --dry-run: scheme compressed-tensors, format nvfp4' "$T/r" && ok || bad "dry run header: $(cat "$T/r")"
grep -q -- '-> w_scale F8_E4M3 \[4, 4\], 16 bytes (model.safetensors)' "$T/r" && ok || bad "dry run outputs: $(cat "$T/r")"

# Help names the schemes and layouts.
"$MX" quantize-model --help | grep -q 'tcgen05  elements codes (fp8) / b6x16_p32 (fp6) / b4x16_p64 (fp4)' && ok || bad "quantize-model help"
"$MX" quantize-model --help | grep -q 'compressed-tensors  nvfp4 (default)' && ok || bad "quantize-model help schemes"

# The demo: the README main job verifies itself.
"$MX" demo >"$T/demo" 2>&1 && ok || bad "demo failed: $(tail -3 "$T/demo")"
grep -q '^verify: ok' "$T/demo" && ok || bad "demo verify line"
grep -q '^quantize-model (compressed-tensors, nvfp4): 28 tensors quantized, 11 copied' "$T/demo" && ok || bad "demo summary line: $(grep quantize-model "$T/demo")"

finish model_cli_test
