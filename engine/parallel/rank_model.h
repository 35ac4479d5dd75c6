// RankModel: one EP rank's share of a model, ready to run: only the experts the placement puts
// on this rank, under Attention-TP only this rank's attention heads, and — unless the rank's
// forward runs on a device — the CPU forward over them (engine/forward/cpu_forward.h: the op-set
// forward with the experts' exchange under Attention-DP, or Attention-TP's shuffled
// reduce-scatter / all-gather, plain or shuffled). Every rank of the group runs the same layers
// in lockstep; engine/forward/ep_exchange.h and tp_exchange.h say what each layer exchanges.
//
// Thread-compatible (owns the rank's use of the communicator).
#ifndef SEMMOE_ENGINE_PARALLEL_RANK_MODEL_H_
#define SEMMOE_ENGINE_PARALLEL_RANK_MODEL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/forward/cpu_forward.h"
#include "engine/model/weights.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/rank_forward.h"
#include "engine/parallel/rank_placement.h"
#include "engine/parallel/tp_counters.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"
#include "engine/text/tokenizer.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

enum class AttentionMode { kDp, kTp };
const char* AttentionModeName(AttentionMode mode);  // "dp", "tp".

struct RankModelOptions {
  AttentionMode attention = AttentionMode::kDp;
  // For Attention-TP: predicts token devices for the shuffled collectives; null = plain order.
  // Borrowed; outlives the model.
  const DevicePredictor* predictor = nullptr;
  // With a predictor: a rank's share of a batch may reach (1 + eps) × the mean, so more tokens
  // land where their experts are (planner/placement/balanced_assign.h). 0: equal chunks.
  double token_balance_eps = 0.05;
  // With replicas: the per-batch holder choice (forward::ExpertParallelOptions::holder_choice).
  bool holder_choice = true;
  // With it: forward::ExpertParallelOptions::routing_gather_max_bytes (0: never gather).
  int64_t routing_gather_max_bytes = forward::kRoutingGatherMaxBytes;
  // The group's nodes (borrowed; null: one node): forward::ExpertParallelOptions::topology.
  const planner::Topology* topology = nullptr;
  // The rank's CPU forward and its KV arena: as many pages of `page_size` positions as
  // `kv_cache_bytes` hold of this rank's cache rows — the rule of the BatchEngine the rank
  // serves with, whose Options must give the same two values (GroupEngine checks). False
  // `cpu_forward`: none (the forward runs on a device: GroupEngineOptions::device).
  bool cpu_forward = true;
  // The device forward keeps FP8 weights FP8 (`engine --precision fp8`): load them FP8-only
  // (model::LoadOptions::fp8_in_memory). Needs cpu_forward false.
  bool fp8_in_memory = false;
  int page_size = 16;
  int64_t kv_cache_bytes = 256ll << 20;
};

// An expert a rank gains in a rollout, loaded before the switch. `layer` is the model layer.
struct StagedExpert {
  int layer = 0, expert = 0;
  model::MlpWeights weights;
};

// The (model layer, expert) pairs `next` puts on `rank` (home or replica) that `current` does
// not, ascending. REQUIRES: both for the same model.
std::vector<std::pair<int, int>> GainedExperts(const planner::Placement& current,
                                               const planner::Placement& next, int rank);

class RankModel {
 public:
  // Loads `dir` for `comm.rank()` of `comm.size()` under `placement` (borrowed like `comm`; both
  // outlive the model). Errors name the directory, the tensor or the mismatch.
  static absl::StatusOr<std::unique_ptr<RankModel>> Create(const std::string& dir,
                                                           const planner::Placement& placement,
                                                           Communicator& comm,
                                                           const RankModelOptions& options);

  // The same, serving with an owned placement (and its predictor, which replaces
  // options.predictor): what a rollout can replace.
  static absl::StatusOr<std::unique_ptr<RankModel>> Create(const std::string& dir,
                                                           std::unique_ptr<RankPlacement> placement,
                                                           Communicator& comm,
                                                           RankModelOptions options);

