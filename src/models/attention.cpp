#include "models/attention.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>
#include <torch/version.h>

namespace baton::detail {

namespace {

// The last `tq` of `tk` tokens' view of them: each sees itself and those before it.
at::Tensor causal_mask(int64_t tq, int64_t tk, const c10::Device& device) {
  return torch::ones({tq, tk}, torch::TensorOptions(torch::kBool).device(device)).tril(tk - tq);
}

// Grouped-query attention's keys or values: each head repeated for its query heads.
at::Tensor for_heads(const at::Tensor& kv, int64_t heads) {
  return kv.size(1) == heads ? kv : kv.repeat_interleave(heads / kv.size(1), 1);
}

}  // namespace

at::Tensor masked_attention(const at::Tensor& q, const at::Tensor& k_in, const at::Tensor& v_in,
                            const at::Tensor& allowed) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  // The kernels serve grouped heads themselves (enable_gqa): no copy of the keys and values a step.
  const bool grouped = k_in.size(1) != q.size(1);
  if (!allowed.defined()) {
    if (q.size(2) == 1) return at::scaled_dot_product_attention(q, k_in, v_in, {}, 0.0, false, {}, grouped);
    if (q.size(2) == k_in.size(2)) return at::scaled_dot_product_attention(q, k_in, v_in, {}, 0.0, true, {}, grouped);
  }
#endif
  const at::Tensor k = for_heads(k_in, q.size(1)), v = for_heads(v_in, q.size(1));
  const at::Tensor mask = allowed.defined() ? allowed : causal_mask(q.size(2), k.size(2), q.device());
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask);
#else
  const at::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  const at::Tensor weights =
      torch::softmax(scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity()), -1);
  return torch::matmul(weights.to(v.scalar_type()), v);
#endif
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k_in, const at::Tensor& v_in, double dropout) {
  const at::Tensor k = for_heads(k_in, q.size(1)), v = for_heads(v_in, q.size(1));
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
