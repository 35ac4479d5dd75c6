// ModelShape: what the scale model needs of a MoE transformer — per layer the weights it streams
// and the FLOPs per token of attention, the dense MLP or the experts, the KV cache per position,
// the router's experts and top-k. From a checkpoint's config.json (tools/simulate converts the
// engine's ModelConfig) or built in at the published shapes of DeepSeek-V3 and Qwen3-235B-A22B.
#ifndef SEMMOE_PLANNER_SIM_MODEL_SHAPE_H_
#define SEMMOE_PLANNER_SIM_MODEL_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::planner::sim {

struct ModelShape {
  std::string name;
  int hidden = 0;
  int vocab = 0;
  std::vector<bool> moe_layer;   // Per decoder layer: a MoE block (else a dense MLP).
  int64_t attention_params = 0;  // Weights of one layer's attention projections.
  int attention_heads = 0;
  int qk_head_dim = 0, v_head_dim = 0;  // Per head: the score and value sizes.
  int64_t kv_values = 0;                // KV-cache values per position and layer.
  int num_experts = 0, top_k = 0;
  int64_t expert_intermediate = 0;  // One routed expert's width.
  int64_t shared_intermediate = 0;  // The shared expert(s)' total width per MoE layer (0: none).
  int64_t dense_intermediate = 0;   // A dense layer's MLP width.

  int num_layers() const { return static_cast<int>(moe_layer.size()); }
  int num_moe_layers() const;
  // Weights of one SwiGLU MLP of width w (gate, up, down).
  int64_t MlpParams(int64_t w) const { return 3 * int64_t{hidden} * w; }
};

// "deepseek-v3" (61 layers, the first 3 dense, 256 experts, top-8, MLA) and "qwen3-235b"
// (94 layers, 128 experts, top-8, GQA), from their published config.json; NotFound otherwise.
absl::StatusOr<ModelShape> KnownShape(const std::string& name);
std::vector<std::string> KnownShapes();
// InvalidArgument naming the field when a size is not positive or top_k > num_experts.
absl::Status CheckShape(const ModelShape& shape);
// {"format": "semmoe-model-shape", "name", "hidden", ..., "moe_layer": [true, ...]}: what
// `simulate --model DIR --print_shape` writes and `planner build --shape FILE` reads.
std::string ShapeToJson(const ModelShape& shape);
// InvalidArgument naming `what` and the field for anything malformed or out of range (CheckShape).
absl::StatusOr<ModelShape> ShapeFromJson(absl::string_view json, absl::string_view what);

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_MODEL_SHAPE_H_
