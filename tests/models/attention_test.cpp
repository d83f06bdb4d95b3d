// Causal attention (src/models/attention.cpp): softmax(q kᵀ/√d + causal mask) v by hand, and
// grouped-query attention equal to each key/value head repeated for its query heads.
#include "models/attention.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace baton {
namespace {

at::Tensor by_hand(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t t = q.size(2);
  const at::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  const at::Tensor future = torch::ones({t, t}, torch::kBool).triu(1);
  return torch::matmul(torch::softmax(scores.masked_fill(future, -std::numeric_limits<float>::infinity()), -1), v);
}

TEST(CausalAttention, IsSoftmaxOfScaledScoresUnderTheCausalMask) {
  torch::manual_seed(0);
  const at::Tensor q = torch::randn({2, 4, 7, 8}), k = torch::randn({2, 4, 7, 8}), v = torch::randn({2, 4, 7, 8});
  EXPECT_TRUE(torch::allclose(detail::causal_attention(q, k, v, 0.0), by_hand(q, k, v), 1e-5, 1e-5));
}

TEST(CausalAttention, GroupedQueryHeadsShareTheirKeyValueHead) {
  torch::manual_seed(0);
  const at::Tensor q = torch::randn({2, 6, 5, 8}), k = torch::randn({2, 2, 5, 8}), v = torch::randn({2, 2, 5, 8});
  // Query heads 0-2 use key/value head 0, heads 3-5 head 1 (Hugging Face's repeat_kv).
  const at::Tensor expected = by_hand(q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1));
  EXPECT_TRUE(torch::allclose(detail::causal_attention(q, k, v, 0.0), expected, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(
      detail::causal_attention(q, k, v, 0.0).select(1, 4),
      by_hand(q.select(1, 4).unsqueeze(1), k.select(1, 1).unsqueeze(1), v.select(1, 1).unsqueeze(1)).squeeze(1), 1e-5,
      1e-5));
}

}  // namespace
}  // namespace baton
