// Differential fuzzer of the stack-exact block quantizers (compressed-tensors
// NVFP4 / MXFP4 / MXFP8, ModelOpt NVFP4 / MXFP8; docs/checkpoints.md): input
// bytes choose the stack arithmetic, the input dtype, the block count (short,
// ragged, around multiples of 16 and across the kernels' chunks), the tensor /
// global scale (the data's own, saturating, subnormal, huge, any significand),
// buffer offsets and the Highway target; the payload becomes the tensor, one
// header byte per block choosing its exponent window, and two bytes per
// element biased toward NaN, Inf, +-0, subnormals, e2m1 / e4m3 ties and their
// neighbours, and (NVFP4) elements next to their block's e2m1 decision
// boundaries. Every target must equal the scalar reference byte for byte
// (elements, scale codes and the bytes after them), and AbsMaxBits its
// contract.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"
#include "src/checkpoint/scheme.h"
#include "src/checkpoint/stack_blocks.h"

namespace {

using namespace mxpack;            // NOLINT: a fuzzer entry point, not a header
using namespace mxpack::internal;  // NOLINT

constexpr StackArith kAriths[] = {
    StackArith::kCtNvfp4, StackArith::kCtMxfp4, StackArith::kCtMxfp8,
    StackArith::kModelOptNvfp4, StackArith::kModelOptMxfp8};

constexpr EncodePolicy kRnNoSat = {Rounding::kRN, Saturation::kNoSat, false,
                                   OverflowTie::kEven};

// bf16 bit patterns met often in real tensors' corners: +-0, +-Inf, NaNs
// (quiet, signalling payload, negative), +-max finite, the smallest
// subnormal, the largest subnormal, the smallest normal.
constexpr uint16_t kSpecials[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0,
                                  0xFFC0, 0x7F81, 0x7F7F, 0xFF7F, 0x0001,
                                  0x8001, 0x007F, 0x0080, 0x80FF};

// The e2m1 rounding midpoints in units of amax / 6 (the block's exact scale
// when amax = 6 * 2^e), as bf16 significands: 0.25 0.75 1.25 1.75 2.5 3.5 5.
constexpr float kE2m1Ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};

// Block amax values that make the MX / NVFP4 scale exact or sit on
// round_to_power_2's 1.75 boundary, in units of 2^e.
constexpr float kTops[] = {6.0f,   7.0f, 1.75f, 448.0f,
                           256.0f, 4.0f, 1.5f,  1.71875f};

// Blocks per chunk of StackBlockQuantizer (stack_blocks-inl.h): NVFP4 16 KiB
// of input, MX 4 KiB.
size_t ChunkBlocks(StackArith a, size_t in_bytes) {
  const size_t block = StackBlockSize(a);
  return (block == 16 ? 16384 : 4096) / (block * in_bytes);
}

size_t InBytes(Format w) { return w == Format::kF32 ? 4 : 2; }

struct Payload {
  const uint8_t* p;
  size_t n;
  size_t i = 0;
  // The payload repeated (an empty one reads zeros).
  uint8_t Next() { return n == 0 ? 0 : p[i++ % n]; }
};

uint16_t Bf16Bits(float x) {
  return static_cast<uint16_t>(scalar::EncodeF32(x, Format::kBF16, kRnNoSat));
}

