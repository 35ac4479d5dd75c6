#include "engine/parallel/ep_ffn.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::engine {
namespace {

using model::Matrix;

double SecondsSince(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

}  // namespace

ExpertParallelFfn::ExpertParallelFfn(const model::ModelConfig& config,
                                     const model::ModelWeights& weights,
                                     const planner::Placement& placement, Communicator& comm)
    : config_(config), weights_(weights), placement_(placement), comm_(comm) {
  moe_index_.assign(config.num_layers, -1);
  for (int i = 0; i < placement.num_layers(); ++i) moe_index_[placement.moe_layers()[i]] = i;
  counters_.resize(placement.num_layers());
}

absl::StatusOr<std::unique_ptr<ExpertParallelFfn>> ExpertParallelFfn::Create(
    const model::ModelConfig& config, const model::ModelWeights& weights,
    const planner::Placement& placement, Communicator& comm) {
  if (placement.moe_layers() != config.MoeLayers()) {
    return absl::InvalidArgumentError("the placement's MoE layers are not the model's");
  }
  if (placement.num_experts() != config.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat("the placement has ", placement.num_experts(),
                                                   " experts per layer, the model ",
                                                   config.num_experts));
  }
  if (placement.num_devices() != comm.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the placement is for ", placement.num_devices(),
                                                   " devices but the group has ", comm.size()));
  }
  for (int i = 0; i < placement.num_layers(); ++i) {
    const int layer = placement.moe_layers()[i];
    for (int e = 0; e < config.num_experts; ++e) {
      const bool mine = placement.Holds(i, comm.rank(), e);
      if (mine && !weights.layers[layer].experts[e].loaded()) {
        return absl::InvalidArgumentError(absl::StrCat("rank ", comm.rank(), " holds expert ", e,
                                                       " of layer ", layer,
                                                       " by the placement but it is not loaded"));
      }
    }
  }
  return std::unique_ptr<ExpertParallelFfn>(
      new ExpertParallelFfn(config, weights, placement, comm));
}

int ExpertParallelFfn::row_bytes() const { return config_.hidden_size * 4 + config_.top_k * 8; }

absl::Status ExpertParallelFfn::Run(int layer, const Matrix& x, Matrix& ffn,
                                    model::Routing* routing) {
  const model::LayerWeights& w = weights_.layers[layer];
  Matrix h = x;
  kernels::cpu::RmsNorm(
      {h.data(), h.rows(), h.cols(), h.cols(), w.post_attention_norm.data(), config_.rms_norm_eps});
  ffn.setZero(x.rows(), config_.hidden_size);
  if (!w.is_moe) {
    model::RunMlp(w.dense, h, ffn);
    return absl::OkStatus();
  }
  model::Routing r = model::Route(config_, w, h);
  RETURN_IF_ERROR(RunExpertsEp(layer, moe_index_[layer], h, r, ffn));
  model::RunSharedExpert(w, h, ffn);
  if (routing != nullptr) *routing = std::move(r);
  return absl::OkStatus();
}

