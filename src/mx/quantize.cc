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
#include <memory>
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
  // Other stacks' NVFP4 operation orders run on the scalar reference.
  if (s.format == MxFormat::kNvfp4 && job.arithmetic != Nvfp4Arithmetic::kExact &&
      job.arithmetic != Nvfp4Arithmetic::kF32Quotient) {
    return QuantizeMxRowsScalar(job);
  }
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
  // layouts).
  std::vector<float> xbuf;
  std::vector<uint8_t> codes;
  // The kernel writes the scale codes of a group of up to 128 rows (one row
  // of tcgen05 tiles) row-major into `staged`; Flush moves a finished group
  // into the scale layout, for tcgen05 one 512-byte tile at a time in
  // address order, so that each line of the output is written whole while
  // it is in L1 instead of once per chunk (a tile line holds 16 rows that
  // lie up to 96 rows apart). The kernel may write codes up to
  // kChunkBlocks past a chunk's last block: hence the slack at the end.
  constexpr size_t kGroupRows = 128;
  const size_t group_rows = std::min(kGroupRows, job.row_end - job.row_begin);
  const std::unique_ptr<uint8_t[]> staged(
      new uint8_t[group_rows * bpr + kChunkBlocks]);
  // ScaleOffset(r, k) = RowBase(r) + BlockPart(k), cheap to walk.
  const bool tiled = s.scale_layout == ScaleLayout::kTcgen05;
  const size_t tile_row_bytes = (bpr + 3) / 4 * 512;  // one row of 512-B tiles
  const auto RowBase = [tiled, tile_row_bytes, bpr](size_t r) {
    return tiled ? (r / 128) * tile_row_bytes + (r % 32) * 16 + (r / 32 % 4) * 4
                 : r * bpr;
  };
  const auto BlockPart = [tiled](size_t k) {
    return tiled ? (k / 4) * 512 + k % 4 : k;
  };
  // Writes the staged codes of rows [g0, g1) (within one group of 128).
  const auto Flush = [&](size_t g0, size_t g1) {
    const uint8_t* st = staged.get();
    uint8_t* const scales = job.scales;
    if (!tiled) {
      std::memcpy(scales + g0 * bpr, st, (g1 - g0) * bpr);
      return;
    }
    // Whole tiles in address order. Tile t: byte 16 i + 4 q + (k % 4) holds
    // block k = 4 t + k % 4 of the group's row 32 q + i (docs/semantics.md
    // section 5, scale-factor layouts); rows [lo, hi) of the group are here.
    const size_t lo = g0 % 128, hi = lo + (g1 - g0);
    const size_t whole_tiles = bpr / 4;
    uint8_t* tile = scales + (g0 / 128) * tile_row_bytes;
    for (size_t t = 0; t < whole_tiles; ++t, tile += 512) {
      const uint8_t* col = st + 4 * t;
      if (lo == 0 && hi == 128) {
        for (size_t i = 0; i < 32; ++i) {
          for (size_t q = 0; q < 4; ++q) {
            std::memcpy(tile + 16 * i + 4 * q, col + (32 * q + i) * bpr, 4);
          }
        }
      } else {
        for (size_t i = 0; i < 32; ++i) {
          for (size_t q = 0; q < 4; ++q) {
            const size_t r = 32 * q + i;
            if (r >= lo && r < hi) {
              std::memcpy(tile + 16 * i + 4 * q, col + (r - lo) * bpr, 4);
            }
          }
        }
      }
    }
    // The last bpr % 4 blocks of each row.
    for (size_t r = g0; r < g1; ++r) {
      for (size_t k = 4 * whole_tiles; k < bpr; ++k) {
        scales[RowBase(r) + BlockPart(k)] = st[(r - g0) * bpr + k];
      }
    }
  };
  // Element bytes before element index i of a row (i a multiple of 16).
  const auto elem_offset = [&](size_t i) {
    return packed ? PackedBytes(*packed, i) : i;
  };
  const bool fused_pack =
      packed && (*packed == Layout::kB4x16P64 || *packed == Layout::kB6x16P32);

  // Quantizes `nb` blocks into `dst` and their scale codes into `sc`
  // (blocks continue into the next rows when rows have no padding). `src`
  // holds `nvalid` values; the rest of the chunk is row padding (+0, code 0).
  const auto chunk = [&](const uint8_t* src, size_t nvalid, size_t nb,
                         uint8_t* sc, uint8_t* dst) {
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
    kernel(args, s.format, bf16, src, nb, nvalid, fused_pack, out, sc);
    if (packed && !fused_pack) {
      (void)Pack(*packed, absl::MakeConstSpan(codes.data(), n),
                 absl::MakeSpan(dst, PackedBytes(*packed, n)), impl);
    }
  };

  const size_t row_bytes = s.element_row_bytes();
  // Groups of rows that end at multiples of 128.
  for (size_t g0 = job.row_begin; g0 < job.row_end;) {
    const size_t g1 = std::min(job.row_end, (g0 / kGroupRows + 1) * kGroupRows);
    if (s.cols % block == 0) {
      // No row padding: the group's rows form one run of whole blocks.
      const size_t first = g0 * bpr;
      const size_t last = g1 * bpr;
      for (size_t b0 = first; b0 < last; b0 += kChunkBlocks) {
        const size_t nb = std::min(kChunkBlocks, last - b0);
        chunk(job.in + (b0 - job.row_begin * bpr) * block * src_bytes,
              nb * block, nb, staged.get() + (b0 - first),
              job.elements + elem_offset(b0 * block));
      }
    } else {
      for (size_t r = g0; r < g1; ++r) {
        const uint8_t* row = job.in + (r - job.row_begin) * s.cols * src_bytes;
        for (size_t k0 = 0; k0 < bpr; k0 += kChunkBlocks) {
          const size_t nb = std::min(kChunkBlocks, bpr - k0);
          const size_t c0 = k0 * block;
          const size_t nvalid = std::min(s.cols, c0 + nb * block) - c0;
          chunk(row + c0 * src_bytes, nvalid, nb,
                staged.get() + (r - g0) * bpr + k0,
                job.elements + r * row_bytes + elem_offset(c0));
        }
      }
    }
    Flush(g0, g1);
    g0 = g1;
  }
}

}  // namespace internal
}  // namespace mxpack
#endif  // HWY_ONCE
