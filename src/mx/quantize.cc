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
namespace hn = hwy::HWY_NAMESPACE;

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

#if HWY_TARGET != HWY_SCALAR
// MxTcgen05Tiles with vectors of 1 or 2 128-bit blocks.
template <class D>
HWY_INLINE void Tcgen05TilesT(D d, const uint8_t* HWY_RESTRICT staged,
                              size_t bpr, size_t lo, size_t hi,
                              uint8_t* HWY_RESTRICT tiles) {
  // The 16 bytes at 16 i of a tile (a "lane") hold u32 column t of rows
  // i, 32 + i, 64 + i and 96 + i: a 4x4 transpose of u32 turns 16 bytes
  // (4 columns) of each of those 4 rows into the lanes of 4 tiles. Each
  // 128-bit block transposes on its own, so a vector of kBlocks blocks
  // reads 4 kBlocks columns and yields the lanes of 4 kBlocks tiles.
  const size_t whole_tiles = bpr / 4;
  const hn::Repartition<uint8_t, D> d8;
  const hn::Repartition<uint64_t, D> d64;
  const hn::Full128<uint32_t> d128;
  constexpr size_t kBlocks = hn::MaxLanes(D()) / 4;
  constexpr size_t kStep = 4 * kBlocks;  // tiles per vector
  using V = hn::Vec<D>;
  // Lane i of tiles t0 .. t0 + kStep - 1 from the rows at p[0..3]: with
  // q[c] = u32 column c of a block in p[q], a01l = 0[0] 1[0] 0[1] 1[1],
  // a01h = 0[2] 1[2] 0[3] 1[3] (a23 likewise), then the u64 interleaves
  // give c[0] = 0[0] 1[0] 2[0] 3[0] (the lane of the block's first tile)
  // and so on; `store(v, k)` gets block k of the lanes.
  const auto transpose = [&](const uint8_t* const* p, size_t t0,
                             const auto& store) HWY_ATTR {
    const V v0 = hn::BitCast(d, hn::LoadU(d8, p[0] + 4 * t0));
    const V v1 = hn::BitCast(d, hn::LoadU(d8, p[1] + 4 * t0));
    const V v2 = hn::BitCast(d, hn::LoadU(d8, p[2] + 4 * t0));
    const V v3 = hn::BitCast(d, hn::LoadU(d8, p[3] + 4 * t0));
    const auto a01l = hn::BitCast(d64, hn::InterleaveLower(d, v0, v1));
    const auto a01h = hn::BitCast(d64, hn::InterleaveUpper(d, v0, v1));
    const auto a23l = hn::BitCast(d64, hn::InterleaveLower(d, v2, v3));
    const auto a23h = hn::BitCast(d64, hn::InterleaveUpper(d, v2, v3));
    const V c0 = hn::BitCast(d, hn::InterleaveLower(d64, a01l, a23l));
    const V c1 = hn::BitCast(d, hn::InterleaveUpper(d64, a01l, a23l));
    const V c2 = hn::BitCast(d, hn::InterleaveLower(d64, a01h, a23h));
    const V c3 = hn::BitCast(d, hn::InterleaveUpper(d64, a01h, a23h));
    if constexpr (kBlocks == 2) {
      store(hn::LowerHalf(d128, c0), 0);
      store(hn::LowerHalf(d128, c1), 1);
      store(hn::LowerHalf(d128, c2), 2);
      store(hn::LowerHalf(d128, c3), 3);
      store(hn::UpperHalf(d128, c0), 4);
      store(hn::UpperHalf(d128, c1), 5);
      store(hn::UpperHalf(d128, c2), 6);
      store(hn::UpperHalf(d128, c3), 7);
    } else {
      store(c0, 0);
      store(c1, 1);
      store(c2, 2);
      store(c3, 3);
    }
  };
  // Batches of 16 tiles (8 KiB), each written whole before the next.
  for (size_t tb = 0; tb < whole_tiles; tb += 16) {
    const size_t te = std::min(whole_tiles, tb + 16);
    for (size_t i = 0; i < 32; ++i) {
      // Rows 32 q + i in [lo, hi): q in [qa, qb); rows outside read a
      // present row instead (their u32 are not stored).
      const size_t qa = i >= lo ? 0 : (lo - i + 31) / 32;
      const size_t qb = i >= hi ? 0 : std::min<size_t>(4, (hi - i + 31) / 32);
      if (qa >= qb) continue;
      const uint8_t* p[4];
      for (size_t q = 0; q < 4; ++q) {
        p[q] = staged + (32 * std::min(std::max(q, qa), qb - 1) + i - lo) * bpr;
      }
      uint8_t* const lane = tiles + 16 * i;
      const auto at = [lane](size_t t) {
        return reinterpret_cast<uint32_t*>(lane + 512 * t);
      };
      // Whole vectors of tiles, then one with only the tiles below te.
      const size_t te_whole = tb + (te - tb) / kStep * kStep;
      if (qa == 0 && qb == 4) {
        for (size_t t0 = tb; t0 < te_whole; t0 += kStep) {
          transpose(p, t0, [&](hn::Vec<decltype(d128)> v, size_t k) HWY_ATTR {
            hn::StoreU(v, d128, at(t0 + k));
          });
        }
        if (te_whole < te) {
          transpose(p, te_whole,
                    [&](hn::Vec<decltype(d128)> v, size_t k) HWY_ATTR {
                      if (te_whole + k < te)
                        hn::StoreU(v, d128, at(te_whole + k));
                    });
        }
      } else {
        // BlendedStore writes no other byte (on every target).
        const auto m = hn::AndNot(hn::FirstN(d128, qa), hn::FirstN(d128, qb));
        for (size_t t0 = tb; t0 < te; t0 += kStep) {
          transpose(p, t0, [&](hn::Vec<decltype(d128)> v, size_t k) HWY_ATTR {
            if (t0 + k < te) hn::BlendedStore(v, m, d128, at(t0 + k));
          });
        }
      }
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// Writes the whole tcgen05 tiles (bpr / 4 per row of tiles) of rows [lo,
// hi) of a group of 128 rows, whose scale codes lie row-major in `staged`
// (row r at (r - lo) * bpr; loadable up to 32 bytes past its end) into
// `tiles`, the group's row of tiles. Tile t: byte 16 i + 4 q + (k % 4) holds
// block k = 4 t + k % 4 of the group's row 32 q + i (docs/semantics.md
// section 5, scale-factor layouts). Only the u32 of rows in [lo, hi) are
// written: other calls may write the other rows of the group concurrently.
void MxTcgen05Tiles(const uint8_t* HWY_RESTRICT staged, size_t bpr, size_t lo,
                    size_t hi, uint8_t* HWY_RESTRICT tiles) {
#if HWY_TARGET == HWY_SCALAR
  for (size_t t = 0; t < bpr / 4; ++t) {
    for (size_t r = lo; r < hi; ++r) {
      std::memcpy(tiles + 512 * t + 16 * (r % 32) + 4 * (r / 32),
                  staged + (r - lo) * bpr + 4 * t, 4);
    }
  }
#else
  Tcgen05TilesT(hn::CappedTag<uint32_t, 8>(), staged, bpr, lo, hi, tiles);
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <memory>
#include <optional>
#include <vector>

#include "mxpack/convert.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/util/dispatch_util.h"

namespace mxpack {
HWY_EXPORT(MxQuantizeBlocks);
HWY_EXPORT(MxTcgen05Tiles);

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

// This thread's NVFP4 thresholds for `job`: the kernels fill the table
// lazily with values that are a pure function of the tensor scale (and the
// ue4m3 decode table), so the table of the thread's previous call serves
// again when the key matches. The model quantizer calls QuantizeMxRows for
// row ranges of one tensor from several threads; each thread's later
// ranges skip the fills. The key also holds the mode, source and
// arithmetic (which choose the parts of the table that the kernels fill),
// so that a table only serves calls like the one that began it.
Nvfp4ThresholdTable* ThreadThresholds(const MxJob& job) {
  struct Key {
    uint32_t scale_bits;
    ScaleMode mode;
    Format from;
    Nvfp4Arithmetic arithmetic;
    bool operator==(const Key& o) const {
      return scale_bits == o.scale_bits && mode == o.mode && from == o.from &&
             arithmetic == o.arithmetic;
    }
  };
  Key key{0, job.mode, job.from, job.arithmetic};
  std::memcpy(&key.scale_bits, &job.tensor_scale, 4);
  thread_local std::optional<Nvfp4ThresholdTable> table;
  thread_local Key table_key;
  if (!table || !(table_key == key)) {
    table.emplace(job.tensor_scale, Ue4m3Table());
    table_key = key;
  }
  return &*table;
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
  const auto tiles = Pick(HWY_DISPATCH_TABLE(MxTcgen05Tiles), impl);
  // Inputs above 1 MiB (half a 2 MiB L2) stream from DRAM: pass 3 then
  // prefetches the next chunk into L2 only (MxBlockArgs::prefetch_l2).
  const size_t in_bytes = (job.row_end - job.row_begin) * s.cols * src_bytes;
  const MxBlockArgs args{
      ScaleParams(s.format, job.mode),
      job.mode,
      job.tensor_scale,
      Ue4m3Table(),
      /*prefetch_l2=*/in_bytes > (size_t{1} << 20),
      job.arithmetic,
      s.format == MxFormat::kNvfp4 ? ThreadThresholds(job) : nullptr};

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
  // into the scale layout, for tcgen05 in batches of 16 tiles (8 KiB), each
  // finished before the next, so that each line of the output is written
  // whole while it is in L1 instead of once per chunk (a tile line holds 16
  // rows that lie up to 96 rows apart). The kernel may write codes up to
  // kChunkBlocks past a chunk's last block, and MxTcgen05Tiles loads up to
  // 32 bytes past a row (and stores none of them): hence the slack at the
  // end.
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
    // Whole tiles, 16 at a time (MxTcgen05Tiles).
    tiles(st, bpr, g0 % 128, g0 % 128 + (g1 - g0),
          scales + (g0 / 128) * tile_row_bytes);
    // The last bpr % 4 blocks of each row.
    for (size_t r = g0; r < g1; ++r) {
      for (size_t k = bpr / 4 * 4; k < bpr; ++k) {
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
