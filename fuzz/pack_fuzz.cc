// Differential fuzzer of the packed layouts: input bytes choose the operation,
// layout, element formats, length, buffer offset and Highway target; every
// target must equal the scalar reference and round trips must hold.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "mxpack/dispatch.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"

namespace {

using mxpack::Impl;
using mxpack::Layout;

[[noreturn]] void Die(const char* what, const char* impl, size_t i, unsigned want,
                      unsigned got) {
  std::fprintf(stderr, "pack_fuzz mismatch: %s impl=%s index=%zu expected=0x%02X got=0x%02X\n",
               what, impl, i, want, got);
  std::abort();
}

void Same(const char* what, Impl impl, const uint8_t* want, const uint8_t* got, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (want[i] != got[i]) Die(what, mxpack::ImplName(impl).c_str(), i, want[i], got[i]);
  }
}

void SameStatus(const char* what, Impl impl, const absl::Status& a, const absl::Status& b) {
  if (a.ok() != b.ok() || a.message() != b.message()) {
    std::fprintf(stderr, "pack_fuzz status mismatch: %s impl=%s scalar='%s' simd='%s'\n", what,
                 mxpack::ImplName(impl).c_str(), a.ToString().c_str(), b.ToString().c_str());
    std::abort();
  }
}

using mxpack::fuzz::Reader;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const int op = r.Byte() % 5;
  const Layout l = static_cast<Layout>(r.Byte() % 4);
  const int bits = mxpack::LayoutElementBits(l);
  const Layout padded = bits == 4 ? Layout::kB4x16P64 : Layout::kB6x16P32;
  const mxpack::Fp6Container c =
      (r.Byte() & 1) ? mxpack::Fp6Container::kMid6 : mxpack::Fp6Container::kLow6;
  const size_t offset = r.Byte() % 64;
  const std::vector<int64_t> targets = mxpack::AvailableTargets();
  const Impl impl{targets[r.Byte() % targets.size()]};
  // The rest of the input is the payload.
  const size_t len = r.n;
  std::vector<uint8_t> in_storage(len + offset + 64);
  uint8_t* in = in_storage.data() + offset;
  if (len) std::memcpy(in, r.p, len);
  std::vector<uint8_t> a(4 * len + 64, 0xEE), b(4 * len + 64 + offset, 0xEE);
  uint8_t* got = b.data() + offset;

  switch (op) {
    case 0: {  // Pack codes (masked, and occasionally not) + Unpack round trip.
      const bool mask = (len % 7) != 3;
      const uint8_t code_mask = static_cast<uint8_t>((1u << bits) - 1);
      if (mask) for (size_t i = 0; i < len; ++i) in[i] &= code_mask;
      const size_t pb = mxpack::PackedBytes(l, len);
      const absl::Status s1 = mxpack::scalar::Pack(l, {in, len}, {a.data(), pb});
      const absl::Status s2 = mxpack::Pack(l, {in, len}, {got, pb}, impl);
      SameStatus("Pack", impl, s1, s2);
      if (!s1.ok()) break;
      Same("Pack", impl, a.data(), got, pb);
      std::vector<uint8_t> back(len + 1, 0xEE);
      if (!mxpack::Unpack(l, {got, pb}, {back.data(), len}, impl).ok()) Die("Unpack status", "", 0, 0, 0);
      Same("Pack/Unpack round trip", impl, in, back.data(), len);
      break;
    }
    case 1: {  // Unpack arbitrary bytes.
      const size_t n = len * 8 / bits;  // at most what len bytes hold
      const size_t pb = mxpack::PackedBytes(l, n);
      std::vector<uint8_t> src(pb, 0);
      // memcpy's pointers must not be null even for 0 bytes (src may be empty).
      if (pb != 0 && len != 0) std::memcpy(src.data(), in, pb < len ? pb : len);
      if (!mxpack::scalar::Unpack(l, src, {a.data(), n}).ok()) Die("scalar Unpack", "", 0, 0, 0);
      if (!mxpack::Unpack(l, src, {got, n}, impl).ok()) Die("Unpack status", "", 0, 0, 0);
      Same("Unpack", impl, a.data(), got, n);
      break;
    }
    case 2: {  // Decompress garbage (padding included) + Compress round trip.
      const size_t bytes = len / 16 * 16;
      if (!mxpack::scalar::Decompress(padded, {in, bytes}, {a.data(), bytes}, c).ok()) Die("scalar Decompress", "", 0, 0, 0);
      if (!mxpack::Decompress(padded, {in, bytes}, {got, bytes}, c, impl).ok()) Die("Decompress status", "", 0, 0, 0);
      Same("Decompress", impl, a.data(), got, bytes);
      std::vector<uint8_t> re(bytes + 1, 0xEE);
      if (!mxpack::Compress(padded, {got, bytes}, {re.data(), bytes}, c, impl).ok()) Die("Compress status", "", 0, 0, 0);
      const size_t payload = bits == 4 ? 8 : 12;
      for (size_t i = 0; i < bytes; ++i) {
        const uint8_t want = i % 16 < payload ? in[i] : 0;
        if (re[i] != want) Die("Decompress/Compress round trip", mxpack::ImplName(impl).c_str(), i, want, re[i]);
      }
      break;
    }
    case 3: {  // Compress arbitrary containers (mostly valid).
      const size_t bytes = len / 16 * 16;
      const uint8_t m = mxpack::scalar::ContainerMask(bits, c);
      if (len % 5 != 1) for (size_t i = 0; i < bytes; ++i) in[i] &= m;
      const absl::Status s1 = mxpack::scalar::Compress(padded, {in, bytes}, {a.data(), bytes}, c);
      const absl::Status s2 = mxpack::Compress(padded, {in, bytes}, {got, bytes}, c, impl);
      SameStatus("Compress", impl, s1, s2);
      if (s1.ok()) Same("Compress", impl, a.data(), got, bytes);
      break;
    }
    case 4: {  // Fused encode from f32 bit patterns, then fused decode.
      const mxpack::Format elem = bits == 4 ? mxpack::Format::kE2M1
                                  : (len & 1) ? mxpack::Format::kE2M3 : mxpack::Format::kE3M2;
      const size_t n = len / 4;
      mxpack::EncodePolicy p;
      p.rounding = static_cast<mxpack::Rounding>(offset % 5);
      p.relu = (offset & 8) != 0;
      std::vector<uint32_t> rbits;
      if (p.rounding == mxpack::Rounding::kRS) {
        for (size_t i = 0; i < n; ++i) rbits.push_back(mxpack::RandomBits(offset, i));
      }
      const size_t pb = mxpack::PackedBytes(l, n);
      const absl::Status s1 = mxpack::scalar::EncodePacked(mxpack::Format::kF32, elem, l, p,
                                                           {in, 4 * n}, {a.data(), pb}, rbits);
      const absl::Status s2 = mxpack::EncodePacked(mxpack::Format::kF32, elem, l, p, {in, 4 * n},
                                                   {got, pb}, rbits, impl);
      SameStatus("EncodePacked", impl, s1, s2);
      if (!s1.ok()) break;
      Same("EncodePacked", impl, a.data(), got, pb);
      std::vector<uint8_t> f1(4 * n), f2(4 * n);
      if (!mxpack::scalar::DecodePacked(l, elem, mxpack::Format::kF32, {got, pb}, absl::MakeSpan(f1)).ok() ||
          !mxpack::DecodePacked(l, elem, mxpack::Format::kF32, {got, pb}, absl::MakeSpan(f2), impl).ok()) {
        Die("DecodePacked status", "", 0, 0, 0);
      }
      Same("DecodePacked", impl, f1.data(), f2.data(), 4 * n);
      break;
    }
  }
  return 0;
}
