#include "planner/trace/array_trace.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner::trace {
namespace {

absl::Status Bad(const std::string& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

int64_t IntField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

absl::StatusOr<TraceSet> ImportArrayTrace(const std::string& dir) {
  const std::string index_path = JoinPath(dir, "index.json");
  ASSIGN_OR_RETURN(std::string index_text, ReadFile(index_path));
  nlohmann::json index = ParseJsonOrDiscarded(index_text);
  if (index.is_discarded() || !index.is_object()) return Bad(index_path, "invalid JSON");
  const int64_t layers = IntField(index, "num_layers"), experts = IntField(index, "num_experts"),
                k = IntField(index, "top_k");
  if (layers <= 0 || layers > 65535 || experts <= 0 || experts > 256 || k <= 0 || k > experts) {
    return Bad(index_path, "num_layers, num_experts (≤ 256 for u8 ids) and top_k are required");
  }
  if (!index.contains("prompts") || !index["prompts"].is_array()) {
    return Bad(index_path, "'prompts' must be a list");
  }
  const std::string tokens_path = JoinPath(dir, "tokens.u16");
  const std::string ids_path = JoinPath(dir, "topk_ids.u8");
  ASSIGN_OR_RETURN(std::string token_bytes, ReadFile(tokens_path, kMaxDataFileBytes));
  ASSIGN_OR_RETURN(std::string id_bytes, ReadFile(ids_path, kMaxDataFileBytes));
  if (token_bytes.size() % 2 != 0) return Bad(tokens_path, "odd byte count");
  const int64_t total = static_cast<int64_t>(token_bytes.size() / 2);
  if (static_cast<int64_t>(id_bytes.size()) != total * layers * k) {
    return Bad(ids_path, absl::StrCat(id_bytes.size(), " bytes, expected ", total, " tokens × ",
                                      layers, " layers × ", k));
  }
  TraceSet set;
  set.header.num_experts = static_cast<uint32_t>(experts);
  set.header.top_k = static_cast<uint16_t>(k);
  for (int l = 0; l < layers; ++l) set.header.moe_layers.push_back(static_cast<uint16_t>(l));
  const size_t per_token = static_cast<size_t>(layers * k);
  for (const auto& p : index["prompts"]) {
    const int64_t offset = IntField(p, "token_offset"), n = IntField(p, "n_tokens");
    if (offset < 0 || n <= 0 || offset > total || n > total - offset) {  // No overflow.
      return Bad(index_path, absl::StrCat("prompt ", p.dump(), " is outside the ", total,
                                          " tokens"));
    }
    std::vector<uint32_t> tokens(n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t id;
      std::memcpy(&id, token_bytes.data() + 2 * (offset + i), 2);
      tokens[i] = id;
    }
    std::vector<uint16_t> ids(id_bytes.begin() + offset * per_token,
                              id_bytes.begin() + (offset + n) * per_token);
    std::string name = p.contains("doc_id") && p["doc_id"].is_string()
                           ? absl::StrCat(p["doc_id"].get<std::string>(), "@", offset)
                           : absl::StrCat("prompt@", offset);
    absl::Status added = set.AddRequest(std::move(name), tokens, ids);
    if (!added.ok()) return Bad(ids_path, added.message());
  }
  return set;
}

}  // namespace semmoe::planner::trace
