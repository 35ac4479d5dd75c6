// Attention-DP: each rank runs attention over its own batch; only the experts are parallel.
// The stage adds the rank's attention output and runs the FFN through expert parallelism.
#ifndef SEMMOE_ENGINE_PARALLEL_DP_STAGE_H_
#define SEMMOE_ENGINE_PARALLEL_DP_STAGE_H_

#include "engine/model/transformer.h"
#include "engine/parallel/ep_ffn.h"

namespace semmoe::engine {

class DpLayerStage final : public model::LayerStage {
 public:
  explicit DpLayerStage(ExpertParallelFfn& ffn) : ffn_(ffn) {}  // Borrowed.
  absl::Status Run(int layer, const model::BatchTokens& tokens, model::Matrix& x,
                   model::Matrix& attn, model::Routing* routing) override {
    x += attn;
    absl::Status status = ffn_.Run(layer, x, attn, routing);
    if (status.ok()) x += attn;
    return status;
  }

 private:
  ExpertParallelFfn& ffn_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_DP_STAGE_H_
