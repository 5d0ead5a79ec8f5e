// Internal: the block quantizers of the stack-exact export schemes
// (compressed-tensors and ModelOpt), which reproduce each stack's own
// arithmetic byte for byte: the scalar reference (stack_blocks_scalar.cc) and
// its Highway kernels (stack_blocks-inl.h, dispatched by stack_blocks.cc).
#ifndef MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_H_
#define MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_H_

#include <cstddef>
#include <cstdint>

#include "mxpack/dispatch.h"
#include "mxpack/format.h"

namespace mxpack::internal {

// Whose arithmetic a block quantizer reproduces (docs/checkpoints.md).
enum class StackArith : uint8_t {
  kCtNvfp4,        // compressed-tensors nvfp4-pack-quantized
  kCtMxfp4,        // compressed-tensors mxfp4-pack-quantized
  kCtMxfp8,        // compressed-tensors mxfp8-quantized
  kModelOptNvfp4,  // ModelOpt NVFP4QTensor
  kModelOptMxfp8,  // ModelOpt MXFP8QTensor
};

// The arithmetic's name in messages of tests and fuzzers, e.g. "ct-nvfp4".
constexpr const char* StackArithName(StackArith a) {
  switch (a) {
    case StackArith::kCtNvfp4:
      return "ct-nvfp4";
    case StackArith::kCtMxfp4:
      return "ct-mxfp4";
    case StackArith::kCtMxfp8:
      return "ct-mxfp8";
    case StackArith::kModelOptNvfp4:
      return "modelopt-nvfp4";
    case StackArith::kModelOptMxfp8:
      return "modelopt-mxfp8";
  }
  return "?";
}

// Elements per block: 16 (NVFP4) or 32 (MX).
constexpr size_t StackBlockSize(StackArith a) {
  return a == StackArith::kCtNvfp4 || a == StackArith::kModelOptNvfp4 ? 16 : 32;
}

// Whether the elements are e4m3 codes (MXFP8) rather than e2m1 nibbles.
constexpr bool StackFp8(StackArith a) {
  return a == StackArith::kCtMxfp8 || a == StackArith::kModelOptMxfp8;
}

struct StackBlocksArgs {
  StackArith arith = StackArith::kCtNvfp4;
  Format from = Format::kBF16;  // the input dtype: f32, bf16 or f16
  // kCtNvfp4: the global scale (CtGlobalScale); kModelOptNvfp4: the tensor
  // scale t = amax / 2688 (> 0); unused by MX.
  float tensor_scale = 1.0f;
};

// Quantizes `nb` whole blocks of little-endian `a.from` elements at `in`:
// `elements` receives the e2m1 nibbles two per byte (low nibble = even
// element) or one e4m3 code per byte (MXFP8), `scales` one scale byte per
// block (e4m3 for NVFP4, the E8M0 exponent for MX). Impl::kScalar runs the
// scalar reference, any other value a Highway target (Pick).
void QuantizeStackBlocks(const StackBlocksArgs& a, const uint8_t* in, size_t nb,
                         uint8_t* elements, uint8_t* scales,
                         Impl impl = Impl{});
void QuantizeStackBlocksScalar(const StackBlocksArgs& a, const uint8_t* in,
                               size_t nb, uint8_t* elements, uint8_t* scales);

// NVFP4 elements by comparison. q = f32(x / div) (div: the block's f32
// divisor, a function of its scale code for a given tensor scale) gets
// e2m1 magnitude i + 1 where q > m_i (m_i = 0.25, 1.25, 2.5, 5: the tie
// goes down to the even code) or q >= m_i (0.75, 1.75, 3.5: up), and keeps
// its sign unless q is +-0. Each such test on f32(x / div), a correctly
// rounded quotient, is a test of the exact quotient against the f32
// rounding boundary next to m_i (m_i +- half its ulp; m_i's significand
// is even, so the boundary itself rounds onto m_i), and so a comparison of
// |x| with that boundary times div, exact in f64 (25 + 24 significant
// bits): |x| > T for the largest f32 T on the side of the boundary that
// fails. For bf16 inputs (low 16 f32 bits zero) |x| > T iff the bf16 bits
// of |x| exceed T >> 16.
struct StackNvfp4Thresholds {
  // Forgets every row (and the code table) unless they were made for `a`
  // and the same tensor scale (bit for bit): the tables depend on nothing
  // else, so one object serves every call with that tensor scale.
  void Reset(StackArith a, float scale);
  // Fills the rows of the scale codes lo..hi (< 128) not filled yet.
  void Fill(unsigned lo, unsigned hi);
  // Fills the code table below (once per tensor scale).
  void FillCodeTable();

