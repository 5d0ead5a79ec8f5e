// Tensor selection for quantize-model: the default rules of llm-compressor /
// ModelOpt recipes (linear-layer weights only) and the regex overrides.
#include "src/checkpoint/selection.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace mxpack::internal {
namespace {

absl::StatusOr<std::optional<std::regex>> Compile(const char* flag,
                                                  const std::string& pattern) {
  if (pattern.empty()) return std::optional<std::regex>();
  try {
    return std::optional<std::regex>(std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: invalid regular expression '%s': %s", flag, pattern, e.what()));
  }
}

bool IsFloat(StDtype d) {
  return d == StDtype::kF32 || d == StDtype::kF16 || d == StDtype::kBF16;
}

// The name's dot-separated components.
std::vector<std::string> Parts(const std::string& name) {
  return absl::StrSplit(name, '.');
}

bool AnyPart(const std::vector<std::string>& parts,
             std::initializer_list<const char*> words) {
  for (const std::string& p : parts) {
    for (const char* w : words) {
      if (p == w) return true;
    }
  }
  return false;
}

// Why a tensor is never a linear weight by default, or "".
std::string DefaultExclusion(const StTensorInfo& t) {
  const std::vector<std::string> parts = Parts(t.name);
  const std::string& last = parts.back();
  const std::string module = parts.size() >= 2 ? parts[parts.size() - 2] : "";
  if (last == "bias" || absl::EndsWith(last, "_bias")) return "bias";
  if (AnyPart(parts, {"embed_tokens", "wte", "wpe", "word_embeddings",
                      "embed_positions", "position_embeddings", "tok_embeddings",
                      "embeddings", "embed_in", "shared", "token_embedding"})) {
    return "embedding";
  }
  if (AnyPart(parts, {"lm_head", "embed_out"}) || t.name == "output.weight") {
    return "lm_head (output projection)";
  }
  const std::string lower_module = module;
  if (absl::StrContains(lower_module, "norm") || absl::StartsWith(lower_module, "ln") ||
      absl::StrContains(last, "norm")) {
    return "norm";
  }
  if (module == "gate" || absl::StrContains(t.name, "router")) {
    return "MoE router / gate";
  }
  return "";
}

}  // namespace

absl::StatusOr<Selector> Selector::Create(const std::string& include,
                                          const std::string& ignore) {
  Selector s;
  absl::StatusOr<std::optional<std::regex>> i = Compile("include", include);
  if (!i.ok()) return i.status();
  absl::StatusOr<std::optional<std::regex>> g = Compile("ignore", ignore);
  if (!g.ok()) return g.status();
  s.include_ = *std::move(i);
  s.ignore_ = *std::move(g);
  s.include_text_ = include;
  s.ignore_text_ = ignore;
  return s;
}

Decision Selector::Decide(const StTensorInfo& t) const {
  Decision d;
  if (!IsFloat(t.dtype)) {
    d.reason = absl::StrCat("dtype ", StDtypeName(t.dtype), " (not F32/F16/BF16)");
    return d;
  }
  const size_t rank = t.shape.size();
  if (rank != 2 && rank != 3) {
    d.reason = absl::StrFormat("%d-D (not a matrix)", rank);
    return d;
  }
  if (t.num_elements() == 0) {
    d.reason = "empty";
    return d;
  }
  if (ignore_.has_value() && std::regex_search(t.name, *ignore_)) {
    d.reason = absl::StrFormat("matches --ignore '%s'", ignore_text_);
    return d;
  }
  d.shape.stacked = rank == 3;
  d.shape.experts = rank == 3 ? t.shape[0] : 1;
  d.shape.rows = t.shape[rank - 2];
  d.shape.cols = t.shape[rank - 1];
  if (include_.has_value() && std::regex_search(t.name, *include_)) {
    d.quantize = true;
    d.reason = absl::StrFormat("matches --include '%s'", include_text_);
    return d;
  }
  if (std::string why = DefaultExclusion(t); !why.empty()) {
    d.reason = why;
    return d;
  }
  if (rank == 2) {
    if (!absl::EndsWith(t.name, ".weight")) {
      d.reason = "2-D but not a *.weight";
      return d;
    }
    d.quantize = true;
    d.reason = "linear weight";
    return d;
  }
  if (!absl::StrContains(t.name, "experts")) {
    d.reason = "3-D but not fused expert weights";
    return d;
  }
  d.quantize = true;
  d.reason = "fused expert weights (3-D)";
  return d;
}

std::string FusedGroup(const std::string& name) {
  std::string n = name;
  const bool weight = absl::EndsWith(n, ".weight");
  if (weight) n.resize(n.size() - 7);
  const size_t dot = n.rfind('.');
  const std::string prefix = dot == std::string::npos ? "" : n.substr(0, dot + 1);
  const std::string module = dot == std::string::npos ? n : n.substr(dot + 1);
  if (module == "q_proj" || module == "k_proj" || module == "v_proj") {
    return prefix + "{q,k,v}_proj";
  }
  if (module == "gate_proj" || module == "up_proj") return prefix + "{gate,up}_proj";
  if (module == "w1" || module == "w3") return prefix + "{w1,w3}";
  return name;
}

std::string IgnoredModule(const StTensorInfo& t) {
  if (t.shape.size() != 2 || !IsFloat(t.dtype) || !absl::EndsWith(t.name, ".weight")) {
    return "";
  }
  const std::string why = DefaultExclusion(t);
  if (why == "lm_head (output projection)" || why == "MoE router / gate") {
    return t.name.substr(0, t.name.size() - 7);
  }
  return "";
}

}  // namespace mxpack::internal
