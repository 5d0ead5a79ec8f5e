// quantize-model / dequantize-model: every format x layout against the
// library (QuantizeMx / DequantizeMx bit for bit), copied tensors byte for
// byte, complete metadata, identical output for 1, 2 and 3 threads, chunked
// statistics equal to whole-tensor statistics, filters and error paths.
#include "mxpack/model.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "nlohmann/json.hpp"
#include "src/util/thread_pool.h"

namespace mxpack {
namespace {

// A small synthetic model plus tensors that exercise the edges: a tensor of
// several 128-row chunks with ragged rows (260 rows of 2048 f32 = 2 chunks),
// F16 with ragged cols, NaN/Inf/huge inputs, and tensors that are never
// quantized (I64, 3-D, 1-D, empty).
class ModelTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    SyntheticModelConfig c;
    c.layers = 2;
    c.hidden = 96;
    c.kv_hidden = 40;
    c.ffn = 200;
    c.vocab = 300;
    absl::StatusOr<std::vector<uint8_t>> base = SyntheticCheckpoint(c);
    ASSERT_TRUE(base.ok()) << base.status();
    absl::StatusOr<SafetensorsView> v = ParseSafetensors(*base);
    ASSERT_TRUE(v.ok());
    std::vector<StTensorOut> t;
    for (const StTensorInfo& i : v->tensors) t.push_back({i.name, i.dtype, i.shape, v->Bytes(i)});
    static std::vector<std::vector<uint8_t>> extra(5);
    extra[0].resize(260 * 2048 * 4);
    for (size_t i = 0; i < 260 * 2048; ++i) {
      const float f = std::sin(static_cast<float>(i) * 0.37f) * (1.0f + static_cast<float>(i % 300));
      std::memcpy(&extra[0][4 * i], &f, 4);
    }
    t.push_back({"big.weight", StDtype::kF32, {260, 2048}, extra[0]});
    extra[1].resize(130 * 72 * 2);
    for (size_t i = 0; i < 130 * 72; ++i) {
      const uint16_t h = static_cast<uint16_t>(0x3000 + (i * 2654435761u >> 20) % 0x1800) |
                         static_cast<uint16_t>((i & 1) << 15);
      std::memcpy(&extra[1][2 * i], &h, 2);
    }
    t.push_back({"half.weight", StDtype::kF16, {130, 72}, extra[1]});
    extra[2].resize(3 * 64 * 4);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 3e38f, 1e-40f};
    for (size_t i = 0; i < 3 * 64; ++i) {
      float f = static_cast<float>(i) * 0.01f - 0.5f;
      if (i % 37 == 5) f = specials[(i / 37) % 5];
      std::memcpy(&extra[2][4 * i], &f, 4);
    }
    t.push_back({"special.weight", StDtype::kF32, {3, 64}, extra[2]});
    extra[3] = std::vector<uint8_t>(3 * 8, 7);
    t.push_back({"position_ids", StDtype::kI64, {3}, extra[3]});
    extra[4] = std::vector<uint8_t>(2 * 2 * 4 * 4, 1);
    t.push_back({"conv.weight", StDtype::kF32, {2, 2, 4}, extra[4]});
    t.push_back({"empty.weight", StDtype::kF32, {0, 32}, {}});
    absl::StatusOr<std::vector<uint8_t>> f =
        SerializeSafetensors(t, {{"format", "pt"}, {"note", "kept"}});
    ASSERT_TRUE(f.ok()) << f.status();
    file_ = new std::vector<uint8_t>(*std::move(f));
  }
  static void TearDownTestSuite() { delete file_; }

  static SafetensorsView In() { return *ParseSafetensors(*file_); }

  static std::vector<uint8_t>* file_;
};
std::vector<uint8_t>* ModelTest::file_ = nullptr;

bool Quantizable(const StTensorInfo& t) {
  return (t.dtype == StDtype::kF32 || t.dtype == StDtype::kF16 ||
          t.dtype == StDtype::kBF16) &&
         t.shape.size() == 2 && t.shape[0] > 0 && t.shape[1] > 0;
}

std::vector<uint8_t> Serialize(const ModelOutput& o) {
  absl::StatusOr<std::vector<uint8_t>> s = SerializeSafetensors(o.tensors, o.metadata);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : std::vector<uint8_t>{};
}

