// Every SIMD target of the stack-exact block quantizers (compressed-tensors
// NVFP4 / MXFP4 / MXFP8, ModelOpt NVFP4) and of AbsMaxBits equals the scalar
// reference, for f32, bf16 and f16 inputs: structured blocks aimed at each
// rule (zeros, subnormals, e2m1 / e4m3 ties and their neighbours after an
// exact scale, amax at powers of two and at significands around 1.75, huge
// and tiny blocks, scales that overflow or underflow w, Inf, NaN) and random
// bit patterns, over ragged lengths and unaligned buffers.
#include "src/checkpoint/stack_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"

namespace mxpack::internal {
namespace {

constexpr EncodePolicy kRnNoSat = {Rounding::kRN, Saturation::kNoSat, false,
                                   OverflowTie::kEven};

size_t InBytes(Format w) { return w == Format::kF32 ? 4 : 2; }

// Appends x rounded to w (rn, Inf kept) as little-endian bytes.
void Put(Format w, float x, std::vector<uint8_t>& out) {
  if (w == Format::kF32) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    for (int k = 0; k < 4; ++k)
      out.push_back(static_cast<uint8_t>(b >> (8 * k)));
    return;
  }
  const uint32_t c = scalar::EncodeF32(x, w, kRnNoSat);
  out.push_back(static_cast<uint8_t>(c));
  out.push_back(static_cast<uint8_t>(c >> 8));
}

// A raw code of w (any bit pattern: NaN payloads, subnormals, Inf).
void PutBits(Format w, uint32_t bits, std::vector<uint8_t>& out) {
  for (size_t k = 0; k < InBytes(w); ++k)
    out.push_back(static_cast<uint8_t>(bits >> (8 * k)));
}

float Pow2(int k) { return std::ldexp(1.0f, k); }

// Blocks of `block` elements: each structured pattern over a range of
// exponents, then random ones.
std::vector<uint8_t> Blocks(Format w, size_t block, uint32_t seed,
                            size_t random_blocks) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> in;
  const auto emit = [&](const std::vector<float>& v) {
    for (size_t k = 0; k < block; ++k) Put(w, v[k % v.size()], in);
  };
  // The e2m1 magnitudes, their ties and the neighbours of the ties.
  const float e2m1_ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const float e2m1[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  emit({0.0f});
  emit({-0.0f});
  emit({0.0f, -0.0f, 0.0f, 0.0f});
  for (int e = -149; e <= 127; e += (e > -20 && e < 20) ? 1 : 7) {
    // Exact scales (MX: amax 6 * 2^e gives scale 2^e for e2m1 and 256 * 2^e
    // for e4m3; NVFP4 with tensor scale 1: amax 6 d gives scale d): ties
    // and their neighbours, signed.
    for (float top : {6.0f, 256.0f, 448.0f, 7.0f, 1.75f, 1.5f, 1.0f, 3.5f}) {
      std::vector<float> v = {top * Pow2(e)};
      for (float t : e2m1_ties) {
        const float x = t * Pow2(e);
        v.push_back(x);
        v.push_back(-std::nextafter(x, 0.0f));
        v.push_back(std::nextafter(x, 1e30f));
      }
      for (float t : e2m1) v.push_back(-t * Pow2(e));
      emit(v);
    }
    // e4m3 ties after a scale of 2^e: midpoints of the e4m3 grid.
    {
      std::vector<float> v = {256.0f * Pow2(e)};
      for (int m = 0; m < 16; ++m) {
        v.push_back((1.0f + static_cast<float>(2 * (m % 8) + 1) / 16.0f) *
                    Pow2(e + m / 2 - 3));
        v.push_back(-(static_cast<float>(m) + 0.5f) *
                    Pow2(e - 9));  // subnormal midpoints
      }
      emit(v);
    }
    // ModelOpt MXFP8: amax / 448 a few ulps above a power of two, where
    // log2 rounded to f32 decides the ceiling (f32 inputs keep them).
    for (int k : {1, 2, 5, 21, 22, 23, 40, 64, 65, 100}) {
      emit({448.0f * Pow2(e) * (1.0f + static_cast<float>(k) * 0x1p-23f),
            -0.5f * Pow2(e)});
    }
    // Significands around 1.75 (round_to_power_2 rounds up at 1.75).
    for (float sig : {1.75f, std::nextafter(1.75f, 0.0f),
                      std::nextafter(1.75f, 2.0f), 1.999f, 1.0f, 1.5f}) {
      emit({sig * Pow2(e), 0.1f * Pow2(e), -0.3f * Pow2(e)});
    }
  }
  // MX from bf16 / f16: q = x / 2^e below f32's normal range is rounded to
  // w, so elements around 2^(e - 134) (half of bf16's smallest subnormal
  // after the scale) decide between the nibbles 0 and 0x8.
  for (int e = -12; e <= 14; ++e) {
    std::vector<float> v = {6.0f * Pow2(e)};
    for (int d : {-136, -135, -134, -133, -132}) {
      for (float m : {1.0f, 1.25f, 1.5f, 1.75f}) {
        v.push_back(-m * std::ldexp(1.0f, e + d));
        v.push_back(m * std::ldexp(1.0f, e + d));
      }
    }
    emit(v);
  }
  // Tiny, huge and special blocks.
  emit({std::numeric_limits<float>::denorm_min(), -1e-45f, 1e-40f});
  emit({1e-38f, -3e-39f, 1e-44f, 0.0f});
  emit({65504.0f, -65504.0f, 60000.0f,
        1.0f});  // f16 max: MX scale rounds to Inf
  emit({65520.0f, 1.0f});
  emit({3.0e38f, -1.0f, 2.0f});
  emit({std::numeric_limits<float>::max(), 1.0f});
  emit({6.0e-8f, -3.0e-8f, 1.0e-5f});  // f16 subnormals
  emit({INFINITY, 1.0f, -2.0f});
  emit({-INFINITY, 0.5f});
  emit({NAN, 1.0f, -3.0f});
  emit({-NAN, 0.0f});
  emit({NAN});
  emit({INFINITY, NAN, -INFINITY});
  // Random: values with a random block exponent, and raw bit patterns.
  std::normal_distribution<float> normal;
  for (size_t b = 0; b < random_blocks; ++b) {
    const int e = static_cast<int>(rng() % 300) - 160;
    if (b % 3 == 0) {
      for (size_t k = 0; k < block; ++k) {
        const uint32_t r = static_cast<uint32_t>(rng());
        PutBits(w, w == Format::kF32 ? r : r & 0xFFFF, in);
      }
    } else {
      for (size_t k = 0; k < block; ++k) Put(w, normal(rng) * Pow2(e), in);
    }
  }
  return in;
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t k = 0; k < n; ++k) s += absl::StrFormat("%02x", p[k]);
  return s;
}

