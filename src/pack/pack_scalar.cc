// Scalar reference of the packed layouts and tcgen05.cp containers of
// docs/semantics.md section 2, plus the names, sizes and argument checks shared with
// the SIMD path (src/pack/pack.cc).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "src/util/fp_env.h"
#include "src/util/little_endian.h"

namespace mxpack {
namespace {

bool IsPadded(Layout l) {
  return l == Layout::kB4x16P64 || l == Layout::kB6x16P32;
}

bool IsDecodeDestination(Format f) {
  return f == Format::kF32 || f == Format::kBF16 || f == Format::kF16;
}

bool IsEncodeSource(Format f) {
  return f == Format::kF32 || f == Format::kBF16 || f == Format::kF16 ||
         f == Format::kF64;
}

using internal::LoadLE;
using internal::StoreLE;

}  // namespace

absl::string_view LayoutName(Layout l) {
  switch (l) {
    case Layout::kDense4:
      return "dense4";
    case Layout::kDense6:
      return "dense6";
    case Layout::kB4x16P64:
      return "b4x16_p64";
    case Layout::kB6x16P32:
      return "b6x16_p32";
  }
  return "?";
}

absl::StatusOr<Layout> ParseLayout(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (Layout l : {Layout::kDense4, Layout::kDense6, Layout::kB4x16P64,
                   Layout::kB6x16P32}) {
    if (lower == LayoutName(l)) return l;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown layout '%s'; expected one of: dense4, dense6, b4x16_p64, "
      "b6x16_p32",
      name));
}

absl::string_view Fp6ContainerName(Fp6Container c) {
  return c == Fp6Container::kLow6 ? "low6" : "mid6";
}

absl::StatusOr<Fp6Container> ParseFp6Container(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "low6") return Fp6Container::kLow6;
  if (lower == "mid6") return Fp6Container::kMid6;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown FP6 container placement '%s'; expected low6 (bits [5:0]) or "
      "mid6 (bits [6:1])",
      name));
}

int LayoutElementBits(Layout l) {
  return (l == Layout::kDense4 || l == Layout::kB4x16P64) ? 4 : 6;
}

size_t PackedBytes(Layout l, size_t n) {
  switch (l) {
    case Layout::kDense4:
      return (n + 1) / 2;
    case Layout::kDense6:
      return (n + 3) / 4 * 3;
    case Layout::kB4x16P64:
    case Layout::kB6x16P32:
      return (n + 15) / 16 * 16;
  }
  return 0;
}

absl::Status CheckLayoutFormat(Layout l, Format elem) {
  if (LayoutElementBits(l) == 4) {
    if (elem == Format::kE2M1) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "elem: layout %s holds e2m1 elements, got %s", LayoutName(l),
        FormatName(elem)));
  }
  if (elem == Format::kE2M3 || elem == Format::kE3M2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "elem: layout %s holds e2m3 or e3m2 elements, got %s", LayoutName(l),
      FormatName(elem)));
}

namespace internal {

absl::Status CheckDecodeArgs(Format to, size_t out_bytes, size_t* n) {
  if (!IsDecodeDestination(to)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "to: expected f32, bf16 or f16, got %s", FormatName(to)));
  }
  const int ob = Traits(to).storage_bytes;
  if (out_bytes % ob != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "out: %u bytes is not a multiple of the %s element size (%d bytes)",
        out_bytes, FormatName(to), ob));
  }
  *n = out_bytes / ob;
  return absl::OkStatus();
}

absl::Status CheckDecodePackedArgs(Layout src, Format elem, Format to,
                                   size_t packed_bytes, size_t out_bytes,
                                   size_t* n) {
  if (absl::Status s = CheckLayoutFormat(src, elem); !s.ok()) return s;
  if (absl::Status s = CheckDecodeArgs(to, out_bytes, n); !s.ok()) return s;
  return CheckPackArgs(src, *n, packed_bytes);
}

