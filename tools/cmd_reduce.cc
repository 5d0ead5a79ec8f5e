// `mxpack reduce`: the multimem.ld_reduce host model over raw replica files.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "mxpack/dispatch.h"
#include "mxpack/multimem.h"
#include "tools/cli.h"

ABSL_FLAG(std::string, ptx, "",
          "multimem.ld_reduce spelling, e.g. "
          "multimem.ld_reduce.add.acc::f16.v4.e4m3 (exclusive with --type)");
ABSL_FLAG(std::string, model, "sequential",
          "Float add model: sequential, tree, exact, nccl (docs/semantics.md section 4)");
ABSL_FLAG(std::string, type, "",
          "Element type without --ptx: e4m3, e5m2, f16, bf16, f32, f64, u32, s32, "
          "u64, s64, b32, b64 (packed x2/x4 forms too)");
ABSL_FLAG(std::string, op, "add", "Reduction op with --type: add, min, max, and, or, xor");
ABSL_FLAG(std::string, acc, "none", "Accumulation with --type: none, f32, f16");
ABSL_FLAG(std::string, reduce_impl, "best",
          "Implementation: best, scalar or a SIMD target name (AVX2, ...)");

namespace mxpack::cli {
namespace {

absl::StatusOr<ReduceSpec> SpecFromFlags(size_t* access_bytes) {
  absl::StatusOr<ReduceModel> model = ParseReduceModel(absl::GetFlag(FLAGS_model));
  if (!model.ok()) return model.status();
  const std::string ptx = absl::GetFlag(FLAGS_ptx);
  const std::string type = absl::GetFlag(FLAGS_type);
  if (!ptx.empty() && !type.empty()) {
    return absl::InvalidArgumentError(
        "--ptx and --type are exclusive: the spelling already names the type");
  }
  if (!ptx.empty()) {
    absl::StatusOr<MultimemInstruction> in = ParseMultimem(ptx);
    if (!in.ok()) return in.status();
    if (in->kind != MultimemKind::kLdReduce) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--ptx=%s: expected a multimem.ld_reduce spelling, got multimem.%s",
          ptx, MultimemKindName(in->kind)));
    }
    *access_bytes = static_cast<size_t>(in->AccessBytes());
    return SpecOf(*in, *model);
  }
  if (type.empty()) {
    return absl::InvalidArgumentError("expected --ptx=SPELLING or --type=TYPE");
  }
  ReduceSpec spec;
  spec.model = *model;
  absl::StatusOr<MmType> t = ParseMmType(type);
  if (!t.ok()) return t.status();
  absl::StatusOr<ReduceOp> op = ParseReduceOp(absl::GetFlag(FLAGS_op));
  if (!op.ok()) return op.status();
  absl::StatusOr<AccPrec> acc = ParseAccPrec(absl::GetFlag(FLAGS_acc));
  if (!acc.ok()) return acc.status();
  spec.type = *t;
  spec.op = *op;
  spec.acc = *acc;
  if (absl::Status s = ValidateReduceSpec(spec); !s.ok()) return s;
  *access_bytes = static_cast<size_t>(MmTypeTraits(*t).element_bytes);
  return spec;
}

int RunReduce(const std::vector<std::string>& args) {
  size_t access = 1;
  absl::StatusOr<ReduceSpec> spec = SpecFromFlags(&access);
  if (!spec.ok()) return Fail("reduce", spec.status());
  absl::StatusOr<Impl> impl = ParseImpl(absl::GetFlag(FLAGS_reduce_impl));
  if (!impl.ok()) return Fail("reduce", impl.status());
  if (args.empty()) {
    return Fail("reduce", absl::InvalidArgumentError(
                              "expected at least one input file (one per replica), got 0"));
  }
  if (absl::Status s = CheckOutputs({absl::GetFlag(FLAGS_out)}, args); !s.ok()) {
    return Fail("reduce", s);
  }
  std::vector<std::string> data;
  for (const std::string& path : args) {
    absl::StatusOr<std::string> d = ReadInput(path);
    if (!d.ok()) return Fail("reduce", d.status());
    data.push_back(std::move(*d));
  }
  for (size_t r = 0; r < data.size(); ++r) {
    if (data[r].size() != data[0].size()) {
      return Fail("reduce", absl::InvalidArgumentError(absl::StrFormat(
                                "input %s: expected %d bytes (the size of %s), got %d",
                                args[r], data[0].size(), args[0], data[r].size())));
    }
  }
  if (data[0].size() % access != 0) {
    return Fail("reduce", absl::InvalidArgumentError(absl::StrFormat(
                              "input %s: %d bytes is not a multiple of the %d-byte access",
                              args[0], data[0].size(), access)));
  }
  std::vector<absl::Span<const uint8_t>> spans;
  for (const std::string& d : data) {
    spans.push_back(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(d.data()), d.size()));
  }
  std::string out(data[0].size(), '\0');
  if (absl::Status s = ReduceArrays(*spec, spans,
                                    absl::MakeSpan(reinterpret_cast<uint8_t*>(&out[0]), out.size()),
                                    *impl);
      !s.ok()) {
    return Fail("reduce", s);
  }
  if (absl::Status s = WriteOutput(absl::GetFlag(FLAGS_out), out); !s.ok()) {
    return Fail("reduce", s);
  }
  return 0;
}

const bool kReduce = RegisterCommand(
    {"reduce", "multimem.ld_reduce of N replica files (host model)",
     "reduce --ptx=SPELLING [--model=sequential|tree|exact|nccl] IN1 IN2 ...\n"
     "              [--out=PATH] [--reduce_impl=best|scalar|TARGET]\n"
     "       mxpack reduce --type=TYPE [--op=add|min|max|and|or|xor]\n"
     "              [--acc=none|f32|f16] [--model=...] IN1 IN2 ... [--out=PATH]\n\n"
     "Each INk is one replica: a raw little-endian element array (fp8 one code per\n"
     "byte). Element i of the output is the reduction of element i of every input\n"
     "in input order. All inputs must have the same size (a multiple of the\n"
     "instruction's access size with --ptx). Float add follows the chosen\n"
     "ReduceModel (docs/semantics.md section 4); errors write nothing.",
     {"ptx", "model", "type", "op", "acc", "reduce_impl", "out"},
     RunReduce});

}  // namespace
}  // namespace mxpack::cli
