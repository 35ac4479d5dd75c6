#include "engine/offline/trace_run.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/offline/jsonl.h"
#include "engine/offline/prefill_runner.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::engine::offline {

absl::StatusOr<TraceSummary> RunTrace(const model::ModelConfig& config,
                                      const model::Tokenizer* tokenizer,
                                      const TraceOptions& options) {
  const model::ModelConfig& c = config;
  planner::trace::TraceHeader header;
  header.num_experts = c.num_experts;
  header.vocab_size = c.vocab_size;
  header.top_k = c.top_k;
  for (int layer : c.MoeLayers()) header.moe_layers.push_back(static_cast<uint16_t>(layer));
  ASSIGN_OR_RETURN(auto writer, planner::trace::TraceWriter::Create(options.output, header));
  ASSIGN_OR_RETURN(auto reader, JsonlReader::Open(options.prompts));

  const int layers = header.num_moe_layers(), k = c.top_k;
  std::vector<uint64_t> requests;
  std::vector<int32_t> experts(layers * k);
  std::vector<float> weights(layers * k);
  TraceSummary summary;
  PrefillRunner runner(
      c, options.max_batch_tokens,
      [&](const PromptResult& r) {
        for (size_t t = 0; t < r.tokens.size(); ++t) {
          for (int l = 0; l < layers; ++l) {
            for (int j = 0; j < k; ++j) {
              experts[l * k + j] = r.expert_ids[l][t * k + j];
              weights[l * k + j] = r.weights[l][t * k + j];
            }
          }
          RETURN_IF_ERROR(writer->AddToken(requests[r.index], static_cast<uint32_t>(t), r.tokens[t],
                                           experts, weights));
        }
        summary.tokens += static_cast<int64_t>(r.tokens.size());
        if (options.progress != nullptr) options.progress->Add(1);
        return absl::OkStatus();
      },
      options.backend);
  const int max_tokens =
      options.max_prompt_tokens > 0 ? options.max_prompt_tokens : c.max_position_embeddings;
  nlohmann::json line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(line));
    if (!more) break;
    const std::string where = reader->where();
    ASSIGN_OR_RETURN(nlohmann::json id, ReadId(line, where));
    std::vector<int32_t> tokens;
    if (line.contains("token_ids")) {
      ASSIGN_OR_RETURN(tokens, ReadTokenIds(line, c.vocab_size, where));
    } else if (line.contains("text") && line["text"].is_string()) {
      if (tokenizer == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": \"text\" needs a tokenizer.json in the model directory"));
      }
      auto encoded = tokenizer->Encode(line["text"].get<std::string>());
      if (!encoded.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", encoded.status().message()));
      }
      tokens = std::move(*encoded);
      if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty text"));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": needs \"text\" (string) or \"token_ids\""));
    }
    if (static_cast<int>(tokens.size()) > max_tokens) tokens.resize(max_tokens);
    ASSIGN_OR_RETURN(uint64_t request,
                     writer->AddRequest(id.is_string() ? id.get<std::string>() : id.dump()));
    requests.push_back(request);
    absl::Status added = runner.Add(std::move(tokens));
    if (!added.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", added.message()));
    ++summary.prompts;
  }
  RETURN_IF_ERROR(runner.Flush());
  RETURN_IF_ERROR(writer->Close());
  return summary;
}

}  // namespace semmoe::engine::offline