  // Serves with `next` from the next pass: installs `gained` (exactly GainedExperts(placement(),
  // next->placement, rank)), rebinds the FFN and the Attention-TP predictor, then frees the
  // experts `next` no longer puts here. On error nothing changed. Called between passes, on the
  // thread that runs them. Returns the experts freed and their bytes.
  struct Switched {
    int64_t experts_freed = 0, bytes_freed = 0;
  };
  absl::StatusOr<Switched> SwitchPlacement(std::unique_ptr<RankPlacement> next,
                                           std::vector<StagedExpert> gained);

  const std::string& dir() const { return dir_; }
  const planner::Placement& placement() const { return *placement_; }
  // The planner version served (0: a file, vanilla, or a borrowed placement).
  int64_t placement_version() const { return owned_ == nullptr ? 0 : owned_->version; }
  // What the rank serves with, for the operator ("" for a borrowed placement).
  std::string placement_description() const { return owned_ == nullptr ? "" : owned_->description; }

  // The model's own config (heads of the whole model).
  const model::ModelConfig& config() const { return config_; }
  // This rank's weights (its experts only; under Attention-TP its heads only). REQUIRES:
  // holds_host_weights().
  const model::ModelWeights& weights() const { return *weights_; }
  // A rank whose forward runs on a device keeps no host copy of its weights once the device has
  // them: this frees them (FAILED_PRECONDITION with a CPU forward, which reads them in place).
  // From then on SwitchPlacement only rebinds the placement (the device took the gained experts;
  // the freed ones are counted at their f32 size). Returns the bytes freed.
  absl::StatusOr<int64_t> ReleaseHostWeights();
  bool holds_host_weights() const { return weights_ != nullptr; }
  // Null if the directory has no tokenizer.json.
  const model::Tokenizer* tokenizer() const { return tokenizer_.get(); }
  AttentionMode attention() const { return options_.attention; }
  // The KV cache rows this rank stores (its KV heads; under MLA the whole latent).
  model::KvShape local_kv_shape() const { return local_config_.kv_shape(); }
  int local_num_layers() const { return local_config_.num_layers; }
  // The config of this rank's forward: under Attention-TP its heads only (else config()).
  const model::ModelConfig& local_config() const { return local_config_; }
  // Attention-TP's chunk rule: the predictor served now (null: contiguous chunks) and the balance.
  const DevicePredictor* predictor() const {
    return owned_ != nullptr ? owned_->predictor.get() : options_.predictor;
  }
  double token_balance_eps() const { return options_.token_balance_eps; }
  // The CPU forward (null when options.cpu_forward was false), and the seam GroupEngine runs it
  // through. Its SwitchPlacement is refused: a CPU rank switches with this object's.
  forward::CpuForward* cpu_forward() const { return cpu_.get(); }
  RankForward* forward() const { return rank_forward_.get(); }
  // The CPU forward's KV pages (0: none), and a host cache that hands them out (no arena: the
  // forward keeps the keys and values) for callers that run passes themselves (tests, tools).
  int kv_pages() const { return kv_pages_; }
  absl::StatusOr<std::unique_ptr<runtime::PagedKvCache>> NewPageCache() const;
  // Under Attention-TP on the CPU: what the exchange did so far; else null.
  const TpStageCounters* tp_counters() const {
    return cpu_ != nullptr ? cpu_->tp_counters() : nullptr;
  }
  Communicator& comm() const { return comm_; }

 private:
  RankModel(Communicator& comm, const RankModelOptions& options) : comm_(comm), options_(options) {}

  Communicator& comm_;
  RankModelOptions options_;
  std::string dir_;
  std::unique_ptr<RankPlacement> owned_;  // Null when the placement is borrowed.
  const planner::Placement* placement_ = nullptr;
  model::ModelConfig config_, local_config_;
  std::unique_ptr<model::ModelWeights> weights_;
  std::unique_ptr<model::Tokenizer> tokenizer_;
  int kv_pages_ = 0;
  std::unique_ptr<forward::CpuForward> cpu_;
  std::unique_ptr<RankForward> rank_forward_;  // Over cpu_.
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_RANK_MODEL_H_
