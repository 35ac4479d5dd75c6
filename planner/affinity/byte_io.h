// Little helpers for the planner's compact binary tables: append a trivially copyable value, and
// read values back with bounds checks that name the table and the byte offset.
#ifndef SEMMOE_PLANNER_AFFINITY_BYTE_IO_H_
#define SEMMOE_PLANNER_AFFINITY_BYTE_IO_H_

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace semmoe::planner {

template <typename T>
void PutBytes(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

class ByteReader {
 public:
  // `table` names the format in errors ("affinity table", "layer tables").
  ByteReader(absl::string_view bytes, absl::string_view table) : bytes_(bytes), table_(table) {}
  template <typename T>
  absl::Status Get(T& value, const char* what) {
    if (bytes_.size() - at_ < sizeof(T)) {
      return absl::InvalidArgumentError(
          absl::StrCat(table_, " truncated at byte ", at_, " reading ", what));
    }
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return absl::OkStatus();
  }
  size_t at() const { return at_; }
  bool done() const { return at_ == bytes_.size(); }

 private:
  absl::string_view bytes_;
  std::string table_;
  size_t at_ = 0;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_BYTE_IO_H_
