// baton's Hugging Face models against transformers' (tests/llm/hf_reference.sh makes the folders with
// tests/llm/make_models.py and passes their parent in BATON_HF_MODELS): each folder loaded by baton
// gives the logits transformers gave on the same tokens, within 1e-4 (fp32).
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/models/hf.h"
#include "baton/models/safetensors.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, LogitsEqualTransformers) {
  const char* root = std::getenv("BATON_HF_MODELS");
  ASSERT_NE(root, nullptr) << "set BATON_HF_MODELS (tests/llm/hf_reference.sh does)";
  const fs::path folder = fs::path(root) / GetParam();
  at::Tensor ids, expected;
  for (const auto& [name, t] : read_safetensors((folder / "reference.safetensors").string())) {
    (name == "ids" ? ids : expected) = t;
  }
  const auto model = load_hf_model(folder.string());
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(Batch{ids, {}});
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double d = (logits - expected).abs().max().item<double>();
  EXPECT_LT(d, 1e-4) << GetParam();
  std::cout << GetParam() << ": logits within " << d << " of transformers'\n";
}

INSTANTIATE_TEST_SUITE_P(Models, HfReference,
                         ::testing::Values("gpt2", "gpt2-untied-relu", "llama-gqa", "llama-tied-bias", "llama3-rope",
                                           "qwen2"));

}  // namespace
}  // namespace baton
