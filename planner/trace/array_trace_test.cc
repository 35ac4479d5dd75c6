#include "planner/trace/array_trace.h"

#include <cstdlib>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "gtest/gtest.h"

namespace semmoe::planner::trace {
namespace {

std::string Dir(const std::string& name) {
  std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), name);
  std::system(("mkdir -p " + dir).c_str());
  return dir;
}

TEST(ArrayTraceTest, ImportsAndValidates) {
  const std::string dir = Dir("small");
  ASSERT_TRUE(WriteFile(JoinPath(dir, "index.json"),
                        R"({"num_layers": 2, "num_experts": 4, "top_k": 1, "prompts": [
                              {"index": 0, "n_tokens": 2, "token_offset": 0, "doc_id": "d"},
                              {"index": 1, "n_tokens": 1, "token_offset": 2}]})")
                  .ok());
  ASSERT_TRUE(WriteFile(JoinPath(dir, "tokens.u16"), std::string("\x05\x00\x06\x00\x07\x01", 6)).ok());
  ASSERT_TRUE(WriteFile(JoinPath(dir, "topk_ids.u8"), std::string("\x00\x01\x02\x03\x01\x02", 6)).ok());
  auto set = ImportArrayTrace(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->num_requests(), 2);
  EXPECT_EQ(set->tokens, (std::vector<uint32_t>{5, 6, 263}));
  EXPECT_EQ(set->Experts(1, 1)[0], 3);
  EXPECT_EQ(set->request_names[0], "d@0");

  ASSERT_TRUE(WriteFile(JoinPath(dir, "topk_ids.u8"), std::string("\x00\x01\x02\x09\x01\x02", 6)).ok());
  EXPECT_NE(ImportArrayTrace(dir).status().message().find("expert 9 >= 4"), std::string::npos);
  ASSERT_TRUE(WriteFile(JoinPath(dir, "topk_ids.u8"), std::string("\x00\x01", 2)).ok());
  EXPECT_NE(ImportArrayTrace(dir).status().message().find("2 bytes, expected 3 tokens"),
            std::string::npos);
  ASSERT_TRUE(WriteFile(JoinPath(dir, "index.json"), "{\"num_layers\": 2}").ok());
  EXPECT_FALSE(ImportArrayTrace(dir).ok());
  EXPECT_EQ(ImportArrayTrace(Dir("empty")).status().code(), absl::StatusCode::kNotFound);
}

TEST(ArrayTraceTest, SharedReferenceTrace) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  auto set = ImportArrayTrace(JoinPath(shared, "models/qwen3-moe-a/reference/trace"));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->num_requests(), 2000);
  EXPECT_EQ(set->num_tokens(), 565903);
  EXPECT_EQ(set->num_layers(), 4);
}

}  // namespace
}  // namespace semmoe::planner::trace
