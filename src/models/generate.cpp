// Generation (include/baton/models/generate.h): prompts left-padded into one batch, a prefill over
// them, then one token a step through the key/value cache; positions and masks as transformers'
// generate makes them, so greedy decoding gives its tokens.
#include "baton/models/generate.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "baton/models/hf.h"
#include "models/hf_step.h"

namespace baton {
namespace {

// CTRL's repetition penalty on the tokens each row holds (`held`: how many times, [N, vocab]).
at::Tensor penalize(const at::Tensor& logits, const at::Tensor& held, double penalty) {
  if (penalty == 1.0) return logits;
  const at::Tensor penalized = torch::where(logits < 0, logits * penalty, logits / penalty);
  return torch::where(held > 0, penalized, logits);
}

// The next token of each row from its logits [N, vocab] (float32, on the CPU): the most likely, or
// one drawn after temperature, top-k and top-p (transformers' order and definitions).
at::Tensor choose(at::Tensor logits, const GenerateOptions& o, at::Generator& generator) {
  if (o.temperature() <= 0) return logits.argmax(-1);
  logits = logits / o.temperature();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (o.top_k() > 0 && o.top_k() < logits.size(-1)) {
    const at::Tensor kth = std::get<0>(logits.topk(o.top_k(), -1)).narrow(-1, o.top_k() - 1, 1);
    logits = logits.masked_fill(logits < kth, minus_inf);
  }
  if (o.top_p() < 1.0) {  // the least likely removed while what they add up to stays within 1 - top_p
    const auto [sorted, order] = logits.sort(-1, /*descending=*/false);
    at::Tensor remove = torch::softmax(sorted, -1).cumsum(-1) <= 1.0 - o.top_p();
    remove.narrow(-1, remove.size(-1) - 1, 1).fill_(false);  // the most likely always stays
    logits = logits.masked_fill(remove.scatter(-1, order, remove), minus_inf);
  }
  return torch::multinomial(torch::softmax(logits, -1), 1, /*replacement=*/false, generator).squeeze(-1);
}

}  // namespace

struct Generator::Impl {
  std::shared_ptr<Model> model;
  HfConfig config;
  std::vector<int64_t> truncated;

  // The prompts checked, cut to `keep` tokens from their ends.
  std::vector<std::vector<int64_t>> prepared(std::vector<std::vector<int64_t>> prompts, int64_t keep) {
    truncated.assign(prompts.size(), 0);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      auto& p = prompts[i];
      if (p.empty()) throw std::invalid_argument("generate: prompt " + std::to_string(i) + " has no tokens");
      for (const int64_t t : p) {
        if (t < 0 || t >= config.vocab_size) {
          throw std::invalid_argument("generate: prompt " + std::to_string(i) + " holds token " + std::to_string(t) +
                                      ", outside the model's vocabulary of " + std::to_string(config.vocab_size));
        }
      }
      if (static_cast<int64_t>(p.size()) > keep) {
        truncated[i] = static_cast<int64_t>(p.size()) - keep;
        p.erase(p.begin(), p.begin() + truncated[i]);
      }
    }
    return prompts;
  }
};

Generator::Generator(std::shared_ptr<Model> model) : impl_(std::make_unique<Impl>()) {
  const HfConfig* config = model ? hf_config_of(*model) : nullptr;
  if (config == nullptr) {
    throw std::invalid_argument("Generator: the model is not a Hugging Face one (load_hf_model, make_hf_model)");
  }
  impl_->config = *config;
  impl_->model = std::move(model);
}

Generator::~Generator() = default;

const std::vector<int64_t>& Generator::truncated() const { return impl_->truncated; }

namespace {

// For left-padded rows (`mask`: the real tokens): positions counting each row's tokens (padding at 1,
// as transformers puts it), and which tokens each may attend to (the real ones before it, and itself).
std::pair<at::Tensor, at::Tensor> attention_inputs(const at::Tensor& mask) {
  const int64_t length = mask.size(1);
  at::Tensor positions = (mask.cumsum(1) - 1).masked_fill(mask.logical_not(), 1);
  const at::Tensor causal = torch::ones({length, length}, torch::kBool).tril();
  at::Tensor allowed =
      causal.unsqueeze(0).logical_and(mask.unsqueeze(1)).logical_or(torch::eye(length, torch::kBool)).unsqueeze(1);
  return {positions, allowed};
}

}  // namespace

