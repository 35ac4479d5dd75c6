// Attention-TP weight slicing: rank r of G keeps the query heads [r·H/G, (r+1)·H/G), the key/value
// heads they read, and the matching columns of the output projection, whose product is then a
// partial sum over heads (the ranks' partials add up to the full projection). When G exceeds
// the KV heads, each rank keeps the one KV head its query heads share (replicated, as vLLM does).
// Everything else (norms, router, experts, lm_head) is untouched.
#ifndef SEMMOE_ENGINE_PARALLEL_TP_WEIGHTS_H_
#define SEMMOE_ENGINE_PARALLEL_TP_WEIGHTS_H_

#include "absl/status/statusor.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"

namespace semmoe::engine {

// Checks that G splits the heads: H % G == 0 and (KV % G == 0 or G % KV == 0).
absl::Status CheckTpSplit(const model::ModelConfig& config, int size);

// Slices `weights` in place for `rank` of `size` and returns the rank's config (num_heads and
// num_kv_heads per rank), with which a forward over the sliced weights computes this rank's
// heads. InvalidArgument if the heads do not split.
absl::StatusOr<model::ModelConfig> SliceForTp(const model::ModelConfig& config,
                                              model::ModelWeights& weights, int rank, int size);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_TP_WEIGHTS_H_
