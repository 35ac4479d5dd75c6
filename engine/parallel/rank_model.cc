#include "engine/parallel/rank_model.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/parallel/tp_weights.h"
#include "kernels/safetensors.h"

namespace semmoe::engine {
namespace {

// The CPU forward through the seam GroupEngine runs a rank's passes with.
class CpuRankForward final : public RankForward {
 public:
  explicit CpuRankForward(forward::CpuForward& cpu) : cpu_(cpu) {}
  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                               const model::ForwardOptions& options) override {
    return cpu_.Forward(batch, options);
  }
  RankForwardCounters counters() const override { return {.layers = cpu_.ep_counters()}; }
  absl::Status SwitchPlacement(const planner::Placement&, absl::Span<const GainedExpertWeights>,
                               const DevicePredictor*) override {
    return absl::FailedPreconditionError(
        "a CPU rank switches placements with its RankModel (RankModel::SwitchPlacement)");
  }

 private:
  forward::CpuForward& cpu_;
};

}  // namespace

const char* AttentionModeName(AttentionMode mode) {
  return mode == AttentionMode::kDp ? "dp" : "tp";
}

absl::StatusOr<std::unique_ptr<RankModel>> RankModel::Create(const std::string& dir,
                                                             const planner::Placement& placement,
                                                             Communicator& comm,
                                                             const RankModelOptions& options) {
  std::unique_ptr<RankModel> m(new RankModel(comm, options));
  m->dir_ = dir;
  m->placement_ = &placement;
  ASSIGN_OR_RETURN(m->config_, model::LoadModelConfig(dir));
  const model::ModelConfig& c = m->config_;
  if (placement.moe_layers() != c.MoeLayers() || placement.num_experts() != c.num_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": the placement (", placement.num_layers(), " MoE layers, ",
                     placement.num_experts(), " experts) is not for this model (",
                     c.MoeLayers().size(), " MoE layers, ", c.num_experts, " experts)"));
  }
  if (options.attention == AttentionMode::kTp) RETURN_IF_ERROR(CheckTpSplit(c, comm.size()));

  std::vector<int> moe_index(c.num_layers, -1);
  for (int i = 0; i < placement.num_layers(); ++i) moe_index[placement.moe_layers()[i]] = i;
  model::LoadOptions load;
  load.fp8_in_memory = options.fp8_in_memory;
  const int rank = comm.rank();
  load.load_expert = [&](int layer, int expert) {
    return moe_index[layer] >= 0 && placement.Holds(moe_index[layer], rank, expert);
  };
  {
    ASSIGN_OR_RETURN(std::unique_ptr<kernels::Checkpoint> checkpoint,
                     kernels::Checkpoint::Open(dir));
    ASSIGN_OR_RETURN(m->weights_, model::LoadWeights(c, *checkpoint, load));
  }
  m->local_config_ = c;
  if (options.attention == AttentionMode::kTp) {
    ASSIGN_OR_RETURN(m->local_config_, SliceForTp(c, *m->weights_, rank, comm.size()));
  }
  auto tokenizer = model::Tokenizer::FromDirectory(dir);
  if (tokenizer.ok()) {
    m->tokenizer_ = std::move(*tokenizer);
  } else if (!absl::IsNotFound(tokenizer.status())) {
    return tokenizer.status();
  }

  if (options.attention == AttentionMode::kTp && options.predictor != nullptr &&
      options.predictor->num_devices() != comm.size()) {
    return absl::InvalidArgumentError("the device predictor is for another group size");
  }
  if (!options.cpu_forward) return m;
  m->kv_pages_ = runtime::PagedKvCache::PagesForModel(m->local_config_, options.page_size,
                                                      options.kv_cache_bytes);
  ASSIGN_OR_RETURN(
      m->cpu_, forward::CpuForward::Create(
                   m->local_config_, *m->weights_,
                   {.num_pages = m->kv_pages_,
                    .page_size = options.page_size,
                    .ep = {.placement = &placement,
                           .comm = &comm,
                           .attention_tp = options.attention == AttentionMode::kTp,
                           .predictor = options.attention == AttentionMode::kTp ? options.predictor
                                                                                : nullptr,
                           .token_balance_eps = options.token_balance_eps,
                           .holder_choice = options.holder_choice,
                           .routing_gather_max_bytes = options.routing_gather_max_bytes,
                           .topology = options.topology}}));
  m->rank_forward_ = std::make_unique<CpuRankForward>(*m->cpu_);
  return m;
}

absl::StatusOr<std::unique_ptr<RankModel>> RankModel::Create(
    const std::string& dir, std::unique_ptr<RankPlacement> placement, Communicator& comm,
    RankModelOptions options) {
  options.predictor = placement->predictor.get();
  ASSIGN_OR_RETURN(std::unique_ptr<RankModel> m, Create(dir, placement->placement, comm, options));
  m->owned_ = std::move(placement);
  m->placement_ = &m->owned_->placement;
  return m;
}

