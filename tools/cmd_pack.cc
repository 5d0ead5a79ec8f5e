// `mxpack pack|unpack|decompress|compress`: the packed layouts of docs/semantics.md
// section 2 and tcgen05.cp decompression on raw binary files.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/dispatch.h"
#include "mxpack/pack.h"
#include "tools/cli.h"

// --impl is defined by tools/cmd_convert.cc ("auto" = best).
ABSL_DECLARE_FLAG(std::string, impl);

ABSL_FLAG(std::string, layout, "",
          "Layout. pack/unpack: dense4|dense6|b4x16_p64|b6x16_p32; "
          "quantize/dequantize: codes|dense4|dense6|b4x16_p64|b6x16_p32; "
          "quantize-model: dense|tcgen05");
ABSL_FLAG(int64_t, count, -1,
          "unpack: number of elements to read; -1 = every whole element the "
          "input holds (dense4: 2 per byte, dense6: 4 per 3 bytes, padded: 16 "
          "per 16 bytes)");
ABSL_FLAG(std::string, src, "",
          "decompress: source layout, b4x16_p64 or b6x16_p32");
ABSL_FLAG(std::string, dst, "",
          "compress: destination layout, b4x16_p64 or b6x16_p32");
ABSL_FLAG(std::string, fp6_container, "low6",
          "6-bit container placement in a b8x16 byte: low6 (bits [5:0], "
          "default) or mid6 (bits [6:1])");

namespace mxpack::cli {
namespace {

absl::Status Prefixed(absl::string_view flag, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message()));
}

absl::StatusOr<Impl> ImplFromFlag() {
  absl::StatusOr<Impl> impl = ParseImpl(absl::GetFlag(FLAGS_impl));
  if (!impl.ok()) return Prefixed("--impl", impl.status());
  return impl;
}

absl::StatusOr<Layout> LayoutFromFlag(absl::string_view flag,
                                      const std::string& value, bool padded) {
  absl::StatusOr<Layout> l = ParseLayout(value);
  if (!l.ok()) return Prefixed(flag, l.status());
  if (padded && *l != Layout::kB4x16P64 && *l != Layout::kB6x16P32) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%s: expected b4x16_p64 or b6x16_p32", flag, value));
  }
  return l;
}

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()),
                                   s.size());
}
absl::Span<uint8_t> MutableBytes(std::string& s) {
  return absl::Span<uint8_t>(reinterpret_cast<uint8_t*>(s.data()), s.size());
}

int NoArgs(const char* cmd, const std::vector<std::string>& args) {
  return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                       "unexpected argument '%s' (use --in/--out)", args[0])));
}

int RunPack(const std::vector<std::string>& args) {
  if (!args.empty()) return NoArgs("pack", args);
  absl::StatusOr<Layout> l = LayoutFromFlag("--layout", absl::GetFlag(FLAGS_layout), false);
  if (!l.ok()) return Fail("pack", l.status());
  absl::StatusOr<Impl> impl = ImplFromFlag();
  if (!impl.ok()) return Fail("pack", impl.status());
  if (absl::Status s = CheckOutputs({absl::GetFlag(FLAGS_out)}, {absl::GetFlag(FLAGS_in)});
      !s.ok()) {
    return Fail("pack", s);
  }
  absl::StatusOr<std::string> in = ReadInput(absl::GetFlag(FLAGS_in));
  if (!in.ok()) return Fail("pack", in.status());
  std::string out(PackedBytes(*l, in->size()), '\0');
  absl::Status s = Pack(*l, Bytes(*in), MutableBytes(out), *impl);
  if (!s.ok()) return Fail("pack", Prefixed("input", s));
  s = WriteOutput(absl::GetFlag(FLAGS_out), out);
  return s.ok() ? 0 : Fail("pack", s);
}

// Whole elements `bytes` of layout l hold, or an error if the size cannot be
// a whole number of groups.
absl::StatusOr<size_t> WholeElements(Layout l, size_t bytes) {
  switch (l) {
    case Layout::kDense4:
      return bytes * 2;
    case Layout::kDense6:
      if (bytes % 3 != 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "input: %u bytes is not a multiple of 3 (whole dense6 groups of 4 "
            "elements); pass --count to read fewer elements",
            bytes));
      }
      return bytes / 3 * 4;
    default:
      if (bytes % 16 != 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "input: %u bytes is not a multiple of 16 (whole %s groups)", bytes,
            LayoutName(l)));
      }
      return bytes;
  }
}

int RunUnpack(const std::vector<std::string>& args) {
  if (!args.empty()) return NoArgs("unpack", args);
  absl::StatusOr<Layout> l = LayoutFromFlag("--layout", absl::GetFlag(FLAGS_layout), false);
  if (!l.ok()) return Fail("unpack", l.status());
  absl::StatusOr<Impl> impl = ImplFromFlag();
  if (!impl.ok()) return Fail("unpack", impl.status());
  const int64_t count = absl::GetFlag(FLAGS_count);
  if (count < -1) {
    return Fail("unpack", absl::InvalidArgumentError(absl::StrFormat(
                              "--count=%d: expected -1 (all) or >= 0", count)));
  }
  if (absl::Status s = CheckOutputs({absl::GetFlag(FLAGS_out)}, {absl::GetFlag(FLAGS_in)});
      !s.ok()) {
    return Fail("unpack", s);
  }
  absl::StatusOr<std::string> in = ReadInput(absl::GetFlag(FLAGS_in));
  if (!in.ok()) return Fail("unpack", in.status());
  size_t n = 0;
  if (count == -1) {
    absl::StatusOr<size_t> whole = WholeElements(*l, in->size());
    if (!whole.ok()) return Fail("unpack", whole.status());
    n = *whole;
  } else {
    n = static_cast<size_t>(count);
    if (PackedBytes(*l, n) != in->size()) {
      return Fail("unpack", absl::InvalidArgumentError(absl::StrFormat(
                                "input: expected %u bytes for --count=%d "
                                "elements in layout %s, got %u",
                                PackedBytes(*l, n), count, LayoutName(*l),
                                in->size())));
    }
  }
  std::string out(n, '\0');
  absl::Status s = Unpack(*l, Bytes(*in), MutableBytes(out), *impl);
  if (!s.ok()) return Fail("unpack", Prefixed("input", s));
  s = WriteOutput(absl::GetFlag(FLAGS_out), out);
  return s.ok() ? 0 : Fail("unpack", s);
}

