// A RouterApi that answers from a script instead of engines, for the door's tool-calling tests
// (tool_door_test) and for the official openai client against the door (//tests:openai_test via
// //tests:scripted_door): what the model writes is fixed, everything the door does with it —
// rendering the conversation with the real template, forcing a call, parsing, the response's
// shapes, streamed and whole — is the product's.
#ifndef SEMMOE_ROUTER_HTTP_TESTING_SCRIPTED_ROUTER_H_
#define SEMMOE_ROUTER_HTTP_TESTING_SCRIPTED_ROUTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "router/core/router_api.h"
#include "router/openai/tool_calls.h"

namespace semmoe::router::testing {

class ScriptedRouter : public RouterApi {
 public:
  // The text the model writes after `prompt` (the request's text, as rendered by the door).
  using Script = std::function<std::string(const std::string& prompt)>;
  // The text streams in pieces of `piece_bytes` (cut at UTF-8 character boundaries), one token
  // each, then ends with "eos" — or "length" when the request's max_tokens is smaller.
  explicit ScriptedRouter(Script script, int piece_bytes = 3)
      : script_(std::move(script)), piece_bytes_(piece_bytes) {}

  absl::StatusOr<std::shared_ptr<CallHandle>> Submit(const rpc::GenerateRequest& request,
                                                     std::optional<absl::Time> deadline,
                                                     std::shared_ptr<CallSink> sink) override;
  rpc::RouterStats Stats() const override;
  std::string MetricsText() const override { return ""; }

  // Every prompt submitted, in order.
  std::vector<std::string> prompts() const;

 private:
  const Script script_;
  const int piece_bytes_;
  mutable absl::Mutex mu_;
  std::vector<std::string> prompts_ ABSL_GUARDED_BY(mu_);
};

// A weather agent in `format`: with no tool results in the prompt, it calls get_weather for
// Paris and Tokyo (two calls in one turn); with results, it answers "Results: " and the results
// joined with "; ". Whatever the prompt already ends with of its answer (a call the door opened
// to force one) it does not write again.
std::string WeatherAgent(openai::ToolCallFormat format, const std::string& prompt);

}  // namespace semmoe::router::testing

#endif  // SEMMOE_ROUTER_HTTP_TESTING_SCRIPTED_ROUTER_H_
