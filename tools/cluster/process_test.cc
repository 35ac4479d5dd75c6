#include "tools/cluster/process.h"

#include <signal.h>

#include <cstdlib>

#include "gtest/gtest.h"

namespace semmoe::tools {
namespace {

std::string Log(const char* name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

TEST(ProcessTest, RunsLogsAndReportsTheExit) {
  auto p = Process::Spawn({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, Log("a.log"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->WaitFor(absl::Seconds(10)));
  EXPECT_EQ(*(*p)->Poll(), "exit 3");
  EXPECT_FALSE((*p)->exited_ok());
  EXPECT_EQ(Tail(Log("a.log"), 1), "    oops\n");
  EXPECT_EQ(Tail(Log("a.log"), 5), "    hello\n    oops\n");
}

TEST(ProcessTest, SignalsAndKillsOnDestruction) {
  auto p = Process::Spawn({"/bin/sleep", "30"}, Log("b.log"));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE((*p)->Poll().has_value());
  (*p)->Signal(SIGTERM);
  ASSERT_TRUE((*p)->WaitFor(absl::Seconds(10)));
  EXPECT_EQ(*(*p)->Poll(), "signal 15");
  auto q = Process::Spawn({"/bin/sleep", "30"}, Log("c.log"));
  ASSERT_TRUE(q.ok());
  const pid_t pid = (*q)->pid();
  q->reset();
  EXPECT_NE(kill(pid, 0), 0);  // Gone (reaped).
}

TEST(ProcessTest, AMissingProgramExits127AndABadLogIsAnError) {
  auto p = Process::Spawn({"/nonexistent/program"}, Log("d.log"));
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*p)->WaitFor(absl::Seconds(10)));
  EXPECT_EQ(*(*p)->Poll(), "exit 127");
  EXPECT_FALSE(Process::Spawn({"/bin/true"}, "/nonexistent/dir/log").ok());
}

}  // namespace
}  // namespace semmoe::tools
