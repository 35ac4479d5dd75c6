// ForwardRunner<Ops>: the forward pass, written once, as a sequence of primitive operations on
// one device's memory, independent of the device (docs/ENGINE.md, "The forward pass"). `Ops`
// supplies the memory and the operations; CudaOps (engine/gpu/cuda_ops.h) runs them on a GPU,
// CpuOps (engine/forward/cpu_ops.h) runs the very same sequence on the CPU references of the
// kernels — the CPU product's forward (CpuForward), and in CI the check of this orchestration
// (buffer sizes, strides, offsets, the order of operations) without a GPU.
//
// The pass: embedding gather; per layer RMSNorm, q/k/v projections (+ biases), QK-norm + RoPE,
// the new keys and values stored into the paged cache, paged attention, o projection, residual
// add — or DeepSeek's multi-head latent attention (engine/forward/mla_block.h; the cache holds the
// latent; absorbed, or expanded for a pass of fresh prompts); then the FFN half
// (engine/forward/ffn_block.h: the MoE block — router, gating, the routed experts, the gated shared
// expert — or the dense MLP); last the final norm and lm_head on the rows whose logits are wanted.
//
// bf16 weights (engine/forward/bf16_view.h): every product with w16 weights rounds its input to
// bf16 and accumulates in f32; a MoE layer whose experts are stacked runs them as one grouped call
// (ffn_block.h).
//
// Expert parallelism (optional, Attention-DP): with a placement and a communicator whose
// collectives take Ops memory, the routed experts run where the placement serves them
// (engine/forward/ep_exchange.h); the weights then need only this rank's experts, every rank runs
// a pass (an empty one when it has no tokens) in lockstep, and the output counts each
// sequence's expert activations served on this rank.
//
// Attention-TP (optional, with expert parallelism over the same group): every rank runs the
// same batch through its slice of the heads (weights sliced by engine/parallel/tp_weights.h, the
// config the rank's), the attention output's partial sums are reduce-scattered in the shuffled
// chunk order, each rank runs the FFN on its chunk, and the chunks are all-gathered back
// (engine/forward/tp_exchange.h). Routing, when collected, is then this rank's chunk, in chunk
// order; activation counts are not kept.
//
// Decode graphs (optional, EnableDecodeGraphs; one device, every MoE layer's experts stacked, i.e.
// bf16): a pure decode step of up to `max_batch` sequences is padded to a power-of-two bucket
// (batch_layout.h: PadDecodeLayout) and its device work replayed as a CUDA graph per bucket
// (decode_graphs.h); the padding sequences write one scratch page past the caller's.
//
// The KV cache is this object's arena of `num_pages` pages of `page_size` positions per layer
// for keys and for values ([num_pages, page_size, kv_size] each), indexed by the sequences' page
// tables (KvSequence::page_table()).
//
// What Ops provides (all return absl::Status unless noted; pointers are Ops memory):
//   template <typename T> Array   owned memory: Reserve(n) (contents not kept), data(), size()
//   CopyIn(T* dst, const T* host, n), CopyOut(T* host, const T* src, n) (done on return),
//   Copy(float* dst, const float* src, n),
//   Copy2D(dst, dst_stride, src, src_stride, rows, width)   (rows of `width` floats)
//   Linear(x, rows, LinearView, y)                y = x · wᵀ
//   RmsNorm(x, rows, width, stride, weight, eps)
//   QkNormRope(kernels::QkNormRopeArgs)
//   PartialRope(kernels::PartialRopeArgs), HeadLinear(kernels::HeadLinearArgs)     (MLA only)
//   SiluMul(gate, up, n), AddInPlace(x, y, n), AddRowBias(x, rows, width, stride, bias),
//   SigmoidGateAdd(out, y, gate, rows, width), GatherRowsByIndex(table, index, rows, width, out)
//   StorePagedKv(kernels::StorePagedKvArgs), PagedAttention(kernels::PagedAttentionArgs)
//   RouterGating(kernels::RouterGatingArgs)
//   PermuteByExpert(kernels::PermuteByExpertArgs), GatherRows(kernels::GatherRowsArgs),
//   CombineRows(kernels::CombineRowsArgs)   (the structs of kernels/op_args.h)
//   ScatterAddRows(dst, src, index, rows, width), Zero(x, n)
//   RoundToBf16(x, n, uint16_t* out), GroupedSwiGlu(kernels::GroupedSwiGluArgs)   (bf16 only)
//   ShufflePack(x, order, rows, width, packed), ShuffleUnpack(packed, order, rows, width, x)
//                                                   (Attention-TP only; kernels/cpu/moe_routing.h)
//   Begin()                                        before a pass (or Init) on this thread
//   Finish()                                       all queued work done
//
// Thread-compatible.
#ifndef SEMMOE_ENGINE_FORWARD_FORWARD_RUNNER_H_
#define SEMMOE_ENGINE_FORWARD_FORWARD_RUNNER_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "engine/forward/batch_layout.h"
#include "engine/forward/decode_graphs.h"
#include "engine/forward/ep_exchange.h"
#include "engine/forward/ffn_block.h"
#include "engine/forward/forward_options.h"
#include "engine/forward/fp8_view.h"
#include "engine/forward/grouped_experts.h"
#include "engine/forward/mla_block.h"
#include "engine/forward/model_view.h"
#include "engine/forward/tp_exchange.h"
#include "engine/model/forward_io.h"
#include "engine/parallel/communicator.h"
#include "engine/text/config.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/op_args.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::forward {