// bf16 input with the global / tensor scale of a tensor amax of 0.1.
StackBlocksArgs Bf16ArgsOfAmaxTenth(StackArith arith) {
  StackBlocksArgs a;
  a.arith = arith;
  a.from = Format::kBF16;
  a.tensor_scale = arith == StackArith::kCtNvfp4
                       ? CtGlobalScale(Format::kBF16, 0.1f)
                       : 0.1f / 2688.0f;
  return a;
}

// Runs every target on `nb` blocks of `in` at byte offset `skew` and
// compares elements, scales and the guard bytes after them.
void Check(const StackBlocksArgs& a, const std::vector<uint8_t>& in, size_t nb,
           const std::string& what) {
  const size_t block = StackBlockSize(a.arith);
  const size_t el_block = StackFp8(a.arith) ? block : block / 2;
  const size_t in_block = block * InBytes(a.from);
  std::vector<uint8_t> want_el(nb * el_block + 1, 0xA5), want_sc(nb + 1, 0xA5);
  QuantizeStackBlocksScalar(a, in.data(), nb, want_el.data(), want_sc.data());
  for (size_t skew : {0, 2, 4}) {
    std::vector<uint8_t> src(skew + nb * in_block);
    std::memcpy(src.data() + skew, in.data(), nb * in_block);
    for (int64_t target : AvailableTargets()) {
      std::vector<uint8_t> el(nb * el_block + 1 + skew, 0xA5),
          sc(nb + 1 + skew, 0xA5);
      QuantizeStackBlocks(a, src.data() + skew, nb, el.data() + skew,
                          sc.data() + skew, Impl{target});
      for (size_t b = 0; b <= nb; ++b) {
        const bool guard = b == nb;
        const size_t n_el = guard ? 1 : el_block;
        if (sc[skew + b] != want_sc[b] ||
            std::memcmp(el.data() + skew + b * el_block,
                        want_el.data() + b * el_block, n_el) != 0) {
          FAIL() << what << " " << ImplName(Impl{target}) << " skew " << skew
                 << " block " << b << (guard ? " (guard byte)" : "")
                 << " input "
                 << (guard ? "-" : Hex(in.data() + b * in_block, in_block))
                 << "\n scale want " << absl::StrFormat("%02x", want_sc[b])
                 << " got " << absl::StrFormat("%02x", sc[skew + b])
                 << "\n elements want "
                 << Hex(want_el.data() + b * el_block, n_el)
                 << "\n elements got  "
                 << Hex(el.data() + skew + b * el_block, n_el);
        }
      }
    }
  }
}

