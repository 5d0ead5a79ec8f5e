// Byte-plane decode tables (decode_table.h), filled from the scalar reference.
#include "src/convert/decode_table.h"

#include <cstddef>
#include <cstdint>

#include "mxpack/scalar.h"

namespace mxpack::internal {
namespace {

constexpr int kNumNarrow = static_cast<int>(Format::kUE4M3) + 1;  // kE2M1 .. kUE4M3

// [from][to is f16][relu]
struct AllTables {
  DecodeTable16 t[kNumNarrow][2][2];
};

AllTables* Build() {
  auto* all = new AllTables();
  for (int f = 0; f < kNumNarrow; ++f) {
    const Format from = static_cast<Format>(f);
    const FormatTraits& tr = Traits(from);
    const int width = tr.exp_bits + tr.man_bits + (tr.has_sign ? 1 : 0);
    for (int to_f16 = 0; to_f16 < 2; ++to_f16) {
      const Format to = to_f16 ? Format::kF16 : Format::kBF16;
      for (int relu = 0; relu < 2; ++relu) {
        EncodePolicy p;
        p.relu = relu != 0;
        DecodeTable16& tab = all->t[f][to_f16][relu];
        const bool valid = ValidateConversion(from, to, p).ok();
        for (uint32_t c = 0; c < 256; ++c) {
          const bool is_code = valid && (c >> width) == 0;
          const uint64_t v = is_code ? scalar::Convert(from, to, c, p) : 0;
          tab.lo[c] = static_cast<uint8_t>(v);
          tab.hi[c] = static_cast<uint8_t>(v >> 8);
        }
      }
    }
  }
  return all;
}

}  // namespace

const DecodeTable16& NarrowDecodeTable16(Format from, Format to, bool relu) {
  static const AllTables* const all = Build();
  return all->t[static_cast<int>(from)][to == Format::kF16 ? 1 : 0][relu ? 1 : 0];
}

}  // namespace mxpack::internal
