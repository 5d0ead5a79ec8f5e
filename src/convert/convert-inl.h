// Highway array drivers of ConvertArray: the generic loop over the runtime
// codec, the compile-time specialized encode and decode loops, and the
// per-target entry point that picks one.

#if defined(MXPACK_SRC_CONVERT_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_CONVERT_CONVERT_INL_H_
#undef MXPACK_SRC_CONVERT_CONVERT_INL_H_
#else
#define MXPACK_SRC_CONVERT_CONVERT_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "src/convert/decode_table.h"
#include "src/format/codec-inl.h"
#include "src/format/convert_params.h"
#include "src/format/encode_cvtph-inl.h"
#include "src/util/lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;


// The generic kernel: runtime formats and policy (rz/rm/rp/rs, relu, ue8m0
// and everything without a specialization below); the rounding mode, source
// kind and destination size are template parameters.
template <Rounding kMode, internal::SrcKind kSrc, int kOutBytes>
void ConvertLoop(const internal::ConvertParams& params, const uint8_t* HWY_RESTRICT in,
                 uint8_t* HWY_RESTRICT out, const uint32_t* HWY_RESTRICT rbits, size_t n) {
  using DU = ConvertCodec::DU;
  const DU du;
  // A local copy: stores through uint8_t* may alias a referenced struct, which
  // would force the compiler to reload every field per vector.
  const internal::ConvertParams p = params;
  const uint32_t* rb = kMode == Rounding::kRS ? rbits : nullptr;
  const auto step = [&p, du](const uint8_t* src, uint8_t* dst, const uint32_t* r) {
    hn::Vec<DU> raw;
    if constexpr (kSrc == internal::SrcKind::kNarrow) {
      raw = hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint8_t, DU>(), src));
    } else {
      raw = WideSource<kSrc>::Load(du, src);
    }
    const auto rv = r ? hn::LoadU(du, r) : hn::Zero(du);
    StoreLanes<kOutBytes>(du, ConvertOne<kMode, kSrc>(p, raw, rv), dst);
  };
  constexpr size_t ib = kSrc == internal::SrcKind::kF32 ? 4 : (kSrc == internal::SrcKind::kNarrow ? 1 : 2);
  constexpr size_t ob = kOutBytes;
  const size_t N = hn::Lanes(du);
  size_t i = 0;
  for (; i + N <= n; i += N) step(in + i * ib, out + i * ob, rb ? rb + i : nullptr);
  if (i == n) return;
  HWY_ALIGN uint8_t in_buf[hn::MaxLanes(du) * ib] = {};
  HWY_ALIGN uint8_t out_buf[hn::MaxLanes(du) * ob];
  HWY_ALIGN uint32_t rb_buf[hn::MaxLanes(du)] = {};
  const size_t rest = n - i;
  std::memcpy(in_buf, in + i * ib, rest * ib);
  if (rb) std::memcpy(rb_buf, rb + i, rest * 4);
  step(in_buf, out_buf, rb ? rb_buf : nullptr);
  std::memcpy(out + i * ob, out_buf, rest * ob);
}

template <Rounding kMode, internal::SrcKind kSrc>
HWY_INLINE void ConvertLoopTo(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                              const uint32_t* rbits, size_t n) {
  switch (p.dst_bytes) {
    case 1: return ConvertLoop<kMode, kSrc, 1>(p, in, out, rbits, n);
    case 2: return ConvertLoop<kMode, kSrc, 2>(p, in, out, rbits, n);
    default: return ConvertLoop<kMode, kSrc, 4>(p, in, out, rbits, n);
  }
}

template <Rounding kMode>
HWY_INLINE void ConvertLoopFrom(const internal::ConvertParams& p, const uint8_t* in,
                                uint8_t* out, const uint32_t* rbits, size_t n) {
  switch (p.src) {
    case internal::SrcKind::kF32:
      return ConvertLoopTo<kMode, internal::SrcKind::kF32>(p, in, out, rbits, n);
    case internal::SrcKind::kF16:
      return ConvertLoopTo<kMode, internal::SrcKind::kF16>(p, in, out, rbits, n);
    case internal::SrcKind::kBF16:
      return ConvertLoopTo<kMode, internal::SrcKind::kBF16>(p, in, out, rbits, n);
    default:
      return ConvertLoopTo<kMode, internal::SrcKind::kNarrow>(p, in, out, rbits, n);
  }
}

// Outputs of at least this many elements (1 MiB of 8-bit codes, beyond what
// stays in this core's L2 alongside the input) are streamed past the caches.
inline constexpr size_t kStreamMinElements = size_t{1} << 20;

// Runs ForEachStep over steps of 4N elements (N = Lanes(du)) whose codes(src)
// is one vector of 4N 8-bit codes. Large outputs that start on a vector
// boundary go out with non-temporal stores: they skip reading each output
// line into the cache first (a quarter of the memory traffic of f32 ->
// 8-bit) and do not evict the input.
template <size_t kInBytes, class DU, class Codes>
HWY_INLINE void EncodeBytesArray(DU du, const uint8_t* HWY_RESTRICT in,
                                 uint8_t* HWY_RESTRICT out, size_t n, const Codes& codes) {
  const hn::Repartition<uint8_t, DU> d8;
  if (n >= kStreamMinElements && reinterpret_cast<uintptr_t>(out) % hn::Lanes(d8) == 0) {
    ForEachStep<kInBytes, 1, 4>(du, in, out, n, [d8, &codes](const uint8_t* src, uint8_t* dst) {
      hn::Stream(codes(src), d8, dst);
    });
    hwy::FlushStream();
    return;
  }
  ForEachStep<kInBytes, 1, 4>(du, in, out, n, [d8, &codes](const uint8_t* src, uint8_t* dst) {
    hn::StoreU(codes(src), d8, dst);
  });
}

#ifdef MXPACK_HAVE_F16C_ENCODE
// f32/f16 -> narrow through EncodeStep4's F16C path. Call under
// internal::ScopedFlushDenormals; not inlined so no FP work moves across the MXCSR
// writes.
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
HWY_NOINLINE void F16cEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                  size_t n) {
  using Step = EncodeStep4<kSrc, kTo, kSatFinite, kRelu>;
  const hn::ScalableTag<uint32_t> du;
  EncodeBytesArray<Step::kIn>(du, in, out, n,
                              [du](const uint8_t* src) { return Step::Codes(du, src); });
}
#endif

#ifdef MXPACK_HAVE_RANGE_ENCODE
// f32 -> kTo under kMode (RangeEncodeF32), 64 elements per step; large
// outputs that start on a vector boundary are streamed (EncodeBytesArray).
// Under rn the encoder's result does not depend on MXCSR; rm and rp need
// DAZ off.
template <Format kTo, bool kSatFinite, bool kRelu, Rounding kMode = Rounding::kRN>
HWY_NOINLINE void RangeEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                   size_t n) {
  using Enc = RangeEncodeF32<kTo, kSatFinite, kRelu, kMode>;
  EncodeBytesArray<4>(hn::Full512<uint32_t>(), in, out, n, [](const uint8_t* src) {
    return hn::Vec512<uint8_t>{Enc::Encode64(_mm512_loadu_si512(src), _mm512_loadu_si512(src + 64),
                                             _mm512_loadu_si512(src + 128),
                                             _mm512_loadu_si512(src + 192))};
  });
}
#endif

