// The deepseek_v2 / deepseek_v3 part of config.json parsing (ModelConfig's MLA, YaRN and
// DeepSeekMoE fields). Internal to the `config` target: callers use ParseModelConfig.
#ifndef SEMMOE_ENGINE_TEXT_DEEPSEEK_CONFIG_H_
#define SEMMOE_ENGINE_TEXT_DEEPSEEK_CONFIG_H_

#include "absl/status/status.h"
#include "common/json_fields.h"
#include "engine/text/config.h"

namespace semmoe::engine::model {

// RMSNorm epsilon of q_a_layernorm and kv_a_layernorm: hard-coded 1e-6 in DeepSeek's released
// code and in transformers (vLLM uses rms_norm_eps, which every published config sets to 1e-6).
inline constexpr float kMlaLatentNormEps = 1e-6f;

// DeepSeek's yarn_get_mscale: 0.1 · m · ln(scale) + 1, or 1 for scale ≤ 1.
double YarnMscale(double scale, double m);

// Fills the DeepSeek fields of `c` (arch, the common fields already parsed). `j` is the object
// `f` reads. Errors name the field.
absl::Status ParseDeepseek(const JsonFields& f, const nlohmann::json& j, ModelConfig& c);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_DEEPSEEK_CONFIG_H_
