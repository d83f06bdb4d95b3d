// The logger (src/core/logger.cpp): every destination gets every value, the batch the default step.
#include "baton/core/state.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/logger.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

class Collect : public LoggerDestination {
 public:
  void log_metrics(const Metrics& metrics, int64_t step) override {
    for (const auto& [k, v] : metrics) seen.push_back(k + "=" + std::to_string(v) + "@" + std::to_string(step));
  }
  void log_hyperparameters(const nlohmann::json& hp) override { seen.push_back(hp.dump()); }
  std::vector<std::string> seen;
};

TEST(Logger, FansOutToEveryDestinationWithTheBatchAsDefaultStep) {
  State state;
  state.timestamp = state.timestamp.to_next_batch(1).to_next_batch(1);
  auto a = std::make_shared<Collect>();
  auto b = std::make_shared<Collect>();
  Logger logger(state, {a});
  logger.add_destination(b);
  logger.log_metrics({{"loss", 0.5}});
  logger.log_metrics({{"acc", 1.0}}, 10);
  logger.log_hyperparameters({{"lr", 0.1}});
  const std::vector<std::string> expected = {"loss=0.500000@2", "acc=1.000000@10", R"({"lr":0.1})"};
  EXPECT_EQ(a->seen, expected);
  EXPECT_EQ(b->seen, expected);
}

}  // namespace
}  // namespace baton
