// Links and exercises the system-library wrappers that no product code uses yet, so a broken
// wrapper (missing -l flag, wrong library name) fails here rather than in a later change.
#include <curses.h>

#include <cstdio>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(int, wiring_ranks, 1, "A flag for the wiring test.");

namespace {

TEST(SystemLibrariesTest, AbslFlagsParse) {
  const char* argv[] = {"prog", "--wiring_ranks=8", "positional"};
  std::vector<char*> rest = absl::ParseCommandLine(3, const_cast<char**>(argv));
  EXPECT_EQ(absl::GetFlag(FLAGS_wiring_ranks), 8);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_STREQ(rest[1], "positional");
}

TEST(SystemLibrariesTest, AbslContainersAndFormat) {
  absl::flat_hash_map<std::string, int> experts = {{"code", 3}, {"math", 5}};
  experts["prose"] = 7;
  EXPECT_EQ(experts.size(), 3u);
  EXPECT_EQ(absl::StrFormat("%s=%d", "prose", experts["prose"]), "prose=7");
}

TEST(SystemLibrariesTest, NlohmannJsonRoundTripsAndRejectsBadInput) {
  const nlohmann::json config = nlohmann::json::parse(R"({"num_experts": 64, "top_k": [8]})");
  EXPECT_EQ(config["num_experts"].get<int>(), 64);
  EXPECT_EQ(nlohmann::json::parse(config.dump()), config);
  // Parse errors are reported without exceptions when asked.
  EXPECT_TRUE(nlohmann::json::parse("{\"unterminated\": ", nullptr, false).is_discarded());
}

TEST(SystemLibrariesTest, NcursesDrawsOnAHeadlessTerminal) {
  FILE* out = std::fopen("/dev/null", "w");
  FILE* in = std::fopen("/dev/null", "r");
  ASSERT_NE(out, nullptr);
  ASSERT_NE(in, nullptr);
  SCREEN* screen = newterm("xterm-256color", out, in);
  ASSERT_NE(screen, nullptr) << "terminfo for xterm-256color missing";
  WINDOW* win = newwin(3, 20, 0, 0);
  ASSERT_NE(win, nullptr);
  mvwaddstr(win, 1, 2, "semmoe");
  char text[7] = {};
  mvwinnstr(win, 1, 2, text, 6);
  EXPECT_STREQ(text, "semmoe");
  delwin(win);
  endwin();
  delscreen(screen);
  std::fclose(out);
  std::fclose(in);
}

}  // namespace
