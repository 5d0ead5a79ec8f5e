// The nanobind module mxpack._mxpack: thin wrappers over the C++ public API
// (formats, conversions, packed layouts, multimem reductions, PTX checks).
// Arrays arrive as raw integer views of C-contiguous CPU buffers (the Python
// layer maps numpy / torch / DLPack dtypes to formats and allocates outputs);
// every kernel runs with the GIL released, writes the caller's buffer in
// place and, for large arrays, splits the work over a thread pool (chunks at
// element-group boundaries, so results do not depend on the thread count).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/convert.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/multimem.h"
#include "mxpack/pack.h"
#include "mxpack/ptx_check.h"
#include "mxpack/scalar.h"
#include "mxpack/tcgen05.h"
#include "python/src/bind_util.h"
#include "src/util/thread_pool.h"

namespace mxpack::python {

void ThrowIfError(const absl::Status& s) {
  if (s.ok()) return;
  const std::string msg(s.message());
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
      throw nb::value_error(msg.c_str());
    default:
      throw std::runtime_error(msg);
  }
}

absl::Status Prefixed(absl::string_view arg, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(arg, ": ", s.message()));
}

void CheckContiguous(size_t ndim, const size_t* shape, const int64_t* strides,
                     absl::string_view arg) {
  int64_t expected = 1;
  bool ok = true;
  for (size_t i = ndim; i-- > 0;) {
    if (shape[i] == 0) return;  // Empty arrays are trivially contiguous.
    if (shape[i] != 1 && strides[i] != expected) ok = false;
    expected *= static_cast<int64_t>(shape[i]);
  }
  if (ok) return;
  std::vector<std::string> sh, st;
  for (size_t i = 0; i < ndim; ++i) {
    sh.push_back(absl::StrCat(shape[i]));
    st.push_back(absl::StrCat(strides[i]));
  }
  const std::string msg = absl::StrFormat(
      "%s: expected a C-contiguous array, got shape (%s) with element strides "
      "(%s); pass numpy.ascontiguousarray(%s)",
      arg, absl::StrJoin(sh, ", "), absl::StrJoin(st, ", "), arg);
  throw nb::value_error(msg.c_str());
}

