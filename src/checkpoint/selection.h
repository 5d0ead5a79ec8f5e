// Internal: which tensors of a checkpoint are quantized (the serving stacks'
// default rules, --include / --ignore overrides) and which fused group shares
// an NVFP4 global scale.
#ifndef MXPACK_SRC_CHECKPOINT_SELECTION_H_
#define MXPACK_SRC_CHECKPOINT_SELECTION_H_

#include <optional>
#include <regex>
#include <string>

#include "absl/status/statusor.h"
#include "mxpack/safetensors.h"
#include "src/checkpoint/scheme.h"

namespace mxpack::internal {

struct Decision {
  bool quantize = false;
  std::string reason;  // why (quantized or not), for the report
  WeightShape shape;   // when quantize
};

class Selector {
 public:
  // `include` / `ignore`: ECMAScript regexes searched in the name (empty:
  // none). Errors name the flag.
  static absl::StatusOr<Selector> Create(const std::string& include,
                                         const std::string& ignore);
  Decision Decide(const StTensorInfo& t) const;

 private:
  std::optional<std::regex> include_, ignore_;
  std::string include_text_, ignore_text_;
};

// The fused group of a weight: q/k/v projections of one attention block,
// gate/up projections of one MLP or expert (also Mixtral's w1/w3) share one
// key; any other tensor is its own group. vLLM runs each group as one GEMM
// with one NVFP4 global scale.
std::string FusedGroup(const std::string& name);

// The module name of a 2-D "*.weight" tensor left unquantized that a loader
// would otherwise treat as a quantized Linear layer (lm_head, routers), or ""
// (compressed-tensors "ignore" list entries).
std::string IgnoredModule(const StTensorInfo& t);

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_CHECKPOINT_SELECTION_H_
