// `mxpack gpu-verify` checks: every device instruction of the CUDA backend
// against the host model (scalar / SIMD conversion, pack.h decompression,
// tmem.h tensor memory, multimem.h reduction models). Compiled in every
// build; without a usable device each group reports its checks as skipped
// with the reason.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/convert.h"
#include "mxpack/cuda.h"
#include "mxpack/multimem.h"
#include "mxpack/pack.h"
#include "mxpack/tcgen05.h"
#include "mxpack/tmem.h"

namespace mxpack {
namespace cuda {
namespace {

CheckResult Row(std::string group, std::string name, Outcome outcome, uint64_t compared,
                std::string detail) {
  return CheckResult{std::move(group), std::move(name), outcome, compared,
                     std::move(detail)};
}

CheckResult Skipped(std::string group, std::string name, const absl::Status& why) {
  return Row(std::move(group), std::move(name), Outcome::kSkipped, 0,
             std::string(why.message()));
}

CheckResult Failed(std::string group, std::string name, const absl::Status& why) {
  return Row(std::move(group), std::move(name), Outcome::kFailed, 0,
             std::string(why.message()));
}

int Threads(const VerifyOptions& o) {
  if (o.threads > 0) return o.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs fn(begin, end) over [0, n) in `threads` contiguous pieces, each a
// multiple of `align` long.
template <typename Fn>
void ParallelFor(size_t n, size_t align, int threads, Fn fn) {
  const size_t per = (n / align + threads - 1) / threads * align;
  std::vector<std::thread> pool;
  for (size_t b = 0; b < n; b += per) {
    const size_t e = std::min(n, b + per);
    pool.emplace_back([=] { fn(b, e); });
  }
  for (auto& t : pool) t.join();
}

// ---------------------------------------------------------------------------
// cvt

// f32 inputs when not exhaustive: every sign and biased exponent with
// mantissas that hit the rounding boundaries of every narrow format (kept
// bits 1..3: patterns, ties, ties +-1 ulp, sticky), then random words.
std::vector<uint32_t> SweepF32(uint64_t seed) {
  std::vector<uint32_t> v;
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t e = 0; e < 256; ++e) {
      for (int kept = 1; kept <= 3; ++kept) {
        const int shift = 23 - kept;
        for (uint32_t m = 0; m < (1u << kept); ++m) {
          const uint32_t base = (sign << 31) | (e << 23) | (m << shift);
          const uint32_t half = 1u << (shift - 1);
          for (uint32_t mant : {0u, 1u, half - 1, half, half + 1, (1u << shift) - 1}) {
            v.push_back(base | mant);
          }
        }
      }
    }
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < (1 << 22); ++i) v.push_back(static_cast<uint32_t>(rng()));
  while (v.size() % 4 != 0) v.push_back(0);
  return v;
}

struct CvtTally {
  uint64_t compared = 0, mismatches = 0;
  std::string first;
};

// Converts `in` (n elements of form.from) on the device and with the host
// model; rbits per instruction for cvt.rs.
absl::Status CompareCvt(size_t index, const CvtForm& form, absl::Span<const uint8_t> in,
                        absl::Span<const uint32_t> rbits, int threads, CvtTally* tally) {
  const size_t sb = static_cast<size_t>(Traits(form.from).storage_bytes);
  const size_t db = static_cast<size_t>(Traits(form.to).storage_bytes);
  const size_t n = in.size() / sb;
  std::vector<uint8_t> dev(n * db), host(n * db);
  absl::Status s = DeviceConvert(index, in, absl::MakeSpan(dev), rbits);
  if (!s.ok()) return s;
  const bool rs = form.policy.rounding == Rounding::kRS;
  std::vector<uint32_t> element_rbits;
  if (rs) {
    element_rbits.resize(n);
    for (size_t i = 0; i < n; ++i) element_rbits[i] = rbits[i / form.width];
  }
  std::vector<absl::Status> errors(static_cast<size_t>(threads) + 1);
  ParallelFor(n, static_cast<size_t>(form.width), threads, [&](size_t b, size_t e) {
    const absl::Status st =
        ConvertArray(form.from, form.to, form.policy, in.subspan(b * sb, (e - b) * sb),
                     absl::MakeSpan(host).subspan(b * db, (e - b) * db),
                     rs ? absl::MakeConstSpan(element_rbits).subspan(b, e - b)
                        : absl::Span<const uint32_t>());
    if (!st.ok()) errors[0] = st;
  });
  if (!errors[0].ok()) return errors[0];
  for (size_t i = 0; i < n; ++i) {
    ++tally->compared;
    if (std::memcmp(&dev[i * db], &host[i * db], db) == 0) continue;
    if (tally->mismatches++ == 0) {
      uint64_t src = 0, d = 0, h = 0;
      std::memcpy(&src, &in[i * sb], sb);
      std::memcpy(&d, &dev[i * db], db);
      std::memcpy(&h, &host[i * db], db);
      tally->first = absl::StrFormat(
          "input 0x%0*X%s: device 0x%0*X, host model 0x%0*X", static_cast<int>(2 * sb),
          src, rs ? absl::StrFormat(" rbits 0x%08X", element_rbits[i]) : "",
          static_cast<int>(2 * db), d, static_cast<int>(2 * db), h);
    }
  }
  return absl::OkStatus();
}

CheckResult VerifyOneCvt(size_t index, const CvtForm& form, const VerifyOptions& o) {
  const std::string name = form.ptx;
  absl::Status arch = RequireArch(form.arch);
  if (!arch.ok()) return Skipped("cvt", name, arch);
  const bool rs = form.policy.rounding == Rounding::kRS;
  std::mt19937_64 rng(o.seed * 1000003u + index);
  CvtTally tally;
  std::string inputs;
  auto run = [&](const std::vector<uint8_t>& in) -> absl::Status {
    const size_t n = in.size() / static_cast<size_t>(Traits(form.from).storage_bytes);
    std::vector<uint32_t> rbits(rs ? n / static_cast<size_t>(form.width) : 0);
    for (auto& r : rbits) r = static_cast<uint32_t>(rng());
    return CompareCvt(index, form, in, rbits, Threads(o), &tally);
  };
  absl::Status s;
  if (form.from == Format::kF32) {
    if (o.exhaustive_cvt) {
      inputs = "all 2^32 f32 inputs";
      constexpr uint64_t kChunk = uint64_t{1} << 24;
      std::vector<uint8_t> in(kChunk * 4);
      for (uint64_t c = 0; c < (uint64_t{1} << 32) && s.ok(); c += kChunk) {
        for (uint64_t i = 0; i < kChunk; ++i) {
          const uint32_t bits = static_cast<uint32_t>(c + i);
          std::memcpy(&in[i * 4], &bits, 4);
        }
        s = run(in);
      }
    } else {
      inputs = "structured f32 sweep + 2^22 random";
      const std::vector<uint32_t> sweep = SweepF32(o.seed);
      std::vector<uint8_t> in(sweep.size() * 4);
      std::memcpy(in.data(), sweep.data(), in.size());
      s = run(in);
    }
  } else if (!IsNarrow(form.from)) {
    inputs = absl::StrCat("all 2^16 ", FormatName(form.from), " inputs");
    std::vector<uint8_t> in(size_t{1} << 17);
    for (uint32_t i = 0; i < (1u << 16); ++i) {
      in[2 * i] = static_cast<uint8_t>(i);
      in[2 * i + 1] = static_cast<uint8_t>(i >> 8);
    }
    s = run(in);
  } else {
    const int bits = Traits(form.from).bits;
    inputs = absl::StrCat("every ", FormatName(form.from), " code in every lane");
    // Every code in every lane position: code i at element i, then shifted
    // by one element.
    std::vector<uint8_t> in;
    for (int lane = 0; lane < form.width; ++lane) {
      for (int i = 0; i < lane; ++i) in.push_back(0);
      for (uint32_t c = 0; c < (1u << bits); ++c) in.push_back(static_cast<uint8_t>(c));
      while (in.size() % static_cast<size_t>(form.width) != 0) in.push_back(0);
    }
    s = run(in);
  }
  if (!s.ok()) return Failed("cvt", name, s);
  if (tally.mismatches != 0) {
    return Row(
        "cvt", name, Outcome::kFailed, tally.compared,
        absl::StrFormat("%d mismatches vs %s -> %s %s; first: %s", tally.mismatches,
                        FormatName(form.from), FormatName(form.to),
                        PolicyToString(form.policy), tally.first));
  }
  return Row("cvt", name, Outcome::kPassed, tally.compared,
             absl::StrFormat("%s == host %s -> %s %s%s", inputs, FormatName(form.from),
                             FormatName(form.to), PolicyToString(form.policy),
                             rs ? " (one rbits word per instruction)" : ""));
}

// ---------------------------------------------------------------------------
// tcgen05

std::string FirstCellDiff(const std::vector<uint32_t>& dev, const Tmem& model) {
  for (int lane = 0; lane < tcgen05::kLanes; ++lane) {
    for (int col = 0; col < tcgen05::kColumns; ++col) {
      const uint32_t d = dev[static_cast<size_t>(lane) * 512 + col];
      if (d != model.At(lane, col)) {
        return absl::StrFormat("lane %d column %d: device 0x%08X, model 0x%08X", lane,
                               col, d, model.At(lane, col));
      }
    }
  }
  return "";
}

// A K-major tile for `inst`: no swizzle (LBO = 128, SBO = chunks * 128) or
// the given swizzle (row pitch = swizzle width, SBO = 8 * width).
absl::StatusOr<std::pair<uint64_t, size_t>> TileFor(const tcgen05::Instruction& inst,
                                                    tcgen05::Swizzle swizzle) {
  tcgen05::SmemDescriptor d;
  const int rows = tcgen05::CpRows(inst.shape);
  const int chunks = tcgen05::CpChunksPerRow(inst.shape);
  d.swizzle = swizzle;
  const uint32_t width = swizzle == tcgen05::Swizzle::kNone  ? 0
                         : swizzle == tcgen05::Swizzle::k32B ? 32
                         : swizzle == tcgen05::Swizzle::k64B ? 64
                                                             : 128;
  d.leading_byte_offset = 128;
  d.stride_byte_offset = width == 0 ? 128u * static_cast<uint32_t>(chunks) : 8 * width;
  auto desc = tcgen05::EncodeDescriptor(d);
  if (!desc.ok()) return desc.status();
  size_t bytes = 0;
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < chunks; ++j) {
      auto a = tcgen05::ChunkAddress(d, r, j);
      if (!a.ok()) return a.status();
      bytes = std::max(bytes, static_cast<size_t>(*a) + 16);
    }
  }
  return std::make_pair(*desc, bytes);
}

