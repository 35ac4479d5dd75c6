// engine: one Sem-MoE engine rank, and its offline subcommands.
//
//   engine generate --model DIR --prompt TEXT [--max_tokens N] [--greedy] [--json] ...
//   engine score    --model DIR --input IN.jsonl --out OUT.jsonl
//   engine trace    --model DIR --prompts PROMPTS.jsonl --out TRACE
//
// Exit status: 0 on success, 1 when the work failed (the error is printed), 2 for bad usage.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "engine/model/generation_config.h"
#include "engine/model/model.h"
#include "engine/model/unicode.h"
#include "engine/offline/score.h"
#include "engine/offline/trace_run.h"
#include "engine/runtime/batch_engine.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, model, "", "checkpoint directory (config.json, *.safetensors, tokenizer.json)");
ABSL_FLAG(std::string, prompt, "", "generate: the prompt text (special tokens are parsed)");
ABSL_FLAG(int, max_tokens, 64, "generate: tokens to generate at most");
ABSL_FLAG(bool, greedy, false, "generate: greedy decoding (else the checkpoint's "
                               "generation_config.json, overridden by the flags below)");
ABSL_FLAG(float, temperature, -1, "generate: sampling temperature (-1: generation_config.json)");
ABSL_FLAG(float, top_p, -1, "generate: nucleus sampling mass (-1: generation_config.json)");
ABSL_FLAG(int, top_k, -1, "generate: top-k sampling (-1: generation_config.json, 0: off)");
ABSL_FLAG(uint64_t, seed, 0, "generate: sampling seed");
ABSL_FLAG(std::vector<std::string>, stop, {}, "generate: comma-separated stop strings");
ABSL_FLAG(bool, ignore_eos, false, "generate: keep going past EOS");
ABSL_FLAG(bool, json, false, "generate: print one JSON object instead of the text");
ABSL_FLAG(std::string, input, "", "score: input JSONL ({\"id\", \"token_ids\"} per line)");
ABSL_FLAG(std::string, prompts, "", "trace: prompts JSONL ({\"id\", \"text\" or \"token_ids\"})");
ABSL_FLAG(std::string, out, "", "score/trace: output file");
ABSL_FLAG(int, max_batch_tokens, 2048, "tokens per forward pass");
ABSL_FLAG(int, max_prompt_tokens, 0, "trace: cut longer prompts (0: the model's positions)");
ABSL_FLAG(int, verbosity, 0, "VLOG level");

namespace semmoe::engine {
namespace {

constexpr char kUsage[] =
    "engine <command> [flags]\n\n"
    "commands:\n"
    "  generate --model DIR --prompt TEXT [--max_tokens N] [--greedy] [--json]\n"
    "  score    --model DIR --input IN.jsonl --out OUT.jsonl\n"
    "  trace    --model DIR --prompts PROMPTS.jsonl --out TRACE\n\n"
    "Run `engine --help` for every flag.";

int Usage(const std::string& message) {
  std::cerr << "engine: " << message << "\n\n" << kUsage << "\n";
  return 2;
}

int Fail(const absl::Status& status) {
  std::cerr << "engine: " << status << "\n";
  return 1;
}

// `bazel run` starts binaries in the runfiles tree: resolve relative paths against the caller's.
std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr) return path;
  return absl::StrCat(cwd, "/", path);
}

absl::StatusOr<std::unique_ptr<model::Model>> Load(bool need_tokenizer) {
  return model::LoadModel(UserPath(absl::GetFlag(FLAGS_model)),
                          {.require_tokenizer = need_tokenizer});
}