template <typename Ops>
class ForwardRunner {
 public:
  template <typename T>
  using Array = typename Ops::template Array<T>;

  // Borrows `ops` (outlives this); `weights` point into Ops memory.
  ForwardRunner(const model::ModelConfig& config, ModelView weights, KvArenaOptions kv, Ops& ops,
                ExpertParallelOptions ep = {})
      : c_(config), w_(std::move(weights)), kv_options_(kv), ops_(ops), ep_options_(ep) {}

  // Pure decode steps of up to `max_batch` sequences as graphs (see above; 0: off). Call before
  // Init.
  void EnableDecodeGraphs(int max_batch) { graph_max_batch_ = max_batch; }
  // Each pass's output gets the wall time of each layer's attention (attention_seconds,
  // attention_seconds_per_layer), waiting for the layer's queued work (Ops::Finish): free on the
  // CPU op set, a device sync per layer elsewhere. Not with decode graphs. Call before Init.
  void EnableAttentionTiming() { time_attention_ = true; }
  const DecodeGraphs<Ops>& decode_graphs() const { return graphs_; }

  // Checks the weights (and the placement against the model and the group), allocates the KV
  // arena and uploads the RoPE tables.
  absl::Status Init() {
    if (kv_options_.num_pages <= 0 || kv_options_.page_size <= 0) {
      return absl::InvalidArgumentError("the KV arena needs num_pages and page_size > 0");
    }
    if (time_attention_ && graph_max_batch_ > 0) {
      return absl::InvalidArgumentError("attention timing waits inside a pass: no decode graphs");
    }
    RETURN_IF_ERROR(CheckExperts(ep_options_, w_));
    RETURN_IF_ERROR(PrepareFp8());
    if (ep_options_.placement != nullptr) {
      const planner::Placement& p = *ep_options_.placement;
      moe_index_.assign(c_.num_layers, -1);
      for (int i = 0; i < p.num_layers(); ++i) moe_index_[p.moe_layers()[i]] = i;
      ep_counters_.assign(p.num_layers(), MoeLayerCounters());
    }
    RETURN_IF_ERROR(ops_.Begin());
    ASSIGN_OR_RETURN(Exchanges x, MakeExchanges(ep_options_));
    Install(std::move(x));
    const int arena_pages = kv_options_.num_pages + (graph_max_batch_ > 0 ? 1 : 0);  // Scratch.
    const model::KvShape shape = c_.kv_shape();
    layer_keys_ = static_cast<int64_t>(arena_pages) * kv_options_.page_size * shape.key_size;
    layer_kv_floats_ = static_cast<int64_t>(arena_pages) * kv_options_.page_size * shape.floats();
    if (kv_options_.bf16) {
      RETURN_IF_ERROR(kv16_.Reserve(c_.num_layers * layer_kv_floats_));
    } else {
      RETURN_IF_ERROR(kv_.Reserve(c_.num_layers * layer_kv_floats_));
    }
    if (c_.mla) {
      mla_ = std::make_unique<MlaBlock<Ops>>(c_, ops_);
      return mla_->Init();
    }
    std::vector<float> cos(static_cast<size_t>(c_.max_position_embeddings) * (c_.head_dim / 2));
    std::vector<float> sin(cos.size());
    kernels::cpu::RopeTables(c_.max_position_embeddings, c_.head_dim, c_.rope_theta, cos.data(),
                             sin.data());
    RETURN_IF_ERROR(rope_cos_.Reserve(cos.size()));
    RETURN_IF_ERROR(rope_sin_.Reserve(sin.size()));
    RETURN_IF_ERROR(ops_.CopyIn(rope_cos_.data(), cos.data(), cos.size()));
    return ops_.CopyIn(rope_sin_.data(), sin.data(), sin.size());
  }