CheckResult VerifyCp(size_t form, tcgen05::Swizzle swizzle, bool shift,
                     uint32_t shift_lane, const VerifyOptions& o) {
  std::string name = TmemCpForms()[form];
  if (swizzle != tcgen05::Swizzle::kNone) {
    absl::StrAppend(&name, " (swizzle ", tcgen05::SwizzleName(swizzle), ")");
  }
  if (shift) {
    absl::StrAppend(&name, " + tcgen05.shift.cta_group::1.down lane ", shift_lane);
  }
  const std::string group = shift ? "tcgen05.shift" : "tcgen05.cp";
  auto job = MakeCpJob(form, swizzle, o.seed);
  if (!job.ok()) {
    return job.status().code() == absl::StatusCode::kUnimplemented
               ? Skipped(group, name, job.status())
               : Failed(group, name, job.status());
  }
  job->shift = shift;
  job->shift_taddr = tcgen05::MakeTaddr(shift_lane, 16);
  auto inst = tcgen05::Parse(TmemCpForms()[form]);
  if (!inst.ok()) return Failed(group, name, inst.status());
  auto dev = RunTmemCp(*job);
  if (!dev.ok()) {
    return dev.status().code() == absl::StatusCode::kUnavailable
               ? Skipped(group, name, dev.status())
               : Failed(group, name, dev.status());
  }
  auto model = [&](Fp6Container c) { return ModelCp(*job, c); };
  const uint64_t cells = uint64_t{128} * 512;
  if (inst->src_fmt == tcgen05::SrcFmt::kB6x16P32) {
    auto low = model(Fp6Container::kLow6);
    auto mid = model(Fp6Container::kMid6);
    if (!low.ok()) return Failed(group, name, low.status());
    if (!mid.ok()) return Failed(group, name, mid.status());
    const std::string dl = FirstCellDiff(*dev, *low), dm = FirstCellDiff(*dev, *mid);
    if (dl.empty()) {
      return Row(group, name, Outcome::kPassed, cells,
                 "every code: FP6 container = low6 (00xxxxxx, Fp6Container::kLow6, the "
                 "documented default), padding ignored");
    }
    if (dm.empty()) {
      return Row(group, name, Outcome::kPassed, cells,
                 "every code: FP6 container = mid6 (0xxxxxx0, Fp6Container::kMid6): the "
                 "documented default kLow6 is wrong for this hardware");
    }
    return Row(
        group, name, Outcome::kFailed, cells,
        absl::StrCat("neither FP6 placement matches; vs low6: ", dl, "; vs mid6: ", dm));
  }
  auto m = model(Fp6Container::kLow6);
  if (!m.ok()) return Failed(group, name, m.status());
  const std::string diff = FirstCellDiff(*dev, *m);
  if (!diff.empty()) return Row(group, name, Outcome::kFailed, cells, diff);
  std::string detail = "all 128x512 cells == Tmem model";
  if (inst->src_fmt == tcgen05::SrcFmt::kB4x16P64) {
    absl::StrAppend(&detail, " (every e2m1 code, container 00xxxx00, padding ignored)");
  }
  if (shift) absl::StrAppend(&detail, "; lane 0 of the block keeps its data");
  return Row(group, name, Outcome::kPassed, cells, detail);
}

