// Opt-in (ctest label `exhaustive`): all 2^32 f32 inputs through the SIMD
// conversions, every destination format and every legal policy, against the
// scalar reference; 2 threads; prints its run time.
//
// What is compared, exactly (2^32 * 124 (format, policy) pairs * 5 targets
// through the scalar reference would take days, so the work is split):
//
//  1. The best target (AvailableTargets()[0], the one ConvertArray
//     dispatches to) converts all 2^32 inputs for every (format, policy).
//  2. rn/rz/rm/rp: the scalar reference is evaluated at both ends of every run
//     of equal best-target outputs (runs never cross chunk boundaries or the
//     segment boundaries +0..+Inf, +NaN, -0..-Inf, -NaN). The scalar reference
//     is monotone (non-decreasing code) on each segment: for the narrow
//     formats tests/exhaustive_scalar_test.cc proves it equal to the
//     nearest-value oracle of tests/common/oracle.h on all 2^32 inputs, and for
//     f16/bf16 it is the same RoundFinite() code path. A monotone function
//     that equals c at both ends of a run equals c on the whole run, so
//     equality at the run ends proves equality on all 2^32 inputs.
//  3. rs (random bits rbits[x] = RandomBits(kSeed, x), the documented
//     generator, indexed by the input bits x): on all 2^32 inputs the
//     best-target result must be the rz result or the away-from-zero result
//     (rp for x >= 0, rm for x < 0; both proven equal to the scalar reference
//     in 2.), and on a dense pseudo-random subset (1/64 of the inputs) it must
//     equal the scalar reference (this pins the carry decision).
//  4. As an independent spot check of 2., the scalar reference is also
//     evaluated directly on a pseudo-random 1/512 of the inputs for every
//     deterministic policy.
//  5. Every other compiled target is compared bit for bit with the best
//     target on a dense pseudo-random subset of all 2^32 inputs (hash-
//     selected, so every exponent, mantissa prefix, tie and sticky pattern
//     class is hit many times), every format and policy including rs: 1/32
//     of the inputs for the next two targets (AVX3, AVX2 here), 1/128 for the
//     slower rest (SSE4, SSSE3, and the one-lane SCALAR/EMU128 fallback).
//
// Cost: about 1300 CPU-seconds on this machine's AVX-512 core (~11 minutes
// on 2 uncontended cores); the test prints wall and CPU time.
//
// MXPACK_EXHAUSTIVE_CHUNK_STEP=k (default 1) runs every k-th chunk only, for
// a quick smoke run; the full sweep is the default. MXPACK_EXHAUSTIVE_FORMATS
// and MXPACK_EXHAUSTIVE_ROUNDINGS (comma-separated names, e.g. "e4m3,e5m2"
// and "rm,rp") limit the sweep to those destinations and rounding modes, for
// checking one kernel on all 2^32 inputs; rs brings rz, rm and rp with it
// (its check builds on theirs).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "mxpack/convert.h"
#include "mxpack/dispatch.h"
#include "mxpack/scalar.h"
#include "tests/common/oracle.h"

namespace mxpack {
namespace {

constexpr int kThreads = 2;
constexpr int kChunkBits = 22;
constexpr size_t kChunk = size_t{1} << kChunkBits;
constexpr uint64_t kNumChunks = (uint64_t{1} << 32) >> kChunkBits;
constexpr uint64_t kSeed = 0x6D78706163ull;  // "mxpac"

constexpr Format kDests[] = {Format::kE2M1, Format::kE2M3, Format::kE3M2,
                             Format::kE4M3, Format::kE5M2, Format::kUE8M0,
                             Format::kUE4M3, Format::kF16,  Format::kBF16};

// The destinations and rounding modes selected by MXPACK_EXHAUSTIVE_FORMATS /
// MXPACK_EXHAUSTIVE_ROUNDINGS (unset: all).
struct Selection {
  bool format[16] = {};
  bool rounding[8] = {};
};

Selection ParseSelection() {
  Selection sel;
  const char* formats = std::getenv("MXPACK_EXHAUSTIVE_FORMATS");
  const char* roundings = std::getenv("MXPACK_EXHAUSTIVE_ROUNDINGS");
  for (Format f : kDests) sel.format[static_cast<int>(f)] = formats == nullptr;
  for (int r = 0; r < 8; ++r) sel.rounding[r] = roundings == nullptr;
  if (formats != nullptr) {
    for (absl::string_view name : absl::StrSplit(formats, ',', absl::SkipEmpty())) {
      const absl::StatusOr<Format> f = ParseFormat(name);
      if (f.ok()) sel.format[static_cast<int>(*f)] = true;
    }
  }
  if (roundings != nullptr) {
    for (absl::string_view name : absl::StrSplit(roundings, ',', absl::SkipEmpty())) {
      const absl::StatusOr<Rounding> r = ParseRounding(name);
      if (!r.ok()) continue;
      sel.rounding[static_cast<int>(*r)] = true;
      if (*r == Rounding::kRS) {
        for (Rounding d : {Rounding::kRZ, Rounding::kRM, Rounding::kRP}) {
          sel.rounding[static_cast<int>(d)] = true;
        }
      }
    }
  }
  return sel;
}

const Selection& Selected() {
  static const Selection sel = ParseSelection();
  return sel;
}

// Pseudo-random subsets of the inputs: x is selected when the top bits of a
// multiplicative hash are zero (1 in 2^bits inputs).
inline bool InSubset(uint32_t x, int bits, uint32_t salt) {
  return ((x ^ salt) * 0x9E3779B1u) >> (32 - bits) == 0;
}

struct Stats {
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> scalar_evals{0};
  std::atomic<uint64_t> target_evals{0};
  std::mutex print_mu;
};

class Checker {
 public:
  Checker(Stats* stats, const std::vector<int64_t>& targets)
      : stats_(stats), targets_(targets) {
    in_.resize(kChunk);
    rb_.resize(kChunk);
    for (auto& o : out_) o.resize(kChunk * 2);
  }

