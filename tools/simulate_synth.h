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
  std::string params;             // "skew,token,domain,layer": skip the fit.
  std::string out;
};

// Prints one JSON object: the shape, the parameters, the target and the achieved statistics.
absl::StatusOr<int> SynthTrace(const planner::sim::ModelShape& shape, const SynthOptions& o);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_SIMULATE_SYNTH_H_
