// A parsed chat template and its renderer: the Jinja subset Hugging Face chat templates use
// (parser.h lists the statements; builtins.h the filters, tests, methods and functions), with
// Jinja2's semantics as transformers runs them (trim_blocks, lstrip_blocks, loop controls,
// `raise_exception`). Checked against @huggingface/jinja on the real Qwen3 and DeepSeek-V3
// templates (chat_template_test).
//
// Rendering is bounded (RenderLimits): a template that loops too long, works too hard, writes
// too much or runs past its deadline is stopped, never a hang; `raise_exception(msg)` and every
// type error give InvalidArgument with the template's line.
//
// Thread-safe: a Template is immutable after Parse; Render may run concurrently.
#ifndef SEMMOE_ENGINE_TEXT_JINJA_TEMPLATE_H_
#define SEMMOE_ENGINE_TEXT_JINJA_TEMPLATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/text/jinja/ast.h"
#include "engine/text/jinja/value.h"

namespace semmoe::engine::jinja {

// A render is bounded three ways, each ending it with ResourceExhausted (DeadlineExceeded for the
// deadline, Cancelled for `cancel`), never a hang:
// - steps (expressions and statements evaluated) and output bytes;
// - work (value.h ThreadWork: bytes of strings built or copied, list items and dict entries
//   copied or scanned): a template whose steps are few but each costly — a string grown by
//   copies, lookups in a huge dict — stops after `max_work` units, not after its square;
// - time: `deadline` and `cancel` (e.g. the server shutting down), checked every 64 steps and
//   whenever 1 MiB more work was done.
struct RenderLimits {
  int64_t max_output_bytes = 16 << 20;
  int64_t max_steps = 10'000'000;  // Expressions and statements evaluated.
  int64_t max_work = 256ll << 20;  // 16× the output cap: linear templates never come close.
  absl::Time deadline = absl::InfiniteFuture();
  const std::atomic<bool>* cancel = nullptr;  // Set: the render stops (Cancelled).
};

class Template {
 public:
  // InvalidArgument naming the line for a syntax error or an unsupported statement.
  static absl::StatusOr<Template> Parse(std::string_view source);

  // Renders with `variables` (a dict: messages, add_generation_prompt, bos_token, ...).
  absl::StatusOr<std::string> Render(const Value& variables, const RenderLimits& limits = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_TEMPLATE_H_
