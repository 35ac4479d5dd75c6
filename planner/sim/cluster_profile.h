// ClusterProfile: what the scale model (planner/sim) knows of a cluster's hardware — per-device
// compute and memory bandwidth, the links inside and between nodes, the collectives' fixed costs —
// each figure with the source it came from (a datasheet, a published measurement, a fit to the
// network lab, or a stated assumption). Profiles are JSON files (docs/SIMULATE.md, "Profiles"):
//   {"format": "semmoe-cluster-profile", "name": "h200", "description": "...",
//    "flops": {"value": 5.9e14, "source": "..."}, ...}
// Built in: `lab` (fitted to tools/netlab), `h100` and `h200` (nodes of 8 GPUs); anything else
// is a path. A missing figure, a figure without a source, a negative or non-finite value or an
// unknown field is refused, naming it.
#ifndef SEMMOE_PLANNER_SIM_CLUSTER_PROFILE_H_
#define SEMMOE_PLANNER_SIM_CLUSTER_PROFILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::planner::sim {

struct Figure {
  double value = 0;
  std::string source;
};

struct ClusterProfile {
  std::string name, description;
  Figure ranks_per_node;      // Devices a node holds (the default topology's M).
  Figure flops;               // FLOP/s one device reaches on the model's GEMMs.
  Figure mem_bw;              // B/s one device streams weights and KV at.
  Figure intra_bw;            // B/s per device and direction inside a node (NVLink; loopback).
  Figure inter_bw;            // B/s per device (or per node, inter_per_node) and direction.
  Figure inter_per_node;      // 1: inter_bw is the node's one link, shared by its ranks.
  Figure a2a_efficiency;      // Fraction of a link's rate an all-to-all reaches.
  Figure collective_latency;  // s per collective call, whatever it carries.
  Figure message_latency;     // s per peer a rank messages in one collective.
  Figure kernel_overhead;     // s per operator (attention, experts, MLP) and layer.
  Figure step_overhead;       // s per forward step (scheduling, sampling, the host).
  Figure step_skew;           // s the ranks' starts of a step spread: the first MoE layer's wait.
  Figure host_cores;          // Processors the ranks share (0: each rank its own, as GPUs).
  Figure shared_core_wait;    // s a MoE-layer call waits per extra rank on a shared processor.
  // Host CPU seconds per request spent outside the ranks on the processors they share (the
  // router, loadgen, RPC): at arrival rate λ it takes λ × this of host_cores, and the ranks' work
  // stretches by host_cores / (host_cores − λ × this). Measured by the lab per run (bench.sh's
  // host_cpu); ignored without host_cores.
  Figure host_cpu_per_request;
  Figure weight_bytes;  // Bytes per weight value.
  Figure wire_bytes;    // Bytes per activation value in the dispatch and combine.
  Figure kv_bytes;      // Bytes per KV-cache value.

  // Name and figure, in file order (for printing, overriding and the sensitivity table).
  std::vector<std::pair<std::string, Figure*>> Figures();
  std::vector<std::pair<std::string, const Figure*>> Figures() const;
};

// Parses a profile's JSON text; `what` names it in errors.
absl::StatusOr<ClusterProfile> ParseClusterProfile(absl::string_view json, absl::string_view what);
// A built-in profile by name (lab, h100, h200), else the file at `name_or_path`.
absl::StatusOr<ClusterProfile> LoadClusterProfile(const std::string& name_or_path);
// The built-in profiles' names.
std::vector<std::string> BuiltinProfiles();
// A --cluster flag's value as LoadClusterProfile takes it: a built-in name (or "") as is, else a
// profile file's path relative to where the user ran the command (common/file.h UserPath).
std::string ClusterFlagValue(const std::string& value);
// Sets figure `name` (e.g. "inter_bw") to `value`, its source "--set on the command line".
// The checks every profile passes, from a file or after --set: every figure finite and not
// negative; rates, sizes and ranks_per_node positive; a2a_efficiency at most 1; inter_per_node
// 0 or 1; ranks_per_node whole, both it and host_cores in range. Errors are "WHAT: FIGURE: why".
inline constexpr double kMaxRanksPerNode = 1024;
inline constexpr double kMaxHostCores = 65536;
absl::Status ValidateClusterProfile(const ClusterProfile& profile, absl::string_view what);

absl::Status OverrideFigure(ClusterProfile& profile, absl::string_view name, double value);
// The profile as JSON text (the file format).
std::string ProfileJson(const ClusterProfile& profile);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_CLUSTER_PROFILE_H_
