#include "common/escaped_exception.h"

#include <stdexcept>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe {
namespace {

using ::testing::HasSubstr;

TEST(CatchEscapedTest, NormalReturnIsEmpty) {
  int ran = 0;
  EXPECT_EQ(CatchEscaped("test", [&] { ++ran; }), "");
  EXPECT_EQ(ran, 1);
}

TEST(CatchEscapedTest, NamesTheTypeAndWhat) {
  EXPECT_EQ(CatchEscaped("test", [] { throw std::runtime_error("boom"); }),
            "std::runtime_error: boom");
  // The class of bug this is for: nlohmann's typed access on a field of the wrong type.
  const std::string d = CatchEscaped("test", [] {
    const nlohmann::json j = {{"type", 3}};
    (void)j.value("type", std::string());
  });
  EXPECT_THAT(d, HasSubstr("nlohmann"));
  EXPECT_THAT(d, HasSubstr("type must be string"));
}

TEST(CatchEscapedTest, NonStandardExceptions) {
  EXPECT_EQ(CatchEscaped("test", [] { throw 42; }), "int: (not a std::exception)");
}

}  // namespace
}  // namespace semmoe
