#include "engine/parallel/device_predictor.h"

#include <algorithm>

namespace semmoe::engine {
namespace {

// The share of a token's expected experts on each device.
template <typename ProbFn>
std::vector<float> Shares(const planner::Placement& placement, int layer, ProbFn prob) {
  std::vector<float> share(placement.num_devices(), 0.0f);
  for (int e = 0; e < placement.num_experts(); ++e) {
    const float p = static_cast<float>(prob(e));
    for (int32_t d : placement.HoldersOf(layer, e)) share[d] += p;  // Replicas count too.
  }
  return share;
}

}  // namespace

DevicePredictor::DevicePredictor(const planner::TokenAffinity& affinity,
                                 const planner::Placement& placement,
                                 planner::TransitionTable transitions)
    : affinity_(affinity),
      placement_(placement),
      num_devices_(placement.num_devices()),
      transitions_(std::move(transitions)) {
  const int layers = placement.num_layers();
  by_token_.resize(layers);
  unseen_.resize(layers);
  const std::vector<uint32_t> seen = affinity.SeenTokens();
  // A token id never in the vocabulary scores the marginal (see TokenAffinity::Probability).
  constexpr uint32_t kUnseen = 0xffffffffu;
  const auto fallbacks = affinity.Fallbacks();  // Unseen ids with a nearest seen token.
  for (int l = 0; l < layers && l < affinity.num_layers(); ++l) {
    unseen_[l] = Shares(placement, l, [&](int e) { return affinity.Probability(l, kUnseen, e); });
    by_token_[l].reserve(seen.size());
    for (uint32_t v : seen) {
      by_token_[l][static_cast<int32_t>(v)] =
          Shares(placement, l, [&](int e) { return affinity.Probability(l, v, e); });
    }
    if (l == 0) {
      stand_in_.reserve(fallbacks.size());
      for (const auto& [unseen, seen] : fallbacks) stand_in_[unseen] = seen;
    }
  }
}

void DevicePredictor::Score(int moe_layer, absl::Span<const int32_t> tokens,
                            absl::Span<const int32_t> previous, absl::Span<const int32_t> prev2,
                            absl::Span<const int32_t> prev1, absl::Span<float> scores) const {
  const bool context = affinity_.num_contexts() > 0 && previous.size() == tokens.size();
  const int g = num_devices_;
  const auto& table = by_token_[moe_layer];
  const bool history = uses_history() && moe_layer >= 1 &&
                       moe_layer < static_cast<int>(transitions_.layers.size()) &&
                       prev1.size() == tokens.size() && prev2.size() == tokens.size();
  for (size_t t = 0; t < tokens.size(); ++t) {
    auto it = table.find(tokens[t]);
    if (it == table.end()) {
      auto near = stand_in_.find(tokens[t]);
      if (near != stand_in_.end()) it = table.find(near->second);
    }
    const std::vector<float>& share = it == table.end() ? unseen_[moe_layer] : it->second;
    float* row = scores.data() + t * g;
    if (context && previous[t] >= 0 && it != table.end() && tokens[t] >= 0) {
      affinity_.ContextShares(moe_layer, static_cast<uint32_t>(previous[t]),
                              static_cast<uint32_t>(tokens[t]), placement_, row);
    } else {
      std::copy(share.begin(), share.end(), row);
    }
    if (history && prev1[t] >= 0) {
      const int p2 = moe_layer >= 2 ? prev2[t] : -1;
      const size_t slot = static_cast<size_t>(p2 + 1) * g + prev1[t];
      const std::vector<planner::TransitionTable::Entry>& a = transitions_.layers[moe_layer];
      if (slot < a.size() && a[slot].device >= 0 &&
          a[slot].confidence > *std::max_element(row, row + g)) {
        std::fill(row, row + g, 0.0f);
        row[a[slot].device] = a[slot].confidence;
      }
    }
  }
}

int64_t PredictorTables::bytes() const {
  int64_t n =
      static_cast<int64_t>(row_of_token.size()) * 4 + static_cast<int64_t>(context_keys.size()) * 8;
  for (const Layer& l : layers) {
    n += static_cast<int64_t>(l.shares.size() + l.context_shares.size() + l.a_confidence.size()) *
             4 +
         static_cast<int64_t>(l.a_device.size()) * 4;
  }
  return n;
}

PredictorTables DevicePredictor::Tables() const {
  const int g = num_devices_;
  PredictorTables t;
  t.devices = g;
  const std::vector<uint32_t> seen = affinity_.SeenTokens();
  const auto fallbacks = affinity_.Fallbacks();
  const auto pairs = affinity_.ContextPairs();
  uint32_t vocab = 0;
  for (uint32_t v : seen) vocab = std::max(vocab, v + 1);
  for (const auto& [unseen, stand_in] : fallbacks) vocab = std::max(vocab, unseen + 1);
  t.row_of_token.assign(vocab, -1);
  for (size_t i = 0; i < seen.size(); ++i) t.row_of_token[seen[i]] = static_cast<int32_t>(i);
  for (const auto& [unseen, stand_in] : fallbacks) {
    t.row_of_token[unseen] = t.row_of_token[stand_in];
  }
  t.unseen_row = static_cast<int64_t>(seen.size());
  for (const auto& [prev, token] : pairs) {
    t.context_keys.push_back((static_cast<uint64_t>(prev) << 32) | token);
  }
  t.layers.resize(by_token_.size());
  for (size_t l = 0; l < by_token_.size(); ++l) {
    const int layer = static_cast<int>(l);
    PredictorTables::Layer& out = t.layers[l];
    out.shares.assign((seen.size() + 1) * g, 0.0f);
    for (size_t i = 0; i <= seen.size(); ++i) {  // The last row: an id with no row (−1).
      const int32_t id = i < seen.size() ? static_cast<int32_t>(seen[i]) : -1;
      Score(layer, absl::MakeConstSpan(&id, 1), {}, {}, {},
            absl::MakeSpan(out.shares.data() + i * g, g));
    }
    out.context_shares.assign(pairs.size() * g, 0.0f);
    for (size_t i = 0; i < pairs.size(); ++i) {
      const int32_t id = static_cast<int32_t>(pairs[i].second);
      const int32_t prev = static_cast<int32_t>(pairs[i].first);
      Score(layer, absl::MakeConstSpan(&id, 1), absl::MakeConstSpan(&prev, 1), {}, {},
            absl::MakeSpan(out.context_shares.data() + i * g, g));
    }
    if (l >= 1 && l < transitions_.layers.size()) {
      const std::vector<planner::TransitionTable::Entry>& a = transitions_.layers[l];
      const size_t slots = static_cast<size_t>(g + 1) * g;
      out.a_device.assign(slots, -1);
      out.a_confidence.assign(slots, 0.0f);
      for (size_t s = 0; s < slots && s < a.size(); ++s) {
        out.a_device[s] = a[s].device;
        out.a_confidence[s] = a[s].confidence;
      }
    }
  }
  return t;
}

}  // namespace semmoe::engine
