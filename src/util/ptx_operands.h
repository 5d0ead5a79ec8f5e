// Operand lists of PTX instruction lines ("{%r1, %r2}, [%rd1+8]"), split and
// classified for the multimem and tcgen05 validators (docs/ptx_check.md).
#ifndef MXPACK_SRC_UTIL_PTX_OPERANDS_H_
#define MXPACK_SRC_UTIL_PTX_OPERANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mxpack {
namespace ptx {

enum class OperandKind : uint8_t {
  kRegister,   // An identifier: %r1, %rd7, r0, val_b32 (PTX identifier syntax).
  kImmediate,  // 5, -3, 0x10, 1.0, 0f3F800000, 0d3FF0000000000000.
  kSink,       // _
  kVector,     // {e0, e1, ...}; elements are registers, immediates or sinks.
  kAddress,    // [base], [base+imm], [base+-imm]; base an identifier or an
               // integer (an immediate address).
};

struct Operand {
  OperandKind kind = OperandKind::kRegister;
  std::string text;                // As written, trimmed.
  bool float_literal = false;      // kImmediate: 1.0, 0f..., 0d...
  std::vector<Operand> elements;   // kVector.
  std::string base;                // kAddress: the base identifier or integer.
  bool base_is_immediate = false;  // kAddress: [8].
  int64_t offset = 0;              // kAddress: the +imm part (0 when absent).
};

// Splits an operand list (the text after the opcode, without the trailing
// ';') at top-level commas and classifies each operand. Errors name the
// operand and what was expected; an empty text gives an empty list.
absl::StatusOr<std::vector<Operand>> ParseOperands(absl::string_view text);

// Register classes named by the convention of NVVM-generated PTX:
// %rc<N> .b8, %rs<N> .b16, %r<N> .b32, %rd<N> .b64, %f<N> .f32, %fd<N> .f64,
// %h<N> .f16, %hh<N> .f16x2, %p<N> .pred. Any other name: kUnknown (its
// declaration is not visible in one line, so its width is not checked).
enum class RegClass : uint8_t {
  kUnknown,
  kB8,
  kB16,
  kB32,
  kB64,
  kF32,
  kF64,
  kF16,
  kF16x2,
  kPred,
};
RegClass RegClassOf(absl::string_view name);
int RegClassBits(RegClass c);                // 8 .. 64; pred 1; unknown 0.
absl::string_view RegClassName(RegClass c);  // ".b32", ".f16x2", ...

}  // namespace ptx
}  // namespace mxpack

#endif  // MXPACK_SRC_UTIL_PTX_OPERANDS_H_
