#include "engine/model/moe.h"

#include <algorithm>
#include <cmath>

#include "engine/model/linear.h"
#include "glog/logging.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::engine::model {

namespace {

// Sets choice[e] = -inf for every expert outside the topk_group best groups. A group scores
// its max (group_limited_greedy) or the sum of its two best (noaux_tc). −inf, as DeepSeek's
// inference code, vLLM and SGLang mask; transformers masks with 0, which differs only when
// every allowed choice is negative (config validation guarantees k allowed experts).
void MaskGroups(const ModelConfig& c, absl::Span<float> choice, std::vector<float>& group_scores,
                std::vector<int32_t>& kept) {
  const int size = c.num_experts / c.n_group;
  group_scores.resize(c.n_group);
  for (int g = 0; g < c.n_group; ++g) {
    const float* v = choice.data() + static_cast<size_t>(g) * size;
    if (c.topk_method == TopkMethod::kGroupLimitedGreedy) {
      group_scores[g] = *std::max_element(v, v + size);
    } else {
      float best = -INFINITY, second = -INFINITY;
      for (int i = 0; i < size; ++i) {
        if (v[i] > best) {
          second = best;
          best = v[i];
        } else if (v[i] > second) {
          second = v[i];
        }
      }
      group_scores[g] = best + second;
    }
  }
  kept.resize(c.topk_group);
  std::vector<float> kept_scores(c.topk_group);
  kernels::cpu::TopK(group_scores, c.topk_group, kept.data(), kept_scores.data());
  std::vector<bool> keep(c.n_group, false);
  for (int32_t g : kept) keep[g] = true;
  for (int g = 0; g < c.n_group; ++g) {
    if (keep[g]) continue;
    std::fill_n(choice.data() + static_cast<size_t>(g) * size, size, -INFINITY);
  }
}

// The weights applied, from the chosen experts' unbiased scores `w` (in place).
void FinishWeights(const ModelConfig& c, float* w) {
  const int k = c.top_k;
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += w[j];
  if (!IsDeepseek(c.arch)) {  // Qwen, Mixtral: renormalise or not; no scaling.
    if (c.norm_topk_prob) {
      for (int j = 0; j < k; ++j) w[j] /= sum;
    }
    return;
  }
  // DeepSeek's MoEGate: normalise only for top_k > 1, over (sum + 1e-20). V3 then always scales;
  // V2 scales only what it did not normalise.
  const bool normalise = k > 1 && c.norm_topk_prob;
  const float scale = normalise && !c.scale_after_norm
                          ? 1.0f
                          : static_cast<float>(c.routed_scaling_factor);
  const float divisor = normalise ? sum + 1e-20f : 1.0f;
  for (int j = 0; j < k; ++j) w[j] = w[j] / divisor * scale;
}

}  // namespace

Routing Route(const ModelConfig& config, const LayerWeights& layer, const Matrix& h) {
  const ModelConfig& c = config;
  const int tokens = static_cast<int>(h.rows());
  const int k = c.top_k, experts = c.num_experts;
  Matrix scores = h * layer.router.transpose();  // [tokens, experts]: logits, then scores.
  Routing routing;
  routing.top_k = k;
  routing.expert_ids.resize(static_cast<size_t>(tokens) * k);
  routing.weights.resize(static_cast<size_t>(tokens) * k);
  const bool biased = layer.router_bias.size() > 0;
  const bool grouped = c.topk_method != TopkMethod::kGreedy && c.n_group > 1;
  std::vector<float> choice(experts), group_scores, chosen(k);
  std::vector<int32_t> kept;
  for (int t = 0; t < tokens; ++t) {
    absl::Span<float> row(scores.row(t).data(), experts);
    if (c.scoring == ScoringFunc::kSoftmax) {
      kernels::cpu::Softmax(row);
    } else {
      for (float& v : row) v = 1.0f / (1.0f + std::exp(-v));
    }
    int32_t* ids = &routing.expert_ids[static_cast<size_t>(t) * k];
    float* w = &routing.weights[static_cast<size_t>(t) * k];
    if (!biased && !grouped) {
      kernels::cpu::TopK(row, k, ids, w);
    } else {
      // noaux_tc chooses by score + bias; the weights stay the unbiased scores.
      for (int e = 0; e < experts; ++e) choice[e] = row[e] + (biased ? layer.router_bias[e] : 0.0f);
      if (grouped) MaskGroups(c, absl::Span<float>(choice), group_scores, kept);
      kernels::cpu::TopK(choice, k, ids, chosen.data());
      for (int j = 0; j < k; ++j) w[j] = row[ids[j]];
    }
    FinishWeights(c, w);
  }
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
