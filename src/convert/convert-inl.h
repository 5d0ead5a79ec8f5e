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

#include "hwy/highway.h"
#include "src/format/codec-inl.h"
#include "src/format/convert_params.h"
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

#ifdef MXPACK_HAVE_F16C_ENCODE
// f32/f16 -> narrow through EncodeStep4's F16C path. Call under
// internal::ScopedFlushDenormals; not inlined so no FP work moves across the MXCSR
// writes.
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
HWY_NOINLINE void F16cEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out,
                                  size_t n) {
  using Step = EncodeStep4<kSrc, kTo, kSatFinite, kRelu>;
  const hn::ScalableTag<uint32_t> du;
  const hn::Repartition<uint8_t, decltype(du)> d8;
  ForEachStep<Step::kIn, 1, 4>(du, in, out, n, [du, d8](const uint8_t* src, uint8_t* dst) {
    hn::StoreU(Step::Codes(du, src), d8, dst);
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

// f32/f16/bf16 -> kTo (rn, compile-time saturation and relu).
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
void FastEncodeArray(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t n) {
  using Src = WideSource<kSrc>;
  using Enc = FastEncodeF32<kTo, kSatFinite, kRelu>;
  const hn::ScalableTag<uint32_t> du;
  const size_t N = hn::Lanes(du);
  constexpr size_t kIn = Src::kBytes;
#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
  // AVX512-FP16 CPUs: one f16 rounding (Fp16EncodeHalf) for every source
  // but f32 into RangeEncodeF32's formats (fewer operations; F16cEncodeArray).
  if constexpr (kSatFinite && Fp16EncodeHalf<kTo, kRelu, false>::kSupported &&
                !EncodeStep4<kSrc, kTo, kSatFinite, kRelu>::kRange) {
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

// Runs a compile-time specialized kernel when one covers p: rn encodes from
// f32/f16/bf16 (both saturations where legal, with or without relu), and
// relu-free narrow decodes to f32/bf16/f16.
HWY_INLINE bool TryFastPath(const internal::ConvertParams& p, const uint8_t* in, uint8_t* out,
                            size_t n) {
  if (p.src == internal::SrcKind::kNarrow) {
    if (!p.exact || p.relu) return false;
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
