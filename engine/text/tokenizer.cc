#include "engine/text/tokenizer.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "engine/text/byte_level.h"
#include "engine/text/pretokenizer.h"
#include "engine/text/unicode.h"

namespace semmoe::engine::model {
namespace {

constexpr int32_t kMaxId = 1 << 24;

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: ", what));
}

// Typed reads that never throw: a missing field or one of another type gives `fallback`.
std::string StringOr(const nlohmann::json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool BoolOr(const nlohmann::json& object, const char* key, bool fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// OK if `n` is supported; sets `nfc` when it normalises (an empty Sequence does not).
absl::Status CheckNormalizer(const nlohmann::json& n, bool& nfc) {
  if (n.is_null()) return absl::OkStatus();
  const std::string type = StringOr(n, "type", "");
  if (type == "NFC") {
    nfc = true;
    return absl::OkStatus();
  }
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (const auto& inner : n["normalizers"]) RETURN_IF_ERROR(CheckNormalizer(inner, nfc));
    return absl::OkStatus();
  }
  return Bad(absl::StrCat("normalizer '", type, "' is not supported (only NFC)"));
}

// Whether `split` is Split(Regex `pattern`, Isolated, not inverted).
bool IsIsolatedSplit(const nlohmann::json& split, absl::string_view pattern) {
  return StringOr(split, "type", "") == "Split" && split.contains("pattern") &&
         split["pattern"].is_object() && split["pattern"].contains("Regex") &&
         split["pattern"]["Regex"].is_string() &&
         split["pattern"]["Regex"].get<std::string>() == pattern &&
         StringOr(split, "behavior", "") == "Isolated" && !BoolOr(split, "invert", true);
}

absl::StatusOr<PretokenizerKind> CheckPretokenizer(const nlohmann::json& p) {
  const char* expected =
      "pre_tokenizer: only Sequence[Split(Qwen2 pattern, Isolated), ByteLevel(use_regex=false)] "
      "and DeepSeek-V3's Sequence[Split x 3, ByteLevel(use_regex=false)] are supported";
  if (StringOr(p, "type", "") != "Sequence" || !p.contains("pretokenizers") ||
      !p["pretokenizers"].is_array() || p["pretokenizers"].empty()) {
    return Bad(expected);
  }
  const nlohmann::json& list = p["pretokenizers"];
  const nlohmann::json& byte_level = list.back();
  if (StringOr(byte_level, "type", "") != "ByteLevel" || BoolOr(byte_level, "use_regex", true) ||
      BoolOr(byte_level, "add_prefix_space", true)) {
    return Bad(expected);
  }
  if (list.size() == 2 && IsIsolatedSplit(list[0], kQwen2PretokenizerPattern)) {
    return PretokenizerKind::kQwen2;
  }
  if (list.size() == 4 && IsIsolatedSplit(list[0], kDeepseekV3PretokenizerPatterns[0]) &&
      IsIsolatedSplit(list[1], kDeepseekV3PretokenizerPatterns[1]) &&
      IsIsolatedSplit(list[2], kDeepseekV3PretokenizerPatterns[2])) {
    return PretokenizerKind::kDeepseekV3;
  }
  if (list.size() == 2 && StringOr(list[0], "type", "") == "Split") {
    return Bad(
        "pre_tokenizer: the Split regex is not the Qwen2 pattern, or not Isolated "
        "(unsupported)");
  }
  return Bad(expected);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(absl::string_view json_text) {
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  RETURN_IF_ERROR(tokenizer->Load(json_text));
  return tokenizer;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromDirectory(const std::string& dir) {
  std::string path = JoinPath(dir, "tokenizer.json");
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto tokenizer = FromJson(text);
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat(dir, "/", tokenizer.status().message()));
  }
  return tokenizer;
}

absl::Status Tokenizer::Load(absl::string_view json_text) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json_text, "tokenizer.json"));
  if (!j.is_object()) return Bad("expected a JSON object");
  RETURN_IF_ERROR(CheckNormalizer(j.value("normalizer", nlohmann::json()), nfc_));
  ASSIGN_OR_RETURN(pretokenizer_, CheckPretokenizer(j.value("pre_tokenizer", nlohmann::json())));

  if (!j.contains("model") || !j["model"].is_object()) return Bad("missing 'model'");
  const nlohmann::json& m = j["model"];
  JsonFields mf(m, "tokenizer.json: model");
  ASSIGN_OR_RETURN(std::string type, mf.String("type"));
  if (type != "BPE") return Bad(absl::StrCat("model type '", type, "' is not supported (BPE)"));
  if (mf.Has("dropout")) return Bad("model.dropout is not supported");
  ASSIGN_OR_RETURN(bool byte_fallback, mf.Bool("byte_fallback", false));
  if (byte_fallback) return Bad("model.byte_fallback is not supported");
  ASSIGN_OR_RETURN(std::string prefix, mf.String("continuing_subword_prefix", ""));
  ASSIGN_OR_RETURN(std::string suffix, mf.String("end_of_word_suffix", ""));
  if (!prefix.empty() || !suffix.empty()) {
    return Bad("model.continuing_subword_prefix/end_of_word_suffix are not supported");
  }
  ASSIGN_OR_RETURN(bool ignore_merges, mf.Bool("ignore_merges", false));
  if (ignore_merges) return Bad("model.ignore_merges is not supported");

  if (!m.contains("vocab") || !m["vocab"].is_object()) return Bad("model.vocab must be an object");
  int32_t max_id = -1;
  std::vector<std::pair<std::string, int32_t>> vocab;
  struct NotByteLevel {
    std::string text;
    int32_t id;
    std::string error;
  };
  std::vector<NotByteLevel> not_byte_level;
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= kMaxId) {
      return Bad(
          absl::StrCat("model.vocab['", it.key(), "']: expected an id in [0, ", kMaxId, ")"));
    }
    int32_t id = it->get<int32_t>();
    auto bytes_or = TokenTextToBytes(it.key());
    if (!bytes_or.ok()) {
      // DeepSeek's vocab repeats some added tokens verbatim (not byte-level text): BPE cannot
      // reach them, and the added token defines the id. Anything else is refused below.
      not_byte_level.push_back({it.key(), id, std::string(bytes_or.status().message())});
      continue;
    }
    max_id = std::max(max_id, id);
    vocab.emplace_back(std::move(*bytes_or), id);
  }
  std::vector<std::pair<std::string, int32_t>> added;
  std::vector<bool> added_special;
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    if (!j["added_tokens"].is_array()) return Bad("added_tokens must be a list");
    for (const auto& a : j["added_tokens"]) {
      JsonFields af(a, "tokenizer.json: added_tokens[]");
      ASSIGN_OR_RETURN(int64_t id, af.Int("id", {}, 0, kMaxId - 1));
      ASSIGN_OR_RETURN(std::string content, af.String("content"));
      ASSIGN_OR_RETURN(bool special, af.Bool("special", false));
      for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
        ASSIGN_OR_RETURN(bool set, af.Bool(flag, false));
        if (set)
          return Bad(absl::StrCat("added token '", content, "': ", flag, " is not supported"));
      }
      if (content.empty()) return Bad("added token with empty content");
      RETURN_IF_ERROR(DecodeUtf8(content).status());
      max_id = std::max<int32_t>(max_id, static_cast<int32_t>(id));
      added.emplace_back(content, static_cast<int32_t>(id));
      added_special.push_back(special);
    }
  }
  for (const NotByteLevel& v : not_byte_level) {
    const bool is_added = std::any_of(added.begin(), added.end(), [&](const auto& a) {
      return a.first == v.text && a.second == v.id;
    });
    if (!is_added) return Bad(v.error);
  }
  id_to_bytes_.assign(max_id + 1, "");
  special_.assign(max_id + 1, false);
  std::vector<bool> present(max_id + 1, false);
  for (auto& [bytes, id] : vocab) {
    if (present[id]) return Bad(absl::StrCat("model.vocab: id ", id, " is used twice"));
    present[id] = true;
    bytes_to_id_[bytes] = id;
    id_to_bytes_[id] = std::move(bytes);
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const auto& [content, id] = added[i];
    id_to_bytes_[id] = content;
    special_[id] = added_special[i];
    present[id] = true;
    added_.push_back(Added{content, id});
  }
  std::stable_sort(added_.begin(), added_.end(), [](const Added& a, const Added& b) {
    return a.content.size() > b.content.size();
  });
  for (size_t i = 0; i < added_.size(); ++i) {
    added_trie_.Add(added_[i].content, static_cast<int32_t>(i));
  }
  for (const std::string& bytes : id_to_bytes_) {
    max_token_bytes_ = std::max(max_token_bytes_, static_cast<int>(bytes.size()));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = bytes_to_id_.find(std::string(1, static_cast<char>(b)));
    if (it == bytes_to_id_.end()) {
      return Bad(absl::StrFormat("model.vocab has no token for byte 0x%02X", b));
    }
    byte_ids_[b] = it->second;
  }

  if (!m.contains("merges") || !m["merges"].is_array()) return Bad("model.merges must be a list");
  int32_t rank = 0;
  for (const auto& merge : m["merges"]) {
    std::string left, right;
    if (merge.is_string()) {
      const std::string& s = merge.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return Bad(absl::StrCat("merges[", rank, "]: '", s, "' is not \"left right\""));
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return Bad(absl::StrCat("merges[", rank, "]: expected \"a b\" or [\"a\", \"b\"]"));
    }
    auto lb_or = TokenTextToBytes(left);
    auto rb_or = TokenTextToBytes(right);
    if (!lb_or.ok() || !rb_or.ok()) {
      return Bad(absl::StrCat("merges[", rank,
                              "]: ", (lb_or.ok() ? rb_or.status() : lb_or.status()).message()));
    }
    const std::string& lb = *lb_or;
    const std::string& rb = *rb_or;
    auto l = bytes_to_id_.find(lb), r = bytes_to_id_.find(rb), out = bytes_to_id_.find(lb + rb);
    if (l == bytes_to_id_.end() || r == bytes_to_id_.end() || out == bytes_to_id_.end()) {
      return Bad(absl::StrCat("merges[", rank, "]: '", left, "' + '", right,
                              "' uses a token that is not in the vocabulary"));
    }
    merges_.try_emplace(PairKey(l->second, r->second), Merge{rank, out->second});
    ++rank;
  }
  return absl::OkStatus();
}

