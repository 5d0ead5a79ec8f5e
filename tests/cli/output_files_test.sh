#!/usr/bin/env bash
# Output-file safety of the CLI (docs/cli.md, "Output files"): an output that
# is an input (any spelling, hard link, symbolic link), a directory, a FIFO or
# a character device is refused before any work with exit status 2; symbolic
# links are written through; interrupted writes leave the destination as it
# was and no temporary file. After every case the inputs are byte-identical
# and no *.mxpack-tmp* file remains.
source "$(dirname "$0")/../common/cli_lib.sh"
MX=$(realpath "$MX")

# Inputs and their checksums: a raw f32 array and a small safetensors file.
printf '\x00\x00\x80\x3f\x00\x00\xe8\x43\x00\x80\xe8\x43\x00\x00\x80\xbe' >"$T/in.f32"
python3 - "$T/in.safetensors" <<'EOF'
import json, struct, sys
data = struct.pack('<64f', *[float(i % 7) - 3 for i in range(64)])
h = json.dumps({"w": {"dtype": "F32", "shape": [2, 32],
                      "data_offsets": [0, len(data)]}}).encode()
h += b' ' * ((8 - len(h) % 8) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + data)
EOF
sums() { (cd "$T" && sha256sum in.f32 in.safetensors); }
SUMS=$(sums)
# intact WHAT: inputs unchanged, no temporary file anywhere under $T.
intact() {
  [ "$(sums)" = "$SUMS" ] && ok || bad "$1: an input changed"
  local left
  left=$(find "$T" -name '*mxpack-tmp*' -o -name '*mxpack-old*')
  [ -z "$left" ] && ok || bad "$1: left behind: $left"
}
# refused NEEDLE CMD...: exit status exactly 2 and NEEDLE on stderr.
refused() {
  local needle="$1"; shift
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ $rc -eq 2 ] && ok || bad "exit status $rc (expected 2): $*"
  grep -qF -- "$needle" "$T/err" && ok || bad "stderr of '$*' lacks '$needle': $(cat "$T/err")"
  intact "$*"
}
CONV=("$MX" convert --from=f32 --to=e4m3 --in="$T/in.f32")
QM=("$MX" quantize-model --format=mxfp4 --include=. --quiet "$T/in.safetensors")

# The same file as an input, spelled differently.
mkdir -p "$T/sub"
base=$(basename "$T")
refused "same file as input" "${CONV[@]}" --out="$T/in.f32"
refused "same file as input" "${CONV[@]}" --out="$T/sub/../in.f32"
refused "same file as input" "${QM[@]}" "$T/in.safetensors"
refused "same file as input" "${QM[@]}" "$T/./in.safetensors"
refused "same file as input" sh -c "cd '$T/sub' && '$MX' quantize-model --format=mxfp4 --quiet ../in.safetensors ../../$base/./in.safetensors"
refused "same file as input" "$MX" dequantize-model "$T/in.safetensors" "$T/sub/../in.safetensors"
# stdin redirected from the output file.
refused "same file as input stdin" sh -c "'$MX' convert --from=f32 --to=e4m3 --out='$T/in.f32' <'$T/in.f32'"
# A hard link and a symbolic link to the input.
ln "$T/in.f32" "$T/hard.f32"
ln -s in.f32 "$T/soft.f32"
refused "same file as input" "${CONV[@]}" --out="$T/hard.f32"
refused "same file as input" "${CONV[@]}" --out="$T/soft.f32"
[ -L "$T/soft.f32" ] && ok || bad "symlink to the input replaced"
refused "same file as input" "$MX" pack --layout=dense4 --in="$T/in.f32" --out="$T/hard.f32"
refused "same file as input" "$MX" reduce --type=f32 "$T/in.f32" "$T/in.f32" --out="$T/soft.f32"
refused "same file as input" "$MX" quantize --format=mxfp8_e4m3 --rows=1 --cols=4 \
  --in="$T/in.f32" --out-elements="$T/e" --out-scales="$T/hard.f32"
refused "same file as output" "$MX" quantize --format=mxfp8_e4m3 --rows=1 --cols=4 \
  --in="$T/in.f32" --out-elements="$T/e" --out-scales="$T/sub/../e"
rm -f "$T/hard.f32" "$T/soft.f32"

# A symbolic link to another file is written through; the link stays.
printf 'old' >"$T/target.bin"
ln -s target.bin "$T/link.bin"
"${CONV[@]}" --out="$T/link.bin" && ok || bad "convert through a symlink"
[ -L "$T/link.bin" ] && ok || bad "symlink replaced by a file"
[ "$(od -An -tx1 "$T/target.bin" | tr -d ' \n')" = "387e7ea8" ] && ok || bad "target not written: $(od -An -tx1 "$T/target.bin")"
# (quantize-model writes one file when the output ends in .safetensors.)
printf 'old' >"$T/target.safetensors"
ln -s target.safetensors "$T/link.safetensors"
"${QM[@]}" "$T/link.safetensors" >/dev/null && ok || bad "quantize-model through a symlink"
[ -L "$T/link.safetensors" ] && "$MX" inspect "$T/target.safetensors" >/dev/null && ok || bad "quantize-model did not write the link target"
intact "symlink"
ln -s missing "$T/dangling"
refused "target does not exist" "${CONV[@]}" --out="$T/dangling"
[ -L "$T/dangling" ] && [ ! -e "$T/missing" ] && ok || bad "dangling symlink changed"

