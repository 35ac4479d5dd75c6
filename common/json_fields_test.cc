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
  EXPECT_EQ(JsonNestingDepth("]]]][[]"), 2);            // Stray closers do not go below zero.
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

// The attack the router met: a body whose first member is a deeply nested value (about 200 KB).
// The parse stops at the first bracket past the limit, whatever follows, and says why.
TEST(ParseJsonTest, StopsAtTheFirstBracketPastTheLimit) {
  const std::string body = R"({"messages": )" + std::string(200000, '[') + "1" +
                           std::string(200000, ']') + R"(, "model": "m"})";
  absl::StatusOr<nlohmann::ordered_json> parsed = ParseOrderedJson(body, "request", 64);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("request: JSON nested deeper than 64 levels"));
  // Unterminated: the same answer, not a parse error (the limit is met first).
  EXPECT_THAT(ParseJson(R"({"a": )" + std::string(1000, '['), "x", 64).status().message(),
              HasSubstr("nested deeper than 64"));
  // Within the limit the document comes back whole, in order for ordered_json.
  absl::StatusOr<nlohmann::ordered_json> ok =
      ParseOrderedJson(R"({"z": [[1]], "a": {"b": null}})", "x", 3);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->dump(), R"({"z":[[1]],"a":{"b":null}})");
  EXPECT_FALSE(ParseJson(R"({"z": [[[1]]]})", "x", 3).ok());
}

TEST(ParseJsonTest, InvalidJsonSaysWhere) {
  absl::StatusOr<nlohmann::json> parsed = ParseJson(R"({"a": tru})", "body");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("body: invalid JSON: parse error at line 1"));
  EXPECT_FALSE(ParseJson("", "body").ok());
  // The message quotes the input: never with bytes that would break the JSON it is sent in.
  const std::string message(ParseJson("{\"a\": \xac\xff}", "body").status().message());
  EXPECT_THAT(message, HasSubstr("invalid JSON"));
  for (unsigned char c : message) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << message;
  EXPECT_FALSE(ParseJson("[1] [2]", "body").ok());  // Trailing input.
}

}  // namespace
}  // namespace semmoe

namespace semmoe {
namespace {

// ordered_json searches an object's keys for each key it adds: an object of 3 million keys (a
// 32 MB request body) would parse for hours. Refused at once past the bound; the unordered
// parse (a map) takes it.
TEST(ParseJsonTest, OrderedObjectsTooWideAreRefused) {
  auto object = [](int64_t n) {
    std::string s = "{";
    for (int64_t i = 0; i < n; ++i) s += (i > 0 ? ",\"" : "\"") + std::to_string(i) + "\":1";
    return s + "}";
  };
  EXPECT_TRUE(ParseOrderedJson(object(kMaxOrderedObjectKeys / 2), "body").ok());
  absl::StatusOr<nlohmann::ordered_json> wide = ParseOrderedJson(object(200000), "body");
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(std::string(wide.status().message()),
              ::testing::HasSubstr("body: JSON objects with too many keys"));
  EXPECT_TRUE(ParseJson(object(200000), "body").ok());
  // Many objects of moderate width add up to the same bound.
  std::string many = "[";
  for (int i = 0; i < 200; ++i) many += (i > 0 ? "," : "") + object(4000);
  EXPECT_FALSE(ParseOrderedJson(many + "]", "body").ok());
}

}  // namespace
}  // namespace semmoe
