#include "baton/models/zoo.h"

#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "models/nets.h"

namespace baton {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

struct FashionCnnImpl : Replaceable {
  FashionCnnImpl(int64_t channels, int64_t height, int64_t width, int64_t classes) : Replaceable("FashionCnn") {
    c1 = add_slot("c1", nn::Conv2d(nn::Conv2dOptions(channels, 32, 3).padding(1)));
    p1 = add_slot("p1", nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    c2 = add_slot("c2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)));
    p2 = add_slot("p2", nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    f1 = add_slot("f1", nn::Linear(64 * (height / 4) * (width / 4), 128));
    f2 = add_slot("f2", nn::Linear(128, classes));
  }
  at::Tensor forward(at::Tensor x) {
    x = call(p1, torch::relu(call(c1, x)));
    x = call(p2, torch::relu(call(c2, x)));
    return call(f2, torch::relu(call(f1, x.flatten(1))));
  }
  int c1, p1, c2, p2, f1, f2;
};
TORCH_MODULE(FashionCnn);

struct MlpImpl : nn::Module {
  MlpImpl(int64_t inputs, const std::vector<int64_t>& hidden, int64_t classes) : nn::Module("Mlp") {
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
  Stack layers;
};
TORCH_MODULE(Mlp);

}  // namespace

at::Tensor ResidualBlockImpl::forward(at::Tensor x) { return torch::relu(residual(x) + shortcut(x)); }

at::Tensor ResidualBlockImpl::shortcut(const at::Tensor& x) { return shortcut_ < 0 ? x : call(shortcut_, x); }

void ResidualBlockImpl::add_shortcut(const std::string& name, int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return;
  Stack shortcut;
  shortcut->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
  shortcut->push_back(nn::BatchNorm2d(out));
  shortcut_ = add_slot(name, shortcut);
}

BasicBlockImpl::BasicBlockImpl(int64_t in, int64_t out, int64_t stride, const std::string& shortcut_name)
    : ResidualBlockImpl("BasicBlock") {
  conv1_ = add_slot("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
  bn1_ = add_slot("bn1", nn::BatchNorm2d(out));
  conv2_ = add_slot("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
  bn2_ = add_slot("bn2", nn::BatchNorm2d(out));
  add_shortcut(shortcut_name, in, out, stride);
}

at::Tensor BasicBlockImpl::residual(const at::Tensor& x) {
  return call(bn2_, call(conv2_, torch::relu(call(bn1_, call(conv1_, x)))));
}

BottleneckImpl::BottleneckImpl(int64_t in, int64_t out, int64_t stride) : ResidualBlockImpl("Bottleneck") {
  const int64_t width = out / 4;
  conv1_ = add_slot("conv1", nn::Conv2d(nn::Conv2dOptions(in, width, 1).bias(false)));
  bn1_ = add_slot("bn1", nn::BatchNorm2d(width));
  conv2_ = add_slot("conv2", nn::Conv2d(nn::Conv2dOptions(width, width, 3).stride(stride).padding(1).bias(false)));
  bn2_ = add_slot("bn2", nn::BatchNorm2d(width));
  conv3_ = add_slot("conv3", nn::Conv2d(nn::Conv2dOptions(width, out, 1).bias(false)));
  bn3_ = add_slot("bn3", nn::BatchNorm2d(out));
  add_shortcut("downsample", in, out, stride);
}

at::Tensor BottleneckImpl::residual(const at::Tensor& x) {
  const at::Tensor h = torch::relu(call(bn2_, call(conv2_, torch::relu(call(bn1_, call(conv1_, x))))));
  return call(bn3_, call(conv3_, h));
}

namespace {

struct ResNet20Impl : Replaceable {
  ResNet20Impl(int64_t channels, int64_t classes) : Replaceable("ResNet20") {
    stem = add_slot("stem", nn::Conv2d(nn::Conv2dOptions(channels, 16, 3).padding(1).bias(false)));
    bn = add_slot("bn", nn::BatchNorm2d(16));
    int64_t in = 16;
    int stage = 0;
    for (int64_t width : {16, 32, 64}) {
      Stack blocks;
      for (int i = 0; i < 3; ++i) {
        blocks->push_back(BasicBlock(in, width, (i == 0 && width != 16) ? 2 : 1));
        in = width;
      }
      layers.push_back(add_slot("layer" + std::to_string(++stage), blocks));
    }
    fc = add_slot("fc", nn::Linear(64, classes));
  }
  at::Tensor forward(at::Tensor x) {
    x = torch::relu(call(bn, call(stem, x)));
    for (int layer : layers) x = call(layer, x);
    return call(fc, F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
  }
  int stem, bn, fc;
  std::vector<int> layers;
};
TORCH_MODULE(ResNet20);

// torchvision's ResNet: its layout and names (conv1, bn1, maxpool, layer1..4, fc) and its
// initialisation (He-normal convolutions with fan-out, BatchNorm at 1 and 0).
struct TorchvisionResNetImpl : Replaceable {
  TorchvisionResNetImpl(int64_t channels, int64_t classes, bool bottleneck, const std::vector<int>& depths)
      : Replaceable(bottleneck ? "ResNet50" : "ResNet18") {
    conv1 = add_slot("conv1", nn::Conv2d(nn::Conv2dOptions(channels, 64, 7).stride(2).padding(3).bias(false)));
    bn1 = add_slot("bn1", nn::BatchNorm2d(64));
    maxpool = add_slot("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
    const int64_t expansion = bottleneck ? 4 : 1;
    int64_t in = 64;
    for (std::size_t stage = 0; stage < depths.size(); ++stage) {
      const int64_t out = (int64_t{64} << stage) * expansion;
      Stack blocks;
      for (int i = 0; i < depths[stage]; ++i) {
        const int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
        if (bottleneck) {
          blocks->push_back(Bottleneck(in, out, stride));
        } else {
          blocks->push_back(BasicBlock(in, out, stride, "downsample"));
        }
        in = out;
      }
      layers.push_back(add_slot("layer" + std::to_string(stage + 1), blocks));
    }
    fc = add_slot("fc", nn::Linear(in, classes));
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<nn::Conv2d>()) nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    }
  }
  at::Tensor forward(at::Tensor x) {
    x = call(maxpool, torch::relu(call(bn1, call(conv1, x))));
    for (int layer : layers) x = call(layer, x);
    return call(fc, F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
  }
  int conv1, bn1, maxpool, fc;
  std::vector<int> layers;
};
TORCH_MODULE(TorchvisionResNet);

// Wider layers than this are a typo (a million units is 4 MB of weights per input already).
constexpr int64_t kMaxWidth = 1 << 20;

}  // namespace

void require_image(const std::string& name, const ModelOptions& spec, int64_t min_side) {
  if (spec.input_shape().size() != 3 || spec.input_shape()[1] < min_side || spec.input_shape()[2] < min_side) {
    throw std::invalid_argument("model '" + name + "' needs image inputs [channels, height, width] of at least " +
                                std::to_string(min_side) + "x" + std::to_string(min_side) +
                                ", but the data has shape " + c10::str(at::IntArrayRef(spec.input_shape())));
  }
}

std::shared_ptr<Model> make_fashion_cnn(const ModelOptions& spec) {
  require_image("fashion_cnn", spec, 4);
  return std::make_shared<Classifier>(
      FashionCnn(spec.input_shape()[0], spec.input_shape()[1], spec.input_shape()[2], spec.num_classes()).ptr());
}

std::shared_ptr<Model> make_mlp(const ModelOptions& spec) {
  if (spec.input_shape().empty()) throw std::invalid_argument("model 'mlp' needs the input shape");
  for (int64_t width : spec.hidden()) {
    if (width < 1 || width > kMaxWidth) {
      throw OptionError("hidden", "model 'mlp': every hidden width must be from 1 to " + std::to_string(kMaxWidth) +
                                      ", got " + std::to_string(width));
    }
  }
  int64_t features = 1;
  for (int64_t d : spec.input_shape()) features *= d;
  return std::make_shared<Classifier>(Mlp(features, spec.hidden(), spec.num_classes()).ptr());
}

std::shared_ptr<Model> make_resnet20(const ModelOptions& spec) {
  require_image("resnet20", spec, 4);
  return std::make_shared<Classifier>(ResNet20(spec.input_shape()[0], spec.num_classes()).ptr());
}

std::shared_ptr<Model> make_resnet18(const ModelOptions& spec) {
  require_image("resnet18", spec, 16);
  return std::make_shared<Classifier>(
      TorchvisionResNet(spec.input_shape()[0], spec.num_classes(), false, std::vector<int>{2, 2, 2, 2}).ptr());
}

std::shared_ptr<Model> make_resnet50(const ModelOptions& spec) {
  require_image("resnet50", spec, 16);
  return std::make_shared<Classifier>(
      TorchvisionResNet(spec.input_shape()[0], spec.num_classes(), true, std::vector<int>{3, 4, 6, 3}).ptr());
}

}  // namespace baton