#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
// bf16 / f16 -> kTo rn satfinite with Fp16EncodeHalf (AVX512-FP16 CPUs only);
// e4m3 (Encode64) 128 elements per step (two independent 64-element groups
// keep both vector ports busy).
template <Format kTo, bool kRelu, bool kBF16>
MXPACK_FP16_TARGET void Fp16EncodeHalfArray(const uint8_t* HWY_RESTRICT in,
                                            uint8_t* HWY_RESTRICT out, size_t n) {
  using Enc = Fp16EncodeHalf<kTo, kRelu, kBF16>;
  const hn::Full512<uint16_t> d16;
  if constexpr (Enc::kPackedSign) {
    ForEachStep<2, 1, 4>(d16, in, out, n, [](const uint8_t* src, uint8_t* dst) MXPACK_FP16_TARGET {
      for (size_t g = 0; g < 2; ++g) {
        _mm512_storeu_si512(dst + 64 * g, Enc::Encode64(_mm512_loadu_si512(src + 128 * g),
                                                        _mm512_loadu_si512(src + 128 * g + 64)));
      }
    });
  } else {
    ForEachStep<2, 1, 2>(d16, in, out, n, [d16](const uint8_t* src, uint8_t* dst) MXPACK_FP16_TARGET {
      StoreBytes2U16(d16, hn::Vec512<uint16_t>{Enc::EncodeRn(_mm512_loadu_si512(src))},
                     hn::Vec512<uint16_t>{Enc::EncodeRn(_mm512_loadu_si512(src + 64))}, dst);
    });
  }
}

// f32 -> kTo rn satfinite on AVX512-FP16 CPUs: F16cEncodeF32's sticky bit
// and truncating vcvtps2ph without its scaling multiply give, for every f32
// at or above 2^-14 (below it the code is 0 either way, see Fp16EncodeHalf),
// an f16 that keeps the bits above the code's guard bit, the guard bit, and
// a nonzero remainder exactly when the f32 has one (sticky bit 14 + man lies
// at or above the f16 lsb, bit 13, and below the guard, bit 22 - man or
// higher); truncation never overflows and keeps NaN a NaN. Fp16EncodeHalf
// then rounds that f16 once. 21 operations per 32 elements against 23. Call
// under internal::ScopedFlushDenormals (DAZ: f32 subnormal inputs, all of
// which encode to 0, take no microcode assist in vcvtps2ph).
template <Format kTo, bool kRelu>
MXPACK_FP16_TARGET HWY_NOINLINE void Fp16EncodeF32Array(const uint8_t* HWY_RESTRICT in,
                                                        uint8_t* HWY_RESTRICT out, size_t n) {
  using Truncate = F16cEncodeF32<kTo, true, kRelu>;
  using Enc = Fp16EncodeHalf<kTo, kRelu, false>;
  const hn::Full512<uint32_t> du;
  const hn::Full512<uint16_t> d16;
  const hn::Full512<uint8_t> d8;
  ForEachStep<4, 1, 4>(du, in, out, n, [du, d16, d8](const uint8_t* src, uint8_t* dst)
                                           MXPACK_FP16_TARGET {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
    const auto h0 = Truncate::template ToScaledF16</*kPrescaled=*/true, /*kNoSticky=*/false>(
        du, hn::LoadU(du, s), hn::LoadU(du, s + 16));
    const auto h1 = Truncate::template ToScaledF16<true, false>(du, hn::LoadU(du, s + 32),
                                                                hn::LoadU(du, s + 48));
    if constexpr (Enc::kPackedSign) {
      _mm512_storeu_si512(dst, Enc::Encode64(h0.raw, h1.raw));
    } else {
      hn::StoreU(U8From2U16(d16, hn::Vec512<uint16_t>{Enc::EncodeRn(h0.raw)},
                            hn::Vec512<uint16_t>{Enc::EncodeRn(h1.raw)}),
                 d8, dst);
    }
  });
}
#endif

#ifdef MXPACK_HAVE_HALF16_LUT_ENCODE
// 16-bit elements -> 8-bit codes, 64 elements per step, by an encoder of
// encode_half16_lut-inl.h (Enc::LoadTables once, Enc::Encode64 per step).
template <class Enc>
HWY_INLINE void Half16LutArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                               size_t n) {
  const hn::Full512<uint16_t> d16;
  const typename Enc::Tables t = Enc::LoadTables();
  ForEachStep<2, 1, 2>(d16, in, out, n, [&t](const uint8_t* src, uint8_t* dst) {
    _mm512_storeu_si512(dst,
                        Enc::Encode64(t, _mm512_loadu_si512(src), _mm512_loadu_si512(src + 64)));
  });
}
#endif

#ifdef MXPACK_HAVE_HALF16_ENCODE
// bf16 / f16 -> kTo (at most 8 bits) rn, 64 elements per step: byte tables
// on AVX3_DL (Avx512LutEncodeHalf16, tables held in registers), u16 lanes on
// AVX3 (Avx512EncodeHalf16).
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
HWY_NOINLINE void Half16EncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                    size_t n) {
#ifdef MXPACK_HAVE_HALF16_LUT_ENCODE
  Half16LutArray<Avx512LutEncodeHalf16<kSrc, kTo, kSatFinite, kRelu>>(in, out, n);
#else
  const hn::Full512<uint16_t> d16;
  using Enc = Avx512EncodeHalf16<kSrc, kTo, kSatFinite, kRelu>;
  ForEachStep<2, 1, 2>(d16, in, out, n, [](const uint8_t* src, uint8_t* dst) {
    _mm512_storeu_si512(dst, Enc::Encode64(_mm512_loadu_si512(src), _mm512_loadu_si512(src + 64)));
  });
#endif
}

template <bool kSatFinite, bool kRelu>
HWY_NOINLINE void BF16ToF16Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                 size_t n) {
  using Enc = Avx512BF16ToF16<kSatFinite, kRelu>;
  const hn::Full512<uint16_t> d16;
  ForEachStep<2, 2, 2>(d16, in, out, n, [](const uint8_t* src, uint8_t* dst) {
    _mm512_storeu_si512(dst, Enc::Encode32(_mm512_loadu_si512(src)));
    _mm512_storeu_si512(dst + 64, Enc::Encode32(_mm512_loadu_si512(src + 64)));
  });
}
#endif

#ifdef MXPACK_HAVE_DIRECTED_ENCODE
// f32 -> bf16 under kMode (Avx512F32ToBF16::Encode32), 32 elements per step; rbits
// only for rs.
template <Rounding kMode, bool kSatFinite, bool kRelu>
HWY_NOINLINE void F32ToBF16Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                 const uint32_t* HWY_RESTRICT rbits, size_t n) {
  using Enc = Avx512F32ToBF16<kMode, kSatFinite, kRelu>;
  const auto step = [](const uint8_t* src, const uint32_t* r, uint8_t* dst) {
    const auto rv = [r](size_t k) {
      return kMode == Rounding::kRS ? _mm512_loadu_si512(r + 16 * k) : _mm512_setzero_si512();
    };
    _mm512_storeu_si512(dst, Enc::Encode32(_mm512_loadu_si512(src), _mm512_loadu_si512(src + 64),
                                           rv(0), rv(1)));
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    step(in + 4 * i, kMode == Rounding::kRS ? rbits + i : nullptr, out + 2 * i);
  }
  if (i == n) return;
  HWY_ALIGN uint8_t in_buf[32 * 4] = {};
  HWY_ALIGN uint32_t r_buf[32] = {};
  HWY_ALIGN uint8_t out_buf[32 * 2];
  const size_t rest = n - i;
  std::memcpy(in_buf, in + 4 * i, rest * 4);
  if (kMode == Rounding::kRS) std::memcpy(r_buf, rbits + i, rest * 4);
  step(in_buf, r_buf, out_buf);
  std::memcpy(out + 2 * i, out_buf, rest * 2);
}
#endif

#ifdef MXPACK_HAVE_CVTPH_ENCODE
// f32 -> kTo (f16: 32, narrow: 64 elements per step) with CvtphEncodeF32.
// Call under internal::ScopedFlushDenormals (DAZ off for rm and rp).
template <Format kTo, Rounding kMode, bool kSatFinite, bool kRelu>
HWY_NOINLINE void CvtphEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                   size_t n) {
  using Enc = CvtphEncodeF32<kTo, kMode, kSatFinite, kRelu>;
  const hn::Full512<uint32_t> du;
  const auto load = [](const uint8_t* p) { return _mm512_loadu_si512(p); };
  if constexpr (Enc::kF16) {
    ForEachStep<4, 2, 2>(du, in, out, n, [&load](const uint8_t* src, uint8_t* dst) {
      _mm512_storeu_si512(dst, Enc::Encode32(load(src), load(src + 64)));
    });
  } else {
#if HWY_TARGET == HWY_AVX3_DL
    ForEachStep<4, 1, 4>(du, in, out, n, [&load](const uint8_t* src, uint8_t* dst) {
      _mm512_storeu_si512(dst, Enc::Encode64(load(src), load(src + 64), load(src + 128),
                                             load(src + 192)));
    });
#endif
  }
}

