#include "engine/model/routing.h"

namespace semmoe::engine::model {

kernels::RouterGatingArgs RoutingRule(const ModelConfig& c, const float* bias) {
  kernels::RouterGatingArgs a{.experts = c.num_experts, .k = c.top_k};
  a.scoring = c.scoring == ScoringFunc::kSoftmax ? kernels::GateScoring::kSoftmax
                                                 : kernels::GateScoring::kSigmoid;
  a.bias = bias;
  if (c.topk_method != TopkMethod::kGreedy && c.n_group > 1) {
    a.groups = c.n_group;
    a.topk_groups = c.topk_group;
    a.group_score = c.topk_method == TopkMethod::kGroupLimitedGreedy
                        ? kernels::GroupScore::kMax
                        : kernels::GroupScore::kTopTwoSum;
  }
  if (!IsDeepseek(c.arch)) {  // Qwen, Mixtral: renormalise or not; no scaling.
    a.renormalize = c.norm_topk_prob;
    return a;
  }
  // DeepSeek's MoEGate: normalise only for top_k > 1, over (sum + 1e-20). V3 then always scales;
  // V2 scales only what it did not normalise.
  a.renormalize = c.top_k > 1 && c.norm_topk_prob;
  a.renormalize_epsilon = a.renormalize ? 1e-20f : 0.0f;
  a.scale = a.renormalize && !c.scale_after_norm ? 1.0f
                                                 : static_cast<float>(c.routed_scaling_factor);
  return a;
}

}  // namespace semmoe::engine::model