// One bf16 element of a block whose top binade has biased exponent `top`.
// Returns its bf16 bits, or a raw 16-bit pattern of w (*raw set).
uint16_t Element(Payload& pl, int top, bool* raw) {
  const uint8_t a = pl.Next(), b = pl.Next();
  *raw = false;
  const uint16_t sign = (b & 0x80) ? 0x8000 : 0;
  switch (a & 15) {
    case 0:
      return kSpecials[b % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
    case 1:
      *raw = true;
      return static_cast<uint16_t>(b << 8 | pl.Next());
    case 2: {
      // An e2m1 tie of a block whose amax is 6 * 2^e (top binade e + 2), or
      // a bf16 neighbour of it.
      const float t = kE2m1Ties[(a >> 4) % 7];
      const int e = top - 127 - 2;
      const uint16_t x = Bf16Bits(std::ldexp(t, e));
      return static_cast<uint16_t>((x + (b % 5) - 2) | sign);
    }
    case 3: {
      // An e4m3 midpoint (the fourth significand bit set) some binades
      // below the top (e4m3 subnormals of an MX scale), or a neighbour.
      const int e = top - static_cast<int>((a >> 4) % 12);
      if (e <= 0) return static_cast<uint16_t>(sign | (b & 0x7F));
      const uint16_t x = static_cast<uint16_t>(e << 7 | (2 * (b % 8) + 1) << 3);
      return static_cast<uint16_t>((x + ((b >> 3) % 3) - 1) | sign);
    }
    default: {
      // An ordinary element a few binades below the top, sometimes far.
      const int d = (a >> 4) == 15 ? 20 : (a >> 4) % 8;
      int e = top - d;
      if (e < 0) e = 0;
      if (e > 255) e = 255;
      return static_cast<uint16_t>(sign | e << 7 | (b & 0x7F));
    }
  }
}

// The tensor: nb blocks of w from the payload.
std::vector<uint8_t> MakeTensor(Format w, size_t block, size_t nb, int base,
                                Payload& pl) {
  std::vector<uint8_t> in;
  in.reserve(nb * block * InBytes(w));
  for (size_t g = 0; g < nb; ++g) {
    const uint8_t h = pl.Next();
    int top;
    switch (h & 7) {
      case 4:
        top = (h >> 3) % 12;  // subnormal and tiny blocks
        break;
      case 5:
        top = 254 - (h >> 3) % 8;  // huge blocks
        break;
      case 7:
        top = (h >> 3) * 8;  // anywhere
        break;
      default:
        top = base + static_cast<int>((h >> 3) % 13) - 6;  // the tensor's
    }
    if (top < 0) top = 0;
    if (top > 254) top = 254;
    for (size_t k = 0; k < block; ++k) {
      bool raw = false;
      uint16_t x = Element(pl, top, &raw);
      // h & 7 == 6: the first element pins amax at an exact / boundary top.
      if (k == 0 && (h & 7) == 6) {
        x = Bf16Bits(std::ldexp(kTops[(h >> 3) % 8], top - 127 - 2));
        if (h & 0x80) x |= 0x8000;
        raw = false;
      }
      if (w == Format::kBF16) {
        in.push_back(static_cast<uint8_t>(x));
        in.push_back(static_cast<uint8_t>(x >> 8));
      } else if (w == Format::kF16) {
        const uint32_t c =
            raw ? x
                : scalar::EncodeF32(scalar::F32FromBits(uint32_t{x} << 16),
                                    Format::kF16, kRnNoSat);
        in.push_back(static_cast<uint8_t>(c));
        in.push_back(static_cast<uint8_t>(c >> 8));
      } else {
        // f32: the bf16 value, sometimes with low bits (off the bf16 grid,
        // one f32 ulp above, just below the next bf16).
        const uint8_t c = pl.Next();
        uint32_t low = 0;
        if (c % 4 == 1) low = 1;
        if (c % 4 == 2) low = 0xFFFF;
        if (c % 4 == 3) low = uint32_t{c} << 8 | pl.Next();
        const uint32_t bits = uint32_t{x} << 16 | low;
        for (int s = 0; s < 32; s += 8)
          in.push_back(static_cast<uint8_t>(bits >> s));
      }
    }
  }
  return in;
}

// NVFP4: moves some elements of some blocks onto the decision boundaries of
// their block's scale code (as the scalar reference finds it): |x| next to
// m div for the e2m1 midpoints m and next to div 2^-150 (q = +-0), where div
// is the block's divisor, a few representable values either side. The
// block's largest element stays, so the code mostly does too.
void OntoBoundaries(const StackBlocksArgs& a, std::vector<uint8_t>& in,
                    size_t nb, Payload& pl) {
  static constexpr double kMids[8] = {0.25, 0.75, 1.25, 1.75,
                                      2.5,  3.5,  5.0,  0x1p-150};
  const size_t ib = InBytes(a.from);
  std::vector<uint8_t> el(nb * 8), sc(nb);
  QuantizeStackBlocksScalar(a, in.data(), nb, el.data(), sc.data());
  for (size_t g = 0; g < nb; ++g) {
    if (pl.Next() % 8 >= 3 || sc[g] >= 0x7F) continue;
    const double div = StackNvfp4Divisor(a.arith, a.tensor_scale, sc[g]);
    if (!(div > 0.0) || !std::isfinite(div)) continue;
    size_t top = 0;
    float amax = -1.0f;
    for (size_t k = 0; k < 16; ++k) {
      const float x = std::fabs(LoadAsF32(a.from, in.data(), g * 16 + k));
      if (x > amax) amax = x, top = k;
    }
    for (size_t k = 0; k < 16; ++k) {
      const uint8_t e = pl.Next();
      if (k == top || (e & 1)) continue;
      const float y = static_cast<float>(kMids[(e >> 1) % 8] * div);
      if (!std::isfinite(y)) continue;
      const int delta = (e >> 4) % 4 - 1;
      const bool neg = (e & 0x40) != 0;
      uint8_t* p = in.data() + (g * 16 + k) * ib;
      if (a.from == Format::kF32) {
        const uint32_t b = (scalar::F32Bits(y) + static_cast<uint32_t>(delta)) |
                           (neg ? 0x80000000u : 0u);
        for (size_t s = 0; s < 4; ++s)
          p[s] = static_cast<uint8_t>(b >> (8 * s));
      } else {
        const uint32_t c = a.from == Format::kBF16
                               ? scalar::F32Bits(y) >> 16
                               : scalar::EncodeF32(y, Format::kF16, kRnNoSat);
        const uint32_t b = ((c + static_cast<uint32_t>(delta)) & 0x7FFFu) |
                           (neg ? 0x8000u : 0u);
        p[0] = static_cast<uint8_t>(b);
        p[1] = static_cast<uint8_t>(b >> 8);
      }
    }
  }
}

size_t ChooseBlocks(uint8_t a, uint8_t b, size_t chunk) {
  switch (a % 4) {
    case 0:
      return b % 40;  // a few blocks, none included
    case 1:           // one or two chunks, +-17 blocks
      return (1 + size_t{a} / 4 % 2) * chunk + size_t{b} % 35 - 17;
    case 2: {  // multiples of 16 blocks (NVFP4 groups), +-2
      return 16 * (1 + size_t{a} / 4 % 40) + size_t{b} % 5 - 2;
    }
    default:
      return 1 + ((size_t{a} >> 2) << 8 | b) % (2 * chunk + 40);
  }
}

// The tensor (ct: global, ModelOpt: t) scale. ct takes finite >= 0 or +Inf
// (CtGlobalScale of a tensor holding Inf is 0; 1 / a subnormal amax
// overflows), ModelOpt a positive finite t.
float ChooseScale(StackArith arith, Format w, uint8_t mode, uint32_t u,
                  const std::vector<uint8_t>& in, size_t n) {
  const bool ct = arith == StackArith::kCtNvfp4;
  float s;
  switch (mode % 6) {
    case 0:
    case 1: {
      // The data's own scale, for mode 1 pushed so that block codes
      // saturate at 448 (ct: larger gs, ModelOpt: smaller t), by a power
      // of two or not.
      uint32_t bits = AbsMaxBitsScalar(w, in.data(), n);
      if (bits > 0x7F800000u) bits = 0x7F800000u;
      const float amax = scalar::F32FromBits(bits);
      s = ct ? CtGlobalScale(w, amax) : amax / 2688.0f;
      if (mode % 6 == 1) {
        float f = std::ldexp(1.0f, 1 + static_cast<int>(u % 10));
        if (u & 0x400) f *= 1.0f + static_cast<float>((u >> 11) & 0xFFF) / 4096;
        s = ct ? s * f : s / f;
      }
      break;
    }
    case 2:
      s = std::ldexp(1.0f, static_cast<int>(u % 277) - 149);
      break;
    case 3:
      s = std::ldexp(1.0f + static_cast<float>(u >> 9) * 0x1p-23f,
                     static_cast<int>((u & 0x1FF) % 277) - 149);
      break;
    case 4:
      s = scalar::F32FromBits(u & 0x7FFFFFFFu);
      break;
    default:
      s = scalar::F32FromBits(u & 0x7FFFFFu);  // subnormal (or 0)
  }
  if (std::isnan(s)) s = 1.0f;
  if (!ct && !(s > 0.0f)) s = scalar::F32FromBits(1);
  if (!ct && std::isinf(s)) s = 3.4028234663852886e38f;
  return s;
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t k = 0; k < n; ++k) {
    std::snprintf(buf, sizeof(buf), "%02x", p[k]);
    s += buf;
  }
  return s;
}

