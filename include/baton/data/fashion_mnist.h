// Fashion-MNIST, read where Debian's dataset-fashion-mnist package installs it.
//
//   auto [train, test] = baton::load_fashion_mnist();  // inputs [N, 1, 28, 28] float, labels int64
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "baton/data/dataset.h"

namespace baton {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// The training and test sets, scaled to [0, 1] and standardised with the training set's mean and
// standard deviation. Throws std::runtime_error naming a missing file and the package to install.
std::pair<std::shared_ptr<TensorDataset>, std::shared_ptr<TensorDataset>> load_fashion_mnist(
    const std::string& dir = kFashionMnistDir);
// The test set of `dir`, standardised as given (a training set's): another copy evaluated beside it.
std::shared_ptr<TensorDataset> load_fashion_mnist_test(const std::string& dir, const Standardization& standardization);

}  // namespace baton