struct Case {
  MxFormat format;
  ModelLayout layout;
};

class ModelRoundTrip : public ModelTest, public testing::WithParamInterface<Case> {};

TEST_P(ModelRoundTrip, MatchesLibraryBitForBitForAnyThreadCount) {
  const Case c = GetParam();
  const SafetensorsView in = In();
  QuantizeModelOptions o;
  o.format = c.format;
  o.layout = c.layout;
  o.threads = 1;
  o.error_stats = true;
  absl::StatusOr<ModelOutput> q1 = QuantizeModel(in, o);
  ASSERT_TRUE(q1.ok()) << q1.status();
  const std::vector<uint8_t> file1 = Serialize(*q1);
  for (size_t threads : {2, 3}) {
    o.threads = threads;
    absl::StatusOr<ModelOutput> qn = QuantizeModel(in, o);
    ASSERT_TRUE(qn.ok());
    EXPECT_TRUE(Serialize(*qn) == file1) << threads << " threads";
    // The report (statistics) is identical too.
    for (size_t i = 0; i < qn->report.tensors.size(); ++i) {
      const auto& a = q1->report.tensors[i].stats;
      const auto& b = qn->report.tensors[i].stats;
      ASSERT_EQ(a.has_value(), b.has_value());
      if (a.has_value()) {
        EXPECT_EQ(a->rmse, b->rmse);
        EXPECT_EQ(a->max_abs_error, b->max_abs_error);
        EXPECT_EQ(a->saturated, b->saturated);
      }
    }
  }

  absl::StatusOr<SafetensorsView> qv = ParseSafetensors(file1);
  ASSERT_TRUE(qv.ok()) << qv.status();
  EXPECT_EQ(qv->metadata.at("note"), "kept");
  EXPECT_FALSE(qv->metadata.at(kModelVersionKey).empty());
  absl::StatusOr<std::vector<QuantizedTensorInfo>> records = ListQuantizedTensors(*qv);
  ASSERT_TRUE(records.ok()) << records.status();

  DequantizeModelOptions d;
  d.threads = 2;
  absl::StatusOr<ModelOutput> dq = DequantizeModel(*qv, d);
  ASSERT_TRUE(dq.ok()) << dq.status();
  const std::vector<uint8_t> dfile = Serialize(*dq);
  absl::StatusOr<SafetensorsView> dv = ParseSafetensors(dfile);
  ASSERT_TRUE(dv.ok());
  EXPECT_EQ(dv->metadata.count(kModelVersionKey), 0u);
  EXPECT_EQ(dv->metadata.at("note"), "kept");
  EXPECT_EQ(dv->tensors.size(), in.tensors.size());

  size_t quantized = 0;
  for (const StTensorInfo& t : in.tensors) {
    SCOPED_TRACE(t.name);
    const StTensorInfo* back = dv->Find(t.name);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->dtype, t.dtype);
    EXPECT_EQ(back->shape, t.shape);
    if (!Quantizable(t)) {
      ASSERT_NE(qv->Find(t.name), nullptr);
      EXPECT_TRUE(qv->Bytes(*qv->Find(t.name)) == in.Bytes(t));
      EXPECT_TRUE(dv->Bytes(*back) == in.Bytes(t));
      continue;
    }
    ++quantized;
    EXPECT_EQ(qv->Find(t.name), nullptr);
    // Metadata record: complete and consistent.
    const std::string key = absl::StrCat(kModelTensorKeyPrefix, t.name);
    ASSERT_EQ(qv->metadata.count(key), 1u);
    const nlohmann::json j = nlohmann::json::parse(qv->metadata.at(key));
    EXPECT_EQ(j.at("format"), std::string(MxFormatName(c.format)));
    EXPECT_EQ(j.at("layout"), std::string(ModelLayoutName(c.layout)));
    EXPECT_EQ(j.at("element_layout"),
              std::string(ElementLayoutName(ModelElementLayout(c.format, c.layout))));
    EXPECT_EQ(j.at("scale_layout"),
              std::string(ScaleLayoutName(ModelScaleLayout(c.layout))));
    EXPECT_EQ(j.at("scale_mode"), std::string(ScaleModeName(DefaultScaleMode(c.format))));
    EXPECT_EQ(j.at("dtype"), std::string(StDtypeName(t.dtype)));
    EXPECT_EQ(j.at("shape"), nlohmann::json(t.shape));
    EXPECT_EQ(j.at("block_size"), MxBlockSize(c.format));
    EXPECT_TRUE(j.at("mxpack_version").is_string());
    EXPECT_EQ(j.contains("tscale"), c.format == MxFormat::kNvfp4);

    // quantize-model == QuantizeMx of the whole tensor.
    MxOptions mo;
    mo.layout = ModelElementLayout(c.format, c.layout);
    mo.scale_layout = ModelScaleLayout(c.layout);
    const Format from = *StDtypeFormat(t.dtype);
    absl::StatusOr<MxTensor> ref =
        QuantizeMx(c.format, from, in.Bytes(t), t.shape[0], t.shape[1], mo);
    ASSERT_TRUE(ref.ok()) << ref.status();
    const StTensorInfo* qd = qv->Find(t.name + ".qdata");
    const StTensorInfo* sc = qv->Find(t.name + ".scales");
    ASSERT_NE(qd, nullptr);
    ASSERT_NE(sc, nullptr);
    EXPECT_EQ(qd->dtype, c.format == MxFormat::kMxfp8E4m3   ? StDtype::kF8E4M3
                         : c.format == MxFormat::kMxfp8E5m2 ? StDtype::kF8E5M2
                                                            : StDtype::kU8);
    EXPECT_EQ(qd->shape, (std::vector<uint64_t>{t.shape[0], ref->shape.element_row_bytes()}));
    EXPECT_TRUE(qv->Bytes(*qd) == absl::MakeConstSpan(ref->elements));
    EXPECT_TRUE(qv->Bytes(*sc) == absl::MakeConstSpan(ref->scales));
    if (c.format == MxFormat::kNvfp4) {
      const StTensorInfo* ts = qv->Find(t.name + ".tscale");
      ASSERT_NE(ts, nullptr);
      float tscale;
      std::memcpy(&tscale, qv->Bytes(*ts).data(), 4);
      EXPECT_EQ(tscale, ref->tensor_scale);
    }
    // dequantize-model == DequantizeMx of that, in the original dtype.
    std::vector<uint8_t> deq(in.Bytes(t).size());
    ASSERT_TRUE(DequantizeMx(View(*ref), from, absl::MakeSpan(deq)).ok());
    EXPECT_TRUE(dv->Bytes(*back) == absl::MakeConstSpan(deq));
    // Chunked statistics == whole-tensor statistics.
    absl::StatusOr<MxErrorStats> whole = ComputeMxErrorStats(from, in.Bytes(t), View(*ref));
    ASSERT_TRUE(whole.ok());
    const TensorReport* tr = nullptr;
    for (const TensorReport& r : q1->report.tensors) tr = r.name == t.name ? &r : tr;
    ASSERT_NE(tr, nullptr);
    ASSERT_TRUE(tr->stats.has_value());
    EXPECT_EQ(tr->stats->elements, whole->elements);
    EXPECT_EQ(tr->stats->saturated, whole->saturated);
    EXPECT_EQ(tr->stats->nan_inf_inputs, whole->nan_inf_inputs);
    EXPECT_EQ(tr->stats->nan_outputs, whole->nan_outputs);
    EXPECT_EQ(tr->stats->max_abs_error, whole->max_abs_error);
    EXPECT_NEAR(tr->stats->rmse, whole->rmse, 1e-9 * whole->rmse);
    if (std::isfinite(whole->sqnr_db)) {
      EXPECT_NEAR(tr->stats->sqnr_db, whole->sqnr_db, 1e-9);
    }
  }
  EXPECT_EQ(records->size(), quantized);
  EXPECT_EQ(q1->report.quantized_tensors, quantized);
}

