// Models by name: fashion_cnn, mlp, resnet20, gpt.
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

namespace baton {

class ModelOptions {
  // The shape of one input: [C, H, W] for images, [F] for features.
  BATON_ARG(std::vector<int64_t>, input_shape);
  BATON_ARG(int64_t, num_classes) = 10;
  // mlp: the hidden layers' widths. Default: {256, 128}.
  BATON_ARG(std::vector<int64_t>, hidden) = {256, 128};
  // gpt: transformer blocks, the width of a token's vector, attention heads (width must divide by
  // heads), dropout after attention and MLP. The context is input_shape[0]; the vocabulary num_classes.
  BATON_ARG(int64_t, layers) = 6;
  BATON_ARG(int64_t, width) = 384;
  BATON_ARG(int64_t, heads) = 6;
  BATON_ARG(double, dropout) = 0.0;
};

// fashion_cnn: conv(C->32, 3x3, pad 1) relu maxpool2, conv(32->64, 3x3, pad 1) relu maxpool2,
//              linear(64*(H/4)*(W/4) -> 128) relu, linear(128 -> classes)  (the peer's FashionCNN)
// mlp:         flatten, linear + relu for each hidden width, linear -> classes
// resnet20:    the CIFAR ResNet-20 (He et al. 2016): conv 16, three stages of three basic blocks
//              (16, 32, 64 channels), global average pool, linear -> classes
// gpt:         a decoder-only transformer (GPT-2's layout, pre-norm): token and position embeddings,
//              `layers` blocks of causal self-attention (LibTorch's scaled_dot_product_attention on
//              2.x, so its fused kernels are used) and a 4x GELU MLP, a final LayerNorm, and the
//              token embedding again as the output layer (weight tying). Inputs are token indices
//              [N, T] with T <= context; outputs logits [N, T, vocabulary].
// Throws std::invalid_argument for an unknown name (listing the known ones) or an input shape the
// model cannot take.
std::shared_ptr<Model> make_model(const std::string& name, const ModelOptions& spec);

// The names make_model knows.
std::vector<std::string> model_names();

// ResNet-20's block: relu(residual(x) + shortcut(x)), residual = bn2(conv2(relu(bn1(conv1(x))))),
// shortcut = a 1x1 conv and BatchNorm when the shape changes, else identity. Public so that
// surgery (stochastic depth) can recognise and wrap it.
class BasicBlockImpl : public Replaceable {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride);
  at::Tensor forward(at::Tensor x);
  at::Tensor residual(const at::Tensor& x);
  at::Tensor shortcut(const at::Tensor& x);

 private:
  int conv1_ = -1, bn1_ = -1, conv2_ = -1, bn2_ = -1, shortcut_ = -1;
};
TORCH_MODULE(BasicBlock);

}  // namespace baton
