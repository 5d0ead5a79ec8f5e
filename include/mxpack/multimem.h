// Host reference of the PTX multimem.ld_reduce / multimem.st / multimem.red
// instructions (PTX ISA 9.x section 9.7.9.14, docs/semantics.md section 4): a parser
// and validator of the instruction spellings with their target / ISA
// requirements, the reduction models, a multicast-object model with N
// replicas, and dispatched SIMD array reductions.
//
// NVIDIA does not specify the order or rounding of multimem float adds. The
// library therefore exposes the float add as an explicit ReduceModel; no model
// is certified bit-exact against a particular GPU (docs/semantics.md section 4).
#ifndef MXPACK_MULTIMEM_H_
#define MXPACK_MULTIMEM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"

namespace mxpack {

// ---------------------------------------------------------------------------
// Instruction grammar (PTX ISA 9.x, 9.7.9.14), as the installed ptxas
// (CUDA 13) accepts it; docs/ptx_check.md lists where ptxas and the PTX text
// differ:
//   multimem.ld_reduce{.ldsem.scope}{.ss}.op{.acc_prec}{.vec}.type d, [a];
//   multimem.ld_reduce.weak{.ss}.op{.acc_prec}{.vec}.type         d, [a];
//   multimem.st{.stsem.scope}{.ss}{.vec}.type                     [a], b;
//   multimem.st.weak{.ss}{.vec}.type                              [a], b;
//   multimem.red{.redsem.scope}{.ss}.redop{.vec}.redtype          [a], b;
//   .ldsem = {.relaxed, .acquire}  .stsem = .redsem = {.relaxed, .release}
//   .scope = {.cta, .cluster, .gpu, .sys}  .ss = {.global}
//   .acc_prec = {.acc::f32, .acc::f16}  .vec = {.v2, .v4, .v8}
// A memory-semantics qualifier and a scope come together or not at all.
// Qualifiers may come in any order, each at most once. Integer forms take
// no .vec; st and red accept and ignore .acc_prec.
// ---------------------------------------------------------------------------

enum class MultimemKind : uint8_t { kLdReduce, kSt, kRed };

enum class MemSem : uint8_t { kDefault, kWeak, kRelaxed, kAcquire, kRelease };

enum class MemScope : uint8_t { kDefault, kCta, kCluster, kGpu, kSys };

enum class ReduceOp : uint8_t { kNone, kAdd, kMin, kMax, kAnd, kOr, kXor };

enum class AccPrec : uint8_t { kNone, kF32, kF16 };

// Every .type / .redtype of the multimem tables.
enum class MmType : uint8_t {
  kB32, kB64, kU32, kU64, kS32, kS64,
  kF16, kF16x2, kBF16, kBF16x2, kF32, kF64,
  kE5M2, kE5M2x2, kE5M2x4, kE4M3, kE4M3x2, kE4M3x4,
};
inline constexpr int kNumMmTypes = 18;

struct MmTypeInfo {
  MmType type;
  const char* name;   // PTX spelling without the dot ("e4m3x2").
  int bits;           // Register bits of one .type value (e4m3x2: 16).
  int elements;       // Elements packed in one value (e4m3x2: 2).
  bool is_float;
  bool is_signed;     // s32 / s64 (integer min/max compare signed).
  Format element;     // Element format of float types (kF32 for integers).
  int element_bytes;  // Bytes of one element in memory.
};
const MmTypeInfo& MmTypeTraits(MmType t);

absl::string_view MultimemKindName(MultimemKind k);  // "ld_reduce", ...
absl::string_view MemSemName(MemSem s);              // "weak", ... ("" default)
absl::string_view MemScopeName(MemScope s);          // "cta", ... ("" default)
absl::string_view ReduceOpName(ReduceOp op);         // "add", ...
absl::string_view AccPrecName(AccPrec a);            // "acc::f32", ...

absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name);
absl::StatusOr<MmType> ParseMmType(absl::string_view name);
// "f32", "f16", "none" (also "acc::f32", ".acc::f16").
absl::StatusOr<AccPrec> ParseAccPrec(absl::string_view name);

