#include "baton/models/summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/models/zoo.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(ModelSummary, ListsTheTopModulesWithTheirParametersSizeAndFlops) {
  auto model = make_model("mlp", ModelOptions().input_shape({8}).num_classes(3).hidden({32}));
  model->parameters()[0].set_requires_grad(false);  // the first Linear's weight: frozen
  const ModelSummary s = summarize(*model, torch::randn({2, 8}));
  ASSERT_EQ(s.parts.size(), 3u);  // Linear, ReLU, Linear: through the Classifier's one child
  EXPECT_EQ(s.parts[0].type, "Linear");
  EXPECT_EQ(s.parts[0].parameters, 8 * 32 + 32);
  EXPECT_EQ(s.parts[0].trainable, 32);
  EXPECT_EQ(s.parts[1].parameters, 0);
  EXPECT_EQ(s.parts[2].parameters, 32 * 3 + 3);
  EXPECT_EQ(s.parameters, 8 * 32 + 32 + 32 * 3 + 3);
  EXPECT_EQ(s.trainable, s.parameters - 8 * 32);
  EXPECT_DOUBLE_EQ(s.size_mb, static_cast<double>(s.parameters) * 4 / 1e6);
  ASSERT_TRUE(s.flops_per_example.has_value());
  EXPECT_DOUBLE_EQ(*s.flops_per_example, 2.0 * (8 * 32 + 32 * 3));  // two matrix products an example
  const std::string text = s.to_string();
  EXPECT_THAT(text, HasSubstr("partly frozen"));
  EXPECT_THAT(text, HasSubstr("387 parameters (131 trainable, 256 frozen)"));
  EXPECT_THAT(text, HasSubstr("704 FLOPs per example"));
  EXPECT_EQ(s.to_json()["parts"].size(), 3u);
}

TEST(ModelSummary, CountsBuffersInTheSizeAndLeavesFlopsUnknownWithoutAnInput) {
  auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  const ModelSummary s = summarize(*model, at::Tensor());
  EXPECT_FALSE(s.flops_per_example.has_value());
  EXPECT_THAT(s.to_string(), HasSubstr("FLOPs unknown"));
  EXPECT_GT(s.parts.size(), 3u);
  int64_t sum = 0;
  for (const auto& p : s.parts) sum += p.parameters;
  EXPECT_EQ(sum, s.parameters);
}

}  // namespace
}  // namespace baton
