#include "planner/placement/placement.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("placement: ", what));
}

absl::Status CheckShape(const std::vector<int>& moe_layers, int num_experts, int num_devices) {
  if (moe_layers.empty()) return Bad("no MoE layers");
  if (num_experts <= 0 || num_devices <= 0) return Bad("num_experts and num_devices must be > 0");
  if (num_experts % num_devices != 0) {
    return Bad(absl::StrCat(num_devices, " devices do not divide ", num_experts,
                            " experts into equal slots"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Placement::Init() {
  // Replicas (if parsed) are checked after the homes.
  RETURN_IF_ERROR(CheckShape(moe_layers_, num_experts_, num_devices_));
  if (device_of_.size() != moe_layers_.size()) {
    return Bad(absl::StrCat("device_of has ", device_of_.size(), " layers, moe_layers ",
                            moe_layers_.size()));
  }
  const int per_device = num_experts_ / num_devices_;
  local_slot_.assign(device_of_.size(), std::vector<int32_t>(num_experts_, 0));
  for (size_t l = 0; l < device_of_.size(); ++l) {
    if (static_cast<int>(device_of_[l].size()) != num_experts_) {
      return Bad(absl::StrCat("layer ", l, " assigns ", device_of_[l].size(), " experts, expected ",
                              num_experts_));
    }
    std::vector<int> count(num_devices_, 0);
    for (int e = 0; e < num_experts_; ++e) {
      const int d = device_of_[l][e];
      if (d < 0 || d >= num_devices_) {
        return Bad(absl::StrCat("layer ", l, " expert ", e, ": device ", d, " out of range"));
      }
      local_slot_[l][e] = count[d]++;
    }
    for (int d = 0; d < num_devices_; ++d) {
      if (count[d] != per_device) {
        return Bad(absl::StrCat("layer ", l, ": device ", d, " holds ", count[d],
                                " experts, every device must hold ", per_device));
      }
    }
  }
  return InitReplicas();
}

absl::Status Placement::InitReplicas() {
  const size_t layers = device_of_.size();
  if (replicas_.empty()) {
    replicas_.assign(layers, std::vector<std::vector<int32_t>>(num_devices_));
  }
  if (replicas_.size() != layers) {
    return Bad(absl::StrCat("replicas has ", replicas_.size(), " layers, moe_layers ", layers));
  }
  holds_.assign(layers, std::vector<bool>(static_cast<size_t>(num_devices_) * num_experts_));
  replicas_per_device_ = -1;
  for (size_t l = 0; l < layers; ++l) {
    for (int e = 0; e < num_experts_; ++e) {
      holds_[l][static_cast<size_t>(device_of_[l][e]) * num_experts_ + e] = true;
    }
    if (static_cast<int>(replicas_[l].size()) != num_devices_) {
      return Bad(absl::StrCat("layer ", l, " lists replicas for ", replicas_[l].size(),
                              " devices, expected ", num_devices_));
    }
    for (int d = 0; d < num_devices_; ++d) {
      std::vector<int32_t>& extra = replicas_[l][d];
      std::sort(extra.begin(), extra.end());
      if (replicas_per_device_ < 0) replicas_per_device_ = static_cast<int>(extra.size());
      if (static_cast<int>(extra.size()) != replicas_per_device_) {
        return Bad(absl::StrCat("layer ", l, ": device ", d, " has ", extra.size(),
                                " replicas, every device must have ", replicas_per_device_));
      }
      for (int32_t e : extra) {
        if (e < 0 || e >= num_experts_) {
          return Bad(absl::StrCat("layer ", l, " device ", d, ": replica ", e, " out of range"));
        }
        auto held = holds_[l].begin() + static_cast<int64_t>(d) * num_experts_ + e;
        if (*held) {
          return Bad(absl::StrCat("layer ", l, " device ", d, " already holds expert ", e));
        }
        *held = true;
      }
    }
  }
  if (replicas_per_device_ < 0) replicas_per_device_ = 0;
  holders_.assign(layers, std::vector<std::vector<int32_t>>(num_experts_));
  for (size_t l = 0; l < layers; ++l) {
    for (int e = 0; e < num_experts_; ++e) holders_[l][e].push_back(device_of_[l][e]);
    for (int d = 0; d < num_devices_; ++d) {
      for (int32_t e : replicas_[l][d]) holders_[l][e].push_back(d);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Placement> Placement::WithReplicas(
    std::vector<std::vector<std::vector<int32_t>>> replicas) const {
  Placement p = *this;
  p.replicas_ = std::move(replicas);
  RETURN_IF_ERROR(p.InitReplicas());
  return p;
}

absl::StatusOr<Placement> Placement::FromAssignment(std::vector<int> moe_layers, int num_experts,
                                                    int num_devices,
                                                    std::vector<std::vector<int32_t>> device_of) {
  Placement p;
  p.moe_layers_ = std::move(moe_layers);
  p.num_experts_ = num_experts;
  p.num_devices_ = num_devices;
  p.device_of_ = std::move(device_of);
  RETURN_IF_ERROR(p.Init());
  return p;
}

absl::StatusOr<Placement> Placement::Vanilla(std::vector<int> moe_layers, int num_experts,
                                             int num_devices) {
  RETURN_IF_ERROR(CheckShape(moe_layers, num_experts, num_devices));
  std::vector<int32_t> row(num_experts);
  for (int e = 0; e < num_experts; ++e) {
    row[e] = static_cast<int32_t>(static_cast<int64_t>(e) * num_devices / num_experts);
  }
  std::vector<std::vector<int32_t>> device_of(moe_layers.size(), row);
  return FromAssignment(std::move(moe_layers), num_experts, num_devices, std::move(device_of));
}

absl::StatusOr<Placement> Placement::Random(std::vector<int> moe_layers, int num_experts,
                                            int num_devices, uint64_t seed) {
  RETURN_IF_ERROR(CheckShape(moe_layers, num_experts, num_devices));
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int32_t>> device_of;
  for (size_t l = 0; l < moe_layers.size(); ++l) {
    std::vector<int32_t> slots(num_experts);
    for (int e = 0; e < num_experts; ++e) slots[e] = e * num_devices / num_experts;
    // Fisher-Yates with our own draws: std::shuffle's use of the engine is unspecified.
    for (int i = num_experts - 1; i > 0; --i) std::swap(slots[i], slots[rng() % (i + 1)]);
    device_of.push_back(std::move(slots));
  }
  return FromAssignment(std::move(moe_layers), num_experts, num_devices, std::move(device_of));
}

absl::StatusOr<Placement> Placement::WithTopology(Topology topology) const {
  if (topology.num_ranks() != num_devices_) {
    return Bad(absl::StrCat("topology ", topology.Describe(), " has ", topology.num_ranks(),
                            " ranks, the placement ", num_devices_, " devices"));
  }
  Placement p = *this;
  p.topology_ = std::move(topology);
  return p;
}

absl::Status Placement::CheckServes(const Topology& group) const {
  if (group.num_ranks() != num_devices_) {
    return absl::FailedPreconditionError(
        absl::StrCat("the placement has ", num_devices_, " devices, the group's topology ",
                     group.Describe(), " ", group.num_ranks(), " ranks"));
  }
  return topology_ ? topology_->CheckServes(group) : absl::OkStatus();
}

std::vector<int> Placement::ExpertsOn(int layer, int device) const {
  std::vector<int> experts;
  for (int e = 0; e < num_experts_; ++e) {
    if (device_of_[layer][e] == device) experts.push_back(e);
  }
  return experts;
}

std::string Placement::ToJson() const {
  nlohmann::ordered_json j;
  j["format"] = "semmoe-placement";
  j["version"] = 1;
  j["num_devices"] = num_devices_;
  j["num_experts"] = num_experts_;
  j["moe_layers"] = moe_layers_;
  j["device_of"] = device_of_;
  if (replicas_per_device_ > 0) j["replicas"] = replicas_;
  if (topology_) j["topology"] = nlohmann::ordered_json::parse(topology_->ToJson());
  return j.dump();
}

absl::StatusOr<Placement> Placement::FromJson(absl::string_view text) {
  nlohmann::json j = ParseJsonOrDiscarded(text);
  if (j.is_discarded() || !j.is_object()) return Bad("invalid JSON");
  auto str = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto integer = [&](const char* key) -> absl::StatusOr<int> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0 ||
        it->get<int64_t>() > (1 << 20)) {
      return Bad(absl::StrCat("'", key, "' must be a non-negative integer"));
    }
    return it->get<int>();
  };
  if (str("format") != "semmoe-placement") return Bad("not a semmoe-placement file");
  ASSIGN_OR_RETURN(int version, integer("version"));
  if (version != 1) return Bad(absl::StrCat("version ", version, " is not supported (1)"));
  Placement p;
  ASSIGN_OR_RETURN(p.num_devices_, integer("num_devices"));
  ASSIGN_OR_RETURN(p.num_experts_, integer("num_experts"));
  auto layers = j.find("moe_layers");
  auto device_of = j.find("device_of");
  if (layers == j.end() || !layers->is_array() || device_of == j.end() || !device_of->is_array()) {
    return Bad("'moe_layers' and 'device_of' must be lists");
  }
  for (const auto& l : *layers) {
    if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() > 65535) {
      return Bad("'moe_layers' must hold layer indices");
    }
    p.moe_layers_.push_back(l.get<int>());
  }
  for (const auto& row : *device_of) {
    if (!row.is_array()) return Bad("'device_of' must be a list of lists");
    std::vector<int32_t> devices;
    for (const auto& d : row) {
      if (!d.is_number_integer() || d.get<int64_t>() < INT32_MIN || d.get<int64_t>() > INT32_MAX) {
        return Bad("'device_of' entries must be integers");
      }
      devices.push_back(d.get<int32_t>());
    }
    p.device_of_.push_back(std::move(devices));
  }
  if (auto replicas = j.find("replicas"); replicas != j.end()) {
    if (!replicas->is_array()) return Bad("'replicas' must be a list per layer");
    for (const auto& layer : *replicas) {
      if (!layer.is_array()) return Bad("'replicas' must hold a list per device per layer");
      std::vector<std::vector<int32_t>> per_device;
      for (const auto& device : layer) {
        if (!device.is_array()) return Bad("'replicas' must hold a list per device per layer");
        std::vector<int32_t> experts;
        for (const auto& e : device) {
          if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX) {
            return Bad("'replicas' entries must be expert ids");
          }
          experts.push_back(e.get<int32_t>());
        }
        per_device.push_back(std::move(experts));
      }
      p.replicas_.push_back(std::move(per_device));
    }
  }
  RETURN_IF_ERROR(p.Init());
  if (auto topology = j.find("topology"); topology != j.end()) {
    absl::StatusOr<Topology> t = Topology::FromJson(topology->dump());
    if (!t.ok()) return Bad(t.status().message());
    return p.WithTopology(*std::move(t));
  }
  return p;
}

}  // namespace semmoe::planner
