// Aligned text tables for the console: columns as wide as their widest cell (counted in UTF-8
// characters), numbers right-aligned, text left-aligned.
#ifndef SEMMOE_CONSOLE_TABLE_H_
#define SEMMOE_CONSOLE_TABLE_H_

#include <string>
#include <vector>

namespace semmoe::console {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "0.3125" style: `digits` decimals.
std::string Fixed(double value, int digits);

}  // namespace semmoe::console

#endif  // SEMMOE_CONSOLE_TABLE_H_
