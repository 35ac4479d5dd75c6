// What a bf16 forward reaches against the fp32 Hugging Face reference stored with the shared
// trained model (../shared/models/qwen3-moe-a/reference): final logits, argmax, router top-k
// sets and 32-token greedy continuations — the figures the model's README states for a
// legitimate bf16 engine ("Expected engine tolerance": HF-style bf16, max |Δlogit| median 0.053 /
// worst 0.081, argmax 22/22, router sets 98.1%, 12 of 22 continuations identical). Shared by the
// CPU emulation of the bf16 GPU path (engine/gpu:bf16_reference_test, in CI) and the GPU itself
// (engine/gpu:gpu_reference_test, on the device machine).
#ifndef SEMMOE_ENGINE_FORWARD_TESTING_BF16_TOLERANCE_H_
#define SEMMOE_ENGINE_FORWARD_TESTING_BF16_TOLERANCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"

namespace semmoe::engine::forward::testing {

struct Bf16Tolerance {
  double median_max_diff = 0, worst_max_diff = 0;  // Per prompt: max |logit − reference|.
  int argmax_same = 0, prompts = 0;
  int64_t sets_same = 0, slots = 0;      // Router top-k sets equal to the reference's.
  int greedy_identical = 0, steps = 32;  // Continuations identical for all `steps` tokens.
  double mean_agreeing_prefix = 0;       // Tokens before the first difference.
  std::string Describe() const;          // One line, for the test log and docs.
};

// A shared model's config and f32 weights, without its tokenizer (the GPU tests link none).
struct HostModel {
  model::ModelConfig config;
  std::unique_ptr<model::ModelWeights> weights;
};
absl::StatusOr<HostModel> LoadHostModel(const std::string& dir,
                                        const model::LoadOptions& load = {});

using ForwardFn = std::function<absl::StatusOr<model::ForwardOutput>(
    absl::Span<const model::SequenceInput>, const model::ForwardOptions&)>;

// Runs every reference prompt through `forward` in one batch (sequences on a paged cache of
// page size 16 with a host arena of 512 pages, which `forward` indexes with its own KV), then
// greedy-decodes them together. `dir`: the model directory.
absl::StatusOr<Bf16Tolerance> MeasureAgainstReference(const std::string& dir,
                                                      const model::ModelConfig& config,
                                                      const ForwardFn& forward);

// Any shared model's reference (the DeepSeek fixtures store no router top-k ids): every prompt in
// one prefill batch through `forward`, each last position's logits against
// reference/final_logits.f32 — per prompt the relative L2 gap, and whether the argmax agrees.
struct FinalLogitsGap {
  std::vector<double> rel_l2;  // Per prompt, in the reference's order.
  int argmax_same = 0, prompts = 0;
  double median() const;
  double worst() const;
  std::string Describe() const;
};
absl::StatusOr<FinalLogitsGap> MeasureFinalLogits(const std::string& dir,
                                                  const model::ModelConfig& config,
                                                  const ForwardFn& forward);

// The bounds both tests hold a bf16 forward to: the README's figures with room for a different,
// equally legitimate rounding (worst ≤ 0.25, median ≤ 0.15, argmax ≥ 21 of 22, router sets ≥ 96%,
// ≥ 8 of 22 continuations identical).
void ExpectWithinBf16Tolerance(const Bf16Tolerance& t);

}  // namespace semmoe::engine::forward::testing

#endif  // SEMMOE_ENGINE_FORWARD_TESTING_BF16_TOLERANCE_H_
