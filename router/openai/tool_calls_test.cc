#include "router/openai/tool_calls.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router::openai {
namespace {

// Outputs in each model's documented format (the chat templates' own rendering of an assistant
// turn with tool calls).
const char kQwen3[] =
    "I'll check both cities.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": "
    "\"get_weather\", \"arguments\": {\"city\": \"東京\"}}\n</tool_call>";
const char kDeepseekV3[] =
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
    "{\"location\": \"Tokyo\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>"
    "get_time\n```json\n{\"zone\": \"JST\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
const char kMistral[] =
    "[TOOL_CALLS] [{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, {\"name\": "
    "\"echo\", \"arguments\": {\"text\": \"]} [TOOL_CALLS] \\\"quoted\\\"\"}}]";

std::vector<ToolCall> Calls(const ToolCallPiece& p) {
  std::vector<ToolCall> out;
  for (const auto& c : p.calls) out.push_back(c.call);
  return out;
}

MATCHER_P2(IsCall, name, arguments, "") { return arg.name == name && arg.arguments == arguments; }

TEST(ToolCallsTest, Qwen3HermesCalls) {
  const ToolCallPiece p = ParseToolCalls(ToolCallFormat::kHermes, kQwen3);
  EXPECT_EQ(p.content, "I'll check both cities.\n\n");
  EXPECT_THAT(Calls(p),
              ::testing::ElementsAre(
                  IsCall("get_weather", R"({"city":"Paris","unit":"celsius"})"),
                  IsCall("get_weather", R"({"city":"東京"})")));
  EXPECT_EQ(p.calls[1].index, 1);
}

TEST(ToolCallsTest, DeepseekV3Calls) {
  const ToolCallPiece p = ParseToolCalls(ToolCallFormat::kDeepseekV3, kDeepseekV3);
  EXPECT_EQ(p.content, "\n");
  EXPECT_THAT(Calls(p), ::testing::ElementsAre(IsCall("get_weather", R"({"location":"Tokyo"})"),
                                               IsCall("get_time", R"({"zone":"JST"})")));
}

TEST(ToolCallsTest, MistralCalls) {
  const ToolCallPiece p = ParseToolCalls(ToolCallFormat::kMistral, kMistral);
  EXPECT_EQ(p.content, "");
  EXPECT_THAT(Calls(p),
              ::testing::ElementsAre(IsCall("add", R"({"a":1,"b":2})"),
                                     IsCall("echo", R"({"text":"]} [TOOL_CALLS] \"quoted\""})")));
}

// Streamed in pieces of every size: the content and the calls come out the same as at once, and
// no content delta holds a marker.
TEST(ToolCallsTest, StreamedInAnyPiecesGivesTheSameResult) {
  const std::vector<std::pair<ToolCallFormat, std::string>> cases = {
      {ToolCallFormat::kHermes, kQwen3},
      {ToolCallFormat::kDeepseekV3, kDeepseekV3},
      {ToolCallFormat::kMistral, std::string("Sure. ") + kMistral}};
  for (const auto& [format, text] : cases) {
    const ToolCallPiece whole = ParseToolCalls(format, text);
    for (size_t piece = 1; piece <= text.size(); ++piece) {
      ToolCallParser parser(format);
      std::string content;
      std::vector<ToolCall> calls;
      auto take = [&](const ToolCallPiece& p) {
        EXPECT_THAT(p.content, ::testing::Not(::testing::HasSubstr("tool_call")));
        EXPECT_THAT(p.content, ::testing::Not(::testing::HasSubstr("TOOL_CALLS")));
        content += p.content;
        for (const auto& c : p.calls) {
          EXPECT_EQ(c.index, static_cast<int>(calls.size()));
          calls.push_back(c.call);
        }
      };
      for (size_t at = 0; at < text.size(); at += piece) take(parser.Feed(text.substr(at, piece)));
      take(parser.Finish());
      ASSERT_EQ(content, whole.content) << "pieces of " << piece;
      ASSERT_EQ(calls.size(), whole.calls.size()) << "pieces of " << piece;
      for (size_t i = 0; i < calls.size(); ++i) {
        EXPECT_EQ(calls[i].name, whole.calls[i].call.name);
        EXPECT_EQ(calls[i].arguments, whole.calls[i].call.arguments);
      }
    }
  }
}

TEST(ToolCallsTest, ContentStreamsAtOnceButAMarkersStartIsHeld) {
  ToolCallParser parser(ToolCallFormat::kHermes);
  EXPECT_EQ(parser.Feed("Hello <to").content, "Hello ");
  EXPECT_EQ(parser.Feed("y> box").content, "<toy> box");  // Not a marker after all.
  EXPECT_EQ(parser.Feed(" <tool_call>{\"name\"").content, " ");
  EXPECT_EQ(parser.Finish().content, "<tool_call>{\"name\"");  // Cut off: said as content.
  EXPECT_TRUE(parser.calls().empty());
}

TEST(ToolCallsTest, MalformedCallsComeBackAsContent) {
  struct Case {
    ToolCallFormat format;
    std::string text;
  };
  const std::vector<Case> cases = {
      {ToolCallFormat::kHermes, "<tool_call>{not json}</tool_call>"},
      {ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>"},  // No name.
      {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>"},
      {ToolCallFormat::kHermes, "text <tool_call>{\"name\": \"f\"}"},  // Never closed.
      {ToolCallFormat::kDeepseekV3,
       "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{oops\n```<｜tool▁call▁end｜>"},
      {ToolCallFormat::kDeepseekV3, "<｜tool▁call▁begin｜>nonsense<｜tool▁call▁end｜>"},
      {ToolCallFormat::kMistral, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}"},
      {ToolCallFormat::kMistral, "[TOOL_CALLS] [\"f\"]"},
      {ToolCallFormat::kMistral, "[TOOL_CALLS] no array"},
  };
  for (const Case& c : cases) {
    const ToolCallPiece p = ParseToolCalls(c.format, c.text);
    EXPECT_TRUE(p.calls.empty()) << c.text;
    EXPECT_EQ(p.content, c.text);
  }
  // A bad call beside a good one: the good one is a call, the bad one content.
  const ToolCallPiece p = ParseToolCalls(
      ToolCallFormat::kHermes,
      "<tool_call>{bad}</tool_call><tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}"
      "</tool_call>");
  EXPECT_EQ(p.content, "<tool_call>{bad}</tool_call>");
  EXPECT_THAT(Calls(p), ::testing::ElementsAre(IsCall("f", R"({"x":1})")));
}

TEST(ToolCallsTest, TextWithoutCallsIsUntouched) {
  const std::string text = "No tools here: a < b, [x] and ｜ are fine.\n";
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kDeepseekV3, ToolCallFormat::kMistral}) {
    const ToolCallPiece p = ParseToolCalls(f, text);
    EXPECT_EQ(p.content, text);
    EXPECT_TRUE(p.calls.empty());
  }
}

}  // namespace
}  // namespace semmoe::router::openai
