#include "engine/text/generation_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"

namespace semmoe::engine::model {

absl::StatusOr<GenerationConfig> ParseGenerationConfig(absl::string_view json_text,
                                                       const ModelConfig& model) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json_text, "generation_config.json"));
  if (!j.is_object()) {
    return absl::InvalidArgumentError("generation_config.json: expected a JSON object");
  }
  JsonFields f(j, "generation_config.json");
  GenerationConfig g;
  g.eos_token_ids = model.eos_token_ids;
  ASSIGN_OR_RETURN(std::vector<int64_t> eos, f.IntOrIntList("eos_token_id"));
  for (int64_t id : eos) {
    if (id < 0 || id >= model.vocab_size) {
      return f.Error("eos_token_id", absl::StrCat(id, " is outside the vocabulary"));
    }
    if (std::find(g.eos_token_ids.begin(), g.eos_token_ids.end(), id) == g.eos_token_ids.end()) {
      g.eos_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
  ASSIGN_OR_RETURN(g.do_sample, f.Bool("do_sample", false));
  ASSIGN_OR_RETURN(double temperature, f.Number("temperature", 1.0));
  ASSIGN_OR_RETURN(double top_p, f.Number("top_p", 1.0));
  ASSIGN_OR_RETURN(int64_t top_k, f.Int("top_k", g.do_sample ? 50 : 0, 0, INT32_MAX));
  if (temperature < 0) return f.Error("temperature", "must be >= 0");
  if (top_p <= 0 || top_p > 1) return f.Error("top_p", "must be in (0, 1]");
  g.temperature = static_cast<float>(temperature);
  g.top_p = static_cast<float>(top_p);
  g.top_k = static_cast<int>(top_k);
  return g;
}

absl::StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& dir,
                                                      const ModelConfig& model) {
  auto text = ReadFile(JoinPath(dir, "generation_config.json"));
  if (absl::IsNotFound(text.status())) {
    GenerationConfig g;
    g.eos_token_ids = model.eos_token_ids;
    return g;
  }
  if (!text.ok()) return text.status();
  auto g = ParseGenerationConfig(*text, model);
  if (!g.ok()) return absl::Status(g.status().code(), absl::StrCat(dir, "/", g.status().message()));
  return g;
}

}  // namespace semmoe::engine::model
