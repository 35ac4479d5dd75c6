// The chat templates the router ships render in linear work: 100,000 tools (or system
// messages) cost about twice what 50,000 do, and a small multiple of the text they write. The
// DeepSeek template grows its system prompt with `ns.system = ns.system + ...` once per tool;
// before strings grew in place (engine/text/jinja/value.h) 10,000 tools took 15 s and 100,000
// never finished. Work is counted, not timed (jinja::ThreadWork: bytes built or copied, items
// scanned); the time is printed, and docs/PERFORMANCE.md has it from an optimised build.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "engine/text/chat_template.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router/templates/large_requests.h"

namespace semmoe {
namespace {

using Json = nlohmann::ordered_json;

engine::model::ChatTemplate Shipped(const std::string& file) {
  absl::StatusOr<std::string> source = ReadFile(file);
  EXPECT_TRUE(source.ok()) << source.status();
  // A minute per render: this test bounds the work; the time bound is the router's flag.
  auto t =
      engine::model::ChatTemplate::FromConfig({{"chat_template", *source}, {"bos_token", "<bos>"}},
                                              file, {.render_timeout = absl::Seconds(60)});
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

struct Rendered {
  int64_t work = 0;
  size_t bytes = 0;
  double ms = 0;
};

Rendered Render(const engine::model::ChatTemplate& t, const Json& messages, const Json& extra) {
  const int64_t work = engine::jinja::ThreadWork();
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> out = t.Apply(messages, true, extra);
  Rendered r{.work = engine::jinja::ThreadWork() - work,
             .ms = absl::ToDoubleMilliseconds(absl::Now() - start)};
  EXPECT_TRUE(out.ok()) << out.status();
  if (out.ok()) r.bytes = out->size();
  return r;
}

void ExpectLinear(const Rendered& half, const Rendered& full, const char* what) {
  std::cout << what << ": " << half.bytes << " bytes in " << half.ms << " ms (work " << half.work
            << "), then " << full.bytes << " bytes in " << full.ms << " ms (work " << full.work
            << ")\n";
  EXPECT_GT(full.bytes, 19 * half.bytes / 10) << what;
  // Twice the input, about twice the work (a quadratic template would be four times).
  EXPECT_LT(full.work, 5 * half.work / 2) << what;
  EXPECT_LT(full.work, 12 * static_cast<int64_t>(full.bytes)) << what;
}

TEST(ShippedTemplatesTest, DeepSeekToolsRendersManyToolsInLinearWork) {
  const engine::model::ChatTemplate t = Shipped("router/templates/deepseek_v3_tools.jinja");
  const Json user = Json::array({{{"role", "user"}, {"content", "Which tool?"}}});
  ExpectLinear(Render(t, user, {{"tools", router::templates::ManyTools(50'000)}}),
               Render(t, user, {{"tools", router::templates::ManyTools(100'000)}}), "100,000 tools");
}

TEST(ShippedTemplatesTest, DeepSeekToolsRendersManySystemMessagesInLinearWork) {
  const engine::model::ChatTemplate t = Shipped("router/templates/deepseek_v3_tools.jinja");
  ExpectLinear(Render(t, router::templates::ManySystemMessages(50'000), nullptr),
               Render(t, router::templates::ManySystemMessages(100'000), nullptr),
               "100,000 system messages");
}

}  // namespace
}  // namespace semmoe