  void RunChunk(uint64_t chunk) {
    const uint32_t base = static_cast<uint32_t>(chunk << kChunkBits);
    for (size_t i = 0; i < kChunk; ++i) {
      in_[i] = base + static_cast<uint32_t>(i);
      rb_[i] = RandomBits(kSeed, in_[i]);
    }
    // The cross-target subset of this chunk, gathered into dense arrays.
    for (int s = 0; s < 2; ++s) {
      Subset& sub = subsets_[s];
      sub.in.clear();
      sub.rb.clear();
      for (size_t i = 0; i < kChunk; ++i) {
        if (InSubset(in_[i], s == 0 ? 5 : 7, 0)) {
          sub.in.push_back(in_[i]);
          sub.rb.push_back(rb_[i]);
        }
      }
      sub.want.resize(sub.in.size() * 2);
      sub.out.resize(sub.in.size() * 2);
    }
    scalar_idx_.clear();
    rs_idx_.clear();
    for (size_t i = 0; i < kChunk; ++i) {
      if (InSubset(in_[i], 9, 0x51u)) scalar_idx_.push_back(static_cast<uint32_t>(i));
      if (InSubset(in_[i], 6, 0xA7u)) rs_idx_.push_back(static_cast<uint32_t>(i));
    }
    // Run boundaries forced by the segments (+0..+Inf, +NaN, -0..-Inf, -NaN).
    segment_starts_.clear();
    for (uint32_t x : {0x7F800001u, 0x80000000u, 0xFF800001u}) {
      if ((x >> kChunkBits) == chunk && (x & (kChunk - 1)) != 0) {
        segment_starts_.push_back(x & (kChunk - 1));
      }
    }
    segment_starts_.push_back(kChunk);
    for (Format dst : kDests) {
      if (Selected().format[static_cast<int>(dst)]) RunFormat(dst);
    }
  }

 private:
  enum Slot { kRN, kRZ, kRM, kRP, kRS, kSlots };

  static uint32_t Code(const std::vector<uint8_t>& v, size_t i, int ob) {
    return ob == 1 ? v[i] : static_cast<uint32_t>(v[2 * i] | (v[2 * i + 1] << 8));
  }

  void Fail(Format dst, const EncodePolicy& p, const char* what, uint32_t x, uint32_t want,
            uint32_t got) {
    if (stats_->failures.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(stats_->print_mu);
      ADD_FAILURE() << absl::StrFormat("%s f32 -> %s %s input 0x%08X: expected 0x%X, got 0x%X",
                                       what, FormatName(dst), PolicyToString(p), x, want, got);
    }
  }

  absl::Span<const uint8_t> InBytes(const std::vector<uint32_t>& v) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
  }

  // Best target over the whole chunk into out_[slot].
  void ConvertBest(Format dst, const EncodePolicy& p, Slot slot) {
    const int ob = Traits(dst).storage_bytes;
    const bool rs = p.rounding == Rounding::kRS;
    const absl::Status s =
        ConvertArray(Format::kF32, dst, p, InBytes(in_), absl::MakeSpan(out_[slot].data(), kChunk * ob),
                     rs ? absl::MakeConstSpan(rb_) : absl::Span<const uint32_t>(),
                     Impl{targets_[0]});
    ASSERT_TRUE(s.ok()) << s;
    stats_->target_evals.fetch_add(kChunk);
  }

