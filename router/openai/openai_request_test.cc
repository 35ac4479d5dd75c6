#include "router/openai/openai_request.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router::openai {
namespace {

using ::testing::HasSubstr;

std::optional<ApiError> Parse(Endpoint e, const std::string& body, OpenAiRequest* out = nullptr) {
  OpenAiRequest ignored;
  return ParseRequest(e, body, "m", out != nullptr ? out : &ignored);
}

TEST(OpenAiRequestTest, CompletionFields) {
  OpenAiRequest r;
  ASSERT_EQ(Parse(Endpoint::kCompletions,
                  R"({"model": "m", "prompt": "Hi", "max_tokens": 8, "temperature": 0.5,
                      "top_p": 0.9, "top_k": 5, "seed": 7, "stop": ["\n", "END"],
                      "stream": true, "stream_options": {"include_usage": true},
                      "user": "u1", "n": 1, "logprobs": null, "echo": false})",
                  &r),
            std::nullopt);
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_EQ(r.max_tokens, 8);
  EXPECT_TRUE(r.max_tokens_set);
  EXPECT_DOUBLE_EQ(r.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.top_p, 0.9);
  EXPECT_EQ(r.top_k, 5);
  EXPECT_EQ(r.seed, 7u);
  EXPECT_THAT(r.stop, ::testing::ElementsAre("\n", "END"));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.user, "u1");
}

TEST(OpenAiRequestTest, CompletionDefaultsAndPromptForms) {
  OpenAiRequest r;
  ASSERT_EQ(Parse(Endpoint::kCompletions, R"({"prompt": ["one prompt"]})", &r), std::nullopt);
  EXPECT_EQ(r.prompt, "one prompt");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FALSE(r.max_tokens_set);
  EXPECT_DOUBLE_EQ(r.temperature, 1.0);
  EXPECT_FALSE(r.stream);
  OpenAiRequest ids;
  ASSERT_EQ(Parse(Endpoint::kCompletions, R"({"prompt": [1, 2, 151935]})", &ids), std::nullopt);
  EXPECT_THAT(ids.prompt_ids, ::testing::ElementsAre(1, 2, 151935));
  ASSERT_EQ(Parse(Endpoint::kCompletions, R"({"prompt": [[5, 6]], "stop": "x"})", &ids),
            std::nullopt);
}

TEST(OpenAiRequestTest, ChatMessagesAreNormalised) {
  OpenAiRequest r;
  ASSERT_EQ(Parse(Endpoint::kChatCompletions,
                  R"({"model": "m", "messages": [
                        {"role": "system", "content": "S"},
                        {"role": "user", "content": [{"type": "text", "text": "a"},
                                                     {"type": "text", "text": "b"}]},
                        {"role": "assistant", "content": null,
                         "tool_calls": [{"type": "function", "function": {"name": "f"}}]}],
                      "max_completion_tokens": 5,
                      "chat_template_kwargs": {"enable_thinking": false}})",
                  &r),
            std::nullopt);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(r.add_generation_prompt);
}

TEST(OpenAiRequestTest, UnsupportedFieldsAreRefusedByName) {
  struct Case {
    Endpoint e;
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {Endpoint::kCompletions, R"({"prompt": "x", "n": 2})", "n"},
      {Endpoint::kCompletions, R"({"prompt": "x", "logprobs": 1})", "logprobs"},
      {Endpoint::kCompletions, R"({"prompt": "x", "logprobs": 0})", "logprobs"},
      {Endpoint::kCompletions, R"({"prompt": "x", "echo": true})", "echo"},
      {Endpoint::kCompletions, R"({"prompt": "x", "best_of": 3})", "best_of"},
      {Endpoint::kCompletions, R"({"prompt": "x", "suffix": "y"})", "suffix"},
      {Endpoint::kCompletions, R"({"prompt": "x", "presence_penalty": 0.5})", "presence_penalty"},
      {Endpoint::kCompletions, R"({"prompt": "x", "frequency_penalty": 1})", "frequency_penalty"},
      {Endpoint::kCompletions, R"({"prompt": "x", "logit_bias": {"5": 1}})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt": ["a", "b"]})", "prompt"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "x"}],
                                       "logprobs": true})",
       "logprobs"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "x"}],
                                       "top_logprobs": 2})",
       "top_logprobs"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "x"}],
                                       "tools": [{"type": "function"}]})",
       "tools"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "x"}],
                                       "tool_choice": "auto"})",
       "tool_choice"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "x"}],
                                       "response_format": {"type": "json_object"}})",
       "response_format"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content":
          [{"type": "image_url", "image_url": {"url": "x"}}]}]})",
       "messages[0].content"},
  };
  for (const Case& c : cases) {
    std::optional<ApiError> e = Parse(c.e, c.body);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->http_status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    EXPECT_EQ(e->code, "unsupported_parameter") << c.body;
    EXPECT_THAT(e->message, HasSubstr("not supported")) << c.body;
  }
}