// Whether CvtphEncodeArray serves f32 -> kTo under kMode on this target.
template <Format kTo, Rounding kMode>
constexpr bool UseCvtphEncode() {
  return CvtphEncodeF32<kTo, kMode, true, false>::kSupported &&
         (CvtphEncodeF32<kTo, kMode, true, false>::kF16 || HWY_TARGET == HWY_AVX3_DL);
}
#endif

// kSrc elements at p as f32 bits in u32 lanes (exact): f16 through vcvtph2ps
// where F16C exists (exact, keeps subnormals and NaN, ignores DAZ), else
// WideSource's integer-lane widening.
template <internal::SrcKind kSrc, class DU>
HWY_INLINE hn::Vec<DU> LoadAsF32(DU du, const uint8_t* p) {
#ifdef MXPACK_HAVE_F16C_DECODE
  if constexpr (kSrc == internal::SrcKind::kF16) {
    const hn::Rebind<uint16_t, DU> d16;
    const hn::Rebind<hwy::float16_t, DU> dh;
    const hn::RebindToFloat<DU> df;
    const auto h = hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p));
    return hn::BitCast(du, hn::PromoteTo(df, hn::BitCast(dh, h)));
  }
#endif
  return WideSource<kSrc>::Load(du, p);
}

// f16 -> bf16 rn: every f16 is a normal bf16 or zero after one rounding, so
// the f32 image x (exact) rounds by one integer add,
//   bf16 = (x + 0x7FFF + bit 16 of x) >> 16   (ties to even; no overflow:
// f16 max 65504 = 0x477FE000), and only Inf (satfinite: max finite), NaN
// (canonical 0x7FFF) and relu need lane selects (docs/semantics.md section 1).
#ifdef MXPACK_HAVE_F16_TO_BF16_ENCODE
// f16 -> bf16 (Avx512F16ToBF16, AVX512-BF16 CPUs), 64 elements per step.
template <bool kSatFinite, bool kRelu>
MXPACK_BF16_TARGET HWY_NOINLINE void Avx512F16ToBF16Array(const uint8_t* HWY_RESTRICT in,
                                                          uint8_t* HWY_RESTRICT out, size_t n) {
  using Enc = Avx512F16ToBF16<kSatFinite, kRelu>;
  const hn::Full512<uint16_t> d16;
  ForEachStep<2, 2, 2>(d16, in, out, n, [](const uint8_t* src, uint8_t* dst) MXPACK_BF16_TARGET {
    const auto half = [src](size_t k) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 * k));
    };
    _mm512_storeu_si512(dst, Enc::Encode32(half(0), half(1)));
    _mm512_storeu_si512(dst + 64, Enc::Encode32(half(2), half(3)));
  });
}
#endif

template <bool kSatFinite, bool kRelu>
HWY_NOINLINE void F16ToBF16Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                 size_t n) {
#ifdef MXPACK_HAVE_F16_TO_BF16_ENCODE
  if (internal::CpuHasAvx512Bf16()) return Avx512F16ToBF16Array<kSatFinite, kRelu>(in, out, n);
#endif
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToSigned<decltype(du)> di;
  const size_t N = hn::Lanes(du);
  const auto one = [du, di](hn::Vec<decltype(du)> x) {
    const auto a = hn::And(x, hn::Set(du, 0x7FFFFFFFu));
    const auto is_nan = hn::RebindMask(du, hn::Gt(hn::BitCast(di, a), hn::Set(di, 0x7F800000)));
    auto r = hn::ShiftRight<16>(
        hn::Add(hn::Add(x, hn::Set(du, 0x7FFFu)), hn::And(hn::ShiftRight<16>(x), hn::Set(du, 1u))));
    if constexpr (kSatFinite) {
      r = hn::IfThenElse(hn::Eq(a, hn::Set(du, 0x7F800000u)),
                         hn::Or(hn::Set(du, 0x7F7Fu), hn::And(r, hn::Set(du, 0x8000u))), r);
    }
    if constexpr (kRelu) {
      r = hn::IfThenZeroElse(hn::RebindMask(du, hn::Lt(hn::BitCast(di, x), hn::Zero(di))), r);
    }
    return hn::IfThenElse(is_nan, hn::Set(du, 0x7FFFu), r);
  };
  ForEachStep<2, 2, 2>(du, in, out, n, [du, N, &one](const uint8_t* src, uint8_t* dst) {
    StoreHalves2(du, one(LoadAsF32<internal::SrcKind::kF16>(du, src)),
                 one(LoadAsF32<internal::SrcKind::kF16>(du, src + 2 * N)), dst);
  });
}

// f32/f16/bf16 -> kTo (rn, compile-time saturation and relu).
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
void FastEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  using Src = WideSource<kSrc>;
  using Enc = FastEncodeF32<kTo, kSatFinite, kRelu>;
  const hn::ScalableTag<uint32_t> du;
  const size_t N = hn::Lanes(du);
  constexpr size_t kIn = Src::kBytes;
  if constexpr (kSrc == internal::SrcKind::kF16 && kTo == Format::kBF16) {
    return F16ToBF16Array<kSatFinite, kRelu>(in, out, n);
  }
  // f32 into RangeEncodeF32's formats and policies (AVX3_DL).
#ifdef MXPACK_HAVE_RANGE_ENCODE
  constexpr bool kF32Range =
      kSrc == internal::SrcKind::kF32 && RangeEncodeF32<kTo, kSatFinite, kRelu>::kSupported;
#else
  constexpr bool kF32Range = false;
#endif
  (void)kF32Range;
#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
  // AVX512-FP16 CPUs: one f16 rounding (Fp16EncodeHalf) for every source
  // but f32 into RangeEncodeF32's formats (fewer operations; F16cEncodeArray).
  if constexpr (kSatFinite && Fp16EncodeHalf<kTo, kRelu, false>::kSupported &&
                !kF32Range) {
    if (internal::CpuHasAvx512Fp16()) {
      if constexpr (kSrc == internal::SrcKind::kF32) {
        const internal::ScopedFlushDenormals ftz;
        return Fp16EncodeF32Array<kTo, kRelu>(in, out, n);
      } else {
        return Fp16EncodeHalfArray<kTo, kRelu, kSrc == internal::SrcKind::kBF16>(in, out, n);
      }
    }
  }
#endif
#ifdef MXPACK_HAVE_DIRECTED_ENCODE
  if constexpr (kSrc == internal::SrcKind::kF32 && kTo == Format::kBF16) {
    return F32ToBF16Array<Rounding::kRN, kSatFinite, kRelu>(in, out, nullptr, n);
  }
#endif
#ifdef MXPACK_HAVE_RANGE_ENCODE
  if constexpr (kF32Range) return RangeEncodeArray<kTo, kSatFinite, kRelu>(in, out, n);
#endif
#ifdef MXPACK_HAVE_CVTPH_ENCODE
  if constexpr (kSrc == internal::SrcKind::kF32 && kTo == Format::kF16) {
    const internal::ScopedFlushDenormals ftz;
    return CvtphEncodeArray<kTo, Rounding::kRN, kSatFinite, kRelu>(in, out, n);
  }
#endif
#ifdef MXPACK_HAVE_HALF16_ENCODE
  if constexpr (kSrc != internal::SrcKind::kF32 && internal::FastFormatOf(kTo).bits <= 8) {
    return Half16EncodeArray<kSrc, kTo, kSatFinite, kRelu>(in, out, n);
  }
  if constexpr (kSrc == internal::SrcKind::kBF16 && kTo == Format::kF16) {
    return BF16ToF16Array<kSatFinite, kRelu>(in, out, n);
  }