TEST(StackBlocks, EveryTargetEqualsScalar) {
  ASSERT_FALSE(AvailableTargets().empty());
  const StackArith ariths[] = {StackArith::kCtNvfp4, StackArith::kCtMxfp4,
                               StackArith::kCtMxfp8, StackArith::kModelOptNvfp4,
                               StackArith::kModelOptMxfp8};
  uint32_t seed = 1;
  for (StackArith arith : ariths) {
    for (Format w : {Format::kF32, Format::kBF16, Format::kF16}) {
      const size_t block = StackBlockSize(arith);
      const std::vector<uint8_t> in = Blocks(w, block, seed++, 700);
      const size_t nb = in.size() / (block * InBytes(w));
      // NVFP4 tensor scales: exact (1, powers of two), realistic global
      // scales, extremes, and 0 (the compressed-tensors global scale of a
      // tensor holding Inf).
      std::vector<float> scales = {1.0f};
      if (StackBlockSize(arith) == 16) {
        for (float amax :
             {1.0f, 0.02f, 448.0f, 65504.0f, 3e-5f, 1e-38f, 3e38f}) {
          scales.push_back(arith == StackArith::kCtNvfp4
                               ? CtGlobalScale(w, amax)
                               : amax / 2688.0f);
        }
        for (float s : {0.25f, 1024.0f, 1e-30f, 1e30f, 0.3f})
          scales.push_back(s);
        // Divisors whose element thresholds are bf16 subnormals, a few
        // values apart (too close for the bucket tables) or just far
        // enough.
        for (float s : {3e-40f, 1e-41f, 2e-39f, 7e-42f, 4e-43f, 9e-39f})
          scales.push_back(arith == StackArith::kCtNvfp4 ? 1.0f / s : s);
        if (arith == StackArith::kCtNvfp4) scales.push_back(0.0f);
      }
      for (float s : scales) {
        StackBlocksArgs a;
        a.arith = arith;
        a.from = w;
        a.tensor_scale = s;
        const std::string what = absl::StrFormat(
            "%s from %s scale %a", StackArithName(arith), FormatName(w), s);
        // The whole input (several chunks and a ragged last one), and short
        // runs from the start.
        Check(a, in, nb, what);
        for (size_t n : {1, 2, 3, 5, 17}) Check(a, in, n, what);
        if (HasFailure()) return;
      }
    }
  }
}