absl::Status CheckPackArgs(Layout l, size_t codes, size_t packed_bytes) {
  const size_t want = PackedBytes(l, codes);
  if (packed_bytes != want) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "packed: expected %u bytes for %u elements in layout %s, got %u", want,
        codes, LayoutName(l), packed_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckPaddedArgs(Layout l, size_t packed_bytes,
                             size_t b8x16_bytes, bool decompress) {
  if (!IsPadded(l)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected layout b4x16_p64 or b6x16_p32, got %s",
        decompress ? "src" : "dst", LayoutName(l)));
  }
  if (packed_bytes % 16 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "packed: %u bytes is not a multiple of 16 (whole 16-element groups of "
        "%s)",
        packed_bytes, LayoutName(l)));
  }
  if (b8x16_bytes != packed_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "b8x16: expected %u bytes (one container per element of the %u "
        "packed bytes), got %u",
        packed_bytes, packed_bytes, b8x16_bytes));
  }
  return absl::OkStatus();
}

size_t FirstOutside(const uint8_t* p, size_t n, uint8_t mask) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] & ~mask) return i;
  }
  return n;
}

absl::Status OutsideError(absl::string_view arg, size_t index, uint8_t value,
                          uint8_t mask, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s[%u] = 0x%02X: expected %s (only bits of mask 0x%02X set)", arg, index,
      value, what, mask));
}

absl::Status CheckEncodePackedArgs(Format from, Format elem, Layout dst,
                                   const EncodePolicy& policy, size_t in_bytes,
                                   size_t packed_bytes, size_t rbits,
                                   size_t* n) {
  if (!IsEncodeSource(from)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "from: expected f32, bf16, f16 or f64, got %s", FormatName(from)));
  }
  if (absl::Status s = CheckLayoutFormat(dst, elem); !s.ok()) return s;
  if (absl::Status s = ValidateConversion(from, elem, policy); !s.ok()) return s;
  const int ib = Traits(from).storage_bytes;
  if (in_bytes % ib != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "in: %u bytes is not a multiple of the %s element size (%d bytes)",
        in_bytes, FormatName(from), ib));
  }
  *n = in_bytes / ib;
  const bool needs_rbits = policy.rounding == Rounding::kRS;
  if ((needs_rbits || rbits != 0) && rbits != *n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rbits: expected %u random words (one per element%s), got %u", *n,
        needs_rbits ? " for rounding=rs" : "", rbits));
  }
  return internal::CheckPackArgs(dst, *n, packed_bytes);
}

}  // namespace internal

