// Internal to src/tmem: the tcgen05 shape table and the helpers the parser,
// the geometry and the target rules share.
#ifndef MXPACK_SRC_TMEM_TCGEN05_INTERNAL_H_
#define MXPACK_SRC_TMEM_TCGEN05_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "mxpack/tcgen05.h"

namespace mxpack {
namespace tcgen05 {
namespace internal {

struct ShapeInfo {
  Shape shape;
  const char* name;
  Op family;        // kCp, kLd (ld and st), kShift.
  int lanes;        // Rows of the shape.
  int bits;         // Bits per lane per repetition.
  int max_num;      // ld/st: largest .num (Table 49 [PTX]); 0 otherwise.
  int regs_per_num; // ld/st: registers per thread per .num.
};

// [PTX] 9.7.16.2.3 shape table; .num limits and register counts from PTX
// Table 49, cross-checked with the [CCCL] wrappers (16x128b stops at .x64
// with 128 registers, 16x256b at .x32 with 128 registers).
inline constexpr ShapeInfo kShapes[] = {
    {Shape::k128x256b, "128x256b", Op::kCp, 128, 256, 0, 0},
    {Shape::k128x128b, "128x128b", Op::kCp, 128, 128, 0, 0},
    {Shape::k4x256b, "4x256b", Op::kCp, 4, 256, 0, 0},
    {Shape::k64x128b, "64x128b", Op::kCp, 64, 128, 0, 0},
    {Shape::k32x128b, "32x128b", Op::kCp, 32, 128, 0, 0},
    {Shape::k32x32b, "32x32b", Op::kLd, 32, 32, 128, 1},
    {Shape::k16x64b, "16x64b", Op::kLd, 16, 64, 128, 1},
    {Shape::k16x128b, "16x128b", Op::kLd, 16, 128, 64, 2},
    {Shape::k16x256b, "16x256b", Op::kLd, 16, 256, 32, 4},
    {Shape::k16x32bx2, "16x32bx2", Op::kLd, 16, 32, 128, 1},
    {Shape::k31x256b, "31x256b", Op::kShift, 31, 256, 0, 0},
};

inline const ShapeInfo& Info(Shape s) { return kShapes[static_cast<int>(s)]; }

inline bool IsLdSt(Op op) { return op == Op::kLd || op == Op::kSt; }

inline std::string ShapeList(Op family) {
  std::vector<std::string> names;
  for (const ShapeInfo& i : kShapes) {
    if (i.family == family) names.push_back(absl::StrCat(".", i.name));
  }
  return absl::StrJoin(names, ", ");
}

inline std::string OpFull(Op op) { return absl::StrCat("tcgen05.", OpName(op)); }

inline absl::Status RuleError(absl::string_view rule, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(rule, ": ", message));
}

}  // namespace internal
}  // namespace tcgen05
}  // namespace mxpack

#endif  // MXPACK_SRC_TMEM_TCGEN05_INTERNAL_H_
