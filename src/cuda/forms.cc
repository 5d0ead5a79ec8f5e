// The instruction forms of the CUDA backend as host tables (the .inc files
// are shared with the kernels), compiled in every build so that tests and
// the PTX inspection can list exactly what the device code issues.
#include <vector>

#include "mxpack/cuda.h"

namespace mxpack {
namespace cuda {

bool BuiltWithCuda() {
#if defined(MXPACK_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

absl::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPassed: return "passed";
    case Outcome::kFailed: return "FAILED";
    case Outcome::kSkipped: return "skipped";
  }
  return "?";
}

const std::vector<CvtForm>& CvtForms() {
  static const auto* forms = [] {
    auto* v = new std::vector<CvtForm>;
#define MXPACK_CVT_ROW(ID, PTX, from, to, rnd, sat, relu, width, arch)         \
  v->push_back(CvtForm{PTX, Format::from, Format::to,                           \
                       EncodePolicy{Rounding::rnd, Saturation::sat, relu,       \
                                    OverflowTie::kEven},                        \
                       width, Arch::arch});
#define F32X2 MXPACK_CVT_ROW
#define F32X2_B8 MXPACK_CVT_ROW
#define PACK_W2N MXPACK_CVT_ROW
#define PACK_N2W MXPACK_CVT_ROW
#define PACK_B8 MXPACK_CVT_ROW
#define RS_F32X4 MXPACK_CVT_ROW
#define RS_F32X4_B16 MXPACK_CVT_ROW
#define RS_F32X2 MXPACK_CVT_ROW
#include "src/cuda/cvt_forms.inc"
#undef F32X2
#undef F32X2_B8
#undef PACK_W2N
#undef PACK_N2W
#undef PACK_B8
#undef RS_F32X4
#undef RS_F32X4_B16
#undef RS_F32X2
#undef MXPACK_CVT_ROW
    return v;
  }();
  return *forms;
}

const std::vector<const char*>& TmemCpForms() {
  static const auto* forms = new std::vector<const char*>{
#define CP(ID, PTX) PTX,
#include "src/cuda/tmem_forms.inc"
#undef CP
  };
  return *forms;
}

const std::vector<const char*>& TmemLdForms() {
  static const auto* forms = new std::vector<const char*>{
#define LD2(ID, PTX) PTX,
#define LD2H(ID, PTX) PTX,
#define LD4(ID, PTX) PTX,
#include "src/cuda/tmem_ld_forms.inc"
#undef LD2
#undef LD2H
#undef LD4
  };
  return *forms;
}

const std::vector<const char*>& TmemStForms() {
  static const auto* forms = new std::vector<const char*>{
#define ST2(ID, PTX) PTX,
#define ST2H(ID, PTX) PTX,
#define ST4(ID, PTX) PTX,
#include "src/cuda/tmem_st_forms.inc"
#undef ST2
#undef ST2H
#undef ST4
  };
  return *forms;
}

absl::StatusOr<tcgen05::Instruction> ParseFragmentForm(const char* spelling) {
  absl::StatusOr<tcgen05::Instruction> inst = tcgen05::Parse(spelling);
  if (inst.ok() && inst->shape == tcgen05::Shape::k16x32bx2) {
    inst->half_split_offset = kLdHalfSplitOffset;
  }
  return inst;
}

const std::vector<const char*>& MultimemForms() {
  static const auto* forms = new std::vector<const char*>{
#define MXPACK_MM_ROW(ID, PTX, arch) PTX,
#define LDR32 MXPACK_MM_ROW
#define LDR32V2 MXPACK_MM_ROW
#define LDR32V4 MXPACK_MM_ROW
#define LDR64 MXPACK_MM_ROW
#define ST32 MXPACK_MM_ROW
#define ST32V2 MXPACK_MM_ROW
#define ST32V4 MXPACK_MM_ROW
#define ST64 MXPACK_MM_ROW
#define RED32 MXPACK_MM_ROW
#define RED32V2 MXPACK_MM_ROW
#define RED32V4 MXPACK_MM_ROW
#define RED64 MXPACK_MM_ROW
#include "src/cuda/multimem_forms.inc"
#undef LDR32
#undef LDR32V2
#undef LDR32V4
#undef LDR64
#undef ST32
#undef ST32V2
#undef ST32V4
#undef ST64
#undef RED32
#undef RED32V2
#undef RED32V4
#undef RED64
#undef MXPACK_MM_ROW
  };
  return *forms;
}

}  // namespace cuda
}  // namespace mxpack
