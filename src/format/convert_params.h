// Internal: the per-call constants of the SIMD conversion kernels, derived
// once from the format traits (no per-format code in the kernels).
#ifndef MXPACK_SRC_FORMAT_CONVERT_PARAMS_H_
#define MXPACK_SRC_FORMAT_CONVERT_PARAMS_H_

#include <cstddef>
#include <cstdint>

#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"

namespace mxpack::internal {

enum class SrcKind : uint8_t { kF32, kF16, kBF16, kNarrow };
enum class DstKind : uint8_t { kNarrow, kF16BF16, kF32, kUE8M0 };

struct ConvertParams {
  Format from, to;  // selects a compile-time specialized kernel when one exists
  bool exact;       // IsExactConversion(from, to): a decode
  SrcKind src;
  DstKind dst;
  int src_bytes;
  int dst_bytes;
  // Source (narrow decode, or f16/bf16 for rs alignment).
  int src_bits, src_man, src_exp_mask, src_bias, src_emin127;
  bool src_has_sign, src_has_inf, src_has_subnormals;
  NanKind src_nan;
  bool src_ue8m0;
  float src_subnormal_scale;  // 2^(emin - man) of the narrow source.
  // Destination (encode).
  int dst_man, dst_bias, dst_emin127, dst_sign_shift;
  bool dst_has_sign;
  uint32_t dst_max_code, dst_overflow_code, dst_nan_code;
  // Policy.
  Rounding rounding;
  bool satfinite, relu;
};

// The dispatched conversion kernel without argument checks, for callers that
// validated already (the fused pack paths). Preconditions:
// CheckConvertArrayArgs(...) is ok for these n elements, HasSimdPath(from, to,
// policy), impl.target != Impl::kScalar; rbits has n words with rs, else may
// be nullptr.
void ConvertArrayUnchecked(Format from, Format to, const EncodePolicy& policy,
                           const uint8_t* in, uint8_t* out, const uint32_t* rbits,
                           size_t n, Impl impl);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_FORMAT_CONVERT_PARAMS_H_