absl::Status ExpertParallelFfn::RunExpertsEp(int layer, int moe_index, const Matrix& h,
                                             const model::Routing& routing, Matrix& out) {
  const int g = comm_.size(), me = comm_.rank();
  const int hidden = config_.hidden_size, k = routing.top_k;
  const int64_t tokens = h.rows();
  MoeLayerCounters& counters = counters_[moe_index];
  absl::Time start = absl::Now();

  // Which rows go where: a token once per rank holding any of its experts.
  // An expert runs on this rank if it holds it (home or replica), else on its home.
  std::vector<std::vector<int32_t>> to(g);
  std::vector<int> sent_to(g), homes(g);
  last_devices_.assign(tokens, 0);
  if (moe_index == 0 || static_cast<int64_t>(row_local_.size()) != tokens) {
    row_local_.assign(tokens, 0);
    row_activations_.assign(tokens, 0);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    std::fill(sent_to.begin(), sent_to.end(), 0);
    std::fill(homes.begin(), homes.end(), 0);
    for (int j = 0; j < k; ++j) {
      const int e = routing.expert_ids[t * k + j];
      const int d = placement_.Serving(moe_index, e, me);
      if (sent_to[d]++ == 0) to[d].push_back(static_cast<int32_t>(t));
      ++(d == me ? counters.local_activations : counters.remote_activations);
      row_local_[t] += d == me;
      ++row_activations_[t];
      ++homes[placement_.Device(moe_index, e)];
    }
    // The A tables speak of home devices (planner/affinity/layer_affinity.h).
    int best = 0;
    for (int d = 1; d < g; ++d) {
      if (homes[d] > homes[best]) best = d;
    }
    last_devices_[t] = best;
  }
  counters.tokens += tokens;

  std::vector<int64_t> send_rows(g), recv_rows(g);
  for (int d = 0; d < g; ++d) send_rows[d] = static_cast<int64_t>(to[d].size());
  const std::vector<int64_t> ones(g, 1);
  RETURN_IF_ERROR(
      comm_.AllToAllV(absl::MakeConstSpan(send_rows), ones, absl::MakeSpan(recv_rows), ones));

  // Pack: hidden f32 | k × i32 expert id (−1 if held elsewhere) | k × f32 weight.
  const int64_t row_size = row_bytes();
  int64_t sent_rows = 0, received_rows = 0;
  for (int d = 0; d < g; ++d) sent_rows += send_rows[d];
  for (int s = 0; s < g; ++s) received_rows += recv_rows[s];
  std::vector<char> send(sent_rows * row_size), recv(received_rows * row_size);
  char* p = send.data();
  for (int d = 0; d < g; ++d) {
    for (int32_t t : to[d]) {
      std::memcpy(p, h.row(t).data(), hidden * 4);
      int32_t* ids = reinterpret_cast<int32_t*>(p + hidden * 4);
      float* weights = reinterpret_cast<float*>(p + hidden * 4 + k * 4);
      for (int j = 0; j < k; ++j) {
        const int32_t e = routing.expert_ids[t * k + j];
        ids[j] = placement_.Serving(moe_index, e, me) == d ? e : -1;
        weights[j] = routing.weights[t * k + j];
      }
      p += row_size;
    }
  }
  std::vector<int64_t> send_bytes(g), recv_bytes(g);
  for (int r = 0; r < g; ++r) {
    send_bytes[r] = send_rows[r] * row_size;
    recv_bytes[r] = recv_rows[r] * row_size;
  }
  RETURN_IF_ERROR(
      comm_.AllToAllV(absl::MakeConstSpan(send), send_bytes, absl::MakeSpan(recv), recv_bytes));
  for (int r = 0; r < g; ++r) {
    if (r == me) continue;
    counters.dispatch_bytes_sent += send_bytes[r];
    counters.dispatch_bytes_received += recv_bytes[r];
  }
  counters.dispatch_seconds += SecondsSince(start);

  // Unpack and run the local experts, grouped by expert over every received row.
  start = absl::Now();
  Matrix rows(received_rows, hidden), results = Matrix::Zero(received_rows, hidden);
  model::Routing local;
  local.top_k = k;
  local.expert_ids.resize(received_rows * k);
  local.weights.resize(received_rows * k);
  const char* q = recv.data();
  for (int64_t i = 0; i < received_rows; ++i, q += row_size) {
    std::memcpy(rows.row(i).data(), q, hidden * 4);
    std::memcpy(&local.expert_ids[i * k], q + hidden * 4, k * 4);
    std::memcpy(&local.weights[i * k], q + hidden * 4 + k * 4, k * 4);
    for (int j = 0; j < k; ++j) {
      const int32_t e = local.expert_ids[i * k + j];
      if (e != -1 && (e < 0 || e >= config_.num_experts || !placement_.Holds(moe_index, me, e))) {
        return absl::InternalError(absl::StrCat("layer ", layer, ": rank ", me, " was sent expert ",
                                                e, " which it does not hold"));
      }
    }
  }
  model::RunExperts(weights_.layers[layer], rows, local, results);
  counters.expert_seconds += SecondsSince(start);

  // Combine: each received row's result goes back to its owner.
  start = absl::Now();
  Matrix back(sent_rows, hidden);
  std::vector<int64_t> result_counts(g), back_counts(g);
  for (int r = 0; r < g; ++r) {
    result_counts[r] = recv_rows[r] * hidden;
    back_counts[r] = send_rows[r] * hidden;
  }
  RETURN_IF_ERROR(comm_.AllToAllV(absl::Span<const float>(results.data(), results.size()),
                                  result_counts, absl::Span<float>(back.data(), back.size()),
                                  back_counts));
  int64_t row = 0;
  for (int d = 0; d < g; ++d) {
    for (int32_t t : to[d]) out.row(t) += back.row(row++);
    if (d != me) {
      counters.combine_bytes_sent += result_counts[d] * 4;
      counters.combine_bytes_received += back_counts[d] * 4;
    }
  }
  counters.combine_seconds += SecondsSince(start);
  return absl::OkStatus();
}

}  // namespace semmoe::engine
