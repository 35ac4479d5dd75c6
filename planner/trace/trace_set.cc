#include "planner/trace/trace_set.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/trace/trace_reader.h"

namespace semmoe::planner::trace {

absl::Status TraceSet::CopyRequest(const TraceSet& from, int r) {
  const size_t per = static_cast<size_t>(from.num_layers()) * from.top_k();
  const int64_t b = from.request_begin[r], e = from.request_begin[r + 1];
  return AddRequest(from.request_names[r], {from.tokens.begin() + b, from.tokens.begin() + e},
                    {from.experts.begin() + b * per, from.experts.begin() + e * per});
}

absl::Status TraceSet::AddRequest(std::string name, const std::vector<uint32_t>& request_tokens,
                                  const std::vector<uint16_t>& request_experts) {
  const size_t per_token = static_cast<size_t>(num_layers()) * top_k();
  if (request_experts.size() != request_tokens.size() * per_token) {
    return absl::InvalidArgumentError(absl::StrCat("request '", name, "': ", request_experts.size(),
                                                   " expert ids for ", request_tokens.size(),
                                                   " tokens"));
  }
  for (uint16_t e : request_experts) {
    if (e >= header.num_experts) {
      return absl::InvalidArgumentError(
          absl::StrCat("request '", name, "': expert ", e, " >= ", header.num_experts));
    }
  }
  request_names.push_back(std::move(name));
  tokens.insert(tokens.end(), request_tokens.begin(), request_tokens.end());
  experts.insert(experts.end(), request_experts.begin(), request_experts.end());
  request_begin.push_back(static_cast<int64_t>(tokens.size()));
  return absl::OkStatus();
}

absl::StatusOr<TraceSet> LoadTraceSet(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, TraceReader::Open(path));
  TraceSet set;
  set.header = reader->header();
  // Buffer per request (a writer may interleave requests), then append in first-seen order.
  std::vector<std::vector<uint32_t>> tokens;
  std::vector<std::vector<uint16_t>> experts;
  std::vector<int64_t> order;
  TraceToken token;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(token));
    if (!more) break;
    if (token.request >= tokens.size()) {
      tokens.resize(token.request + 1);
      experts.resize(token.request + 1);
    }
    if (tokens[token.request].empty()) order.push_back(static_cast<int64_t>(token.request));
    tokens[token.request].push_back(token.token);
    experts[token.request].insert(experts[token.request].end(), token.experts.begin(),
                                  token.experts.end());
  }
  for (int64_t r : order) {
    RETURN_IF_ERROR(set.AddRequest(reader->RequestName(r), tokens[r], experts[r]));
  }
  return set;
}

}  // namespace semmoe::planner::trace
