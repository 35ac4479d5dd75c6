#include "engine/parallel/device_predictor.h"

namespace semmoe::engine {
namespace {

// The device with the most probability mass for a token (lowest id on ties).
template <typename ProbFn>
DevicePrediction Best(const planner::Placement& placement, int layer, ProbFn prob) {
  std::vector<double> mass(placement.num_devices(), 0.0);
  for (int e = 0; e < placement.num_experts(); ++e) mass[placement.Device(layer, e)] += prob(e);
  DevicePrediction best{0, static_cast<float>(mass[0])};
  for (int d = 1; d < placement.num_devices(); ++d) {
    if (mass[d] > best.confidence) best = {d, static_cast<float>(mass[d])};
  }
  return best;
}

}  // namespace

DevicePredictor::DevicePredictor(const planner::TokenAffinity& affinity,
                                 const planner::Placement& placement,
                                 planner::TransitionTable transitions)
    : num_devices_(placement.num_devices()), transitions_(std::move(transitions)) {
  const int layers = placement.num_layers();
  by_token_.resize(layers);
  unseen_.resize(layers);
  const std::vector<uint32_t> seen = affinity.SeenTokens();
  // A token id never in the vocabulary scores the marginal (see TokenAffinity::Probability).
  constexpr uint32_t kUnseen = 0xffffffffu;
  for (int l = 0; l < layers && l < affinity.num_layers(); ++l) {
    unseen_[l] = Best(placement, l, [&](int e) { return affinity.Probability(l, kUnseen, e); });
    by_token_[l].reserve(seen.size());
    for (uint32_t v : seen) {
      by_token_[l][static_cast<int32_t>(v)] =
          Best(placement, l, [&](int e) { return affinity.Probability(l, v, e); });
    }
  }
}

std::unique_ptr<DevicePredictor> DevicePredictor::Create(
    const planner::TokenAffinity& affinity, const planner::Placement& placement,
    const planner::LayerAffinity* transitions) {
  return std::make_unique<DevicePredictor>(
      affinity, placement, transitions != nullptr ? transitions->Table() : planner::TransitionTable{});
}

void DevicePredictor::Predict(int moe_layer, absl::Span<const int32_t> tokens,
                              absl::Span<const int32_t> prev2, absl::Span<const int32_t> prev1,
                              absl::Span<int32_t> device, absl::Span<float> confidence) const {
  const auto& table = by_token_[moe_layer];
  const bool history = uses_history() && moe_layer >= 1 &&
                       moe_layer < static_cast<int>(transitions_.layers.size()) &&
                       prev1.size() == tokens.size() && prev2.size() == tokens.size();
  for (size_t t = 0; t < tokens.size(); ++t) {
    auto it = table.find(tokens[t]);
    DevicePrediction p = it == table.end() ? unseen_[moe_layer] : it->second;
    if (history && prev1[t] >= 0) {
      const int p2 = moe_layer >= 2 ? prev2[t] : -1;
      const size_t slot = static_cast<size_t>(p2 + 1) * num_devices_ + prev1[t];
      const std::vector<planner::TransitionTable::Entry>& a = transitions_.layers[moe_layer];
      if (slot < a.size() && a[slot].device >= 0 && a[slot].confidence > p.confidence) {
        p = {a[slot].device, a[slot].confidence};
      }
    }
    device[t] = p.device;
    confidence[t] = p.confidence;
  }
}

}  // namespace semmoe::engine