#endif
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
  if constexpr (kSrc == internal::SrcKind::kBF16 && internal::FastFormatOf(kTo).bits <= 8) {
    // bf16 -> narrow in u16 lanes (twice the lanes of the f32 encoder).
    using Enc16 = FastEncodeBF16<kTo, kSatFinite, kRelu>;
    const hn::ScalableTag<uint16_t> d16;
    const size_t N16 = hn::Lanes(d16);
    ForEachStep<2, 1, 2>(d16, in, out, n, [d16, N16](const uint8_t* src, uint8_t* dst) {
      const uint16_t* s16 = reinterpret_cast<const uint16_t*>(src);
      StoreBytes2U16(d16, Enc16::EncodeRn(d16, hn::LoadU(d16, s16)),
                     Enc16::EncodeRn(d16, hn::LoadU(d16, s16 + N16)), dst);
    });
    return;
  }
#endif
#ifdef MXPACK_HAVE_F16C_ENCODE
  if constexpr (kSrc != internal::SrcKind::kBF16 && internal::FastFormatOf(kTo).bits <= 8) {
    const internal::ScopedFlushDenormals ftz;
    F16cEncodeArray<kSrc, kTo, kSatFinite, kRelu>(in, out, n);
    return;
  }
#endif
  if constexpr (internal::FastFormatOf(kTo).bits > 8) {
    ForEachStep<kIn, 2, 2>(du, in, out, n, [du, N](const uint8_t* src, uint8_t* dst) {
      StoreHalves2(du, Enc::EncodeRn(du, Src::Load(du, src)),
                   Enc::EncodeRn(du, Src::Load(du, src + N * kIn)), dst);
    });
  } else {
    ForEachStep<kIn, 1, 4>(du, in, out, n, [du, N](const uint8_t* src, uint8_t* dst) {
      StoreBytes4(du, Enc::EncodeRn(du, Src::Load(du, src)),
                  Enc::EncodeRn(du, Src::Load(du, src + N * kIn)),
                  Enc::EncodeRn(du, Src::Load(du, src + 2 * N * kIn)),
                  Enc::EncodeRn(du, Src::Load(du, src + 3 * N * kIn)), dst);
    });
  }
}

template <Format kFrom, Format kTo>
void FastDecodeGeneral(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n);


// Narrow -> f32 / bf16 / f16 (exact, relu off).
template <Format kFrom, Format kTo>
void FastDecodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
#ifdef MXPACK_HAVE_F16C_DECODE
  if constexpr (kTo == Format::kF32 && kFrom != Format::kUE8M0) {
    const hn::ScalableTag<uint16_t> d16;
    ForEachStep<1, 4, 1>(d16, in, out, n, [d16](const uint8_t* src, uint8_t* dst) {
      F16cDecodeNarrow<kFrom>::Step(d16, src, dst);
    });
    return;
  }
#endif
  if constexpr (kFrom == Format::kE5M2 && kTo == Format::kF16) {
    const hn::ScalableTag<uint16_t> d16;
    const hn::Rebind<uint8_t, decltype(d16)> d8;
    // e5m2 is the top byte of an f16; only NaN payloads need canonicalizing.
    const hn::RebindToSigned<decltype(d16)> di16;
    ForEachStep<1, 2, 1>(d16, in, out, n, [d16, d8, di16](const uint8_t* src, uint8_t* dst) {
      const auto h = hn::ShiftLeft<8>(hn::PromoteTo(d16, hn::LoadU(d8, src)));
      const auto mag = hn::BitCast(di16, hn::And(h, hn::Set(d16, uint16_t{0x7FFF})));
      const auto is_nan = hn::RebindMask(d16, hn::Gt(mag, hn::Set(di16, int16_t{0x7C00})));
      hn::StoreU(hn::IfThenElse(is_nan, hn::Set(d16, uint16_t{0x7FFF}), h), d16,
                 reinterpret_cast<uint16_t*>(dst));
    });
  } else {
    FastDecodeGeneral<kFrom, kTo>(in, out, n);
  }
}

// Every other narrow decode (FastDecodeArray without the e5m2 -> f16 shift).
template <Format kFrom, Format kTo>
void FastDecodeGeneral(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  constexpr int kOutBytes = kTo == Format::kF32 ? 4 : 2;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<uint16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  // bf16 (or f16) bits in u16 lanes; f32 = bf16 bits << 16.
  using Dec = FastDecodeNarrow16<kFrom, kTo == Format::kF16 ? Format::kF16 : Format::kBF16>;
  ForEachStep<1, kOutBytes, 1>(d16, in, out, n, [d16, d8](const uint8_t* src, uint8_t* dst) {
    const auto v = Dec::Decode(d16, hn::PromoteTo(d16, hn::LoadU(d8, src)));
    if constexpr (kTo == Format::kF32) {
      const hn::Repartition<uint32_t, decltype(d16)> d32;
      const hn::Half<decltype(d16)> dh;
      uint32_t* out32 = reinterpret_cast<uint32_t*>(dst);
      // bf16 NaN 0x7FFF becomes the f32 canonical NaN 0x7FFFFFFF.
      const auto widen = [d32](hn::Vec<decltype(d32)> h) {
        const auto w = hn::ShiftLeft<16>(h);
        return hn::IfThenElse(hn::Eq(w, hn::Set(d32, 0x7FFF0000u)), hn::Set(d32, 0x7FFFFFFFu), w);
      };
      hn::StoreU(widen(hn::PromoteTo(d32, hn::LowerHalf(dh, v))), d32, out32);
      hn::StoreU(widen(hn::PromoteTo(d32, hn::UpperHalf(dh, v))), d32, out32 + hn::Lanes(d32));
    } else {
      hn::StoreU(v, d16, reinterpret_cast<uint16_t*>(dst));
    }
  });
#else
  // One lane: the f32 decoder, then narrowed.
  const hn::ScalableTag<uint32_t> du;
  const hn::Rebind<uint8_t, decltype(du)> d8u;
  ForEachStep<1, kOutBytes, 1>(du, in, out, n, [du, d8u](const uint8_t* src, uint8_t* dst) {
    auto v = FastDecodeNarrow<kFrom>::ToF32(du, hn::PromoteTo(du, hn::LoadU(d8u, src)));
    if (kTo == Format::kBF16) {
      v = hn::ShiftRight<16>(v);  // exact: low 16 bits are zero
    } else if (kTo == Format::kF16) {
      v = FastEncodeF32<Format::kF16, false>::EncodeRn(du, v);
    }
    StoreLanes<kOutBytes>(du, v, dst);
  });
#endif
}

template <internal::SrcKind kSrc, Format kTo, bool kSatFinite>
HWY_INLINE bool TryFastEncodeSat(bool relu, const uint8_t* in, uint8_t* out, size_t n) {
  if constexpr (internal::HasFastEncode(kTo, kSatFinite, false)) {
    if (!relu) {
      FastEncodeArray<kSrc, kTo, kSatFinite, false>(in, out, n);
      return true;
    }
    if constexpr (internal::HasFastEncode(kTo, kSatFinite, true)) {
      FastEncodeArray<kSrc, kTo, kSatFinite, true>(in, out, n);
      return true;
    }
  }
  return false;
}

template <internal::SrcKind kSrc, Format kTo>
HWY_INLINE bool TryFastEncode(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                              size_t n) {
  return p.satfinite ? TryFastEncodeSat<kSrc, kTo, true>(p.relu, in, out, n)
                     : TryFastEncodeSat<kSrc, kTo, false>(p.relu, in, out, n);
}

template <internal::SrcKind kSrc>
HWY_INLINE bool TryFastEncodeFrom(const internal::ConvertParams& p, const uint8_t* in,
                                  uint8_t* out, size_t n) {
  switch (p.to) {
    case Format::kE2M1: return TryFastEncode<kSrc, Format::kE2M1>(p, in, out, n);
    case Format::kE2M3: return TryFastEncode<kSrc, Format::kE2M3>(p, in, out, n);
    case Format::kE3M2: return TryFastEncode<kSrc, Format::kE3M2>(p, in, out, n);
    case Format::kE4M3: return TryFastEncode<kSrc, Format::kE4M3>(p, in, out, n);
    case Format::kE5M2: return TryFastEncode<kSrc, Format::kE5M2>(p, in, out, n);
    case Format::kUE4M3: return TryFastEncode<kSrc, Format::kUE4M3>(p, in, out, n);
    case Format::kF16: return TryFastEncode<kSrc, Format::kF16>(p, in, out, n);
    case Format::kBF16: return TryFastEncode<kSrc, Format::kBF16>(p, in, out, n);
    default: return false;
  }
}