CheckResult VerifyLd(size_t form) {
  const std::string name = TmemLdForms()[form];
  auto inst = ParseFragmentForm(name.c_str());
  if (!inst.ok()) return Failed("tcgen05.ld", name, inst.status());
  constexpr int kColumn = 16;
  auto dev = RunTmemLd(form, kColumn);
  if (!dev.ok()) {
    return dev.status().code() == absl::StatusCode::kUnavailable
               ? Skipped("tcgen05.ld", name, dev.status())
               : Failed("tcgen05.ld", name, dev.status());
  }
  Tmem t;
  for (int lane = 0; lane < tcgen05::kLanes; ++lane) {
    for (int col = 0; col < tcgen05::kColumns; ++col) {
      (void)t.Write(lane, col, FragmentPattern(lane, col));
    }
  }
  uint64_t compared = 0;
  for (int w = 0; w < 4; ++w) {
    auto regs =
        t.Ld(*inst, w, tcgen05::MakeTaddr(32u * static_cast<uint32_t>(w), kColumn));
    if (!regs.ok()) return Failed("tcgen05.ld", name, regs.status());
    for (int th = 0; th < 32; ++th) {
      for (size_t j = 0; j < (*regs)[th].size(); ++j) {
        ++compared;
        const uint32_t d = (*dev)[w][th][j], m = (*regs)[th][j];
        if (d != m) {
          return Row(
              "tcgen05.ld", name, Outcome::kFailed, compared,
              absl::StrFormat("warp %d thread %d register %d: device 0x%08X "
                              "(lane %d column %d), model 0x%08X",
                              w, th, j, d, (d & 0xFFFF) / 512, (d & 0xFFFF) % 512, m));
        }
      }
    }
  }
  return Row("tcgen05.ld", name, Outcome::kPassed, compared,
             "every register of warps 0-3 == Tmem::Ld fragment model");
}

