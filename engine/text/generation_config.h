// GenerationConfig: the sampling defaults and stop ids a checkpoint ships in
// `generation_config.json` (Hugging Face field names), merged with config.json's eos ids.
#ifndef SEMMOE_ENGINE_TEXT_GENERATION_CONFIG_H_
#define SEMMOE_ENGINE_TEXT_GENERATION_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/text/config.h"

namespace semmoe::engine::model {

struct GenerationConfig {
  std::vector<int32_t> eos_token_ids;  // config.json's, then generation_config.json's extras.
  bool do_sample = false;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;  // HF's default 50 applies only when the file sets do_sample without top_k.
};

// Parses generation_config.json text (fields absent → defaults above).
absl::StatusOr<GenerationConfig> ParseGenerationConfig(absl::string_view json_text,
                                                       const ModelConfig& model);

// Reads `<dir>/generation_config.json`; a missing file gives the defaults and config's eos ids.
absl::StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& dir,
                                                      const ModelConfig& model);

}  // namespace semmoe::engine::model

#endif  // SEMMOE_ENGINE_TEXT_GENERATION_CONFIG_H_