// A decoded, legal multimem instruction.
struct MultimemInstruction {
  MultimemKind kind = MultimemKind::kLdReduce;
  MemSem sem = MemSem::kDefault;        // As written (kDefault: omitted).
  MemScope scope = MemScope::kDefault;  // As written (kDefault: omitted).
  bool global = false;                  // .global written.
  ReduceOp op = ReduceOp::kNone;        // kNone for st.
  AccPrec acc = AccPrec::kNone;
  int vec = 1;                          // 1 (no .vec), 2, 4 or 8.
  MmType type = MmType::kB32;
  // st / red: the .acc_prec ptxas accepts and ignores (`acc` stays kNone).
  AccPrec ignored_acc = AccPrec::kNone;
  // Parsed from a spelling whose qualifiers are not in the PTX syntax order.
  bool reordered = false;

  // Canonical spelling, e.g. "multimem.ld_reduce.add.acc::f16.v4.e4m3".
  std::string ToString() const;
  // Semantics / scope in effect (PTX defaults: ld_reduce and st .weak, red
  // .relaxed; red scope .sys).
  MemSem EffectiveSem() const;
  MemScope EffectiveScope() const;
  // Bytes accessed per replica: vec * type bits / 8.
  int AccessBytes() const;
  // Elements per access: vec * packing of the type.
  int AccessElements() const;
};

// The rule a rejected spelling violates (also named in the error message).
enum class MultimemRule : uint8_t {
  kSyntax,         // Not "multimem.<ld_reduce|st|red>..." or unknown token.
  kDuplicate,      // Two qualifiers of one kind (two scopes, .v4.v4, ...).
  kSemantics,      // .ldsem/.stsem/.redsem, .weak form, sem <-> scope pairing.
  kOpType,         // The .op / type table (or .redop / .redtype).
  kVecSize,        // .vec x type size must be 32, 64 or 128 bits.
  kF64Vec,         // .f64 takes no .vec.
  kAccType,        // .acc::f32 only f16/bf16 forms, .acc::f16 only fp8 forms.
  kIntegerForm,    // Integer forms take no .vec / .acc_prec.
  kStForm,         // st takes no .op / .acc_prec.
  kRedForm,        // red: no fp8 types; float .min/.max only with .vec.
  kOperand,        // Operand count, vector braces, register width, address.
  kTarget,         // Not supported on the requested target.
};
absl::string_view MultimemRuleName(MultimemRule r);

// Parses and validates a spelling. Accepts the bare spelling or a full
// instruction line ("multimem.st.v4.f32 [a], {r0,r1,r2,r3};", optional
// leading predicate "@p"); operands, when present, are checked with
// CheckMultimemOperands. An error is InvalidArgument whose message starts
// with "[rule-name]" and names the offending qualifier, the expected and the
// actual value; `rule` (when non-null) receives the violated rule.
absl::StatusOr<MultimemInstruction> ParseMultimem(absl::string_view spelling,
                                                  MultimemRule* rule = nullptr);

// Checks the operand text of a line ("{%r1, %r2}, [%rd1+8]"; empty: nothing
// to check): count and order (ld_reduce d, [a]; st / red [a], b), vector
// braces with .vec elements, register width against the type by the NVVM
// register naming (%rc .b8, %rs .b16, %r .b32, %rd .b64, %f .f32, %fd .f64,
// %h .f16, %hh .f16x2, %p .pred; other names are not width-checked), and
// the address ([reg], [reg+imm], [reg+-imm] with a 64-bit register). Notes
// where ptxas accepts what the PTX text does not are appended to `notes`.
// Immediate sources are modelled for integer types (integer literals) and
// .f32/.f64 (float literals) only: others give Unimplemented.
absl::Status CheckMultimemOperands(const MultimemInstruction& instr,
                                   absl::string_view operands,
                                   std::vector<std::string>* notes = nullptr,
                                   MultimemRule* rule = nullptr);

// Where ptxas 13 accepts `instr` although the PTX ISA text does not (each
// note names the text's rule); empty when the two agree.
std::vector<std::string> MultimemPtxasNotes(const MultimemInstruction& instr);

// Validates a structured instruction (the same rules as ParseMultimem).
absl::Status ValidateMultimem(const MultimemInstruction& instr,
                              MultimemRule* rule = nullptr);

