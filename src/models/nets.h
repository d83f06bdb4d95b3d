// The zoo's networks, each built from a ModelOptions: what src/models/registry.cpp registers by name.
// Each throws std::invalid_argument (OptionError naming the option) for a spec it cannot take.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "baton/models/zoo.h"

namespace baton {

// Throws std::invalid_argument unless the inputs are images [channels, height, width] of at least
// min_side x min_side, naming the model and the data's shape.
void require_image(const std::string& name, const ModelOptions& spec, int64_t min_side);

// A small CNN for images of at least 4x4 ([C, H, W] inputs).
std::shared_ptr<Model> make_fashion_cnn(const ModelOptions& spec);
// A multi-layer perceptron over the flattened input, `hidden` widths.
std::shared_ptr<Model> make_mlp(const ModelOptions& spec);
// ResNet-20 (He et al.) for images of at least 4x4.
std::shared_ptr<Model> make_resnet20(const ModelOptions& spec);
// torchvision's ResNet-18 and ResNet-50 (its names, so its weights load) for images of at least 16x16.
std::shared_ptr<Model> make_resnet18(const ModelOptions& spec);
std::shared_ptr<Model> make_resnet50(const ModelOptions& spec);
// A GPT (decoder-only transformer) over token windows: inputs are [context] token ids, the
// vocabulary is num_classes; width must be a multiple of heads.
std::shared_ptr<Model> make_gpt(const ModelOptions& spec);
// The CNN space (zoo.h) frozen to spec.arch(); OptionError "arch" without one, or for one that
// does not fit the space.
nas::ModelSpace cnn_space(const ModelOptions& spec);
nas::ModelSpace gpt_space(const ModelOptions& spec);
// A model space's network frozen to spec.arch (OptionError "arch" when it is missing or does not fit).
std::shared_ptr<Model> frozen_space_model(const nas::ModelSpace& space, const ModelOptions& spec);

}  // namespace baton
