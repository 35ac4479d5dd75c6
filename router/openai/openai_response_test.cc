#include "router/openai/openai_response.h"

#include "gtest/gtest.h"

namespace semmoe::router::openai {
namespace {

const ResponseHeader kChat{
    .endpoint = Endpoint::kChatCompletions, .id = "chatcmpl-1", .created = 5, .model = "m"};
const ResponseHeader kText{
    .endpoint = Endpoint::kCompletions, .id = "cmpl-1", .created = 5, .model = "m"};

TEST(OpenAiResponseTest, FullResponses) {
  EXPECT_EQ(FullResponse(kChat, "Hi", "stop", {.prompt_tokens = 3, .completion_tokens = 2}).dump(),
            R"({"id":"chatcmpl-1","object":"chat.completion","created":5,"model":"m","choices":)"
            R"([{"index":0,"message":{"role":"assistant","content":"Hi"},"logprobs":null,)"
            R"("finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,)"
            R"("total_tokens":5}})");
  EXPECT_EQ(FullResponse(kText, "x", "length", {1, 1}).dump(),
            R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":)"
            R"([{"index":0,"text":"x","logprobs":null,"finish_reason":"length"}],"usage":)"
            R"({"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})");
}

TEST(OpenAiResponseTest, ChunksAndEvents) {
  EXPECT_EQ(Chunk(kChat, "", "", /*first=*/true, false)["choices"][0]["delta"].dump(),
            R"({"role":"assistant","content":""})");
  EXPECT_EQ(Chunk(kChat, "ab", "", false, false)["choices"][0]["delta"].dump(),
            R"({"content":"ab"})");
  const auto last = Chunk(kChat, "", "stop", false, true);
  EXPECT_EQ(last["choices"][0]["delta"].dump(), "{}");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last["usage"].is_null());
  EXPECT_EQ(Chunk(kText, "t", "", false, false)["object"], "text_completion");
  EXPECT_EQ(UsageChunk(kChat, {2, 3})["usage"]["total_tokens"], 5);
  EXPECT_TRUE(UsageChunk(kChat, {2, 3})["choices"].empty());
  EXPECT_EQ(SseEvent({{"a", 1}}), "data: {\"a\":1}\n\n");
  // Text that is not UTF-8 does not throw.
  EXPECT_NE(SseEvent({{"a", std::string("\xff")}}).find("data: "), std::string::npos);
  EXPECT_EQ(FinishReason("eos"), "stop");
  EXPECT_EQ(FinishReason("stop"), "stop");
  EXPECT_EQ(FinishReason("length"), "length");
  EXPECT_EQ(ResponseId(Endpoint::kChatCompletions, "ab"), "chatcmpl-ab");
}

}  // namespace
}  // namespace semmoe::router::openai