void Tokenizer::EncodeWord(absl::string_view bytes, std::vector<int32_t>& out) const {
  const size_t n = bytes.size();
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  // Symbols in a linked list; candidate merges in a min-heap by (rank, position). A popped
  // candidate is stale if either side changed since it was pushed.
  std::vector<int32_t> id(n);
  std::vector<int> prev(n), next(n);
  for (size_t i = 0; i < n; ++i) {
    id[i] = byte_ids_[static_cast<unsigned char>(bytes[i])];
    prev[i] = static_cast<int>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int>(i) + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t left, right, result;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    auto it = merges_.find(PairKey(id[pos], id[next[pos]]));
    if (it != merges_.end()) {
      heap.push(Candidate{it->second.rank, pos, id[pos], id[next[pos]], it->second.result});
    }
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int>(i));
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    if (dead[c.pos] || id[c.pos] != c.left || next[c.pos] < 0 || id[next[c.pos]] != c.right) {
      continue;
    }
    int right = next[c.pos];
    id[c.pos] = c.result;
    dead[right] = true;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

absl::Status Tokenizer::EncodeOrdinary(absl::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return absl::OkStatus();
  std::string normalized;
  if (nfc_) {
    ASSIGN_OR_RETURN(normalized, NormalizeNfc(text));
    text = normalized;
  }
  ASSIGN_OR_RETURN(std::vector<CodePoint> cps, DecodeUtf8(text));
  for (const Piece& piece : Pretokenize(pretokenizer_, cps)) {
    size_t begin = cps[piece.begin].byte_offset;
    size_t end = cps[piece.end - 1].byte_offset + cps[piece.end - 1].byte_length;
    EncodeWord(text.substr(begin, end - begin), out);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(absl::string_view text,
                                                       const EncodeOptions& options) const {
  RETURN_IF_ERROR(DecodeUtf8(text).status());
  const std::vector<std::pair<size_t, size_t>>& literal = options.literal_spans;
  for (size_t s = 0; s < literal.size(); ++s) {
    if (literal[s].first > literal[s].second || literal[s].second > text.size() ||
        (s > 0 && literal[s].first < literal[s - 1].second)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "literal span ", s, " [", literal[s].first, ", ", literal[s].second,
          ") is not sorted, apart from the others and inside the ", text.size(), "-byte text"));
    }
  }
  std::vector<int32_t> out;
  size_t start = 0;  // Start of the pending ordinary text.
  size_t span = 0;   // The first literal span that does not end before i.
  if (options.parse_special && !added_.empty()) {
    size_t i = 0;
    std::vector<std::pair<size_t, int32_t>> matches;
    while (i < text.size()) {
      const Added* match = nullptr;
      if (!added_trie_.Starts(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      while (span < literal.size() && literal[span].second <= i) ++span;
      added_trie_.Matches(text, i, matches);
      for (auto m = matches.rbegin(); m != matches.rend(); ++m) {  // Longest first.
        const Added& a = added_[m->second];
        // A special token overlapping a literal span is text there.
        if (special_[a.id] && span < literal.size() && literal[span].first < i + a.content.size()) {
          continue;
        }
        match = &a;
        break;
      }
      if (match == nullptr) {
        ++i;
        continue;
      }
      RETURN_IF_ERROR(EncodeOrdinary(text.substr(start, i - start), out));
      out.push_back(match->id);
      i += match->content.size();
      start = i;
    }
  }
  RETURN_IF_ERROR(EncodeOrdinary(text.substr(start), out));
  return out;
}

absl::StatusOr<std::string> Tokenizer::Decode(const std::vector<int32_t>& ids,
                                              bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size() || id_to_bytes_[id].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is not in the vocabulary"));
    }
    if (skip_special && special_[id]) continue;
    out += id_to_bytes_[id];
  }
  return out;
}

std::optional<int32_t> Tokenizer::TokenId(absl::string_view token_bytes) const {
  for (const Added& a : added_) {
    if (a.content == token_bytes) return a.id;
  }
  auto it = bytes_to_id_.find(token_bytes);
  if (it == bytes_to_id_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Tokenizer::SpecialTokenTexts() const {
  std::vector<std::string> out;
  for (const Added& a : added_) {
    if (special_[a.id]) out.push_back(a.content);
  }
  return out;
}

bool Tokenizer::IsSpecial(int32_t id) const { return id >= 0 && id < vocab_size() && special_[id]; }

}  // namespace semmoe::engine::model