INSTANTIATE_TEST_SUITE_P(
    AllFormats, ModelRoundTrip,
    testing::Values(Case{MxFormat::kMxfp8E4m3, ModelLayout::kDense},
                    Case{MxFormat::kMxfp8E4m3, ModelLayout::kTcgen05},
                    Case{MxFormat::kMxfp8E5m2, ModelLayout::kTcgen05},
                    Case{MxFormat::kMxfp6E2m3, ModelLayout::kDense},
                    Case{MxFormat::kMxfp6E2m3, ModelLayout::kTcgen05},
                    Case{MxFormat::kMxfp6E3m2, ModelLayout::kTcgen05},
                    Case{MxFormat::kMxfp4, ModelLayout::kDense},
                    Case{MxFormat::kMxfp4, ModelLayout::kTcgen05},
                    Case{MxFormat::kNvfp4, ModelLayout::kDense},
                    Case{MxFormat::kNvfp4, ModelLayout::kTcgen05}),
    [](const testing::TestParamInfo<Case>& i) {
      return absl::StrCat(MxFormatName(i.param.format), "_",
                          ModelLayoutName(i.param.layout));
    });

// NVFP4's tensor scale is the finite amax of the whole tensor although
// quantize-model measures it in 2 MiB parts: f32 and bf16 tensors of 2.5
// MiB, the largest finite magnitude only in the last part, the first part
// zero but for an Inf and a NaN.
TEST(ModelNvfp4Test, TensorScaleOfTheWholeTensorAcrossParts) {
  const size_t cols = 2048;
  std::vector<std::vector<uint8_t>> data(2);
  std::vector<StTensorOut> t;
  for (const StDtype dtype : {StDtype::kF32, StDtype::kBF16}) {
    const size_t bytes = dtype == StDtype::kF32 ? 4 : 2;
    const size_t rows = (5u << 19) / (cols * bytes);
    std::vector<uint8_t>& d = data[bytes == 4 ? 0 : 1];
    d.assign(rows * cols * bytes, 0);
    for (size_t i = (2u << 20) / bytes; i < rows * cols; ++i) {  // the second part
      const float f = static_cast<float>(i % 97) * 0.25f - 12.0f;  // |f| <= 12
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (bytes == 2) u >>= 16;  // exact: multiples of 0.25 below 2^7
      std::memcpy(&d[i * bytes], &u, bytes);
    }
    const size_t last = rows * cols - 3;  // -24.5, the amax, in the last part
    const uint32_t amax_bits = bytes == 4 ? 0xC1C40000u : 0xC1C4u;
    std::memcpy(&d[last * bytes], &amax_bits, bytes);
    const uint32_t inf = bytes == 4 ? 0x7F800000u : 0x7F80u;
    const uint32_t nan = bytes == 4 ? 0xFFC00000u : 0xFFC0u;
    std::memcpy(&d[7 * bytes], &inf, bytes);
    std::memcpy(&d[9 * bytes], &nan, bytes);
    t.push_back({bytes == 4 ? "a.weight" : "b.weight", dtype, {rows, cols}, d});
  }
  const absl::StatusOr<std::vector<uint8_t>> file = SerializeSafetensors(t, {});
  ASSERT_TRUE(file.ok()) << file.status();
  const SafetensorsView in = *ParseSafetensors(*file);
  QuantizeModelOptions o;
  o.format = MxFormat::kNvfp4;
  o.threads = 2;
  absl::StatusOr<ModelOutput> out = QuantizeModel(in, o);
  ASSERT_TRUE(out.ok()) << out.status();
  for (const StTensorInfo& i : in.tensors) {
    const absl::StatusOr<float> whole =
        ComputeNvfp4TensorScale(*StDtypeFormat(i.dtype), in.Bytes(i));
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(*whole, 24.5f / 2688.0f) << i.name;
    float got = 0;
    for (const StTensorOut& o2 : out->tensors) {
      if (o2.name == i.name + ".tscale") std::memcpy(&got, o2.data.data(), 4);
    }
    EXPECT_EQ(got, *whole) << i.name;
  }
}