  // Serves with `next` from the next pass (a live rollout; every rank of the group switches
  // between the same two passes): `weights` hold at least the experts `next` runs here, and under
  // Attention-TP `predictor` (borrowed; null: contiguous chunks) is next's. The layer counters
  // go on. On error (a placement for another model or group, an expert not in `weights`) nothing
  // changed. FAILED_PRECONDITION without expert parallelism.
  absl::Status SwitchPlacement(const planner::Placement& next, ModelView weights,
                               const DevicePredictor* predictor) {
    if (ep_ == nullptr) {
      return absl::FailedPreconditionError("a one-device forward has no placement to switch");
    }
    ExpertParallelOptions options = ep_options_;
    options.placement = &next;
    options.predictor = predictor;
    RETURN_IF_ERROR(CheckExperts(options, weights));
    if (next.moe_layers() != ep_options_.placement->moe_layers()) {
      return absl::InvalidArgumentError("the next placement has other MoE layers");
    }
    RETURN_IF_ERROR(ops_.Begin());
    ASSIGN_OR_RETURN(Exchanges x, MakeExchanges(options));
    w_ = std::move(weights);
    ep_options_ = options;
    RETURN_IF_ERROR(PrepareFp8());
    Install(std::move(x));
    return absl::OkStatus();
  }

  int64_t kv_bytes() const { return c_.num_layers * layer_kv_floats_ * (kv_options_.bf16 ? 2 : 4); }

  // Under Attention-TP: the latest pass's chunk plans per model layer, and the prediction tables'
  // bytes in Ops memory.
  const std::vector<ShufflePlan>& tp_plans() const {
    static const std::vector<ShufflePlan> kNone;
    return tp_ != nullptr ? tp_->plans() : kNone;
  }
  int64_t tp_prediction_bytes() const { return tp_ != nullptr ? tp_->prediction_bytes() : 0; }
  // Under Attention-TP (else null / empty): TpExchange::counters() and LastDevices().
  const TpStageCounters* tp_counters() const { return tp_ != nullptr ? &tp_->counters() : nullptr; }
  absl::StatusOr<std::vector<int32_t>> tp_last_devices() {
    if (tp_ == nullptr) return std::vector<int32_t>{};
    return tp_->LastDevices();
  }

  // Per placement layer, under expert parallelism (else empty): what the exchange did so far.
  const std::vector<MoeLayerCounters>& ep_counters() const { return ep_counters_; }

