#include "engine/parallel/ep_ffn.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "engine/parallel/dispatch_plan.h"
#include "kernels/cpu/nn_ops.h"

namespace semmoe::engine {
namespace {

using model::Matrix;

double SecondsSince(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

}  // namespace

ExpertParallelFfn::ExpertParallelFfn(const model::ModelConfig& config,
                                     const model::ModelWeights& weights,
                                     const planner::Placement& placement, Communicator& comm)
    : config_(config), weights_(weights), placement_(&placement), comm_(comm) {
  moe_index_.assign(config.num_layers, -1);
  for (int i = 0; i < placement.num_layers(); ++i) moe_index_[placement.moe_layers()[i]] = i;
  counters_.resize(placement.num_layers());
}

absl::Status ExpertParallelFfn::Check(const model::ModelConfig& config,
                                      const model::ModelWeights& weights,
                                      const planner::Placement& placement,
                                      const Communicator& comm) {
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
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ExpertParallelFfn>> ExpertParallelFfn::Create(
    const model::ModelConfig& config, const model::ModelWeights& weights,
    const planner::Placement& placement, Communicator& comm) {
  RETURN_IF_ERROR(Check(config, weights, placement, comm));
  return std::unique_ptr<ExpertParallelFfn>(
      new ExpertParallelFfn(config, weights, placement, comm));
}

absl::Status ExpertParallelFfn::SetPlacement(const planner::Placement& placement) {
  RETURN_IF_ERROR(Check(config_, weights_, placement, comm_));
  placement_ = &placement;
  return absl::OkStatus();
}

int ExpertParallelFfn::row_bytes() const {
  return static_cast<int>(DispatchRowBytes(config_.hidden_size, config_.top_k));
}

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

  // Which rows go where (dispatch_plan.h): a token once per rank serving any of its experts.
  const DispatchPlan plan =
      PlanDispatch(*placement_, moe_index, me, k, routing.expert_ids, routing.weights);
  last_devices_ = plan.home_device;
  if (moe_index == 0 || static_cast<int64_t>(row_local_.size()) != tokens) {
    row_local_.assign(tokens, 0);
    row_activations_.assign(tokens, 0);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    row_local_[t] += plan.local_per_token[t];
    row_activations_[t] += k;
  }

  const std::vector<int64_t>& send_rows = plan.send_rows;
  std::vector<int64_t> recv_rows(g);
  const std::vector<int64_t> ones(g, 1);
  const absl::Time wait = absl::Now();
  RETURN_IF_ERROR(
      comm_.AllToAllV(absl::MakeConstSpan(send_rows), ones, absl::MakeSpan(recv_rows), ones));
  counters.dispatch_wait_seconds += SecondsSince(wait);

  // Pack: hidden f32 | k × i32 expert id (served_elsewhere if not the destination's) | k × f32
  // weight — DispatchRowBytes() per row.
  const int64_t row_size = row_bytes();
  const int64_t sent_rows = static_cast<int64_t>(plan.send_index.size());
  int64_t received_rows = 0;
  for (int s = 0; s < g; ++s) received_rows += recv_rows[s];
  std::vector<char> send(sent_rows * row_size), recv(received_rows * row_size);
  char* p = send.data();
  for (int64_t i = 0; i < sent_rows; ++i, p += row_size) {
    std::memcpy(p, h.row(plan.send_index[i]).data(), hidden * 4);
    std::memcpy(p + hidden * 4, &plan.send_ids[i * k], k * 4);
    std::memcpy(p + hidden * 4 + k * 4, &plan.send_weights[i * k], k * 4);
  }
  std::vector<int64_t> send_bytes(g), recv_bytes(g);
  for (int r = 0; r < g; ++r) {
    send_bytes[r] = send_rows[r] * row_size;
    recv_bytes[r] = recv_rows[r] * row_size;
  }
  RETURN_IF_ERROR(
      comm_.AllToAllV(absl::MakeConstSpan(send), send_bytes, absl::MakeSpan(recv), recv_bytes));
  CountExchange(plan, recv_rows, me, hidden, counters);
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
      if (e != plan.served_elsewhere &&
          (e < 0 || e >= config_.num_experts || !placement_->Holds(moe_index, me, e))) {
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
  for (int64_t i = 0; i < sent_rows; ++i) out.row(plan.send_index[i]) += back.row(i);
  counters.combine_seconds += SecondsSince(start);
  return absl::OkStatus();
}

}  // namespace semmoe::engine
