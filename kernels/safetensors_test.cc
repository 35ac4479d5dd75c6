#include "kernels/safetensors.h"

#include <cstdlib>
#include <random>

#include "common/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::kernels {
namespace {

using kernels::DType;
using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), name);
  std::system(("mkdir -p '" + dir + "'").c_str());
  return dir;
}

std::string SmallFile() {
  SafetensorsWriter w;
  EXPECT_TRUE(w.AddF32("a.weight", DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6}).ok());
  EXPECT_TRUE(w.AddF32("b.weight", DType::kBF16, {4}, {0.5f, -1.0f, 3.0f, 1e-3f}).ok());
  EXPECT_TRUE(w.AddF32("c.bias", DType::kF16, {2}, {7.0f, -0.25f}).ok());
  // FP8 E4M3 codes: 1, -1, 448 (the largest finite), 2^-9 (the smallest subnormal).
  EXPECT_TRUE(w.Add("d.weight", DType::kF8E4M3, {2, 2}, std::string("\x38\xB8\x7E\x01", 4)).ok());
  return w.Serialize();
}

std::string Header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> OpenBytes(const std::string& bytes,
                                                           const std::string& name = "t") {
  std::string path = JoinPath(TempDir("files"), name + ".safetensors");
  EXPECT_TRUE(WriteFile(path, bytes).ok());
  return SafetensorsFile::Open(path);
}

TEST(SafetensorsTest, WriterOutputReadsBackInEveryDtype) {
  std::string dir = TempDir("single");
  ASSERT_TRUE(WriteFileAtomically(JoinPath(dir, "model.safetensors"), SmallFile()).ok());
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_THAT((*ckpt)->TensorNames(),
              ::testing::ElementsAre("a.weight", "b.weight", "c.bias", "d.weight"));
  auto a = (*ckpt)->ReadF32("a.weight");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->dim(0), 2);
  EXPECT_EQ(a->data<float>()[5], 6.0f);
  auto b = (*ckpt)->ReadF32("b.weight");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data<float>()[1], -1.0f);
  EXPECT_NEAR(b->data<float>()[3], 1e-3f, 1e-5f);
  auto c = (*ckpt)->ReadF32("c.bias");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data<float>()[1], -0.25f);
  EXPECT_EQ((*(*ckpt)->Info("b.weight"))->dtype, DType::kBF16);
  auto d = (*ckpt)->ReadF32("d.weight");  // The codes' values; block scales are the loader's.
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(std::vector<float>(d->data<float>(), d->data<float>() + 4),
            (std::vector<float>{1.0f, -1.0f, 448.0f, 0.001953125f}));
  EXPECT_EQ((*(*ckpt)->Info("d.weight"))->dtype, DType::kF8E4M3);
}

TEST(SafetensorsTest, HeaderIsPaddedToEightBytes) {
  std::string bytes = SmallFile();
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(len % 8, 0u);
}

TEST(SafetensorsTest, MissingTensorIsNotFoundNamingIt) {
  std::string dir = TempDir("missing");
  ASSERT_TRUE(WriteFileAtomically(JoinPath(dir, "model.safetensors"), SmallFile()).ok());
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok());
  auto t = (*ckpt)->ReadF32("lm_head.weight");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("no tensor 'lm_head.weight'"));
}

TEST(SafetensorsTest, MissingDirectoryIsNotFound) {
  auto ckpt = Checkpoint::Open("/nonexistent/semmoe/model");
  EXPECT_EQ(ckpt.status().code(), absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, ShardedCheckpoint) {
  std::string dir = TempDir("sharded");
  SafetensorsWriter one, two;
  ASSERT_TRUE(one.AddF32("x", DType::kF32, {1}, {1.5f}).ok());
  ASSERT_TRUE(two.AddF32("y", DType::kBF16, {2}, {2.0f, 3.0f}).ok());
  ASSERT_TRUE(
      WriteFileAtomically(JoinPath(dir, "model-00001-of-00002.safetensors"), one.Serialize()).ok());
  ASSERT_TRUE(
      WriteFileAtomically(JoinPath(dir, "model-00002-of-00002.safetensors"), two.Serialize()).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(dir, "model.safetensors.index.json"),
                                  R"({"metadata": {"total_size": 8}, "weight_map": {
                                    "x": "model-00001-of-00002.safetensors",
                                    "y": "model-00002-of-00002.safetensors"}})")
                  .ok());
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ((*ckpt)->ReadF32("y")->data<float>()[1], 3.0f);
  EXPECT_EQ((*ckpt)->ReadF32("x")->data<float>()[0], 1.5f);
}

