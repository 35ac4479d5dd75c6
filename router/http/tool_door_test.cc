// Tool calling through the HTTP door: the conversation rendered with the model's template, the
// call forced or not, the model's text parsed into tool_calls — streamed and whole — against a
// scripted model (testing/scripted_router.h) so that what the model writes is known.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/text/chat_template.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/http/http_frontend.h"
#include "router/http/testing/scripted_router.h"
#include <httplib.h>  // NOLINT(build/include_order)

namespace semmoe::router::http {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using openai::ToolCallFormat;

// Minimal templates in the shape of the real ones (the real Qwen3 one runs too when the npm data
// is there): hermes lists the tools and renders calls and results; DeepSeek-like renders calls
// only with content null and never lists tools; ChatML knows nothing of tools.
const char kHermes[] =
    "{% if tools %}<|im_start|>system\n<tools>{% for t in tools %}\n{{ t | tojson }}{% endfor %}"
    "\n</tools><|im_end|>\n{% endif %}{% for m in messages %}{% if m.role == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}{% for c in m.tool_calls or [] %}"
    "<tool_call>\n{\"name\": \"{{ c.function.name }}\", \"arguments\": "
    "{{ c.function.arguments }}}\n</tool_call>{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
const char kDeepseekLike[] =
    "{% for m in messages %}{% if m.role == 'user' %}<｜User｜>{{ m.content }}"
    "{% elif m.role == 'assistant' and m.content is none %}<｜Assistant｜>"
    "{% for c in m.tool_calls %}{{ c.function.name }}{% endfor %}"
    "{% elif m.role == 'assistant' %}<｜Assistant｜>{{ m.content }}"
    "{% elif m.role == 'tool' %}<｜tool▁output▁begin｜>{{ m.content }}<｜tool▁output▁end｜>"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<｜Assistant｜>{% endif %}";
const char kChatMl[] =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

const char kWeatherTool[] = R"({"type": "function", "function": {"name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}})";

class ToolDoor {
 public:
  ToolDoor(const engine::model::ChatTemplate& chat, std::optional<ToolCallFormat> format,
           testing::ScriptedRouter::Script script)
      : router_(std::move(script)) {
    auto f = HttpFrontend::Start({.served_model = "m",
                                  .chat_template = &chat,
                                  .tool_call_format = format,
                                  .router = &router_});
    EXPECT_TRUE(f.ok()) << f.status();
    frontend_ = std::move(*f);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", frontend_->port());
    client_->set_read_timeout(30, 0);
  }

  // The whole response (status, body).
  std::pair<int, Json> Post(Json body) {
    auto res = client_->Post("/v1/chat/completions", body.dump(), "application/json");
    if (!res) return {0, Json()};
    return {res->status, Json::parse(res->body, nullptr, false)};
  }
  // The streamed chunks (the [DONE] marker checked, not returned).
  std::vector<Json> Stream(Json body) {
    body["stream"] = true;
    auto res = client_->Post("/v1/chat/completions", body.dump(), "application/json");
    std::vector<Json> chunks;
    if (!res || res->status != 200) {
      ADD_FAILURE() << (res ? res->body : "no response");
      return chunks;
    }
    EXPECT_TRUE(absl::EndsWith(res->body, "data: [DONE]\n\n"));
    for (absl::string_view block : absl::StrSplit(res->body, "\n\n", absl::SkipEmpty())) {
      if (block == "data: [DONE]") continue;
      chunks.push_back(Json::parse(block.substr(6)));
    }
    return chunks;
  }
  std::vector<std::string> prompts() const { return router_.prompts(); }

 private:
  testing::ScriptedRouter router_;
  std::unique_ptr<HttpFrontend> frontend_;
  std::unique_ptr<httplib::Client> client_;
};

engine::model::ChatTemplate Template(const char* source) {
  auto t = engine::model::ChatTemplate::FromConfig({{"chat_template", source}}, "test");
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

Json Request(const std::string& more = "{}") {
  Json r = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris and Tokyo?"}}}},
            {"tools", Json::array({Json::parse(kWeatherTool)})}};
  r.update(Json::parse(more));
  return r;
}

