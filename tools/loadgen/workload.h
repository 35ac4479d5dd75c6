// The prompts a load generator sends: a JSONL file with "text" and/or "token_ids" per line
// (e.g. ../shared/data/prompts.jsonl, or anything `engine trace` reads).
#ifndef SEMMOE_TOOLS_LOADGEN_WORKLOAD_H_
#define SEMMOE_TOOLS_LOADGEN_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace semmoe::tools {

struct Prompt {
  std::string text;                // Sent as text when set ...
  std::vector<int32_t> token_ids;  // ... else as ids.
};

struct WorkloadOptions {
  // Send token ids when a line has them (they must be the served model's); default: the text,
  // which the router tokenises for whatever model it serves.
  bool prefer_token_ids = false;
  int max_prompts = 0;       // 0: all.
  int max_prompt_chars = 0;  // Longer texts are cut (at a UTF-8 boundary); 0: no limit.
};

// InvalidArgument naming "<path>:<line>" for a line that is not an object or has neither a
// non-empty "text" nor a list of integer "token_ids"; NotFound for a missing file;
// InvalidArgument for a file without prompts.
absl::StatusOr<std::vector<Prompt>> LoadPrompts(const std::string& path,
                                                const WorkloadOptions& options = {});

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_LOADGEN_WORKLOAD_H_
