#include "engine/parallel/tp_stage.h"

#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace semmoe::engine {

using model::Matrix;

TpLayerStage::TpLayerStage(const model::ModelConfig& config, ExpertParallelFfn& ffn,
                           Communicator& comm, const DevicePredictor* predictor,
                           double token_balance_eps)
    : ffn_(ffn),
      comm_(comm),
      predictor_(predictor),
      token_balance_eps_(token_balance_eps),
      hidden_(config.hidden_size) {
  moe_index_.assign(config.num_layers, -1);
  counters_.srs_seconds_per_layer.assign(config.num_layers, 0.0);
  counters_.sag_seconds_per_layer.assign(config.num_layers, 0.0);
  const std::vector<int> moe = config.MoeLayers();
  for (size_t i = 0; i < moe.size(); ++i) moe_index_[moe[i]] = static_cast<int>(i);
}

ShufflePlan TpLayerStage::Plan(int layer, const model::BatchTokens& tokens) {
  const int moe = moe_index_[layer];
  if (predictor_ == nullptr || moe < 0) return PlainShuffle(tokens.ids.size(), comm_.size());
  std::vector<float> scores(tokens.ids.size() * comm_.size());
  predictor_->Score(moe, tokens.ids, tokens.prev, prev2_, prev1_, absl::MakeSpan(scores));
  return PlanShuffle(scores, comm_.size(), token_balance_eps_);
}

absl::Status TpLayerStage::Run(int layer, const model::BatchTokens& tokens, Matrix& x, Matrix& attn,
                               model::Routing* routing) {
  const int g = comm_.size(), me = comm_.rank();
  const int64_t total = x.rows();
  if (layer == 0) {
    prev1_.assign(total, -1);
    prev2_.assign(total, -1);
  }
  absl::Time start = absl::Now();
  const ShufflePlan plan = Plan(layer, tokens);
  counters_.predict_seconds += absl::ToDoubleSeconds(absl::Now() - start);

  // Shuffled reduce-scatter: pack the partial sums in plan order, sum each chunk on its rank.
  start = absl::Now();
  Matrix packed(total, hidden_);
  for (int64_t i = 0; i < total; ++i) packed.row(i) = attn.row(plan.order[i]);
  std::vector<int64_t> counts(g);
  for (int r = 0; r < g; ++r) counts[r] = plan.counts[r] * hidden_;
  const int64_t begin = plan.begin(me), rows = plan.counts[me];
  Matrix chunk(rows, hidden_);
  RETURN_IF_ERROR(comm_.ReduceScatterV(absl::Span<const float>(packed.data(), packed.size()),
                                       counts, absl::Span<float>(chunk.data(), chunk.size())));
  for (int64_t i = 0; i < rows; ++i) chunk.row(i) += x.row(plan.order[begin + i]);
  const double srs = absl::ToDoubleSeconds(absl::Now() - start);
  counters_.srs_seconds += srs;
  counters_.srs_seconds_per_layer[layer] += srs;

  Matrix ffn;
  RETURN_IF_ERROR(ffn_.Run(layer, chunk, ffn, routing));
  chunk += ffn;

  // Shuffled all-gather: every rank gets every chunk and unpacks it into batch order. With the A
  // tables each row also carries, after its hidden state, the device that served its experts
  // here (only the chunk's owner knows it), for the next layers' predictions: one collective
  // rather than a second all-gather of one i32 per token, whose fixed cost is that of a whole
  // collective.
  start = absl::Now();
  if (predictor_ != nullptr && predictor_->uses_history() && moe_index_[layer] >= 0) {
    const int width = hidden_ + 1;
    const std::vector<int32_t>& served = ffn_.last_devices();
    Matrix mine(rows, width), all(total, width);
    for (int64_t i = 0; i < rows; ++i) {
      mine.row(i).head(hidden_) = chunk.row(i);
      mine(i, hidden_) = static_cast<float>(served[i]);  // Exact: a device index or −1.
    }
    std::vector<int64_t> wide(g);
    for (int r = 0; r < g; ++r) wide[r] = plan.counts[r] * width;
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const float>(mine.data(), mine.size()), wide,
                                     absl::Span<float>(all.data(), all.size())));
    for (int64_t i = 0; i < total; ++i) {
      const int32_t t = plan.order[i];
      x.row(t) = all.row(i).head(hidden_);
      prev2_[t] = prev1_[t];
      prev1_[t] = static_cast<int32_t>(all(i, hidden_));
    }
  } else {
    RETURN_IF_ERROR(comm_.AllGatherV(absl::Span<const float>(chunk.data(), chunk.size()), counts,
                                     absl::Span<float>(packed.data(), packed.size())));
    for (int64_t i = 0; i < total; ++i) x.row(plan.order[i]) = packed.row(i);
  }
  const double sag = absl::ToDoubleSeconds(absl::Now() - start);
  counters_.sag_seconds += sag;
  counters_.sag_seconds_per_layer[layer] += sag;
  counters_.tokens += total;
  return absl::OkStatus();
}

}  // namespace semmoe::engine
