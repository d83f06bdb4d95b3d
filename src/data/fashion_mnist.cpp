#include "baton/data/fashion_mnist.h"

#include <filesystem>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/data/readers.h"

namespace baton {

std::pair<std::shared_ptr<TensorDataset>, std::shared_ptr<TensorDataset>> load_fashion_mnist(const std::string& dir) {
  auto file = [&](const char* name) {
    std::string path = dir + "/" + name;
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error(path + ": not found; install Debian's dataset-fashion-mnist (scripts/install-deps.sh)");
    }
    return path;
  };
  auto images = [&](const char* name) {
    at::Tensor t = read_idx(file(name));
    if (t.dim() != 3 || t.size(1) != 28 || t.size(2) != 28) {
      throw std::runtime_error(dir + "/" + name + ": expected images of 28x28, got shape " + c10::str(t.sizes()));
    }
    return t.unsqueeze(1).to(torch::kFloat).div_(255.0);
  };
  at::Tensor train_x = images("train-images-idx3-ubyte.gz");
  at::Tensor train_y = read_idx(file("train-labels-idx1-ubyte.gz")).to(torch::kLong);
  at::Tensor test_x = images("t10k-images-idx3-ubyte.gz");
  at::Tensor test_y = read_idx(file("t10k-labels-idx1-ubyte.gz")).to(torch::kLong);
  const at::Tensor mean = train_x.mean();
  const at::Tensor std = train_x.std();
  train_x.sub_(mean).div_(std);
  test_x.sub_(mean).div_(std);
  auto train = std::make_shared<TensorDataset>(train_x, train_y);
  auto test = std::make_shared<TensorDataset>(test_x, test_y);
  const Standardization s{mean.item<double>(), std.item<double>()};
  train->set_standardization(s);
  test->set_standardization(s);
  return {train, test};
}

}  // namespace baton
