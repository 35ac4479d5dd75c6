// GpuWeights: a model's parameters in GPU memory in the checkpoint's HF layouts (linear weights
// [out, in]), uploaded from the host's ModelWeights: f32 (the same function as the CPU forward; a
// BF16 checkpoint widens exactly), or with every linear layer in bf16 (engine/forward/bf16_view.h —
// what decode streams, at half the bytes; norms, router and embedding stay f32).
#ifndef SEMMOE_ENGINE_GPU_GPU_WEIGHTS_H_
#define SEMMOE_ENGINE_GPU_GPU_WEIGHTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/forward/model_view.h"
#include "engine/gpu/device_array.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"

namespace semmoe::engine::gpu {

struct GpuLinear {       // y = x · wᵀ.
  DeviceArray<float> w;  // [rows (out), cols (in)]
  int64_t rows = 0, cols = 0;
};

struct GpuMlp {
  GpuLinear gate, up, down;
};

struct GpuMla {  // engine/forward/model_view.h MlaView.
  GpuLinear q_a, q_b, kv_a, kv_b;
  DeviceArray<float> q_a_norm, kv_a_norm;
};

struct GpuLayer {
  DeviceArray<float> input_norm, post_attention_norm;
  GpuLinear q, k, v, o;
  GpuMla mla;                                 // config.mla only.
  DeviceArray<float> q_bias, k_bias, v_bias;  // Empty unless config.attention_bias.
  DeviceArray<float> q_norm, k_norm;          // Empty unless config.qk_norm.
  bool is_moe = false;
  GpuMlp dense;
  GpuLinear router;                // [experts, hidden]
  DeviceArray<float> router_bias;  // noaux_tc only.
  std::vector<GpuMlp> experts;     // All of them.
  GpuMlp shared_expert;            // Shaped (rows > 0) when the layer has one.
  GpuLinear shared_expert_gate;    // [1, hidden]; empty for DeepSeek's ungated shared experts.
};

struct GpuWeights {
  DeviceArray<float> embed;      // [vocab, hidden]
  std::vector<GpuLayer> layers;  // bf16: the linear layers' f32 arrays stay empty.
  DeviceArray<float> final_norm;
  GpuLinear lm_head;
  int64_t bytes = 0;  // Device memory held.
  bool bf16 = false;
  bool fp8 = false;  // bf16_view holds FP8 layers (engine/forward/fp8_view.h).
  std::vector<DeviceArray<uint16_t>> bf16_arrays;  // The bf16 linear layers (stacked experts).
  std::vector<DeviceArray<uint8_t>> fp8_arrays;    // FP8: the codes, and their block scales.
  std::vector<DeviceArray<float>> scale_arrays;
  forward::ModelView bf16_view;                    // Their view, with the f32 parts above.

  forward::ModelView View()
      const;  // Valid while this object lives (and until the next SetExperts).

  // A live rollout's device half: makes MoE layer `layer` hold exactly the experts `held`
  // (ascending ids). Those in `gained` (host weights, f32) are uploaded; the others of `held`
  // must be here already and stay (bf16: copied on the device into the layer's new stack);
  // every other expert of the layer is freed. FAILED_PRECONDITION, with nothing changed, when an
  // expert of `held` is neither here nor gained, or the weights are FP8 (not moved live yet); RESOURCE_EXHAUSTED when the device is full (a
  // bf16 layer's old and new stacks coexist while it is rebuilt).
  absl::Status SetExperts(int layer, const std::vector<int32_t>& held,
                          const std::map<int32_t, const model::MlpWeights*>& gained);
};

// Uploads to the current CUDA device. With `every_expert`, FAILED_PRECONDITION if an expert is
// not loaded (one device runs the whole model); else the loaded ones go up (an expert-parallel
// rank's). RESOURCE_EXHAUSTED when the GPU is full. `bf16`: the linear layers as bf16; with
// `fp8` too, those the checkpoint stored in FP8 as their codes and block scales.
absl::StatusOr<std::unique_ptr<GpuWeights>> UploadWeights(const model::ModelConfig& config,
                                                          const model::ModelWeights& weights,
                                                          bool every_expert = true,
                                                          bool bf16 = false, bool fp8 = false);

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_WEIGHTS_H_
