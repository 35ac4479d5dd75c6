#include "engine/server/rank_group.h"

#include <utility>

#include "common/status_macros.h"
#include "engine/server/planner_fetch.h"
#include "glog/logging.h"

namespace semmoe::engine {

absl::StatusOr<std::unique_ptr<RankGroup>> FormRankGroup(const RankGroupInputs& in,
                                                         EpochGroup joined) {
  const RankServerOptions& o = *in.options;
  auto g = std::make_unique<RankGroup>();
  g->epoch = joined.epoch;
  g->comm = std::move(joined.comm);
  g->topology = o.topology;
  if (g->topology == nullptr) {
    ASSIGN_OR_RETURN(planner::Topology flat, planner::Topology::Flat(o.ranks));
    g->topology = std::make_shared<const planner::Topology>(std::move(flat));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RankPlacement> placement,
                   BuildRankPlacement(*in.source, *in.config, o.ranks, o.use_layer_tables,
                                      g->topology.get()));
  // A CUDA rank's forward keeps its own weights and KV cache on the device; a CPU rank's arena
  // has the pages of the batch it serves.
  ASSIGN_OR_RETURN(g->model, RankModel::Create(o.model_dir, std::move(placement), *g->comm,
                                               {.attention = o.attention,
                                                .token_balance_eps = o.token_balance_eps,
                                                .topology = g->topology.get(),
                                                .cpu_forward = in.cuda == nullptr,
                                                .fp8_in_memory = in.cuda != nullptr && o.cuda_fp8,
                                                .page_size = o.engine.batch.page_size,
                                                .kv_cache_bytes = o.engine.batch.kv_cache_bytes}));
  // Every rank takes part in rollouts (the leader proposes); each fetches the version itself.
  PlacementRollout::Stager stager;
  std::string no_stager;
  if (o.planner.empty()) {
    no_stager = "this group was started without --planner";
  } else {
    stager = [&o, config = in.config, topology = g->topology](
                 int64_t version) -> absl::StatusOr<std::unique_ptr<RankPlacement>> {
      ASSIGN_OR_RETURN(const PlacementSource source,
                       FetchPlacementSource(o.planner, version, o.attention == AttentionMode::kTp));
      return BuildRankPlacement(source, *config, o.ranks, o.use_layer_tables, topology.get());
    };
  }
  g->rollout = std::make_unique<PlacementRollout>(*g->model, std::move(stager), no_stager,
                                                  o.rollout_mb_per_s);
  GroupEngineOptions engine_options = o.engine;
  engine_options.rollout = g->rollout.get();
  engine_options.routing_sampler = in.sampler;
  engine_options.batch.tokenizer = in.tokenizer;
  if (engine_options.batch.eos_ids.empty()) engine_options.batch.eos_ids = in.config->eos_token_ids;
  if (in.cuda != nullptr) {
    const TpServing tp{.local_config = &g->model->local_config(),
                       .predictor = g->model->predictor(),
                       .token_balance_eps = g->model->token_balance_eps()};
    const bool attention_tp = g->model->attention() == AttentionMode::kTp;
    ASSIGN_OR_RETURN(g->device,
                     in.cuda->UseForServing(*in.config, g->model->weights(), g->model->placement(),
                                            {.address = o.rendezvous,
                                             .rank = o.rank,
                                             .size = o.ranks,
                                             .hostname = o.host,
                                             .timeout = o.connect_timeout},
                                            {.device = o.cuda_device,
                                             .bf16 = o.cuda_bf16,
                                             .fp8 = o.cuda_fp8,
                                             .topology = g->topology.get()},
                                            attention_tp ? &tp : nullptr, engine_options.batch));
    engine_options.device = g->device->rank_forward();
    if (engine_options.device == nullptr) {
      return absl::InternalError("the device backend's serving session has no rank forward");
    }
    g->rollout->set_device(engine_options.device);
    // The device holds the weights now: no host copy stays (a rollout's gained experts go
    // straight from the checkpoint to the device).
    ASSIGN_OR_RETURN(const int64_t released, g->model->ReleaseHostWeights());
    LOG(INFO) << "rank " << o.rank << ": forward on " << g->device->Describe() << "; "
              << released / (1 << 20) << " MiB of host weights released";
  }
  ASSIGN_OR_RETURN(g->engine, GroupEngine::Create(*g->model, engine_options));
  return g;
}

}  // namespace semmoe::engine