template <Format kFrom>
HWY_INLINE bool TryFastDecode(Format to, const uint8_t* in, uint8_t* out, size_t n) {
  switch (to) {
    case Format::kF32: FastDecodeArray<kFrom, Format::kF32>(in, out, n); return true;
    case Format::kBF16: FastDecodeArray<kFrom, Format::kBF16>(in, out, n); return true;
    case Format::kF16:
      if constexpr (kFrom == Format::kUE8M0) {
        return false;  // rejected by ValidateConversion
      } else {
        FastDecodeArray<kFrom, Format::kF16>(in, out, n);
        return true;
      }
    default: return false;
  }
}

#if HWY_TARGET == HWY_AVX3_DL
// Narrow -> bf16 / f16 (relu or not) by byte permutes over the scalar
// reference's table (decode_table.h), 64 codes per step. Each output byte
// plane is a 256-entry table held in four zmm; vpermi2b looks up the low 7
// bits of a code in two of them (128 entries), and for 8-bit codes the top
// bit picks between the two halves. Codes of at most 6 bits (fp4/fp6) need
// one vpermb per plane, 7-bit codes (ue4m3) one vpermi2b. unpacklo/hi_epi8
// then interleave the planes into u16 per 128-bit block, so the codes are
// first permuted to the order that makes the stores come out in sequence:
//   block k of the permuted codes = codes 8k..8k+7, then 32+8k..32+8k+7.
template <int kCodeBits>
HWY_NOINLINE void TableDecode16Array(const internal::DecodeTable16& tab,
                                     const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                     size_t n) {
  const hn::Full512<uint8_t> d8;
  __m512i lo[4], hi[4];
  for (int j = 0; j < 4; ++j) {
    lo[j] = _mm512_load_si512(tab.lo + 64 * j);
    hi[j] = _mm512_load_si512(tab.hi + 64 * j);
  }
  alignas(64) static constexpr uint8_t kOrder[64] = {
      0,  1,  2,  3,  4,  5,  6,  7,  32, 33, 34, 35, 36, 37, 38, 39,
      8,  9,  10, 11, 12, 13, 14, 15, 40, 41, 42, 43, 44, 45, 46, 47,
      16, 17, 18, 19, 20, 21, 22, 23, 48, 49, 50, 51, 52, 53, 54, 55,
      24, 25, 26, 27, 28, 29, 30, 31, 56, 57, 58, 59, 60, 61, 62, 63};
  const __m512i order = _mm512_load_si512(kOrder);
  const auto plane = [](const __m512i* t, __m512i c) {
    if constexpr (kCodeBits <= 6) {
      return _mm512_permutexvar_epi8(c, t[0]);
    } else if constexpr (kCodeBits == 7) {
      return _mm512_permutex2var_epi8(t[0], c, t[1]);
    } else {
      return _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), _mm512_permutex2var_epi8(t[0], c, t[1]),
                                    _mm512_permutex2var_epi8(t[2], c, t[3]));
    }
  };
  ForEachStep<1, 2, 1>(d8, in, out, n, [&](const uint8_t* src, uint8_t* dst) {
    const __m512i c = _mm512_permutexvar_epi8(order, _mm512_loadu_si512(src));
    const __m512i l = plane(lo, c), h = plane(hi, c);
    _mm512_storeu_si512(dst, _mm512_unpacklo_epi8(l, h));
    _mm512_storeu_si512(dst + 64, _mm512_unpackhi_epi8(l, h));
  });
}

// Runs TableDecode16Array for `from` -> kBF16 / kF16; false for other pairs.
HWY_INLINE bool TryTableDecode16(Format from, Format to, bool relu, const uint8_t* in,
                                 uint8_t* out, size_t n) {
  if (to != Format::kBF16 && to != Format::kF16) return false;
  if (from == Format::kUE8M0 && to == Format::kF16) return false;  // rejected earlier
  // e5m2 -> f16 without relu is one shift (FastDecodeArray).
  if (from == Format::kE5M2 && to == Format::kF16 && !relu) return false;
  const internal::DecodeTable16& tab = internal::NarrowDecodeTable16(from, to, relu);
  switch (from) {
    case Format::kE2M1:
    case Format::kE2M3:
    case Format::kE3M2: TableDecode16Array<6>(tab, in, out, n); return true;
    case Format::kUE4M3: TableDecode16Array<7>(tab, in, out, n); return true;
    case Format::kE4M3:
    case Format::kE5M2:
    case Format::kUE8M0: TableDecode16Array<8>(tab, in, out, n); return true;
    default: return false;
  }
}
#endif

// f16 / bf16 -> f32 (exact; relu; NaN -> 0x7FFFFFFF, docs/semantics.md
// section 1). f16 goes through vcvtph2ps where F16C exists (exact, keeps
// subnormals, ignores DAZ), otherwise through the integer-lane widening.
template <internal::SrcKind kSrc, bool kRelu>
HWY_NOINLINE void WidenToF32Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                  size_t n) {
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToSigned<decltype(du)> di;
  ForEachStep<2, 4, 1>(du, in, out, n, [du, di](const uint8_t* src, uint8_t* dst) {
    hn::Vec<decltype(du)> x = LoadAsF32<kSrc>(du, src);
    // |x| > Inf as signed: NaN (|x| < 2^31).
    const auto is_nan = hn::RebindMask(
        du, hn::Gt(hn::BitCast(di, hn::And(x, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000)));
    if constexpr (kRelu) {
      x = hn::IfThenZeroElse(hn::RebindMask(du, hn::Lt(hn::BitCast(di, x), hn::Zero(di))), x);
    }
    hn::StoreU(hn::IfThenElse(is_nan, hn::Set(du, 0x7FFFFFFFu), x), du,
               reinterpret_cast<uint32_t*>(dst));
  });
}

template <internal::SrcKind kSrc>
HWY_INLINE void WidenToF32(bool relu, const uint8_t* in, uint8_t* out, size_t n) {
  if (relu) {
    WidenToF32Array<kSrc, true>(in, out, n);
  } else {
    WidenToF32Array<kSrc, false>(in, out, n);
  }
}

// f32 / f16 / bf16 -> ue8m0 under rz (floor to a power of two: the f32
// exponent field) or rp (+1 when the fraction is non-zero), the vector form
// of ConvertCodec::Encode's ue8m0 branch with the policy at compile time
// (docs/semantics.md section 1): f32 subnormals give 0x00, or under rp 0x01
// above 2^-127; Inf and a carry into 0xFF overflow to 0xFE (satfinite) or
// 0xFF; NaN gives 0xFF; the sign is ignored.
template <internal::SrcKind kSrc, bool kRP, bool kSatFinite>
HWY_NOINLINE void UE8M0EncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                   size_t n) {
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToSigned<decltype(du)> di;
  const size_t N = hn::Lanes(du);
  constexpr size_t kIn = WideSource<kSrc>::kBytes;
  const auto one = [du, di](hn::Vec<decltype(du)> x) {
    const auto a = hn::And(x, hn::Set(du, 0x7FFFFFFFu));
    auto code = hn::ShiftRight<23>(a);
    if constexpr (kRP) {
      const auto frac = hn::And(a, hn::Set(du, 0x7FFFFFu));
      code = hn::Add(code, hn::IfThenElseZero(hn::Ne(frac, hn::Zero(du)), hn::Set(du, 1u)));
      // Subnormals: (2^-127, 2^-126) -> 0x01, else 0x00.
      const auto sub = hn::IfThenElseZero(
          hn::RebindMask(du, hn::Gt(hn::BitCast(di, a), hn::Set(di, 0x00400000))), hn::Set(du, 1u));
      code = hn::IfThenElse(hn::RebindMask(du, hn::Lt(hn::BitCast(di, a), hn::Set(di, 0x00800000))),
                            sub, code);
    }
    // |x| >= Inf (Inf, NaN) or a carry into 0xFF: as signed, a >= 0x7F000000
    // with a non-zero fraction under rp, a >= 0x7F800000 otherwise, is the
    // same as code >= 0xFF.
    const auto ovf = hn::RebindMask(du, hn::Gt(hn::BitCast(di, code), hn::Set(di, 0xFE)));
    const auto is_nan = hn::RebindMask(du, hn::Gt(hn::BitCast(di, a), hn::Set(di, 0x7F800000)));
    code = hn::IfThenElse(ovf, hn::Set(du, kSatFinite ? 0xFEu : 0xFFu), code);
    return hn::IfThenElse(is_nan, hn::Set(du, 0xFFu), code);
  };
  ForEachStep<kIn, 1, 4>(du, in, out, n, [du, N, &one](const uint8_t* src, uint8_t* dst) {
    StoreBytes4(du, one(LoadAsF32<kSrc>(du, src)), one(LoadAsF32<kSrc>(du, src + N * kIn)),
                one(LoadAsF32<kSrc>(du, src + 2 * N * kIn)),
                one(LoadAsF32<kSrc>(du, src + 3 * N * kIn)), dst);
  });
}

