#include "engine/forward/bf16_view.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/forward/testing/random_model.h"
#include "gtest/gtest.h"
#include "kernels/dtype.h"

namespace semmoe::engine::forward {
namespace {

using model::Arch;

void ExpectBf16Of(const LinearView& f32, const LinearView& bf16, const char* what) {
  ASSERT_NE(f32.w, nullptr) << what;
  ASSERT_NE(bf16.w16, nullptr) << what;
  EXPECT_EQ(bf16.w, nullptr) << what;
  EXPECT_EQ(bf16.rows, f32.rows) << what;
  EXPECT_EQ(bf16.cols, f32.cols) << what;
  for (int64_t i = 0; i < f32.rows * f32.cols; ++i) {
    ASSERT_EQ(bf16.w16[i], kernels::F32ToBf16(f32.w[i]).bits) << what << " " << i;
  }
}

TEST(Bf16ViewTest, ToBf16BitsKeepsBf16ValuesExactly) {
  const float exact[] = {1.0f, -0.5f, 3.140625f, 0.0f, 65536.0f};  // All bf16-representable.
  const std::vector<uint16_t> bits = ToBf16Bits(exact, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(kernels::Bf16ToF32(kernels::BF16{bits[i]}), exact[i]);
}

TEST(Bf16ViewTest, EveryLinearButTheRoutingIsBf16AndExpertsAreStacked) {
  for (Arch arch : {Arch::kQwen3Moe, Arch::kQwen2Moe, Arch::kMixtral}) {
    const model::ModelConfig c = testing::RandomModelConfig(arch);
    const model::ModelWeights w = testing::RandomWeights(c, 5);
    auto bf16 = HostBf16Weights::Make(w);
    ASSERT_TRUE(bf16.ok()) << bf16.status();
    const ModelView f32 = HostView(w);
    const ModelView& v = (*bf16)->view();
    int64_t linear_values = 0;
    auto count = [&](const LinearView& l) { linear_values += l.rows * l.cols; };
    for (size_t l = 0; l < v.layers.size(); ++l) {
      const LayerView &a = f32.layers[l], &b = v.layers[l];
      ExpectBf16Of(a.q, b.q, "q");
      ExpectBf16Of(a.o, b.o, "o");
      for (const LinearView* x : {&a.q, &a.k, &a.v, &a.o}) count(*x);
      EXPECT_EQ(b.input_norm, a.input_norm);  // Norms stay f32, in place.
      if (!a.is_moe) {
        ExpectBf16Of(a.dense.down, b.dense.down, "dense down");
        for (const LinearView* x : {&a.dense.gate, &a.dense.up, &a.dense.down}) count(*x);
        continue;
      }
      EXPECT_EQ(b.router.w, a.router.w);  // The router stays f32.
      EXPECT_EQ(b.router.w16, nullptr);
      ASSERT_NE(b.stacked.gate, nullptr);
      EXPECT_TRUE(b.stacked.experts.empty());  // Every expert.
      const int64_t per = a.experts[0].gate.rows * a.experts[0].gate.cols;
      for (size_t e = 0; e < a.experts.size(); ++e) {
        ExpectBf16Of(a.experts[e].up, b.experts[e].up, "expert up");
        ExpectBf16Of(a.experts[e].down, b.experts[e].down, "expert down");
        EXPECT_EQ(b.experts[e].gate.w16, b.stacked.gate + e * per);
        EXPECT_EQ(b.experts[e].up.w16, b.stacked.up + e * per);
        EXPECT_EQ(b.experts[e].down.w16, b.stacked.down + e * per);
        for (const LinearView* x : {&a.experts[e].gate, &a.experts[e].up, &a.experts[e].down}) {
          count(*x);
        }
      }
      if (a.has_shared_expert) {
        ExpectBf16Of(a.shared_expert.gate, b.shared_expert.gate, "shared gate");
        for (const LinearView* x :
             {&a.shared_expert.gate, &a.shared_expert.up, &a.shared_expert.down}) {
          count(*x);
        }
        EXPECT_EQ(b.shared_expert_gate.w, a.shared_expert_gate.w);  // A routing gate: f32.
      }
    }
    ExpectBf16Of(f32.lm_head, v.lm_head, "lm_head");
    count(f32.lm_head);
    EXPECT_EQ((*bf16)->bf16_bytes(), 2 * linear_values) << model::ArchName(arch);
  }
}

TEST(Bf16ViewTest, AnExpertParallelRanksOwnExpertsAreStackedAndNamed) {
  const model::ModelConfig c = testing::RandomModelConfig(Arch::kQwen3Moe);
  model::ModelWeights w = testing::RandomWeights(c, 6);
  ASSERT_GE(c.num_experts, 4);
  int moe_layer = -1;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (w.layers[l].is_moe) {
      w.layers[l].experts[1] = model::MlpWeights();  // Another rank's.
      w.layers[l].experts[2] = model::MlpWeights();
      moe_layer = static_cast<int>(l);
    }
  }
  ASSERT_GE(moe_layer, 0);
  auto bf16 = HostBf16Weights::Make(w);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  const LayerView& b = (*bf16)->view().layers[moe_layer];
  ASSERT_NE(b.stacked.gate, nullptr);
  std::vector<int32_t> present = {0};
  for (int e = 3; e < c.num_experts; ++e) present.push_back(e);
  EXPECT_EQ(b.stacked.experts, present);
  EXPECT_TRUE(b.experts[1].gate.empty());
  EXPECT_TRUE(b.experts[2].gate.empty());
  const int64_t per = b.experts[0].gate.rows * b.experts[0].gate.cols;
  EXPECT_EQ(b.experts[0].gate.w16, b.stacked.gate);
  EXPECT_EQ(b.experts[3].up.w16, b.stacked.up + per);  // The second stacked expert.
  EXPECT_EQ(b.experts[3].down.w16, b.stacked.down + per);
  EXPECT_EQ(b.experts[3].gate.w, nullptr);
  const std::vector<uint16_t> bits = ToBf16Bits(w.layers[moe_layer].experts[3].gate.w.data(), per);
  EXPECT_TRUE(std::equal(bits.begin(), bits.end(), b.stacked.gate + per));
}

}  // namespace
}  // namespace semmoe::engine::forward
