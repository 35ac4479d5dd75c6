// simulate synth: routing traces at a real shape from the synthetic router fitted to a trace of
// a trained model (docs/SIMULATE.md, "Traces at real shapes").
#ifndef SEMMOE_TOOLS_SIMULATE_SYNTH_H_
#define SEMMOE_TOOLS_SIMULATE_SYNTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/sim/model_shape.h"

namespace semmoe::tools {

struct SynthOptions {
  std::vector<std::string> like;  // The trained model's traces whose statistics are matched.
  std::string domains;            // Prompts JSONL with "id" and "domain" (optional).
  int64_t requests = 0;           // Requests to generate (0: the like traces'); cycled.
  uint64_t seed = 1;
  std::string params;  // "skew,token,domain,layer": skip the fit.
  std::string out;
  // The locality of the trace: "trained" (the statistics of --like), "paper" (the trained fit's
  // domain bias raised until the planner's DP placement reaches the paper's in-sample
  // LAR at its own setting — DeepSeek-V2-Lite's shape for DeepSeek targets, Qwen3-30B-A3B's for
  // the others, EP 4: 0.65, the middle of its 62-68 %) or "none" (the biases off: the trained
  // fit's popularity skew alone).
  std::string calibrate = "trained";
  // Group-limited routing "GROUPS:TOP" (DeepSeek-V3's 8:4); empty: off.
  std::string node_limit;
};

// The paper's in-sample DP LAR at EP 4 that --calibrate paper aims at, and its range.
inline constexpr double kPaperLar = 0.65, kPaperLarLow = 0.62, kPaperLarHigh = 0.68;

// Prints one JSON object: the shape, the parameters, the target and the achieved statistics.
absl::StatusOr<int> SynthTrace(const planner::sim::ModelShape& shape, const SynthOptions& o);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_SIMULATE_SYNTH_H_
