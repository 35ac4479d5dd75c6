#include "console/table.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_format.h"

namespace semmoe::console {
namespace {

size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // Count UTF-8 lead bytes.
  return n;
}

bool Numeric(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' &&
        c != '%' && c != 'e') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string Table::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = Width(header_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], Width(row[c]));
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string text;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - Width(cell), ' ');
      if (c > 0) text += "  ";
      text += !header && Numeric(cell) ? pad + cell : cell + pad;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(header_, true);
  for (const auto& row : rows_) line(row, false);
  return out;
}

std::string Fixed(double value, int digits) { return absl::StrFormat("%.*f", digits, value); }

}  // namespace semmoe::console
