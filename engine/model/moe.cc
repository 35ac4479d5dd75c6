#include "engine/model/moe.h"

#include <algorithm>
#include <cmath>

#include "engine/model/linear.h"
#include "glog/logging.h"
#include "kernels/cpu/moe_routing.h"
#include "kernels/cpu/nn_ops.h"

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

Routing Route(const ModelConfig& config, const LayerWeights& layer, const Matrix& h) {
  const Matrix logits = h * layer.router.transpose();  // [tokens, experts]
  Routing routing;
  routing.top_k = config.top_k;
  routing.expert_ids.resize(static_cast<size_t>(logits.rows()) * config.top_k);
  routing.weights.resize(routing.expert_ids.size());
  kernels::RouterGatingArgs a =
      RoutingRule(config, layer.router_bias.size() > 0 ? layer.router_bias.data() : nullptr);
  a.logits = logits.data();
  a.tokens = logits.rows();
  a.ids = routing.expert_ids.data();
  a.weights = routing.weights.data();
  kernels::cpu::RouterGating(a);
  return routing;
}

void RunMlp(const MlpWeights& mlp, const Matrix& h, Matrix& out) {
  Matrix gate, up;
  LinearInto(h, mlp.gate, gate);
  LinearInto(h, mlp.up, up);
  kernels::cpu::SiluMul(gate.data(), up.data(), gate.size());
  LinearInto(gate, mlp.down, out);
}

void RunExperts(const LayerWeights& layer, const Matrix& h, const Routing& routing, Matrix& out) {
  const int num_experts = static_cast<int>(layer.experts.size());
  const int k = routing.top_k;
  // Bucket (token, slot) pairs by expert: counting sort keeps token order within an expert.
  // Entries with an id outside [0, experts) (slots served elsewhere under EP, marked
  // num_experts by engine/parallel/dispatch_plan.h) are skipped.
  std::vector<int> counts(num_experts + 1, 0);
  for (int32_t e : routing.expert_ids) {
    if (e >= 0 && e < num_experts) ++counts[e + 1];
  }
  for (int e = 0; e < num_experts; ++e) counts[e + 1] += counts[e];
  std::vector<int> order(counts[num_experts]);
  std::vector<int> fill(counts.begin(), counts.end() - 1);
  for (size_t i = 0; i < routing.expert_ids.size(); ++i) {
    const int32_t e = routing.expert_ids[i];
    if (e >= 0 && e < num_experts) order[fill[e]++] = static_cast<int>(i);
  }
  Matrix x, y;
  for (int e = 0; e < num_experts; ++e) {
    const int n = counts[e + 1] - counts[e];
    if (n == 0) continue;
    const MlpWeights& expert = layer.experts[e];
    // Holds by the REQUIRES: a routed expert that is not loaded is a caller bug.
    CHECK(expert.loaded()) << "expert " << e << " is routed to but not loaded";
    x.resize(n, h.cols());
    for (int r = 0; r < n; ++r) x.row(r) = h.row(order[counts[e] + r] / k);
    RunMlp(expert, x, y);
    for (int r = 0; r < n; ++r) {
      const int entry = order[counts[e] + r];
      out.row(entry / k) += routing.weights[entry] * y.row(r);
    }
  }
}

void RunSharedExpert(const LayerWeights& layer, const Matrix& h, Matrix& out) {
  if (!layer.shared_expert.loaded()) return;
  Matrix y;
  RunMlp(layer.shared_expert, h, y);
  if (layer.shared_expert_gate.size() == 0) {  // DeepSeek: ungated.
    out += y;
    return;
  }
  Eigen::VectorXf gate = h * layer.shared_expert_gate.transpose();  // [tokens, 1]
  for (int t = 0; t < h.rows(); ++t) {
    out.row(t) += (1.0f / (1.0f + std::exp(-gate[t]))) * y.row(t);
  }
}

}  // namespace semmoe::engine::model