// A stream's content and calls put together as OpenAI's clients do: by each call's index, the
// id, type and name from its first delta, the arguments from every delta.
struct Assembled {
  std::string content;
  Json calls = Json::array();
  std::string finish_reason;
};
Assembled Assemble(const std::vector<Json>& chunks) {
  Assembled a;
  for (const Json& c : chunks) {
    const Json& choice = c["choices"][0];
    if (!choice["finish_reason"].is_null()) a.finish_reason = choice["finish_reason"];
    const Json& delta = choice["delta"];
    if (delta.contains("content") && delta["content"].is_string()) a.content += delta["content"];
    for (const Json& t : delta.value("tool_calls", Json::array())) {
      const size_t i = t["index"];
      if (i == a.calls.size()) {
        EXPECT_TRUE(t.contains("id") && t.contains("type") && t["function"].contains("name"))
            << "a call's first delta names it: " << t;
        a.calls.push_back({{"id", t["id"]},
                           {"type", t["type"]},
                           {"function", {{"name", t["function"]["name"]}, {"arguments", ""}}}});
      } else {
        EXPECT_FALSE(t.contains("id") || t["function"].contains("name"))
            << "id and name come once: " << t;
      }
      if (i >= a.calls.size()) {
        ADD_FAILURE() << "a call's index past the calls so far: " << t;
        continue;
      }
      a.calls[i]["function"]["arguments"] =
          a.calls[i]["function"]["arguments"].get<std::string>() +
          t["function"].value("arguments", "");
    }
  }
  return a;
}

void ExpectParisAndTokyo(const Json& calls) {
  ASSERT_EQ(calls.size(), 2u) << calls;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(calls[i]["type"], "function");
    EXPECT_EQ(calls[i]["function"]["name"], "get_weather");
    EXPECT_TRUE(absl::StartsWith(calls[i]["id"].get<std::string>(), "call_")) << calls[i];
  }
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
  EXPECT_EQ(Json::parse(calls[0]["function"]["arguments"].get<std::string>()),
            Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(Json::parse(calls[1]["function"]["arguments"].get<std::string>()),
            Json::parse(R"({"city": "Tokyo"})"));
}

// A whole conversation in each format: the tools reach the prompt, the calls come back (whole
// and streamed alike), and the results sent back reach the model.
void RoundTrip(const engine::model::ChatTemplate& chat, ToolCallFormat format) {
  ToolDoor door(chat, format, [format](const std::string& p) {
    return testing::WeatherAgent(format, p);
  });
  auto [status, whole] = door.Post(Request());
  ASSERT_EQ(status, 200) << whole;
  ASSERT_THAT(door.prompts().back(), HasSubstr("get_weather"));  // The model saw the tool.
  const Json& message = whole["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null()) << message;
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  ExpectParisAndTokyo(message["tool_calls"]);

  Assembled streamed = Assemble(door.Stream(Request()));
  EXPECT_EQ(streamed.content, "");
  EXPECT_EQ(streamed.finish_reason, "tool_calls");
  ExpectParisAndTokyo(streamed.calls);

  // The client runs the functions and sends the results back: the model sees them.
  Json next = Request();
  next["messages"].push_back({{"role", "assistant"},
                              {"content", nullptr},
                              {"tool_calls", message["tool_calls"]}});
  for (int i = 0; i < 2; ++i) {
    next["messages"].push_back({{"role", "tool"},
                                {"tool_call_id", message["tool_calls"][i]["id"]},
                                {"content", i == 0 ? "18 C" : "25 C"}});
  }
  auto [status2, answer] = door.Post(next);
  ASSERT_EQ(status2, 200) << answer;
  EXPECT_EQ(answer["choices"][0]["message"]["content"], "Results: 18 C; 25 C");
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(answer["choices"][0]["message"].contains("tool_calls"));
}

TEST(ToolDoorTest, HermesRoundTrip) { RoundTrip(Template(kHermes), ToolCallFormat::kHermes); }

TEST(ToolDoorTest, RealQwen3TemplateRoundTrip) {
  const std::string tokenizer = semmoe::testing::EnvPath("SEMMOE_QWEN3_TOKENIZER");
  if (tokenizer.empty()) GTEST_SKIP() << "SEMMOE_QWEN3_TOKENIZER unset (./semmoe test sets it)";
  auto chat = engine::model::ChatTemplate::Load(tokenizer.substr(0, tokenizer.rfind('/')));
  ASSERT_TRUE(chat.ok()) << chat.status();
  RoundTrip(*chat, ToolCallFormat::kHermes);
}

// The test models' template (make_tiny_model; the demo's model) takes tool conversations as Qwen's.
TEST(ToolDoorTest, TinyModelTemplateRoundTrip) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_tools");
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel({}, dir).ok());
  auto chat = engine::model::ChatTemplate::Load(dir);
  ASSERT_TRUE(chat.ok()) << chat.status();
  RoundTrip(*chat, ToolCallFormat::kHermes);
}