absl::StatusOr<int64_t> RankModel::ReleaseHostWeights() {
  if (cpu_ != nullptr) {
    return absl::FailedPreconditionError(
        "this rank's forward runs on the CPU over its host weights; they cannot be released");
  }
  if (weights_ == nullptr) return 0;
  const int64_t bytes = model::WeightBytes(*weights_);
  weights_.reset();
  return bytes;
}

absl::StatusOr<std::unique_ptr<runtime::PagedKvCache>> RankModel::NewPageCache() const {
  if (cpu_ == nullptr) return absl::FailedPreconditionError("this rank has no CPU forward");
  return runtime::PagedKvCache::Create({.num_layers = local_config_.num_layers,
                                        .shape = local_config_.kv_shape(),
                                        .page_size = options_.page_size,
                                        .num_pages = kv_pages_});
}

std::vector<std::pair<int, int>> GainedExperts(const planner::Placement& current,
                                               const planner::Placement& next, int rank) {
  std::vector<std::pair<int, int>> gained;
  for (int i = 0; i < next.num_layers(); ++i) {
    for (int e = 0; e < next.num_experts(); ++e) {
      if (next.Holds(i, rank, e) && !current.Holds(i, rank, e)) {
        gained.emplace_back(next.moe_layers()[i], e);
      }
    }
  }
  return gained;
}

absl::StatusOr<RankModel::Switched> RankModel::SwitchPlacement(std::unique_ptr<RankPlacement> next,
                                                               std::vector<StagedExpert> gained) {
  const int rank = comm_.rank();
  const planner::Placement& p = next->placement;
  if (p.num_devices() != comm_.size() || p.moe_layers() != placement_->moe_layers() ||
      p.num_experts() != placement_->num_experts()) {
    return absl::InvalidArgumentError("the new placement is for another model or group size");
  }
  if (options_.attention == AttentionMode::kTp && next->predictor != nullptr &&
      next->predictor->num_devices() != comm_.size()) {
    return absl::InvalidArgumentError("the new device predictor is for another group size");
  }
  const std::vector<std::pair<int, int>> want = GainedExperts(*placement_, p, rank);
  if (want.size() != gained.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the new placement gives rank ", rank, " ",
                                                   want.size(), " experts; ", gained.size(),
                                                   " were loaded"));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != std::make_pair(gained[i].layer, gained[i].expert) ||
        !gained[i].weights.loaded()) {
      return absl::InvalidArgumentError(absl::StrCat("expert ", want[i].second, " of layer ",
                                                     want[i].first,
                                                     " was not loaded for the switch"));
    }
  }
  // Without host weights (a device rank's, released) the device took the gained experts: here
  // only the placement moves, and the freed experts are counted at their f32 size.
  if (weights_ == nullptr) {
    Switched out;
    const int64_t expert_bytes =
        int64_t{4} * 3 * config_.hidden_size * config_.moe_intermediate_size;
    for (int i = 0; i < p.num_layers(); ++i) {
      for (int e = 0; e < p.num_experts(); ++e) {
        if (placement_->Holds(i, rank, e) && !p.Holds(i, rank, e)) {
          ++out.experts_freed;
          out.bytes_freed += expert_bytes;
        }
      }
    }
    std::unique_ptr<RankPlacement> previous = std::move(owned_);
    owned_ = std::move(next);
    placement_ = &owned_->placement;
    return out;
  }
  // Install the gained experts (the old placement does not use them), then rebind: only now
  // does any pass see the new placement. If the forward refuses it, take them out again.
  for (StagedExpert& s : gained) {
    weights_->layers[s.layer].experts[s.expert] = std::move(s.weights);
  }
  if (cpu_ != nullptr) {
    const DevicePredictor* predictor =
        options_.attention == AttentionMode::kTp ? next->predictor.get() : nullptr;
    if (absl::Status set = cpu_->SwitchPlacement(p, *weights_, predictor); !set.ok()) {
      for (const auto& [layer, expert] : want) weights_->layers[layer].experts[expert] = {};
      return set;
    }
  }
  // Free what the new placement no longer puts here.
  Switched out;
  const planner::Placement& old = *placement_;
  for (int i = 0; i < p.num_layers(); ++i) {
    for (int e = 0; e < p.num_experts(); ++e) {
      if (old.Holds(i, rank, e) && !p.Holds(i, rank, e)) {
        model::MlpWeights& w = weights_->layers[p.moe_layers()[i]].experts[e];
        out.bytes_freed += model::WeightBytes(w);
        ++out.experts_freed;
        w = {};
      }
    }
  }
  std::unique_ptr<RankPlacement> previous = std::move(owned_);  // Freed after the rebinding.
  owned_ = std::move(next);
  placement_ = &owned_->placement;
  return out;
}

}  // namespace semmoe::engine
