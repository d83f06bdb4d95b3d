// The zoo's cnn_space: a CNN for images whose stages choose their op, width and depth.
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/models/surgery.h"
#include "models/nets.h"

namespace baton {
namespace {

namespace nn = torch::nn;

nn::AnyModule conv_bn_relu(int64_t in, int64_t out, int64_t kernel) {
  Stack s;
  s->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, kernel).padding(kernel / 2).bias(false)));
  s->push_back(nn::BatchNorm2d(out));
  s->push_back(nn::ReLU());
  return nn::AnyModule(s);
}

// A block of a stage of `width` channels: the stage's op.
nas::LayerChoice block_op(const std::string& label, int64_t width) {
  return nas::LayerChoice(
      label, {{"conv3x3", [width] { return conv_bn_relu(width, width, 3); }},
              {"conv5x5", [width] { return conv_bn_relu(width, width, 5); }},
              {"dwsep3x3",
               [width] {  // depthwise 3x3, then pointwise 1x1 (MobileNet's separable convolution)
                 Stack s;
                 s->push_back(nn::Conv2d(nn::Conv2dOptions(width, width, 3).padding(1).groups(width).bias(false)));
                 s->push_back(nn::Conv2d(nn::Conv2dOptions(width, width, 1).bias(false)));
                 s->push_back(nn::BatchNorm2d(width));
                 s->push_back(nn::ReLU());
                 return nn::AnyModule(s);
               }},
              {"maxpool", [] { return nn::AnyModule(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(1).padding(1))); }},
              {"identity", [] { return nn::AnyModule(nn::Identity()); }}});
}

struct GlobalPoolImpl : nn::Module {
  at::Tensor forward(const at::Tensor& x) { return x.mean({2, 3}); }
};
TORCH_MODULE(GlobalPool);

}  // namespace

nas::ModelSpace cnn_space(const ModelOptions& spec) {
  require_image("cnn_space", spec, 4);
  const int64_t channels = spec.input_shape()[0], classes = spec.num_classes();
  return nas::ModelSpace("cnn_space", spec.input_shape(), [channels, classes](nas::Space& s) {
    Stack net;
    net->push_back(conv_bn_relu(channels, 16, 3));
    int64_t in = 16;
    for (int stage = 1; stage <= 3; ++stage) {
      const std::string name = "stage" + std::to_string(stage);
      if (stage > 1) net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
      const auto width = s.value<int64_t>(nas::ValueChoice(name + "_width", {16, 32, 64}));
      net->push_back(conv_bn_relu(in, width, 1));  // the stage's entry: to its width
      net->push_back(s.repeat(nas::Repeat(
          name + "_depth", {1, 2, 3}, [&s, name, width](int64_t) { return s.layer(block_op(name + "_op", width)); })));
      in = width;
    }
    net->push_back(GlobalPool());
    net->push_back(nn::Linear(in, classes));
    return nn::AnyModule(net);
  });
}

std::shared_ptr<Model> frozen_space_model(const nas::ModelSpace& space, const ModelOptions& spec) {
  const std::string& name = space.name();
  if (spec.one_shot()) {  // the supernet, its choices narrowed to model.arch's values
    try {
      return std::make_shared<Classifier>(
          space.one_shot(spec.arch().is_null() ? nlohmann::json::object() : spec.arch()).ptr());
    } catch (const nas::SpaceError& e) {
      throw OptionError("arch", "model '" + name + "' (one_shot): " + e.what());
    }
  }
  if (spec.arch().is_null() || spec.arch().empty()) {
    std::string labels;
    for (const auto& l : space.labels()) labels += (labels.empty() ? "" : ", ") + l;
    throw OptionError("arch", "model '" + name + "' is a model space: model.arch chooses its architecture (" + labels +
                                  "; docs/nas.md)");
  }
  try {
    return std::make_shared<Classifier>(space.freeze(spec.arch()));
  } catch (const nas::SpaceError& e) {
    throw OptionError("arch", "model '" + name + "': " + e.what());
  }
}

}  // namespace baton
