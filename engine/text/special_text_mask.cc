#include "engine/text/special_text_mask.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::model {
namespace {

// A placeholder is the lead U+E000 then U+E001 + its index (both in the Basic Multilingual
// Plane's private use area, three bytes of UTF-8 each).
constexpr uint32_t kLead = 0xE000;
constexpr uint32_t kFirstIndex = 0xE001;

void AppendUtf8(uint32_t cp, std::string& out) {  // cp in [0x800, 0xFFFF].
  out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
  out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
  out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
}

// The three-byte code point at `s[i]`, or 0 when there is none.
uint32_t ThreeByteAt(absl::string_view s, size_t i) {
  if (i + 3 > s.size()) return 0;
  const auto b0 = static_cast<unsigned char>(s[i]), b1 = static_cast<unsigned char>(s[i + 1]),
             b2 = static_cast<unsigned char>(s[i + 2]);
  if ((b0 & 0xF0) != 0xE0 || (b1 & 0xC0) != 0x80 || (b2 & 0xC0) != 0x80) return 0;
  return (uint32_t{b0} & 0x0F) << 12 | (uint32_t{b1} & 0x3F) << 6 | (b2 & 0x3F);
}

}  // namespace

absl::StatusOr<SpecialTextMask> SpecialTextMask::Create(std::vector<std::string> special_texts) {
  if (special_texts.size() > static_cast<size_t>(kMaxTokens)) {
    return absl::InvalidArgumentError(
        absl::StrCat(special_texts.size(), " special tokens; a mask covers at most ", kMaxTokens));
  }
  SpecialTextMask m;
  m.texts_ = std::move(special_texts);
  std::string lead;
  AppendUtf8(kLead, lead);
  m.texts_.push_back(lead);
  for (size_t t = 0; t < m.texts_.size(); ++t) {
    if (m.texts_[t].empty()) return absl::InvalidArgumentError("a special token's text is empty");
    m.trie_.Add(m.texts_[t], static_cast<int32_t>(t));
  }
  return m;
}

int64_t SpecialTextMask::MaskString(absl::string_view s, std::string& out) const {
  int64_t masked = 0;
  size_t i = 0, copied = 0;
  std::vector<std::pair<size_t, int32_t>> matches;
  while (i < s.size()) {
    if (!trie_.Starts(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    // The longest text starting here (tokenizers match longest first).
    trie_.Matches(s, i, matches);
    if (matches.empty()) {
      ++i;
      continue;
    }
    const int32_t found = matches.back().second;
    const size_t found_end = i + matches.back().first;
    out.append(s.data() + copied, i - copied);
    AppendUtf8(kLead, out);
    AppendUtf8(kFirstIndex + static_cast<uint32_t>(found), out);
    ++masked;
    i = copied = found_end;
  }
  out.append(s.data() + copied, s.size() - copied);
  return masked;
}

nlohmann::ordered_json SpecialTextMask::Mask(const nlohmann::ordered_json& value,
                                             int64_t* masked) const {
  int64_t count = 0;
  // Iterative over the tree (a request nests at most kMaxJsonDepth, but no recursion is needed).
  nlohmann::ordered_json out = value;
  std::vector<nlohmann::ordered_json*> pending = {&out};
  while (!pending.empty()) {
    nlohmann::ordered_json* v = pending.back();
    pending.pop_back();
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      std::string replaced;
      replaced.reserve(s.size());
      if (const int64_t n = MaskString(s, replaced); n > 0) {
        count += n;
        *v = std::move(replaced);
      }
    } else if (v->is_array() || v->is_object()) {
      for (auto& child : *v) pending.push_back(&child);
    }
  }
  if (masked != nullptr) *masked = count;
  return out;
}

absl::StatusOr<SpecialTextMask::Unmasked> SpecialTextMask::Unmask(
    absl::string_view rendered) const {
  Unmasked u;
  u.text.reserve(rendered.size());
  size_t i = 0, copied = 0;
  while (true) {
    const size_t at = rendered.find("\xEE\x80\x80", i);  // U+E000.
    if (at == absl::string_view::npos) break;
    const uint32_t index = ThreeByteAt(rendered, at + 3);
    if (index < kFirstIndex || index - kFirstIndex >= texts_.size()) {
      return absl::InvalidArgumentError(
          "the chat template cut or changed special-token text of a message (it cannot be "
          "rendered as text; send it without it, or start the router with "
          "--message_special_tokens=control)");
    }
    u.text.append(rendered.data() + copied, at - copied);
    const std::string& text = texts_[index - kFirstIndex];
    u.literal_spans.emplace_back(u.text.size(), u.text.size() + text.size());
    u.text += text;
    i = copied = at + 6;
  }
  u.text.append(rendered.data() + copied, rendered.size() - copied);
  return u;
}

}  // namespace semmoe::engine::model
