#include "planner/affinity/testing/real_scale.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "planner/affinity/byte_io.h"

namespace semmoe::planner::testing {

int RealScaleVersion::PreferredDevice(size_t seen_index) const {
  return static_cast<int>(seen_index % placement.num_devices());
}

RealScaleVersion MakeRealScaleVersion(const RealScaleShape& s) {
  std::vector<int> layers(s.layers);
  std::iota(layers.begin(), layers.end(), 0);
  RealScaleVersion v{.placement = *Placement::Random(layers, s.experts, s.devices, s.seed)};
  std::mt19937_64 rng(s.seed);
  for (uint32_t i = 0; i < s.seen; ++i) {
    v.seen.push_back(static_cast<uint32_t>(uint64_t{i} * s.vocab / s.seen));
  }
  std::string& out = v.affinity;
  out.reserve(s.seen * s.layers * (2 + 6 * s.top_k) + s.vocab * 8 + 64);
  out.append("SMAFFIN1", 8);
  PutBytes<uint32_t>(out, s.layers);
  PutBytes<uint32_t>(out, s.experts);
  PutBytes<uint32_t>(out, s.seen);
  for (int i = 0; i < s.layers * s.experts; ++i) PutBytes<float>(out, 1.0f / s.experts);
  std::uniform_real_distribution<float> weight(0.05f, 1.0f);
  std::vector<int> experts;
  std::vector<float> p(s.top_k);
  for (uint32_t i = 0; i < s.seen; ++i) {
    PutBytes<uint32_t>(out, v.seen[i]);
    const int home = v.PreferredDevice(i);
    for (int l = 0; l < s.layers; ++l) {
      // Most of the top-k on the preferred device, the rest anywhere else.
      std::vector<int> local = v.placement.ExpertsOn(l, home);
      std::shuffle(local.begin(), local.end(), rng);
      const int on_home = std::min<int>(local.size(), s.top_k - s.top_k / 4);
      experts.assign(local.begin(), local.begin() + on_home);
      while (static_cast<int>(experts.size()) < s.top_k) {
        const int e = static_cast<int>(rng() % s.experts);
        if (std::find(experts.begin(), experts.end(), e) == experts.end()) experts.push_back(e);
      }
      std::sort(experts.begin(), experts.end());
      float total = 0;
      for (float& x : p) total += (x = weight(rng));
      PutBytes<uint16_t>(out, static_cast<uint16_t>(s.top_k));
      for (int k = 0; k < s.top_k; ++k) {
        PutBytes<uint16_t>(out, static_cast<uint16_t>(experts[k]));
        PutBytes<float>(out, p[k] / total);
      }
    }
  }
  // Every unseen id borrows the seen id just below it (or the first).
  out.append("NEARBY01", 8);
  PutBytes<uint32_t>(out, s.vocab - s.seen);
  size_t next = 0;
  for (uint32_t id = 0; id < s.vocab; ++id) {
    while (next < v.seen.size() && v.seen[next] < id) ++next;
    if (next < v.seen.size() && v.seen[next] == id) continue;
    PutBytes<uint32_t>(out, id);
    PutBytes<uint32_t>(out, v.seen[next == 0 ? 0 : next - 1]);
  }
  return v;
}

}  // namespace semmoe::planner::testing
