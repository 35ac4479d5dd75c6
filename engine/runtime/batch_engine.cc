#include "engine/runtime/batch_engine.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::engine::runtime {

using model::LogitsMode;
using model::SequenceInput;

struct BatchEngine::Sequence {
  Sequence(GenerationRequest r, const model::Tokenizer* tokenizer)
      : request(std::move(r)), sampler(request.sampling) {
    tokens = request.prompt;
    if (tokenizer != nullptr) text.emplace(*tokenizer, request.stop);
  }
  GenerationRequest request;
  std::vector<int32_t> tokens;  // Prompt + generated; the KV holds tokens[0, computed).
  int computed = 0;
  std::vector<int32_t> generated;
  std::optional<model::TextStream> text;  // With a tokenizer.
  std::unique_ptr<PagedSequence> kv;
  Sampler sampler;
  int preemptions = 0;
  int64_t local_activations = 0, activations = 0;
  FinishReason finish = FinishReason::kLength;
};

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kStop:
      return "stop";
  }
  return "unknown";
}

BatchEngine::BatchEngine(const model::ModelConfig& config, const Options& options,
                         std::unique_ptr<PagedKvCache> cache)
    : config_(config), options_(options), cache_(std::move(cache)) {}

BatchEngine::~BatchEngine() {
  // Sequences hold pages of cache_: release them before the cache goes.
  waiting_.clear();
  running_.clear();
}

absl::StatusOr<std::unique_ptr<BatchEngine>> BatchEngine::Create(const model::ModelConfig& c,
                                                                 const Options& options) {
  if (!options.forward) {
    return absl::InvalidArgumentError("a batch engine made from a config needs options.forward");
  }
  if (options.max_batch_tokens <= 0 || options.max_running <= 0 || options.max_waiting <= 0) {
    return absl::InvalidArgumentError(
        "max_batch_tokens, max_running and max_waiting must be positive");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PagedKvCache> cache,
                   PagedKvCache::Create({.num_layers = c.num_layers,
                                         .shape = c.kv_shape(),
                                         .page_size = options.page_size,
                                         .num_pages = PagedKvCache::PagesForModel(
                                             c, options.page_size, options.kv_cache_bytes)}));
  return std::unique_ptr<BatchEngine>(new BatchEngine(c, options, std::move(cache)));
}

absl::StatusOr<std::unique_ptr<BatchEngine>> BatchEngine::Create(const model::ModelConfig& config,
                                                                 const model::ModelWeights& weights,
                                                                 Options options) {
  if (options.forward) return Create(config, options);
  const int pages = PagedKvCache::PagesForModel(config, options.page_size, options.kv_cache_bytes);
  ASSIGN_OR_RETURN(std::unique_ptr<forward::CpuForward> cpu,
                   forward::CpuForward::Create(
                       config, weights, {.num_pages = pages, .page_size = options.page_size}));
  forward::CpuForward* forward = cpu.get();
  options.forward = [forward](absl::Span<const SequenceInput> batch) {
    return forward->Forward(batch);
  };
  ASSIGN_OR_RETURN(std::unique_ptr<BatchEngine> engine, Create(config, options));
  engine->cpu_ = std::move(cpu);
  return engine;
}

