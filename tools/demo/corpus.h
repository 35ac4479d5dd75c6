// The demo's workload when no prompt file is given: text already on this machine (license texts,
// C headers, Python sources — Debian installs them), cut into prompts. Several domains, so a
// semantic placement has structure to find; nothing is downloaded.
#ifndef SEMMOE_TOOLS_DEMO_CORPUS_H_
#define SEMMOE_TOOLS_DEMO_CORPUS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace semmoe::tools {

// Walks each root (a file or a directory, recursively, in sorted order), skips files that are
// not UTF-8-looking text or are over 256 KiB, and cuts the rest into chunks of about
// `chunk_chars` at line boundaries. Takes chunks from the roots in turn until `max_prompts`.
// NotFound when no root has any text.
absl::StatusOr<std::vector<std::string>> CollectPrompts(const std::vector<std::string>& roots,
                                                        int max_prompts, int chunk_chars);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_DEMO_CORPUS_H_
