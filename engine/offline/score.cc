#include "engine/offline/score.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "engine/offline/jsonl.h"
#include "engine/offline/prefill_runner.h"

namespace semmoe::engine::offline {

namespace {

absl::StatusOr<int> ScoreInto(const model::ModelConfig& c, const ScoreOptions& options,
                              const std::string& partial) {
  ASSIGN_OR_RETURN(auto reader, JsonlReader::Open(options.input));
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("cannot create ", partial));
  std::vector<nlohmann::json> ids;
  const int layers = static_cast<int>(c.MoeLayers().size());
  PrefillRunner runner(
      c, options.max_batch_tokens,
      [&](const PromptResult& r) {
        std::string line = absl::StrCat("{\"id\": ", ids[r.index].dump(), ", \"last_logits\": [");
        for (int v = 0; v < c.vocab_size; ++v) {
          absl::StrAppendFormat(&line, v == 0 ? "%.9g" : ", %.9g", r.last_logits[v]);
        }
        line += "], \"routing\": [";
        for (int l = 0; l < layers; ++l) {
          line += l == 0 ? "[" : ", [";
          for (size_t t = 0; t < r.tokens.size(); ++t) {
            line += t == 0 ? "[" : ", [";
            for (int j = 0; j < c.top_k; ++j) {
              absl::StrAppend(&line, j == 0 ? "" : ", ", r.expert_ids[l][t * c.top_k + j]);
            }
            line += "]";
          }
          line += "]";
        }
        line += "]}\n";
        out << line;
        if (options.progress != nullptr) options.progress->Add(1);
        return out ? absl::OkStatus() : absl::InternalError(absl::StrCat("writing ", partial));
      },
      options.backend);
  nlohmann::json line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(line));
    if (!more) break;
    ASSIGN_OR_RETURN(nlohmann::json id, ReadId(line, reader->where()));
    ASSIGN_OR_RETURN(std::vector<int32_t> tokens,
                     ReadTokenIds(line, c.vocab_size, reader->where()));
    ids.push_back(std::move(id));
    absl::Status added = runner.Add(std::move(tokens));
    if (!added.ok())
      return absl::InvalidArgumentError(absl::StrCat(reader->where(), ": ", added.message()));
  }
  RETURN_IF_ERROR(runner.Flush());
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("writing ", partial));
  return static_cast<int>(ids.size());
}

}  // namespace

absl::StatusOr<int> RunScore(const model::ModelConfig& config, const ScoreOptions& options) {
  const std::string partial = options.output + ".partial";
  absl::StatusOr<int> lines = ScoreInto(config, options, partial);
  if (lines.ok() && std::rename(partial.c_str(), options.output.c_str()) != 0) {
    lines = absl::InternalError(absl::StrCat("cannot rename ", partial, " to ", options.output));
  }
  if (!lines.ok()) std::remove(partial.c_str());
  return lines;
}

}  // namespace semmoe::engine::offline
