#include "planner/trace/trace_set.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::planner::trace {
namespace {

TEST(TraceSetTest, GroupsInterleavedRequests) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/set.trace";
  TraceHeader h;
  h.num_experts = 8;
  h.top_k = 2;
  h.moe_layers = {0, 1};
  auto w = TraceWriter::Create(path, h);
  ASSERT_TRUE(w.ok());
  const uint64_t a = *(*w)->AddRequest("a"), b = *(*w)->AddRequest("b");
  std::vector<float> weights(4, 0.5f);
  ASSERT_TRUE((*w)->AddToken(a, 0, 10, {1, 2, 3, 4}, weights).ok());
  ASSERT_TRUE((*w)->AddToken(b, 0, 20, {5, 6, 7, 0}, weights).ok());
  ASSERT_TRUE((*w)->AddToken(a, 1, 11, {0, 1, 2, 3}, weights).ok());
  ASSERT_TRUE((*w)->Close().ok());
  auto set = LoadTraceSet(path);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->num_requests(), 2);
  EXPECT_EQ(set->request_names[0], "a");
  EXPECT_EQ(set->request_begin, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(set->tokens, (std::vector<uint32_t>{10, 11, 20}));
  EXPECT_EQ(set->Experts(1, 1)[1], 3);
  EXPECT_EQ(set->Experts(2, 0)[0], 5);
}

TEST(TraceSetTest, AddRequestChecksShapesAndIds) {
  TraceSet set;
  set.header.num_experts = 4;
  set.header.top_k = 1;
  set.header.moe_layers = {0};
  EXPECT_FALSE(set.AddRequest("x", {1, 2}, {0}).ok());
  EXPECT_FALSE(set.AddRequest("x", {1}, {4}).ok());
  EXPECT_TRUE(set.AddRequest("x", {1}, {3}).ok());
  EXPECT_EQ(LoadTraceSet("/nonexistent.trace").status().code(), absl::StatusCode::kNotFound);
}

TEST(TraceSetTest, CopyRequestTakesOneRequestOfAnotherTrace) {
  TraceSet a;
  a.header.num_experts = 4;
  a.header.top_k = 1;
  a.header.moe_layers = {0, 1};
  ASSERT_TRUE(a.AddRequest("x", {5}, {0, 1}).ok());
  ASSERT_TRUE(a.AddRequest("y", {6, 7}, {2, 3, 1, 0}).ok());
  TraceSet b;
  b.header = a.header;
  ASSERT_TRUE(b.CopyRequest(a, 1).ok());
  EXPECT_EQ(b.request_names, std::vector<std::string>{"y"});
  EXPECT_EQ(b.tokens, (std::vector<uint32_t>{6, 7}));
  EXPECT_EQ(b.experts, (std::vector<uint16_t>{2, 3, 1, 0}));
  TraceSet other;  // One layer: the copied request does not fit.
  other.header = a.header;
  other.header.moe_layers = {0};
  EXPECT_FALSE(other.CopyRequest(a, 0).ok());
}

}  // namespace
}  // namespace semmoe::planner::trace