// DeepSeek-V3 with the template the router ships for it (router/templates/deepseek_v3_tools.jinja:
// the checkpoints' own never lists tools), in DeepSeek's call format.
TEST(ToolDoorTest, DeepseekV3ToolsTemplateRoundTrip) {
  absl::StatusOr<std::string> source = ReadFile("router/templates/deepseek_v3_tools.jinja");
  ASSERT_TRUE(source.ok()) << source.status();
  auto chat = engine::model::ChatTemplate::FromConfig(
      {{"chat_template", *source},
       {"bos_token", "<｜begin▁of▁sentence｜>"},
       {"eos_token", "<｜end▁of▁sentence｜>"}},
      "deepseek_v3_tools.jinja");
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_TRUE(chat->tool_support().tools_list);
  EXPECT_FALSE(chat->tool_support().calls_want_null_content);  // It renders calls either way.
  RoundTrip(*chat, ToolCallFormat::kDeepseekV3);
}

TEST(ToolDoorTest, ForcedCallsOpenTheCallInThePrompt) {
  const engine::model::ChatTemplate chat = Template(kHermes);
  ToolDoor door(chat, ToolCallFormat::kHermes, [](const std::string& p) {
    return testing::WeatherAgent(ToolCallFormat::kHermes, p);
  });
  const char* choices[] = {
      R"({"tool_choice": "required"})",
      R"({"tool_choice": {"type": "function", "function": {"name": "get_weather"}}})"};
  const char* openings[] = {"<tool_call>\n",
                            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "};
  for (int i = 0; i < 2; ++i) {
    auto [status, whole] = door.Post(Request(choices[i]));
    ASSERT_EQ(status, 200) << whole;
    EXPECT_TRUE(absl::EndsWith(door.prompts().back(), std::string("<|im_start|>assistant\n") +
                                                          openings[i]))
        << door.prompts().back();
    ExpectParisAndTokyo(whole["choices"][0]["message"]["tool_calls"]);
    ExpectParisAndTokyo(Assemble(door.Stream(Request(choices[i]))).calls);
  }
}

TEST(ToolDoorTest, ChoiceNoneAndOneCallAtATime) {
  const engine::model::ChatTemplate chat = Template(kHermes);
  ToolDoor door(chat, ToolCallFormat::kHermes, [](const std::string& p) {
    return testing::WeatherAgent(ToolCallFormat::kHermes, p);
  });
  // "none": the tools are shown, nothing is parsed — the text is content.
  auto [status, whole] = door.Post(Request(R"({"tool_choice": "none"})"));
  ASSERT_EQ(status, 200) << whole;
  EXPECT_THAT(door.prompts().back(), HasSubstr("get_weather"));
  EXPECT_THAT(whole["choices"][0]["message"]["content"].get<std::string>(),
              HasSubstr("<tool_call>"));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  // parallel_tool_calls: false — the first call only, whole and streamed.
  auto [status1, one] = door.Post(Request(R"({"parallel_tool_calls": false})"));
  ASSERT_EQ(status1, 200) << one;
  ASSERT_EQ(one["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(Assemble(door.Stream(Request(R"({"parallel_tool_calls": false})"))).calls.size(), 1u);
}

TEST(ToolDoorTest, MalformedCallsAreContentNeverAnError) {
  const engine::model::ChatTemplate chat = Template(kHermes);
  const std::string bad = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {oops\n"
                          "</tool_call>";
  for (const std::string& text : {bad, std::string("<tool_call>\n{\"name\": \"get_we")}) {
    ToolDoor door(chat, ToolCallFormat::kHermes, [&](const std::string&) { return text; });
    auto [status, whole] = door.Post(Request());
    ASSERT_EQ(status, 200) << whole;
    EXPECT_EQ(whole["choices"][0]["message"]["content"], text);
    EXPECT_FALSE(whole["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
    Assembled streamed = Assemble(door.Stream(Request()));
    EXPECT_EQ(streamed.content, text);
    EXPECT_TRUE(streamed.calls.empty());
  }
}

// A template that renders calls only with content null gets null, whatever the client sent.
TEST(ToolDoorTest, AssistantCallsReachTheTemplateItsWay) {
  const engine::model::ChatTemplate chat = Template(kDeepseekLike);
  ASSERT_TRUE(chat.tool_support().calls_want_null_content);
  ToolDoor door(chat, ToolCallFormat::kDeepseekV3, [](const std::string& p) {
    return testing::WeatherAgent(ToolCallFormat::kDeepseekV3, p);
  });
  Json r = {{"messages",
             {{{"role", "user"}, {"content", "Weather?"}},
              {{"role", "assistant"},
               {"content", ""},
               {"tool_calls",
                {{{"id", "call_1"},
                  {"type", "function"},
                  {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}}}}},
              {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C"}}}}};
  auto [status, answer] = door.Post(r);
  ASSERT_EQ(status, 200) << answer;
  EXPECT_THAT(door.prompts().back(), HasSubstr("<｜Assistant｜>get_weather"));
  EXPECT_EQ(answer["choices"][0]["message"]["content"], "Results: 18 C");
  // It never lists tools: a request with tools is refused, naming why.
  auto [refused, error] = door.Post(Request());
  EXPECT_EQ(refused, 400);
  EXPECT_EQ(error["error"]["param"], "tools");
  EXPECT_EQ(error["error"]["code"], "tools_unsupported");
  EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr("--chat_template"));
}

TEST(ToolDoorTest, RefusedWhereTheTemplateOrServerCannot) {
  const engine::model::ChatTemplate chatml = Template(kChatMl);
  ToolDoor door(chatml, ToolCallFormat::kHermes, [](const std::string&) { return "Hi"; });
  auto [status, error] = door.Post(Request());
  EXPECT_EQ(status, 400);
  EXPECT_EQ(error["error"]["param"], "tools");
  // Tools the model may not call need not reach it.
  EXPECT_EQ(door.Post(Request(R"({"tool_choice": "none"})")).first, 200);
  Json calls = {{"messages",
                 {{{"role", "user"}, {"content", "x"}},
                  {{"role", "assistant"},
                   {"content", nullptr},
                   {"tool_calls",
                    {{{"id", "c"},
                      {"type", "function"},
                      {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}}}}};
  auto [status2, error2] = door.Post(calls);
  EXPECT_EQ(status2, 400);
  EXPECT_EQ(error2["error"]["param"], "messages[1].tool_calls");
  // A template that lists tools, but no format to parse the model's calls in.
  const engine::model::ChatTemplate hermes = Template(kHermes);
  ToolDoor unparsed(hermes, std::nullopt, [](const std::string&) { return "Hi"; });
  auto [status3, error3] = unparsed.Post(Request());
  EXPECT_EQ(status3, 400);
  EXPECT_THAT(error3["error"]["message"].get<std::string>(), HasSubstr("--tool_call_parser"));
}

}  // namespace
}  // namespace semmoe::router::http
