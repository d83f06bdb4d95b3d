// Models by name: fashion_cnn, mlp, resnet20, resnet18, resnet50, gpt, cnn_space (a model space
// frozen to model.arch).
//
//   auto model = baton::make_model("fashion_cnn", baton::ModelOptions().input_shape({1, 28, 28}).num_classes(10));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/models/model.h"
#include "baton/models/surgery.h"
#include "baton/nas/space.h"

namespace baton {

class ModelOptions {
  // The shape of one input: [C, H, W] for images, [F] for features.
  BATON_ARG(std::vector<int64_t>, input_shape);
  BATON_ARG(int64_t, num_classes) = 10;
  // mlp: the hidden layers' widths. Default: {256, 128}.
  BATON_ARG(std::vector<int64_t>, hidden) = {256, 128};
  // gpt: transformer blocks, the width of a token's vector, attention heads (width must divide by
  // heads), dropout after attention and MLP, the MLP's ratio. The context is input_shape[0]; the vocabulary
  // num_classes.
  BATON_ARG(int64_t, layers) = 6;
  BATON_ARG(int64_t, width) = 384;
  BATON_ARG(int64_t, heads) = 6;
  BATON_ARG(double, dropout) = 0.0;
  BATON_ARG(int64_t, mlp_ratio) = 4;  // gpt: the MLP's hidden width over `width`
  // A model space's architecture: its choices' values ({label: value}, as a search samples them).
  BATON_ARG(nlohmann::json, arch);
  // A model space as a one-shot supernet (nas::ModelSpace::one_shot) rather than frozen: `arch`
  // then narrows choices ({label: value or [values]}) and must leave each ValueChoice one value.
  BATON_ARG(bool, one_shot) = false;
};

// fashion_cnn: conv(C->32, 3x3, pad 1) relu maxpool2, conv(32->64, 3x3, pad 1) relu maxpool2,
//              linear(64*(H/4)*(W/4) -> 128) relu, linear(128 -> classes)  (the peer's FashionCNN)
// mlp:         flatten, linear + relu for each hidden width, linear -> classes
// resnet20:    the CIFAR ResNet-20 (He et al. 2016): conv 16, three stages of three basic blocks
//              (16, 32, 64 channels), global average pool, linear -> classes
// resnet18:    torchvision's ResNet-18 for ImageNet-sized images, with torchvision's parameter names
//              (conv1, bn1, layer1.0.conv1, …, layer4.1.downsample.0, fc), so torchvision's weights
//              load as safetensors: conv 7x7/2, maxpool 3x3/2, four stages of two basic blocks (64,
//              128, 256, 512 channels), global average pool, linear -> classes
// resnet50:    torchvision's ResNet-50 (v1.5: the stride on the 3x3): stages of 3, 4, 6, 3 bottleneck
//              blocks (256, 512, 1024, 2048 channels), torchvision's names
// gpt:         a decoder-only transformer (GPT-2's layout, pre-norm): token and position embeddings,
//              `layers` blocks of causal self-attention (LibTorch's scaled_dot_product_attention on
//              2.x, so its fused kernels are used) and a GELU MLP `mlp_ratio` (4) times as wide, a final LayerNorm, and
//              the token embedding again as the output layer (weight tying). Inputs are token indices [N, T] with T <=
//              context; outputs logits [N, T, vocabulary].
// cnn_space:   the CNN space (below) frozen to `arch` (with `one_shot`: its supernet)
// Throws std::invalid_argument for an unknown name (listing the known ones) or an input shape the
// model cannot take.
std::shared_ptr<Model> make_model(const std::string& name, const ModelOptions& spec);

// The names make_model knows.
std::vector<std::string> model_names();

// Model spaces by name (nas/space.h), for inputs and outputs as `spec` says:
// cnn_space:   a CNN for images of at least 4x4: a 3x3 stem of 16 channels, then three stages (a
//              2x2 max pooling before the second and third), each a 1x1 convolution to its width
//              (stageS_width: 16, 32, 64) and stageS_depth (1, 2, 3) blocks of one op (stageS_op:
//              conv3x3, conv5x5, dwsep3x3 (depthwise 3x3 then pointwise 1x1), maxpool (3x3, stride
//              1), identity; convolutions with BatchNorm and ReLU), global average pooling, a
//              linear layer to the classes: 91,125 architectures (45^3).
// gpt_space:   the gpt (above) for windows of tokens choosing layers (2, 4, 6: a Repeat of blocks),
//              width (128, 192, 256), heads (2, 4, 8) and mlp_ratio (2, 3, 4): 81 architectures.
// Throws std::invalid_argument for an unknown name or an input shape the space cannot take.
nas::ModelSpace model_space(const std::string& name, const ModelOptions& spec);
std::vector<std::string> model_space_names();

// A residual block: relu(residual(x) + shortcut(x)), the shortcut the slot made by
// add_shortcut (a 1x1 conv and BatchNorm) or else the identity. Public so that surgery (stochastic
// depth) can recognise and wrap any of them.
class ResidualBlockImpl : public Replaceable {
 public:
  at::Tensor forward(at::Tensor x);
  virtual at::Tensor residual(const at::Tensor& x) = 0;
  at::Tensor shortcut(const at::Tensor& x);

 protected:
  using Replaceable::Replaceable;
  // A 1x1 convolution with `stride` and a BatchNorm, as the slot `name`, when the shape changes.
  void add_shortcut(const std::string& name, int64_t in, int64_t out, int64_t stride);

 private:
  int shortcut_ = -1;
};

// ResNet's basic block: residual = bn2(conv2(relu(bn1(conv1(x))))), both convolutions 3x3. The
// shortcut's slot is "shortcut" in ResNet-20 and "downsample" (torchvision's name) in ResNet-18.
class BasicBlockImpl : public ResidualBlockImpl {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride, const std::string& shortcut_name = "shortcut");
  at::Tensor residual(const at::Tensor& x) override;

 private:
  int conv1_ = -1, bn1_ = -1, conv2_ = -1, bn2_ = -1;
};
TORCH_MODULE(BasicBlock);

// ResNet-50's bottleneck (torchvision's): residual = bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))),
// 1x1 to out / 4 channels, 3x3 with the stride, 1x1 to out; the shortcut's slot "downsample".
class BottleneckImpl : public ResidualBlockImpl {
 public:
  BottleneckImpl(int64_t in, int64_t out, int64_t stride);
  at::Tensor residual(const at::Tensor& x) override;

 private:
  int conv1_ = -1, bn1_ = -1, conv2_ = -1, bn2_ = -1, conv3_ = -1, bn3_ = -1;
};
TORCH_MODULE(Bottleneck);

}  // namespace baton