std::vector<std::vector<int64_t>> Generator::generate(const std::vector<std::vector<int64_t>>& given,
                                                      const GenerateOptions& o,
                                                      const std::function<void(std::size_t, int64_t)>& on_token) {
  const int64_t context = impl_->config.context;
  if (o.max_new_tokens() < 1 || o.max_new_tokens() >= context) {
    throw std::invalid_argument("generate: max_new_tokens is " + std::to_string(o.max_new_tokens()) +
                                "; expected 1 to " + std::to_string(context - 1) + " (the model's context less one)");
  }
  if (given.empty()) return {};
  const auto prompts = impl_->prepared(given, context - o.max_new_tokens());
  const auto n = static_cast<int64_t>(prompts.size());
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
  // Left-padded: every prompt ends at the last column.
  at::Tensor ids = torch::full({n, longest}, o.pad_token(), torch::kLong);
  at::Tensor mask = torch::zeros({n, longest}, torch::kBool);
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = prompts[static_cast<std::size_t>(i)];
    const auto len = static_cast<int64_t>(p.size());
    ids[i].narrow(0, longest - len, len).copy_(torch::tensor(p, torch::kLong));
    mask[i].narrow(0, longest - len, len).fill_(true);
  }
  Model& model = *impl_->model;
  const c10::Device device = model.parameters().front().device();
  model.eval();
  torch::NoGradGuard no_grad;
  // Buffers for every token there will be; no mask for the kernels to read where nothing is padded.
  detail::LayerCache empty;
  empty.capacity = longest + o.max_new_tokens();
  std::vector<detail::LayerCache> caches(static_cast<std::size_t>(impl_->config.layers), empty);
  const bool padded = !mask.all().item<bool>();
  const auto [positions, allowed] = attention_inputs(mask);
  at::Tensor logits =
      detail::hf_step(model, ids.to(device), positions.to(device), padded ? allowed.to(device) : at::Tensor(), caches);
  std::vector<int64_t> stops = o.stop_tokens();
  if (stops.empty() && impl_->config.eos_token_id >= 0) stops.push_back(impl_->config.eos_token_id);
  if (o.ignore_eos()) stops.clear();
  at::Tensor held = torch::zeros({n, impl_->config.vocab_size}, torch::kLong);  // the repetition penalty's
  held.scatter_add_(1, ids, mask.to(torch::kLong));
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(o.seed());
  std::vector<std::vector<int64_t>> out(prompts.size());
  std::vector<bool> done(prompts.size(), false);
  at::Tensor last = positions.narrow(1, longest - 1, 1);
  for (int64_t step = 0; step < o.max_new_tokens(); ++step) {
    const at::Tensor scores =
        penalize(logits.select(1, logits.size(1) - 1).to(torch::kCPU, torch::kFloat), held, o.repetition_penalty());
    at::Tensor next = choose(scores, o, generator).contiguous();
    int64_t* chosen = next.data_ptr<int64_t>();
    auto counts = held.accessor<int64_t, 2>();
    bool all_done = true;
    for (int64_t i = 0; i < n; ++i) {
      const auto row = static_cast<std::size_t>(i);
      if (done[row]) {
        chosen[i] = o.pad_token();
        continue;
      }
      const int64_t token = chosen[i];
      out[row].push_back(token);
      counts[i][token] += 1;
      if (on_token) on_token(row, token);
      done[row] = std::find(stops.begin(), stops.end(), token) != stops.end();
      all_done = all_done && done[row];
    }
    if (all_done || step + 1 == o.max_new_tokens()) break;
    mask = torch::cat({mask, torch::ones({n, 1}, torch::kBool)}, 1);
    last = last + 1;
    if (o.use_cache()) {
      logits = detail::hf_step(model, next.unsqueeze(1).to(device), last.to(device),
                               padded ? mask.unsqueeze(1).unsqueeze(1).to(device) : at::Tensor(), caches);
    } else {  // every token so far through the whole model again (what the cache saves)
      ids = torch::cat({ids, next.unsqueeze(1)}, 1);
      const auto [now, sees] = attention_inputs(mask);
      std::vector<detail::LayerCache> none;
      logits = detail::hf_step(model, ids.to(device), now.to(device), sees.to(device), none);
    }
  }
  return out;
}

}  // namespace baton
