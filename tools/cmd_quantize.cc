// `mxpack quantize` and `mxpack dequantize`: MX / NVFP4 block quantization of
// raw row-major tensors (include/mxpack/mx.h) on the command line.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "tools/cli.h"

ABSL_DECLARE_FLAG(std::string, impl);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(std::string, scale_mode);
ABSL_DECLARE_FLAG(std::string, layout);

ABSL_FLAG(uint64_t, rows, 0, "Rows of the row-major tensor (quantize/dequantize)");
ABSL_FLAG(uint64_t, cols, 0, "Columns: blocks run along a row");
ABSL_FLAG(std::string, scale_layout, "linear",
          "Scale layout: linear ([rows][blocks], one byte each) or tcgen05 "
          "(512-byte tiles of 128 rows x 4 blocks)");
ABSL_FLAG(std::string, out_elements, "", "Output path of the element bytes");
ABSL_FLAG(std::string, out_scales, "", "Output path of the scale bytes");
ABSL_FLAG(std::string, out_tensor_scale, "",
          "NVFP4: output path of the f32 tensor scale (4 bytes, little-endian)");
ABSL_FLAG(std::string, in_elements, "", "Input path of the element bytes");
ABSL_FLAG(std::string, in_scales, "", "Input path of the scale bytes");
ABSL_FLAG(std::string, in_tensor_scale, "",
          "NVFP4: input path of the f32 tensor scale (4 bytes, little-endian)");
ABSL_FLAG(bool, stats, false,
          "quantize: print error statistics (SQNR, max error, saturated) to "
          "stderr");

namespace mxpack::cli {
namespace {

absl::Status Flagged(absl::string_view flag, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("--", flag, ": ", s.message()));
}

absl::Span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The shape and options shared by both commands, from the flags.
struct Common {
  MxFormat format;
  MxOptions options;
  size_t rows, cols;
  Impl impl;
};

absl::StatusOr<Common> CommonFromFlags() {
  Common c;
  absl::StatusOr<MxFormat> f = ParseMxFormat(absl::GetFlag(FLAGS_format));
  if (!f.ok()) return Flagged("format", f.status());
  c.format = *f;
  const std::string mode = absl::GetFlag(FLAGS_scale_mode);
  if (!mode.empty()) {
    absl::StatusOr<ScaleMode> m = ParseScaleMode(mode);
    if (!m.ok()) return Flagged("scale-mode", m.status());
    c.options.scale_mode = *m;
  }
  const std::string layout = absl::GetFlag(FLAGS_layout);
  if (!layout.empty()) {
    absl::StatusOr<ElementLayout> l = ParseElementLayout(layout);
    if (!l.ok()) return Flagged("layout", l.status());
    c.options.layout = *l;
  }
  absl::StatusOr<ScaleLayout> sl =
      ParseScaleLayout(absl::GetFlag(FLAGS_scale_layout));
  if (!sl.ok()) return Flagged("scale-layout", sl.status());
  c.options.scale_layout = *sl;
  c.rows = absl::GetFlag(FLAGS_rows);
  c.cols = absl::GetFlag(FLAGS_cols);
  if (c.rows == 0 || c.cols == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--rows and --cols: expected both >= 1, got rows=%d cols=%d", c.rows,
        c.cols));
  }
  absl::StatusOr<Impl> impl = ParseImpl(absl::GetFlag(FLAGS_impl));
  if (!impl.ok()) return Flagged("impl", impl.status());
  c.impl = *impl;
  MxShape shape{c.format, c.options.layout, c.options.scale_layout, c.rows,
                c.cols};
  if (absl::Status s = CheckMxShape(shape); !s.ok()) return s;
  return c;
}

absl::StatusOr<Format> SourceFormat(const std::string& flag_value,
                                    absl::string_view flag,
                                    absl::string_view def) {
  absl::StatusOr<Format> f =
      ParseFormat(flag_value.empty() ? std::string(def) : flag_value);
  if (!f.ok()) return Flagged(flag, f.status());
  return *f;
}