#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
// bf16 -> ue8m0 in u16 lanes: UE8M0EncodeArray on the bf16 fields (exponent
// field bits 14..7, fraction bits 6..0; 2^-127 is 0x0040).
template <bool kRP, bool kSatFinite>
HWY_NOINLINE void BF16ToUE8M0Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                   size_t n) {
  const hn::ScalableTag<uint16_t> d16;
  const hn::RebindToSigned<decltype(d16)> di16;
  const size_t N16 = hn::Lanes(d16);
  const auto one = [d16, di16](hn::Vec<decltype(d16)> h) {
    const auto a = hn::And(h, hn::Set(d16, uint16_t{0x7FFF}));
    const auto ai = hn::BitCast(di16, a);
    auto code = hn::ShiftRight<7>(a);
    if constexpr (kRP) {
      const auto frac = hn::And(a, hn::Set(d16, uint16_t{0x7F}));
      const auto one16 = hn::Set(d16, uint16_t{1});
      code = hn::Add(code, hn::IfThenElseZero(hn::Ne(frac, hn::Zero(d16)), one16));
      const auto sub =
          hn::IfThenElseZero(hn::RebindMask(d16, hn::Gt(ai, hn::Set(di16, int16_t{0x0040}))), one16);
      code = hn::IfThenElse(hn::RebindMask(d16, hn::Lt(ai, hn::Set(di16, int16_t{0x0080}))), sub,
                            code);
    }
    const auto ovf =
        hn::RebindMask(d16, hn::Gt(hn::BitCast(di16, code), hn::Set(di16, int16_t{0xFE})));
    code = hn::IfThenElse(ovf, hn::Set(d16, uint16_t{kSatFinite ? 0xFE : 0xFF}), code);
    return hn::IfThenElse(hn::RebindMask(d16, hn::Gt(ai, hn::Set(di16, int16_t{0x7F80}))),
                          hn::Set(d16, uint16_t{0xFF}), code);
  };
  ForEachStep<2, 1, 2>(d16, in, out, n, [d16, N16, &one](const uint8_t* src, uint8_t* dst) {
    const uint16_t* s16 = reinterpret_cast<const uint16_t*>(src);
    StoreBytes2U16(d16, one(hn::LoadU(d16, s16)), one(hn::LoadU(d16, s16 + N16)), dst);
  });
}
#endif

#ifdef MXPACK_HAVE_HALF16_ENCODE
// f16 -> ue8m0, 64 elements per step: byte tables on AVX3_DL
// (Avx512LutF16ToUE8M0), else Avx512F16ToUE8M0, whose rp NaN code 0x100 the
// saturating pack of StoreBytes2U16 maps to 0xFF.
template <bool kRP, bool kSatFinite>
HWY_NOINLINE void F16ToUE8M0Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                  size_t n) {
#ifdef MXPACK_HAVE_HALF16_LUT_ENCODE
  Half16LutArray<Avx512LutF16ToUE8M0<kRP, kSatFinite>>(in, out, n);
#else
  const hn::Full512<uint16_t> d16;
  using Enc = Avx512F16ToUE8M0<kRP, kSatFinite>;
  ForEachStep<2, 1, 2>(d16, in, out, n, [d16](const uint8_t* src, uint8_t* dst) {
    StoreBytes2U16(d16, hn::Vec512<uint16_t>{Enc::Encode32(_mm512_loadu_si512(src))},
                   hn::Vec512<uint16_t>{Enc::Encode32(_mm512_loadu_si512(src + 64))}, dst);
  });
#endif
}
#endif

#ifdef MXPACK_HAVE_DIRECTED_ENCODE
// f32 / bf16 -> ue8m0, 64 elements per step: bf16 by byte tables on AVX3_DL
// (Avx512LutBF16ToUE8M0), else Avx512ToUE8M0.
template <internal::SrcKind kSrc, bool kRP, bool kSatFinite>
HWY_NOINLINE void Avx512UE8M0Array(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                   size_t n) {
  constexpr bool kBF16 = kSrc == internal::SrcKind::kBF16;
  using Enc = Avx512ToUE8M0<kBF16, kRP, kSatFinite>;
  if constexpr (kBF16) {
#ifdef MXPACK_HAVE_HALF16_LUT_ENCODE
    Half16LutArray<Avx512LutBF16ToUE8M0<kRP, kSatFinite>>(in, out, n);
#else
    const hn::Full512<uint16_t> d16;
    ForEachStep<2, 1, 2>(d16, in, out, n, [d16](const uint8_t* src, uint8_t* dst) {
      StoreBytes2U16(d16, hn::Vec512<uint16_t>{Enc::Encode(_mm512_loadu_si512(src))},
                     hn::Vec512<uint16_t>{Enc::Encode(_mm512_loadu_si512(src + 64))}, dst);
    });
#endif
  } else {
    const hn::Full512<uint32_t> du;
    ForEachStep<4, 1, 4>(du, in, out, n, [du](const uint8_t* src, uint8_t* dst) {
      const auto enc = [src](size_t k) {
        return hn::Vec512<uint32_t>{Enc::Encode(_mm512_loadu_si512(src + 64 * k))};
      };
      StoreBytes4(du, enc(0), enc(1), enc(2), enc(3), dst);
    });
  }
}
#endif

template <internal::SrcKind kSrc>
HWY_INLINE bool TryUE8M0Encode(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                               size_t n) {
#ifdef MXPACK_HAVE_DIRECTED_ENCODE
  if constexpr (kSrc != internal::SrcKind::kF16) {
    if (p.rounding == Rounding::kRP) {
      p.satfinite ? Avx512UE8M0Array<kSrc, true, true>(in, out, n)
                  : Avx512UE8M0Array<kSrc, true, false>(in, out, n);
      return true;
    }
    if (p.rounding == Rounding::kRZ) {
      p.satfinite ? Avx512UE8M0Array<kSrc, false, true>(in, out, n)
                  : Avx512UE8M0Array<kSrc, false, false>(in, out, n);
      return true;
    }
    return false;
  }
#endif
#ifdef MXPACK_HAVE_HALF16_ENCODE
  if constexpr (kSrc == internal::SrcKind::kF16) {
    if (p.rounding == Rounding::kRP) {
      p.satfinite ? F16ToUE8M0Array<true, true>(in, out, n)
                  : F16ToUE8M0Array<true, false>(in, out, n);
      return true;
    }
    if (p.rounding == Rounding::kRZ) {
      p.satfinite ? F16ToUE8M0Array<false, true>(in, out, n)
                  : F16ToUE8M0Array<false, false>(in, out, n);
      return true;
    }
    return false;
  }
#endif
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
  if constexpr (kSrc == internal::SrcKind::kBF16) {
    if (p.rounding == Rounding::kRP) {
      p.satfinite ? BF16ToUE8M0Array<true, true>(in, out, n)
                  : BF16ToUE8M0Array<true, false>(in, out, n);
      return true;
    }
    if (p.rounding == Rounding::kRZ) {
      p.satfinite ? BF16ToUE8M0Array<false, true>(in, out, n)
                  : BF16ToUE8M0Array<false, false>(in, out, n);
      return true;
    }
    return false;
  }
#endif
  if (p.rounding == Rounding::kRP) {
    p.satfinite ? UE8M0EncodeArray<kSrc, true, true>(in, out, n)
                : UE8M0EncodeArray<kSrc, true, false>(in, out, n);
    return true;
  }
  if (p.rounding == Rounding::kRZ) {
    p.satfinite ? UE8M0EncodeArray<kSrc, false, true>(in, out, n)
                : UE8M0EncodeArray<kSrc, false, false>(in, out, n);
    return true;
  }
  return false;
}