size_t ResolveThreads(size_t threads) {
  if (threads != 0) return threads;
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

absl::Status RunChunked(size_t threads, size_t n, size_t grain,
                        size_t min_units,
                        const std::function<absl::Status(size_t, size_t)>& part,
                        const std::function<absl::Status()>& whole) {
  const size_t t = ResolveThreads(threads);
  if (t <= 1 || n < 2 * min_units) return whole();
  // About four chunks per thread evens out a core that is busy elsewhere;
  // chunk boundaries are multiples of `grain` (whole element groups).
  size_t chunk = std::max(min_units, (n + 4 * t - 1) / (4 * t));
  chunk = (chunk + grain - 1) / grain * grain;
  const size_t chunks = (n + chunk - 1) / chunk;
  if (chunks <= 1) return whole();
  std::vector<absl::Status> status(chunks);
  {
    internal::ThreadPool pool(std::min(t, chunks));
    pool.ParallelFor(chunks, [&](size_t i) {
      status[i] = part(i * chunk, std::min(n, (i + 1) * chunk));
    });
  }
  for (const absl::Status& s : status) {
    if (!s.ok()) return whole();
  }
  return absl::OkStatus();
}

namespace {

template <typename A>
size_t CheckedBytes(const A& a, absl::string_view arg) {
  std::vector<size_t> shape(a.ndim());
  std::vector<int64_t> strides(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = a.shape(i);
    strides[i] = a.stride(i);
  }
  CheckContiguous(a.ndim(), shape.data(), strides.data(), arg);
  return a.size() * a.itemsize();
}

}  // namespace

absl::Span<const uint8_t> InBytes(const InArray& a, absl::string_view arg) {
  const size_t n = CheckedBytes(a, arg);
  return absl::Span<const uint8_t>(static_cast<const uint8_t*>(a.data()), n);
}

absl::Span<uint8_t> OutBytes(const OutArray& a, absl::string_view arg) {
  const size_t n = CheckedBytes(a, arg);
  return absl::Span<uint8_t>(static_cast<uint8_t*>(a.data()), n);
}

absl::Span<const uint32_t> RandomWords(const nb::handle& rbits) {
  if (rbits.is_none()) return {};
  const InArray a = nb::cast<InArray>(rbits);
  if (a.dtype() != nb::dtype<uint32_t>()) {
    throw nb::type_error("rbits: expected a uint32 array");
  }
  const absl::Span<const uint8_t> b = InBytes(a, "rbits");
  return absl::Span<const uint32_t>(reinterpret_cast<const uint32_t*>(b.data()),
                                    b.size() / 4);
}

Impl ParseImplArg(const std::string& name) {
  return ValueOrThrow([&]() -> absl::StatusOr<Impl> {
    absl::StatusOr<Impl> i = ParseImpl(name);
    if (!i.ok()) return Prefixed("impl", i.status());
    return i;
  }());
}

Format ParseFormatArg(const std::string& name, absl::string_view arg) {
  absl::StatusOr<Format> f = ParseFormat(name);
  if (!f.ok()) ThrowIfError(Prefixed(arg, f.status()));
  return *f;
}

namespace {

Layout ParseLayoutArg(const std::string& name, absl::string_view arg) {
  absl::StatusOr<Layout> l = ParseLayout(name);
  if (!l.ok()) ThrowIfError(Prefixed(arg, l.status()));
  return *l;
}

Fp6Container ParseContainerArg(const std::string& name) {
  absl::StatusOr<Fp6Container> c = ParseFp6Container(name);
  if (!c.ok()) ThrowIfError(Prefixed("fp6_container", c.status()));
  return *c;
}

EncodePolicy ParsePolicy(const std::string& rounding,
                         const std::string& saturation, bool relu,
                         const std::string& overflow_tie) {
  EncodePolicy p;
  absl::StatusOr<Rounding> r = ParseRounding(rounding);
  if (!r.ok()) ThrowIfError(Prefixed("rounding", r.status()));
  absl::StatusOr<Saturation> s = ParseSaturation(saturation);
  if (!s.ok()) ThrowIfError(Prefixed("saturation", s.status()));
  p.rounding = *r;
  p.saturation = *s;
  p.relu = relu;
  if (overflow_tie == "even") {
    p.overflow_tie = OverflowTie::kEven;
  } else if (overflow_tie == "max_finite") {
    p.overflow_tie = OverflowTie::kToMaxFinite;
  } else {
    const std::string msg = absl::StrFormat(
        "overflow_tie: unknown value '%s'; expected one of: even, max_finite",
        overflow_tie);
    throw nb::value_error(msg.c_str());
  }
  return p;
}

// Runs `f` (returning absl::Status) without the GIL, then raises on error.
template <typename F>
void RunReleased(F&& f) {
  absl::Status s;
  {
    nb::gil_scoped_release release;
    s = f();
  }
  ThrowIfError(s);
}

nb::dict FormatInfo(const std::string& name) {
  const FormatTraits& t = Traits(ParseFormatArg(name, "fmt"));
  nb::dict d;
  d["name"] = t.name;
  d["ml_dtypes"] = t.ml_dtypes;
  d["bits"] = t.bits;
  d["exp_bits"] = t.exp_bits;
  d["man_bits"] = t.man_bits;
  d["bias"] = t.bias;
  d["has_sign"] = t.has_sign;
  d["has_inf"] = t.has_inf;
  d["has_subnormals"] = t.has_subnormals;
  d["nan"] = t.nan == NanKind::kNone   ? "none"
             : t.nan == NanKind::kIeee ? "ieee"
                                       : "all_ones";
  d["max_code"] = t.max_code;
  d["canonical_nan"] = t.canonical_nan;
  d["storage_bytes"] = t.storage_bytes;
  d["narrow"] = IsNarrow(t.format);
  return d;
}

std::string CanonicalFormat(const std::string& name, const std::string& arg) {
  return std::string(FormatName(ParseFormatArg(name, arg)));
}

bool IsExact(const std::string& src, const std::string& dst) {
  return IsExactConversion(ParseFormatArg(src, "src"),
                           ParseFormatArg(dst, "fmt"));
}

// Whole elements `bytes` of a layout hold (what `mxpack unpack` reads
// without --count): dense4 2 per byte, dense6 4 per 3 bytes, padded layouts
// 16 per 16 bytes. Sizes that are not whole groups are an error.
size_t WholeElements(const std::string& layout, size_t bytes) {
  const Layout l = ParseLayoutArg(layout, "layout");
  std::string msg;
  switch (l) {
    case Layout::kDense4:
      return bytes * 2;
    case Layout::kDense6:
      if (bytes % 3 == 0) return bytes / 3 * 4;
      msg = absl::StrFormat(
          "packed: %u bytes is not a multiple of 3 (whole dense6 groups of 4 "
          "elements); pass count= to read fewer elements",
          bytes);
      break;
    default:
      if (bytes % 16 == 0) return bytes;
      msg = absl::StrFormat(
          "packed: %u bytes is not a multiple of 16 (whole %s groups)", bytes,
          LayoutName(l));
      break;
  }
  throw nb::value_error(msg.c_str());
}

std::vector<std::string> FormatNames() {
  std::vector<std::string> names;
  for (int i = 0; i < kNumFormats; ++i) {
    names.emplace_back(FormatName(static_cast<Format>(i)));
  }
  return names;
}

std::vector<std::string> TargetNames() {
  std::vector<std::string> names;
  for (int64_t t : AvailableTargets()) names.push_back(ImplName(Impl{t}));
  return names;
}

// Bytes of one element of `f` as stored in arrays.
size_t StorageBytes(Format f) {
  return static_cast<size_t>(Traits(f).storage_bytes);
}

// The element range [b, e) of a buffer of `bytes`-sized elements.
template <typename T>
absl::Span<T> Elements(absl::Span<T> s, size_t bytes, size_t b, size_t e) {
  return s.subspan(b * bytes, (e - b) * bytes);
}

// The element range [b, e) of one random word per element (none: empty).
absl::Span<const uint32_t> Words(absl::Span<const uint32_t> rb, size_t b,
                                 size_t e) {
  return rb.empty() ? rb : rb.subspan(b, e - b);
}

void Convert(const std::string& src, const std::string& dst, const InArray& x,
             const OutArray& out, const std::string& rounding,
             const std::string& saturation, bool relu,
             const std::string& overflow_tie, nb::handle rbits,
             const std::string& impl, size_t threads) {
  const Format from = ParseFormatArg(src, "src");
  const Format to = ParseFormatArg(dst, "fmt");
  const EncodePolicy p = ParsePolicy(rounding, saturation, relu, overflow_tie);
  const Impl im = ParseImplArg(impl);
  const absl::Span<const uint8_t> in = InBytes(x, "x");
  const absl::Span<uint8_t> o = OutBytes(out, "out");
  const absl::Span<const uint32_t> rb = RandomWords(rbits);
  const size_t sb = StorageBytes(from), db = StorageBytes(to);
  const size_t n = in.size() / sb;
  // Chunks only where the sizes agree (otherwise the single call reports it).
  const bool split =
      in.size() % sb == 0 && o.size() == n * db &&
      (rb.empty() ? p.rounding != Rounding::kRS : rb.size() == n);
  RunReleased([&] {
    auto whole = [&] { return ConvertArray(from, to, p, in, o, rb, im); };
    if (!split) return whole();
    return RunChunked(
        threads, n, 64, kMinUnitsPerChunk,
        [&](size_t b, size_t e) {
          return ConvertArray(from, to, p, Elements(in, sb, b, e),
                              Elements(o, db, b, e), Words(rb, b, e), im);
        },
        whole);
  });
}

void FillRandomBits(uint64_t seed, const OutArray& out, size_t threads) {
  if (out.dtype() != nb::dtype<uint32_t>()) {
    throw nb::type_error("out: expected a uint32 array");
  }
  const absl::Span<uint8_t> o = OutBytes(out, "out");
  uint32_t* w = reinterpret_cast<uint32_t*>(o.data());
  const size_t n = o.size() / 4;
  auto fill = [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) w[i] = RandomBits(seed, i);
    return absl::OkStatus();
  };
  RunReleased([&] {
    return RunChunked(threads, n, 64, kMinUnitsPerChunk, fill,
                      [&] { return fill(0, n); });
  });
}

bool HasSimd(const std::string& src, const std::string& dst,
             const std::string& rounding, const std::string& saturation,
             bool relu, const std::string& overflow_tie) {
  return HasSimdPath(ParseFormatArg(src, "src"), ParseFormatArg(dst, "fmt"),
                     ParsePolicy(rounding, saturation, relu, overflow_tie));
}

void ValidatePolicy(const std::string& src, const std::string& dst,
                    const std::string& rounding, const std::string& saturation,
                    bool relu, const std::string& overflow_tie) {
  ThrowIfError(ValidateConversion(
      ParseFormatArg(src, "src"), ParseFormatArg(dst, "fmt"),
      ParsePolicy(rounding, saturation, relu, overflow_tie)));
}

size_t PackedBytesOf(const std::string& layout, size_t n) {
  return PackedBytes(ParseLayoutArg(layout, "layout"), n);
}

// Element chunks of packed layouts end on multiples of 64 elements: whole
// groups of every layout (dense4 32 bytes, dense6 48, padded 64), so
// PackedBytes(l, b) is the byte offset of element b.
constexpr size_t kPackedGrain = 64;

// The packed bytes of elements [b, e) (b a multiple of kPackedGrain).
template <typename T>
absl::Span<T> PackedRange(Layout l, absl::Span<T> s, size_t b, size_t e) {
  const size_t pb = PackedBytes(l, b);
  return s.subspan(pb, PackedBytes(l, e) - pb);
}

void PackArr(const std::string& layout, const InArray& codes,
             const OutArray& packed, const std::string& impl, size_t threads) {
  const Layout l = ParseLayoutArg(layout, "layout");
  const Impl im = ParseImplArg(impl);
  const auto c = InBytes(codes, "codes");
  const auto p = OutBytes(packed, "out");
  const size_t n = c.size();
  RunReleased([&] {
    auto whole = [&] { return Pack(l, c, p, im); };
    if (p.size() != PackedBytes(l, n)) return whole();
    return RunChunked(
        threads, n, kPackedGrain, kMinUnitsPerChunk,
        [&](size_t b, size_t e) {
          return Pack(l, c.subspan(b, e - b), PackedRange(l, p, b, e), im);
        },
        whole);
  });
}

void UnpackArr(const std::string& layout, const InArray& packed,
               const OutArray& codes, const std::string& impl, size_t threads) {
  const Layout l = ParseLayoutArg(layout, "layout");
  const Impl im = ParseImplArg(impl);
  const auto p = InBytes(packed, "packed");
  const auto c = OutBytes(codes, "out");
  const size_t n = c.size();
  RunReleased([&] {
    auto whole = [&] { return Unpack(l, p, c, im); };
    if (p.size() != PackedBytes(l, n)) return whole();
    return RunChunked(
        threads, n, kPackedGrain, kMinUnitsPerChunk,
        [&](size_t b, size_t e) {
          return Unpack(l, PackedRange(l, p, b, e), c.subspan(b, e - b), im);
        },
        whole);
  });
}

// Byte-for-byte transforms of whole 16-byte groups (tcgen05.cp containers).
template <typename F>
absl::Status RunGroups(size_t threads, size_t in_bytes, size_t out_bytes,
                       const F& f) {
  auto whole = [&] { return f(0, in_bytes); };
  if (in_bytes != out_bytes) return whole();
  return RunChunked(threads, in_bytes, 64, kMinUnitsPerChunk, f, whole);
}

void DecompressArr(const std::string& layout, const InArray& packed,
                   const OutArray& b8x16, const std::string& container,
                   const std::string& impl, size_t threads) {
  const Layout l = ParseLayoutArg(layout, "layout");
  const Fp6Container c = ParseContainerArg(container);
  const Impl im = ParseImplArg(impl);
  const auto p = InBytes(packed, "packed");
  const auto o = OutBytes(b8x16, "out");
  RunReleased([&] {
    return RunGroups(threads, p.size(), o.size(), [&](size_t b, size_t e) {
      return Decompress(l, p.subspan(b, e - b), o.subspan(b, e - b), c, im);
    });
  });
}

void CompressArr(const std::string& layout, const InArray& b8x16,
                 const OutArray& packed, const std::string& container,
                 const std::string& impl, size_t threads) {
  const Layout l = ParseLayoutArg(layout, "layout");
  const Fp6Container c = ParseContainerArg(container);
  const Impl im = ParseImplArg(impl);
  const auto b8 = InBytes(b8x16, "b8x16");
  const auto o = OutBytes(packed, "out");
  RunReleased([&] {
    return RunGroups(threads, b8.size(), o.size(), [&](size_t b, size_t e) {
      return Compress(l, b8.subspan(b, e - b), o.subspan(b, e - b), c, im);
    });
  });
}

void EncodePackedArr(const std::string& src, const std::string& elem,
                     const std::string& layout, const InArray& x,
                     const OutArray& packed, const std::string& rounding,
                     const std::string& saturation, bool relu,
                     const std::string& overflow_tie, nb::handle rbits,
                     const std::string& impl, size_t threads) {
  const Format from = ParseFormatArg(src, "src");
  const Format e = ParseFormatArg(elem, "fmt");
  const Layout l = ParseLayoutArg(layout, "layout");
  const EncodePolicy p = ParsePolicy(rounding, saturation, relu, overflow_tie);
  const Impl im = ParseImplArg(impl);
  const auto in = InBytes(x, "x");
  const auto o = OutBytes(packed, "out");
  const auto rb = RandomWords(rbits);
  const size_t sb = StorageBytes(from);
  const size_t n = in.size() / sb;
  const bool split =
      in.size() % sb == 0 && o.size() == PackedBytes(l, n) &&
      (rb.empty() ? p.rounding != Rounding::kRS : rb.size() == n);
  RunReleased([&] {
    auto whole = [&] { return EncodePacked(from, e, l, p, in, o, rb, im); };
    if (!split) return whole();
    return RunChunked(
        threads, n, kPackedGrain, kMinUnitsPerChunk,
        [&](size_t b, size_t end) {
          return EncodePacked(from, e, l, p, Elements(in, sb, b, end),
                              PackedRange(l, o, b, end), Words(rb, b, end), im);
        },
        whole);
  });
}

void DecodePackedArr(const std::string& layout, const std::string& elem,
                     const std::string& to, const InArray& packed,
                     const OutArray& out, const std::string& impl,
                     size_t threads) {
  const Layout l = ParseLayoutArg(layout, "layout");
  const Format e = ParseFormatArg(elem, "fmt");
  const Format t = ParseFormatArg(to, "to");
  const Impl im = ParseImplArg(impl);
  const auto p = InBytes(packed, "packed");
  const auto o = OutBytes(out, "out");
  const size_t db = StorageBytes(t);
  const size_t n = o.size() / db;
  const bool split = o.size() % db == 0 && p.size() == PackedBytes(l, n);
  RunReleased([&] {
    auto whole = [&] { return DecodePacked(l, e, t, p, o, im); };
    if (!split) return whole();
    return RunChunked(
        threads, n, kPackedGrain, kMinUnitsPerChunk,
        [&](size_t b, size_t end) {
          return DecodePacked(l, e, t, PackedRange(l, p, b, end),
                              Elements(o, db, b, end), im);
        },
        whole);
  });
}

void DecodeContainersArr(const std::string& elem, const std::string& to,
                         const InArray& b8x16, const OutArray& out,
                         const std::string& container, const std::string& impl,
                         size_t threads) {
  const Format e = ParseFormatArg(elem, "fmt");
  const Format t = ParseFormatArg(to, "to");
  const Fp6Container c = ParseContainerArg(container);
  const Impl im = ParseImplArg(impl);
  const auto b8 = InBytes(b8x16, "b8x16");
  const auto o = OutBytes(out, "out");
  const size_t db = StorageBytes(t);
  const size_t n = b8.size();
  RunReleased([&] {
    auto whole = [&] { return DecodeContainers(e, t, b8, o, c, im); };
    if (o.size() != n * db) return whole();
    return RunChunked(
        threads, n, 64, kMinUnitsPerChunk,
        [&](size_t b, size_t end) {
          return DecodeContainers(e, t, b8.subspan(b, end - b),
                                  Elements(o, db, b, end), c, im);
        },
        whole);
  });
}

// The reduction spec of a ld_reduce spelling or of (type, op, acc), as the
// CLI builds it. Returns (spec type name, element bytes, access elements,
// is_float, element format name) for the Python layer's dtype checks.
struct ParsedSpec {
  ReduceSpec spec;
  size_t access_elements = 1;
};

ParsedSpec ParseSpec(const std::string& ptx, const std::string& type,
                     const std::string& op, const std::string& acc,
                     const std::string& model) {
  ParsedSpec r;
  absl::StatusOr<ReduceModel> m = ParseReduceModel(model);
  if (!m.ok()) ThrowIfError(Prefixed("model", m.status()));
  if (!ptx.empty()) {
    if (!type.empty()) {
      throw nb::value_error(
          "ptx and type are exclusive: the spelling already names the type");
    }
    absl::StatusOr<MultimemInstruction> in = ParseMultimem(ptx);
    if (!in.ok()) ThrowIfError(Prefixed("ptx", in.status()));
    if (in->kind != MultimemKind::kLdReduce) {
      const std::string msg = absl::StrFormat(
          "ptx=%s: expected a multimem.ld_reduce spelling, got multimem.%s",
          ptx, MultimemKindName(in->kind));
      throw nb::value_error(msg.c_str());
    }
    r.spec = SpecOf(*in, *m);
    r.access_elements = static_cast<size_t>(in->AccessElements());
    return r;
  }
  if (type.empty()) throw nb::value_error("expected ptx=SPELLING or type=TYPE");
  absl::StatusOr<MmType> t = ParseMmType(type);
  if (!t.ok()) ThrowIfError(Prefixed("type", t.status()));
  absl::StatusOr<ReduceOp> o = ParseReduceOp(op);
  if (!o.ok()) ThrowIfError(Prefixed("op", o.status()));
  absl::StatusOr<AccPrec> a = ParseAccPrec(acc);
  if (!a.ok()) ThrowIfError(Prefixed("acc", a.status()));
  r.spec.type = *t;
  r.spec.op = *o;
  r.spec.acc = *a;
  r.spec.model = *m;
  ThrowIfError(ValidateReduceSpec(r.spec));
  r.access_elements = static_cast<size_t>(MmTypeTraits(*t).elements);
  return r;
}

nb::dict ReduceSpecInfo(const std::string& ptx, const std::string& type,
                        const std::string& op, const std::string& acc,
                        const std::string& model) {
  const ParsedSpec p = ParseSpec(ptx, type, op, acc, model);
  const MmTypeInfo& t = MmTypeTraits(p.spec.type);
  nb::dict d;
  d["type"] = t.name;
  d["op"] = std::string(ReduceOpName(p.spec.op));
  d["acc"] = std::string(AccPrecName(p.spec.acc));
  d["model"] = std::string(ReduceModelName(p.spec.model));
  d["is_float"] = t.is_float;
  d["is_signed"] = t.is_signed;
  d["element"] =
      t.is_float ? std::string(FormatName(t.element)) : std::string();
  d["element_bytes"] = t.element_bytes;
  d["access_elements"] = p.access_elements;
  return d;
}

void Reduce(const std::string& ptx, const std::string& type,
            const std::string& op, const std::string& acc,
            const std::string& model, const std::vector<InArray>& replicas,
            const OutArray& out, const std::string& impl, size_t threads) {
  const ParsedSpec p = ParseSpec(ptx, type, op, acc, model);
  const Impl im = ParseImplArg(impl);
  std::vector<absl::Span<const uint8_t>> spans;
  for (size_t i = 0; i < replicas.size(); ++i) {
    spans.push_back(InBytes(replicas[i], absl::StrCat("replicas[", i, "]")));
  }
  const auto o = OutBytes(out, "out");
  const size_t eb = MmTypeTraits(p.spec.type).element_bytes;
  const size_t n = o.size() / eb;
  bool split = !spans.empty() && o.size() % eb == 0;
  for (const auto& s : spans) split = split && s.size() == o.size();
  RunReleased([&] {
    auto whole = [&] { return ReduceArrays(p.spec, spans, o, im); };
    if (!split) return whole();
    // Reductions are element-wise; 64 elements hold whole accesses of every
    // vector width.
    return RunChunked(
        threads, n, 64, kMinUnitsPerChunk,
        [&](size_t b, size_t e) {
          std::vector<absl::Span<const uint8_t>> part;
          part.reserve(spans.size());
          for (const auto& s : spans) part.push_back(Elements(s, eb, b, e));
          return ReduceArrays(p.spec, part, Elements(o, eb, b, e), im);
        },
        whole);
  });
}

std::tuple<bool, std::string> PtxCheck(const std::string& spelling,
                                       const std::string& target) {
  PtxCheckResult r;
  {
    nb::gil_scoped_release release;
    r = CheckPtx(spelling, target);
  }
  return {r.ok, r.text};
}

}  // namespace

}  // namespace mxpack::python

