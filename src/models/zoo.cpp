#include "baton/models/zoo.h"

#include <stdexcept>

#include <torch/torch.h>

namespace baton {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

struct FashionCnnImpl : nn::Module {
  FashionCnnImpl(int64_t channels, int64_t height, int64_t width, int64_t classes)
      : c1(register_module("c1", nn::Conv2d(nn::Conv2dOptions(channels, 32, 3).padding(1)))),
        c2(register_module("c2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)))),
        f1(register_module("f1", nn::Linear(64 * (height / 4) * (width / 4), 128))),
        f2(register_module("f2", nn::Linear(128, classes))) {}

  at::Tensor forward(at::Tensor x) {
    x = F::max_pool2d(torch::relu(c1(x)), F::MaxPool2dFuncOptions(2));
    x = F::max_pool2d(torch::relu(c2(x)), F::MaxPool2dFuncOptions(2));
    return f2(torch::relu(f1(x.flatten(1))));
  }

  nn::Conv2d c1, c2;
  nn::Linear f1, f2;
};
TORCH_MODULE(FashionCnn);

struct MlpImpl : nn::Module {
  MlpImpl(int64_t inputs, const std::vector<int64_t>& hidden, int64_t classes) {
    int64_t width = inputs;
    for (std::size_t i = 0; i < hidden.size(); ++i) {
      layers->push_back(nn::Linear(width, hidden[i]));
      layers->push_back(nn::ReLU());
      width = hidden[i];
    }
    layers->push_back(nn::Linear(width, classes));
    register_module("layers", layers);
  }
  at::Tensor forward(at::Tensor x) { return layers->forward(x.flatten(1)); }
  nn::Sequential layers;
};
TORCH_MODULE(Mlp);

struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1(
            register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)))),
        bn1(register_module("bn1", nn::BatchNorm2d(out))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)))),
        bn2(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      shortcut = register_module(
          "shortcut",
          nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)), nn::BatchNorm2d(out)));
    }
  }
  at::Tensor forward(at::Tensor x) {
    at::Tensor out = torch::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    return torch::relu(out + (shortcut.is_empty() ? x : shortcut->forward(x)));
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

struct ResNet20Impl : nn::Module {
  ResNet20Impl(int64_t channels, int64_t classes)
      : stem(register_module("stem", nn::Conv2d(nn::Conv2dOptions(channels, 16, 3).padding(1).bias(false)))),
        bn(register_module("bn", nn::BatchNorm2d(16))),
        fc(register_module("fc", nn::Linear(64, classes))) {
    int64_t in = 16;
    int stage = 0;
    for (int64_t width : {16, 32, 64}) {
      nn::Sequential blocks;
      for (int i = 0; i < 3; ++i) {
        blocks->push_back(BasicBlock(in, width, (i == 0 && width != 16) ? 2 : 1));
        in = width;
      }
      layers.push_back(register_module("layer" + std::to_string(++stage), blocks));
    }
  }
  at::Tensor forward(at::Tensor x) {
    x = torch::relu(bn(stem(x)));
    for (auto& layer : layers) x = layer->forward(x);
    return fc(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
  }
  nn::Conv2d stem;
  nn::BatchNorm2d bn;
  nn::Linear fc;
  std::vector<nn::Sequential> layers;
};
TORCH_MODULE(ResNet20);

void require_image(const std::string& name, const ModelSpec& spec, int64_t min_side) {
  if (spec.input_shape.size() != 3 || spec.input_shape[1] < min_side || spec.input_shape[2] < min_side) {
    throw std::invalid_argument("model '" + name + "' needs image inputs [channels, height, width] of at least " +
                                std::to_string(min_side) + "x" + std::to_string(min_side) +
                                ", but the data has shape " + c10::str(at::IntArrayRef(spec.input_shape)));
  }
}

}  // namespace

std::vector<std::string> model_names() { return {"fashion_cnn", "mlp", "resnet20"}; }

std::shared_ptr<Model> make_model(const std::string& name, const ModelSpec& spec) {
  if (spec.num_classes < 2) {
    throw std::invalid_argument("model '" + name + "': num_classes must be at least 2, got " +
                                std::to_string(spec.num_classes));
  }
  if (name == "fashion_cnn") {
    require_image(name, spec, 4);
    return std::make_shared<Classifier>(
        FashionCnn(spec.input_shape[0], spec.input_shape[1], spec.input_shape[2], spec.num_classes).ptr());
  }
  if (name == "mlp") {
    if (spec.input_shape.empty()) throw std::invalid_argument("model 'mlp' needs the input shape");
    int64_t features = 1;
    for (int64_t d : spec.input_shape) features *= d;
    return std::make_shared<Classifier>(Mlp(features, spec.hidden, spec.num_classes).ptr());
  }
  if (name == "resnet20") {
    require_image(name, spec, 4);
    return std::make_shared<Classifier>(ResNet20(spec.input_shape[0], spec.num_classes).ptr());
  }
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace baton