TEST(ThreadPoolTest, EveryIndexRunsExactlyOnceOnEveryCall) {
  for (size_t threads : {1, 2, 4}) {
    internal::ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t n : {0, 1, 3, 1000}) {
      for (int round = 0; round < 3; ++round) {
        std::vector<std::atomic<int>> hits(n);
        pool.ParallelFor(n, [&](size_t i) { hits[i].fetch_add(1); });
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[i].load(), 1) << threads << " threads, n " << n << ", i " << i;
        }
      }
    }
  }
  internal::ThreadPool all(0);
  EXPECT_GE(all.size(), 1u);
}

TEST(ModelLayoutTest, MapsToMxLayouts) {
  EXPECT_EQ(ModelElementLayout(MxFormat::kMxfp4, ModelLayout::kDense), ElementLayout::kDense4);
  EXPECT_EQ(ModelElementLayout(MxFormat::kNvfp4, ModelLayout::kTcgen05),
            ElementLayout::kB4x16P64);
  EXPECT_EQ(ModelElementLayout(MxFormat::kMxfp6E3m2, ModelLayout::kDense),
            ElementLayout::kDense6);
  EXPECT_EQ(ModelElementLayout(MxFormat::kMxfp6E2m3, ModelLayout::kTcgen05),
            ElementLayout::kB6x16P32);
  EXPECT_EQ(ModelElementLayout(MxFormat::kMxfp8E5m2, ModelLayout::kTcgen05),
            ElementLayout::kCodes);
  EXPECT_EQ(ModelScaleLayout(ModelLayout::kDense), ScaleLayout::kLinear);
  EXPECT_EQ(ModelScaleLayout(ModelLayout::kTcgen05), ScaleLayout::kTcgen05);
  EXPECT_EQ(*ParseModelLayout("TCGEN05"), ModelLayout::kTcgen05);
  absl::StatusOr<ModelLayout> bad = ParseModelLayout("b4x16_p64");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected dense or tcgen05"), std::string::npos);
}

