// Model: what a checkpoint directory holds — config, f32 weights and (if the directory has one)
// the tokenizer. The forward passes over it are engine/forward's CpuForward (and on a GPU
// engine/gpu's GpuTransformer).
#ifndef SEMMOE_ENGINE_MODEL_MODEL_H_
#define SEMMOE_ENGINE_MODEL_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"
#include "engine/text/tokenizer.h"
#include "kernels/safetensors.h"

namespace semmoe::engine::model {

struct Model {
  std::string dir;
  ModelConfig config;
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;  // Null if the directory has no tokenizer.json.
};

struct ModelOptions {
  LoadOptions load;
  bool require_tokenizer = false;  // Else a missing tokenizer.json leaves `tokenizer` null.
};

// Errors name the directory and the file or tensor at fault.
absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& dir,
                                                 const ModelOptions& options = {});

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_MODEL_MODEL_H_