struct Case {
  StackBlocksArgs args;
  Impl impl;
  size_t nb, split;
  const uint8_t* in;
};

[[noreturn]] void Die(const Case& c, const char* what, size_t block,
                      size_t byte, unsigned want, unsigned got) {
  const size_t in_block = StackBlockSize(c.args.arith) * InBytes(c.args.from);
  std::fprintf(stderr,
               "stack_blocks_fuzz mismatch: %s arith=%s from=%s "
               "tensor_scale=%a (0x%08X) impl=%s nb=%zu split=%zu block=%zu "
               "byte=%zu expected=0x%02X got=0x%02X\n  block input: %s\n",
               what, StackArithName(c.args.arith),
               std::string(FormatName(c.args.from)).c_str(),
               static_cast<double>(c.args.tensor_scale),
               scalar::F32Bits(c.args.tensor_scale), ImplName(c.impl).c_str(),
               c.nb, c.split, block, byte, want, got,
               block < c.nb ? Hex(c.in + block * in_block, in_block).c_str()
                            : "(guard byte past the output)");
  std::abort();
}

// want and got each hold nb * per_block bytes and one guard byte.
void Same(const Case& c, const char* what, size_t per_block,
          const uint8_t* want, const uint8_t* got) {
  for (size_t i = 0; i <= c.nb * per_block; ++i) {
    if (want[i] != got[i]) {
      Die(c, what, i / per_block, i % per_block, want[i], got[i]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mxpack::fuzz::Reader r{data, size};
  const uint8_t h0 = r.Byte();
  const StackArith arith = kAriths[h0 % 5];
  const uint8_t fb = (h0 / 5) % 8;  // mostly bf16
  const Format from = fb == 0   ? Format::kF32
                      : fb == 1 ? Format::kF16
                                : Format::kBF16;
  const uint8_t nb_a = r.Byte(), nb_b = r.Byte();
  const uint8_t opts = r.Byte();
  uint32_t u = 0;
  for (int k = 0; k < 4; ++k) u |= uint32_t{r.Byte()} << (8 * k);
  const uint8_t hb = r.Byte();
  const std::vector<int64_t> targets = AvailableTargets();
  const Impl impl{targets[r.Byte() % targets.size()]};
  const uint8_t split_byte = r.Byte();

  const size_t block = StackBlockSize(arith);
  const size_t in_bytes = InBytes(from);
  const size_t nb = ChooseBlocks(nb_a, nb_b, ChunkBlocks(arith, in_bytes));
  // The tensor's exponent: f16 keeps to its range (normals from biased
  // 113, subnormals from 103), others mostly near 1, sometimes anywhere.
  const int base = from == Format::kF16 ? 102 + hb % 42
                   : (hb & 0x80)        ? (hb & 0x7F) * 2
                                        : 107 + (hb & 0x7F) % 40;
  Payload pl{r.p, r.n};
  std::vector<uint8_t> tensor = MakeTensor(from, block, nb, base, pl);

  Case c;
  c.args.arith = arith;
  c.args.from = from;
  c.args.tensor_scale =
      ChooseScale(arith, from, opts & 7, u, tensor, nb * block);
  if (block == 16) OntoBoundaries(c.args, tensor, nb, pl);
  c.impl = impl;
  c.nb = nb;
  // Sometimes the target quantizes in two calls (as the exporters do, one
  // slice of a tensor at a time), sharing the per-scale tables.
  c.split = (split_byte & 1) && nb > 1 ? 1 + (split_byte >> 1) % (nb - 1) : 0;

  // Unaligned buffers: the input at 0..6 bytes past an aligned start, the
  // outputs at 0..3.
  const size_t in_skew = 2 * ((opts >> 3) & 3), out_skew = (opts >> 5) & 3;
  std::vector<uint8_t> src(in_skew + tensor.size() + 1);
  std::copy(tensor.begin(), tensor.end(), src.begin() + in_skew);
  c.in = src.data() + in_skew;

  const size_t el_block = StackFp8(arith) ? block : block / 2;
  std::vector<uint8_t> want_el(nb * el_block + 1, 0xA5), want_sc(nb + 1, 0xA5);
  QuantizeStackBlocksScalar(c.args, c.in, nb, want_el.data(), want_sc.data());
  std::vector<uint8_t> el(out_skew + nb * el_block + 1, 0xA5),
      sc(out_skew + nb + 1, 0xA5);
  uint8_t* const got_el = el.data() + out_skew;
  uint8_t* const got_sc = sc.data() + out_skew;
  if (c.split == 0) {
    QuantizeStackBlocks(c.args, c.in, nb, got_el, got_sc, impl);
  } else {
    QuantizeStackBlocks(c.args, c.in, c.split, got_el, got_sc, impl);
    QuantizeStackBlocks(c.args, c.in + c.split * block * in_bytes, nb - c.split,
                        got_el + c.split * el_block, got_sc + c.split, impl);
  }
  Same(c, "scale", 1, want_sc.data(), got_sc);
  Same(c, "elements", el_block, want_el.data(), got_el);

  // AbsMaxBits over the tensor, sometimes a ragged prefix of it: equal
  // where all are finite, both >= Inf's bits otherwise (its contract leaves
  // which NaN or Inf pattern open).
  const size_t n = nb * block - (nb > 0 ? (split_byte >> 4) % block : 0);
  const uint32_t want_amax = AbsMaxBitsScalar(from, c.in, n);
  const uint32_t got_amax = AbsMaxBits(from, c.in, n, impl);
  constexpr uint32_t kInf = 0x7F800000u;
  if (want_amax >= kInf ? got_amax < kInf : want_amax != got_amax) {
    std::fprintf(stderr,
                 "stack_blocks_fuzz mismatch: AbsMaxBits from=%s n=%zu "
                 "impl=%s expected=0x%08X got=0x%08X\n",
                 std::string(FormatName(from)).c_str(), n,
                 ImplName(impl).c_str(), want_amax, got_amax);
    std::abort();
  }
  return 0;
}
