#include "common/json_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

using ::testing::HasSubstr;

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonNestingDepthTest, CountsArraysAndObjectsNotStrings) {
  EXPECT_EQ(JsonNestingDepth("1"), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": []}]})"), 4);
  EXPECT_EQ(JsonNestingDepth(R"({"a": "[[[[{{{{", "b": "\"[["})"), 1);
  EXPECT_EQ(JsonNestingDepth("]]]][[]"), 2);  // Stray closers do not go below zero.
  EXPECT_EQ(JsonNestingDepth(Nested(100000), 10), 11);  // Stops counting past the bound.
}

TEST(ParseJsonTest, RefusesInputNestedTooDeepInsteadOfCrashing) {
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth), "x").ok());
  for (int depth : {kMaxJsonDepth + 1, 100000, 1000000}) {
    auto parsed = ParseJson(Nested(depth), "prompts.jsonl:3");
    ASSERT_FALSE(parsed.ok()) << depth;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(),
                HasSubstr("prompts.jsonl:3: JSON nested deeper than 256 levels"));
    EXPECT_TRUE(ParseJsonOrDiscarded(Nested(depth)).is_discarded()) << depth;
    EXPECT_TRUE(ParseOrderedJsonOrDiscarded(Nested(depth)).is_discarded()) << depth;
  }
  const std::string objects = std::string(300000, '{');
  EXPECT_FALSE(ParseJson(objects, "x").ok());
  EXPECT_FALSE(ParseJsonOrDiscarded(R"({"a": )").is_object());
  EXPECT_EQ(ParseJsonOrDiscarded(R"({"a": [1]})")["a"][0], 1);
}

}  // namespace
}  // namespace semmoe
