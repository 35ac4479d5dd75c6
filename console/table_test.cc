#include "console/table.h"

#include <string>

#include "gtest/gtest.h"

namespace semmoe::console {
namespace {

TEST(TableTest, AlignsColumnsNumbersRight) {
  Table t({"version", "name", "LAR"});
  t.Add({"1", "vanilla", "0.25"});
  t.Add({"12", "semantic → dp", "0.3125"});
  EXPECT_EQ(t.Render(), "version  name" + std::string(11, ' ') + "LAR\n" + "      1  vanilla" +
                            std::string(10, ' ') + "0.25\n" + "     12  semantic → dp  0.3125\n");
}

TEST(TableTest, Fixed) { EXPECT_EQ(Fixed(0.31249, 3), "0.312"); }

}  // namespace
}  // namespace semmoe::console
