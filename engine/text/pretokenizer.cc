#include "engine/text/pretokenizer.h"

namespace semmoe::engine::model {

const char kQwen2PretokenizerPattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

class Scanner {
 public:
  explicit Scanner(const std::vector<CodePoint>& text) : text_(text) {}

  char32_t At(size_t i) const { return i < text_.size() ? text_[i].value : 0; }
  bool InRange(size_t i) const { return i < text_.size(); }
  bool Letter(size_t i) const { return InRange(i) && IsLetter(At(i)); }
  bool Number(size_t i) const { return InRange(i) && IsNumber(At(i)); }
  bool Space(size_t i) const { return InRange(i) && IsWhitespace(At(i)); }
  bool Newline(size_t i) const { return InRange(i) && (At(i) == '\r' || At(i) == '\n'); }
  // [^\s\p{L}\p{N}]
  bool Symbol(size_t i) const { return InRange(i) && !Space(i) && !Letter(i) && !Number(i); }

  // Length of the match starting at `i` (> 0 for any i inside the text).
  size_t Match(size_t i) const {
    if (size_t n = Contraction(i)) return n;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (Letter(i) || (!Newline(i) && !Number(i) && Letter(i + 1))) {
      size_t j = i + 1;
      while (Letter(j)) ++j;
      return j - i;
    }
    if (Number(i)) return 1;  // \p{N}
    // ' '?[^\s\p{L}\p{N}]+[\r\n]*
    {
      size_t j = i;
      if (At(j) == ' ' && Symbol(j + 1)) ++j;
      if (Symbol(j)) {
        while (Symbol(j)) ++j;
        while (Newline(j)) ++j;
        return j - i;
      }
    }
    // Whitespace runs.
    size_t run_end = i;
    size_t last_newline = SIZE_MAX;
    while (Space(run_end)) {
      if (Newline(run_end)) last_newline = run_end;
      ++run_end;
    }
    if (last_newline != SIZE_MAX) return last_newline + 1 - i;  // \s*[\r\n]+
    size_t run = run_end - i;
    if (run > 0) {
      if (!InRange(run_end)) return run;  // \s+(?!\S) at the end of the text.
      if (run >= 2) return run - 1;       // \s+(?!\S): leave the last space to the next piece.
      return run;                         // \s+
    }
    return 1;  // Unreachable: every code point is a letter, number, space or symbol.
  }

 private:
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  size_t Contraction(size_t i) const {
    if (At(i) != '\'') return 0;
    auto lower = [&](size_t k) -> char32_t {
      char32_t c = At(k);
      return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    };
    char32_t a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }

  const std::vector<CodePoint>& text_;
};

}  // namespace

std::vector<Piece> PretokenizeQwen2(const std::vector<CodePoint>& text) {
  std::vector<Piece> pieces;
  Scanner scanner(text);
  size_t i = 0;
  while (i < text.size()) {
    size_t n = scanner.Match(i);
    pieces.push_back(Piece{i, i + n});
    i += n;
  }
  return pieces;
}

}  // namespace semmoe::engine::model
