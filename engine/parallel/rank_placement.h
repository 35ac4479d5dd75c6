// RankPlacement: what a rank serves with besides its weights — the placement, and for shuffled
// Attention-TP the tables that predict tokens' devices — built from a placement version's bytes
// (a file, or a version from the planner) and checked against the model and the group. A group
// starts with one and a rollout (placement_rollout.h) switches to another.
#ifndef SEMMOE_ENGINE_PARALLEL_RANK_PLACEMENT_H_
#define SEMMOE_ENGINE_PARALLEL_RANK_PLACEMENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/parallel/device_predictor.h"
#include "engine/text/config.h"
#include "planner/affinity/token_affinity.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

// A placement's bytes and where they came from (for errors and the operator).
struct PlacementSource {
  int64_t version = 0;         // The planner's version number; 0: a file or vanilla.
  std::string placement_json;  // "" with an empty placement_name: vanilla.
  std::string affinity;        // TokenAffinity bytes; "": none (plain Attention-TP order).
  std::string layer_tables;    // TransitionTable bytes; "": none.
  std::string placement_name, affinity_name, layers_name;
};

struct RankPlacement {
  explicit RankPlacement(planner::Placement p) : placement(std::move(p)) {}
  int64_t version = 0;
  std::string description;  // What the rank serves with, e.g. "version 3 (planner …)'s placement".
  planner::Placement placement;
  // Shuffled Attention-TP only (else null). The predictor borrows `affinity` and `placement`:
  // a RankPlacement never moves (it lives behind a unique_ptr).
  std::unique_ptr<planner::TokenAffinity> affinity;
  std::unique_ptr<DevicePredictor> predictor;
};

// Parses and checks `source` for `config` on a group of `ranks`: InvalidArgument naming the
// source and the mismatch (another device count, another model, malformed tables).
// `use_layer_tables` false ignores the A tables (the T tables alone predict).
// `topology` (null: one node of `ranks`): FailedPrecondition when the placement was built for
// another one (Placement::CheckServes).
absl::StatusOr<std::unique_ptr<RankPlacement>> BuildRankPlacement(
    const PlacementSource& source, const model::ModelConfig& config, int ranks,
    bool use_layer_tables = true, const planner::Topology* topology = nullptr);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_RANK_PLACEMENT_H_
