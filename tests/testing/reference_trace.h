// A routing trace of prompts from a model's own single-device prefill (the product's CPU forward,
// engine/forward/cpu_forward.h): what the planner's affinity
// tables are built from in the emulation tests of the parallel forward (tests/gpu_*_test).
#ifndef SEMMOE_TESTS_TESTING_REFERENCE_TRACE_H_
#define SEMMOE_TESTS_TESTING_REFERENCE_TRACE_H_

#include <cstdint>
#include <vector>

#include "engine/model/weights.h"
#include "engine/text/config.h"
#include "planner/trace/trace_set.h"

namespace semmoe::testing {

// One request per prompt ("p0", "p1", ...), each token's top-k experts at every MoE layer.
// Failures are gtest failures.
planner::trace::TraceSet ReferenceTrace(const engine::model::ModelConfig& c,
                                        const engine::model::ModelWeights& weights,
                                        const std::vector<std::vector<int32_t>>& prompts);

}  // namespace semmoe::testing

#endif  // SEMMOE_TESTS_TESTING_REFERENCE_TRACE_H_
