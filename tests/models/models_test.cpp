#include "baton/models/zoo.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"

namespace baton {
namespace {

int64_t count_parameters(Model& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

TEST(Zoo, FashionCnnIsThePeersArchitecture) {
  auto model = make_model("fashion_cnn", {.input_shape = {1, 28, 28}, .num_classes = 10});
  // conv 1->32 (320) + conv 32->64 (18496) + linear 3136->128 (401536) + linear 128->10 (1290)
  EXPECT_EQ(count_parameters(*model), 320 + 18496 + 401536 + 1290);
  Batch batch{torch::randn({4, 1, 28, 28}), torch::tensor({0, 1, 2, 3})};
  EXPECT_EQ(model->forward(batch).sizes(), (std::vector<int64_t>{4, 10}));
}

TEST(Zoo, MlpAndResNet20) {
  auto mlp = make_model("mlp", {.input_shape = {3, 8}, .num_classes = 5, .hidden = {16}});
  EXPECT_EQ(count_parameters(*mlp), 24 * 16 + 16 + 16 * 5 + 5);
  auto resnet = make_model("resnet20", {.input_shape = {3, 32, 32}, .num_classes = 10});
  EXPECT_NEAR(static_cast<double>(count_parameters(*resnet)), 0.27e6, 0.01e6);  // ResNet-20: 0.27M
  Batch batch{torch::randn({2, 3, 32, 32}), torch::tensor({0, 1})};
  EXPECT_EQ(resnet->forward(batch).sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(Zoo, RefusesUnknownNamesAndShapesItCannotTake) {
  EXPECT_THAT(
      [] {
        make_model("vgg", {.input_shape = {1, 28, 28}});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          ::testing::HasSubstr("unknown model 'vgg' (known: fashion_cnn, mlp, resnet20)")));
  EXPECT_THAT([] { make_model("fashion_cnn", {.input_shape = {784}}); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("needs image inputs")));
}

TEST(Classifier, SoftTargetsGiveTheSameLossAsIndicesWhenOneHot) {
  auto logits = torch::randn({5, 3});
  auto idx = torch::tensor({0, 2, 1, 1, 0});
  auto one_hot = torch::one_hot(idx, 3).to(torch::kFloat);
  EXPECT_NEAR(soft_cross_entropy(logits, idx).item<double>(), soft_cross_entropy(logits, one_hot).item<double>(), 1e-6);
}

TEST(Metrics, AveragedOverEveryExampleNotOverBatches) {
  Accuracy acc;
  CrossEntropy ce;
  // A batch of 3 with 3 right, then a batch of 1 with 0 right: 3/4, not (1 + 0) / 2.
  auto good = torch::tensor({{5.f, 0.f}, {5.f, 0.f}, {0.f, 5.f}});
  acc.update(good, torch::tensor({0, 0, 1}));
  acc.update(torch::tensor({{5.f, 0.f}}), torch::tensor({1}));
  EXPECT_DOUBLE_EQ(acc.compute(), 0.75);
  auto a = torch::randn({3, 4});
  auto b = torch::randn({1, 4});
  ce.update(a, torch::tensor({0, 1, 2}));
  ce.update(b, torch::tensor({3}));
  const double expected =
      torch::nn::functional::cross_entropy(torch::cat({a, b}), torch::tensor({0, 1, 2, 3})).item<double>();
  EXPECT_NEAR(ce.compute(), expected, 1e-6);
  acc.reset();
  EXPECT_THROW(acc.compute(), std::logic_error);
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
  EXPECT_THROW(make_metric("f1"), std::invalid_argument);
}

}  // namespace
}  // namespace baton
