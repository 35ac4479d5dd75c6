#include <cstdlib>
#include <random>

#include "common/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/trace/trace_reader.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::planner::trace {
namespace {

using ::testing::HasSubstr;

std::string Path(const std::string& name) { return JoinPath(std::getenv("TEST_TMPDIR"), name); }

TraceHeader Header() {
  TraceHeader h;
  h.num_experts = 32;
  h.vocab_size = 1000;
  h.top_k = 2;
  h.moe_layers = {0, 1, 3};
  return h;
}

// Writes `requests` requests of `tokens` tokens each; expert ids and weights derived from them.
void WriteSample(const std::string& path, int requests, int tokens) {
  auto w = TraceWriter::Create(path, Header());
  ASSERT_TRUE(w.ok()) << w.status();
  for (int r = 0; r < requests; ++r) {
    auto id = (*w)->AddRequest("req-" + std::to_string(r));
    ASSERT_TRUE(id.ok());
    for (int t = 0; t < tokens; ++t) {
      std::vector<int32_t> experts;
      std::vector<float> weights;
      for (int j = 0; j < 6; ++j) {
        experts.push_back((r * 7 + t * 3 + j) % 32);
        weights.push_back(0.125f * (j + 1));
      }
      ASSERT_TRUE((*w)->AddToken(*id, t, (r * 31 + t) % 1000, experts, weights).ok());
    }
  }
  ASSERT_TRUE((*w)->Close().ok());
}

TEST(TraceTest, RoundTrip) {
  const std::string path = Path("round.trace");
  WriteSample(path, 3, 5);
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->header().num_experts, 32u);
  EXPECT_THAT((*r)->header().moe_layers, ::testing::ElementsAre(0, 1, 3));
  TraceToken token;
  int count = 0;
  while (true) {
    auto more = (*r)->Next(token);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    const int req = count / 5, t = count % 5;
    EXPECT_EQ(token.request, static_cast<uint64_t>(req));
    EXPECT_EQ(token.position, static_cast<uint32_t>(t));
    EXPECT_EQ(token.token, static_cast<uint32_t>((req * 31 + t) % 1000));
    EXPECT_EQ(token.experts[5], (req * 7 + t * 3 + 5) % 32);
    EXPECT_EQ(token.weights[2], 0.375f);  // Exact in f16.
    ++count;
  }
  EXPECT_EQ(count, 15);
  EXPECT_EQ((*r)->RequestName(2), "req-2");
}

TEST(TraceTest, UnclosedWriterLeavesNoFile) {
  const std::string path = Path("abandoned.trace");
  {
    auto w = TraceWriter::Create(path, Header());
    ASSERT_TRUE((*w)->AddRequest("x").ok());
  }
  EXPECT_EQ(TraceReader::Open(path).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(TraceReader::Open(path + ".partial").status().code(), absl::StatusCode::kNotFound);
}

TEST(TraceTest, WriterRejectsBadRecords) {
  auto w = TraceWriter::Create(Path("bad.trace"), Header());
  std::vector<int32_t> experts(6, 1);
  std::vector<float> weights(6, 0.5f);
  EXPECT_FALSE((*w)->AddToken(0, 0, 1, experts, weights).ok());  // Undeclared request.
  ASSERT_TRUE((*w)->AddRequest("r").ok());
  experts[0] = 32;
  EXPECT_FALSE((*w)->AddToken(0, 0, 1, experts, weights).ok());
  EXPECT_FALSE((*w)->AddToken(0, 0, 1, absl::MakeSpan(experts).subspan(1), weights).ok());
  TraceHeader h = Header();
  h.top_k = 33;
  EXPECT_FALSE(TraceWriter::Create(Path("bad2.trace"), h).ok());
}

TEST(TraceTest, TruncatedAndCorruptFilesAreClearErrors) {
  const std::string path = Path("good.trace");
  WriteSample(path, 2, 3);
  const std::string good = *ReadFile(path);
  auto read_all = [&](const std::string& bytes) -> absl::Status {
    const std::string p = Path("corrupt.trace");
    EXPECT_TRUE(WriteFileAtomically(p, bytes).ok());
    auto r = TraceReader::Open(p);
    if (!r.ok()) return r.status();
    TraceToken token;
    while (true) {
      auto more = (*r)->Next(token);
      if (!more.ok()) return more.status();
      if (!*more) return absl::OkStatus();
    }
  };
  EXPECT_TRUE(read_all(good).ok());
  EXPECT_THAT(std::string(read_all(good.substr(0, good.size() - 5)).message()),
              HasSubstr("truncated at byte"));
  EXPECT_THAT(std::string(read_all("NOTATRACE-------").message()), HasSubstr("not a Sem-MoE"));
  std::string v2 = good;
  v2[8] = 2;
  EXPECT_THAT(std::string(read_all(v2).message()), HasSubstr("trace version 2 is not supported"));
  std::string bad_kind = good;
  bad_kind[40] = 9;  // First record kind (header is 32 + 6 → 40 bytes).
  EXPECT_THAT(std::string(read_all(bad_kind).message()), HasSubstr("unknown record kind 9"));
}

// Fuzz-style: random corruptions never crash or hang; most are detected.
TEST(TraceFuzzTest, CorruptedTracesNeverCrash) {
  const std::string path = Path("fuzz_base.trace");
  WriteSample(path, 4, 6);
  const std::string good = *ReadFile(path);
  std::mt19937 rng(7);
  int rejected = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    std::string bytes = good;
    const int edits = 1 + rng() % 3;
    for (int e = 0; e < edits; ++e) {
      if (rng() % 3 == 0) {
        bytes.resize(rng() % (bytes.size() + 1));
      } else if (!bytes.empty()) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
    }
    const std::string p = Path("fuzz.trace");
    ASSERT_TRUE(WriteFile(p, bytes).ok());
    auto r = TraceReader::Open(p);
    if (!r.ok()) {
      ++rejected;
      continue;
    }
    TraceToken token;
    for (int guard = 0; guard < 1000; ++guard) {
      auto more = (*r)->Next(token);
      if (!more.ok()) {
        ++rejected;
        break;
      }
      if (!*more) break;
    }
  }
  EXPECT_GT(rejected, 600);
}

}  // namespace
}  // namespace semmoe::planner::trace
