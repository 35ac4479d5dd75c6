#include "engine/parallel/routing_sampler.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::engine {

absl::StatusOr<std::unique_ptr<RoutingSampler>> RoutingSampler::Create(
    const model::ModelConfig& config, const RoutingSampleOptions& o) {
  if (!(o.share > 0 && o.share <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the routing sample share must be in (0, 1]; got ", o.share));
  }
  if (o.path.empty() || o.max_tokens < 1 || o.flush_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "routing samples need a trace path, max_tokens ≥ 1 and a positive flush interval");
  }
  if (config.MoeLayers().empty()) return absl::InvalidArgumentError("the model has no MoE layer");
  return std::unique_ptr<RoutingSampler>(new RoutingSampler(config, o));
}

RoutingSampler::RoutingSampler(const model::ModelConfig& config, const RoutingSampleOptions& o)
    : options_(o), rng_(o.seed) {
  header_.num_experts = config.num_experts;
  header_.vocab_size = config.vocab_size;
  header_.top_k = config.top_k;
  header_.has_weights = true;
  for (int l : config.MoeLayers()) header_.moe_layers.push_back(static_cast<uint16_t>(l));
  stats_.path = o.path;
  stats_.share = o.share;
  flusher_ = std::thread([this] {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.flush_interval)) break;
      mu_.Unlock();
      (void)Flush();  // Its error goes to the stats.
      mu_.Lock();
    }
  });
}

RoutingSampler::~RoutingSampler() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  flusher_.join();
  (void)Flush();
}

void RoutingSampler::Observe(absl::Span<const model::SequenceInput> batch,
                             const model::ForwardOutput& out) {
  const int layers = header_.num_moe_layers(), k = header_.top_k;
  if (static_cast<int>(out.routing.size()) != layers) return;  // Routing was not collected.
  ++passes_;
  std::bernoulli_distribution sample(options_.share);
  std::vector<planner::trace::TraceToken> tokens;
  int64_t new_requests = 0;
  int64_t row = 0;
  for (const model::SequenceInput& seq : batch) {
    Seen& seen = sequences_[seq.kv];
    if (seq.start_position == 0) {
      seen.request = -1;
      if (sample(rng_)) {
        absl::MutexLock lock(&mu_);
        seen.request = stats_.requests++;
        ++new_requests;
      }
    }
    seen.pass = passes_;
    for (size_t i = 0; i < seq.tokens.size(); ++i, ++row) {
      if (seen.request < 0) continue;
      planner::trace::TraceToken t;
      t.request = static_cast<uint64_t>(seen.request);
      t.position = static_cast<uint32_t>(seq.start_position + i);
      t.token = static_cast<uint32_t>(seq.tokens[i]);
      t.experts.resize(layers * k);
      t.weights.resize(layers * k);
      for (int l = 0; l < layers; ++l) {
        const model::Routing& r = out.routing[l];
        if ((row + 1) * k > static_cast<int64_t>(r.expert_ids.size())) return;  // Not this batch's.
        for (int j = 0; j < k; ++j) {
          t.experts[l * k + j] = static_cast<uint16_t>(r.expert_ids[row * k + j]);
          t.weights[l * k + j] = r.weights[row * k + j];
        }
      }
      tokens.push_back(std::move(t));
    }
  }
  // Forget sequences not seen for a while (finished requests); bounded by the batch sizes.
  if (sequences_.size() > 4096) {
    for (auto it = sequences_.begin(); it != sequences_.end();) {
      if (it->second.pass + 1000 < passes_) {
        sequences_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  if (tokens.empty()) return;
  absl::MutexLock lock(&mu_);
  for (auto& t : tokens) kept_.push_back(std::move(t));
  while (static_cast<int64_t>(kept_.size()) > options_.max_tokens) {
    kept_.pop_front();
    ++stats_.dropped_tokens;
  }
  stats_.tokens = static_cast<int64_t>(kept_.size());
}

absl::Status RoutingSampler::Flush() {
  absl::MutexLock flushing(&flush_mu_);
  std::vector<planner::trace::TraceToken> tokens;
  {
    absl::MutexLock lock(&mu_);
    tokens.assign(kept_.begin(), kept_.end());
  }
  std::stable_sort(tokens.begin(), tokens.end(), [](const auto& a, const auto& b) {
    return a.request != b.request ? a.request < b.request : a.position < b.position;
  });
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(auto writer, planner::trace::TraceWriter::Create(options_.path, header_));
    std::map<uint64_t, uint64_t> number;  // Sampled request → the trace's request.
    for (const auto& t : tokens) {
      auto it = number.find(t.request);
      if (it == number.end()) {
        ASSIGN_OR_RETURN(uint64_t n,
                         writer->AddRequest(absl::StrCat(options_.name_prefix, "-", t.request)));
        it = number.emplace(t.request, n).first;
      }
      std::vector<int32_t> experts(t.experts.begin(), t.experts.end());
      RETURN_IF_ERROR(writer->AddToken(it->second, t.position, t.token, experts, t.weights));
    }
    return writer->Close();
  }();
  absl::MutexLock lock(&mu_);
  ++stats_.flushes;
  stats_.error = status.ok() ? "" : absl::StrCat(options_.path, ": ", status.message());
  return status;
}

RoutingSampleStats RoutingSampler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace semmoe::engine
