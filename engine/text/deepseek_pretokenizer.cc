// The DeepSeek-V3 pre-tokenizer (pretokenizer.h): three isolating Splits in sequence, each a
// hand-coded scanner (std::regex has no \p{..}).
#include <functional>

#include "engine/text/pretokenizer.h"

namespace semmoe::engine::model {

const char* const kDeepseekV3PretokenizerPatterns[3] = {
    R"(\p{N}{1,3})",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^)"
    "\r\n"
    R"(\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[)"
    "\r\n"
    R"(]*|\s*[)"
    "\r\n"
    R"(]+|\s+(?!\S)|\s+)",
};

namespace {

// The length of a match of one Split's regex at `i` within [i, end), or 0 for none.
using Matcher = std::function<size_t(const std::vector<CodePoint>&, size_t i, size_t end)>;

// Splits every piece of `in` by `match` (Isolated): each match is a piece, and so is each
// stretch of unmatched text between matches.
std::vector<Piece> SplitIsolated(const std::vector<CodePoint>& text, const std::vector<Piece>& in,
                                 const Matcher& match) {
  std::vector<Piece> out;
  for (const Piece& piece : in) {
    size_t unmatched = piece.begin, i = piece.begin;
    while (i < piece.end) {
      const size_t n = match(text, i, piece.end);
      if (n == 0) {
        ++i;
        continue;
      }
      if (unmatched < i) out.push_back({unmatched, i});
      out.push_back({i, i + n});
      i += n;
      unmatched = i;
    }
    if (unmatched < piece.end) out.push_back({unmatched, piece.end});
  }
  return out;
}

bool IsCjk(char32_t c) {
  return (c >= 0x4e00 && c <= 0x9fa5) || (c >= 0x3040 && c <= 0x309f) ||
         (c >= 0x30a0 && c <= 0x30ff);
}

bool IsAsciiPunct(char32_t c) {  // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~');
}
bool IsAsciiLetter(char32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
bool IsNewline(char32_t c) { return c == '\r' || c == '\n'; }
bool IsLetterOrMark(char32_t c) { return IsLetter(c) || IsMark(c); }
bool IsPunctOrSymbol(char32_t c) { return IsPunctuation(c) || IsSymbol(c); }

size_t MatchWords(const std::vector<CodePoint>& t, size_t i, size_t end) {
  auto at = [&](size_t k) -> char32_t { return k < end ? t[k].value : 0; };
  auto in = [&](size_t k) { return k < end; };
  // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
  if (IsAsciiPunct(at(i)) && in(i + 1) && IsAsciiLetter(at(i + 1))) {
    size_t j = i + 1;
    while (in(j) && IsAsciiLetter(at(j))) ++j;
    return j - i;
  }
  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ (the optional character first, as a greedy engine).
  {
    const char32_t c = at(i);
    size_t j = i;
    if (!IsNewline(c) && !IsLetter(c) && !IsPunctOrSymbol(c) && in(i + 1) &&
        IsLetterOrMark(at(i + 1))) {
      j = i + 1;
    }
    if (IsLetterOrMark(at(j)) && in(j)) {
      while (in(j) && IsLetterOrMark(at(j))) ++j;
      return j - i;
    }
  }
  // ' '?[\p{P}\p{S}]+[\r\n]*
  {
    size_t j = i;
    if (at(j) == ' ' && in(j + 1) && IsPunctOrSymbol(at(j + 1))) ++j;
    if (in(j) && IsPunctOrSymbol(at(j))) {
      while (in(j) && IsPunctOrSymbol(at(j))) ++j;
      while (in(j) && IsNewline(at(j))) ++j;
      return j - i;
    }
  }
  // \s*[\r\n]+ | \s+(?!\S) | \s+
  size_t run_end = i, last_newline = SIZE_MAX;
  while (in(run_end) && IsWhitespace(at(run_end))) {
    if (IsNewline(at(run_end))) last_newline = run_end;
    ++run_end;
  }
  if (last_newline != SIZE_MAX) return last_newline + 1 - i;
  const size_t run = run_end - i;
  if (run == 0) return 0;        // A digit or another unmatched character.
  if (!in(run_end)) return run;  // (?!\S) holds at the end of the piece.
  return run >= 2 ? run - 1 : run;
}

}  // namespace

std::vector<Piece> PretokenizeDeepseekV3(const std::vector<CodePoint>& text) {
  std::vector<Piece> pieces;
  if (text.empty()) return pieces;
  pieces.push_back({0, text.size()});
  pieces = SplitIsolated(text, pieces, [](const std::vector<CodePoint>& t, size_t i, size_t end) {
    size_t j = i;
    while (j < end && j - i < 3 && IsNumber(t[j].value)) ++j;
    return j - i;
  });
  pieces = SplitIsolated(text, pieces, [](const std::vector<CodePoint>& t, size_t i, size_t end) {
    size_t j = i;
    while (j < end && IsCjk(t[j].value)) ++j;
    return j - i;
  });
  return SplitIsolated(text, pieces, MatchWords);
}

std::vector<Piece> Pretokenize(PretokenizerKind kind, const std::vector<CodePoint>& text) {
  return kind == PretokenizerKind::kDeepseekV3 ? PretokenizeDeepseekV3(text)
                                               : PretokenizeQwen2(text);
}

}  // namespace semmoe::engine::model
