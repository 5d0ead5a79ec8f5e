#!/usr/bin/env bash
# `mxpack tmem-sim`: script outputs (cp, shift, st, ld, dump, peer CTA, fp6
# container) and every script error, which names the line and the rule.
source "$(dirname "$0")/../common/cli_lib.sh"

# Shared memory: 32 KiB, byte i = i % 256.
s=""; for i in $(seq 0 255); do s+=$(printf '\\%03o' "$i"); done
printf "$s" >"$T/row"; : >"$T/smem"; for i in $(seq 1 128); do cat "$T/row" >>"$T/smem"; done

cat >"$T/ok.script" <<'EOF'
# cp a 128x256b tile, shift it down, read it back
fill 0xdeadbeef
cp tcgen05.cp.cta_group::1.128x256b taddr=0:0 start=0 lbo=2048 sbo=128   # K-major
dump lanes=0:2 cols=0:4
shift tcgen05.shift.cta_group::1.down taddr=0:0
ld tcgen05.ld.sync.aligned.32x32b.x8.b32 warp=0 taddr=0:0 thread=17
st tcgen05.st.sync.aligned.16x32bx2.x1.b32 warp=1 taddr=32:100 split=8
dump lanes=32:34 cols=100:102
EOF
cat >"$T/ok.expected" <<'EOF'
# tcgen05.cp.cta_group::1.128x256b taddr=0x00000000 desc=0x0000400800800000: ok
# TMEM cta 0 lanes 0..1 columns 0..3
lane/col        0        1        2        3
       0 03020100 07060504 0b0a0908 0f0e0d0c
       1 13121110 17161514 1b1a1918 1f1e1d1c
# tcgen05.shift.cta_group::1.down taddr=0x00000000: ok
# tcgen05.ld.sync.aligned.32x32b.x8.b32 warp=0 taddr=0x00000000
thread       r0       r1       r2       r3       r4       r5       r6       r7
    17 03020100 07060504 0b0a0908 0f0e0d0c 03020100 07060504 0b0a0908 0f0e0d0c
# tcgen05.st.sync.aligned.16x32bx2.x1.b32 warp=1 taddr=0x00200064: ok (r[j] of thread t = t<<16|j)
# TMEM cta 0 lanes 32..33 columns 100..101
lane/col      100      101
      32 00000000 deadbeef
      33 00010000 deadbeef
EOF
"$MX" tmem-sim "$T/ok.script" --in="$T/smem" --out="$T/ok.out" && ok || bad "tmem-sim ok.script"
cmp -s "$T/ok.out" "$T/ok.expected" && ok || bad "ok.script output: $(diff "$T/ok.expected" "$T/ok.out")"

cat >"$T/peer.script" <<'EOF'
peer
fp6 mid6
cp tcgen05.cp.cta_group::2.128x128b.b8x16.b6x16_p32 taddr=0:0 start=0 lbo=2048 sbo=128 swizzle=none
dump lanes=1:2 cols=0:4 cta=1
ld tcgen05.ld.sync.aligned.16x64b.x1.b32 warp=0 taddr=0:0 thread=3
EOF
cat >"$T/peer.expected" <<'EOF'
# tcgen05.cp.cta_group::2.128x128b.b8x16.b6x16_p32 taddr=0x00000000 desc=0x0000400800800000: ok
# TMEM cta 1 lanes 1..1 columns 0..3
lane/col        0        1        2        3
       1 08420820 0a222026 0c02382c 0c625032
# tcgen05.ld.sync.aligned.16x64b.x1.b32 warp=0 taddr=0x00000000
thread       r0
     3 42302406
EOF
"$MX" tmem-sim "$T/peer.script" --in="$T/smem" >"$T/peer.out" && ok || bad "tmem-sim peer.script"
cmp -s "$T/peer.out" "$T/peer.expected" && ok || bad "peer.script output: $(diff "$T/peer.expected" "$T/peer.out")"

