#include "baton/models/export.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/script.h>
#include <torch/torch.h>

namespace baton {
namespace {

// "baton::(anonymous namespace)::FashionCnnImpl" -> "FashionCnn"; only identifier characters.
std::string type_name(const torch::nn::Module& module) {
  std::string name = module.name();
  if (const auto colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.ends_with("Impl")) name.resize(name.size() - 4);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ? "Module" + name : name;
}

// A TorchScript module with the same tree of names over the same tensors: when the tracer meets
// one of these tensors, it records a read of the attribute instead of a constant.
torch::jit::Module mirror(const torch::nn::Module& module, int& counter) {
  torch::jit::Module out(c10::QualifiedName("__torch__.baton." + type_name(module) + "_" + std::to_string(counter++)));
  out.register_attribute("training", c10::BoolType::get(), false);
  for (const auto& p : module.named_parameters(/*recurse=*/false)) out.register_parameter(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) out.register_buffer(b.key(), b.value());
  for (const auto& c : module.named_children()) out.register_module(c.key(), mirror(*c.value(), counter));
  return out;
}

std::string first_line(const c10::Error& e) {
  const std::string what = e.what_without_backtrace();
  return what.substr(0, what.find('\n'));
}

class TrainingModeRestorer {
 public:
  explicit TrainingModeRestorer(Model& model) : model_(model), was_training_(model.is_training()) {}
  ~TrainingModeRestorer() { model_.train(was_training_); }
  TrainingModeRestorer(const TrainingModeRestorer&) = delete;
  TrainingModeRestorer& operator=(const TrainingModeRestorer&) = delete;

 private:
  Model& model_;
  bool was_training_;
};

}  // namespace

std::string export_torchscript(Model& model, const at::Tensor& example_input) {
  TrainingModeRestorer restore(model);
  model.eval();
  torch::NoGradGuard no_grad;
  const at::Tensor input = example_input.to(torch::kFloat);
  // Checked on other data than it was traced on, in another batch size: a trace that baked in
  // the example's branches or its batch size fails here, not in the user's hands.
  const at::Tensor check = torch::cat({input.flip(0), input.narrow(0, 0, 1)});
  const at::Tensor expected = model.eval_forward(Batch{check, at::Tensor()}).to(torch::kFloat);

  int counter = 0;
  torch::jit::Module module = mirror(model, counter);
  try {
    auto traced = torch::jit::tracer::trace(
        {input},
        [&](torch::jit::Stack inputs) {
          return torch::jit::Stack{model.eval_forward(Batch{inputs.at(0).toTensor(), at::Tensor()})};
        },
        [](const at::Tensor&) { return std::string(); }, /*strict=*/true, /*force_outplace=*/false, &module);
    const auto method = c10::QualifiedName(*module.type()->name(), "forward");
    module.type()->addMethod(module._ivalue()->compilation_unit()->create_function(method, traced.first->graph));
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot trace the model for TorchScript: " + first_line(e));
  }

  std::ostringstream bytes;
  module.save(bytes);
  // What a user gets is the file: load it back and compare.
  std::istringstream in(bytes.str());
  torch::jit::Module loaded = torch::jit::load(in);
  at::Tensor got;
  try {
    got = loaded.forward({check}).toTensor();
  } catch (const c10::Error& e) {
    throw std::runtime_error("the traced TorchScript model fails on another batch size: " + first_line(e) +
                             " (its forward depends on the example's shape, which tracing cannot record)");
  }
  if (!got.sizes().equals(expected.sizes()) || !torch::allclose(got, expected, 1e-4, 1e-5)) {
    throw std::runtime_error(
        "the traced TorchScript model does not reproduce the model's outputs (largest difference " +
        std::to_string(got.sizes().equals(expected.sizes()) ? (got - expected).abs().max().item<double>() : -1.0) +
        "): its forward has control flow that depends on the data, which tracing cannot record");
  }
  return bytes.str();
}

}  // namespace baton
