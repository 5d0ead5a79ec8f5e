// Dispatch and driver of the SIMD MX / NVFP4 quantizer: one pass over the
// input in L1-sized chunks of whole blocks; per block the Highway kernel of
// src/simd/mx-inl.h finds amax and scales the values, the scale code comes from
// the integer formula of src/mx/mx_internal.h, and the shared dispatched
// f32 -> element encoder (convert.h) and packer (pack.h) finish the chunk.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/simd/mx.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/mx/mx_internal.h"
#include "src/simd/mx-inl.h"

namespace mxpack::internal {
#ifndef MXPACK_SRC_SIMD_MX_CC_ONCE_
#define MXPACK_SRC_SIMD_MX_CC_ONCE_
// Per-call constants of the block kernel.
struct MxBlockArgs {
  size_t block;
  bool nvfp4;
  MxScaleParams scale;     // MX
  ScaleMode mode;          // NVFP4 scale rounding
  float tensor_scale;      // NVFP4
  const float* ue4m3;      // NVFP4: decode table of the 128 scale codes
};
#endif
}  // namespace mxpack::internal

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

// Scales `nblocks` blocks of x into y and writes their scale codes.
void MxScaleBlocks(const internal::MxBlockArgs& a, const float* x,
                   size_t nblocks, float* y, uint8_t* scale_codes) {
  for (size_t b = 0; b < nblocks; ++b) {
    const float* xb = x + b * a.block;
    float* yb = y + b * a.block;
    bool has_nan = false;
    const float amax = MxBlockCodec::Amax(xb, a.block, &has_nan);
    if (a.nvfp4) {
      const uint8_t code =
          scalar::Nvfp4ScaleCode(a.mode, amax, a.tensor_scale, has_nan);
      scale_codes[b] = code;
      const float p = a.ue4m3[code & 0x7F] * a.tensor_scale;
      MxBlockCodec::Divide(xb, a.block, p, has_nan, yb);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &amax, 4);
      const uint8_t code = internal::MxScaleCodeFromBits(a.scale, bits, has_nan);
      scale_codes[b] = code;
      // 2^-s with s = code - 127 in [-127, 127]: exponent field 254 - code,
      // except 2^-127 (code 254), which is the f32 subnormal 0x00400000.
      const uint32_t mbits =
          code >= 254 ? 0x00400000u : static_cast<uint32_t>(254 - code) << 23;
      float m;
      std::memcpy(&m, &mbits, 4);
      MxBlockCodec::Scale(xb, a.block, m, has_nan, yb);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

#include "mxpack/convert.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/simd/dispatch_util.h"

namespace mxpack {
HWY_EXPORT(MxScaleBlocks);

namespace internal {
namespace {

const float* Ue4m3Table() {
  static const std::array<float, 128> table = [] {
    std::array<float, 128> t{};
    for (uint32_t c = 0; c < 128; ++c) {
      t[c] = scalar::DecodeToF32(Format::kUE4M3, c);
    }
    return t;
  }();
  return table.data();
}

}  // namespace

void QuantizeMxRowsSimd(const MxJob& job, Impl impl) {
  const MxShape& s = job.shape;
  const size_t block = s.block();
  const size_t bpr = s.blocks_per_row();
  const size_t src_bytes = static_cast<size_t>(Traits(job.from).storage_bytes);
  const Format elem = MxElementFormat(s.format);
  const std::optional<Layout> packed = PackedLayout(s.layout);
  const auto kernel = Pick(HWY_DISPATCH_TABLE(MxScaleBlocks), impl);
  const MxBlockArgs args{block,
                         s.format == MxFormat::kNvfp4,
                         ScaleParams(s.format, job.mode),
                         job.mode,
                         job.tensor_scale,
                         Ue4m3Table()};
  const EncodePolicy rn_sat;  // rn, satfinite

  // L1-sized chunks of whole blocks (a multiple of 32 and of 16).
  constexpr size_t kChunk = 1024;
  std::vector<float> xbuf(kChunk), ybuf(kChunk);
  std::vector<uint8_t> codes(kChunk), scale_codes(kChunk / 16);
  // Element bytes before element index i of a row (i a multiple of 16).
  const auto elem_offset = [&](size_t i) {
    return packed ? PackedBytes(*packed, i) : i;
  };

  // Quantizes `nb` blocks starting at block k0 of row r (they may continue
  // into the next rows when rows have no padding). `src` holds `nvalid`
  // values; the rest of the chunk is row padding (+0).
  const auto chunk = [&](const uint8_t* src, size_t nvalid, size_t nb,
                         size_t r, size_t k0, uint8_t* dst) {
    const size_t n = nb * block;
    const float* x = xbuf.data();
    if (job.from == Format::kF32 && nvalid == n) {
      x = reinterpret_cast<const float*>(src);
    } else {
      if (job.from == Format::kF32) {
        std::memcpy(xbuf.data(), src, nvalid * 4);
      } else {  // exact decode of bf16 / f16
        (void)ConvertArray(job.from, Format::kF32, EncodePolicy{},
                           absl::MakeConstSpan(src, nvalid * src_bytes),
                           absl::MakeSpan(reinterpret_cast<uint8_t*>(xbuf.data()),
                                          nvalid * 4),
                           {}, impl);
      }
      std::fill(xbuf.begin() + static_cast<ptrdiff_t>(nvalid),
                xbuf.begin() + static_cast<ptrdiff_t>(n), 0.0f);
    }
    kernel(args, x, nb, ybuf.data(), scale_codes.data());
    // Padding encodes to code 0, also in a NaN block (as the reference).
    std::fill(ybuf.begin() + static_cast<ptrdiff_t>(nvalid),
              ybuf.begin() + static_cast<ptrdiff_t>(n), 0.0f);
    for (size_t b = 0; b < nb; ++b) {
      const size_t kb = k0 + b;
      job.scales[s.ScaleOffset(r + kb / bpr, kb % bpr)] = scale_codes[b];
    }
    const absl::Span<const uint8_t> y(
        reinterpret_cast<const uint8_t*>(ybuf.data()), n * 4);
    if (!packed) {
      (void)ConvertArray(Format::kF32, elem, rn_sat, y,
                         absl::MakeSpan(dst, n), {}, impl);
    } else {
      (void)ConvertArray(Format::kF32, elem, rn_sat, y,
                         absl::MakeSpan(codes.data(), n), {}, impl);
      (void)Pack(*packed, absl::MakeConstSpan(codes.data(), n),
                 absl::MakeSpan(dst, PackedBytes(*packed, n)), impl);
    }
  };

  const size_t chunk_blocks = kChunk / block;
  if (s.cols % block == 0) {
    // No row padding: the rows form one run of whole blocks.
    const size_t first = job.row_begin * bpr;
    const size_t last = job.row_end * bpr;
    for (size_t b0 = first; b0 < last; b0 += chunk_blocks) {
      const size_t nb = std::min(chunk_blocks, last - b0);
      chunk(job.in + (b0 - first) * block * src_bytes, nb * block, nb,
            b0 / bpr, b0 % bpr, job.elements + elem_offset(b0 * block));
    }
    return;
  }
  const size_t row_bytes = s.element_row_bytes();
  for (size_t r = job.row_begin; r < job.row_end; ++r) {
    const uint8_t* row = job.in + (r - job.row_begin) * s.cols * src_bytes;
    for (size_t k0 = 0; k0 < bpr; k0 += chunk_blocks) {
      const size_t nb = std::min(chunk_blocks, bpr - k0);
      const size_t c0 = k0 * block;
      const size_t nvalid = std::min(s.cols, c0 + nb * block) - c0;
      chunk(row + c0 * src_bytes, nvalid, nb, r, k0,
            job.elements + r * row_bytes + elem_offset(c0));
    }
  }
}

}  // namespace internal
}  // namespace mxpack
#endif  // HWY_ONCE
