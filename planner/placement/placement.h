// Placement: which device (EP rank) holds each expert, per MoE layer. The planner writes
// placements, the engine loads only its experts by them, the router and evaluation read them.
//
// Every device holds the same number of experts per layer (N/G; G must divide N), so each rank
// has the same slots. Optionally every device also holds R replicas of other devices' (hot)
// experts per layer: a token on that device then uses its local replica; tokens elsewhere use the
// expert's home device. JSON form (stable, versioned):
//   {"format": "semmoe-placement", "version": 1, "num_devices": G, "num_experts": N,
//    "moe_layers": [model layer index per MoE layer], "device_of": [[device per expert] per layer],
//    "replicas": [[[expert ids] per device] per layer],     ("replicas" only when R > 0)
//    "topology": {topology.h's JSON}}                         ("topology" only when built for one)
#ifndef SEMMOE_PLANNER_PLACEMENT_PLACEMENT_H_
#define SEMMOE_PLANNER_PLACEMENT_PLACEMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "planner/placement/topology.h"

namespace semmoe::planner {

class Placement {
 public:
  // Expert e on device ⌊e·G/N⌋ (contiguous blocks), the usual EP layout.
  static absl::StatusOr<Placement> Vanilla(std::vector<int> moe_layers, int num_experts,
                                           int num_devices);
  // A seeded uniformly random balanced placement.
  static absl::StatusOr<Placement> Random(std::vector<int> moe_layers, int num_experts,
                                          int num_devices, uint64_t seed);
  // From explicit assignments; InvalidArgument unless every layer gives every device exactly
  // N/G experts.
  static absl::StatusOr<Placement> FromAssignment(std::vector<int> moe_layers, int num_experts,
                                                  int num_devices,
                                                  std::vector<std::vector<int32_t>> device_of);
  static absl::StatusOr<Placement> FromJson(absl::string_view json);
  std::string ToJson() const;

  int num_layers() const { return static_cast<int>(moe_layers_.size()); }
  int num_experts() const { return num_experts_; }
  int num_devices() const { return num_devices_; }
  int experts_per_device() const { return num_experts_ / num_devices_; }
  const std::vector<int>& moe_layers() const { return moe_layers_; }

  // REQUIRES: 0 <= layer < num_layers() (an index into moe_layers()), 0 <= expert < N.
  int Device(int layer, int expert) const { return device_of_[layer][expert]; }
  // The expert's slot among its device's experts (ascending expert id), in [0, N/G).
  int LocalSlot(int layer, int expert) const { return local_slot_[layer][expert]; }
  // The experts on `device` at `layer`, ascending (slot order). Replicas are not included.
  std::vector<int> ExpertsOn(int layer, int device) const;

  // Replicas: R extra experts per device per layer (0: none).
  int replicas_per_device() const { return replicas_per_device_; }
  // The replicas on `device` at `layer`, ascending.
  const std::vector<int32_t>& ReplicasOn(int layer, int device) const {
    return replicas_[layer][device];
  }
  // Whether `device` holds `expert` at `layer` (its home or a replica).
  bool Holds(int layer, int device, int expert) const {
    return holds_[layer][static_cast<size_t>(device) * num_experts_ + expert];
  }
  // The devices holding `expert` at `layer`: its home first, then replicas (ascending).
  const std::vector<int32_t>& HoldersOf(int layer, int expert) const {
    return holders_[layer][expert];
  }
  // The device that runs `expert` for a token on `device`: that device if it holds the expert,
  // else the expert's home.
  int Serving(int layer, int expert, int device) const {
    return Holds(layer, device, expert) ? device : Device(layer, expert);
  }
  // This placement plus replicas[layer][device] = expert ids; InvalidArgument unless every device
  // gets the same number, none twice, none it already holds.
  absl::StatusOr<Placement> WithReplicas(
      std::vector<std::vector<std::vector<int32_t>>> replicas) const;

  // The topology this placement was built for; null for a flat placement (any topology).
  const Topology* topology() const { return topology_ ? &*topology_ : nullptr; }
  // This placement recorded as built for `topology`; InvalidArgument unless it has as many ranks
  // as the placement has devices.
  absl::StatusOr<Placement> WithTopology(Topology topology) const;
  // Whether a group running `group` may serve this placement: OK for a flat placement or the
  // same topology, else FailedPrecondition naming both (Topology::CheckServes).
  absl::Status CheckServes(const Topology& group) const;

 private:
  Placement() = default;
  absl::Status Init();
  absl::Status InitReplicas();

  std::vector<int> moe_layers_;
  int num_experts_ = 0;
  int num_devices_ = 0;
  std::vector<std::vector<int32_t>> device_of_;
  std::vector<std::vector<int32_t>> local_slot_;
  int replicas_per_device_ = 0;
  std::vector<std::vector<std::vector<int32_t>>> replicas_;  // [layer][device] → experts
  std::vector<std::vector<bool>> holds_;                     // [layer][device · N + expert]
  std::vector<std::vector<std::vector<int32_t>>> holders_;   // [layer][expert] → devices
  std::optional<Topology> topology_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PLACEMENT_PLACEMENT_H_