int RunPadded(const char* cmd, bool decompress,
              const std::vector<std::string>& args) {
  if (!args.empty()) return NoArgs(cmd, args);
  absl::StatusOr<Layout> l =
      decompress ? LayoutFromFlag("--src", absl::GetFlag(FLAGS_src), true)
                 : LayoutFromFlag("--dst", absl::GetFlag(FLAGS_dst), true);
  if (!l.ok()) return Fail(cmd, l.status());
  absl::StatusOr<Fp6Container> c = ParseFp6Container(absl::GetFlag(FLAGS_fp6_container));
  if (!c.ok()) return Fail(cmd, Prefixed("--fp6_container", c.status()));
  absl::StatusOr<Impl> impl = ImplFromFlag();
  if (!impl.ok()) return Fail(cmd, impl.status());
  if (absl::Status s = CheckOutputs({absl::GetFlag(FLAGS_out)}, {absl::GetFlag(FLAGS_in)});
      !s.ok()) {
    return Fail(cmd, s);
  }
  absl::StatusOr<std::string> in = ReadInput(absl::GetFlag(FLAGS_in));
  if (!in.ok()) return Fail(cmd, in.status());
  if (in->size() % 16 != 0) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "input: %u bytes is not a multiple of 16 (whole "
                         "16-element groups)",
                         in->size())));
  }
  std::string out(in->size(), '\0');
  absl::Status s = decompress ? Decompress(*l, Bytes(*in), MutableBytes(out), *c, *impl)
                              : Compress(*l, Bytes(*in), MutableBytes(out), *c, *impl);
  if (!s.ok()) return Fail(cmd, Prefixed("input", s));
  s = WriteOutput(absl::GetFlag(FLAGS_out), out);
  return s.ok() ? 0 : Fail(cmd, s);
}

int RunDecompress(const std::vector<std::string>& args) {
  return RunPadded("decompress", true, args);
}
int RunCompress(const std::vector<std::string>& args) {
  return RunPadded("compress", false, args);
}

const bool kPack = RegisterCommand(
    {"pack", "pack one-code-per-byte arrays into dense4/dense6/padded layouts",
     "pack --layout=dense4|dense6|b4x16_p64|b6x16_p32 [--in=PATH] [--out=PATH]\n"
     "            [--impl=best|scalar|TARGET]\n\n"
     "Input: one code per byte (4-bit layouts: 0x0-0xF, 6-bit: 0x00-0x3F; a\n"
     "code with higher bits set is an error naming its index). Output: the\n"
     "packed bytes of docs/semantics.md section 2; a final partial group is padded\n"
     "with zero codes, padding bytes are zero. Errors write nothing.",
     {"layout", "in", "out", "impl"},
     RunPack});

const bool kUnpack = RegisterCommand(
    {"unpack", "unpack dense4/dense6/padded layouts to one code per byte",
     "unpack --layout=dense4|dense6|b4x16_p64|b6x16_p32 [--count=N]\n"
     "              [--in=PATH] [--out=PATH] [--impl=best|scalar|TARGET]\n\n"
     "Writes one code per byte. --count=N reads N elements (the input must\n"
     "then be exactly the packed size of N elements); the default -1 reads\n"
     "every whole element the input holds (dense4: 2 per byte; dense6: 4 per\n"
     "3 bytes, size must be a multiple of 3; padded: 16 per 16 bytes, size\n"
     "must be a multiple of 16). Padding is ignored. Errors write nothing.",
     {"layout", "count", "in", "out", "impl"},
     RunUnpack});

const bool kDecompress = RegisterCommand(
    {"decompress", "tcgen05.cp decompression: b4x16_p64/b6x16_p32 -> b8x16",
     "decompress --src=b4x16_p64|b6x16_p32 [--fp6-container=low6|mid6]\n"
     "                  [--in=PATH] [--out=PATH] [--impl=best|scalar|TARGET]\n\n"
     "Emulates tcgen05.cp .b8x16.b4x16_p64 / .b8x16.b6x16_p32: every 16-byte\n"
     "input group becomes 16 8-bit containers. 4-bit codes go to bits [5:2];\n"
     "6-bit codes to bits [5:0] (low6, default) or [6:1] (mid6; the placement\n"
     "is open in docs/semantics.md section 2). Padding bytes are ignored. The input\n"
     "size must be a multiple of 16.",
     {"src", "fp6_container", "in", "out", "impl"},
     RunDecompress});

const bool kCompress = RegisterCommand(
    {"compress", "inverse of decompress: b8x16 containers -> padded layout",
     "compress --dst=b4x16_p64|b6x16_p32 [--fp6-container=low6|mid6]\n"
     "                [--in=PATH] [--out=PATH] [--impl=best|scalar|TARGET]\n\n"
     "A container with bits outside its payload is an error naming its index.\n"
     "Padding bytes are written as zero. Errors write nothing.",
     {"dst", "fp6_container", "in", "out", "impl"},
     RunCompress});

}  // namespace
}  // namespace mxpack::cli