int Generate() {
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  if (prompt.empty()) return Usage("generate needs --prompt");
  auto m = Load(/*need_tokenizer=*/true);
  if (!m.ok()) return Fail(m.status());
  const model::Model& model = **m;
  auto gen = model::LoadGenerationConfig(model.dir, model.config);
  if (!gen.ok()) return Fail(gen.status());
  auto ids = model.tokenizer->Encode(prompt);
  if (!ids.ok()) return Fail(ids.status());

  runtime::SamplingParams sampling;
  if (gen->do_sample) {
    sampling = {.temperature = gen->temperature, .top_k = gen->top_k, .top_p = gen->top_p};
  }
  if (absl::GetFlag(FLAGS_temperature) >= 0) sampling.temperature = absl::GetFlag(FLAGS_temperature);
  if (absl::GetFlag(FLAGS_top_p) >= 0) sampling.top_p = absl::GetFlag(FLAGS_top_p);
  if (absl::GetFlag(FLAGS_top_k) >= 0) sampling.top_k = absl::GetFlag(FLAGS_top_k);
  if (absl::GetFlag(FLAGS_greedy)) sampling.temperature = 0;
  sampling.seed = absl::GetFlag(FLAGS_seed);

  runtime::BatchEngine::Options options{.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
                                        .tokenizer = model.tokenizer.get(),
                                        .eos_ids = gen->eos_token_ids};
  auto engine = runtime::BatchEngine::Create(*model.transformer, options);
  if (!engine.ok()) return Fail(engine.status());
  absl::Status submitted = (*engine)->Submit({.id = "generate",
                                              .prompt = *ids,
                                              .max_tokens = absl::GetFlag(FLAGS_max_tokens),
                                              .sampling = sampling,
                                              .stop = absl::GetFlag(FLAGS_stop),
                                              .ignore_eos = absl::GetFlag(FLAGS_ignore_eos)});
  if (!submitted.ok()) return Fail(submitted);

  const bool json = absl::GetFlag(FLAGS_json);
  const auto start = std::chrono::steady_clock::now();
  std::vector<runtime::GenerationResult> done;
  std::vector<runtime::TokenEvent> events;
  std::string pending;  // Streamed bytes not yet printed (an incomplete UTF-8 character).
  size_t printed = 0;
  size_t holdback = 0;
  for (const std::string& stop : absl::GetFlag(FLAGS_stop)) {
    holdback = std::max(holdback, stop.empty() ? 0 : stop.size() - 1);
  }
  double first_token_s = 0;
  while (!(*engine)->idle()) {
    events.clear();
    absl::Status step = (*engine)->Step(done, &events);
    if (!step.ok()) return Fail(step);
    if (!events.empty() && first_token_s == 0) {
      first_token_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (json) continue;
    // Stream the text as it grows; the result's text is authoritative (stop strings cut it).
    for (const auto& e : events) {
      if (std::find(gen->eos_token_ids.begin(), gen->eos_token_ids.end(), e.token) !=
              gen->eos_token_ids.end() && !absl::GetFlag(FLAGS_ignore_eos)) {
        continue;
      }
      auto piece = model.tokenizer->Decode({e.token});
      if (piece.ok()) pending += *piece;
    }
    if (!done.empty()) pending = done[0].text;
    // Hold back what could still turn out to be the start of a stop string (it is cut then).
    size_t complete = model::CompleteUtf8Prefix(pending);
    complete = complete > holdback ? model::CompleteUtf8Prefix(pending.substr(0, complete - holdback))
                                   : 0;
    if (done.empty() && complete > printed) {
      std::cout << pending.substr(printed, complete - printed) << std::flush;
      printed = complete;
    } else if (!done.empty() && pending.size() > printed) {
      std::cout << pending.substr(printed) << std::flush;
      printed = pending.size();
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const runtime::GenerationResult& r = done.at(0);
  if (json) {
    nlohmann::json out = {{"prompt", prompt},
                          {"prompt_tokens", r.prompt_tokens},
                          {"text", r.text},
                          {"token_ids", r.tokens},
                          {"completion_tokens", r.tokens.size()},
                          {"finish_reason", runtime::FinishReasonName(r.finish)},
                          {"time_to_first_token_s", first_token_s},
                          {"seconds", seconds}};
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "\n";
    std::cerr << "[" << r.tokens.size() << " tokens, finish: " << runtime::FinishReasonName(r.finish)
              << ", " << seconds << " s]\n";
  }
  return 0;
}

int Score() {
  if (absl::GetFlag(FLAGS_input).empty() || absl::GetFlag(FLAGS_out).empty()) {
    return Usage("score needs --input and --out");
  }
  auto m = Load(/*need_tokenizer=*/false);
  if (!m.ok()) return Fail(m.status());
  auto n = offline::RunScore(*(*m)->transformer,
                             {.input = UserPath(absl::GetFlag(FLAGS_input)),
                              .output = UserPath(absl::GetFlag(FLAGS_out)),
                              .max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens)});
  if (!n.ok()) return Fail(n.status());
  std::cerr << "scored " << *n << " inputs into " << absl::GetFlag(FLAGS_out) << "\n";
  return 0;
}

int Trace() {
  if (absl::GetFlag(FLAGS_prompts).empty() || absl::GetFlag(FLAGS_out).empty()) {
    return Usage("trace needs --prompts and --out");
  }
  auto m = Load(/*need_tokenizer=*/false);
  if (!m.ok()) return Fail(m.status());
  const auto start = std::chrono::steady_clock::now();
  auto summary = offline::RunTrace(*(*m)->transformer, (*m)->tokenizer.get(),
                                   {.prompts = UserPath(absl::GetFlag(FLAGS_prompts)),
                                    .output = UserPath(absl::GetFlag(FLAGS_out)),
                                    .max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
                                    .max_prompt_tokens = absl::GetFlag(FLAGS_max_prompt_tokens)});
  if (!summary.ok()) return Fail(summary.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "traced " << summary->prompts << " prompts, " << summary->tokens << " tokens in "
            << seconds << " s into " << absl::GetFlag(FLAGS_out) << "\n";
  return 0;
}

}  // namespace
}  // namespace semmoe::engine

int main(int argc, char** argv) {
  using semmoe::engine::Usage;
  absl::SetProgramUsageMessage(semmoe::engine::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  semmoe::InitLogging(argv[0], {.verbosity = absl::GetFlag(FLAGS_verbosity), .stderr_threshold = 1});
  if (args.size() != 2) return semmoe::engine::Usage("expected exactly one command");
  const std::string command = args[1];
  if (absl::GetFlag(FLAGS_model).empty()) return Usage("--model is required");
  if (command == "generate") return semmoe::engine::Generate();
  if (command == "score") return semmoe::engine::Score();
  if (command == "trace") return semmoe::engine::Trace();
  return semmoe::engine::Usage(absl::StrCat("unknown command '", command, "'"));
}