// NVFP4 from bf16 decides each element by comparing |x| with thresholds
// derived from the f32 rounding boundaries next to the e2m1 midpoints m
// (m +- half an ulp). Inputs whose quotient x / div falls within an ulp of
// a midpoint are rare for random scales, so each case here picks a bf16 x
// and a divisor div with x / div at m + k ulp / 4 (k = -3..3: both sides
// of both boundaries, and m itself), then the tensor scale that makes the
// stack compute exactly that div, and a block amax that gives the scale
// code d.
TEST(StackBlocks, Nvfp4Bf16QuotientsAtRoundingBoundaries) {
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const float ds[] = {0.5f, 1.0f, 1.375f, 3.0f, 96.0f};
  std::mt19937 rng(11);
  size_t cases = 0;
  for (StackArith arith : {StackArith::kCtNvfp4, StackArith::kModelOptNvfp4}) {
    const bool ct = arith == StackArith::kCtNvfp4;
    for (float d : ds) {
      for (float m : mids) {
        const double ulp = std::ldexp(1.0, std::ilogb(m) - 23);
        for (int k = -3; k <= 3; ++k) {
          const double target = m + k * ulp / 4;
          for (int trial = 0; trial < 12; ++trial) {
            // x: a bf16 with a random significand, about m * d / 2^e.
            const float xf = scalar::DecodeToF32(
                Format::kBF16,
                scalar::EncodeF32(
                    m * d * (1.0f + static_cast<float>(rng() % 128) / 256.0f),
                    Format::kBF16, kRnNoSat));
            const float div = static_cast<float>(xf / target);
            const double q = static_cast<double>(xf) / div;
            // Keep the cases that land within a quarter ulp of the target.
            if (std::fabs(q - target) > ulp / 8) continue;
            // The tensor scale whose f32 arithmetic gives exactly div.
            float ts = ct ? d / div : div / d;
            bool found = false;
            for (int step = 0; step < 8 && !found; ++step) {
              const float got = ct ? d / ts : d * ts;
              if (got == div) {
                found = true;
              } else {
                ts = std::nextafter(ts, (got < div) == ct ? 0.0f : 1e30f);
              }
            }
            if (!found) continue;
            // amax: a bf16 whose block scale code decodes to d.
            const float amax = ct ? 6.0f * d / ts : 6.0f * d * ts;
            std::vector<uint8_t> in;
            const uint16_t xb = static_cast<uint16_t>(
                scalar::EncodeF32(xf, Format::kBF16, kRnNoSat));
            for (int blk = 0; blk < 4; ++blk) {
              Put(Format::kBF16, blk % 2 ? -amax : amax, in);
              for (int e = 1; e < 16; ++e) {
                const int off = (e % 5) - 2;  // x and its bf16 neighbours
                const uint16_t b = static_cast<uint16_t>(xb + off);
                PutBits(Format::kBF16,
                        static_cast<uint32_t>(e % 2 ? b | 0x8000 : b), in);
              }
            }
            StackBlocksArgs a;
            a.arith = arith;
            a.from = Format::kBF16;
            a.tensor_scale = ts;
            ++cases;
            Check(a, in, 4,
                  absl::StrFormat("%s bf16 scale %a x %a div %a target %.9g",
                                  StackArithName(arith), ts, xf, div, target));
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 200u);
}

// NVFP4 from bf16 under many tensor scales (log-uniform, 2^-120..2^120):
// each scale code's thresholds and bucket table are built per call.
TEST(StackBlocks, Nvfp4Bf16RandomTensorScales) {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal;
  for (StackArith arith : {StackArith::kCtNvfp4, StackArith::kModelOptNvfp4}) {
    for (int trial = 0; trial < 300; ++trial) {
      const float ts =
          std::ldexp(1.0f + static_cast<float>(rng() % 4096) / 4096.0f,
                     static_cast<int>(rng() % 240) - 120);
      std::vector<uint8_t> in;
      for (int b = 0; b < 40; ++b) {
        // Block magnitudes around the ones that give mid-range scale codes.
        const float mag = (arith == StackArith::kCtNvfp4 ? 1.0f / ts : ts) *
                          std::ldexp(1.0f, static_cast<int>(rng() % 24) - 12);
        for (int k = 0; k < 16; ++k) {
          if (b % 8 == 7) {
            PutBits(Format::kBF16, static_cast<uint32_t>(rng()) & 0xFFFF, in);
          } else {
            Put(Format::kBF16, normal(rng) * mag, in);
          }
        }
      }
      StackBlocksArgs a;
      a.arith = arith;
      a.from = Format::kBF16;
      a.tensor_scale = ts;
      Check(a, in, 40,
            absl::StrFormat("%s bf16 scale %a", StackArithName(arith), ts));
      if (HasFailure()) return;
    }
  }
}

// NVFP4 from bf16: ordinary chunks (every block's scale code in the normal
// range, the tensor scale of the data) with a NaN of either sign, or the
// largest finite bf16, in a few blocks at either position of a pair.
TEST(StackBlocks, Nvfp4Bf16NanInOrdinaryChunks) {
  std::mt19937 rng(41);
  std::normal_distribution<float> normal;
  for (StackArith arith : {StackArith::kCtNvfp4, StackArith::kModelOptNvfp4}) {
    for (int trial = 0; trial < 24; ++trial) {
      const size_t nb = 128 * 3 + (trial % 3) * 5;
      std::vector<uint8_t> in;
      for (size_t b = 0; b < nb; ++b) {
        for (int k = 0; k < 16; ++k)
          Put(Format::kBF16, normal(rng) * 0.02f, in);
      }
      for (int n = 0; n < 1 + trial % 4; ++n) {
        const size_t b = rng() % nb, k = rng() % 16;
        const uint32_t special =
            trial % 8 == 7 ? 0x7F7F
                           : 0x7F81 + static_cast<uint32_t>(rng() % 127);
        PutBits(Format::kBF16, special | (rng() % 2 ? 0x8000u : 0u), in);
        std::memcpy(in.data() + (b * 16 + k) * 2, in.data() + in.size() - 2, 2);
        in.resize(in.size() - 2);
      }
      Check(Bf16ArgsOfAmaxTenth(arith), in, nb,
            absl::StrFormat("%s bf16 trial %d", StackArithName(arith), trial));
      if (HasFailure()) return;
    }
  }
}

// NVFP4 from bf16: ordinary data in which some groups of 16 blocks (the
// unit in which the fast path picks its bucket tables' form) hold a block
// whose scale code saturates at 448 (a large element or Inf) or a NaN, at
// the first, the last or a random block of the group: every run of clean
// groups before, between and after them, within one chunk and across the
// chunk boundary, and a ragged tail.
TEST(StackBlocks, Nvfp4Bf16SaturatedAndNanGroups) {
  std::mt19937 rng(57);
  std::normal_distribution<float> normal;
  const uint32_t specials[] = {
      0x3F00 /* 0.5: code saturates */, 0xC100, 0x7F80, 0xFF7F, 0x7FC0, 0xFFC1};
  for (StackArith arith : {StackArith::kCtNvfp4, StackArith::kModelOptNvfp4}) {
    for (size_t nb :
         {size_t{16 * 10 + 6}, size_t{16 * 40}, size_t{16 * 37 + 3}}) {
      const size_t groups = nb / 16;
      for (int trial = 0; trial < 12; ++trial) {
        std::vector<uint8_t> in;
        for (size_t b = 0; b < nb * 16; ++b)
          Put(Format::kBF16, normal(rng) * 0.02f, in);
        // Which full groups get a special block.
        std::vector<bool> dirty(groups, false);
        switch (trial % 6) {
          case 0:
            dirty[0] = true;
            break;
          case 1:
            dirty[groups - 1] = true;
            break;
          case 2:
            for (size_t g = 0; g < groups; g += 2) dirty[g] = true;
            break;
          case 3:
            for (size_t g = 1; g < groups; g += 3)
              dirty[g] = dirty[g - 1] = true;
            break;
          case 4:
            for (size_t g = groups / 3; g < 2 * groups / 3; ++g)
              dirty[g] = true;
            break;
          default:
            for (size_t g = 0; g < groups; ++g) dirty[g] = rng() % 5 == 0;
        }
        for (size_t g = 0; g < groups; ++g) {
          if (!dirty[g]) continue;
          const size_t pos = g % 3 == 0 ? 0 : g % 3 == 1 ? 15 : rng() % 16;
          const size_t at = ((16 * g + pos) * 16 + rng() % 16) * 2;
          const uint32_t bits = specials[(g + static_cast<size_t>(trial)) % 6];
          in[at] = static_cast<uint8_t>(bits);
          in[at + 1] = static_cast<uint8_t>(bits >> 8);
        }
        Check(Bf16ArgsOfAmaxTenth(arith), in, nb,
              absl::StrFormat("%s bf16 %zu blocks trial %d",
                              StackArithName(arith), nb, trial));
        if (HasFailure()) return;
      }
    }
  }
}

// NVFP4 from bf16 under every block amax: block p holds the bf16 magnitude
// p (0 .. 0x7F80: zero, subnormals, normals, Inf) with sign, and smaller
// elements, so that the scale code of every amax is met for tensor scales
// across the range: the fast paths find most codes from a table of one
// binade (8 codes per binade of amax), valid from a bound on amax and down
// to code 8, and take the exact arithmetic elsewhere (and for every block
// where no binade's intermediates are all normal).
TEST(StackBlocks, Nvfp4Bf16EveryAmax) {
  std::vector<uint8_t> in;
  size_t nb = 0;
  for (uint32_t p = 0; p <= 0x7F80; ++p, ++nb) {
    for (uint32_t k = 0; k < 16; ++k) {
      uint32_t b = p;
      if (k != p % 16) b = p == 0 ? 0 : (p * 7 + k * 331) % p;
      if (k % 3 == 1) b |= 0x8000;
      PutBits(Format::kBF16, b, in);
    }
  }
  for (StackArith arith : {StackArith::kCtNvfp4, StackArith::kModelOptNvfp4}) {
    const bool ct = arith == StackArith::kCtNvfp4;
    // Tensor scales of realistic tensors, extremes (the table's binade
    // clamped at either end, or none usable), and random significands.
    std::vector<float> scales;
    for (float amax :
         {0.1f, 1.0f, 3e-5f, 448.0f, 65504.0f, 1e-38f, 3e38f, 1e-30f, 1e30f}) {
      scales.push_back(ct ? CtGlobalScale(Format::kBF16, amax)
                          : amax / 2688.0f);
    }
    for (float s : {1e-40f, 3e-44f, 1e37f, 3.4e38f, 0.37f, 1.7f})
      scales.push_back(s);
    for (float s : scales) {
      StackBlocksArgs a;
      a.arith = arith;
      a.from = Format::kBF16;
      a.tensor_scale = s;
      Check(a, in, nb,
            absl::StrFormat("%s bf16 every amax scale %a",
                            StackArithName(arith), s));
      if (HasFailure()) return;
    }
  }
}

// MX from bf16, one block per amax bit pattern p (0 .. 0x7F80: zero,
// subnormals, normals, Inf; then NaN) with sign, and smaller elements, so
// that the scale code of every amax is met: ModelOpt's code comes from the
// bits of a bf16 amax without the division where amax is a normal of
// exponent field 10 or more (the descale amax / 448 is then normal and no
// power of two but for significand 1.75), and from the division elsewhere.
TEST(StackBlocks, MxBf16EveryAmax) {
  std::vector<uint8_t> in;
  size_t nb = 0;
  for (uint32_t p = 0; p <= 0x7F81; ++p, ++nb) {
    for (uint32_t k = 0; k < 32; ++k) {
      uint32_t b = p;
      if (k != p % 32)
        b = p == 0 ? 0 : (p * 7 + k * 331) % std::min(p, 0x7F80u);
      if (k % 3 == 1) b |= 0x8000;
      PutBits(Format::kBF16, b, in);
    }
  }
  for (StackArith arith : {StackArith::kCtMxfp4, StackArith::kCtMxfp8,
                           StackArith::kModelOptMxfp8}) {
    StackBlocksArgs a;
    a.arith = arith;
    a.from = Format::kBF16;
    Check(a, in, nb,
          absl::StrFormat("%s bf16 every amax", StackArithName(arith)));
    if (HasFailure()) return;
  }
}

// MX from bf16 under every scale exponent s (block amax top * 2^e), so that
// the edges of each fast path's range of s are met: elements at each bf16
// exponent down to the subnormals (e4m3 / e2m1 normal and subnormal codes
// after the scale, and those flushed to zero), +-0, the largest finite
// bf16, Inf and NaN. The fast paths take blocks in pairs: a NaN block sits
// next to an ordinary one on either side.
TEST(StackBlocks, MxBf16EveryScaleExponent) {
  std::mt19937 rng(31);
  for (StackArith arith : {StackArith::kCtMxfp4, StackArith::kCtMxfp8,
                           StackArith::kModelOptMxfp8}) {
    std::vector<uint8_t> in;
    size_t nb = 0;
    for (int e = -150; e <= 130; ++e) {
      for (float top : {256.0f, 448.0f, 6.0f, 7.0f, 480.0f}) {
        // Variants: 0, 3, 7 ordinary (within 8 binades of the top); 1, 2
        // one NaN; 4 the largest finite bf16; 5 Inf; 6 down to the
        // subnormals and zero.
        for (int variant = 0; variant < 8; ++variant) {
          const uint16_t top_bits = static_cast<uint16_t>(
              scalar::EncodeF32(top * Pow2(e), Format::kBF16, kRnNoSat));
          PutBits(Format::kBF16, top_bits, in);
          for (int k = 1; k < 32; ++k) {
            const uint32_t drop = static_cast<uint32_t>(
                rng() % (variant == 6 ? 0x7F80u : 8u * 128));
            uint32_t b = top_bits > drop ? top_bits - drop
                                         : static_cast<uint32_t>(rng() % 4);
            if (k % 7 == 0) b = 0;
            // (Specials only for every fourth e: MXFP4 takes 16 blocks at
            // a time where all their scales are in range.)
            const bool special = e % 4 == 0;
            if (special && variant == 4 && k == 5) b = 0x7F7F;  // largest
            if (special && variant == 5 && k == 9) b = 0x7F80;  // Inf
            if (special && (variant == 1 || variant == 2) && k == 11) {
              b = 0x7FC1;  // NaN
            }
            PutBits(Format::kBF16, b | (rng() % 2 ? 0x8000u : 0u), in);
          }
          ++nb;
        }
      }
      // MXFP8 scale 2^e for amax 256 * 2^e: pairs of an ordinary block and
      // one whose lane 1 is y = |x| / 2^e at k bf16 codes below e4m3's
      // smallest normal 2^-6 (bits 0x3C80), or k - 1 at or above it.
      const uint32_t top_bits =
          scalar::EncodeF32(256.0f * Pow2(e), Format::kBF16, kRnNoSat);
      if (top_bits < 0x800 || top_bits >= 0x7F80) continue;
      for (uint32_t k = 1; k <= 64; k += k < 12 ? 1 : 13) {
        for (int side = 0; side < 2; ++side) {
          for (int blk = 0; blk < 2; ++blk) {
            PutBits(Format::kBF16, top_bits, in);
            for (int j = 1; j < 32; ++j) {
              uint32_t b = top_bits - static_cast<uint32_t>(rng() % 512);
              if (j == 1 && blk == side) {
                b = side == 0 ? top_bits - 0x700 - k : top_bits - 0x700 + k - 1;
              }
              PutBits(Format::kBF16, b | (rng() % 2 ? 0x8000u : 0u), in);
            }
            ++nb;
          }
        }
      }
    }
    StackBlocksArgs a;
    a.arith = arith;
    a.from = Format::kBF16;
    Check(a, in, nb,
          absl::StrFormat("%s bf16 every exponent", StackArithName(arith)));
    if (HasFailure()) return;
  }
}

TEST(StackBlocks, AbsMaxBitsEveryTarget) {
  std::mt19937 rng(7);
  for (Format w : {Format::kF32, Format::kBF16, Format::kF16}) {
    for (size_t n = 0; n <= 200; n += (n < 70 ? 1 : 13)) {
      for (int kind = 0; kind < 4; ++kind) {
        std::vector<uint8_t> in;
        for (size_t i = 0; i < n; ++i) {
          const uint32_t r = static_cast<uint32_t>(rng());
          if (kind == 0) {
            Put(w,
                std::ldexp(static_cast<float>(r % 1000) - 500.0f,
                           static_cast<int>(r >> 24) % 40 - 20),
                in);
          } else if (kind == 1) {
            PutBits(w, w == Format::kF32 ? r : r & 0xFFFF, in);
          } else {
            // One Inf (kind 2) or NaN (kind 3) at a random place.
            const bool special = i == r % n;
            Put(w,
                special ? (kind == 2 ? -INFINITY : NAN)
                        : 1e-3f * static_cast<float>(r % 97),
                in);
          }
        }
        const uint32_t want = AbsMaxBitsScalar(w, in.data(), n);
        for (int64_t target : AvailableTargets()) {
          const uint32_t got = AbsMaxBits(w, in.data(), n, Impl{target});
          const bool finite = want < 0x7F800000u;
          if (finite ? got != want : got < 0x7F800000u) {
            FAIL() << FormatName(w) << " n " << n << " kind " << kind << " "
                   << ImplName(Impl{target})
                   << absl::StrFormat(": want %08x got %08x", want, got);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace mxpack::internal