  StackArith arith = StackArith::kCtNvfp4;
  float tensor_scale = 1.0f;
  // The scale code of a block from the bits A of its bf16 amax (low 16 bits
  // zero), without a division: every rounding on the way (amax / 6 in f32
  // and bf16, times the global scale, or amax / (6 t); then e4m3) is
  // scale-invariant while its result is a normal number, so doubling amax
  // adds 8 to the code (one e4m3 exponent step). With A = e << 23 | m7 << 16,
  //   code = code_lut[m7] + 8 e + code_bias   (code_lut: the codes of one
  //   binade e_ref, rounded to e4m3's 3 mantissa bits as if its exponent
  //   were unbounded),
  // exact where code_min_bits <= A < Inf (amax / 6 normal for
  // compressed-tensors, amax normal for ModelOpt; an Inf amax is no power
  // of two times a finite one) and the sum is at least 8: the scale s is
  // then at least 2^-6 - 2^-11, which e4m3 rounds to 2^-6 (code 8) also on
  // its subnormal grid (spacing 2^-9, midpoint 2^-6 - 2^-10), and above
  // 2^-6 all is normal; sums above 0x7E saturate to 0x7E (448, also for an
  // Inf scale). Other
  // blocks, and every block where code_table is false (no binade e_ref
  // whose intermediates are all normal), take the exact arithmetic.
  bool code_table = false;
  bool code_table_filled = false;
  int32_t code_bias = 0;
  uint32_t code_min_bits = 0;
  alignas(64) uint8_t code_lut[128];
  uint64_t have[2] = {0, 0};
  // row[c][i] for i < 7: T_i >> 16 in both halves (a u16 threshold pair);
  // row[c][7]: the same for the test q != 0 (|x| > div 2^-150; the tie
  // rounds to 0). usable[c]: whether div is a positive finite f32 (else
  // the block takes the division path: x / 0 or x / Inf, NaN).
  alignas(32) uint32_t row[128][8];
  bool usable[128];
  // The same decision by table lookup, where the u16 thresholds T_0 <
  // .. < T_6 lie at least a 32-value bucket apart (all but tiny divisors):
  // with B = T_0 - 31 (or 0) and d = |x| - B saturated at 0, bucket j =
  // min(d >> 5, 29) holds at most one threshold; bucket[c][j] = (the
  // thresholds below the bucket) << 11 | (its offset in the bucket, or 31
  // for none), [30] = T_z (the q != 0 test), [31] = B. bucketed[c]: whether
  // the table applies (else row[c]).
  alignas(64) uint16_t bucket[128][32];
  // The same buckets for an add instead of a compare, where |x| stays
  // within bucket 29: entry j = (the thresholds below << 5 | (31 - offset))
  // - 32 j (mod 2^16), so that d + entry[d >> 5] is that count << 5 plus
  // (d's place in the bucket) + 31 - offset, which carries one more into
  // bit 5 exactly where the place exceeds the offset; [30] and [31] both
  // B (the add form serves only codes whose Z is 0: one u32 load gives B
  // in both halves).
  alignas(64) uint16_t bucket_add[128][32];
  bool bucketed[128];
};

// A bucket table (StackNvfp4Thresholds::bucket) of seven ascending u16
// thresholds t with bucket origin `base`: entries 0..29; ok = false where a
// bucket would hold two thresholds or t[6] lies past bucket 28 (bucket 29
// also takes every larger |x|).
struct StackBuckets {
  uint16_t entry[32] = {};
  bool ok = false;
};
constexpr StackBuckets MakeStackBuckets(const unsigned (&t)[7], unsigned base) {
  StackBuckets r;
  r.ok = t[6] < base + 29 * 32;
  unsigned below = 0;  // thresholds below the bucket
  for (unsigned j = 0; j < 30; ++j) {
    const unsigned first = base + 32 * j;
    while (below < 7 && t[below] < first) ++below;
    // A threshold at first + 31 is exceeded by none in the bucket.
    unsigned inside = below, offset = 31;
    while (inside < 7 && t[inside] < first + 31) offset = t[inside++] - first;
    if (inside - below > 1) r.ok = false;
    r.entry[j] = static_cast<uint16_t>(below << 11 | offset);
  }
  return r;
}

// The f32 divisor of NVFP4 elements under scale code `code` (< 128):
// compressed-tensors e4m3(code) / global scale, ModelOpt e4m3(code) * t.
float StackNvfp4Divisor(StackArith a, float tensor_scale, uint8_t code);

// The largest f32 bit pattern of |x| over `n` elements of `from` at `in`: the
// largest |x| where all are finite, and >= 0x7F800000 where any is Inf or NaN.
uint32_t AbsMaxBits(Format from, const uint8_t* in, size_t n,
                    Impl impl = Impl{});
uint32_t AbsMaxBitsScalar(Format from, const uint8_t* in, size_t n);

// The scale code (biased E8M0 exponent) of a ModelOpt MXFP8 block whose
// largest |x| is `amax` (NaN where the block holds one).
uint8_t ModelOptMxfp8ScaleCode(float amax);

// The global scale of a compressed-tensors NVFP4 tensor (group) whose
// largest |x| is `amax`, for input dtype `w`.
float CtGlobalScale(Format w, float amax);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_H_