absl::Status BatchEngine::Submit(GenerationRequest request) {
  const model::ModelConfig& c = config_;
  const std::string& id = request.id;
  if (request.prompt.empty()) return absl::InvalidArgumentError(absl::StrCat(id, ": empty prompt"));
  if (request.max_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat(id, ": max_tokens must be >= 0"));
  }
  const int64_t total = static_cast<int64_t>(request.prompt.size()) + request.max_tokens;
  if (total > c.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat(
        id, ": prompt (", request.prompt.size(), ") + max_tokens (", request.max_tokens,
        ") exceeds the model's ", c.max_position_embeddings, " positions"));
  }
  if (total > static_cast<int64_t>(cache_->total_pages()) * cache_->page_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(id, ": prompt + max_tokens (", total, ") does not fit the whole KV cache (",
                     cache_->total_pages() * cache_->page_size(), " positions)"));
  }
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= c.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(id, ": token id ", t, " is outside [0, ", c.vocab_size, ")"));
    }
  }
  RETURN_IF_ERROR(ValidateSamplingParams(request.sampling));
  if (!request.stop.empty() && options_.tokenizer == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(id, ": stop strings need a tokenizer"));
  }
  for (const std::string& s : request.stop) {
    if (s.empty()) return absl::InvalidArgumentError(absl::StrCat(id, ": empty stop string"));
  }
  if (static_cast<int>(waiting_.size()) >= options_.max_waiting) {
    return absl::ResourceExhaustedError(
        absl::StrCat("queue full (", options_.max_waiting, " waiting requests)"));
  }
  if (!in_flight_.insert(id).second) {
    return absl::AlreadyExistsError(absl::StrCat("request id '", id, "' is already in flight"));
  }
  waiting_.push_back(std::make_unique<Sequence>(std::move(request), options_.tokenizer));
  return absl::OkStatus();
}

void BatchEngine::Preempt(size_t index) {
  std::unique_ptr<Sequence> seq = std::move(running_[index]);
  running_.erase(running_.begin() + index);
  seq->kv.reset();
  seq->computed = 0;
  ++seq->preemptions;
  ++stats_.preemptions;
  waiting_.push_front(std::move(seq));
}

bool BatchEngine::ReserveOrPreempt(size_t index, int positions) {
  while (true) {
    Sequence& seq = *running_[index];
    if (cache_->Reserve(*seq.kv, positions).ok()) return true;
    // Free the most recently admitted other sequence; if this is the latest, give way itself.
    if (running_.size() - 1 == index) return false;
    Preempt(running_.size() - 1);
  }
}

bool BatchEngine::Append(Sequence& seq, int32_t token, std::string& text) {
  seq.generated.push_back(token);
  const GenerationRequest& r = seq.request;
  const bool eos =
      std::find(options_.eos_ids.begin(), options_.eos_ids.end(), token) != options_.eos_ids.end();
  bool done = false;
  if (eos && !r.ignore_eos) {
    seq.finish = FinishReason::kEos;
    done = true;
  } else if (seq.text.has_value()) {
    // The sampler only draws ids of the model's vocabulary; one the tokenizer lacks (a model
    // whose lm_head is wider than its vocabulary) is no text.
    absl::StatusOr<std::string> piece = seq.text->Add({token});
    if (piece.ok()) text = *std::move(piece);
    if (seq.text->stopped()) {
      seq.finish = FinishReason::kStop;
      done = true;
    }
  }
  if (!done && static_cast<int>(seq.generated.size()) >= r.max_tokens) {
    seq.finish = FinishReason::kLength;
    done = true;
  }
  if (done) {
    if (seq.text.has_value()) text += seq.text->Finish();  // What was held back, if anything.
    return true;
  }
  seq.tokens.push_back(token);
  return false;
}

bool BatchEngine::Cancel(const std::string& id) {
  if (!in_flight_.contains(id)) return false;
  in_flight_.erase(id);
  planned_.reset();  // It may be in the plan: Step() plans anew.
  auto match = [&](const std::unique_ptr<Sequence>& s) { return s->request.id == id; };
  auto w = std::find_if(waiting_.begin(), waiting_.end(), match);
  if (w != waiting_.end()) {
    waiting_.erase(w);  // Its pages (if it was preempted, none) go back with it.
    return true;
  }
  auto r = std::find_if(running_.begin(), running_.end(), match);
  if (r != running_.end()) running_.erase(r);
  return true;
}

int64_t BatchEngine::Plan() {
  // Running sequences first (oldest first), then admit waiting ones, within the budget.
  int budget = options_.max_batch_tokens;
  std::vector<std::pair<Sequence*, int>>& plan = planned_.emplace();  // (sequence, chunk)
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& seq = *running_[i];
    const int chunk = std::min<int>(budget, static_cast<int>(seq.tokens.size()) - seq.computed);
    if (!ReserveOrPreempt(i, seq.computed + chunk)) {
      Preempt(i);
      break;  // It was the latest: nothing after it.
    }
    plan.emplace_back(&seq, chunk);
    budget -= chunk;
  }
  while (budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size()) < options_.max_running) {
    Sequence& seq = *waiting_.front();
    if (seq.kv == nullptr) seq.kv = cache_->NewSequence();
    const int chunk = std::min<int>(budget, static_cast<int>(seq.tokens.size()));
    if (!cache_->Reserve(*seq.kv, chunk).ok()) break;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    plan.emplace_back(&seq, chunk);
    budget -= chunk;
  }
  return options_.max_batch_tokens - budget;
}

