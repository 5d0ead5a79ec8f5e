// Dispatch and driver of the SIMD MX / NVFP4 quantizer: one pass over the
// input in L1-sized chunks of whole blocks. The Highway kernel of
// src/mx/quantize-inl.h turns a chunk into codes (or b4x16_p64 / b6x16_p32
// groups) and scale codes; the driver stages f16 and ragged row ends as f32,
// scatters the scale codes into their layout and packs dense4 / dense6 with
// the shared dispatched packer (pack.h).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/mx/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "mxpack/scalar.h"
#include "src/mx/mx_internal.h"
#include "src/mx/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {

// Quantizes `nb` whole blocks of `src` (f32, or bf16 when `bf16`; `nvalid`
// data elements, then row padding) into one code per byte, or padded groups
// when `padded`, and one scale code per block.
void MxQuantizeBlocks(const internal::MxBlockArgs& a, MxFormat format,
                      bool bf16, const uint8_t* src, size_t nb, size_t nvalid,
                      bool padded, uint8_t* out, uint8_t* scale_codes) {
#define MXPACK_MX_CASE(fmt, elem, nv)                                      \
  case MxFormat::fmt:                                                      \
    return bf16 ? MxBlockQuantizer<Format::elem, nv, true>::Run(           \
                      a, src, nb, nvalid, padded, out, scale_codes)        \
                : MxBlockQuantizer<Format::elem, nv, false>::Run(          \
                      a, src, nb, nvalid, padded, out, scale_codes);
  switch (format) {
    MXPACK_MX_CASE(kMxfp8E4m3, kE4M3, false)
    MXPACK_MX_CASE(kMxfp8E5m2, kE5M2, false)
    MXPACK_MX_CASE(kMxfp6E2m3, kE2M3, false)
    MXPACK_MX_CASE(kMxfp6E3m2, kE3M2, false)
    MXPACK_MX_CASE(kMxfp4, kE2M1, false)
    MXPACK_MX_CASE(kNvfp4, kE2M1, true)
  }
#undef MXPACK_MX_CASE
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

#include "mxpack/convert.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/util/dispatch_util.h"

namespace mxpack {
HWY_EXPORT(MxQuantizeBlocks);

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
  const std::optional<Layout> packed = PackedLayout(s.layout);
  const auto kernel = Pick(HWY_DISPATCH_TABLE(MxQuantizeBlocks), impl);
  // Inputs above 1 MiB (half a 2 MiB L2) stream from DRAM: pass 3 then
  // prefetches the next chunk into L2 only (MxBlockArgs::prefetch_l2).
  const size_t in_bytes = (job.row_end - job.row_begin) * s.cols * src_bytes;
  Nvfp4ThresholdTable thresholds{job.tensor_scale, Ue4m3Table()};
  const MxBlockArgs args{ScaleParams(s.format, job.mode),
                         job.mode,
                         job.tensor_scale,
                         Ue4m3Table(),
                         /*prefetch_l2=*/in_bytes > (size_t{1} << 20),
                         job.arithmetic,
                         &thresholds};

  // L1-sized chunks of MxBlockQuantizer::kMaxBlocks = 128 whole blocks (MX:
  // 4096 elements, 16 KiB of f32; NVFP4: 2048), which halves the per-chunk
  // work (scale codes, scatter, MXCSR) of 2048-element MX chunks.
  constexpr size_t kChunkBlocks = 128;
  const size_t chunk_elems = kChunkBlocks * block;
  // Staging buffers, sized on first use (f16 sources, row padding, dense
  // layouts): the common call needs neither allocation nor clearing.
  std::vector<float> xbuf;
  std::vector<uint8_t> codes;
  std::array<uint8_t, kChunkBlocks> scale_codes;
  // ScaleOffset(r, k) = RowBase(r) + BlockPart(k), cheap to walk. (The
  // lambdas capture by value: the scatter's byte stores would otherwise make
  // the compiler reload every captured reference after each store.)
  const bool tiled = s.scale_layout == ScaleLayout::kTcgen05;
  const size_t tile_row_bytes = (bpr + 3) / 4 * 512;  // one row of 512-B tiles
  const auto RowBase = [tiled, tile_row_bytes, bpr](size_t r) {
    return tiled ? (r / 128) * tile_row_bytes + (r % 32) * 16 + (r / 32 % 4) * 4
                 : r * bpr;
  };
  const auto BlockPart = [tiled](size_t k) {
    return tiled ? (k / 4) * 512 + k % 4 : k;
  };
  // Element bytes before element index i of a row (i a multiple of 16).
  const auto elem_offset = [&](size_t i) {
    return packed ? PackedBytes(*packed, i) : i;
  };
  const bool fused_pack =
      packed && (*packed == Layout::kB4x16P64 || *packed == Layout::kB6x16P32);

  // Quantizes `nb` blocks starting at block k0 of row r (they continue into
  // the next rows when rows have no padding). `src` holds `nvalid` values;
  // the rest of the chunk is row padding (+0, code 0).
  const auto chunk = [&](const uint8_t* src, size_t nvalid, size_t nb,
                         size_t r, size_t k0, uint8_t* dst) {
    const size_t n = nb * block;
    bool bf16 = job.from == Format::kBF16;
    if (job.from == Format::kF16 || nvalid < n) {
      // Stage as f32: exact decode of f16 (shared convert kernel) or a copy,
      // then zero padding.
      xbuf.resize(chunk_elems);
      if (job.from == Format::kF32) {
        std::memcpy(xbuf.data(), src, nvalid * 4);
      } else {
        (void)ConvertArray(
            job.from, Format::kF32, EncodePolicy{},
            absl::MakeConstSpan(src, nvalid * src_bytes),
            absl::MakeSpan(reinterpret_cast<uint8_t*>(xbuf.data()), nvalid * 4),
            {}, impl);
      }
      std::fill(xbuf.begin() + static_cast<ptrdiff_t>(nvalid),
                xbuf.begin() + static_cast<ptrdiff_t>(n), 0.0f);
      src = reinterpret_cast<const uint8_t*>(xbuf.data());
      bf16 = false;
    }
    // The kernel writes padded layouts itself (one byte per element, as
    // codes); dense4/dense6 go through codes[] and Pack.
    if (packed && !fused_pack) codes.resize(chunk_elems);
    uint8_t* out = packed && !fused_pack ? codes.data() : dst;
    kernel(args, s.format, bf16, src, nb, nvalid, fused_pack, out, scale_codes.data());
    // Scatter the scale codes, a row's run of blocks at a time; tcgen05
    // tiles hold 4 consecutive blocks of a row in 4 consecutive bytes.
    const uint8_t* sc = scale_codes.data();
    uint8_t* const scales = job.scales;
    const auto row_base = RowBase;  // copies (see above)
    const auto block_part = BlockPart;
    size_t rr = r, k = k0;
    for (size_t b = 0; b < nb;) {
      const size_t run = std::min(nb - b, bpr - k);
      uint8_t* base = scales + row_base(rr);
      if (tiled) {
        size_t j = 0;
        for (; j < run && (k + j) % 4 != 0; ++j) base[block_part(k + j)] = sc[b + j];
        // Whole groups of 4 blocks: consecutive tiles, 512 bytes apart.
        if (j + 4 <= run) {
          uint8_t* tile = base + block_part(k + j);
          for (; j + 4 <= run; j += 4, tile += 512) std::memcpy(tile, sc + b + j, 4);
        }
        for (; j < run; ++j) base[block_part(k + j)] = sc[b + j];
      } else {
        std::memcpy(base + k, sc + b, run);
      }
      b += run;
      k += run;
      if (k == bpr) {
        k = 0;
        ++rr;
      }
    }
    if (packed && !fused_pack) {
      (void)Pack(*packed, absl::MakeConstSpan(codes.data(), n),
                 absl::MakeSpan(dst, PackedBytes(*packed, n)), impl);
    }
  };

  if (s.cols % block == 0) {
    // No row padding: the rows form one run of whole blocks.
    const size_t first = job.row_begin * bpr;
    const size_t last = job.row_end * bpr;
    for (size_t b0 = first; b0 < last; b0 += kChunkBlocks) {
      const size_t nb = std::min(kChunkBlocks, last - b0);
      chunk(job.in + (b0 - first) * block * src_bytes, nb * block, nb,
            b0 / bpr, b0 % bpr, job.elements + elem_offset(b0 * block));
    }
    return;
  }
  const size_t row_bytes = s.element_row_bytes();
  for (size_t r = job.row_begin; r < job.row_end; ++r) {
    const uint8_t* row = job.in + (r - job.row_begin) * s.cols * src_bytes;
    for (size_t k0 = 0; k0 < bpr; k0 += kChunkBlocks) {
      const size_t nb = std::min(kChunkBlocks, bpr - k0);
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