NB_MODULE(_mxpack, m) {
  namespace py = mxpack::python;
  namespace nb = nanobind;
  using nb::arg;
  // The tcgen05 family lives in a library member nothing else references.
  mxpack::RegisterTcgen05PtxFamily();

  m.doc() =
      "Low-level bindings of the mxpack C++ library (use the mxpack package).";
  m.def("format_info", &py::FormatInfo, arg("fmt"),
        "Traits of a format (canonical name or ml_dtypes alias).");
  m.def("canonical_format", &py::CanonicalFormat, arg("name"), arg("arg"),
        "Canonical name of a format; ValueError prefixed with `arg`.");
  m.def("is_exact_conversion", &py::IsExact, arg("src"), arg("fmt"));
  m.def("whole_elements", &py::WholeElements, arg("layout"), arg("nbytes"));
  m.def("format_names", &py::FormatNames, "Canonical names of every format.");
  m.def("available_targets", &py::TargetNames,
        "SIMD targets compiled in and supported by this CPU, best first.");
  m.def("convert", &py::Convert, arg("src"), arg("fmt"), arg("x"), arg("out"),
        arg("rounding"), arg("saturation"), arg("relu"), arg("overflow_tie"),
        arg("rbits").none(), arg("impl"), arg("threads") = 1,
        "mxpack::ConvertArray over raw element buffers (GIL released).");
  m.def("random_bits", &py::FillRandomBits, arg("seed"), arg("out"),
        arg("threads") = 1,
        "out[i] = mxpack::RandomBits(seed, i) (the CLI's --seed words).");
  m.def("has_simd_path", &py::HasSimd, arg("src"), arg("fmt"), arg("rounding"),
        arg("saturation"), arg("relu"), arg("overflow_tie"));
  m.def("validate_conversion", &py::ValidatePolicy, arg("src"), arg("fmt"),
        arg("rounding"), arg("saturation"), arg("relu"), arg("overflow_tie"));
  m.def("packed_bytes", &py::PackedBytesOf, arg("layout"), arg("n"));
  m.def("pack", &py::PackArr, arg("layout"), arg("codes"), arg("out"),
        arg("impl"), arg("threads") = 1);
  m.def("unpack", &py::UnpackArr, arg("layout"), arg("packed"), arg("out"),
        arg("impl"), arg("threads") = 1);
  m.def("decompress", &py::DecompressArr, arg("layout"), arg("packed"),
        arg("out"), arg("fp6_container"), arg("impl"), arg("threads") = 1);
  m.def("compress", &py::CompressArr, arg("layout"), arg("b8x16"), arg("out"),
        arg("fp6_container"), arg("impl"), arg("threads") = 1);
  m.def("encode_packed", &py::EncodePackedArr, arg("src"), arg("fmt"),
        arg("layout"), arg("x"), arg("out"), arg("rounding"), arg("saturation"),
        arg("relu"), arg("overflow_tie"), arg("rbits").none(), arg("impl"),
        arg("threads") = 1);
  m.def("decode_packed", &py::DecodePackedArr, arg("layout"), arg("fmt"),
        arg("to"), arg("packed"), arg("out"), arg("impl"), arg("threads") = 1);
  m.def("decode_containers", &py::DecodeContainersArr, arg("fmt"), arg("to"),
        arg("b8x16"), arg("out"), arg("fp6_container"), arg("impl"),
        arg("threads") = 1);
  m.def("reduce_spec", &py::ReduceSpecInfo, arg("ptx"), arg("type"), arg("op"),
        arg("acc"), arg("model"));
  m.def("reduce", &py::Reduce, arg("ptx"), arg("type"), arg("op"), arg("acc"),
        arg("model"), arg("replicas"), arg("out"), arg("impl"),
        arg("threads") = 1);
  m.def("ptx_check", &py::PtxCheck, arg("spelling"), arg("target"),
        "mxpack::CheckPtx: (ok, text).");
  py::BindMx(m);
  py::BindModel(m);
}
