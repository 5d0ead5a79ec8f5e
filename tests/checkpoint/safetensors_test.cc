// safetensors reader/writer: round trips, layout of written files, and the
// table of malformed files (each rejected with its documented error, and
// quantize-model on it leaves no output file).
#include "mxpack/safetensors.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mxpack/model.h"

namespace mxpack {
namespace {

std::vector<uint8_t> MakeFile(const std::string& header, const std::vector<uint8_t>& data,
                              std::optional<uint64_t> length = std::nullopt) {
  const uint64_t n = length.value_or(header.size());
  std::vector<uint8_t> f(8);
  for (int b = 0; b < 8; ++b) f[b] = static_cast<uint8_t>(n >> (8 * b));
  f.insert(f.end(), header.begin(), header.end());
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/mxpack-st-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteBytes(const std::string& path, const std::vector<uint8_t>& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(b.data(), 1, b.size(), f), b.size());
  std::fclose(f);
}

TEST(SafetensorsTest, DtypeNamesSizesAndFormats) {
  for (StDtype d : {StDtype::kBool, StDtype::kU8, StDtype::kI8, StDtype::kU16,
                    StDtype::kI16, StDtype::kF16, StDtype::kBF16, StDtype::kU32,
                    StDtype::kI32, StDtype::kF32, StDtype::kU64, StDtype::kI64,
                    StDtype::kF64, StDtype::kF8E4M3, StDtype::kF8E5M2}) {
    absl::StatusOr<StDtype> back = ParseStDtype(StDtypeName(d));
    ASSERT_TRUE(back.ok()) << StDtypeName(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(StDtypeSize(StDtype::kBF16), 2u);
  EXPECT_EQ(StDtypeSize(StDtype::kF8E5M2), 1u);
  EXPECT_EQ(StDtypeSize(StDtype::kI64), 8u);
  EXPECT_EQ(StDtypeFormat(StDtype::kF8E4M3), Format::kE4M3);
  EXPECT_EQ(StDtypeFormat(StDtype::kBF16), Format::kBF16);
  EXPECT_FALSE(StDtypeFormat(StDtype::kI32).has_value());
  // Names are case-sensitive, as in the format.
  EXPECT_FALSE(ParseStDtype("f32").ok());
}

TEST(SafetensorsTest, RoundTripKeepsEverythingAndAlignsTensors) {
  std::vector<uint8_t> a(3), b(2 * 3 * 4), c(8), e;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7 + 1);
  a = {1, 2, 3};
  c = {9, 8, 7, 6, 5, 4, 3, 2};
  std::vector<StTensorOut> t = {
      {"bytes", StDtype::kU8, {3}, a},
      {"matrix", StDtype::kF32, {2, 3}, b},
      {"scalar", StDtype::kI64, {}, c},
      {"empty", StDtype::kBF16, {0, 5}, e},
  };
  absl::StatusOr<std::vector<uint8_t>> file =
      SerializeSafetensors(t, {{"format", "pt"}, {"k", "v"}});
  ASSERT_TRUE(file.ok()) << file.status();
  // Header padded to 8 bytes.
  uint64_t n = 0;
  std::memcpy(&n, file->data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ((*file)[8 + n - 1] == ' ' || (*file)[8 + n - 1] == '}', true);
  absl::StatusOr<SafetensorsView> v = ParseSafetensors(*file);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->metadata.at("format"), "pt");
  EXPECT_EQ(v->metadata.at("k"), "v");
  ASSERT_EQ(v->tensors.size(), 4u);
  for (const StTensorOut& o : t) {
    const StTensorInfo* i = v->Find(o.name);
    ASSERT_NE(i, nullptr) << o.name;
    EXPECT_EQ(i->dtype, o.dtype);
    EXPECT_EQ(i->shape, o.shape);
    EXPECT_TRUE(v->Bytes(*i) == o.data) << o.name;
    // Every tensor starts at a multiple of its element size.
    EXPECT_EQ(i->begin % StDtypeSize(i->dtype), 0u) << o.name;
  }
  EXPECT_EQ(v->Find("scalar")->num_elements(), 1u);
  EXPECT_EQ(v->Find("empty")->num_elements(), 0u);
  EXPECT_EQ(v->Find("nope"), nullptr);
}

TEST(SafetensorsTest, WriterRejectsBadTensors) {
  std::vector<uint8_t> four(4);
  EXPECT_FALSE(SerializeSafetensors({{"x", StDtype::kF32, {2}, four}}, {}).ok());
  EXPECT_FALSE(SerializeSafetensors({{"", StDtype::kU8, {4}, four}}, {}).ok());
  EXPECT_FALSE(SerializeSafetensors({{"__metadata__", StDtype::kU8, {4}, four}}, {}).ok());
  absl::StatusOr<std::vector<uint8_t>> dup = SerializeSafetensors(
      {{"x", StDtype::kU8, {4}, four}, {"x", StDtype::kU8, {4}, four}}, {});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate tensor name 'x'"), std::string::npos);
}

TEST(SafetensorsTest, WriteAndMapFile) {
  TempDir dir;
  std::vector<uint8_t> d = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(WriteSafetensors(dir.File("a.safetensors"),
                               {{"w", StDtype::kF16, {2, 2}, d}}, {})
                  .ok());
  EXPECT_FALSE(std::filesystem::exists(dir.File("a.safetensors.mxpack-tmp")));
  absl::StatusOr<std::unique_ptr<MappedFile>> m = MappedFile::Open(dir.File("a.safetensors"));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<SafetensorsView> v = ParseSafetensors((*m)->bytes());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->Bytes(v->tensors[0]) == absl::MakeConstSpan(d));
  EXPECT_FALSE(MappedFile::Open(dir.File("missing")).ok());
  // A directory that does not exist: error, nothing written.
  EXPECT_FALSE(WriteSafetensors(dir.File("no/such/dir.safetensors"),
                                {{"w", StDtype::kF16, {2, 2}, d}}, {})
                   .ok());
}

// Accepts the header padding and key order Python's safetensors writes.
TEST(SafetensorsTest, AcceptsPaddedHeaderAndAnyKeyOrder) {
  const std::string h =
      R"({"b":{"data_offsets":[4,6],"shape":[1],"dtype":"BF16"},)"
      R"("__metadata__":{"format":"np"},"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}   )";
  absl::StatusOr<SafetensorsView> v = ParseSafetensors(MakeFile(h, {0, 0, 128, 63, 1, 2}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->tensors[0].name, "a");  // ordered by offset
  EXPECT_EQ(v->tensors[1].name, "b");
}

struct Malformed {
  const char* name;
  std::vector<uint8_t> file;
  const char* error;  // substring of the documented message
};

std::vector<Malformed> MalformedTable() {
  const std::vector<uint8_t> d16(16, 0);
  return {
      {"ShortFile", {1, 2, 3}, "file is 3 bytes; expected at least 8"},
      {"HeaderLengthPastEnd", MakeFile("{}", {}, 1000),
       "header length 1000 exceeds the 2 bytes that follow"},
      {"HeaderLengthOverLimit", MakeFile("{}", {}, uint64_t{1} << 40),
       "exceeds the limit of 104857600 bytes"},
      {"NotJsonObject", MakeFile("[1,2]", {}), "expected '{' as its first byte"},
      {"InvalidJson", MakeFile(R"({"a": {"dtype": "F32",)", {}),
       "header is not valid JSON"},
      {"TensorNotObject", MakeFile(R"({"a": 5})", {}),
       "tensor 'a': expected an object, got number"},
      {"UnknownDtype",
       MakeFile(R"({"a":{"dtype":"F9","shape":[4],"data_offsets":[0,16]}})", d16),
       "tensor 'a': unknown dtype 'F9'; expected one of BOOL, U8"},
      {"MissingDtype", MakeFile(R"({"a":{"shape":[4],"data_offsets":[0,16]}})", d16),
       "tensor 'a': missing \"dtype\""},
      {"UnknownField",
       MakeFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}})",
                d16),
       "unknown field \"x\""},
      {"NegativeDim",
       MakeFile(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", d16),
       "shape must be an array of non-negative integers, got [-4]"},
      {"FractionalDim",
       MakeFile(R"({"a":{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}})", d16),
       "shape must be an array of non-negative integers"},
      {"OffsetsNotPair",
       MakeFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0]}})", d16),
       "data_offsets must be [begin, end]"},
      {"OffsetsOutOfRange",
       MakeFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", d16),
       "data_offsets [0, 32] out of range: expected begin <= end <= 16"},
      {"OffsetsReversed",
       MakeFile(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", d16),
       "data_offsets [8, 0] out of range"},
      {"ShapeSizeMismatch",
       MakeFile(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", d16),
       "shape [2, 3] of F32 needs 24 bytes, but data_offsets [0, 16] span 16"},
      {"ShapeOverflow",
       MakeFile(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                R"("data_offsets":[0,16]}})",
                d16),
       "overflows 64 bits"},
      {"Overlap",
       MakeFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                d16),
       "tensors 'a' [0, 12) and 'b' [8, 16) overlap"},
      {"Hole",
       MakeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("b":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}})",
                d16),
       "data bytes [8, 12) belong to no tensor (before 'b')"},
      {"TrailingBytes",
       MakeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d16),
       "data bytes [8, 16) at the end of the file belong to no tensor"},
      {"MetadataNotObject", MakeFile(R"({"__metadata__": [1]})", {}),
       "__metadata__ must be an object of strings, got array"},
      {"MetadataValueNotString", MakeFile(R"({"__metadata__": {"k": 1}})", {}),
       "__metadata__ value of 'k' must be a string, got number"},
  };
}

class MalformedTest : public testing::TestWithParam<Malformed> {};

TEST_P(MalformedTest, RejectedWithDocumentedErrorAndNoOutput) {
  const Malformed& m = GetParam();
  absl::StatusOr<SafetensorsView> v = ParseSafetensors(m.file);
  ASSERT_FALSE(v.ok()) << m.name;
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find(m.error), std::string::npos)
      << "got: " << v.status().message() << "\nexpected: " << m.error;
  // The file-level entry points fail the same way and write nothing.
  TempDir dir;
  WriteBytes(dir.File("in.safetensors"), m.file);
  const std::string out = dir.File("out.safetensors");
  absl::StatusOr<ModelReport> q =
      QuantizeModelFile(dir.File("in.safetensors"), out, QuantizeModelOptions{});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find(m.error), std::string::npos) << q.status();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".mxpack-tmp"));
  absl::StatusOr<ModelReport> d =
      DequantizeModelFile(dir.File("in.safetensors"), out, DequantizeModelOptions{});
  ASSERT_FALSE(d.ok());
  EXPECT_FALSE(std::filesystem::exists(out));
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedTest, testing::ValuesIn(MalformedTable()),
                         [](const testing::TestParamInfo<Malformed>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace mxpack
