#include "common/cpu_guard.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

using ::testing::HasSubstr;

std::string Message(bool avx2, bool fma) {
  char out[512];
  const size_t n = CpuGuardMessage(avx2, fma, out, sizeof(out));
  EXPECT_EQ(n, std::string(out).size());
  return out;
}

TEST(CpuGuardTest, NamesWhatIsMissingAndHowToRebuild) {
  EXPECT_EQ(Message(true, true), "");
  EXPECT_THAT(Message(false, true), HasSubstr("this CPU lacks AVX2."));
  EXPECT_THAT(Message(true, false), HasSubstr("this CPU lacks FMA."));
  EXPECT_THAT(Message(false, false), HasSubstr("lacks AVX2 and FMA"));
  EXPECT_THAT(Message(false, false), HasSubstr("Rebuild without --config=opt"));
}

TEST(CpuGuardTest, AShortBufferIsCutNotOverrun) {
  char out[9];
  const size_t n = CpuGuardMessage(false, false, out, sizeof(out));
  EXPECT_GT(n, sizeof(out));
  EXPECT_EQ(std::string(out), "semmoe: ");
}

}  // namespace
}  // namespace semmoe