namespace scalar {

uint8_t GetCode(Layout l, const uint8_t* packed, size_t i) {
  switch (l) {
    case Layout::kDense4:
      return (packed[i / 2] >> (4 * (i % 2))) & 0xF;
    case Layout::kB4x16P64:
      // Group g of 16 occupies bytes 16g..16g+7 (dense4), 16g+8.. padding.
      return (packed[i / 16 * 16 + (i % 16) / 2] >> (4 * (i % 2))) & 0xF;
    case Layout::kDense6:
    case Layout::kB6x16P32: {
      // 4 elements per 24-bit little-endian word; element j in [6j+5:6j].
      const size_t group = i / 4;
      const size_t base = l == Layout::kDense6
                              ? group * 3
                              : i / 16 * 16 + (i % 16) / 4 * 3;
      const uint32_t word = static_cast<uint32_t>(LoadLE(packed + base, 3));
      return (word >> (6 * (i % 4))) & 0x3F;
    }
  }
  return 0;
}

void SetCode(Layout l, uint8_t* packed, size_t i, uint8_t code) {
  switch (l) {
    case Layout::kDense4:
    case Layout::kB4x16P64: {
      const size_t byte = l == Layout::kDense4 ? i / 2 : i / 16 * 16 + (i % 16) / 2;
      const int shift = 4 * (i % 2);
      packed[byte] = static_cast<uint8_t>((packed[byte] & ~(0xF << shift)) |
                                          ((code & 0xF) << shift));
      return;
    }
    case Layout::kDense6:
    case Layout::kB6x16P32: {
      const size_t base = l == Layout::kDense6 ? i / 4 * 3
                                               : i / 16 * 16 + (i % 16) / 4 * 3;
      const int shift = 6 * (i % 4);
      uint32_t word = static_cast<uint32_t>(LoadLE(packed + base, 3));
      word = (word & ~(0x3Fu << shift)) | (uint32_t{code & 0x3Fu} << shift);
      StoreLE(packed + base, 3, word);
      return;
    }
  }
}

uint8_t ContainerMask(int bits, Fp6Container c) {
  if (bits == 4) return 0x3C;                     // 00xxxx00
  return c == Fp6Container::kLow6 ? 0x3F : 0x7E;  // 00xxxxxx / 0xxxxxx0
}

uint8_t ToContainer(int bits, uint8_t code, Fp6Container c) {
  if (bits == 4) return static_cast<uint8_t>((code & 0xF) << 2);
  return static_cast<uint8_t>((code & 0x3F) << (c == Fp6Container::kMid6));
}

uint8_t FromContainer(int bits, uint8_t container, Fp6Container c) {
  if (bits == 4) return (container >> 2) & 0xF;
  return (container >> (c == Fp6Container::kMid6)) & 0x3F;
}

absl::Status Pack(Layout l, absl::Span<const uint8_t> codes,
                  absl::Span<uint8_t> packed) {
  if (absl::Status s = internal::CheckPackArgs(l, codes.size(), packed.size());
      !s.ok()) {
    return s;
  }
  const int bits = LayoutElementBits(l);
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  const size_t bad = internal::FirstOutside(codes.data(), codes.size(), mask);
  if (bad != codes.size()) {
    return internal::OutsideError("codes", bad, codes[bad], mask,
                                  bits == 4 ? "a 4-bit code" : "a 6-bit code");
  }
  if (!packed.empty()) std::memset(packed.data(), 0, packed.size());
  for (size_t i = 0; i < codes.size(); ++i) SetCode(l, packed.data(), i, codes[i]);
  return absl::OkStatus();
}

absl::Status Unpack(Layout l, absl::Span<const uint8_t> packed,
                    absl::Span<uint8_t> codes) {
  if (absl::Status s = internal::CheckPackArgs(l, codes.size(), packed.size());
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = GetCode(l, packed.data(), i);
  return absl::OkStatus();
}

absl::Status Decompress(Layout src, absl::Span<const uint8_t> packed,
                        absl::Span<uint8_t> b8x16, Fp6Container c) {
  if (absl::Status s =
          internal::CheckPaddedArgs(src, packed.size(), b8x16.size(), true);
      !s.ok()) {
    return s;
  }
  const int bits = LayoutElementBits(src);
  for (size_t i = 0; i < b8x16.size(); ++i) {
    b8x16[i] = ToContainer(bits, GetCode(src, packed.data(), i), c);
  }
  return absl::OkStatus();
}

absl::Status Compress(Layout dst, absl::Span<const uint8_t> b8x16,
                      absl::Span<uint8_t> packed, Fp6Container c) {
  if (absl::Status s =
          internal::CheckPaddedArgs(dst, packed.size(), b8x16.size(), false);
      !s.ok()) {
    return s;
  }
  const int bits = LayoutElementBits(dst);
  const uint8_t mask = ContainerMask(bits, c);
  const size_t bad = internal::FirstOutside(b8x16.data(), b8x16.size(), mask);
  if (bad != b8x16.size()) {
    return internal::OutsideError(
        "b8x16", bad, b8x16[bad], mask,
        bits == 4 ? "a 4-bit container 00xxxx00"
                  : (c == Fp6Container::kLow6 ? "a low6 container 00xxxxxx"
                                              : "a mid6 container 0xxxxxx0"));
  }
  if (!packed.empty()) std::memset(packed.data(), 0, packed.size());
  for (size_t i = 0; i < b8x16.size(); ++i) {
    SetCode(dst, packed.data(), i, FromContainer(bits, b8x16[i], c));
  }
  return absl::OkStatus();
}

static absl::Status DecodePackedInDefaultEnv(Layout src, Format elem, Format to,
                                             absl::Span<const uint8_t> packed,
                                             absl::Span<uint8_t> out) {
  size_t n = 0;
  if (absl::Status s = internal::CheckDecodePackedArgs(src, elem, to, packed.size(),
                                                       out.size(), &n);
      !s.ok()) {
    return s;
  }
  const int ob = Traits(to).storage_bytes;
  for (size_t i = 0; i < n; ++i) {
    StoreLE(out.data() + i * ob, ob,
            Convert(elem, to, GetCode(src, packed.data(), i), EncodePolicy{}));
  }
  return absl::OkStatus();
}

absl::Status DecodePacked(Layout src, Format elem, Format to,
                          absl::Span<const uint8_t> packed,
                          absl::Span<uint8_t> out) {
  return internal::InDefaultFpEnv(
      [&] { return DecodePackedInDefaultEnv(src, elem, to, packed, out); });
}

static absl::Status DecodeContainersInDefaultEnv(
    Format elem, Format to, absl::Span<const uint8_t> b8x16,
    absl::Span<uint8_t> out, Fp6Container c) {
  const Layout l = Traits(elem).bits == 4 ? Layout::kB4x16P64 : Layout::kB6x16P32;
  if (absl::Status s = CheckLayoutFormat(l, elem); !s.ok()) return s;
  size_t n = 0;
  if (absl::Status s = internal::CheckDecodeArgs(to, out.size(), &n); !s.ok()) {
    return s;
  }
  if (n != b8x16.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "out: expected %u bytes (%u %s elements, one per container), got %u",
        b8x16.size() * Traits(to).storage_bytes, b8x16.size(), FormatName(to),
        out.size()));
  }
  const int bits = Traits(elem).bits;
  const uint8_t mask = ContainerMask(bits, c);
  const size_t bad = internal::FirstOutside(b8x16.data(), n, mask);
  if (bad != n) {
    return internal::OutsideError("b8x16", bad, b8x16[bad], mask,
                                  "a container of the element format");
  }
  const int ob = Traits(to).storage_bytes;
  for (size_t i = 0; i < n; ++i) {
    StoreLE(out.data() + i * ob, ob,
            Convert(elem, to, FromContainer(bits, b8x16[i], c), EncodePolicy{}));
  }
  return absl::OkStatus();
}

