#include "engine/parallel/rank_model.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/parallel/dp_stage.h"
#include "engine/parallel/tp_weights.h"
#include "kernels/safetensors.h"

namespace semmoe::engine {

const char* AttentionModeName(AttentionMode mode) {
  return mode == AttentionMode::kDp ? "dp" : "tp";
}

absl::StatusOr<std::unique_ptr<RankModel>> RankModel::Create(const std::string& dir,
                                                             const planner::Placement& placement,
                                                             Communicator& comm,
                                                             const RankModelOptions& options) {
  std::unique_ptr<RankModel> m(new RankModel(comm, options));
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

  ASSIGN_OR_RETURN(m->ffn_, ExpertParallelFfn::Create(c, *m->weights_, placement, comm));
  model::LayerStage* stage = nullptr;
  if (options.attention == AttentionMode::kDp) {
    m->dp_stage_ = std::make_unique<DpLayerStage>(*m->ffn_);
    stage = m->dp_stage_.get();
  } else {
    if (options.predictor != nullptr && options.predictor->num_devices() != comm.size()) {
      return absl::InvalidArgumentError("the device predictor is for another group size");
    }
    m->tp_stage_ = std::make_unique<TpLayerStage>(c, *m->ffn_, comm, options.predictor,
                                                  options.token_balance_eps);
    stage = m->tp_stage_.get();
  }
  ASSIGN_OR_RETURN(m->transformer_,
                   model::Transformer::Create(m->local_config_, *m->weights_, stage));
  return m;
}

}  // namespace semmoe::engine
