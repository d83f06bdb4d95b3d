#include "models/attention.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>
#include <torch/version.h>

namespace baton::detail {

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k_in, const at::Tensor& v_in, double dropout) {
  at::Tensor k = k_in, v = v_in;
  if (k.size(1) != q.size(1)) {  // grouped-query: each key/value head repeated for its query heads
    const int64_t repeat = q.size(1) / k.size(1);
    k = k.repeat_interleave(repeat, 1);
    v = v.repeat_interleave(repeat, 1);
  }
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, dropout, /*is_causal=*/true);
#else
  namespace F = torch::nn::functional;
  const int64_t t = q.size(-2);
  at::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  const at::Tensor future = torch::ones({t, t}, q.options().dtype(torch::kBool)).triu(1);
  at::Tensor weights = torch::softmax(scores.masked_fill(future, -std::numeric_limits<float>::infinity()), -1);
  if (dropout > 0) weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout).training(true));
  return torch::matmul(weights.to(v.scalar_type()), v);
#endif
}

}  // namespace baton::detail