CheckResult VerifySt(size_t form) {
  const std::string name = TmemStForms()[form];
  auto inst = ParseFragmentForm(name.c_str());
  if (!inst.ok()) return Failed("tcgen05.st", name, inst.status());
  constexpr int kColumn = 16;
  auto dev = RunTmemSt(form, kColumn);
  if (!dev.ok()) {
    return dev.status().code() == absl::StatusCode::kUnavailable
               ? Skipped("tcgen05.st", name, dev.status())
               : Failed("tcgen05.st", name, dev.status());
  }
  Tmem t;
  for (int lane = 0; lane < tcgen05::kLanes; ++lane) {
    for (int col = 0; col < tcgen05::kColumns; ++col) {
      (void)t.Write(lane, col, FragmentPattern(lane, col));
    }
  }
  const int nregs = tcgen05::NumRegisters(*inst);
  for (int w = 0; w < 4; ++w) {
    WarpRegisters regs(32, std::vector<uint32_t>(static_cast<size_t>(nregs)));
    for (int th = 0; th < 32; ++th) {
      for (int j = 0; j < nregs; ++j) regs[th][j] = StPattern(w, th, j);
    }
    const absl::Status s =
        t.St(*inst, w, tcgen05::MakeTaddr(32u * static_cast<uint32_t>(w), kColumn), regs);
    if (!s.ok()) return Failed("tcgen05.st", name, s);
  }
  const std::string diff = FirstCellDiff(*dev, t);
  if (!diff.empty())
    return Row("tcgen05.st", name, Outcome::kFailed, uint64_t{128} * 512, diff);
  return Row("tcgen05.st", name, Outcome::kPassed, uint64_t{128} * 512,
             inst->pack16 ? "all cells == Tmem::St model (upper 16 bits of unpacked "
                            "columns written as 0)"
                          : "all cells == Tmem::St fragment model");
}