TEST(OpenAiRequestTest, BadValuesAreNamed) {
  struct Case {
    Endpoint e;
    const char* body;
    const char* says;
  };
  const Case cases[] = {
      {Endpoint::kCompletions, "not json", "the request body: invalid JSON: parse error"},
      {Endpoint::kCompletions, "[1]", "must be a JSON object"},
      {Endpoint::kCompletions, "{}", "'prompt' is required"},
      {Endpoint::kCompletions, R"({"prompt": ""})", "must not be empty"},
      {Endpoint::kCompletions, R"({"prompt": [-1]})", "non-negative integers"},
      {Endpoint::kCompletions, R"({"prompt": "x", "max_tokens": 0})",
       "'max_tokens' must be between 1"},
      {Endpoint::kCompletions, R"({"prompt": "x", "max_tokens": "8"})", "must be an integer"},
      {Endpoint::kCompletions, R"({"prompt": "x", "temperature": 3})",
       "'temperature' must be between 0 and 2"},
      {Endpoint::kCompletions, R"({"prompt": "x", "top_p": 0})", "'top_p' must be between"},
      {Endpoint::kCompletions, R"({"prompt": "x", "stop": [1]})", "non-empty string"},
      {Endpoint::kCompletions, R"({"prompt": "x", "stream": "yes"})", "'stream' must be a boolean"},
      {Endpoint::kCompletions, R"({"prompt": "x", "stream_options": {"include_usage": true}})",
       "needs 'stream': true"},
      {Endpoint::kCompletions, R"({"prompt": "x", "frobnicate": 1})",
       "unrecognized request argument 'frobnicate'"},
      {Endpoint::kCompletions, R"({"messages": []})", "use /v1/chat/completions"},
      {Endpoint::kChatCompletions, R"({"messages": []})", "non-empty array"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "wizard", "content": "x"}]})",
       "role must be one of"},
      {Endpoint::kChatCompletions, R"({"messages": [{"role": "user"}]})", "content is required"},
      {Endpoint::kChatCompletions,
       R"({"prompt": "x", "messages": [{"role": "user", "content": "x"}]})",
       "take 'messages', not 'prompt'"},
  };
  for (const Case& c : cases) {
    std::optional<ApiError> e = Parse(c.e, c.body);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->http_status, 400) << c.body;
    EXPECT_THAT(e->message, HasSubstr(c.says)) << c.body;
  }
  std::optional<ApiError> model =
      Parse(Endpoint::kCompletions, R"({"model": "gpt-4", "prompt": "x"})");
  ASSERT_TRUE(model.has_value());
  EXPECT_EQ(model->http_status, 404);
  EXPECT_EQ(model->code, "model_not_found");
  std::string deep =
      R"({"prompt": "x", "user": )" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_THAT(Parse(Endpoint::kCompletions, deep)->message,
              HasSubstr("the request body: JSON nested deeper than 64 levels"));
  // The router's crash: a body of ~200 KB whose first member nests 100,000 deep, unterminated.
  // Refused at the 65th bracket; the rest is never read into a document.
  std::string attack = R"({"prompt": )" + std::string(100000, '[') + std::string(100000, '{');
  std::optional<ApiError> e = Parse(Endpoint::kCompletions, attack);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 400);
  EXPECT_THAT(e->message, HasSubstr("nested deeper than 64"));
}

TEST(OpenAiRequestTest, ErrorJsonHasOpenAisShape) {
  ApiError e{.message = "bad", .param = "n", .code = "unsupported_parameter"};
  EXPECT_EQ(
      e.ToJson().dump(),
      R"({"error":{"message":"bad","type":"invalid_request_error","param":"n","code":"unsupported_parameter"}})");
  EXPECT_EQ(ApiError{.message = "x"}.ToJson()["error"]["param"], nullptr);
}

// Mutated real bodies: every one parses or gets a 4xx error; none crashes.
TEST(OpenAiRequestTest, MutatedBodiesNeverCrash) {
  const std::string seed =
      R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
          "max_tokens": 4, "stop": ["a"], "stream": true, "stream_options": {"include_usage": true},
          "chat_template_kwargs": {"enable_thinking": false}, "seed": 1, "temperature": 0.7})";
  std::mt19937 rng(3);
  const std::string alphabet = "{}[]\":,0123456789-.eEtrufalsn \\x";
  for (int i = 0; i < 20000; ++i) {
    std::string body = seed;
    const int edits = 1 + rng() % 6;
    for (int j = 0; j < edits; ++j) {
      const size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0:
          body[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          body.erase(at, 1 + rng() % 8);
          break;
        default:
          body.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
      if (body.empty()) body = "{";
    }
    for (Endpoint e : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
      std::optional<ApiError> err = Parse(e, body);
      if (err.has_value()) {
        EXPECT_GE(err->http_status, 400);
        EXPECT_LT(err->http_status, 500);
        EXPECT_FALSE(err->message.empty());
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::router::openai
