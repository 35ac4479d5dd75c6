#include "common/proc_status.h"

#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"

namespace semmoe {
namespace {

TEST(ProcStatusTest, ThisProcessAndItsPidAgreeAndGrowWithTouchedMemory) {
  const int64_t before = ProcStatusBytes("VmHWM");
  ASSERT_GT(before, 0);
  EXPECT_GT(ProcStatusBytes("VmRSS", getpid()), 0);
  std::vector<char> touched(64 << 20, 1);  // 64 MiB, written: resident.
  volatile char kept = touched[touched.size() / 2];  // The buffer stays (not optimised out).
  (void)kept;
  EXPECT_GE(ProcStatusBytes("VmHWM"), before + (48 << 20));
}

TEST(ProcStatusTest, MissingFieldsAndProcessesAreMinusOne) {
  EXPECT_EQ(ProcStatusBytes("NoSuchField"), -1);
  EXPECT_EQ(ProcStatusBytes("Name"), -1);  // Not a number of kB.
  EXPECT_EQ(ProcStatusBytes("VmRSS", 0x7ffffff0), -1);
}

}  // namespace
}  // namespace semmoe
