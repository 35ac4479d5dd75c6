#include "kernels/cpu/decode_attention.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace semmoe::kernels::cpu {
namespace {

// Against a float64 softmax(q·kᵀ·scale)·v, for head sizes with and without a tail, contexts
// below, at and past a block of eight, and rows scattered in memory like cache pages.
TEST(DecodeAttentionTest, MatchesNaive) {
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0, 1);
  for (int head_dim : {8, 12, 64, 128}) {
    for (int context : {1, 7, 8, 9, 33}) {
      for (int group : {1, 2, 3, 4}) {
        const int kv_size = head_dim * 3, offset = head_dim;  // Middle of three KV heads.
        std::vector<std::vector<float>> k(context, std::vector<float>(kv_size)),
            v(context, std::vector<float>(kv_size));
        std::vector<const float*> kp, vp;
        for (int p = 0; p < context; ++p) {
          for (float& x : k[p]) x = n(rng);
          for (float& x : v[p]) x = n(rng);
          kp.push_back(k[p].data());
          vp.push_back(v[p].data());
        }
        std::vector<float> q(group * head_dim), out(group * head_dim, NAN), scores(2 * context);
        for (float& x : q) x = n(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        DecodeAttention({q.data(), group, head_dim, kp.data(), vp.data(), offset, context, scale,
                         scores.data(), out.data()});
        for (int h = 0; h < group; ++h) {
          std::vector<double> s(context);
          double max = -1e30, sum = 0;
          for (int p = 0; p < context; ++p) {
            for (int c = 0; c < head_dim; ++c) s[p] += double(q[h * head_dim + c]) * k[p][offset + c];
            s[p] *= scale;
            max = std::max(max, s[p]);
          }
          for (double& x : s) sum += (x = std::exp(x - max));
          for (int c = 0; c < head_dim; ++c) {
            double ref = 0;
            for (int p = 0; p < context; ++p) ref += s[p] / sum * v[p][offset + c];
            ASSERT_NEAR(out[h * head_dim + c], ref, 1e-5)
                << "head_dim " << head_dim << " context " << context << " group " << group;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace semmoe::kernels::cpu
