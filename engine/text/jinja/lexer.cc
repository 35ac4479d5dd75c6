#include "engine/text/jinja/lexer.h"

#include <cctype>
#include <charconv>

#include "absl/strings/str_cat.h"

namespace semmoe::engine::jinja {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  absl::StatusOr<std::vector<Token>> Run() {
    bool strip_next = false;  // The last tag ended with '-': strip the next text's start.
    bool trim_next = false;   // The last tag was a block/comment (trim_blocks).
    size_t text_start = 0;
    while (true) {
      const size_t open = FindOpen(text_start);
      std::string text(src_.substr(text_start, open - text_start));
      const bool at_line_start_of_source = text_start == 0;
      if (strip_next) {
        size_t i = 0;
        while (i < text.size() && IsSpace(text[i])) ++i;
        text.erase(0, i);
      } else if (trim_next) {
        if (!text.empty() && text[0] == '\n') {
          text.erase(0, 1);
        } else if (text.size() >= 2 && text[0] == '\r' && text[1] == '\n') {
          text.erase(0, 2);
        }
      }
      if (open == src_.size()) {
        AddText(std::move(text), text_start);
        break;
      }
      const char type = src_[open + 1];  // '{', '%' or '#'
      const char marker = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (marker == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (marker != '+' && type != '{') {
        // lstrip_blocks: only spaces/tabs between the line's start and the tag.
        const size_t nl = text.find_last_of('\n');
        const size_t from = nl == std::string::npos ? 0 : nl + 1;
        bool blank = true;
        for (size_t i = from; i < text.size(); ++i)
          blank = blank && (text[i] == ' ' || text[i] == '\t');
        if (blank && (nl != std::string::npos || (at_line_start_of_source && !strip_next))) {
          text.erase(from);
        }
      }
      AddText(std::move(text), text_start);
      size_t pos = open + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
      absl::StatusOr<size_t> end =
          type == '#' ? SkipComment(pos, &strip_next) : LexTag(type, pos, &strip_next);
      if (!end.ok()) return end.status();
      trim_next = type != '{' && !keep_newline_;
      keep_newline_ = false;
      text_start = *end;
    }
    tokens_.push_back({.kind = TokenKind::kEnd, .line = LineAt(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t FindOpen(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  int LineAt(size_t pos) {
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_) {
      if (src_[line_pos_] == '\n') ++line_;
    }
    return line_;
  }

  void AddText(std::string text, size_t pos) {
    if (text.empty()) return;
    tokens_.push_back({.kind = TokenKind::kText, .text = std::move(text), .line = LineAt(pos)});
  }

  absl::Status Error(size_t pos, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("template line ", LineAt(pos), ": ", what));
  }

  absl::StatusOr<size_t> SkipComment(size_t pos, bool* strip_next) {
    const size_t close = src_.find("#}", pos);
    if (close == std::string_view::npos) return Error(pos, "unterminated comment '{#'");
    *strip_next = close > pos && src_[close - 1] == '-';
    return close + 2;
  }

  // Tokens of one {{ }} or {% %} tag from `pos` (after the opening delimiter); returns the
  // position after the closing one.
  absl::StatusOr<size_t> LexTag(char type, size_t pos, bool* strip_next) {
    const char close_first = type == '{' ? '}' : '%';
    tokens_.push_back(
        {.kind = type == '{' ? TokenKind::kExprOpen : TokenKind::kBlockOpen, .line = LineAt(pos)});
    int depth = 0;  // Open brackets: a '}}' inside a dict literal does not close the tag.
    size_t i = pos;
    while (true) {
      while (i < src_.size() && IsSpace(src_[i])) ++i;
      if (i >= src_.size()) {
        return Error(pos, type == '{' ? "unterminated '{{'" : "unterminated '{%'");
      }
      const char c = src_[i];
      auto closes_at = [&](size_t j) {
        return depth == 0 && j + 1 < src_.size() && src_[j] == close_first && src_[j + 1] == '}';
      };
      if ((c == '-' || c == '+') && closes_at(i + 1)) {
        *strip_next = c == '-';
        keep_newline_ = c == '+';
        i += 1;
      } else if (closes_at(i)) {
        *strip_next = false;
      }
      if (closes_at(i)) {
        tokens_.push_back({.kind = type == '{' ? TokenKind::kExprClose : TokenKind::kBlockClose,
                           .line = LineAt(i)});
        return i + 2;
      }
      const int line = LineAt(i);
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) {
          ++j;
        }
        tokens_.push_back(
            {.kind = TokenKind::kName, .text = std::string(src_.substr(i, j - i)), .line = line});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        absl::StatusOr<size_t> j = LexNumber(i, line);
        if (!j.ok()) return j.status();
        i = *j;
      } else if (c == '\'' || c == '"') {
        absl::StatusOr<size_t> j = LexString(i, line);
        if (!j.ok()) return j.status();
        i = *j;
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (std::string_view two : kTwo) {
          if (src_.substr(i, 2) == two) op = std::string(two);
        }
        if (op.size() == 1 &&
            std::string_view("+-*/%~<>=()[]{}.,:|").find(c) == std::string_view::npos) {
          return Error(i, absl::StrCat("unexpected character '", std::string(1, c), "'"));
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        tokens_.push_back({.kind = TokenKind::kOp, .text = op, .line = line});
        i += op.size();
      }
    }
  }

  absl::StatusOr<size_t> LexNumber(size_t i, int line) {
    size_t j = i;
    while (j < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_'))
      ++j;
    bool is_float = false;
    if (j + 1 < src_.size() && src_[j] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[j + 1]))) {
      is_float = true;
      ++j;
      while (j < src_.size() && std::isdigit(static_cast<unsigned char>(src_[j]))) ++j;
    }
    if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        j = k;
        while (j < src_.size() && std::isdigit(static_cast<unsigned char>(src_[j]))) ++j;
      }
    }
    std::string text;
    for (size_t k = i; k < j; ++k) {
      if (src_[k] != '_') text.push_back(src_[k]);
    }
    Token t{.kind = is_float ? TokenKind::kFloat : TokenKind::kInt, .text = text, .line = line};
    const char* b = text.data();
    const char* e = text.data() + text.size();
    const auto res =
        is_float ? std::from_chars(b, e, t.float_value) : std::from_chars(b, e, t.int_value);
    if (res.ec != std::errc() || res.ptr != e)
      return Error(i, "number '" + text + "' out of range");
    tokens_.push_back(std::move(t));
    return j;
  }

  absl::StatusOr<size_t> LexString(size_t i, int line) {
    const char quote = src_[i];
    std::string value;
    size_t j = i + 1;
    for (; j < src_.size() && src_[j] != quote; ++j) {
      if (src_[j] != '\\' || j + 1 >= src_.size()) {
        value.push_back(src_[j]);
        continue;
      }
      const char e = src_[++j];
      switch (e) {
        case 'n':
          value.push_back('\n');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case '\\':
          value.push_back('\\');
          break;
        case '\'':
          value.push_back('\'');
          break;
        case '"':
          value.push_back('"');
          break;
        case '\n':
          break;  // A line continuation.
        default:  // Python keeps unknown escapes as written.
          value.push_back('\\');
          value.push_back(e);
      }
    }
    if (j >= src_.size()) return Error(i, "unterminated string");
    tokens_.push_back({.kind = TokenKind::kString, .text = std::move(value), .line = line});
    return j + 1;
  }

  std::string_view src_;
  std::vector<Token> tokens_;
  bool keep_newline_ = false;  // The last tag ended with '+%}': no trim_blocks after it.
  size_t line_pos_ = 0;
  int line_ = 1;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Lex(std::string_view source) { return Lexer(source).Run(); }

}  // namespace semmoe::engine::jinja