#ifdef MXPACK_HAVE_DIRECTED_ENCODE
// f32 -> kTo under rz / rm / rp (RangeEncodeF32 for rm / rp where it
// applies, else CvtphEncodeF32 where UseCvtphEncode, else
// Avx512DirectedEncodeF32). Call under internal::ScopedFlushDenormals, with
// DAZ off except for CvtphEncodeF32 under rz.
template <Format kTo, Rounding kMode, bool kSatFinite, bool kRelu>
HWY_NOINLINE void DirectedEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                      size_t n) {
  if constexpr (kTo == Format::kBF16) {
    return F32ToBF16Array<kMode, kSatFinite, kRelu>(in, out, nullptr, n);
  }
#ifdef MXPACK_HAVE_RANGE_ENCODE
  // rz stays on CvtphEncodeF32 (fewer operations per element).
  if constexpr (kMode != Rounding::kRZ &&
                RangeEncodeF32<kTo, kSatFinite, kRelu, kMode>::kSupported) {
    return RangeEncodeArray<kTo, kSatFinite, kRelu, kMode>(in, out, n);
  }
#endif
#ifdef MXPACK_HAVE_CVTPH_ENCODE
  if constexpr (UseCvtphEncode<kTo, kMode>()) {
    return CvtphEncodeArray<kTo, kMode, kSatFinite, kRelu>(in, out, n);
  }
#endif
  using Enc = Avx512DirectedEncodeF32<kTo, kMode, kSatFinite, kRelu>;
  const hn::Full512<uint32_t> du;
  const auto load = [](const uint8_t* p) { return hn::Vec512<uint32_t>{_mm512_loadu_si512(p)}; };
  const auto enc = [load](const uint8_t* p) { return hn::Vec512<uint32_t>{Enc::Encode(load(p).raw)}; };
  if constexpr (internal::FastFormatOf(kTo).bits <= 8) {
    ForEachStep<4, 1, 4>(du, in, out, n, [du, &enc](const uint8_t* src, uint8_t* dst) {
      StoreBytes4(du, enc(src), enc(src + 64), enc(src + 128), enc(src + 192), dst);
    });
  } else {
    ForEachStep<4, 2, 2>(du, in, out, n, [du, &enc](const uint8_t* src, uint8_t* dst) {
      StoreHalves2(du, enc(src), enc(src + 64), dst);
    });
  }
}

template <Format kTo, Rounding kMode>
HWY_INLINE bool TryDirectedEncodeMode(const internal::ConvertParams& p, const uint8_t* in,
                                      uint8_t* out, size_t n) {
  // DAZ on only for CvtphEncodeF32 under rz (f32 subnormal inputs give +-0
  // either way, and DAZ keeps them out of the FP units); the other directed
  // encoders must see f32 subnormal inputs.
#ifdef MXPACK_HAVE_CVTPH_ENCODE
  constexpr bool kDaz = kMode == Rounding::kRZ && UseCvtphEncode<kTo, kMode>();
#else
  constexpr bool kDaz = false;
#endif
  const internal::ScopedFlushDenormals ftz(kDaz);
  if (p.satfinite) {
    if (!p.relu) return DirectedEncodeArray<kTo, kMode, true, false>(in, out, n), true;
    if constexpr (internal::HasFastEncode(kTo, true, true)) {
      return DirectedEncodeArray<kTo, kMode, true, true>(in, out, n), true;
    }
    return false;
  }
  if constexpr (internal::HasFastEncode(kTo, false, false)) {
    if (!p.relu) return DirectedEncodeArray<kTo, kMode, false, false>(in, out, n), true;
    if constexpr (internal::HasFastEncode(kTo, false, true)) {
      return DirectedEncodeArray<kTo, kMode, false, true>(in, out, n), true;
    }
  }
  return false;
}

template <Format kTo>
HWY_INLINE bool TryDirectedEncodeTo(const internal::ConvertParams& p, const uint8_t* in,
                                    uint8_t* out, size_t n) {
  switch (p.rounding) {
    case Rounding::kRZ: return TryDirectedEncodeMode<kTo, Rounding::kRZ>(p, in, out, n);
    case Rounding::kRM: return TryDirectedEncodeMode<kTo, Rounding::kRM>(p, in, out, n);
    case Rounding::kRP: return TryDirectedEncodeMode<kTo, Rounding::kRP>(p, in, out, n);
    default: return false;
  }
}

// f32 -> narrow / f16 / bf16 under rz, rm or rp; false for other policies.
HWY_INLINE bool TryDirectedEncode(const internal::ConvertParams& p, const uint8_t* in,
                                  uint8_t* out, size_t n) {
  if (p.src != internal::SrcKind::kF32) return false;
  switch (p.to) {
    case Format::kE2M1: return TryDirectedEncodeTo<Format::kE2M1>(p, in, out, n);
    case Format::kE2M3: return TryDirectedEncodeTo<Format::kE2M3>(p, in, out, n);
    case Format::kE3M2: return TryDirectedEncodeTo<Format::kE3M2>(p, in, out, n);
    case Format::kE4M3: return TryDirectedEncodeTo<Format::kE4M3>(p, in, out, n);
    case Format::kE5M2: return TryDirectedEncodeTo<Format::kE5M2>(p, in, out, n);
    case Format::kUE4M3: return TryDirectedEncodeTo<Format::kUE4M3>(p, in, out, n);
    case Format::kF16: return TryDirectedEncodeTo<Format::kF16>(p, in, out, n);
    case Format::kBF16: return TryDirectedEncodeTo<Format::kBF16>(p, in, out, n);
    default: return false;
  }
}
#endif

#ifdef MXPACK_HAVE_DIRECTED_ENCODE
// Runs step(src, rbits, dst) over groups of kG elements (f32 in, kOut bytes
// out per element), then once on a zero-padded copy of the rest.
template <size_t kG, size_t kOut, class Step>
HWY_INLINE void StochasticSteps(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                const uint32_t* HWY_RESTRICT rbits, size_t n, const Step& step) {
  size_t i = 0;
  for (; i + kG <= n; i += kG) step(in + 4 * i, rbits + i, out + kOut * i);
  if (i == n) return;
  HWY_ALIGN uint8_t in_buf[kG * 4] = {};
  HWY_ALIGN uint32_t r_buf[kG] = {};
  HWY_ALIGN uint8_t out_buf[kG * kOut];
  const size_t rest = n - i;
  std::memcpy(in_buf, in + 4 * i, rest * 4);
  std::memcpy(r_buf, rbits + i, rest * 4);
  step(in_buf, r_buf, out_buf);
  std::memcpy(out + kOut * i, out_buf, rest * kOut);
}

