#include "common/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace semmoe {
namespace {

int g_evaluations = 0;

absl::Status CountedStatus(absl::Status status) {
  ++g_evaluations;
  return status;
}

absl::Status Chain(absl::Status first, bool* reached_end) {
  RETURN_IF_ERROR(CountedStatus(first));
  *reached_end = true;
  return absl::OkStatus();
}

TEST(ReturnIfErrorTest, PassesOkThroughAndEvaluatesOnce) {
  g_evaluations = 0;
  bool reached_end = false;
  EXPECT_TRUE(Chain(absl::OkStatus(), &reached_end).ok());
  EXPECT_TRUE(reached_end);
  EXPECT_EQ(g_evaluations, 1);
}

TEST(ReturnIfErrorTest, ReturnsTheFirstError) {
  g_evaluations = 0;
  bool reached_end = false;
  absl::Status status = Chain(absl::DataLossError("truncated"), &reached_end);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "truncated");
  EXPECT_FALSE(reached_end);
  EXPECT_EQ(g_evaluations, 1);
}

absl::StatusOr<std::unique_ptr<std::string>> MakeString(bool ok) {
  if (!ok) return absl::InvalidArgumentError("no string");
  return std::make_unique<std::string>("value");
}

absl::StatusOr<size_t> LengthTwice(bool first_ok, bool second_ok) {
  ASSIGN_OR_RETURN(std::unique_ptr<std::string> a, MakeString(first_ok));
  std::unique_ptr<std::string> b;
  ASSIGN_OR_RETURN(b, MakeString(second_ok));  // Assigns to an existing variable.
  return a->size() + b->size();
}

TEST(AssignOrReturnTest, MovesMoveOnlyValues) {
  absl::StatusOr<size_t> length = LengthTwice(true, true);
  ASSERT_TRUE(length.ok()) << length.status();
  EXPECT_EQ(*length, 10u);
}

TEST(AssignOrReturnTest, ReturnsErrorsFromEitherCall) {
  EXPECT_EQ(LengthTwice(false, true).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LengthTwice(true, false).status().message(), "no string");
}

}  // namespace
}  // namespace semmoe
