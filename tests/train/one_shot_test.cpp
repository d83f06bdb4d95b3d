// Evaluating a supernet's paths (src/train/one_shot.cpp): a path evaluated with the weights it
// inherits, its BatchNorm statistics computed anew or kept, and what is not a supernet refused.
#include "baton/train/one_shot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/algorithms/registry.h"
#include "baton/models/zoo.h"
#include "baton/nas/space.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TrainerOptions supernet_options() {
  torch::manual_seed(0);
  const nlohmann::json widths = {{"stage1_width", 16}, {"stage2_width", 16}, {"stage3_width", 16}};
  auto model =
      make_model("cnn_space", ModelOptions().input_shape({1, 16, 16}).num_classes(4).one_shot(true).arch(widths));
  return TrainerOptions()
      .model(model)
      .train_dataloader(
          std::make_shared<DataLoader>(testing::quadrants(32, 1), DataLoaderOptions().batch_size(16).seed(3)))
      .eval_dataloader("eval", std::make_shared<DataLoader>(testing::quadrants(32, 2),
                                                            DataLoaderOptions().batch_size(16).shuffle(false)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05), model->parameters())})
      .algorithms({make_algorithm("single_path", {{"seed", 1}})})
      .progress_bar(false)
      .console_log_interval("0ba")
      .eval_interval("0ep")
      .max_duration("2ba");
}

TEST(EvaluatePath, ZeroRecalibrationKeepsTheSupernetsStatisticsAndTheMetricsRepeat) {
  TrainerOptions options = supernet_options();
  Trainer trainer(options);
  trainer.fit();
  nas::SupernetImpl* supernet = nas::find_supernet(*options.model());
  ASSERT_NE(supernet, nullptr);
  const nlohmann::json path = supernet->sample(1, 0, true);
  std::vector<at::Tensor> before;
  for (const auto& b : options.model()->buffers()) before.push_back(b.clone());
  const auto metrics = evaluate_path(trainer, path, 0);
  ASSERT_EQ(metrics.count("eval/accuracy"), 1U);
  const auto buffers = options.model()->buffers();
  ASSERT_EQ(buffers.size(), before.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) EXPECT_TRUE(torch::equal(buffers[i], before[i])) << i;
  EXPECT_EQ(evaluate_path(trainer, path, 0), metrics);
  EXPECT_EQ(supernet->active(), path);
}

TEST(EvaluatePath, AModelThatIsNoSupernetAndAPathThatDoesNotFitAreRefused) {
  Trainer plain(testing::small_options().max_duration("1ba"));
  EXPECT_THROW(evaluate_path(plain, {{"stage1_op", "conv3x3"}}, 0), std::invalid_argument);
  TrainerOptions options = supernet_options();
  Trainer trainer(options);
  EXPECT_THAT(error_of([&] {
                evaluate_path(trainer, {{"stage1_op", "conv3x3"}}, 0);
              }),
              HasSubstr("the path has no value for"));
}

}  // namespace
}  // namespace baton
