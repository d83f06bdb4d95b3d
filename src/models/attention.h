// Causal self-attention shared by the zoo's gpt and the Hugging Face models (private to models).
#pragma once

#include <ATen/core/Tensor.h>

namespace baton::detail {

// softmax(q kᵀ / √d + causal mask) v over [N, heads, T, d]; the fused kernels on LibTorch 2.x.
// `k` and `v` may have fewer heads than `q` (grouped-query attention): each of theirs serves
// heads / kv_heads consecutive query heads, as Hugging Face's repeat_kv lays them out.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout);

// The same with the mask given: `allowed` [N, 1, Tq, Tk] (bool) says which keys each query sees
// (generation with a cache and padding); undefined, each of the last Tq of the Tk tokens sees itself
// and those before it (generation without padding: no mask for the kernels to read).
at::Tensor masked_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& allowed);

}  // namespace baton::detail
