// A placement version at a real model's scale, generated (seeded) for tests and benchmarks: the
// Qwen3-30B-A3B shape by default (151,936-token vocabulary, 48 MoE layers × 128 experts, top-8)
// on G = 8 devices. `seen` token ids have affinity rows (a trace's worth); every other id
// borrows one of them (the embedding fallback's NEARBY01 section), as a version built with the
// model's embeddings has.
//
// The rows carry signal: seen token i prefers the experts of device i mod G at every layer, so a
// prompt of such tokens fits that rank.
#ifndef SEMMOE_PLANNER_AFFINITY_TESTING_REAL_SCALE_H_
#define SEMMOE_PLANNER_AFFINITY_TESTING_REAL_SCALE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "planner/placement/placement.h"

namespace semmoe::planner::testing {

struct RealScaleShape {
  uint32_t vocab = 151936;
  int layers = 48;
  int experts = 128;
  int top_k = 8;
  int devices = 8;
  uint32_t seen = 4096;
  uint64_t seed = 1;
};

struct RealScaleVersion {
  Placement placement;
  std::string affinity;  // TokenAffinity::Serialize bytes.
  // The seen ids; seen[i] prefers device i mod G.
  std::vector<uint32_t> seen;
  int PreferredDevice(size_t seen_index) const;
};

RealScaleVersion MakeRealScaleVersion(const RealScaleShape& shape = {});

}  // namespace semmoe::planner::testing

#endif  // SEMMOE_PLANNER_AFFINITY_TESTING_REAL_SCALE_H_