# fails SCRIPT_TEXT EXPECTED_STDERR_PIECE: the script fails with the message
# "script line N 'LINE': ..." containing the piece; nothing goes to --out.
n=0
fails() {
  n=$((n+1)); printf '%s\n' "$1" >"$T/e$n.script"; rm -f "$T/never"
  expect_fail_fixed "$2" "$MX" tmem-sim "$T/e$n.script" --in="$T/smem" --out="$T/never"
  [ ! -e "$T/never" ] && ok || bad "output written on error: $1"
}
L="script line 1"
C1=tcgen05.cp.cta_group::1.128x256b
LD=tcgen05.ld.sync.aligned.32x32b.x1.b32
fails "bogus" "$L 'bogus': unknown step 'bogus'; expected peer, fp6, fill, cp, shift, st, ld or dump"
fails "bogus x" "$L 'bogus x': expected KEY=VALUE, got 'x'"
fails "cp" "$L 'cp': 'cp' needs a tcgen05 spelling"
fails "cp $C1" "'cp' needs taddr="
fails "cp $C1 taddr=0:0" "'cp' needs start="
fails "cp $C1 taddr=0:0 desc=0x1 start=0" "cp: give either desc= or start=/lbo=/sbo=/swizzle=, not both"
fails "cp $C1 taddr=0:0 start=0 lbo=1 sbo=x" "sbo: expected a decimal or 0x number, got 'x'"
fails "cp $C1 taddr=0:0 start=0 lbo=1 sbo=0x100000000" "sbo: too large"
fails "cp $C1 taddr=0:0 start=0 lbo=16 sbo=16 swizzle=99b" "swizzle: expected none, 128b_base32b, 128b, 64b or 32b, got '99b'"
fails "cp $C1 taddr=0:0 warp=1" "'cp' does not take 'warp='"
fails "cp $C1 taddr=0:0 split=1" "immHalfSplitoff: tcgen05.cp takes none"
fails "ld tcgen05.st.sync.aligned.32x32b.x1.b32 warp=0 taddr=0:0" "'ld' step needs a tcgen05.ld spelling, got tcgen05.st.sync.aligned.32x32b.x1.b32"
fails "ld $LD warp=w taddr=0:0" "warp: expected an integer, got 'w'"
fails "ld $LD warp=0 taddr=0:0 thread=32" "thread: expected 0..31, got '32'"
fails "ld $LD warp=0 taddr=1:2:3" "taddr: expected LANE:COLUMN or 0xTADDR, got '1:2:3'"
fails "ld $LD warp=0 taddr=0x100000000" "taddr: 0x100000000 exceeds 32 bits"
fails "ld $LD warp=0 taddr=0:0 split=3" "immHalfSplitoff: only .16x32bx2 takes immHalfSplitoff, shape is .32x32b"
fails "ld $LD taddr=0:0" "'ld' needs warp="
fails "ld $LD warp=0 taddr=0:0 swizzle=none" "'ld' does not take 'swizzle='"
fails "ld tcgen05.ld.sync.aligned.32x32b.x9.b32 warp=0 taddr=0:0" "num: tcgen05.ld.32x32b takes .x1, .x2, .x4, ... .x128, got .x9"
fails "shift tcgen05.shift.cta_group::1.down taddr=0:0 lbo=1" "'shift' does not take 'lbo='"
fails "dump lanes=0:0 cols=0:1" "lanes: expected FIRST:END with FIRST < END, got '0:0'"
fails "dump lanes=0:1" "'dump' needs cols="
fails "dump lanes=0:1 cols=0:1 cta=x" "cta: expected 0 or 1"
fails "dump lanes=0:1 cols=0:1 cta=1" "Tmem::Read: expected cta < 1, lane < 128, column < 512, got cta 1 lane 0 column 0"
fails "dump lanes=0:1 cols=510:513" "got cta 0 lane 0 column 512"
fails "fp6 high6" "unknown FP6 container placement 'high6'"
fails "fp6" "'fp6' needs value="
fails "fill" "'fill' needs value="
fails "fill zz" "fill: expected a decimal or 0x number, got 'zz'"
fails "peer 1" "expected KEY=VALUE, got '1'"
fails "peer x=1" "'peer' does not take 'x='"
fails "$(printf 'dump lanes=0:1 cols=0:1\n# late\npeer')" "script line 3 'peer': 'peer' and 'fill' must come before the first cp/shift/st/ld/dump"
fails "$(printf 'fp6 mid6\n\nld %s warp=0 taddr=0:0\nfill 3' "$LD")" "script line 4 'fill 3': 'peer' and 'fill' must come before"
fails "st tcgen05.st.sync.aligned.32x32b.x1.b32 warp=5 taddr=0:0" "warp 5 may access lanes 32..63 only (warp % 4 = 1)"
fails "cp tcgen05.cp.cta_group::2.128x256b taddr=0:0 start=0 lbo=16 sbo=16" ".cta_group::2: the Tmem has no peer CTA"
fails "cp $C1 taddr=0:0 start=1000000 lbo=16 sbo=16" "descriptor start_address: expected a multiple of 16 below 2^18"
expect_fail_fixed "expected one argument SCRIPT" "$MX" tmem-sim
expect_fail_fixed "cannot open for reading" "$MX" tmem-sim "$T/missing.script"

finish tmem_sim_cli_test