// ---------------------------------------------------------------------------
// multimem

// Random element codes; float formats get half fully random codes and half
// values with exponents near 1.0 (so that adds round).
void FillReplica(const MmTypeInfo& t, std::mt19937_64& rng, std::vector<uint8_t>* bytes) {
  const size_t eb = static_cast<size_t>(t.element_bytes);
  for (size_t i = 0; i + eb <= bytes->size(); i += eb) {
    uint64_t v = rng();
    if (t.is_float && (rng() & 1) != 0) {
      const FormatTraits& f = Traits(t.element);
      const uint64_t sign = rng() & 1, man = rng() & ((uint64_t{1} << f.man_bits) - 1);
      const int span = std::min(3, f.bias - 1);
      const uint64_t exp =
          static_cast<uint64_t>(f.bias - span + static_cast<int>(rng() % (2 * span + 1)));
      v = (sign << (f.bits - 1)) | (exp << f.man_bits) | man;
    }
    std::memcpy(bytes->data() + i, &v, eb);
  }
}

CheckResult VerifyOneMultimem(size_t form, int replicas, const VerifyOptions& o) {
  const std::string name = MultimemForms()[form];
  auto instr = ParseMultimem(name);
  if (!instr.ok()) return Failed("multimem", name, instr.status());
  absl::Status arch =
      RequireArch(MultimemNeedsFp8Target(*instr) ? Arch::kSm100a : Arch::kSm90);
  if (!arch.ok()) return Skipped("multimem", name, arch);
  const MmTypeInfo& t = MmTypeTraits(instr->type);
  const size_t access = static_cast<size_t>(instr->AccessBytes());
  const size_t bytes = 4096 / access * access;
  const std::vector<ReduceModel> models = {
      ReduceModel::kSequential, ReduceModel::kPairwiseTree, ReduceModel::kExactOnce,
      ReduceModel::kNcclSoftware};
  std::vector<bool> matches(models.size(), true);
  std::string first_diff;
  uint64_t compared = 0;
  std::mt19937_64 rng(o.seed * 104729u + form);
  for (int trial = 0; trial < std::max(1, o.multimem_trials); ++trial) {
    std::vector<std::vector<uint8_t>> data(static_cast<size_t>(replicas),
                                           std::vector<uint8_t>(bytes));
    for (auto& r : data) FillReplica(t, rng, &r);
    std::vector<uint8_t> b;
    if (instr->kind != MultimemKind::kLdReduce) {
      b.resize(bytes);
      FillReplica(t, rng, &b);
    }
    auto dev = RunMultimem(form, data, b);
    if (!dev.ok()) {
      return dev.status().code() == absl::StatusCode::kUnavailable
                 ? Skipped("multimem", name, dev.status())
                 : Failed("multimem", name, dev.status());
    }
    for (size_t m = 0; m < models.size(); ++m) {
      MulticastObject obj(static_cast<size_t>(replicas), bytes);
      for (size_t r = 0; r < data.size(); ++r) {
        std::memcpy(obj.replica(r).data(), data[r].data(), bytes);
      }
      for (size_t off = 0; off < bytes; off += access) {
        if (instr->kind == MultimemKind::kLdReduce) {
          auto got = obj.LdReduce(*instr, off, models[m]);
          if (!got.ok()) return Failed("multimem", name, got.status());
          if (m == 0) compared += access;
          if (std::memcmp(got->data(), dev->ld_result.data() + off, access) != 0) {
            if (matches[m] && first_diff.empty()) {
              first_diff = absl::StrFormat("offset %d vs model %s", off,
                                           ReduceModelName(models[m]));
            }
            matches[m] = false;
          }
        } else {
          absl::Status s =
              instr->kind == MultimemKind::kSt
                  ? obj.St(*instr, off, absl::MakeConstSpan(b).subspan(off, access))
                  : obj.Red(*instr, off, absl::MakeConstSpan(b).subspan(off, access),
                            models[m]);
          if (!s.ok()) return Failed("multimem", name, s);
        }
      }
      if (instr->kind != MultimemKind::kLdReduce) {
        for (size_t r = 0; r < data.size(); ++r) {
          if (m == 0) compared += bytes;
          if (std::memcmp(obj.replica(r).data(), dev->replicas[r].data(), bytes) != 0) {
            if (matches[m] && first_diff.empty()) {
              first_diff = absl::StrFormat("replica %d vs model %s", r,
                                           ReduceModelName(models[m]));
            }
            matches[m] = false;
          }
        }
      }
    }
  }
  std::vector<std::string> names;
  for (size_t m = 0; m < models.size(); ++m) {
    if (matches[m]) names.emplace_back(ReduceModelName(models[m]));
  }
  const std::string rep = absl::StrFormat("%d replica(s)", replicas);
  if (names.empty()) {
    return Row(
        "multimem", name, Outcome::kFailed, compared,
        absl::StrCat(rep, ": no ReduceModel matches; first mismatch at ", first_diff));
  }
  const bool model_free =
      !t.is_float || instr->op != ReduceOp::kAdd || instr->kind == MultimemKind::kSt;
  return Row("multimem", name, Outcome::kPassed, compared,
             model_free ? absl::StrCat(rep, ": == host model (exact op)")
                        : absl::StrCat(rep, ": matches ReduceModel ",
                                       absl::StrJoin(names, ", ")));
}

}  // namespace

