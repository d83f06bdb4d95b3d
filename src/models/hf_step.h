// One step of a Hugging Face model over new tokens with a key/value cache: what generation runs
// (private to models; src/models/hf.cpp).
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace baton {
class Model;
struct HfConfig;
}  // namespace baton

namespace baton::detail {

// A layer's keys and values of every token so far: [N, kv_heads, T, head_dim]. With a capacity (the
// prompt's and the new tokens' length), they are views of buffers of that length made at the first
// step, each step's written after them: no copy of what is cached. Without, each step's are joined on.
struct LayerCache {
  at::Tensor k, v;
  int64_t capacity = 0;
  at::Tensor k_buffer, v_buffer;
};

// The logits [N, 1, vocab] of the last of new tokens `ids` [N, T] at `positions` [N, T] (int64),
// each token attending to the keys `allowed` [N, 1, T, past + T] (bool) marks among the cached ones
// and its own (undefined: every cached one and those before it among the new, no padding); the new keys and values
// appended to `caches` (one a layer, empty at first). Only the last position goes through the head (a vocabulary's
// worth of work a token: transformers' logits_to_keep=1). `model` is make_hf_model's.
at::Tensor hf_step(Model& model, const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& allowed,
                   std::vector<LayerCache>& caches);

}  // namespace baton::detail
