// One formation of a rank's expert-parallel group: everything that holds the group's
// communicator — this rank's share of the model under the launch placement, its rollout and its
// GroupEngine loop (and the GPU session when it serves from one). A rank whose group fails drops
// it and forms the next one (rank_server.cc), so nothing of a broken mesh is reused.
#ifndef SEMMOE_ENGINE_SERVER_RANK_GROUP_H_
#define SEMMOE_ENGINE_SERVER_RANK_GROUP_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "engine/backend/device_backend.h"
#include "engine/parallel/group_engine.h"
#include "engine/parallel/group_epoch.h"
#include "engine/parallel/placement_rollout.h"
#include "engine/parallel/rank_model.h"
#include "engine/parallel/rank_placement.h"
#include "engine/parallel/routing_sampler.h"
#include "engine/server/rank_server.h"
#include "engine/text/config.h"
#include "engine/text/tokenizer.h"

namespace semmoe::engine {

// Members are destroyed in reverse order: the engine first, the communicator last.
struct RankGroup {
  int64_t epoch = 0;
  // The group's nodes: RankServerOptions::topology, or one node of every rank.
  std::shared_ptr<const planner::Topology> topology;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<RankModel> model;
  std::unique_ptr<PlacementRollout> rollout;
  std::unique_ptr<DeviceSession> device;
  std::unique_ptr<GroupEngine> engine;  // Not started.
};

// What every formation is built from (borrowed; outlives the groups).
struct RankGroupInputs {
  const RankServerOptions* options = nullptr;
  const model::ModelConfig* config = nullptr;
  const PlacementSource* source = nullptr;      // The launch placement and its tables.
  const model::Tokenizer* tokenizer = nullptr;  // May be null.
  RoutingSampler* sampler = nullptr;            // May be null.
  DeviceBackend* cuda = nullptr;                // Null: the CPU forward.
};

// Builds the group on the communicator `joined` brought. Errors name the model or placement.
absl::StatusOr<std::unique_ptr<RankGroup>> FormRankGroup(const RankGroupInputs& in,
                                                         EpochGroup joined);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_RANK_GROUP_H_
