// The fast round-to-nearest-even encoders of the hot SIMD paths (convert,
// fused pack, MX block quantizer), one file per method:
//   encode_rn-inl.h     FastEncodeF32 / FastEncodeBF16: integer-lane rounding,
//                       every target (the stable interface other kernels use)
//   encode_fp16-inl.h   Fp16EncodeHalf: AVX512-FP16 f16 add onto the code grid
//   encode_range-inl.h  RangeEncodeF32: AVX3_DL vrangeps + one f32 add
//   encode_f16c-inl.h   F16cEncodeF32: F16C conversion after a sticky bit
//   encode_half16-inl.h Avx512EncodeHalf16: bf16/f16 in u16 lanes, AVX-512BW
//   encode_half16_lut-inl.h Avx512LutEncodeHalf16: bf16/f16 by byte tables, AVX3_DL
//   encode_directed-inl.h Avx512DirectedEncodeF32: f32 under rz/rm/rp, AVX-512
//   encode_stochastic-inl.h FmaStochasticEncodeF32: f32 -> e4m3 under rs, AVX3_DL
// Each is bit-identical to the scalar reference; the derivations are at each
// encoder. Included once per target, like every -inl.h (each part carries its
// own per-target guard).

#include "src/format/encode_rn-inl.h"
#include "src/format/encode_fp16-inl.h"
#include "src/format/encode_range-inl.h"
#include "src/format/encode_f16c-inl.h"
#include "src/format/encode_half16-inl.h"
#include "src/format/encode_half16_lut-inl.h"
#include "src/format/encode_directed-inl.h"
#include "src/format/encode_stochastic-inl.h"
