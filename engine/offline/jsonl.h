// JSON Lines input for the offline commands: one JSON object per line, read as a stream, errors
// naming "<path>:<line>". Blank lines are skipped.
#ifndef SEMMOE_ENGINE_OFFLINE_JSONL_H_
#define SEMMOE_ENGINE_OFFLINE_JSONL_H_

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::offline {

class JsonlReader {
 public:
  static absl::StatusOr<std::unique_ptr<JsonlReader>> Open(const std::string& path);

  // The next object into `out`; false at the end. InvalidArgument for a line that is not a JSON
  // object.
  absl::StatusOr<bool> Next(nlohmann::json& out);
  // "<path>:<line>" of the last line returned, for error messages.
  std::string where() const;

 private:
  explicit JsonlReader(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::ifstream in_;
  int line_ = 0;
};

// How many non-blank lines `path` has (a progress total); NotFound if it cannot be read.
absl::StatusOr<int64_t> CountJsonlLines(const std::string& path);

// The "id" of a line (a string or an integer, echoed back as given), else InvalidArgument.
absl::StatusOr<nlohmann::json> ReadId(const nlohmann::json& line, const std::string& where);

// The "token_ids" of a line: a non-empty list of integers in [0, vocab_size).
absl::StatusOr<std::vector<int32_t>> ReadTokenIds(const nlohmann::json& line, int vocab_size,
                                                  const std::string& where);

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_JSONL_H_
