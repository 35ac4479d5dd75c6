#include "common/grpc_status.h"

#include "gtest/gtest.h"

namespace semmoe {
namespace {

TEST(GrpcStatusTest, OkMapsToOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcStatusTest, EveryCanonicalCodeRoundTripsWithItsMessage) {
  const absl::StatusCode codes[] = {
      absl::StatusCode::kCancelled,          absl::StatusCode::kUnknown,
      absl::StatusCode::kInvalidArgument,    absl::StatusCode::kDeadlineExceeded,
      absl::StatusCode::kNotFound,           absl::StatusCode::kAlreadyExists,
      absl::StatusCode::kPermissionDenied,   absl::StatusCode::kResourceExhausted,
      absl::StatusCode::kFailedPrecondition, absl::StatusCode::kAborted,
      absl::StatusCode::kOutOfRange,         absl::StatusCode::kUnimplemented,
      absl::StatusCode::kInternal,           absl::StatusCode::kUnavailable,
      absl::StatusCode::kDataLoss,           absl::StatusCode::kUnauthenticated,
  };
  for (absl::StatusCode code : codes) {
    const absl::Status original(code, "what went wrong");
    const grpc::Status wire = ToGrpcStatus(original);
    EXPECT_EQ(wire.error_message(), "what went wrong");
    EXPECT_EQ(FromGrpcStatus(wire), original) << original;
  }
}

TEST(GrpcStatusTest, NamedCodesAgree) {
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("queue full")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpcStatus(absl::DeadlineExceededError("late")).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")).code(),
            absl::StatusCode::kUnavailable);
}

TEST(GrpcStatusTest, NonCanonicalCodesBecomeUnknown) {
  const absl::Status odd(static_cast<absl::StatusCode>(42), "odd");
  EXPECT_EQ(ToGrpcStatus(odd).error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpcStatus(odd).error_message(), "odd");
  // 20: past the canonical codes, still a value the enum can hold (99 would not be: undefined
  // behaviour, which UBSan reports under --config=asan).
  const grpc::Status odd_wire(static_cast<grpc::StatusCode>(20), "odd wire");
  EXPECT_EQ(FromGrpcStatus(odd_wire).code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(FromGrpcStatus(odd_wire).message(), "odd wire");
}

}  // namespace
}  // namespace semmoe