# A directory, a FIFO (must not block), a character device.
mkdir "$T/outdir"
refused "is a directory" "${CONV[@]}" --out="$T/outdir"
mkdir "$T/outdir.safetensors"
refused "is a directory" "${QM[@]}" "$T/outdir.safetensors"
[ -d "$T/outdir" ] && [ -z "$(ls -A "$T/outdir")" ] && ok || bad "directory changed"
mkfifo "$T/fifo"
refused "is a FIFO" timeout 20 "${CONV[@]}" --out="$T/fifo"
refused "is a FIFO" timeout 20 "${QM[@]}" "$T/fifo"
[ -p "$T/fifo" ] && ok || bad "FIFO replaced"
refused "is a character device" "${CONV[@]}" --out=/dev/null
refused "is a character device" "${QM[@]}" /dev/null
[ -c /dev/null ] && ok || bad "/dev/null replaced"
refused "does not exist" "${CONV[@]}" --out="$T/no-such-dir/x"
# Unchanged: "-" is stdout.
"${CONV[@]}" --out=- | od -An -tx1 | tr -d ' \n' | grep -qx 387e7ea8 && ok || bad "--out=- to stdout"

# Interruption while reading a FIFO input: the old destination stays.
printf 'previous' >"$T/dest"
rm -f "$T/fifo_in"; mkfifo "$T/fifo_in"
set -m  # Background jobs keep SIGINT (bash ignores it for them otherwise).
for sig in TERM INT; do
  "$MX" convert --from=bf16 --to=f32 --in="$T/fifo_in" --out="$T/dest" 2>/dev/null &
  pid=$!
  exec 7<>"$T/fifo_in"  # Read-write: never blocks, whatever the reader does.
  head -c 32768 /dev/zero >&7  # Fits the pipe buffer.
  sleep 0.2
  kill -s $sig $pid
  wait $pid
  rc=$?
  exec 7>&-
  [ $rc -gt 128 ] && ok || bad "SIG$sig on a FIFO reader: exit status $rc"
  [ "$(cat "$T/dest")" = previous ] && ok || bad "SIG$sig: destination changed"
  intact "SIG$sig while reading"
done

# Interruption at many points of a large conversion (64 MiB bf16 -> 128 MiB
# f32): the destination is either untouched or the complete new output, and
# no temporary file remains.
head -c 67108864 /dev/zero >"$T/big.bf16"
"$MX" convert --from=bf16 --to=f32 --in="$T/big.bf16" --out="$T/big.ref" && ok || bad "big convert"
hit=0
for delay in 0.01 0.03 0.05 0.08 0.1 0.15 0.2 0.3 0.4 0.6; do
  for sig in TERM INT; do
    printf 'previous' >"$T/dest"
    "$MX" convert --from=bf16 --to=f32 --in="$T/big.bf16" --out="$T/dest" &
    pid=$!
    sleep $delay
    kill -s $sig $pid 2>/dev/null
    wait $pid
    rc=$?
    if [ "$(head -c 8 "$T/dest" | tr -d '\0')" = previous ]; then
      [ $rc -gt 128 ] && hit=$((hit+1)) && ok || bad "destination untouched but exit status $rc"
    else
      cmp -s "$T/dest" "$T/big.ref" && ok || bad "SIG$sig after ${delay}s: partial destination"
    fi
    left=$(find "$T" -name '*mxpack-tmp*')
    [ -z "$left" ] && ok || bad "SIG$sig after ${delay}s: left behind: $left"
  done
done
# And as soon as the temporary file exists (the handler must remove it).
for sig in TERM INT; do
  printf 'previous' >"$T/dest"
  "$MX" convert --from=bf16 --to=f32 --in="$T/big.bf16" --out="$T/dest" &
  pid=$!
  seen=0
  for _ in $(seq 200000); do
    if compgen -G "$T/.dest.mxpack-tmp.*" >/dev/null; then seen=1; break; fi
    kill -0 $pid 2>/dev/null || break
  done
  kill -s $sig $pid 2>/dev/null
  wait $pid
  rc=$?
  [ $seen -eq 1 ] && ok || bad "SIG$sig: never saw the temporary file"
  if [ "$(head -c 8 "$T/dest" | tr -d '\0')" = previous ]; then
    [ $rc -gt 128 ] && ok || bad "destination untouched but exit status $rc"
  else
    cmp -s "$T/dest" "$T/big.ref" && ok || bad "SIG$sig while writing: partial destination"
  fi
  left=$(find "$T" -name '*mxpack-tmp*')
  [ -z "$left" ] && ok || bad "SIG$sig while writing: left behind: $left"
done
set +m
[ $hit -gt 0 ] && ok || bad "no signal arrived before the conversion finished"
intact "interrupted conversions"

finish output_files_test