// ---------------------------------------------------------------------------
// Targets and ISA versions (PTX ISA notes of 9.7.9.14):
//   multimem introduced in PTX 8.1, requires sm_90 or higher;
//   .acc::f32 from PTX 8.2;
//   .e5m2*/.e4m3* types and .acc::f16 from PTX 8.6, only on sm_100a, sm_101a
//   (renamed sm_110a in PTX 9.0), sm_120a, sm_121a, and from PTX 8.8 on the
//   family targets "sm_100f or higher in the same family" and
//   "sm_101f (renamed sm_110f) or higher in the same family".
// ---------------------------------------------------------------------------

struct PtxTarget {
  int sm = 90;          // 90, 100, 101, 103, 110, 120, 121, ...
  char suffix = '\0';   // '\0', 'a' (arch-specific) or 'f' (family).
  std::string ToString() const;  // "sm_100a"
};
// Parses "sm_90", "sm_100a", "sm_100f", "SM_120A", "compute_100a".
absl::StatusOr<PtxTarget> ParsePtxTarget(absl::string_view name);

// Minimum PTX ISA version x 10 (81 = PTX ISA 8.1) of the instruction itself.
int MultimemMinPtxIsa(const MultimemInstruction& instr);
// True for the fp8 types or .acc::f16 (the arch/family-restricted forms).
bool MultimemNeedsFp8Target(const MultimemInstruction& instr);
// Human-readable target requirement ("sm_90 or higher", or the fp8 list).
std::string MultimemTargetText(const MultimemInstruction& instr);

// Checks that `instr` runs on `target`; on success returns the minimum PTX
// ISA version (x 10) for this instruction on this target (e.g. the family
// targets need 8.8, sm_110a needs 9.0). Errors name rule kTarget.
absl::StatusOr<int> CheckMultimemTarget(const MultimemInstruction& instr,
                                        const PtxTarget& target);

// ---------------------------------------------------------------------------
// Reduction semantics (docs/semantics.md section 4).
// ---------------------------------------------------------------------------

// How a float .add combines the N replica values. Integer ops, bitwise ops
// and float min/max are exact and ignore the model.
enum class ReduceModel : uint8_t {
  // Fold replicas 0..N-1 in the accumulation type (the element type, or the
  // .acc type), RNE after each add (IEEE: overflow gives Inf; when the
  // accumulation type is fp8 each add is satfinite); the result is rounded
  // RNE to the element type, fp8 results satfinite.
  kSequential,
  // Balanced pairwise tree, level by level: (0,1), (2,3), ...; an odd last
  // operand is carried unchanged to the next level. Otherwise as kSequential.
  kPairwiseTree,
  // Exact sum of all inputs (wide fixed-point accumulator), rounded once RNE
  // to the element type (fp8 satfinite). .acc is irrelevant.
  kExactOnce,
  // NCCL's software path: fp8 -> f16 add (RNE to f16) -> satfinite fp8 after
  // every add (sequential); f16/bf16 add in f32 and round RNE to the element
  // type after every add; f32/f64 as kSequential. .acc is ignored.
  kNcclSoftware,
};
absl::string_view ReduceModelName(ReduceModel m);  // "sequential", ...
// "sequential", "tree" (or "pairwise"), "exact", "nccl".
absl::StatusOr<ReduceModel> ParseReduceModel(absl::string_view name);

// Element-wise reduction spec (what ld_reduce does per element). Packed
// types (e4m3x2, ...) reduce element-wise exactly like their base type.
struct ReduceSpec {
  MmType type = MmType::kF32;
  ReduceOp op = ReduceOp::kAdd;
  AccPrec acc = AccPrec::kNone;
  ReduceModel model = ReduceModel::kSequential;
};

// The op/type table and the .acc rule, without the .vec rule (array APIs
// reduce any number of elements). Errors name the rule like ParseMultimem.
absl::Status ValidateReduceSpec(const ReduceSpec& spec);

// The spec of an ld_reduce (or red: the replica value and b are the two
// operands) instruction under `model`.
ReduceSpec SpecOf(const MultimemInstruction& instr,
                  ReduceModel model = ReduceModel::kSequential);