// f32 -> kTo under rs, 64 (narrow) or 32 elements per step, then one
// zero-padded partial step: FmaStochasticEncodeF32 where it applies
// (AVX3_DL, e4m3; under internal::ScopedFlushDenormals with DAZ), else
// Avx512StochasticEncodeF32.
template <Format kTo, bool kSatFinite, bool kRelu>
HWY_NOINLINE void StochasticEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                        const uint32_t* HWY_RESTRICT rbits, size_t n) {
  if constexpr (kTo == Format::kBF16) {
    return F32ToBF16Array<Rounding::kRS, kSatFinite, kRelu>(in, out, rbits, n);
  }
#ifdef MXPACK_HAVE_FMA_STOCHASTIC_ENCODE
  using Fma = FmaStochasticEncodeF32<kTo, kSatFinite, kRelu>;
  if constexpr (Fma::kSupported) {
    const internal::ScopedFlushDenormals ftz(/*daz=*/true);
    const typename Fma::Tables t = Fma::LoadTables();
    return StochasticSteps<64, 1>(in, out, rbits, n, [&t](const uint8_t* src, const uint32_t* r,
                                                          uint8_t* dst) {
      const auto x = [src](size_t k) { return _mm512_loadu_si512(src + 64 * k); };
      const auto rb = [r](size_t k) { return _mm512_loadu_si512(r + 16 * k); };
      _mm512_storeu_si512(dst, Fma::Encode64(t, x(0), x(1), x(2), x(3), rb(0), rb(1), rb(2),
                                             rb(3)));
    });
  }
#endif
  using Enc = Avx512StochasticEncodeF32<kTo, kSatFinite, kRelu>;
  constexpr bool kNarrow = internal::FastFormatOf(kTo).bits <= 8;
  constexpr size_t kG = kNarrow ? 64 : 32, kOut = kNarrow ? 1 : 2;
  const hn::Full512<uint32_t> du;
  const auto step = [du](const uint8_t* src, const uint32_t* r, uint8_t* dst) {
    const auto enc = [src, r](size_t k) {
      return hn::Vec512<uint32_t>{
          Enc::Encode(_mm512_loadu_si512(src + 64 * k), _mm512_loadu_si512(r + 16 * k))};
    };
    if constexpr (kNarrow) {
      StoreBytes4(du, enc(0), enc(1), enc(2), enc(3), dst);
    } else {
      StoreHalves2(du, enc(0), enc(1), dst);
    }
  };
  StochasticSteps<kG, kOut>(in, out, rbits, n, step);
}

template <Format kTo>
HWY_INLINE bool TryStochasticEncodeTo(const internal::ConvertParams& p, const uint8_t* in,
                                      uint8_t* out, const uint32_t* rbits, size_t n) {
  if (p.satfinite) {
    if (!p.relu) return StochasticEncodeArray<kTo, true, false>(in, out, rbits, n), true;
    if constexpr (internal::HasFastEncode(kTo, true, true)) {
      return StochasticEncodeArray<kTo, true, true>(in, out, rbits, n), true;
    }
    return false;
  }
  if constexpr (internal::HasFastEncode(kTo, false, false)) {
    if (!p.relu) return StochasticEncodeArray<kTo, false, false>(in, out, rbits, n), true;
    if constexpr (internal::HasFastEncode(kTo, false, true)) {
      return StochasticEncodeArray<kTo, false, true>(in, out, rbits, n), true;
    }
  }
  return false;
}

// f32 -> narrow / f16 / bf16 under rs; false for other policies.
HWY_INLINE bool TryStochasticEncode(const internal::ConvertParams& p, const uint8_t* in,
                                    uint8_t* out, const uint32_t* rbits, size_t n) {
  if (p.src != internal::SrcKind::kF32 || p.rounding != Rounding::kRS) return false;
  switch (p.to) {
    case Format::kE2M1: return TryStochasticEncodeTo<Format::kE2M1>(p, in, out, rbits, n);
    case Format::kE2M3: return TryStochasticEncodeTo<Format::kE2M3>(p, in, out, rbits, n);
    case Format::kE3M2: return TryStochasticEncodeTo<Format::kE3M2>(p, in, out, rbits, n);
    case Format::kE4M3: return TryStochasticEncodeTo<Format::kE4M3>(p, in, out, rbits, n);
    case Format::kE5M2: return TryStochasticEncodeTo<Format::kE5M2>(p, in, out, rbits, n);
    case Format::kUE4M3: return TryStochasticEncodeTo<Format::kUE4M3>(p, in, out, rbits, n);
    case Format::kF16: return TryStochasticEncodeTo<Format::kF16>(p, in, out, rbits, n);
    case Format::kBF16: return TryStochasticEncodeTo<Format::kBF16>(p, in, out, rbits, n);
    default: return false;
  }
}
#endif

// Runs a compile-time specialized kernel when one covers p: rn encodes from
// f32/f16/bf16 (both saturations where legal, with or without relu), and
// narrow decodes to f32/bf16/f16 (relu too where a table decoder exists), and
// exact f16/bf16 -> f32.
HWY_INLINE bool TryFastPath(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                            size_t n) {
  if (p.src == internal::SrcKind::kNarrow) {
    if (!p.exact) return false;
#if HWY_TARGET == HWY_AVX3_DL
    if (TryTableDecode16(p.from, p.to, p.relu, in, out, n)) return true;
#endif
    if (p.relu) return false;
    switch (p.from) {
      case Format::kE2M1: return TryFastDecode<Format::kE2M1>(p.to, in, out, n);
      case Format::kE2M3: return TryFastDecode<Format::kE2M3>(p.to, in, out, n);
      case Format::kE3M2: return TryFastDecode<Format::kE3M2>(p.to, in, out, n);
      case Format::kE4M3: return TryFastDecode<Format::kE4M3>(p.to, in, out, n);
      case Format::kE5M2: return TryFastDecode<Format::kE5M2>(p.to, in, out, n);
      case Format::kUE8M0: return TryFastDecode<Format::kUE8M0>(p.to, in, out, n);
      case Format::kUE4M3: return TryFastDecode<Format::kUE4M3>(p.to, in, out, n);
      default: return false;
    }
  }
  if (p.dst == internal::DstKind::kF32) {
    switch (p.src) {
      case internal::SrcKind::kF16:
        WidenToF32<internal::SrcKind::kF16>(p.relu, in, out, n);
        return true;
      case internal::SrcKind::kBF16:
        WidenToF32<internal::SrcKind::kBF16>(p.relu, in, out, n);
        return true;
      default: return false;
    }
  }
  if (p.dst == internal::DstKind::kUE8M0) {
    switch (p.src) {
      case internal::SrcKind::kF32: return TryUE8M0Encode<internal::SrcKind::kF32>(p, in, out, n);
      case internal::SrcKind::kF16: return TryUE8M0Encode<internal::SrcKind::kF16>(p, in, out, n);
      case internal::SrcKind::kBF16: return TryUE8M0Encode<internal::SrcKind::kBF16>(p, in, out, n);
      default: return false;
    }
  }
#ifdef MXPACK_HAVE_DIRECTED_ENCODE
  if (p.rounding != Rounding::kRN && p.rounding != Rounding::kRS) {
    return TryDirectedEncode(p, in, out, n);
  }
#endif
  if (p.rounding != Rounding::kRN) return false;
  switch (p.src) {
    case internal::SrcKind::kF32: return TryFastEncodeFrom<internal::SrcKind::kF32>(p, in, out, n);
    case internal::SrcKind::kF16: return TryFastEncodeFrom<internal::SrcKind::kF16>(p, in, out, n);
    case internal::SrcKind::kBF16: return TryFastEncodeFrom<internal::SrcKind::kBF16>(p, in, out, n);
    default: return false;
  }
}

// Per-target entry point (exported through HWY_EXPORT in convert.cc).
inline void ConvertArrayT(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                          const uint32_t* rbits, size_t n) {
#ifdef MXPACK_HAVE_DIRECTED_ENCODE
  if (TryStochasticEncode(p, in, out, rbits, n)) return;
#endif
  if (TryFastPath(p, in, out, n)) return;
  switch (p.rounding) {
    case Rounding::kRN: return ConvertLoopFrom<Rounding::kRN>(p, in, out, rbits, n);
    case Rounding::kRZ: return ConvertLoopFrom<Rounding::kRZ>(p, in, out, rbits, n);
    case Rounding::kRM: return ConvertLoopFrom<Rounding::kRM>(p, in, out, rbits, n);
    case Rounding::kRP: return ConvertLoopFrom<Rounding::kRP>(p, in, out, rbits, n);
    case Rounding::kRS: return ConvertLoopFrom<Rounding::kRS>(p, in, out, rbits, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_CONVERT_CONVERT_INL_H_