TEST_F(ModelTest, IncludeExcludeScaleModeAndDequantizeTo) {
  const SafetensorsView in = In();
  QuantizeModelOptions o;
  o.format = MxFormat::kMxfp8E4m3;
  o.include = "self_attn";
  o.exclude = "k_proj";
  o.scale_mode = ScaleMode::kRceil;
  absl::StatusOr<ModelOutput> q = QuantizeModel(in, o);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_FALSE(q->report.total.has_value());
  const std::vector<uint8_t> f = Serialize(*q);
  SafetensorsView qv = *ParseSafetensors(f);
  std::vector<QuantizedTensorInfo> records = *ListQuantizedTensors(qv);
  EXPECT_EQ(records.size(), 6u);  // q, v, o of 2 layers
  for (const QuantizedTensorInfo& r : records) {
    EXPECT_NE(r.name.find("self_attn"), std::string::npos);
    EXPECT_EQ(r.name.find("k_proj"), std::string::npos);
    EXPECT_EQ(r.scale_mode, ScaleMode::kRceil);
  }
  EXPECT_NE(qv.Find("model.layers.0.self_attn.k_proj.weight"), nullptr);
  EXPECT_NE(qv.Find("model.layers.0.mlp.up_proj.weight"), nullptr);

  DequantizeModelOptions d;
  d.to = Format::kBF16;
  absl::StatusOr<ModelOutput> dq = DequantizeModel(qv, d);
  ASSERT_TRUE(dq.ok()) << dq.status();
  for (const StTensorOut& t : dq->tensors) {
    if (t.name.find("q_proj") != std::string::npos) {
      EXPECT_EQ(t.dtype, StDtype::kBF16);
    }
  }
  d.to = Format::kE4M3;
  absl::StatusOr<ModelOutput> bad = DequantizeModel(qv, d);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("to: expected f32, bf16 or f16, got e4m3"),
            std::string::npos);
}

TEST_F(ModelTest, ErrorsNameTheProblem) {
  const SafetensorsView in = In();
  QuantizeModelOptions o;
  o.include = "([";
  absl::StatusOr<ModelOutput> q = QuantizeModel(in, o);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("include: invalid regular expression '(['"),
            std::string::npos);

  // An output name that already exists in the input.
  std::vector<uint8_t> w(32 * 4), x(4);
  absl::StatusOr<std::vector<uint8_t>> f = SerializeSafetensors(
      {{"w", StDtype::kF32, {1, 32}, w}, {"w.scales", StDtype::kF32, {1}, x}}, {});
  ASSERT_TRUE(f.ok());
  absl::StatusOr<ModelOutput> c = QuantizeModel(*ParseSafetensors(*f), {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "tensor 'w': output name 'w.scales' is already a tensor of the input"),
            std::string::npos);
}

