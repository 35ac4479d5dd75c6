#include "engine/parallel/rank_placement.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/affinity/transition_table.h"

namespace semmoe::engine {
namespace {

absl::StatusOr<planner::Placement> ParsePlacement(const PlacementSource& s,
                                                  const model::ModelConfig& config, int ranks) {
  if (s.placement_name.empty()) {
    return planner::Placement::Vanilla(config.MoeLayers(), config.num_experts, ranks);
  }
  absl::StatusOr<planner::Placement> p = planner::Placement::FromJson(s.placement_json);
  if (!p.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(s.placement_name, ": ", p.status().message()));
  }
  if (p->num_devices() != ranks) {
    return absl::InvalidArgumentError(absl::StrCat(s.placement_name, " places experts on ",
                                                   p->num_devices(), " devices but the group has ",
                                                   ranks, " ranks"));
  }
  if (p->moe_layers() != config.MoeLayers() || p->num_experts() != config.num_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.placement_name, " is for another model (", p->num_layers(), " MoE layers × ",
                     p->num_experts(), " experts; this one has ", config.MoeLayers().size(), " × ",
                     config.num_experts, ")"));
  }
  return p;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RankPlacement>> BuildRankPlacement(
    const PlacementSource& s, const model::ModelConfig& config, int ranks, bool use_layer_tables,
    const planner::Topology* topology) {
  ASSIGN_OR_RETURN(planner::Placement placement, ParsePlacement(s, config, ranks));
  if (topology != nullptr) {
    if (absl::Status serves = placement.CheckServes(*topology); !serves.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          s.placement_name.empty() ? "placement vanilla" : s.placement_name, ": ",
          serves.message()));
    }
  }
  auto out = std::make_unique<RankPlacement>(std::move(placement));
  out->version = s.version;
  out->description = s.placement_name.empty() ? "placement vanilla" : s.placement_name;
  if (s.affinity.empty()) return out;
  const planner::Placement& p = out->placement;
  absl::StatusOr<planner::TokenAffinity> a = planner::TokenAffinity::Deserialize(s.affinity);
  if (!a.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(s.affinity_name, ": ", a.status().message()));
  }
  if (a->num_layers() != p.num_layers() || a->num_experts() != p.num_experts()) {
    return absl::InvalidArgumentError(absl::StrCat(s.affinity_name, ": tables for ",
                                                   a->num_layers(), " layers × ", a->num_experts(),
                                                   " experts do not match the placement"));
  }
  out->affinity = std::make_unique<planner::TokenAffinity>(std::move(*a));
  planner::TransitionTable transitions;
  if (!s.layer_tables.empty() && use_layer_tables) {
    absl::StatusOr<planner::TransitionTable> t =
        planner::TransitionTable::Deserialize(s.layer_tables);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(s.layers_name, ": ", t.status().message()));
    }
    if (static_cast<int>(t->layers.size()) != p.num_layers() || t->num_devices != p.num_devices()) {
      return absl::InvalidArgumentError(absl::StrCat(s.layers_name, ": tables for ",
                                                     t->layers.size(), " layers × ", t->num_devices,
                                                     " devices do not match the placement"));
    }
    transitions = std::move(*t);
  }
  absl::StrAppend(&out->description, "; Attention-TP predicts tokens' devices with ",
                  s.affinity_name,
                  transitions.layers.empty() ? "" : absl::StrCat(" and ", s.layers_name),
                  !s.layer_tables.empty() && !use_layer_tables
                      ? " alone (--tp_layer_tables=false: its layer tables are unused)"
                      : "");
  out->predictor = std::make_unique<DevicePredictor>(*out->affinity, p, std::move(transitions));
  return out;
}

}  // namespace semmoe::engine