  uint32_t Scalar(Format dst, const EncodePolicy& p, size_t i) {
    return static_cast<uint32_t>(
        scalar::Convert(Format::kF32, dst, in_[i], p, p.rounding == Rounding::kRS ? rb_[i] : 0));
  }

  // 2. and 4.: scalar reference at both ends of every run, and on a subset.
  void CheckRunsAgainstScalar(Format dst, const EncodePolicy& p, Slot slot) {
    if (Traits(dst).storage_bytes == 1) {
      CheckRuns(dst, p, out_[slot].data());
    } else {
      CheckRuns(dst, p, reinterpret_cast<const uint16_t*>(out_[slot].data()));
    }
  }

  // First index in (start, end) whose code differs from out[start], or end.
  // Compares 64 bytes per step (long runs dominate: a few hundred to 65536
  // distinct codes over 2^32 inputs).
  template <typename T>
  static size_t RunEnd(const T* out, size_t start, size_t end) {
    const T c = out[start];
    size_t i = start + 1;
    constexpr size_t kBlock = 64 / sizeof(T);
    while (i + kBlock <= end) {
      T diff = 0;
      for (size_t k = 0; k < kBlock; ++k) diff |= static_cast<T>(out[i + k] ^ c);
      if (diff != 0) break;
      i += kBlock;
    }
    while (i < end && out[i] == c) ++i;
    return i;
  }

  template <typename T>
  void CheckRuns(Format dst, const EncodePolicy& p, const T* out) {
    uint64_t evals = 0;
    auto check = [&](size_t i) {
      ++evals;
      const uint32_t want = Scalar(dst, p, i);
      if (want != out[i]) Fail(dst, p, hwy::TargetName(targets_[0]), in_[i], want, out[i]);
    };
    size_t start = 0;
    for (size_t end : segment_starts_) {
      while (start < end) {
        const size_t i = RunEnd(out, start, end);
        check(start);
        if (i - 1 != start) check(i - 1);
        start = i;
      }
    }
    for (uint32_t i : scalar_idx_) check(i);
    stats_->scalar_evals.fetch_add(evals);
  }

  // 3.: rs is rz or away-from-zero everywhere, and the scalar reference on 1/64.
  void CheckRs(Format dst, const EncodePolicy& p) {
    if (Traits(dst).storage_bytes == 1) {
      CheckRsT<uint8_t>(dst, p);
    } else {
      CheckRsT<uint16_t>(dst, p);
    }
  }

  template <typename T>
  void CheckRsT(Format dst, const EncodePolicy& p) {
    const T* rs = reinterpret_cast<const T*>(out_[kRS].data());
    const T* rz = reinterpret_cast<const T*>(out_[kRZ].data());
    const T* rp = reinterpret_cast<const T*>(out_[kRP].data());
    const T* rm = reinterpret_cast<const T*>(out_[kRM].data());
    const uint32_t sign_mask = Traits(dst).has_sign ? 1u : 0u;
    const uint32_t* in = in_.data();
    // Branch-free (vectorizable) pass first; rescan only to report.
    uint32_t bad = 0;
    for (size_t i = 0; i < kChunk; ++i) {
      const T away = ((in[i] >> 31) & sign_mask) ? rm[i] : rp[i];
      bad |= static_cast<uint32_t>(rs[i] != rz[i]) & static_cast<uint32_t>(rs[i] != away);
    }
    for (size_t i = 0; bad && i < kChunk; ++i) {
      const T away = ((in[i] >> 31) & sign_mask) ? rm[i] : rp[i];
      if (rs[i] != rz[i] && rs[i] != away) {
        Fail(dst, p, "rs not in {rz, away}", in_[i], rz[i], rs[i]);
      }
    }
    for (uint32_t i : rs_idx_) {
      const uint32_t want = Scalar(dst, p, i);
      if (want != rs[i]) Fail(dst, p, hwy::TargetName(targets_[0]), in_[i], want, rs[i]);
    }
    stats_->scalar_evals.fetch_add(rs_idx_.size());
  }

