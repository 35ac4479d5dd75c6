#include "tests/testing/reference_trace.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/forward_io.h"
#include "gtest/gtest.h"

namespace semmoe::testing {

planner::trace::TraceSet ReferenceTrace(const engine::model::ModelConfig& c,
                                        const engine::model::ModelWeights& weights,
                                        const std::vector<std::vector<int32_t>>& prompts) {
  namespace model = engine::model;
  planner::trace::TraceSet trace;
  trace.header = {.num_experts = static_cast<uint32_t>(c.num_experts),
                  .vocab_size = static_cast<uint32_t>(c.vocab_size),
                  .top_k = static_cast<uint16_t>(c.top_k)};
  for (int l : c.MoeLayers()) trace.header.moe_layers.push_back(l);
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  auto cpu = engine::forward::testing::PagedCpuForward::Create(
      c, weights, static_cast<int>(longest / 4 + 1), /*page_size=*/4);
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  if (!cpu.ok()) return trace;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto kv = (*cpu)->NewSequence(static_cast<int>(prompts[i].size()));
    EXPECT_TRUE(kv.ok()) << kv.status();
    if (!kv.ok()) continue;
    auto out = (*cpu)->forward().Forward({{prompts[i], 0, kv->get(), model::LogitsMode::kLast}},
                                         {.collect_routing = true});
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) continue;
    std::vector<uint16_t> experts;
    for (size_t t = 0; t < prompts[i].size(); ++t) {
      for (const model::Routing& r : out->routing) {
        for (int j = 0; j < c.top_k; ++j) experts.push_back(r.expert_ids[t * c.top_k + j]);
      }
    }
    EXPECT_TRUE(trace
                    .AddRequest(absl::StrCat("p", i),
                                std::vector<uint32_t>(prompts[i].begin(), prompts[i].end()),
                                experts)
                    .ok());
  }
  return trace;
}

}  // namespace semmoe::testing
