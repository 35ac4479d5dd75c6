// JSON Lines input for the offline commands: one JSON object per line, read as a stream, errors
// naming "<path>:<line>". Blank lines are skipped.
#ifndef SEMMOE_ENGINE_OFFLINE_JSONL_H_
#define SEMMOE_ENGINE_OFFLINE_JSONL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/line_reader.h"
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
  JsonlReader(std::string path, std::unique_ptr<LineReader> lines)
      : path_(std::move(path)), lines_(std::move(lines)) {}
  std::string path_;
  std::unique_ptr<LineReader> lines_;
};

// How many non-blank lines `path` has (a progress total); LineReader's errors.
absl::StatusOr<int64_t> CountJsonlLines(const std::string& path);

// The "id" of a line (a string or an integer, echoed back as given), else InvalidArgument.
absl::StatusOr<nlohmann::json> ReadId(const nlohmann::json& line, const std::string& where);

// The "token_ids" of a line: a non-empty list of integers in [0, vocab_size).
absl::StatusOr<std::vector<int32_t>> ReadTokenIds(const nlohmann::json& line, int vocab_size,
                                                  const std::string& where);

}  // namespace semmoe::engine::offline

#endif  // SEMMOE_ENGINE_OFFLINE_JSONL_H_