  // 5.: every other target on a subset against the best target (which
  // matched the scalar reference on every input, 2./3.).
  void CheckOtherTargets(Format dst, const EncodePolicy& p) {
    const int ob = Traits(dst).storage_bytes;
    const bool rs = p.rounding == Rounding::kRS;
    bool have_want[2] = {false, false};
    for (size_t t = 1; t < targets_.size(); ++t) {
      Subset& sub = subsets_[t <= 2 ? 0 : 1];
      const size_t m = sub.in.size();
      const absl::Span<const uint32_t> rb =
          rs ? absl::MakeConstSpan(sub.rb) : absl::Span<const uint32_t>();
      if (!have_want[t <= 2 ? 0 : 1]) {  // the best target on this subset
        const absl::Status s = ConvertArray(Format::kF32, dst, p, InBytes(sub.in),
                                            absl::MakeSpan(sub.want.data(), m * ob), rb,
                                            Impl{targets_[0]});
        ASSERT_TRUE(s.ok()) << s;
        have_want[t <= 2 ? 0 : 1] = true;
      }
      const absl::Status s = ConvertArray(Format::kF32, dst, p, InBytes(sub.in),
                                          absl::MakeSpan(sub.out.data(), m * ob), rb,
                                          Impl{targets_[t]});
      ASSERT_TRUE(s.ok()) << s;
      stats_->target_evals.fetch_add(m);
      if (std::memcmp(sub.want.data(), sub.out.data(), m * ob) == 0) continue;
      for (size_t k = 0; k < m; ++k) {
        const uint32_t want = Code(sub.want, k, ob);
        const uint32_t got = Code(sub.out, k, ob);
        if (want != got) {
          Fail(dst, p, absl::StrCat(hwy::TargetName(targets_[t]), " vs best").c_str(), sub.in[k],
               want, got);
        }
      }
    }
  }

  void RunFormat(Format dst) {
    for (Saturation sat : {Saturation::kSatFinite, Saturation::kNoSat}) {
      for (bool relu : {false, true}) {
        bool done[kSlots] = {};
        for (Slot slot : {kRZ, kRM, kRP, kRN, kRS}) {
          EncodePolicy p;
          p.rounding = slot == kRN   ? Rounding::kRN
                       : slot == kRZ ? Rounding::kRZ
                       : slot == kRM ? Rounding::kRM
                       : slot == kRP ? Rounding::kRP
                                     : Rounding::kRS;
          p.saturation = sat;
          p.relu = relu;
          if (!ValidateConversion(Format::kF32, dst, p).ok()) continue;
          if (!Selected().rounding[static_cast<int>(p.rounding)]) continue;
          ConvertBest(dst, p, slot);
          if (slot == kRS) {
            // rz, rm and rp are legal whenever rs is (same format and flags).
            ASSERT_TRUE(done[kRZ] && done[kRM] && done[kRP]);
            CheckRs(dst, p);
          } else {
            CheckRunsAgainstScalar(dst, p, slot);
          }
          CheckOtherTargets(dst, p);
          done[slot] = true;
        }
      }
    }
  }

  Stats* stats_;
  const std::vector<int64_t>& targets_;
  std::vector<uint32_t> in_, rb_;
  std::vector<uint8_t> out_[kSlots];
  struct Subset {
    std::vector<uint32_t> in, rb;
    std::vector<uint8_t> want, out;
  };
  Subset subsets_[2];  // 1/32 and 1/128 of the chunk
  std::vector<uint32_t> scalar_idx_, rs_idx_;
  std::vector<size_t> segment_starts_;
};

TEST(ExhaustiveSimd, AllF32EveryFormatEveryPolicyEveryTarget) {
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();  // process CPU time, all threads
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  uint64_t step = 1;
  if (const char* env = std::getenv("MXPACK_EXHAUSTIVE_CHUNK_STEP")) {
    step = std::max<uint64_t>(1, std::strtoull(env, nullptr, 10));
  }
  std::string names;
  for (int64_t t : targets) absl::StrAppend(&names, names.empty() ? "" : ", ", hwy::TargetName(t));
  std::printf("targets: %s (best: %s); %llu of %llu chunks of 2^%d inputs; %d threads\n",
              names.c_str(), hwy::TargetName(targets[0]),
              static_cast<unsigned long long>((kNumChunks + step - 1) / step),
              static_cast<unsigned long long>(kNumChunks), kChunkBits, kThreads);
  std::fflush(stdout);

  Stats stats;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&] {
      Checker checker(&stats, targets);
      for (;;) {
        const uint64_t c = next.fetch_add(1) * step;
        if (c >= kNumChunks) break;
        checker.RunChunk(c);
        const uint64_t d = done.fetch_add(1) + 1;
        if (d % 64 == 0) {
          std::lock_guard<std::mutex> lock(stats.print_mu);
          std::printf("  %llu chunks done, %.0f s elapsed, %.0f CPU-seconds\n",
                      static_cast<unsigned long long>(d),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                      static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
          std::fflush(stdout);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(stats.failures.load(), 0u);
  std::printf(
      "exhaustive SIMD: %llu target conversions, %llu scalar reference evaluations, %llu "
      "failures, %.0f s elapsed, %.0f CPU-seconds\n",
      static_cast<unsigned long long>(stats.target_evals.load()),
      static_cast<unsigned long long>(stats.scalar_evals.load()),
      static_cast<unsigned long long>(stats.failures.load()),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
}

}  // namespace
}  // namespace mxpack
