// Seven algorithms in one fit: the engine's passes decide their order, and the traces show it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/algorithms/registry.h"
#include "baton/core/logger.h"
#include "baton/core/passes.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The algorithms that ran on each event, in run order (first occurrence of each event).
class TraceRecorder : public LoggerDestination {
 public:
  void log_traces(const Traces& traces) override {
    if (traces.empty()) return;
    const std::string event(to_string(traces.front().second.event));
    if (order.count(event)) return;
    std::vector<std::pair<int, std::string>> ran;
    for (const auto& [key, trace] : traces) ran.emplace_back(trace.order.value_or(-1), trace.name);
    std::sort(ran.begin(), ran.end());
    for (const auto& [i, name] : ran) order[event].push_back(name);
  }
  std::map<std::string, std::vector<std::string>> order;
};

std::shared_ptr<TensorDataset> images(int64_t n) {
  auto gen = at::detail::createCPUGenerator(7);
  return std::make_shared<TensorDataset>(torch::randn({n, 1, 16, 16}, gen),
                                         torch::randint(0, 4, {n}, gen, torch::kLong));
}

TEST(Composition, SevenAlgorithmsRunInThePassesOrder) {
  for (bool interpolate : {false, true}) {
    SCOPED_TRACE(interpolate ? "interpolating the loss" : "mixing the targets");
    torch::manual_seed(0);
    auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 16, 16}).num_classes(4));
    std::vector<std::shared_ptr<Algorithm>> algorithms = {
        make_algorithm("mixup", {{"alpha", 0.2}, {"interpolate_loss", interpolate}}),
        make_algorithm("cutmix", {{"alpha", 1.0}, {"interpolate_loss", interpolate}}),
        make_algorithm("label_smoothing", {{"smoothing", 0.1}}),
        make_algorithm("ema", {{"half_life", "2ba"}}),
        make_algorithm("layer_freezing", {{"freeze_start", 0.0}}),
        make_algorithm("gradient_clipping", {{"clipping_threshold", 1.0}}),
        make_algorithm("selective_backprop", {{"start", 0.0}, {"end", 1.0}, {"interval", 1}, {"keep", 0.5}}),
    };
    auto traces = std::make_shared<TraceRecorder>();
    TrainerOptions o =
        TrainerOptions()
            .model(model)
            .train_dataloader(std::make_shared<DataLoader>(images(64), DataLoaderOptions().batch_size(16)))
            .eval_dataloader("eval", std::make_shared<DataLoader>(images(16), DataLoaderOptions().batch_size(16)))
            .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05), model->parameters())})
            .algorithms(algorithms)
            .loggers({traces})
            .progress_bar(false)
            .console_log_interval("0ba")
            .max_duration("2ep");
    testing::CapturedLog log;
    Trainer trainer(o);
    trainer.fit();
    const auto& order = traces->order;
    // Selective backprop is last in the list but first on its event.
    EXPECT_THAT(order.at("after_dataloader"), ElementsAre("SelectiveBackprop"));
    EXPECT_THAT(order.at("before_forward"), ElementsAre("MixUp", "CutMix"));
    EXPECT_THAT(order.at("after_train_batch"), ElementsAre("GradientClipping"));
    EXPECT_THAT(order.at("epoch_end"), ElementsAre("Ema", "LayerFreezing"));
    if (interpolate) {
      EXPECT_THAT(order.at("before_loss"), ElementsAre("LabelSmoothing"));
      EXPECT_THAT(order.at("before_backward"), ElementsAre("MixUp", "CutMix"));
      EXPECT_THAT(log.text(), HasSubstr("2 algorithms interpolate the loss on before_backward (MixUp, CutMix)"));
    } else {
      EXPECT_THAT(order.at("before_loss"), ElementsAre("MixUp", "CutMix", "LabelSmoothing"));
      // FILO on after-events: the last to change the targets is the first to restore them.
      EXPECT_THAT(order.at("after_loss"), ElementsAre("LabelSmoothing", "CutMix", "MixUp"));
      EXPECT_THAT(log.text(), ::testing::Not(HasSubstr("interpolate the loss")));
    }
    // Every recorded order is what the passes give for the matched list.
    std::vector<Algorithm*> raw;
    for (const auto& a : algorithms) raw.push_back(a.get());
    for (const auto& [event_name, names] : order) {
      const Event event = parse_event(event_name);
      std::vector<Algorithm*> matched;
      for (Algorithm* a : raw) {
        if (std::find(names.begin(), names.end(), a->name()) != names.end()) matched.push_back(a);
      }
      for (const auto& pass : default_passes()) matched = pass(matched, event);
      std::vector<std::string> want;
      for (Algorithm* a : matched) want.push_back(a->name());
      EXPECT_EQ(names, want) << event_name;
    }
    EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
    EXPECT_EQ(trainer.summary().samples, 128);  // selective backprop trains on fewer, the clock counts the data
  }
}

}  // namespace
}  // namespace baton
