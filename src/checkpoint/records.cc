// The mxpack scheme's "mxpack.tensor.NAME" metadata records: parsing and
// checking them against the tensors they name, and the MxTensorView of one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mxpack/model.h"
#include "nlohmann/json.hpp"

namespace mxpack {

using Json = nlohmann::json;

absl::StatusOr<std::vector<QuantizedTensorInfo>> ListQuantizedTensors(
    const SafetensorsView& in) {
  std::vector<QuantizedTensorInfo> list;
  for (const auto& entry : in.metadata) {
    // Named references, not structured bindings: the lambdas below capture
    // `key`, which C++17 (and clang 14) does not allow for bindings.
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    if (!absl::StartsWith(key, kModelTensorKeyPrefix)) continue;
    QuantizedTensorInfo q;
    q.name = key.substr(std::strlen(kModelTensorKeyPrefix));
    auto bad = [&](const std::string& msg) {
      return absl::InvalidArgumentError(
          absl::StrFormat("metadata '%s': %s", key, msg));
    };
    Json j;
    try {
      j = Json::parse(value);
    } catch (const Json::exception& e) {
      return bad(absl::StrCat("not valid JSON: ", e.what()));
    }
    if (!j.is_object()) return bad("expected a JSON object");
    auto str = [&](const char* field) -> absl::StatusOr<std::string> {
      if (!j.contains(field) || !j[field].is_string()) {
        return bad(absl::StrFormat("missing string field \"%s\"", field));
      }
      return j[field].get<std::string>();
    };
    absl::StatusOr<std::string> f;
    f = str("format");
    if (!f.ok()) return f.status();
    absl::StatusOr<MxFormat> format = ParseMxFormat(*f);
    if (!format.ok()) return bad(std::string(format.status().message()));
    q.shape.format = *format;
    f = str("element_layout");
    if (!f.ok()) return f.status();
    absl::StatusOr<ElementLayout> el = ParseElementLayout(*f);
    if (!el.ok()) return bad(std::string(el.status().message()));
    q.shape.layout = *el;
    f = str("scale_layout");
    if (!f.ok()) return f.status();
    absl::StatusOr<ScaleLayout> sl = ParseScaleLayout(*f);
    if (!sl.ok()) return bad(std::string(sl.status().message()));
    q.shape.scale_layout = *sl;
    f = str("layout");
    if (!f.ok()) return f.status();
    absl::StatusOr<ModelLayout> ml = ParseModelLayout(*f);
    if (!ml.ok()) return bad(std::string(ml.status().message()));
    q.layout = *ml;
    f = str("scale_mode");
    if (!f.ok()) return f.status();
    absl::StatusOr<ScaleMode> sm = ParseScaleMode(*f);
    if (!sm.ok()) return bad(std::string(sm.status().message()));
    q.scale_mode = *sm;
    f = str("dtype");
    if (!f.ok()) return f.status();
    absl::StatusOr<StDtype> dt = ParseStDtype(*f);
    if (!dt.ok()) return bad(std::string(dt.status().message()));
    if (*dt != StDtype::kF32 && *dt != StDtype::kF16 && *dt != StDtype::kBF16) {
      return bad(absl::StrFormat("dtype: expected F32, F16 or BF16, got %s", *f));
    }
    q.dtype = *dt;
    if (!j.contains("shape") || !j["shape"].is_array() || j["shape"].size() != 2 ||
        !j["shape"][0].is_number_unsigned() || !j["shape"][1].is_number_unsigned()) {
      return bad("shape: expected [rows, cols] of non-negative integers");
    }
    q.shape.rows = j["shape"][0].get<size_t>();
    q.shape.cols = j["shape"][1].get<size_t>();
    if (absl::Status s = CheckMxShape(q.shape); !s.ok()) {
      return bad(std::string(s.message()));
    }
    q.tensor_shape = {q.shape.rows, q.shape.cols};
    if (j.contains("tensor_shape")) {
      const Json& ts = j["tensor_shape"];
      bool valid = ts.is_array() && ts.size() == 3;
      for (size_t k = 0; valid && k < 3; ++k) valid = ts[k].is_number_unsigned();
      if (!valid || ts[0].get<uint64_t>() * ts[1].get<uint64_t>() != q.shape.rows ||
          ts[2].get<uint64_t>() != q.shape.cols) {
        return bad("tensor_shape: expected [a, b, cols] with a * b == rows");
      }
      q.tensor_shape = ts.get<std::vector<uint64_t>>();
    }
    for (auto [field, dst] : {std::pair<const char*, std::string*>{"qdata", &q.qdata},
                              {"scales", &q.scales}}) {
      f = str(field);
      if (!f.ok()) return f.status();
      *dst = *f;
    }
    if (q.shape.format == MxFormat::kNvfp4) {
      f = str("tscale");
      if (!f.ok()) return f.status();
      q.tscale = *f;
    }
    if (j.contains("mxpack_version") && j["mxpack_version"].is_string()) {
      q.version = j["mxpack_version"].get<std::string>();
    }
    // The named tensors must exist with the sizes the shape implies.
    auto check = [&](const std::string& name, uint64_t bytes,
                     absl::string_view what) -> absl::Status {
      const StTensorInfo* t = in.Find(name);
      if (t == nullptr) {
        return bad(absl::StrFormat("%s tensor '%s' is missing", what, name));
      }
      if (t->num_bytes() != bytes) {
        return bad(absl::StrFormat("%s tensor '%s': expected %d bytes, got %d", what,
                                   name, bytes, t->num_bytes()));
      }
      if (what == "tscale" && t->dtype != StDtype::kF32) {
        return bad(absl::StrFormat("tscale tensor '%s': expected dtype F32, got %s",
                                   name, StDtypeName(t->dtype)));
      }
      return absl::OkStatus();
    };
    if (absl::Status s = check(q.qdata, q.shape.element_bytes(), "qdata"); !s.ok()) {
      return s;
    }
    if (absl::Status s = check(q.scales, q.shape.scale_bytes(), "scales"); !s.ok()) {
      return s;
    }
    if (!q.tscale.empty()) {
      if (absl::Status s = check(q.tscale, 4, "tscale"); !s.ok()) return s;
    }
    list.push_back(std::move(q));
  }
  return list;
}

absl::StatusOr<MxTensorView> QuantizedTensorView(const SafetensorsView& in,
                                                 const QuantizedTensorInfo& info) {
  const StTensorInfo* qd = in.Find(info.qdata);
  const StTensorInfo* sc = in.Find(info.scales);
  if (qd == nullptr || sc == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s': qdata '%s' or scales '%s' missing", info.name, info.qdata,
        info.scales));
  }
  MxTensorView v;
  v.shape = info.shape;
  v.elements = in.Bytes(*qd);
  v.scales = in.Bytes(*sc);
  if (!info.tscale.empty()) {
    const StTensorInfo* ts = in.Find(info.tscale);
    if (ts == nullptr || ts->num_bytes() != 4) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor '%s': tscale '%s' missing", info.name, info.tscale));
    }
    std::memcpy(&v.tensor_scale, in.Bytes(*ts).data(), 4);
  }
  return v;
}

}  // namespace mxpack
