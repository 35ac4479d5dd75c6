// bench_chat_template: how a chat template's render time grows with a request's tools and
// system messages — what the router's --chat_template_render_ms bound has to admit. Renders the
// template with N/2 and N tools (and system messages), each `--repeat` times, and prints the
// median time, the work (engine/text/jinja/value.h ThreadWork) and the ratio of the two sizes
// (2.0 is linear; a template that grows a string by copies gives about 4). With --tokenizer, also
// what keeping the request's special-token text as text costs (router
// --message_special_tokens=text): the mask before the render and the unmask after it, timed side
// by side with the render alone on the same request.
//
//   bazel build --config=opt //tools:bench_chat_template
//   bazel-bin/tools/bench_chat_template --template_file router/templates/deepseek_v3_tools.jinja
//       --n 100000 --repeat 3 [--tokenizer tokenizer.json]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cpu_guard.h"
#include "common/file.h"
#include "engine/text/chat_template.h"
#include "engine/text/special_text_mask.h"
#include "engine/text/tokenizer.h"
#include "nlohmann/json.hpp"
#include "router/templates/large_requests.h"

ABSL_FLAG(std::string, template_file, "router/templates/deepseek_v3_tools.jinja",
          "a Jinja chat template file");
ABSL_FLAG(int, n, 100000, "the larger size (tools, system messages); the smaller is n/2");
ABSL_FLAG(int, repeat, 5, "renders of each size (the median is printed)");
ABSL_FLAG(std::string, tokenizer, "",
          "a tokenizer.json: also time the special-token mask (its special tokens) beside the "
          "render");

namespace {

using Json = nlohmann::ordered_json;

struct Result {
  double ms = 0;
  int64_t work = 0;
  size_t bytes = 0;
};

Result Time(const semmoe::engine::model::ChatTemplate& t, const Json& messages, const Json& extra,
            int repeat) {
  std::vector<double> ms;
  Result r;
  for (int i = 0; i < repeat; ++i) {
    const int64_t work = semmoe::engine::jinja::ThreadWork();
    const absl::Time start = absl::Now();
    absl::StatusOr<std::string> out = t.Apply(messages, true, extra);
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    if (!out.ok()) {
      std::fprintf(stderr, "bench_chat_template: %s\n",
                   std::string(out.status().message()).c_str());
      std::exit(1);
    }
    r.work = semmoe::engine::jinja::ThreadWork() - work;
    r.bytes = out->size();
  }
  std::sort(ms.begin(), ms.end());
  r.ms = ms[ms.size() / 2];
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("bench_chat_template --template_file FILE --n 100000");
  absl::ParseCommandLine(argc, argv);
  const std::string file = semmoe::UserPath(absl::GetFlag(FLAGS_template_file));
  const int n = absl::GetFlag(FLAGS_n), repeat = absl::GetFlag(FLAGS_repeat);
  if (n < 2 || n > 10'000'000 || repeat < 1 || repeat > 1000) {
    std::fprintf(stderr, "bench_chat_template: --n must be 2..10000000, --repeat 1..1000\n");
    return 2;
  }
  absl::StatusOr<std::string> source = semmoe::ReadFile(file);
  if (!source.ok()) {
    std::fprintf(stderr, "bench_chat_template: %s\n",
                 std::string(source.status().message()).c_str());
    return 1;
  }
  auto t = semmoe::engine::model::ChatTemplate::FromConfig(
      {{"chat_template", *source}, {"bos_token", "<bos>"}}, file,
      {.render_timeout = absl::Seconds(60)});
  if (!t.ok()) {
    std::fprintf(stderr, "bench_chat_template: %s\n", std::string(t.status().message()).c_str());
    return 1;
  }
  const Json user = Json::array({{{"role", "user"}, {"content", "Which tool?"}}});
  std::printf("%-22s %10s %12s %12s %12s\n", "input", "n", "bytes", "work", "ms (median)");
  for (const char* what : {"tools", "system messages"}) {
    const bool tools = std::string(what) == "tools";
    Result half, full;
    for (int size : {n / 2, n}) {
      const Result r =
          tools ? Time(*t, user, {{"tools", semmoe::router::templates::ManyTools(size)}}, repeat)
                : Time(*t, semmoe::router::templates::ManySystemMessages(size), nullptr, repeat);
      std::printf("%-22s %10d %12zu %12lld %12.1f\n", what, size, r.bytes,
                  static_cast<long long>(r.work), r.ms);
      (size == n ? full : half) = r;
    }
    std::printf("%-22s time ratio n / (n/2): %.2f (2.0 linear, 4.0 quadratic)\n", what,
                full.ms / half.ms);
  }
  if (absl::GetFlag(FLAGS_tokenizer).empty()) return 0;
  absl::StatusOr<std::string> json =
      semmoe::ReadFile(semmoe::UserPath(absl::GetFlag(FLAGS_tokenizer)));
  if (!json.ok()) {
    std::fprintf(stderr, "bench_chat_template: %s\n", std::string(json.status().message()).c_str());
    return 1;
  }
  auto tokenizer = semmoe::engine::model::Tokenizer::FromJson(*json);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "bench_chat_template: %s\n",
                 std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  const std::vector<std::string> specials = (*tokenizer)->SpecialTokenTexts();
  auto mask = semmoe::engine::model::SpecialTextMask::Create(specials);
  if (!mask.ok()) {
    std::fprintf(stderr, "bench_chat_template: %s\n", std::string(mask.status().message()).c_str());
    return 1;
  }
  // The n-tools request, and the same with a special token's text in every tool's description
  // (what the mask has to replace).
  std::printf("\nspecial-token mask (%zu special tokens), %d tools:\n", specials.size(), n);
  std::printf("%-22s %12s %12s %12s\n", "request", "render ms", "masked ms", "ratio");
  for (bool injected : {false, true}) {
    Json tools = semmoe::router::templates::ManyTools(n);
    if (injected) {
      for (Json& tool : tools) {
        tool["function"]["description"] =
            tool["function"]["description"].get<std::string>() + specials.front();
      }
    }
    const Json extra = {{"tools", tools}};
    std::vector<double> plain_ms, masked_ms;
    for (int i = 0; i < repeat; ++i) {  // Alternated, so both see the same machine.
      absl::Time start = absl::Now();
      absl::StatusOr<std::string> out = t->Apply(user, true, extra);
      plain_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
      start = absl::Now();
      int64_t replaced = 0;
      const Json m = mask->Mask(user, &replaced), e = mask->Mask(extra, &replaced);
      absl::StatusOr<std::string> masked = t->Apply(m, true, e);
      absl::StatusOr<semmoe::engine::model::SpecialTextMask::Unmasked> u =
          masked.ok()
              ? mask->Unmask(*masked)
              : absl::StatusOr<semmoe::engine::model::SpecialTextMask::Unmasked>(masked.status());
      masked_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
      if (!out.ok() || !u.ok() || u->text != *out) {
        std::fprintf(stderr, "bench_chat_template: the masked render differs from the render\n");
        return 1;
      }
    }
    std::sort(plain_ms.begin(), plain_ms.end());
    std::sort(masked_ms.begin(), masked_ms.end());
    const double p = plain_ms[plain_ms.size() / 2], q = masked_ms[masked_ms.size() / 2];
    std::printf("%-22s %12.1f %12.1f %12.2f\n", injected ? "a special in each" : "plain", p, q,
                q / p);
  }
  return 0;
}
