// MLA's rotary frequencies over qk_rope_head_dim (HF's f32 computation): plain θ^(-2i/d), or
// DeepSeek's YaRN interpolation when config.yarn is enabled (engine/text/config.h YarnConfig).
#ifndef SEMMOE_ENGINE_FORWARD_MLA_ROPE_H_
#define SEMMOE_ENGINE_FORWARD_MLA_ROPE_H_

#include <vector>

#include "engine/text/config.h"

namespace semmoe::engine::forward {

std::vector<float> MlaRopeInvFreq(const model::ModelConfig& config);

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_MLA_ROPE_H_
