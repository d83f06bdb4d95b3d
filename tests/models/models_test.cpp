#include "baton/models/zoo.h"

#include <cmath>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

int64_t count_parameters(Model& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

TEST(Zoo, FashionCnnIsThePeersArchitecture) {
  auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  // conv 1->32 (320) + conv 32->64 (18496) + linear 3136->128 (401536) + linear 128->10 (1290)
  EXPECT_EQ(count_parameters(*model), 320 + 18496 + 401536 + 1290);
  Batch batch{torch::randn({4, 1, 28, 28}), torch::tensor({0, 1, 2, 3})};
  EXPECT_EQ(model->forward(batch).sizes(), (std::vector<int64_t>{4, 10}));
}

TEST(Zoo, MlpAndResNet20) {
  auto mlp = make_model("mlp", ModelOptions().input_shape({3, 8}).num_classes(5).hidden({16}));
  EXPECT_EQ(count_parameters(*mlp), 24 * 16 + 16 + 16 * 5 + 5);
  auto resnet = make_model("resnet20", ModelOptions().input_shape({3, 32, 32}).num_classes(10));
  EXPECT_NEAR(static_cast<double>(count_parameters(*resnet)), 0.27e6, 0.01e6);  // ResNet-20: 0.27M
  Batch batch{torch::randn({2, 3, 32, 32}), torch::tensor({0, 1})};
  EXPECT_EQ(resnet->forward(batch).sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(Zoo, RefusesUnknownNamesAndShapesItCannotTake) {
  EXPECT_THAT(
      [] {
        make_model("vgg", ModelOptions().input_shape({1, 28, 28}));
      },
      ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
          "unknown model 'vgg' (known: fashion_cnn, mlp, resnet20, resnet18, resnet50, gpt, cnn_space, gpt_space)")));
  EXPECT_THAT([] { make_model("fashion_cnn", ModelOptions().input_shape({784})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("needs image inputs")));
}

TEST(Classifier, SoftTargetsGiveTheSameLossAsIndicesWhenOneHot) {
  auto logits = torch::randn({5, 3});
  auto idx = torch::tensor({0, 2, 1, 1, 0});
  auto one_hot = torch::one_hot(idx, 3).to(torch::kFloat);
  EXPECT_NEAR(soft_cross_entropy(logits, idx).item<double>(), soft_cross_entropy(logits, one_hot).item<double>(), 1e-6);
}

TEST(Metrics, AveragedOverEveryExampleNotOverBatches) {
  auto acc = make_metric("accuracy");
  auto ce = make_metric("loss");
  // A batch of 3 with 3 right, then a batch of 1 with 0 right: 3/4, not (1 + 0) / 2.
  auto good = torch::tensor({{5.f, 0.f}, {5.f, 0.f}, {0.f, 5.f}});
  acc->update(good, torch::tensor({0, 0, 1}));
  acc->update(torch::tensor({{5.f, 0.f}}), torch::tensor({1}));
  EXPECT_DOUBLE_EQ(acc->compute(), 0.75);
  auto a = torch::randn({3, 4});
  auto b = torch::randn({1, 4});
  ce->update(a, torch::tensor({0, 1, 2}));
  ce->update(b, torch::tensor({3}));
  const double expected =
      torch::nn::functional::cross_entropy(torch::cat({a, b}), torch::tensor({0, 1, 2, 3})).item<double>();
  EXPECT_NEAR(ce->compute(), expected, 1e-6);
  acc->reset();
  EXPECT_THROW(acc->compute(), std::logic_error);
}

TEST(Metrics, UpdatesNeverReadTheDevice) {
  // On the meta device every read of a value throws: updates pass only if their sums stay where
  // the outputs are (on a GPU: no wait for it per evaluation batch). compute() is the one read.
  const auto meta = torch::TensorOptions().device(c10::kMeta);
  for (const char* name : {"accuracy", "top2_accuracy", "loss"}) {
    auto m = make_metric(name);
    EXPECT_NO_THROW(m->update(torch::empty({4, 3}, meta), torch::empty({4}, meta.dtype(torch::kLong)))) << name;
    EXPECT_NO_THROW(m->update(torch::empty({2, 3}, meta), torch::empty({2}, meta.dtype(torch::kLong)))) << name;
    EXPECT_ANY_THROW(m->compute()) << name;
  }
}

TEST(Metrics, TopKAndNames) {
  auto m = make_metric("top2_accuracy");
  EXPECT_EQ(m->name(), "top2_accuracy");
  m->update(torch::tensor({{3.f, 2.f, 1.f}, {3.f, 2.f, 1.f}}), torch::tensor({1, 2}));
  EXPECT_DOUBLE_EQ(m->compute(), 0.5);
  EXPECT_EQ(make_metric("top10_accuracy")->name(), "top10_accuracy");
  EXPECT_EQ(metric_names(),
            (std::vector<std::string>{"accuracy", "loss", "precision", "recall", "f1", "auroc", "confusion_matrix",
                                      "mse", "mae", "r2", "perplexity", "top<k>_accuracy",
                                      "<precision|recall|f1>_<macro|micro|binary>"}));
  for (const char* bad :
       {"f2", "f1_weighted", "top0_accuracy", "top_accuracy", "topx_accuracy", "top99999999_accuracy", "top5"}) {
    EXPECT_THAT([&] { make_metric(bad); },
                ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
                    "unknown metric '" + std::string(bad) + "' (known: accuracy, loss, precision, recall, f1, auroc")));
  }
}

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

TEST(Metrics, SequencesCountEveryPosition) {
  auto acc = make_metric("accuracy");
  auto ce = make_metric("loss");
  const at::Tensor logits = torch::randn({2, 3, 4});
  const at::Tensor targets = logits.argmax(2);
  targets[0][0] = (targets[0][0].item<int64_t>() + 1) % 4;  // one wrong position of six
  acc->update(logits, targets);
  ce->update(logits, targets);
  EXPECT_NEAR(acc->compute(), 5.0 / 6.0, 1e-9);
  EXPECT_NEAR(ce->compute(),
              torch::nn::functional::cross_entropy(logits.flatten(0, 1), targets.flatten()).item<double>(), 1e-6);
}

}  // namespace
}  // namespace baton