absl::StatusOr<TmemCpJob> MakeCpJob(size_t form, tcgen05::Swizzle swizzle,
                                    uint64_t seed) {
  if (form >= TmemCpForms().size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("form: expected an index below %d (TmemCpForms()), got %d",
                        TmemCpForms().size(), form));
  }
  auto inst = tcgen05::Parse(TmemCpForms()[form]);
  if (!inst.ok()) return inst.status();
  auto tile = TileFor(*inst, swizzle);
  if (!tile.ok()) return tile.status();
  TmemCpJob job;
  job.cp_form = form;
  job.desc = tile->first;
  job.smem.resize(tile->second);
  std::mt19937_64 rng(seed * 7919u + form * 31u + static_cast<unsigned>(swizzle));
  for (auto& b : job.smem) b = static_cast<uint8_t>(rng());
  if (inst->src_fmt != tcgen05::SrcFmt::kNone) {
    // Payloads cycle through every code (7 is coprime to 16 and 64); the
    // padding bytes stay random, which the hardware must ignore.
    const Layout layout = inst->src_fmt == tcgen05::SrcFmt::kB4x16P64 ? Layout::kB4x16P64
                                                                      : Layout::kB6x16P32;
    const int bits = LayoutElementBits(layout);
    const size_t payload = static_cast<size_t>(bits) * 2;  // 8 or 12 bytes.
    auto d = tcgen05::DecodeDescriptor(job.desc);
    if (!d.ok()) return d.status();
    uint32_t e = 0;
    for (int r = 0; r < tcgen05::CpRows(inst->shape); ++r) {
      for (int j = 0; j < tcgen05::CpChunksPerRow(inst->shape); ++j) {
        uint8_t codes[16], packed[16];
        for (uint8_t& c : codes) c = static_cast<uint8_t>((e++ * 7 + 3) % (1u << bits));
        const absl::Status s = scalar::Pack(layout, codes, absl::MakeSpan(packed));
        if (!s.ok()) return s;
        auto a = tcgen05::ChunkAddress(*d, r, j);
        if (!a.ok()) return a.status();
        std::memcpy(&job.smem[*a], packed, payload);
      }
    }
  }
  // Column 16: not the allocation origin, 4-column aligned.
  job.cp_taddr = tcgen05::MakeTaddr(0, 16);
  job.fill = kCpFill;
  return job;
}

