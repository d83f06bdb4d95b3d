// The zoo's gpt (src/models/gpt.cpp): GPT-2's parameters, causal attention, it learns.
#include "baton/models/zoo.h"

#include <cmath>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "common/test_util.h"
#include "models/models_fixtures.h"

namespace baton {
namespace {

using namespace models_fixtures;  // NOLINT(google-build-using-namespace)

using testing::error_of;
using ::testing::HasSubstr;

TEST(Zoo, GptHasGpt2sParametersWithTiedWeights) {
  const int64_t vocab = 11, context = 16, width = 32, layers = 2;
  auto model =
      make_model("gpt", ModelOptions().input_shape({context}).num_classes(vocab).layers(layers).width(width).heads(4));
  // Embeddings (the output layer is the token embedding), per block 12W² + 13W, the final LayerNorm.
  EXPECT_EQ(count_parameters(*model),
            vocab * width + context * width + layers * (12 * width * width + 13 * width) + 2 * width);
  const Batch batch{torch::randint(vocab, {3, context}, torch::kLong),
                    torch::randint(vocab, {3, context}, torch::kLong)};
  EXPECT_EQ(model->forward(batch).sizes(), (std::vector<int64_t>{3, context, vocab}));
  // The loss of a sequence is the mean over its positions; the per-sequence losses average to it.
  const at::Tensor out = model->forward(batch);
  const double loss = model->loss(out, batch).item<double>();
  EXPECT_NEAR(loss, model->loss_per_example(out, batch).mean().item<double>(), 1e-5);
  EXPECT_NEAR(loss, std::log(static_cast<double>(vocab)), 0.3);  // small initial weights: near uniform
}

TEST(Zoo, GptIsCausal) {
  torch::manual_seed(1);
  auto model = make_model("gpt", ModelOptions().input_shape({8}).num_classes(5).layers(2).width(16).heads(2));
  model->eval();
  at::Tensor x = torch::randint(5, {1, 8}, torch::kLong);
  const at::Tensor before = model->forward(Batch{x, x});
  x[0][5] = (x[0][5].item<int64_t>() + 1) % 5;  // a later token changes ...
  const at::Tensor after = model->forward(Batch{x, x});
  EXPECT_TRUE(torch::allclose(before.slice(1, 0, 5), after.slice(1, 0, 5), 1e-5, 1e-6));  // ... no earlier output
  EXPECT_FALSE(torch::allclose(before.slice(1, 5), after.slice(1, 5), 1e-5, 1e-6));
}

TEST(Zoo, GptLearnsARepeatingText) {
  torch::manual_seed(0);
  auto model = make_model("gpt", ModelOptions().input_shape({12}).num_classes(4).layers(1).width(32).heads(4));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-2));
  const at::Tensor pattern = torch::tensor({0, 1, 2, 3, 2, 1}, torch::kLong).repeat({4});
  at::Tensor starts = torch::randint(6, {16}, torch::kLong);
  const at::Tensor rows = starts.unsqueeze(1) + torch::arange(13, torch::kLong);
  const at::Tensor windows = pattern.index_select(0, rows.flatten()).view({16, 13});
  const Batch batch{windows.slice(1, 0, 12), windows.slice(1, 1)};
  double loss = 0;
  for (int step = 0; step < 150; ++step) {
    opt.zero_grad();
    const at::Tensor l = model->loss(model->forward(batch), batch);
    l.backward();
    opt.step();
    loss = l.item<double>();
  }
  EXPECT_LT(loss, 0.05);  // after its first token the pattern is certain
}

TEST(Zoo, GptRefusesWhatItCannotTake) {
  EXPECT_THAT(error_of([] {
                make_model("gpt", ModelOptions().input_shape({1, 28, 28}));
              }),
              HasSubstr("needs windows of tokens (data.dataset: text or tokens)"));
  EXPECT_THAT(error_of([] { make_model("gpt", ModelOptions().input_shape({8}).width(30).heads(4)); }),
              HasSubstr("width 30 must be a multiple of heads 4"));
  auto model = make_model("gpt", ModelOptions().input_shape({8}).num_classes(5).layers(1).width(8).heads(2));
  const at::Tensor long_window = torch::zeros({1, 9}, torch::kLong);
  EXPECT_THAT(error_of([&] {
                model->forward(Batch{long_window, long_window});
              }),
              HasSubstr("longer than its context of 8"));
}

}  // namespace
}  // namespace baton
