#include "planner/placement/placement.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
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
  return absl::OkStatus();
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
  return j.dump();
}

absl::StatusOr<Placement> Placement::FromJson(absl::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
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
  if (layers == j.end() || !layers->is_array() || device_of == j.end() ||
      !device_of->is_array()) {
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
  RETURN_IF_ERROR(p.Init());
  return p;
}

}  // namespace semmoe::planner
