// What dataloader_test.cpp, dataset_test.cpp and shared_batches_test.cpp share.
#pragma once

#include "baton/data/dataloader.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/dataset.h"
#include "baton/data/fashion_mnist.h"
#include "baton/data/shared_batches.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton::dataloader_fixtures {

using testing::CountedGathers;
using testing::error_of;

inline std::shared_ptr<TensorDataset> numbered(int64_t n) {
  auto x = torch::arange(n, torch::kFloat).unsqueeze(1);
  return std::make_shared<TensorDataset>(x, torch::arange(n) % 3);
}

inline std::vector<int64_t> ids(const Batch& b) {
  auto t = b.input.squeeze(1).to(torch::kLong);
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

inline std::vector<std::vector<int64_t>> epoch(DataLoader& loader, int64_t e) {
  loader.start_epoch(e);
  std::vector<std::vector<int64_t>> out;
  while (auto b = loader.next()) out.push_back(ids(*b));
  return out;
}

}  // namespace baton::dataloader_fixtures
