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

// The line of an interpreter's error that says what failed ("RuntimeError: ..."), else its first.
std::string cause_of(const std::string& what) {
  const std::size_t error = what.rfind("Error: ");
  const std::size_t start = error == std::string::npos ? 0 : what.rfind('\n', error) + 1;
  return what.substr(start, what.find('\n', start) - start);
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

// The graph of model.eval_forward on `input`, reading the tensors of `module` (a mirror) as attributes.
std::shared_ptr<torch::jit::Graph> trace(Model& model, const at::Tensor& input, torch::jit::Module& module) {
  try {
    auto traced = torch::jit::tracer::trace(
        {input},
        [&](torch::jit::Stack inputs) {
          return torch::jit::Stack{model.eval_forward(Batch{inputs.at(0).toTensor(), at::Tensor()})};
        },
        [](const at::Tensor&) { return std::string(); }, /*strict=*/true, /*force_outplace=*/false, &module);
    return traced.first->graph;
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot trace the model for TorchScript: " + first_line(e));
  }
}

std::vector<int64_t> sizes_of(const torch::jit::Value* v) {
  const auto type = v->type()->cast<c10::TensorType>();
  if (!type) return {};
  const auto sizes = type->sizes().concrete_sizes();
  return sizes ? *sizes : std::vector<int64_t>{};
}

// The shape of a weight the graph reads as an attribute (prim::GetAttr chains from `self`).
std::vector<int64_t> attribute_sizes(const torch::jit::Value* v, const torch::jit::Module& root) {
  std::vector<std::string> path;
  const torch::jit::Node* n = v->node();
  while (n->kind() == c10::prim::GetAttr) {
    path.push_back(n->s(c10::attr::name));
    v = n->input(0);
    n = v->node();
  }
  if (path.empty() || v != v->owningGraph()->inputs().at(0)) return sizes_of(v);
  std::reverse(path.begin(), path.end());
  torch::jit::Module m = root;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) m = m.attr(path[i]).toModule();
  const c10::IValue value = m.attr(path.back());
  return value.isTensor() ? value.toTensor().sizes().vec() : std::vector<int64_t>{};
}

int64_t product(const std::vector<int64_t>& v, std::size_t from = 0) {
  int64_t p = 1;
  for (std::size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

}  // namespace

double count_multiply_adds(Model& model, const at::Tensor& example_input) {
  TrainingModeRestorer restore(model);
  model.eval();
  torch::NoGradGuard no_grad;
  int counter = 0;
  torch::jit::Module module = mirror(model, counter);
  // Token indices ([N, T] integers) stay as they are; other inputs are traced as float.
  const bool tokens = example_input.dim() == 2 && !at::isFloatingType(example_input.scalar_type());
  const auto graph = trace(model, tokens ? example_input : example_input.to(torch::kFloat), module);
  double macs = 0;
  for (const torch::jit::Node* node : graph->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (kind == "aten::_convolution" || kind == "aten::conv2d" || kind == "aten::conv1d") {
      const auto out = sizes_of(node->output());
      const auto weight = attribute_sizes(node->inputs().at(1), module);
      if (!out.empty() && weight.size() >= 3)
        macs += static_cast<double>(product(out)) * static_cast<double>(product(weight, 1));
    } else if (kind == "aten::addmm" || kind == "aten::mm" || kind == "aten::matmul" || kind == "aten::linear") {
      const auto a = sizes_of(node->inputs().at(kind == "aten::addmm" ? 1 : 0));
      const auto out = sizes_of(node->output());
      if (!a.empty() && !out.empty()) macs += static_cast<double>(product(out)) * static_cast<double>(a.back());
    }
  }
  return macs / static_cast<double>(std::max<int64_t>(1, example_input.size(0)));
}

std::string export_torchscript(Model& model, const at::Tensor& example_input) {
  TrainingModeRestorer restore(model);
  model.eval();
  torch::NoGradGuard no_grad;
  // Token ids (a language model's inputs) stay integers; values are traced as float.
  const at::Tensor input = example_input.is_floating_point() ? example_input.to(torch::kFloat) : example_input;
  // Checked on other data than it was traced on, in another batch size: a trace that baked in
  // the example's branches or its batch size fails here, not in the user's hands.
  const at::Tensor check = torch::cat({input.flip(0), input.narrow(0, 0, 1)});
  const at::Tensor expected = model.eval_forward(Batch{check, at::Tensor()}).to(torch::kFloat);

  int counter = 0;
  torch::jit::Module module = mirror(model, counter);
  const auto graph = trace(model, input, module);
  const auto method = c10::QualifiedName(*module.type()->name(), "forward");
  module.type()->addMethod(module._ivalue()->compilation_unit()->create_function(method, graph));

  std::ostringstream bytes;
  module.save(bytes);
  // What a user gets is the file: load it back and compare.
  std::istringstream in(bytes.str());
  torch::jit::Module loaded = torch::jit::load(in);
  at::Tensor got;
  try {
    got = loaded.forward({check}).toTensor();
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
    throw std::runtime_error("the traced TorchScript model fails on another batch size: " + cause_of(e.what()) +
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
