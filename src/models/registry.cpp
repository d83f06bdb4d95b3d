// The zoo by name: each model registered once here (write it in src/models, register it, test it).
#include "baton/core/registry.h"

#include <stdexcept>
#include <string>

#include "baton/models/zoo.h"
#include "models/nets.h"

namespace baton {
namespace {

using Models = Registry<std::shared_ptr<Model>, const ModelOptions&>;

const Models& model_registry() {
  static const Models models(
      "model", Models::Order::kRegistration,
      {{"fashion_cnn", make_fashion_cnn},
       {"mlp", make_mlp},
       {"resnet20", make_resnet20},
       {"resnet18", make_resnet18},
       {"resnet50", make_resnet50},
       {"gpt", make_gpt},
       {"cnn_space", [](const ModelOptions& o) { return frozen_space_model(cnn_space(o), o); }},
       {"gpt_space", [](const ModelOptions& o) { return frozen_space_model(gpt_space(o), o); }}});
  return models;
}

using Spaces = Registry<nas::ModelSpace, const ModelOptions&>;

const Spaces& space_registry() {
  static const Spaces spaces("model space", Spaces::Order::kRegistration,
                             {{"cnn_space", cnn_space}, {"gpt_space", gpt_space}});
  return spaces;
}

}  // namespace

std::vector<std::string> model_names() { return model_registry().names(); }

std::vector<std::string> model_space_names() { return space_registry().names(); }

nas::ModelSpace model_space(const std::string& name, const ModelOptions& spec) {
  if (!space_registry().contains(name))
    throw std::invalid_argument(unknown_name("model space", name, model_space_names()));
  return space_registry().make(name, spec);
}

std::shared_ptr<Model> make_model(const std::string& name, const ModelOptions& spec) {
  if (!model_registry().contains(name)) throw std::invalid_argument(unknown_name("model", name, model_names()));
  if (spec.num_classes() < 1) {  // the outputs: classes, or values (1 for one regression target)
    throw std::invalid_argument("model '" + name + "': num_classes (its outputs) must be at least 1, got " +
                                std::to_string(spec.num_classes()));
  }
  return model_registry().make(name, spec);
}

}  // namespace baton
