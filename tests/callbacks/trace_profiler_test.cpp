#include "baton/callbacks/trace_profiler.h"
#include "baton/io/file.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/algorithms/registry.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

TEST(TraceProfiler, ScheduleSkipsWaitsWarmsUpAndRecords) {
  TraceProfiler p(TraceProfilerOptions().skip_first(1).wait(1).warmup(1).active(2).repeat(2));
  std::vector<int> phases;
  for (int64_t step = 0; step < 12; ++step) phases.push_back(p.phase(step));
  EXPECT_THAT(phases, ::testing::ElementsAre(0, 0, 1, 2, 2, 0, 1, 2, 2, 0, 0, 0));
}

TEST(TraceProfiler, WritesChromeTracesWithBalancedNestedSpans) {
  const baton::testing::TempDir dir_tmp("traces");
  const std::filesystem::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  torch::manual_seed(0);
  auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 16, 16}).num_classes(4));
  auto gen = at::detail::createCPUGenerator(1);
  auto data = std::make_shared<TensorDataset>(torch::randn({64, 1, 16, 16}, gen),
                                              torch::randint(0, 4, {64}, gen, torch::kLong));
  auto profiler = std::make_shared<TraceProfiler>(
      TraceProfilerOptions().folder(dir.string()).wait(1).warmup(0).active(2).repeat(1));
  Trainer trainer(TrainerOptions()
                      .model(model)
                      .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(16)))
                      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05), model->parameters())})
                      .algorithms({make_algorithm("label_smoothing")})
                      .callbacks({profiler})
                      .progress_bar(false)
                      .console_log_interval("0ba")
                      .eval_interval("0ep")
                      .max_duration("4ba"));
  trainer.fit();
  ASSERT_EQ(profiler->files().size(), 1U);
  EXPECT_EQ(std::filesystem::path(profiler->files()[0]).filename(), "ep0-ba1.json");
  std::ifstream in(profiler->files()[0]);
  const nlohmann::json trace = nlohmann::json::parse(in);
  const auto& events = trace["traceEvents"];
  std::map<int, std::vector<std::string>> stacks;
  std::set<std::string> names;
  double last = -1;
  int batches = 0;
  for (const auto& e : events) {
    const double ts = e["ts"].get<double>();
    EXPECT_GE(ts, last);  // monotonic, in microseconds
    last = ts;
    auto& stack = stacks[e["tid"].get<int>()];
    const std::string name = e["name"];
    names.insert(name);
    if (e["ph"] == "B") {
      stack.push_back(name);
      batches += name == "event/batch" ? 1 : 0;
    } else {
      ASSERT_FALSE(stack.empty()) << name;
      EXPECT_EQ(stack.back(), name);  // properly nested
      stack.pop_back();
    }
  }
  for (const auto& [tid, stack] : stacks) EXPECT_TRUE(stack.empty());
  EXPECT_EQ(batches, 2);  // the two active batches
  for (const char* want :
       {"event/batch", "event/forward", "event/loss", "algorithm/LabelSmoothing/event/before_loss",
        "callback/TraceProfiler/event/batch_end", "dataloader/wait", "forward", "backward", "optimizer/step"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
  // The whole recorded window: two batches of this model take milliseconds, not seconds.
  EXPECT_LT(last - events.front()["ts"].get<double>(), 60e6);
  baton::remove_tree(dir);
}

}  // namespace
}  // namespace baton