int RunQuantize(const std::vector<std::string>& args) {
  constexpr absl::string_view kCmd = "quantize";
  if (!args.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          absl::StrFormat("unexpected argument '%s'", args[0])));
  }
  absl::StatusOr<Common> c = CommonFromFlags();
  if (!c.ok()) return Fail(kCmd, c.status());
  absl::StatusOr<Format> from =
      SourceFormat(absl::GetFlag(FLAGS_from), "from", "f32");
  if (!from.ok()) return Fail(kCmd, from.status());
  if (*from != Format::kF32 && *from != Format::kBF16 && *from != Format::kF16) {
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrFormat(
                          "--from: expected f32, bf16 or f16, got %s",
                          FormatName(*from))));
  }
  const std::string out_e = absl::GetFlag(FLAGS_out_elements);
  const std::string out_s = absl::GetFlag(FLAGS_out_scales);
  const std::string out_t = absl::GetFlag(FLAGS_out_tensor_scale);
  if (out_e.empty() || out_s.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          "--out-elements and --out-scales: both are required"));
  }
  if (c->format == MxFormat::kNvfp4 && out_t.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          "--out-tensor-scale: required for nvfp4 (the f32 "
                          "tensor scale is part of the result)"));
  }
  if (c->format != MxFormat::kNvfp4 && !out_t.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(absl::StrFormat(
                          "--out-tensor-scale: only nvfp4 has a tensor scale, "
                          "got --format=%s",
                          MxFormatName(c->format))));
  }
  if (absl::Status s = CheckOutputs({out_e, out_s, out_t}, {absl::GetFlag(FLAGS_in)});
      !s.ok()) {
    return Fail(kCmd, s);
  }
  absl::StatusOr<std::string> in = ReadInput(absl::GetFlag(FLAGS_in));
  if (!in.ok()) return Fail(kCmd, in.status());
  absl::StatusOr<MxTensor> q = QuantizeMx(c->format, *from, Bytes(*in), c->rows,
                                          c->cols, c->options, c->impl);
  if (!q.ok()) return Fail(kCmd, q.status());
  if (absl::GetFlag(FLAGS_stats)) {
    absl::StatusOr<MxErrorStats> st =
        ComputeMxErrorStats(*from, Bytes(*in), View(*q));
    if (!st.ok()) return Fail(kCmd, st.status());
    std::fprintf(stderr,
                 "%s %s: %zu elements, SQNR %.2f dB, max |err| %.6g, RMSE "
                 "%.6g, saturated %zu, NaN/Inf inputs %zu, lost in NaN "
                 "blocks %zu\n",
                 std::string(MxFormatName(c->format)).c_str(),
                 std::string(ScaleModeName(q->scale_mode)).c_str(), st->elements,
                 st->sqnr_db, st->max_abs_error, st->rmse, st->saturated,
                 st->nan_inf_inputs, st->nan_outputs);
  }
  absl::Status s = WriteOutput(
      out_e, absl::string_view(reinterpret_cast<const char*>(q->elements.data()),
                               q->elements.size()));
  if (s.ok()) {
    s = WriteOutput(out_s, absl::string_view(
                               reinterpret_cast<const char*>(q->scales.data()),
                               q->scales.size()));
  }
  if (s.ok() && !out_t.empty()) {
    char t[4];
    std::memcpy(t, &q->tensor_scale, 4);  // little-endian hosts only
    s = WriteOutput(out_t, absl::string_view(t, 4));
  }
  if (!s.ok()) return Fail(kCmd, s);
  return 0;
}

