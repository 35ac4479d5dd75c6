#include "engine/backend/device_backend.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FakeBackend : public DeviceBackend {
 public:
  absl::StatusOr<int> DeviceCount() const override { return 3; }
  absl::StatusOr<std::unique_ptr<DeviceSession>> UseForBatch(
      const model::ModelConfig&, const model::ModelWeights&, const DeviceTarget&,
      const runtime::BatchEngine::Options&) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::unique_ptr<DeviceSession>> UseForPrefill(const model::ModelConfig&,
                                                               const model::ModelWeights&,
                                                               const DeviceTarget&, int) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::unique_ptr<DeviceSession>> UseForServing(
      const model::ModelConfig&, const model::ModelWeights&, const planner::Placement&,
      const RendezvousOptions&, const DeviceTarget&, const TpServing*,
      const runtime::BatchEngine::Options&) override {
    return absl::UnimplementedError("fake");
  }
};

// This test binary links no backend, like a build without the CUDA toolkit.
TEST(DeviceBackendTest, CudaMissingSaysHowToGetIt) {
  absl::StatusOr<DeviceBackend*> cuda = GetDeviceBackend("cuda");
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cuda.status().message(), HasSubstr("this build has no CUDA support"));
  EXPECT_THAT(cuda.status().message(), HasSubstr("/usr/local/cuda"));
  EXPECT_THAT(cuda.status().message(), HasSubstr("--device cpu"));
}

TEST(DeviceBackendTest, UnknownKindIsInvalid) {
  absl::StatusOr<DeviceBackend*> b = GetDeviceBackend("tpu");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(b.status().message(), HasSubstr("'tpu'"));
}

TEST(DeviceBackendTest, RegisteredBackendIsFound) {
  RegisterDeviceBackend("fake", std::make_unique<FakeBackend>());
  absl::StatusOr<DeviceBackend*> b = GetDeviceBackend("fake");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*(*b)->DeviceCount(), 3);
  EXPECT_THAT(DeviceBackendKinds(), ElementsAre("fake"));
  EXPECT_FALSE(GetDeviceBackend("cuda").ok());
}

}  // namespace
}  // namespace semmoe::engine