TEST(SafetensorsTest, IndexErrors) {
  std::string dir = TempDir("bad_index");
  SafetensorsWriter one;
  ASSERT_TRUE(one.AddF32("x", DType::kF32, {1}, {1.5f}).ok());
  ASSERT_TRUE(WriteFileAtomically(JoinPath(dir, "a.safetensors"), one.Serialize()).ok());
  struct Case {
    std::string index;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"weight_map": {"x": "../a.safetensors"}})", "is not a plain file name"},
           {R"({"weight_map": {"z": "a.safetensors"}})", "'z' is mapped to a.safetensors"},
           {R"({"weight_map": {"x": "b.safetensors"}})", "cannot open"},
           {R"({"weight_map": {"x": 3}})", "is not a file name"},
           {R"({"metadata": {}})", "'weight_map' object"},
           {R"({"weight_map": )", "invalid JSON"}}) {
    ASSERT_TRUE(WriteFileAtomically(JoinPath(dir, "model.safetensors.index.json"), c.index).ok());
    auto ckpt = Checkpoint::Open(dir);
    ASSERT_FALSE(ckpt.ok()) << c.index;
    EXPECT_THAT(std::string(ckpt.status().message()), HasSubstr(c.error)) << c.index;
  }
}

struct Corruption {
  std::string name;
  std::string bytes;
  std::string error;
};

class CorruptFileTest : public ::testing::TestWithParam<Corruption> {};

TEST_P(CorruptFileTest, IsAClearError) {
  auto file = OpenBytes(GetParam().bytes, GetParam().name);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(file.status().message()), HasSubstr(GetParam().error));
  EXPECT_THAT(std::string(file.status().message()), HasSubstr(GetParam().name + ".safetensors"));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, CorruptFileTest,
    ::testing::Values(
        Corruption{"empty", "", "truncated: 0 bytes"},
        Corruption{"short", std::string("\x10\0\0", 3), "truncated: 3 bytes"},
        Corruption{"truncated_header", SmallFile().substr(0, 40), "runs past the end of the file"},
        Corruption{"huge_header_len", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}",
                   "runs past the end"},
        Corruption{"bad_json", Header("{\"a\": [", ""), "invalid JSON"},
        Corruption{"not_object", Header("[1,2]   ", ""), "expected a JSON object"},
        Corruption{"truncated_data", SmallFile().substr(0, SmallFile().size() - 3),
                   "are out of range"},
        Corruption{"offset_past_end",
                   Header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"),
                   "tensor 'w': data_offsets [0, 8) are out of range of the 4-byte data section"},
        Corruption{"length_mismatch",
                   Header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"),
                   "span 8 bytes but F32 shape [3] needs 12"},
        Corruption{"overlap",
                   Header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          "12345678"),
                   "tensors 'a' and 'b' overlap"},
        Corruption{"reversed_offsets",
                   Header(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", "12345678"),
                   "out of range"},
        Corruption{"bad_dtype",
                   Header(R"({"w":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[0,1]}})", "1"),
                   "unknown dtype \"F8_E5M2\""},
        Corruption{"negative_dim",
                   Header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""),
                   "non-negative integers"},
        Corruption{"huge_shape",
                   Header(R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                          R"("data_offsets":[0,0]}})",
                          ""),
                   "shape is too large"},
        Corruption{"no_offsets", Header(R"({"w":{"dtype":"F32","shape":[1]}})", "1234"),
                   "'data_offsets' must be [begin, end]"},
        Corruption{"entry_not_object", Header(R"({"w":5})", ""), "expected an object"}),
    [](const ::testing::TestParamInfo<Corruption>& info) { return info.param.name; });

// Fuzz-style: random byte flips, truncations and splices of a valid file must each either fail
// with a Status or open into tensors that can all be read. Run under ASan/UBSan-like checks by
// touching every byte of every view.
TEST(SafetensorsFuzzTest, CorruptedFilesNeverCrash) {
  std::string good = SmallFile();
  std::mt19937 rng(1234);
  int opened = 0, rejected = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string bytes = good;
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0:  // Flip a byte, biased towards the header.
          if (!bytes.empty()) bytes[rng() % std::min<size_t>(bytes.size(), 200)] = rng();
          break;
        case 1:
          if (!bytes.empty()) bytes.resize(rng() % bytes.size());
          break;
        case 2:  // Replace a digit in the header: offsets and shapes change.
          for (size_t tries = 0; tries < 50 && bytes.size() > 8; ++tries) {
            size_t at = 8 + rng() % (bytes.size() - 8);
            if (isdigit(static_cast<unsigned char>(bytes[at]))) {
              bytes[at] = static_cast<char>('0' + rng() % 10);
              break;
            }
          }
          break;
        default:
          bytes.insert(rng() % (bytes.size() + 1), std::string(1 + rng() % 8, '\x7f'));
      }
    }
    auto file = OpenBytes(bytes, "fuzz");
    if (!file.ok()) {
      ++rejected;
      EXPECT_FALSE(file.status().message().empty());
      continue;
    }
    ++opened;
    for (const TensorInfo& info : (*file)->tensors()) {
      kernels::Tensor view = (*file)->View(info);
      const unsigned char* p = static_cast<const unsigned char*>(view.raw_data());
      unsigned sum = 0;
      for (size_t i = 0; i < view.nbytes(); ++i) sum += p[i];
      (void)sum;
    }
  }
  EXPECT_GT(rejected, 500);  // The mutations really do corrupt most files.
  EXPECT_GT(opened, 0);      // And some (e.g. value-only flips) stay valid.
}

}  // namespace
}  // namespace semmoe::kernels
