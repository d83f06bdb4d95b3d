#include "baton/data/fashion_mnist.h"

#include <filesystem>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/data/readers.h"

namespace baton {

namespace {

// The images ([N, 1, 28, 28] in [0, 1]) and labels of one part of the set: "train" or "t10k".
std::pair<at::Tensor, at::Tensor> read_part(const std::string& dir, const std::string& part) {
  auto file = [&](const std::string& name) {
    std::string path = dir + "/" + part + "-" + name;
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error(path + ": not found; install Debian's dataset-fashion-mnist (scripts/install-deps.sh)");
    }
    return path;
  };
  at::Tensor images = read_idx(file("images-idx3-ubyte.gz"));
  if (images.dim() != 3 || images.size(1) != 28 || images.size(2) != 28) {
    throw std::runtime_error(file("images-idx3-ubyte.gz") + ": expected images of 28x28, got shape " +
                             c10::str(images.sizes()));
  }
  return {images.unsqueeze(1).to(torch::kFloat).div_(255.0), read_idx(file("labels-idx1-ubyte.gz")).to(torch::kLong)};
}

std::shared_ptr<TensorDataset> standardized(at::Tensor x, at::Tensor y, const Standardization& s) {
  x.sub_(s.mean).div_(s.std);
  auto set = std::make_shared<TensorDataset>(std::move(x), std::move(y));
  set->set_standardization(s);
  return set;
}

}  // namespace

std::pair<std::shared_ptr<TensorDataset>, std::shared_ptr<TensorDataset>> load_fashion_mnist(const std::string& dir) {
  auto [train_x, train_y] = read_part(dir, "train");
  auto [test_x, test_y] = read_part(dir, "t10k");
  const Standardization s{train_x.mean().item<double>(), train_x.std().item<double>()};
  return {standardized(train_x, train_y, s), standardized(test_x, test_y, s)};
}

std::shared_ptr<TensorDataset> load_fashion_mnist_test(const std::string& dir, const Standardization& standardization) {
  auto [x, y] = read_part(dir, "t10k");
  return standardized(x, y, standardization);
}

}  // namespace baton
