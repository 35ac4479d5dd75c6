#include "engine/model/model.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::engine::model {

absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& dir,
                                                 const ModelOptions& options) {
  auto model = std::make_unique<Model>();
  model->dir = dir;
  ASSIGN_OR_RETURN(model->config, LoadModelConfig(dir));
  {
    // The f32 copies are all the forward needs; the mapping is dropped after loading.
    ASSIGN_OR_RETURN(std::unique_ptr<kernels::Checkpoint> checkpoint,
                     kernels::Checkpoint::Open(dir));
    ASSIGN_OR_RETURN(model->weights, LoadWeights(model->config, *checkpoint, options.load));
  }
  auto tokenizer = Tokenizer::FromDirectory(dir);
  if (tokenizer.ok()) {
    model->tokenizer = std::move(*tokenizer);
    if (model->tokenizer->vocab_size() > model->config.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": tokenizer has ", model->tokenizer->vocab_size(),
                       " ids but the model's vocab_size is ", model->config.vocab_size));
    }
  } else if (!absl::IsNotFound(tokenizer.status()) || options.require_tokenizer) {
    return tokenizer.status();
  }
  return model;
}

}  // namespace semmoe::engine::model
