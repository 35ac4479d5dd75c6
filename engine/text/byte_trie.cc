#include "engine/text/byte_trie.h"

namespace semmoe::engine::model {

void ByteTrie::Add(absl::string_view key, int32_t value) {
  if (key.empty() || value < 0) return;
  first_byte_[static_cast<unsigned char>(key[0])] = true;
  int32_t node = 0;
  for (unsigned char b : key) {
    auto [it, added] =
        edges_.try_emplace(uint64_t(node) << 8 | b, static_cast<int32_t>(value_.size()));
    if (added) value_.push_back(-1);
    node = it->second;
  }
  if (value_[node] < 0) value_[node] = value;
}

void ByteTrie::Matches(absl::string_view text, size_t at,
                       std::vector<std::pair<size_t, int32_t>>& out) const {
  out.clear();
  int32_t node = 0;
  for (size_t j = at; j < text.size(); ++j) {
    auto it = edges_.find(uint64_t(node) << 8 | static_cast<unsigned char>(text[j]));
    if (it == edges_.end()) return;
    node = it->second;
    if (value_[node] >= 0) out.emplace_back(j + 1 - at, value_[node]);
  }
}

}  // namespace semmoe::engine::model