absl::StatusOr<Tmem> ModelCp(const TmemCpJob& job, Fp6Container fp6) {
  if (job.cp_form >= TmemCpForms().size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cp_form: expected an index below %d (TmemCpForms()), got %d",
                        TmemCpForms().size(), job.cp_form));
  }
  auto inst = tcgen05::Parse(TmemCpForms()[job.cp_form]);
  if (!inst.ok()) return inst.status();
  Tmem t(false, job.fill);
  absl::Status s = t.Cp(*inst, job.smem, job.desc, job.cp_taddr, fp6);
  if (s.ok() && job.shift) {
    auto sh = tcgen05::Parse("tcgen05.shift.cta_group::1.down");
    s = sh.ok() ? t.Shift(*sh, job.shift_taddr) : sh.status();
  }
  if (!s.ok()) return s;
  return t;
}

std::vector<CheckResult> VerifyCvt(const VerifyOptions& options) {
  std::vector<CheckResult> rows;
  for (size_t i = 0; i < CvtForms().size(); ++i) {
    rows.push_back(VerifyOneCvt(i, CvtForms()[i], options));
    if (options.on_result) options.on_result(rows.back());
  }
  return rows;
}

std::vector<CheckResult> VerifyTmem(const VerifyOptions& options) {
  std::vector<CheckResult> rows;
  for (size_t f = 0; f < TmemCpForms().size(); ++f) {
    rows.push_back(VerifyCp(f, tcgen05::Swizzle::kNone, false, 0, options));
  }
  for (tcgen05::Swizzle s : {tcgen05::Swizzle::k128B, tcgen05::Swizzle::k64B,
                             tcgen05::Swizzle::k32B, tcgen05::Swizzle::k128BBase32B}) {
    rows.push_back(VerifyCp(0, s, false, 0, options));
  }
  for (uint32_t lane : {0u, 32u, 64u, 96u}) {
    rows.push_back(VerifyCp(0, tcgen05::Swizzle::kNone, true, lane, options));
  }
  for (size_t f = 0; f < TmemLdForms().size(); ++f) rows.push_back(VerifyLd(f));
  for (size_t f = 0; f < TmemStForms().size(); ++f) rows.push_back(VerifySt(f));
  if (options.on_result) {
    for (const CheckResult& r : rows) options.on_result(r);
  }
  return rows;
}

std::vector<CheckResult> VerifyMultimem(const VerifyOptions& options) {
  std::vector<CheckResult> rows;
  auto n = MulticastDeviceCount();
  for (size_t f = 0; f < MultimemForms().size(); ++f) {
    if (!n.ok()) {
      rows.push_back(Skipped("multimem", MultimemForms()[f], n.status()));
    } else {
      rows.push_back(VerifyOneMultimem(f, *n, options));
    }
    if (options.on_result) options.on_result(rows.back());
  }
  return rows;
}

absl::StatusOr<std::vector<CheckResult>> VerifyAll(const VerifyOptions& options) {
  auto info = QueryDevice(0);
  if (!info.ok()) return info.status();
  std::vector<CheckResult> rows = VerifyCvt(options);
  for (auto* group : {&VerifyTmem, &VerifyMultimem}) {
    std::vector<CheckResult> more = (*group)(options);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

}  // namespace cuda
}  // namespace mxpack