namespace scalar {

// Reduces one element: `codes` are the element codes (low bits; integer
// types as two's complement bit patterns) of replicas 0..N-1 (N >= 1).
// Preconditions: ValidateReduceSpec(spec).ok().
//
// Float min/max: if one operand is NaN the result is the other; both NaN
// give the canonical NaN; -0 < +0. Float add: see ReduceModel; any NaN
// operand, or Inf - Inf, gives the canonical NaN of the accumulation type and
// then of the element type (fp8: 0x7F); signed zero follows IEEE RNE (a sum
// is -0 only when every operand is -0). Integer add wraps.
uint64_t ReduceElement(const ReduceSpec& spec, absl::Span<const uint64_t> codes);

// Array form over N equally sized little-endian element arrays (one element
// per storage unit: 1 byte fp8, 2 bytes f16/bf16, 4/8 bytes f32/f64/ints).
// Checks everything; nothing is written on error.
absl::Status ReduceArrays(const ReduceSpec& spec,
                          absl::Span<const absl::Span<const uint8_t>> sources,
                          absl::Span<uint8_t> out);

}  // namespace scalar

// Dispatched array reduction: identical results to scalar::ReduceArrays for
// every Impl. SIMD kernels exist for float .add with kSequential and
// kPairwiseTree on e4m3/e5m2 (acc::f16), f16/bf16 (acc::f32) and f32, with
// kNcclSoftware on all of them, kSequential f16/bf16 without .acc, kExactOnce
// on e4m3/e5m2/f16 (up to 8192 sources), and float min/max on
// e4m3/e5m2/f16/bf16; on x86 CPUs with AVX512-FP16 the AVX3 targets run the
// fp8 acc::f16 and NCCL models with native f16 adds. Other specs (integers,
// kExactOnce on bf16/f32/f64, fp8 add without .acc under kSequential /
// kPairwiseTree) and fp8 chunks with NaN/Inf codes where a kernel needs
// finite codes run the scalar reference.
absl::Status ReduceArrays(const ReduceSpec& spec,
                          absl::Span<const absl::Span<const uint8_t>> sources,
                          absl::Span<uint8_t> out, Impl impl = {});

// True when ReduceArrays(spec, ..., impl) runs a SIMD kernel for some blocks.
bool HasSimdReduce(const ReduceSpec& spec);

// ---------------------------------------------------------------------------
// Host model of a multicast object: N replica buffers of equal size, the same
// multimem address naming byte offset `offset` in every replica. Accesses
// must be naturally aligned to instr.AccessBytes() (PTX alignment rule) and
// in bounds. Replica order 0..N-1 is the reduction order of the models.
// ---------------------------------------------------------------------------
class MulticastObject {
 public:
  MulticastObject(size_t num_replicas, size_t bytes_per_replica);

  size_t num_replicas() const { return replicas_.size(); }
  size_t bytes() const { return bytes_; }
  absl::Span<uint8_t> replica(size_t i) { return absl::MakeSpan(replicas_[i]); }
  absl::Span<const uint8_t> replica(size_t i) const {
    return absl::MakeConstSpan(replicas_[i]);
  }

  // multimem.ld_reduce: returns AccessBytes() bytes (the destination
  // register(s), little-endian, element i of the access first).
  absl::StatusOr<std::vector<uint8_t>> LdReduce(
      const MultimemInstruction& instr, size_t offset,
      ReduceModel model = ReduceModel::kSequential) const;
  // multimem.st: writes `b` (AccessBytes() bytes) to every replica.
  absl::Status St(const MultimemInstruction& instr, size_t offset,
                  absl::Span<const uint8_t> b);
  // multimem.red: replica = replica op b at every replica, element-wise. Float
  // red is a two-operand add rounded once RNE to the element type (every
  // ReduceModel gives the same result for two operands).
  absl::Status Red(const MultimemInstruction& instr, size_t offset,
                   absl::Span<const uint8_t> b,
                   ReduceModel model = ReduceModel::kSequential);

 private:
  absl::Status CheckAccess(const MultimemInstruction& instr, MultimemKind kind,
                           size_t offset, size_t operand_bytes) const;
  size_t bytes_;
  std::vector<std::vector<uint8_t>> replicas_;
};

}  // namespace mxpack

#endif  // MXPACK_MULTIMEM_H_
