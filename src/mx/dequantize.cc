// Dispatch and row driver of the SIMD DequantizeMx path (f32, bf16 and f16
// outputs): packed rows are unpacked with the dispatched unpacker, then the
// Highway kernel of src/mx/dequantize-inl.h decodes, scales and stores each
// row in one pass.
#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/mx/dequantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "mxpack/mx.h"
#include "src/mx/dequantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

template <Format kElem, bool kNvfp4>
void DequantizeRowTo(Format to, const internal::MxDequantRow& a) {
  switch (to) {
    case Format::kBF16:
      return MxRowDequantizer<kElem, kNvfp4, Format::kBF16>::Rows(a);
    case Format::kF16:
      return MxRowDequantizer<kElem, kNvfp4, Format::kF16>::Rows(a);
    default:
      return MxRowDequantizer<kElem, kNvfp4, Format::kF32>::Rows(a);
  }
}

// The a.rows rows of `format` described by `a` into `to` (f32, bf16 or
// f16).
void MxDequantizeRows(MxFormat format, Format to,
                      const internal::MxDequantRow& a) {
  switch (format) {
    case MxFormat::kMxfp8E4m3:
      return DequantizeRowTo<Format::kE4M3, false>(to, a);
    case MxFormat::kMxfp8E5m2:
      return DequantizeRowTo<Format::kE5M2, false>(to, a);
    case MxFormat::kMxfp6E2m3:
      return DequantizeRowTo<Format::kE2M3, false>(to, a);
    case MxFormat::kMxfp6E3m2:
      return DequantizeRowTo<Format::kE3M2, false>(to, a);
    case MxFormat::kMxfp4:
      return DequantizeRowTo<Format::kE2M1, false>(to, a);
    case MxFormat::kNvfp4:
      return DequantizeRowTo<Format::kE2M1, true>(to, a);
  }
}

// Whether MxDequantizeRows reads packed fp4 / fp6 rows (group_bytes).
bool MxDequantizeReadsPacked() {
#ifdef MXPACK_HAVE_DEQUANT_FAST512
  return true;
#else
  return false;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/mx/mx_internal.h"
#include "src/util/dispatch_util.h"

namespace mxpack {
HWY_EXPORT(MxDequantizeRows);
HWY_EXPORT(MxDequantizeReadsPacked);

namespace internal {
namespace {

// The f32 value of every scale code of `scale` (ue8m0: 2^(c-127), 0xFF NaN;
// ue4m3: codes with the sign bit are rejected before, 0 here).
const float* ScaleTable(Format scale) {
  static const auto make = [](Format f) {
    std::array<float, 256> t{};
    for (uint32_t c = 0; c < 256; ++c) {
      t[c] = c < 0x80 || f == Format::kUE8M0 ? scalar::DecodeToF32(f, c) : 0.0f;
      // NaN as 0x7FFFFFFF: times any non-NaN value it stays the canonical NaN.
      if (std::isnan(t[c])) t[c] = scalar::F32FromBits(0x7FFFFFFFu);
    }
    return t;
  };
  static const std::array<float, 256> ue8m0 = make(Format::kUE8M0);
  static const std::array<float, 256> ue4m3 = make(Format::kUE4M3);
  return scale == Format::kUE8M0 ? ue8m0.data() : ue4m3.data();
}

}  // namespace

void DequantizeMxSimd(const MxTensorView& q, Format to, uint8_t* out,
                      Impl impl) {
  const MxShape& s = q.shape;
  const auto kernel = Pick(HWY_DISPATCH_TABLE(MxDequantizeRows), impl);
  const size_t out_bytes = static_cast<size_t>(Traits(to).storage_bytes);
  const size_t row_bytes = s.element_row_bytes();
  // A plain Layout and flag rather than the optional (GCC 12 reports the
  // optional's payload as maybe uninitialized below).
  const std::optional<Layout> packed_layout = PackedLayout(s.layout);
  const Layout layout = packed_layout.value_or(Layout::kDense4);
  bool unpack = packed_layout.has_value();
  MxDequantRow a{};
  // Packed rows are read in place where the kernel can.
  if (unpack && Pick(HWY_DISPATCH_TABLE(MxDequantizeReadsPacked), impl)()) {
    a.group_bytes =
        layout == Layout::kDense4 ? 8 : (layout == Layout::kDense6 ? 12 : 16);
    unpack = false;
  }
  std::vector<uint8_t> codes(unpack ? s.cols_padded() : 0);
  a.stride4 = s.scale_layout == ScaleLayout::kLinear ? 4 : 512;
  a.scale_lut = ScaleTable(MxScaleFormat(s.format));
  a.tensor_scale = q.tensor_scale;
  a.cols = s.cols;
  Nvfp4HalfTable half_table;  // (4 KiB; only its have[] is initialized)
  if (s.format == MxFormat::kNvfp4 && to != Format::kF32) a.nvfp4_half = &half_table;
  // Calls with many blocks fill every row first and skip the per-block
  // checks.
  half_table.fill_all = s.rows * s.blocks_per_row() >= 2048;
  // MX into bf16 / f16: per-scale-code result rows, on calls with enough
  // blocks to pay for filling them.
  MxHalfTable mx_half;
  hwy::AlignedFreeUniquePtr<uint16_t[]> mx_rows;
  if (s.format != MxFormat::kNvfp4 && to != Format::kF32 &&
      s.rows * s.blocks_per_row() >= kMxHalfMinBlocks) {
    mx_rows = hwy::AllocateAligned<uint16_t>(
        256 * MxHalfTableEntries(Traits(MxElementFormat(s.format)).bits));
    mx_half.rows = mx_rows.get();
    a.mx_half = &mx_half;
  }
  a.out_stride = s.cols * out_bytes;
  if (s.scale_layout == ScaleLayout::kLinear) {
    a.scale_row_stride = s.blocks_per_row();
  } else {
    a.scale_tile_stride = 512 * ((s.blocks_per_row() + 3) / 4);
  }
  a.scales = q.scales.data();
  a.out = out;
  if (!unpack) {
    // Rows read in place: one call for all of them.
    a.codes = q.elements.data();
    a.code_stride = row_bytes;
    a.rows = s.rows;
    kernel(s.format, to, a);
    return;
  }
  for (size_t r = 0; r < s.rows; ++r) {
    // Sizes are consistent by construction, so Unpack cannot fail.
    (void)Unpack(
        layout,
        absl::MakeConstSpan(q.elements.data() + r * row_bytes, row_bytes),
        absl::MakeSpan(codes), impl);
    MxDequantRow b = MxRowAt(a, r);
    b.codes = codes.data();
    kernel(s.format, to, b);
  }
}

}  // namespace internal
}  // namespace mxpack
#endif  // HWY_ONCE