  // model::CheckBatch's errors, plus INVALID_ARGUMENT from LayOutBatch for sequences without
  // fitting page tables. An empty batch is valid (an idle rank still joins its collectives).
  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                               const model::ForwardOptions& options) {
    ASSIGN_OR_RETURN(const model::BatchShape shape, model::CheckBatch(c_, batch));
    model::ForwardOutput out;
    out.logits.resize(shape.logit_rows, c_.vocab_size);
    row_local_.assign(shape.tokens, 0);
    row_all_.assign(shape.tokens, 0);
    if (ep_ != nullptr) {
      // Every rank's tokens at this pass's MoE layers: under DP agreed before the pass (the
      // caller's), else gathered here (with the holder choice only); under Attention-TP each
      // layer's chunk sizes, set in Body.
      ep_->SetRankTokens({});
      if (tp_ == nullptr && !options.rank_tokens.empty()) {
        ep_->SetRankTokens(options.rank_tokens);
      } else if (tp_ == nullptr) {
        RETURN_IF_ERROR(ep_->BeginPass(shape.tokens));
      }
    }
    if (shape.tokens == 0) {
      if (ep_ == nullptr) return out;
      // An idle rank still serves its experts to the others, layer by layer.
      RETURN_IF_ERROR(ops_.Begin());
      for (int layer = 0; layer < c_.num_layers; ++layer) {
        if (!w_.layers[layer].is_moe) continue;
        ASSIGN_OR_RETURN(const LayerView* lw, RunnableLayer(layer));
        RETURN_IF_ERROR(ep_->Run(moe_index_[layer], *lw, nullptr, 0, {}, {}, nullptr,
                                 row_local_, row_all_, ep_counters_[moe_index_[layer]]));
      }
      RETURN_IF_ERROR(ops_.Finish());
      for (size_t s = 0; s < batch.size(); ++s) {
        out.local_activations.push_back(0);
        out.activations.push_back(0);
      }
      return out;
    }
    ASSIGN_OR_RETURN(BatchLayout b,
                     LayOutBatch(batch, kv_options_.page_size, kv_options_.num_pages));
    int64_t tokens = shape.tokens, rows = shape.logit_rows;
    const bool graphable = graph_max_batch_ > 0 && ep_ == nullptr && tp_ == nullptr &&
                           all_stacked_ && !options.collect_routing;
    const int bucket = graphable ? DecodeBucket(batch, graph_max_batch_) : 0;
    const int graph_pages =
        (c_.max_position_embeddings + kv_options_.page_size - 1) / kv_options_.page_size;
    const bool graph = bucket > 0 && b.max_pages <= graph_pages;
    if (graph) {
      RETURN_IF_ERROR(PadDecodeLayout(b, bucket, graph_pages, kv_options_.num_pages));
      tokens = rows = bucket;
    }
    RETURN_IF_ERROR(ops_.Begin());
    RETURN_IF_ERROR(Reserve(tokens, rows, b.page_table.size()));
    RETURN_IF_ERROR(ops_.CopyIn(ids_.data(), b.ids.data(), tokens));
    RETURN_IF_ERROR(ops_.CopyIn(positions_.data(), b.positions.data(), tokens));
    RETURN_IF_ERROR(ops_.CopyIn(seq_of_token_.data(), b.seq_of_token.data(), tokens));
    RETURN_IF_ERROR(ops_.CopyIn(logit_rows_.data(), b.logit_rows.data(), rows));
    RETURN_IF_ERROR(ops_.CopyIn(page_table_.data(), b.page_table.data(), b.page_table.size()));
    if (mla_ != nullptr)
      RETURN_IF_ERROR(mla_->BeginPass(graph ? decltype(batch){} : batch, tokens));
    if (graph) {  // A padded decode step: its device work as a graph.
      RETURN_IF_ERROR(graphs_.Run(static_cast<int>(tokens), Signature(),
                                  [&] { return Body(batch, b, tokens, rows, options, out); }));
    } else {
      RETURN_IF_ERROR(Body(batch, b, tokens, rows, options, out));
    }
    RETURN_IF_ERROR(ops_.CopyOut(out.logits.data(), logits_.data(), out.logits.size()));
    RETURN_IF_ERROR(ops_.Finish());
    if (ep_ != nullptr && tp_ == nullptr) {  // Per sequence: its activations here, and all.
      int64_t row = 0;
      for (const model::SequenceInput& s : batch) {
        int64_t local = 0, all = 0;
        for (size_t i = 0; i < s.tokens.size(); ++i, ++row) {
          local += row_local_[row];
          all += row_all_[row];
        }
        out.local_activations.push_back(local);
        out.activations.push_back(all);
      }
    }
    return out;
  }

 private:
  // The pass's device work once the batch's metadata is in place: embedding, layers, the rows
  // whose logits are wanted through the final norm and lm_head into logits_. Only device work
  // under a graph (a padded decode step: no EP, no TP, stacked experts, no routing).
  absl::Status Body(absl::Span<const model::SequenceInput> batch, const BatchLayout& b,
                    int64_t tokens, int64_t rows, const model::ForwardOptions& options,
                    model::ForwardOutput& out) {
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(w_.embed, ids_.data(), tokens, c_.hidden_size, x_.data()));
    std::vector<int32_t> prev;  // Each token's predecessor (−1 unknown): TP's predictions.
    if (tp_ != nullptr) {
      prev = PreviousTokens(batch);
      RETURN_IF_ERROR(prev_ids_.Reserve(tokens));
      RETURN_IF_ERROR(ops_.CopyIn(prev_ids_.data(), prev.data(), tokens));
      RETURN_IF_ERROR(tp_->BeginPass(ids_.data(), prev_ids_.data(), tokens));
    }
    if (time_attention_) out.attention_seconds_per_layer.assign(c_.num_layers, 0.0);
    for (int layer = 0; layer < c_.num_layers; ++layer) {
      const absl::Time start = time_attention_ ? absl::Now() : absl::InfinitePast();
      ASSIGN_OR_RETURN(const LayerView* lw, RunnableLayer(layer));
      RETURN_IF_ERROR(Attention(*lw, layer, tokens, b.max_pages));
      if (time_attention_) {
        RETURN_IF_ERROR(ops_.Finish());
        const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
        out.attention_seconds += seconds;
        out.attention_seconds_per_layer[layer] = seconds;
      }
      const bool collect = options.collect_routing && w_.layers[layer].is_moe;
      model::Routing routing;
      if (tp_ == nullptr) {
        RETURN_IF_ERROR(ops_.AddInPlace(x_.data(), o_.data(), tokens * c_.hidden_size));
        RETURN_IF_ERROR(
            ffn_->Run(layer, *lw, x_.data(), tokens, collect ? &routing : nullptr));
      } else {
        ASSIGN_OR_RETURN(const int64_t rows,
                         tp_->ReduceScatter(layer, tokens, o_.data(), x_.data(), chunk_.data()));
        ep_->SetRankTokens(tp_->plans()[layer].counts);
        RETURN_IF_ERROR(
            ffn_->Run(layer, *lw, chunk_.data(), rows, collect ? &routing : nullptr));
        RETURN_IF_ERROR(tp_->AllGather(chunk_.data(), x_.data(), ep_->home_devices()));
      }
      if (collect) out.routing.push_back(std::move(routing));
    }
    RETURN_IF_ERROR(
        ops_.GatherRowsByIndex(x_.data(), logit_rows_.data(), rows, c_.hidden_size, last_.data()));
    RETURN_IF_ERROR(ops_.RmsNorm(last_.data(), rows, c_.hidden_size, c_.hidden_size, w_.final_norm,
                                 c_.rms_norm_eps));
    RETURN_IF_ERROR(ops_.Linear(last_.data(), rows, w_.lm_head, logits_.data()));
    return absl::OkStatus();
  }

  // The addresses a decode graph captured (and the Ops' scratch generation): after any change the
  // bucket is captured again.
  std::vector<uintptr_t> Signature() const {
    std::vector<uintptr_t> sig;
    std::vector<const void*> pointers = {x_.data(),
                                         h_.data(),
                                         q_.data(),
                                         k_.data(),
                                         v_.data(),
                                         attn_.data(),
                                         o_.data(),
                                         last_.data(),
                                         logits_.data(),
                                         kv_.data(),
                                         ids_.data(),
                                         positions_.data(),
                                         seq_of_token_.data(),
                                         page_table_.data(),
                                         logit_rows_.data(),
                                         kv16_.data()};
    ffn_->AppendPointers(pointers);
    if (mla_ != nullptr) mla_->AppendPointers(pointers);
    for (const void* p : pointers) sig.push_back(reinterpret_cast<uintptr_t>(p));
    if constexpr (OpsHaveGraphs<Ops>::value) sig.push_back(ops_.scratch_generation());
    return sig;
  }

  // Per batch token, the token before it in its sequence (the sequence's prev_token for its
  // first new token; −1 unknown).
  static std::vector<int32_t> PreviousTokens(absl::Span<const model::SequenceInput> batch) {
    std::vector<int32_t> prev;
    for (const model::SequenceInput& s : batch) {
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        prev.push_back(t == 0 ? s.prev_token : s.tokens[t - 1]);
      }
    }
    return prev;
  }

  // The experts this device runs are in `w`; under EP the placement fits the model and group.
  absl::Status CheckExperts(const ExpertParallelOptions& o, const ModelView& w) const {
    const bool ep = o.placement != nullptr || o.comm != nullptr;
    if (ep && (o.placement == nullptr || o.comm == nullptr)) {
      return absl::InvalidArgumentError("expert parallelism needs a placement and a communicator");
    }
    if (o.attention_tp && !ep) {
      return absl::InvalidArgumentError(
          "Attention-TP needs expert parallelism over its group (a placement and a communicator)");
    }
    const planner::Placement* p = o.placement;
    if (ep && (p->moe_layers() != c_.MoeLayers() || p->num_experts() != c_.num_experts ||
               p->num_devices() != o.comm->size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the placement (", p->num_layers(), " MoE layers, ", p->num_experts(), " experts, ",
          p->num_devices(), " devices) does not fit the model and the group of ", o.comm->size()));
    }
    int moe = 0;
    for (int layer = 0; layer < c_.num_layers; ++layer) {
      const LayerView& l = w.layers[layer];
      if (!l.is_moe) continue;
      for (int e = 0; e < c_.num_experts; ++e) {
        const bool needed = !ep || p->Holds(moe, o.comm->rank(), e);
        if (needed && (e >= static_cast<int>(l.experts.size()) || l.experts[e].gate.empty())) {
          return absl::FailedPreconditionError(absl::StrCat(
              "layer ", layer, " expert ", e, " is not loaded but runs on this device"));
        }
      }
      ++moe;
    }
    return absl::OkStatus();
  }

  // The exchanges and the FFN for a placement (none without expert parallelism), made before any
  // is installed so that a failure changes nothing. Ops memory must be usable (Begin).
  struct Exchanges {
    std::unique_ptr<EpExchange<Ops>> ep;
    std::unique_ptr<TpExchange<Ops>> tp;
  };
  absl::StatusOr<Exchanges> MakeExchanges(const ExpertParallelOptions& o) {
    Exchanges x;
    if (o.placement == nullptr) return x;
    if (o.topology != nullptr) {
      if (o.topology->num_ranks() != o.comm->size()) {
        return absl::InvalidArgumentError(absl::StrCat("topology ", o.topology->Describe(), " has ",
                                                       o.topology->num_ranks(), " ranks, the group ",
                                                       o.comm->size()));
      }
      RETURN_IF_ERROR(o.placement->CheckServes(*o.topology));
    }
    x.ep = std::make_unique<EpExchange<Ops>>(c_, *o.placement, *o.comm, ops_, o.holder_choice,
                                             o.routing_gather_max_bytes, o.topology);
    if (o.attention_tp) {
      x.tp = std::make_unique<TpExchange<Ops>>(c_, *o.comm, ops_, o.predictor, o.token_balance_eps);
      RETURN_IF_ERROR(x.tp->Init());
    }
    return x;
  }
  void Install(Exchanges x) {
    if (tp_ != nullptr && x.tp != nullptr) x.tp->ContinueCounters(tp_->counters());  // A rollout.
    ep_ = std::move(x.ep);
    tp_ = std::move(x.tp);
    ffn_ = std::make_unique<FfnBlock<Ops>>(
        c_, ops_,
        typename FfnBlock<Ops>::Exchange{.ep = ep_.get(),
                                         .moe_index = &moe_index_,
                                         .row_local = &row_local_,
                                         .row_all = &row_all_,
                                         .counters = &ep_counters_});
    all_stacked_ = true;
    for (const LayerView& l : w_.layers) {
      const bool stacked = l.stacked.gate != nullptr || l.stacked.gate8.codes != nullptr;
      all_stacked_ = all_stacked_ && (!l.is_moe || (stacked && l.stacked.experts.empty()));
    }
  }

  // Layer `layer`'s keys (kind 0) or values (kind 1) in the f32 or the bf16 arena (null in the
  // other). Under MLA the keys are the latent rows and there are no values.
  int64_t KvOffset(int layer, int kind) const {
    return int64_t{layer} * layer_kv_floats_ + kind * layer_keys_;
  }
  float* Kv(int layer, int kind) {
    return kv_options_.bf16 ? nullptr : kv_.data() + KvOffset(layer, kind);
  }
  uint16_t* Kv16(int layer, int kind) {
    return kv_options_.bf16 ? kv16_.data() + KvOffset(layer, kind) : nullptr;
  }

  // Grows the per-pass buffers to this pass.
  absl::Status Reserve(int64_t tokens, int64_t logit_rows, int64_t page_entries) {
    const int64_t hidden = c_.hidden_size;
    for (Array<float>* a : {&x_, &h_, &o_}) RETURN_IF_ERROR(a->Reserve(tokens * hidden));
    RETURN_IF_ERROR(chunk_.Reserve(tokens * (hidden + 1)));  // TP: the homes ride behind.
    RETURN_IF_ERROR(q_.Reserve(tokens * c_.q_size()));
    RETURN_IF_ERROR(attn_.Reserve(tokens * std::max(c_.q_size(), c_.attn_out_size())));
    if (mla_ != nullptr) {
      RETURN_IF_ERROR(mla_->Reserve(tokens));
    } else {
      for (Array<float>* a : {&k_, &v_}) RETURN_IF_ERROR(a->Reserve(tokens * c_.kv_size()));
    }
    RETURN_IF_ERROR(ffn_->Reserve(tokens));
    RETURN_IF_ERROR(last_.Reserve(logit_rows * hidden));
    RETURN_IF_ERROR(logits_.Reserve(logit_rows * c_.vocab_size));
    for (Array<int32_t>* a : {&ids_, &positions_, &seq_of_token_}) {
      RETURN_IF_ERROR(a->Reserve(tokens));
    }
    RETURN_IF_ERROR(logit_rows_.Reserve(logit_rows));
    return page_table_.Reserve(page_entries);
  }

  // FP8 weights (fp8_view.h): each layer dequantised into the scratch before it runs.
  absl::Status PrepareFp8() {
    fp8_on_ = HasFp8(w_);
    return fp8_on_ ? fp8_.Prepare(ops_, w_) : absl::OkStatus();
  }
  absl::StatusOr<const LayerView*> RunnableLayer(int layer) {
    if (!fp8_on_) return &w_.layers[layer];
    return fp8_.Layer(ops_, layer);
  }

  // o_ = o_proj(attention(norm(x))), the new keys and values written to the cache first (under
  // Attention-TP a partial sum over this rank's heads).
  absl::Status Attention(const LayerView& w, int layer, int64_t tokens, int max_pages) {
    if (mla_ != nullptr) {
      RETURN_IF_ERROR(mla_->Run(w, tokens,
                                {.x = x_.data(),
                                 .h = h_.data(),
                                 .q = q_.data(),
                                 .attn = attn_.data(),
                                 .positions = positions_.data(),
                                 .seq_of_token = seq_of_token_.data(),
                                 .page_table = page_table_.data(),
                                 .max_pages = max_pages,
                                 .page_size = kv_options_.page_size,
                                 .cache = Kv(layer, 0),
                                 .cache16 = Kv16(layer, 0)}));
      return ops_.Linear(attn_.data(), tokens, w.o, o_.data());
    }
    const int64_t hidden = c_.hidden_size, q_size = c_.q_size(), kv_size = c_.kv_size();
    RETURN_IF_ERROR(ops_.Copy(h_.data(), x_.data(), tokens * hidden));
    RETURN_IF_ERROR(ops_.RmsNorm(h_.data(), tokens, hidden, hidden, w.input_norm, c_.rms_norm_eps));
    RETURN_IF_ERROR(ops_.Linear(h_.data(), tokens, w.q, q_.data()));
    RETURN_IF_ERROR(ops_.Linear(h_.data(), tokens, w.k, k_.data()));
    RETURN_IF_ERROR(ops_.Linear(h_.data(), tokens, w.v, v_.data()));
    if (c_.attention_bias) {
      RETURN_IF_ERROR(ops_.AddRowBias(q_.data(), tokens, q_size, q_size, w.q_bias));
      RETURN_IF_ERROR(ops_.AddRowBias(k_.data(), tokens, kv_size, kv_size, w.k_bias));
      RETURN_IF_ERROR(ops_.AddRowBias(v_.data(), tokens, kv_size, kv_size, w.v_bias));
    }
    RETURN_IF_ERROR(ops_.QkNormRope({.x = q_.data(),
                                     .rows = tokens,
                                     .row_stride = q_size,
                                     .heads = c_.num_heads,
                                     .head_dim = c_.head_dim,
                                     .norm_weight = c_.qk_norm ? w.q_norm : nullptr,
                                     .eps = c_.rms_norm_eps,
                                     .positions = positions_.data(),
                                     .cos = rope_cos_.data(),
                                     .sin = rope_sin_.data()}));
    RETURN_IF_ERROR(ops_.QkNormRope({.x = k_.data(),
                                     .rows = tokens,
                                     .row_stride = kv_size,
                                     .heads = c_.num_kv_heads,
                                     .head_dim = c_.head_dim,
                                     .norm_weight = c_.qk_norm ? w.k_norm : nullptr,
                                     .eps = c_.rms_norm_eps,
                                     .positions = positions_.data(),
                                     .cos = rope_cos_.data(),
                                     .sin = rope_sin_.data()}));
    for (int kind = 0; kind < 2; ++kind) {
      RETURN_IF_ERROR(ops_.StorePagedKv({.rows = kind == 0 ? k_.data() : v_.data(),
                                         .tokens = tokens,
                                         .width = kv_size,
                                         .seq_of_token = seq_of_token_.data(),
                                         .position = positions_.data(),
                                         .page_table = page_table_.data(),
                                         .max_pages = max_pages,
                                         .page_size = kv_options_.page_size,
                                         .cache = Kv(layer, kind),
                                         .cache16 = Kv16(layer, kind)}));
    }
    RETURN_IF_ERROR(ops_.PagedAttention({.q = q_.data(),
                                         .tokens = tokens,
                                         .q_heads = c_.num_heads,
                                         .kv_heads = c_.num_kv_heads,
                                         .head_dim = c_.head_dim,
                                         .k_cache = Kv(layer, 0),
                                         .v_cache = Kv(layer, 1),
                                         .page_size = kv_options_.page_size,
                                         .page_table = page_table_.data(),
                                         .max_pages = max_pages,
                                         .seq_of_token = seq_of_token_.data(),
                                         .position = positions_.data(),
                                         .scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim)),
                                         .out = attn_.data(),
                                         .k_cache16 = Kv16(layer, 0),
                                         .v_cache16 = Kv16(layer, 1)}));
    return ops_.Linear(attn_.data(), tokens, w.o, o_.data());
  }

  const model::ModelConfig c_;
  ModelView w_;  // Replaced by SwitchPlacement.
  const KvArenaOptions kv_options_;
  Ops& ops_;
  ExpertParallelOptions ep_options_;
  std::unique_ptr<EpExchange<Ops>> ep_;        // Set under expert parallelism.
  std::vector<int> moe_index_;                 // Model layer → placement layer (EP), or −1.
  std::vector<MoeLayerCounters> ep_counters_;  // Per placement layer (EP).
  std::vector<int32_t> row_local_, row_all_;   // Per token of the pass: activations here, all.
  Array<float> kv_;
  Array<uint16_t> kv16_;         // Instead of kv_ with KvArenaOptions::bf16.
  int64_t layer_kv_floats_ = 0;  // Per layer: keys and values.
  int64_t layer_keys_ = 0;       // Per layer: the keys (the values follow them).
  Array<float> rope_cos_, rope_sin_;
  // Per-pass buffers, grown to the largest pass and reused.
  Array<float> x_, h_, q_, k_, v_, attn_, o_, last_, logits_;
  std::unique_ptr<MlaBlock<Ops>> mla_;  // config.mla: the attention (Init).
  std::unique_ptr<FfnBlock<Ops>> ffn_;  // Set by Init.
  Array<float> chunk_;                  // Attention-TP: this rank's chunk of the residual stream.
  std::unique_ptr<TpExchange<Ops>> tp_;
  Array<int32_t> prev_ids_;  // Attention-TP: each token's predecessor, for the predictions.
  Array<int32_t> ids_, positions_, seq_of_token_, page_table_, logit_rows_;
  int graph_max_batch_ = 0;
  bool time_attention_ = false;
  bool all_stacked_ = false;  // Every MoE layer's experts stacked: no host sync in a pass.
  Fp8Layers<Ops> fp8_;        // With FP8 weights (fp8_on_): their per-layer bf16 scratch.
  bool fp8_on_ = false;
  DecodeGraphs<Ops> graphs_{ops_};
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_FORWARD_RUNNER_H_