int RunDequantize(const std::vector<std::string>& args) {
  constexpr absl::string_view kCmd = "dequantize";
  if (!args.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          absl::StrFormat("unexpected argument '%s'", args[0])));
  }
  absl::StatusOr<Common> c = CommonFromFlags();
  if (!c.ok()) return Fail(kCmd, c.status());
  absl::StatusOr<Format> to = SourceFormat(absl::GetFlag(FLAGS_to), "to", "f32");
  if (!to.ok()) return Fail(kCmd, to.status());
  const std::string in_e = absl::GetFlag(FLAGS_in_elements);
  const std::string in_s = absl::GetFlag(FLAGS_in_scales);
  const std::string in_t = absl::GetFlag(FLAGS_in_tensor_scale);
  if (in_e.empty() || in_s.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          "--in-elements and --in-scales: both are required"));
  }
  if ((c->format == MxFormat::kNvfp4) != !in_t.empty()) {
    return Fail(kCmd, absl::InvalidArgumentError(
                          "--in-tensor-scale: required for nvfp4 and only "
                          "allowed for nvfp4"));
  }
  if (absl::Status st = CheckOutputs({absl::GetFlag(FLAGS_out)}, {in_e, in_s, in_t});
      !st.ok()) {
    return Fail(kCmd, st);
  }
  absl::StatusOr<std::string> e = ReadInput(in_e);
  if (!e.ok()) return Fail(kCmd, e.status());
  absl::StatusOr<std::string> s = ReadInput(in_s);
  if (!s.ok()) return Fail(kCmd, s.status());
  MxTensorView v;
  v.shape = {c->format, c->options.layout, c->options.scale_layout, c->rows,
             c->cols};
  v.elements = Bytes(*e);
  v.scales = Bytes(*s);
  if (!in_t.empty()) {
    absl::StatusOr<std::string> t = ReadInput(in_t);
    if (!t.ok()) return Fail(kCmd, t.status());
    if (t->size() != 4) {
      return Fail(kCmd, absl::InvalidArgumentError(absl::StrFormat(
                            "--in-tensor-scale: expected 4 bytes (one f32), "
                            "got %d",
                            t->size())));
    }
    std::memcpy(&v.tensor_scale, t->data(), 4);
  }
  const size_t ob = static_cast<size_t>(Traits(*to).storage_bytes);
  std::string out(c->rows * c->cols * ob, '\0');
  absl::Status st = DequantizeMx(
      v, *to, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size()),
      c->impl);
  if (!st.ok()) return Fail(kCmd, st);
  st = WriteOutput(absl::GetFlag(FLAGS_out), out);
  if (!st.ok()) return Fail(kCmd, st);
  return 0;
}

const bool kQuantize = RegisterCommand(
    {"quantize", "MX / NVFP4 block quantization of a raw row-major tensor",
     "quantize --format=mxfp8_e4m3|mxfp8_e5m2|mxfp6_e2m3|mxfp6_e3m2|mxfp4|nvfp4\n"
     "         --rows=R --cols=C [--from=f32|bf16|f16]\n"
     "         [--scale-mode=floor|rceil|ceil|even]\n"
     "         [--layout=codes|dense4|dense6|b4x16_p64|b6x16_p32]\n"
     "         [--scale-layout=linear|tcgen05] --in=RAW --out-elements=PATH\n"
     "         --out-scales=PATH [--out-tensor-scale=PATH] [--stats]\n"
     "         [--impl=best|scalar|TARGET]\n\n"
     "Blocks of 32 (MX) or 16 (NVFP4) run along each row; rows are padded with\n"
     "zeros to whole blocks. Scale mode default: floor for MX, even for NVFP4\n"
     "(formulas in docs/semantics.md and include/mxpack/mx.h). --layout default codes (one\n"
     "code per byte, the only layout for fp8); --scale-layout default linear\n"
     "(one byte per block, row-major). NVFP4 writes its f32 tensor scale (4 bytes\n"
     "little-endian) to --out-tensor-scale. Errors write no output file.",
     {"format", "rows", "cols", "from", "scale_mode", "layout", "scale_layout",
      "in", "out_elements", "out_scales", "out_tensor_scale", "stats", "impl"},
     RunQuantize});

const bool kDequantize = RegisterCommand(
    {"dequantize", "invert `mxpack quantize` (exact values, rounded once)",
     "dequantize --format=F --rows=R --cols=C [--layout=L] [--scale-layout=S]\n"
     "           [--scale-mode=M] --in-elements=PATH --in-scales=PATH\n"
     "           [--in-tensor-scale=PATH] [--to=f32|bf16|f16|f64] [--out=PATH]\n"
     "           [--impl=best|scalar|TARGET]\n\n"
     "Writes the unpadded [rows][cols] tensor. f64 is exact; f32 is exact for MX\n"
     "(+-Inf beyond f32 range) and (e*d)*t in f32 for NVFP4; bf16/f16 round that\n"
     "value once (rn). Malformed element or scale bytes are an error.",
     {"format", "rows", "cols", "to", "scale_mode", "layout", "scale_layout",
      "in_elements", "in_scales", "in_tensor_scale", "out", "impl"},
     RunDequantize});

}  // namespace
}  // namespace mxpack::cli
