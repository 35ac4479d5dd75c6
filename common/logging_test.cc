#include "common/logging.h"

#include <string>

#include "glog/logging.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

TEST(LoggingTest, LogsToStderrWithTheMessage) {
  InitLogging("logging_test");
  testing::internal::CaptureStderr();
  LOG(WARNING) << "placement v7 is stale";
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("placement v7 is stale"), std::string::npos) << err;
  EXPECT_EQ(err[0], 'W') << err;  // glog's severity prefix.
}

TEST(LoggingTest, VerbosityControlsVlogAndRepeatedInitIsSafe) {
  InitLogging("logging_test", {.verbosity = 0});
  EXPECT_FALSE(VLOG_IS_ON(1));
  testing::internal::CaptureStderr();
  VLOG(1) << "hidden detail";
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("hidden detail"), std::string::npos);

  InitLogging("logging_test", {.verbosity = 2});
  EXPECT_TRUE(VLOG_IS_ON(2));
  EXPECT_FALSE(VLOG_IS_ON(3));
  testing::internal::CaptureStderr();
  VLOG(2) << "shown detail";
  EXPECT_NE(testing::internal::GetCapturedStderr().find("shown detail"), std::string::npos);

  InitLogging("logging_test", {.verbosity = -5});
  EXPECT_FALSE(VLOG_IS_ON(1));
}

}  // namespace
}  // namespace semmoe