absl::Status DecodeContainers(Format elem, Format to,
                              absl::Span<const uint8_t> b8x16,
                              absl::Span<uint8_t> out, Fp6Container c) {
  return internal::InDefaultFpEnv(
      [&] { return DecodeContainersInDefaultEnv(elem, to, b8x16, out, c); });
}

static absl::Status EncodePackedInDefaultEnv(Format from, Format elem,
                                             Layout dst,
                                             const EncodePolicy& policy,
                                             absl::Span<const uint8_t> in,
                                             absl::Span<uint8_t> packed,
                                             absl::Span<const uint32_t> rbits) {
  size_t n = 0;
  if (absl::Status s = internal::CheckEncodePackedArgs(from, elem, dst, policy, in.size(),
                                             packed.size(), rbits.size(), &n);
      !s.ok()) {
    return s;
  }
  const int ib = Traits(from).storage_bytes;
  if (!packed.empty()) std::memset(packed.data(), 0, packed.size());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t code = Convert(from, elem, LoadLE(in.data() + i * ib, ib),
                                  policy, rbits.empty() ? 0 : rbits[i]);
    SetCode(dst, packed.data(), i, static_cast<uint8_t>(code));
  }
  return absl::OkStatus();
}

absl::Status EncodePacked(Format from, Format elem, Layout dst,
                          const EncodePolicy& policy,
                          absl::Span<const uint8_t> in,
                          absl::Span<uint8_t> packed,
                          absl::Span<const uint32_t> rbits) {
  return internal::InDefaultFpEnv([&] {
    return EncodePackedInDefaultEnv(from, elem, dst, policy, in, packed, rbits);
  });
}

}  // namespace scalar
}  // namespace mxpack