TEST_F(ModelTest, DequantizeRejectsInconsistentRecords) {
  const SafetensorsView in = In();
  QuantizeModelOptions o;
  o.include = "^big";
  o.format = MxFormat::kNvfp4;
  absl::StatusOr<ModelOutput> q = QuantizeModel(in, o);
  ASSERT_TRUE(q.ok());
  struct Edit {
    const char* what;
    std::function<void(ModelOutput&)> edit;
    const char* error;
  };
  const std::string key = absl::StrCat(kModelTensorKeyPrefix, "big.weight");
  const std::vector<Edit> edits = {
      {"bad json", [&](ModelOutput& m) { m.metadata[key] = "{"; }, "not valid JSON"},
      {"bad format",
       [&](ModelOutput& m) {
         auto j = nlohmann::json::parse(m.metadata[key]);
         j["format"] = "mxfp5";
         m.metadata[key] = j.dump();
       },
       "unknown"},
      {"missing tscale",
       [&](ModelOutput& m) {
         auto j = nlohmann::json::parse(m.metadata[key]);
         j.erase("tscale");
         m.metadata[key] = j.dump();
       },
       "missing string field \"tscale\""},
      {"wrong shape",
       [&](ModelOutput& m) {
         auto j = nlohmann::json::parse(m.metadata[key]);
         j["shape"] = {261, 2048};
         m.metadata[key] = j.dump();
       },
       "qdata tensor 'big.weight.qdata': expected"},
      {"missing qdata",
       [&](ModelOutput& m) {
         for (auto it = m.tensors.begin(); it != m.tensors.end(); ++it) {
           if (it->name == "big.weight.qdata") {
             m.tensors.erase(it);
             break;
           }
         }
       },
       "qdata tensor 'big.weight.qdata' is missing"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.what);
    ModelOutput m;
    m.tensors = q->tensors;
    m.metadata = q->metadata;
    e.edit(m);
    const std::vector<uint8_t> f = Serialize(m);
    absl::StatusOr<SafetensorsView> v = ParseSafetensors(f);
    ASSERT_TRUE(v.ok());
    absl::StatusOr<ModelOutput> d = DequantizeModel(*v, {});
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find(e.error), std::string::npos) << d.status();
    EXPECT_NE(d.status().message().find("metadata 'mxpack.tensor.big.weight'"),
              std::string::npos)
        << d.status();
  }
}

TEST_F(ModelTest, ReportsRenderAsTextAndJson) {
  QuantizeModelOptions o;
  o.format = MxFormat::kMxfp4;
  o.layout = ModelLayout::kTcgen05;
  o.error_stats = true;
  absl::StatusOr<ModelOutput> q = QuantizeModel(In(), o);
  ASSERT_TRUE(q.ok());
  const std::string text = ModelReportText(q->report);
  EXPECT_NE(text.find("quantize-model: mxfp4, layout tcgen05 (elements b4x16_p64, "
                      "scales tcgen05), scale mode floor"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("position_ids"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(ModelReportJson(q->report));
  EXPECT_EQ(j.at("format"), "mxfp4");
  EXPECT_EQ(j.at("quantized_tensors"), q->report.quantized_tensors);
  EXPECT_EQ(j.at("tensors").size(), q->report.tensors.size());
  EXPECT_GT(j.at("total").at("sqnr_db").get<double>(), 10.0);
  const std::vector<uint8_t> f = Serialize(*q);
  SafetensorsView v = *ParseSafetensors(f);
  absl::StatusOr<std::string> it = InspectText(v);
  ASSERT_TRUE(it.ok());
  EXPECT_NE(it->find("big.weight: F32 [260, 2048] -> mxfp4, layout tcgen05"),
            std::string::npos)
      << *it;
  const nlohmann::json ij = nlohmann::json::parse(*InspectJson(v));
  EXPECT_EQ(ij.at("quantized").size(), q->report.quantized_tensors);
}

}  // namespace
}  // namespace mxpack
