// Launchers of the CUDA backend's kernels (src/cuda/kernels_*.cu), declared
// in plain C++ so the host code (runtime.cc) needs neither nvcc nor Abseil
// inside the .cu files. Each returns an empty string on success, else the
// CUDA error text. Buffers are host memory; the launchers allocate, copy,
// launch on the current device and copy back.
#ifndef MXPACK_SRC_CUDA_KERNELS_H_
#define MXPACK_SRC_CUDA_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace mxpack {
namespace cuda {
namespace internal {

// Operand patterns of cvt_forms.inc.
enum class CvtKind : int {
  kF32x2,
  kF32x2B8,
  kPackW2N,
  kPackN2W,
  kPackB8,
  kRsF32x4,
  kRsF32x4B16,
  kRsF32x2,
};

// cvt form `form` over `groups` instructions. F32 kinds read width floats
// per group from `in_f32`; packed kinds read one 32-bit source register per
// group from `in_packed` (zero-extended). `rbits` (cvt.rs kinds) holds one
// word per group. Writes the destination register of each group
// (zero-extended) to out[g].
std::string RunCvtKernel(int form, CvtKind kind, int width, const float* in_f32,
                         const uint32_t* in_packed, const uint32_t* rbits, uint32_t* out,
                         size_t groups);

// Tensor-memory program of TmemCpJob (mxpack/cuda.h); cells_out receives
// 128 x 512 words.
std::string RunTmemCpKernel(int cp_form, const uint8_t* image, size_t image_bytes,
                            uint64_t desc, uint32_t cp_taddr, bool shift,
                            uint32_t shift_taddr, uint32_t fill, size_t max_dynamic_smem,
                            uint32_t* cells_out);

// tcgen05.ld form `ld_form` (nregs registers per thread) by warps 0..3 at
// lane 32 * warp, column `column`, after filling TMEM with
// FragmentPattern(). regs_out receives [warp][thread][register].
std::string RunTmemLdKernel(int ld_form, int nregs, int column, uint32_t* regs_out);

// Fills TMEM with FragmentPattern(), then warps 0..3 store StPattern()
// registers with tcgen05.st form `st_form` at lane 32 * warp, column
// `column`; cells_out receives the 128 x 512 cells afterwards.
std::string RunTmemStKernel(int st_form, int column, uint32_t* cells_out);

// multimem form `form` issued from the current device on the multicast
// address `mc` (device pointer) for `count` accesses of `access_bytes`
// each (thread i at byte offset i * access_bytes). ld_reduce writes the
// results to `result` (count * access_bytes bytes); st / red read their
// operand from `b` (count * access_bytes bytes).
enum class MultimemKind : int { kLdReduce, kSt, kRed };
std::string RunMultimemKernel(int form, MultimemKind kind, int access_bytes, void* mc,
                              size_t count, const uint8_t* b, uint8_t* result);

}  // namespace internal
}  // namespace cuda
}  // namespace mxpack

#endif  // MXPACK_SRC_CUDA_KERNELS_H_