absl::Status BatchEngine::Step(std::vector<GenerationResult>& finished,
                               std::vector<TokenEvent>* events) {
  if (!planned_.has_value()) Plan();
  const std::vector<std::pair<Sequence*, int>> plan = *std::move(planned_);
  planned_.reset();
  if (plan.empty()) {
    if (options_.forward_every_step) RETURN_IF_ERROR(options_.forward({}).status());
    if (idle()) return absl::OkStatus();
    return absl::ResourceExhaustedError("no request fits the KV cache");  // Guarded by Submit().
  }

  std::vector<SequenceInput> batch;
  for (auto& [seq, chunk] : plan) {
    const bool last = seq->computed + chunk == static_cast<int>(seq->tokens.size());
    batch.push_back(SequenceInput{absl::MakeConstSpan(seq->tokens).subspan(seq->computed, chunk),
                                  seq->computed, seq->kv.get(),
                                  last ? LogitsMode::kLast : LogitsMode::kNone,
                                  seq->computed > 0 ? seq->tokens[seq->computed - 1] : -1});
  }
  ASSIGN_OR_RETURN(model::ForwardOutput out, options_.forward(batch));
  ++stats_.steps;
  if (out.activations.size() == plan.size() && out.local_activations.size() == plan.size()) {
    for (size_t b = 0; b < plan.size(); ++b) {
      plan[b].first->local_activations += out.local_activations[b];
      plan[b].first->activations += out.activations[b];
    }
  }
  stats_.max_batch_size = std::max<int64_t>(stats_.max_batch_size, plan.size());

  int row = 0;
  bool any_prefill = false, any_decode = false;
  std::vector<Sequence*> done;
  for (size_t b = 0; b < plan.size(); ++b) {
    Sequence& seq = *plan[b].first;
    const int chunk = plan[b].second;
    const bool decode = seq.computed == static_cast<int>(seq.tokens.size()) - 1 && chunk == 1 &&
                        !seq.generated.empty();
    (decode ? stats_.decode_tokens : stats_.prefill_tokens) += chunk;
    (decode ? any_decode : any_prefill) = true;
    seq.computed += chunk;
    if (batch[b].logits != LogitsMode::kLast) continue;
    const int r = row++;
    if (seq.request.max_tokens == 0) {
      done.push_back(&seq);
      continue;
    }
    const int32_t token =
        seq.sampler.Sample(absl::Span<const float>(out.logits.row(r).data(), out.logits.cols()));
    std::string text;
    if (Append(seq, token, text)) done.push_back(&seq);
    if (events != nullptr) events->push_back(TokenEvent{seq.request.id, token, std::move(text)});
  }
  stats_.mixed_steps += any_prefill && any_decode;
  for (Sequence* seq : done) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const std::unique_ptr<Sequence>& s) { return s.get() == seq; });
    GenerationResult result;
    result.id = seq->request.id;
    result.prompt_tokens = static_cast<int>(seq->request.prompt.size());
    result.tokens = std::move(seq->generated);
    if (seq->text.has_value()) result.text = seq->text->text();
    result.finish = seq->finish;
    result.preemptions = seq->preemptions;
    result.local_activations = seq->local_activations;
    result.activations = seq->activations;
    in_flight_.erase(result.id);
    finished.push_back(std::move(result));
    running_.erase(it);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<GenerationResult>> BatchEngine::RunUntilIdle() {
  std::vector<GenerationResult> results;
  while (!idle()) RETURN_IF_ERROR(Step(results));
  return results;
}

}  // namespace semmoe::engine::runtime
