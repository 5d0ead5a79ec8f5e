#!/usr/bin/env bash
# `mxpack ptx-check`: verdicts, per-line output and exit codes (0 all legal,
# 1 some illegal, 2 usage error) of docs/ptx_check.md.
source "$(dirname "$0")/../common/cli_lib.sh"

# rc EXPECTED cmd...: the exit status of cmd is EXPECTED.
rc() {
  local want="$1"; shift
  "$@" >"$T/out" 2>"$T/err"
  local got=$?
  [ "$got" = "$want" ] && ok || bad "exit $got (want $want): $* :: $(cat "$T/out" "$T/err")"
}

# Legal, illegal, with and without operands.
rc 0 "$MX" ptx-check --target=sm_100a "multimem.ld_reduce.add.acc::f16.v4.e4m3 {%rc1, %rc2, %rc3, %rc4}, [%rd1];"
rc 0 "$MX" ptx-check --target=sm_100a "multimem.red.min.v2.bf16x2 [%rd1], {%r1, %r2};"
grep -q "ptxas 13 allows .min on .bf16x2 with .vec although the PTX ISA .redop table lists only .add" "$T/out" && ok || bad "red.min note: $(cat "$T/out")"
for s in multimem.st.cta.bf16x2 multimem.ld_reduce.sys.add.bf16x2 \
         multimem.st.relaxed.global.u64 multimem.red.release.min.s32; do
  rc 1 "$MX" ptx-check --target=sm_100a "$s"
  grep -q "\[semantics\]" "$T/err" && ok || bad "$s: $(cat "$T/err")"
done
rc 1 "$MX" ptx-check "multimem.ld_reduce.add.f32 garbage garbage ;;; )))"
rc 1 "$MX" ptx-check "multimem.ld_reduce.add.f32 %rd1, [%rd2];"
rc 1 "$MX" ptx-check --target=sm_90 multimem.st.v4.e4m3
rc 0 "$MX" ptx-check --target=sm_100a "tcgen05.ld.sync.x1.32x32b.b32 {%r1}, [%r2];"
rc 1 "$MX" ptx-check --target=sm_100a "tcgen05.ld.sync.aligned.32x32b.x1.b32 %r1, [%r2];"

# Several spellings: one verdict line each, in order; exit 1 if any illegal.
rc 1 "$MX" ptx-check multimem.st.f32 multimem.st.f16 "multimem.red.add.u32 [%rd1], %r1;"
[ "$(wc -l <"$T/out")" = 3 ] && ok || bad "3 verdict lines: $(cat "$T/out")"
[ "$(cut -f2 "$T/out" | cut -c1-7 | tr '\n' ' ')" = "legal illegal legal " ] && ok || bad "verdicts: $(cat "$T/out")"
rc 0 "$MX" ptx-check multimem.st.f32 multimem.st.v2.f16
printf 'multimem.st.f32\n# comment\n\nmultimem.ld_reduce.min.v2.f16 {%%rs1, %%rs2}, [%%rd1];\n' >"$T/list"
rc 0 "$MX" ptx-check --file="$T/list" --target=sm_90
[ "$(wc -l <"$T/out")" = 2 ] && ok || bad "--file lines: $(cat "$T/out")"
rc 0 "$MX" ptx-check --file=- <"$T/list"
printf 'multimem.st.f32\nmultimem.st.f16\n' | rc 1 "$MX" ptx-check --file=-

# Usage errors: exit 2.
rc 2 "$MX" ptx-check
rc 2 "$MX" ptx-check --target=sm_999 multimem.st.f32
rc 2 "$MX" ptx-check --target=sm_101a multimem.st.f32
rc 2 "$MX" ptx-check --target=bogus multimem.st.f32
rc 2 "$MX" ptx-check "tcgen05.mma.cta_group::1.kind::f16"
rc 2 "$MX" ptx-check "multimem.cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 16;"
rc 2 "$MX" ptx-check foo.bar
rc 2 "$MX" ptx-check multimem.st.f32 foo.bar multimem.st.f16
rc 2 "$MX" ptx-check --file="$T/missing"

finish ptx_check_cli_test
