// The `quantization_config` part of config.json parsing. Internal to the `config` target:
// callers use ParseModelConfig and read ModelConfig::fp8.
//
// Accepted: block-scaled FP8 as DeepSeek-V3/R1 and Qwen3's FP8 checkpoints publish it —
//   {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
//    "weight_block_size": [128, 128], "modules_to_not_convert": [...]}
// (fmt, activation_scheme and modules_to_not_convert optional; which tensors are FP8 is read
// from each tensor's dtype). Everything else is refused naming the field: another quant_method,
// static activation scales, per-tensor FP8 (no weight_block_size), another fmt, unknown keys.
#ifndef SEMMOE_ENGINE_TEXT_QUANTIZATION_CONFIG_H_
#define SEMMOE_ENGINE_TEXT_QUANTIZATION_CONFIG_H_

#include "absl/status/status.h"
#include "engine/text/config.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {

// Fills c.fp8 from j["quantization_config"] when present (`j` is config.json's object).
absl::Status ParseQuantization(const nlohmann::json& j, ModelConfig& c);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_QUANTIZATION_CONFIG_H_
