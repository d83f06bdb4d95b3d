// A model space written with baton's choices (docs/nas.md): its search space, three architectures a
// strategy samples from it frozen into plain networks, and the zoo's cnn_space.
//
//   build/bin/nas_space
#include <cstdio>
#include <random>

#include <torch/torch.h>

#include "baton/exec/space.h"
#include "baton/models/zoo.h"
#include "baton/nas/space.h"

namespace nas = baton::nas;
namespace nn = torch::nn;

namespace {

// A stem of `width` channels, `depth` blocks of one op, global average pooling, a linear layer.
struct NetImpl : nn::Module {
  NetImpl(int64_t width, nn::AnyModule blocks)
      : stem(register_module("stem", nn::Conv2d(nn::Conv2dOptions(1, width, 3).padding(1)))),
        blocks(std::move(blocks)),
        head(register_module("head", nn::Linear(width, 10))) {
    register_module("blocks", this->blocks.ptr());
  }
  at::Tensor forward(const at::Tensor& x) {
    return head(blocks.forward<at::Tensor>(torch::relu(stem(x))).mean({2, 3}));
  }
  nn::Conv2d stem;
  nn::AnyModule blocks;
  nn::Linear head;
};
TORCH_MODULE(Net);

int64_t parameters(const nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace

int main() {
  const nas::ModelSpace space("small_cnn", {1, 28, 28}, [](nas::Space& s) {
    const auto width = s.value<int64_t>(nas::ValueChoice("width", {16, 32}));
    auto blocks = s.repeat(nas::Repeat("depth", {1, 2, 3}, [&s, width](int64_t) {
      return s.layer(nas::LayerChoice(
          "op", {{"conv",
                  [&s, width] {  // a choice inside a candidate: asked only when conv is chosen
                    const auto k = s.value<int64_t>(nas::ValueChoice("kernel", {3, 5}));
                    return nn::AnyModule(nn::Conv2d(nn::Conv2dOptions(width, width, k).padding(k / 2)));
                  }},
                 {"pool", [] { return nn::AnyModule(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(1).padding(1))); }},
                 {"identity", [] { return nn::AnyModule(nn::Identity()); }}}));
    }));
    return nn::AnyModule(Net(width, blocks));
  });
  std::printf("search space: %s\n", space.search_space().dump().c_str());
  std::printf("supernet: %lld parameters\n", static_cast<long long>(parameters(*space.supernet().ptr())));

  const auto search = baton::SearchSpace::from_json(space.search_space());  // what every strategy samples
  std::mt19937_64 rng(0);
  for (int i = 0; i < 3; ++i) {
    const auto arch = search.sample(rng);
    auto net = space.freeze(arch);
    const auto out = net.forward<at::Tensor>(torch::randn({4, 1, 28, 28}));
    std::printf("%s: %lld parameters, outputs %s\n", arch.dump().c_str(),
                static_cast<long long>(parameters(*net.ptr())), c10::str(out.sizes()).c_str());
  }

  const auto cnn = baton::model_space("cnn_space", baton::ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  std::printf("cnn_space: %zu choices\n", cnn.labels().size());
  return 0;
}
