#include "console/endpoints.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::console {
namespace {

using ::testing::HasSubstr;

TEST(EndpointsTest, ReadsWhatLocalClusterWrites) {
  auto e = ParseEndpoints(
      R"({"engines":[{"accepts_requests":true,"address":"127.0.0.1:37827",
          "metrics":"127.0.0.1:45657","rank":0},{"address":"127.0.0.1:41419","rank":1,
          "arm":"B","accepts_requests":false}],"http":"127.0.0.1:37409",
          "router":"127.0.0.1:40201","planner":"127.0.0.1:7070","run_dir":"/tmp/x"})",
      "ep.json");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->planner, "127.0.0.1:7070");
  EXPECT_EQ(e->router, "127.0.0.1:40201");
  EXPECT_EQ(e->http, "127.0.0.1:37409");
  ASSERT_EQ(e->engines.size(), 2u);
  EXPECT_EQ(e->engines[1].rank, 1);
  EXPECT_EQ(e->engines[1].arm, "B");
  EXPECT_FALSE(e->engines[1].accepts_requests);
  EXPECT_EQ(e->engines[0].metrics, "127.0.0.1:45657");
  auto empty = ParseEndpoints("{}", "ep.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->router, "");
}

TEST(EndpointsTest, WrongTypesAndAddressesAreErrorsNamingTheField) {
  const struct {
    std::string text, error;
  } cases[] = {
      {R"({"router": 8000})", "ep.json: router: expected a string"},
      {R"({"planner": ["a"]})", "ep.json: planner: expected a string"},
      {R"({"router": "localhost"})", "ep.json: router: 'localhost' is not HOST:PORT"},
      {R"({"router": "h:99999"})", "is not HOST:PORT"},
      {R"({"engines": {"a": 1}})", "ep.json: engines: expected a list"},
      {R"({"engines": [3]})", "ep.json: engines[0]: expected an object"},
      {R"({"engines": [{"rank": "0", "address": "h:1"}]})", "engines[0]: rank"},
      {R"({"engines": [{"rank": 0}]})", "engines[0]: address"},
      {R"({"engines": [{"rank": 0, "address": "h:1", "accepts_requests": 1}]})",
       "accepts_requests"},
      {"[1, 2]", "ep.json: not a JSON object"},
      {"{\"router\": ", "ep.json: invalid JSON"},
      {std::string(100000, '['), "nested deeper than"},
  };
  for (const auto& c : cases) {
    auto e = ParseEndpoints(c.text, "ep.json");
    ASSERT_FALSE(e.ok()) << c.text;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(e.status().message()), HasSubstr(c.error)) << c.text;
  }
}

}  // namespace
}  // namespace semmoe::console
