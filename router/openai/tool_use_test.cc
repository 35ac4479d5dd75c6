#include "router/openai/tool_use.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router::openai {
namespace {

struct Whole {
  std::string content;
  std::vector<ResponseToolCall> calls;
};

// The generated text fed in pieces of `piece` bytes (0: whole), then Finish.
Whole Generate(ToolCallStream stream, const std::string& text, size_t piece = 0) {
  Whole w;
  auto take = [&](ToolCallStream::Out out) {
    w.content += out.content;
    for (auto& c : out.calls) w.calls.push_back(std::move(c));
  };
  if (piece == 0) piece = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += piece) take(stream.Feed(text.substr(i, piece)));
  take(stream.Finish());
  return w;
}

TEST(ToolUseTest, FormatNames) {
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kDeepseekV3, ToolCallFormat::kMistral}) {
    EXPECT_EQ(*ToolCallFormatFromName(ToolCallFormatName(f)), f);
  }
  absl::StatusOr<ToolCallFormat> bad = ToolCallFormatFromName("pythonic");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("'pythonic'"));
}

TEST(ToolUseTest, ContentAndParallelCallsStreamedOrWhole) {
  const std::string text =
      "Let me check both.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Tokyo\"}}\n</tool_call>\n";
  for (size_t piece : {0, 1, 2, 3, 5, 7, 11, 64}) {
    SCOPED_TRACE(piece);
    Whole w = Generate(ToolCallStream(ToolCallFormat::kHermes, "", true, "R"), text, piece);
    EXPECT_EQ(w.content, "Let me check both.");
    ASSERT_EQ(w.calls.size(), 2u);
    EXPECT_EQ(w.calls[0].index, 0);
    EXPECT_EQ(w.calls[0].id, "call_R_0");
    EXPECT_EQ(w.calls[0].name, "get_weather");
    EXPECT_EQ(w.calls[0].arguments, R"({"city":"Paris"})");
    EXPECT_EQ(w.calls[1].index, 1);
    EXPECT_EQ(w.calls[1].id, "call_R_1");
    EXPECT_EQ(w.calls[1].arguments, R"({"city":"Tokyo"})");
    // parallel_tool_calls: false keeps the first.
    Whole one = Generate(ToolCallStream(ToolCallFormat::kHermes, "", false, "R"), text, piece);
    ASSERT_EQ(one.calls.size(), 1u);
    EXPECT_EQ(one.calls[0].arguments, R"({"city":"Paris"})");
  }
}

TEST(ToolUseTest, ContentAfterACallKeepsItsOwnLines) {
  const std::string text =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n\nDone.\n\nReally.\n";
  for (size_t piece : {0, 1, 4}) {
    Whole w = Generate(ToolCallStream(ToolCallFormat::kHermes, "", true, "R"), text, piece);
    EXPECT_EQ(w.content, "Done.\n\nReally.");
    ASSERT_EQ(w.calls.size(), 1u);
    EXPECT_EQ(w.calls[0].arguments, "{}");
  }
}

TEST(ToolUseTest, TextWithoutCallsIsUnchanged) {
  const std::string text = "No tools needed.\n\n  \n";
  for (size_t piece : {0, 1, 3}) {
    Whole w = Generate(ToolCallStream(ToolCallFormat::kHermes, "", true, "R"), text, piece);
    EXPECT_EQ(w.content, text);
    EXPECT_TRUE(w.calls.empty());
  }
}

// The forced opening and what a model would write after it make one call, in every format.
TEST(ToolUseTest, ForcedOpeningsCompleteToACall) {
  struct Case {
    ToolCallFormat format;
    ToolChoice choice;
    std::string continuation;
  };
  const Case cases[] = {
      {ToolCallFormat::kHermes, ToolChoice::kRequired,
       "{\"name\": \"lookup\", \"arguments\": {\"q\": 1}}\n</tool_call>"},
      {ToolCallFormat::kHermes, ToolChoice::kNamed, "{\"q\": 1}}\n</tool_call>"},
      {ToolCallFormat::kDeepseekV3, ToolChoice::kRequired,
       "lookup\n```json\n{\"q\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {ToolCallFormat::kDeepseekV3, ToolChoice::kNamed,
       "{\"q\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {ToolCallFormat::kMistral, ToolChoice::kRequired,
       "{\"name\": \"lookup\", \"arguments\": {\"q\": 1}}]"},
      {ToolCallFormat::kMistral, ToolChoice::kNamed, "{\"q\": 1}}]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.continuation);
    const std::string opening = ForcedOpening(c.format, c.choice, "lookup");
    ASSERT_FALSE(opening.empty());
    for (size_t piece : {0, 1, 4}) {
      Whole w = Generate(ToolCallStream(c.format, opening, true, "X"), c.continuation, piece);
      EXPECT_EQ(w.content, "");
      ASSERT_EQ(w.calls.size(), 1u);
      EXPECT_EQ(w.calls[0].name, "lookup");
      EXPECT_EQ(w.calls[0].arguments, R"({"q":1})");
    }
  }
  EXPECT_EQ(ForcedOpening(ToolCallFormat::kHermes, ToolChoice::kAuto, "lookup"), "");
  EXPECT_EQ(ForcedOpening(ToolCallFormat::kHermes, ToolChoice::kNone, "lookup"), "");
}

// A forced call the model does not finish properly is content, the opening included: what the
// model saw itself say.
TEST(ToolUseTest, MalformedForcedCallIsContent) {
  const std::string opening = ForcedOpening(ToolCallFormat::kHermes, ToolChoice::kNamed, "f");
  for (const std::string& text : {std::string("oops, not JSON}\n</tool_call>"),
                                  std::string("{\"cut\": off before the end")}) {
    for (size_t piece : {0, 2}) {
      Whole w = Generate(ToolCallStream(ToolCallFormat::kHermes, opening, true, "X"), text, piece);
      EXPECT_EQ(w.content, opening + text);
      EXPECT_TRUE(w.calls.empty());
    }
  }
}

}  // namespace
}  // namespace semmoe::router::openai
