// The scalar reference of the stack-exact block quantizers: each stack's
// arithmetic written out one element at a time, the oracle that the Highway
// kernels of stack_blocks-inl.h are tested against. Sources of every rule:
// docs/checkpoints.md.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"
#include "src/checkpoint/stack_blocks.h"

namespace mxpack::internal {
using scalar::DecodeToF32;
using scalar::EncodeF32;
using scalar::F32Bits;
namespace {

constexpr EncodePolicy kRnSat = {Rounding::kRN, Saturation::kSatFinite, false,
                                 OverflowTie::kEven};

// The largest |x| of a block; NaN elements are skipped (std::max keeps its
// first argument when the second is NaN), as the stacks' amax.
float BlockAmax(Format w, const uint8_t* in, size_t first, size_t n) {
  float amax = 0;
  for (size_t k = 0; k < n; ++k)
    amax = std::max(amax, std::fabs(LoadAsF32(w, in, first + k)));
  return amax;
}

// One block of compressed-tensors NVFP4: calculate_qparams (amax / 6 in w,
// times the global scale in f32, clamp to +-448, cast to float8_e4m3fn,
// 0 -> eps 0.125) and _quantize (x / (scale / global_scale) in f32, clamp,
// cast_to_fp4).
void CtNvfp4Block(Format w, const uint8_t* in, size_t g, float gs,
                  uint8_t* packed, uint8_t* scales) {
  const float amax = BlockAmax(w, in, g * 16, 16);
  const float s = gs * RoundToDtype(w, amax / 6.0f);
  uint8_t code = static_cast<uint8_t>(
      EncodeF32(std::min(s, 448.0f), Format::kE4M3, kRnSat));
  float d = DecodeToF32(Format::kE4M3, code);
  if (d == 0.0f) {
    d = 0.125f;
    code = 0x20;  // 0.125 = 2^-3: exponent field 4, mantissa 0
  }
  scales[g] = code;
  const float eff = d / gs;
  for (size_t k = 0; k < 16; k += 2) {
    const size_t i = g * 16 + k;
    const float q0 = std::clamp(LoadAsF32(w, in, i) / eff, -6.0f, 6.0f);
    const float q1 = std::clamp(LoadAsF32(w, in, i + 1) / eff, -6.0f, 6.0f);
    packed[i / 2] =
        static_cast<uint8_t>(E2m1Nibble(q0) | (E2m1Nibble(q1) << 4));
  }
}

// MX scale (generate_mx_scales + calculate_qparams + compress_mx_scale):
// round_to_power_2 adds a quarter of the binade to amax's bit pattern in w and
// keeps sign and exponent (amax rounds up to the next power of two when its
// significand is >= 1.75), then code = 127 + floor(log2(p)) - offset (offset
// floor(log2(max)): 2 for e2m1, 8 for e4m3), clamped to [0, 255]. The scale
// value is w(2^(code - 127)); a zero (f16 underflow) becomes eps = 1, code 127.
std::pair<uint8_t, float> CtMxScale(Format w, float amax, int offset) {
  uint32_t bits, add, mask;
  int mant, bias;
  if (w == Format::kF32) {
    bits = F32Bits(amax), mant = 23, bias = 127, mask = 0x1FFu << 23;
  } else if (w == Format::kBF16) {
    bits = F32Bits(amax) >> 16, mant = 7, bias = 127, mask = 0x1FFu << 7;
  } else {
    bits = EncodeF32(amax, Format::kF16, kRnSat), mant = 10, bias = 15,
    mask = 0x3Fu << 10;
  }
  add = 1u << (mant - 2);
  const uint32_t p = (bits + add) & mask;
  const uint32_t field = p >> mant;
  const uint32_t inf_field = w == Format::kF16 ? 0x1F : 0xFF;
  int code;
  if (p == 0) {
    code = 0;  // log2(0) = -inf, clamped
  } else if (field >= inf_field) {
    code = 255;
  } else {
    code = std::clamp(127 + static_cast<int>(field) - bias - offset, 0, 255);
  }
  const float value = RoundToDtype(w, std::ldexp(1.0f, code - 127));
  if (value == 0.0f) return {127, 1.0f};
  return {static_cast<uint8_t>(code), value};
}

// One block of compressed-tensors MXFP4 / MXFP8: x / scale in w (exact: a
// power of two), clamp, cast_to_fp4 or .to(float8_e4m3fn).
void CtMxBlock(Format w, bool fp8, const uint8_t* in, size_t g,
               uint8_t* elements, uint8_t* scales) {
  const float min_normal =
      w == Format::kF16 ? 6.103515625e-05f : std::numeric_limits<float>::min();
  const auto [code, scale] =
      CtMxScale(w, BlockAmax(w, in, g * 32, 32), fp8 ? 8 : 2);
  scales[g] = code;
  for (size_t k = 0; k < 32; ++k) {
    const size_t i = g * 32 + k;
    // x / scale is exact in f32 (a power of two) and already has w's
    // precision unless it falls below w's smallest normal.
    float q =
        static_cast<float>(static_cast<double>(LoadAsF32(w, in, i)) / scale);
    if (w != Format::kF32 && std::fabs(q) < min_normal) q = RoundToDtype(w, q);
    if (fp8) {
      elements[i] = static_cast<uint8_t>(EncodeF32(q, Format::kE4M3, kRnSat));
    } else {
      const uint8_t c = E2m1Nibble(std::clamp(q, -6.0f, 6.0f));
      uint8_t& b = elements[i / 2];
      b = (k % 2 == 0) ? c : static_cast<uint8_t>(b | (c << 4));
    }
  }
}

// One block of ModelOpt NVFP4 (NVFP4QTensor.get_weights_scaling_factor and
// quantize, in f32): block scale = amax_block / (6 * t), 0 -> 1, clamped to
// [2^-9, 448] and cast to float8_e4m3fn (_cast_per_block_scale_to_fp8);
// elements = _cast_fp4(x / (float(scale) * t)).
void ModelOptNvfp4Block(Format w, const uint8_t* in, size_t g, float t,
                        uint8_t* packed, uint8_t* scales) {
  float s = BlockAmax(w, in, g * 16, 16) / (6.0f * t);
  if (s == 0.0f) s = 1.0f;
  s = std::clamp(s, 0.001953125f, 448.0f);  // 2^-9: the smallest subnormal
  const uint8_t code =
      static_cast<uint8_t>(EncodeF32(s, Format::kE4M3, kRnSat));
  scales[g] = code;
  const float div = DecodeToF32(Format::kE4M3, code) * t;
  for (size_t k = 0; k < 16; k += 2) {
    const size_t i = g * 16 + k;
    packed[i / 2] =
        static_cast<uint8_t>(E2m1Nibble(LoadAsF32(w, in, i) / div) |
                             (E2m1Nibble(LoadAsF32(w, in, i + 1) / div) << 4));
  }
}

// One block of ModelOpt MXFP8 (MXFP8QTensor.get_weights_scaling_factor and
// quantize_with_scale): amax in w (NaN propagates: torch's amax), descale =
// f32(amax) / 448, exponent = ceil(log2(descale)) in f32 (log2 rounded once
// to f32: the rounding decides descales just above a power of two), -127
// where descale is not > 0 (zero or NaN), clamped to [-127, 127] and stored
// + 127; elements = e4m3(clamp(x * 2^(127 - code), +-448)) in f32.
void ModelOptMxfp8Block(Format w, const uint8_t* in, size_t g,
                        uint8_t* elements, uint8_t* scales) {
  float amax = 0;
  for (size_t k = 0; k < 32; ++k) {
    const float a = std::fabs(LoadAsF32(w, in, g * 32 + k));
    amax = std::isnan(a) || std::isnan(amax) ? NAN : std::max(amax, a);
  }
  const int code = ModelOptMxfp8ScaleCode(amax);
  scales[g] = static_cast<uint8_t>(code);
  const float mult = std::ldexp(1.0f, 127 - code);
  for (size_t k = 0; k < 32; ++k) {
    const size_t i = g * 32 + k;
    const float q = std::clamp(LoadAsF32(w, in, i) * mult, -448.0f, 448.0f);
    elements[i] = static_cast<uint8_t>(EncodeF32(q, Format::kE4M3, kRnSat));
  }
}

}  // namespace

uint8_t ModelOptMxfp8ScaleCode(float amax) {
  const float descale = amax / 448.0f;
  float e = -127.0f;
  if (descale > 0.0f) {
    e = std::ceil(static_cast<float>(std::log2(static_cast<double>(descale))));
  }
  return static_cast<uint8_t>(static_cast<int>(std::clamp(e, -127.0f, 127.0f)) +
                              127);
}

// generate_gparam: 448 * 6 / max(amax, finfo(w).tiny) in the weight dtype w
// (llm-compressor's observer keeps its statistics in w), then f32; Inf or NaN
// becomes 1.0. torch evaluates `scalar / tensor` as reciprocal(tensor) *
// scalar, two roundings to w: (1 / amax) * 2688.
float CtGlobalScale(Format w, float amax) {
  const float tiny =
      w == Format::kF16 ? 6.103515625e-05f : std::numeric_limits<float>::min();
  const float gs =
      RoundToDtype(w, RoundToDtype(w, 1.0f / std::max(amax, tiny)) * 2688.0f);
  return std::isfinite(gs) ? gs : 1.0f;
}

void QuantizeStackBlocksScalar(const StackBlocksArgs& a, const uint8_t* in,
                               size_t nb, uint8_t* elements, uint8_t* scales) {
  for (size_t g = 0; g < nb; ++g) {
    switch (a.arith) {
      case StackArith::kCtNvfp4:
        CtNvfp4Block(a.from, in, g, a.tensor_scale, elements, scales);
        break;
      case StackArith::kCtMxfp4:
      case StackArith::kCtMxfp8:
        CtMxBlock(a.from, a.arith == StackArith::kCtMxfp8, in, g, elements,
                  scales);
        break;
      case StackArith::kModelOptNvfp4:
        ModelOptNvfp4Block(a.from, in, g, a.tensor_scale, elements, scales);
        break;
      case StackArith::kModelOptMxfp8:
        ModelOptMxfp8Block(a.from, in, g, elements, scales);
        break;
    }
  }
}

uint32_t AbsMaxBitsScalar(Format from, const uint8_t* in, size_t n) {
  uint32_t m = 0;
  for (size_t i = 0; i < n; ++i)
    m = std::max(m, F32Bits(LoadAsF32(from, in, i)) & 0x7FFFFFFFu);
  return m;
}

}  // namespace mxpack::internal
