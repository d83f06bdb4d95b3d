#include <set>
#include <stdexcept>

#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "baton/io/file.h"
#include "baton/models/model.h"

namespace baton {
namespace {

class TorchScriptClassifier : public Model {
 public:
  explicit TorchScriptClassifier(torch::jit::Module module) : module_(std::move(module)) {
    std::set<std::string> taken;
    auto unique = [&](std::string name) {
      std::replace(name.begin(), name.end(), '.', '_');  // nn::Module names may not hold dots
      while (!taken.insert(name).second) name += "_";
      return name;
    };
    // The same tensors, so that an optimizer step here is a step of the scripted module.
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      register_parameter(unique(p.name), p.value, p.value.requires_grad());
    }
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) register_buffer(unique(b.name), b.value);
  }

  at::Tensor forward(const Batch& batch) override { return module_.forward({batch.input}).toTensor(); }
  at::Tensor loss(const at::Tensor& outputs, const Batch& batch) override {
    return loss_function()(outputs, batch.target);
  }
  at::Tensor loss_per_example(const at::Tensor& outputs, const Batch& batch) override {
    return loss_function().per_example(outputs, batch.target);
  }
  // The scripted module's children, named as in Python, with their Python class names.
  std::vector<ModelPart> parts() const override {
    std::vector<ModelPart> out;
    for (const auto& child : module_.named_children()) {
      ModelPart part{child.name, "", 0, 0};
      const auto type = child.value.type()->name();
      part.type = type ? type->name() : "Module";
      for (const auto& p : child.value.parameters(/*recurse=*/true)) {
        part.parameters += p.numel();
        if (p.requires_grad()) part.trainable += p.numel();
      }
      out.push_back(std::move(part));
    }
    ModelPart own{"(own tensors)", "Parameter", 0, 0};
    for (const auto& p : module_.parameters(/*recurse=*/false)) {
      own.parameters += p.numel();
      if (p.requires_grad()) own.trainable += p.numel();
    }
    if (own.parameters > 0) out.push_back(own);
    if (out.empty()) return Model::parts();
    return out;
  }
  void train(bool on) override {
    Model::train(on);
    module_.train(on);
  }

 private:
  torch::jit::Module module_;
};

// The ops whose behaviour depends on training mode, with the position of their `train` argument.
// A traced module holds them with that argument fixed; fixed to false (traced in eval mode), its
// dropout and batch norm would stay in eval mode while baton trains it.
std::string traced_in_eval(const torch::jit::Module& module) {
  const std::pair<const char*, std::size_t> ops[] = {{"aten::dropout", 2},
                                                     {"aten::feature_dropout", 2},
                                                     {"aten::alpha_dropout", 2},
                                                     {"aten::batch_norm", 5},
                                                     {"aten::instance_norm", 5}};
  const auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);  // the submodules' forwards too
  for (const torch::jit::Node* node : graph->nodes()) {
    for (const auto& [op, train] : ops) {
      if (node->kind().toQualString() != std::string(op) || node->inputs().size() <= train) continue;
      const auto constant = torch::jit::toIValue(node->inputs()[train]);
      if (constant && constant->isBool() && !constant->toBool()) return op;
    }
  }
  return "";
}

}  // namespace

std::shared_ptr<Model> load_torchscript_classifier(const std::string& path) {
  { ReadableFile regular(path, {.what = "the TorchScript module", .max_bytes = 64ull << 30}); }  // not a FIFO
  try {
    torch::jit::Module module = torch::jit::load(path);
    if (!module.find_method("forward")) {
      throw std::runtime_error(path +
                               ": the TorchScript module has no forward method (script or trace a module "
                               "whose forward takes the inputs)");
    }
    if (const std::string op = traced_in_eval(module); !op.empty()) {
      throw std::runtime_error(
          path + ": the module was traced in eval mode (its " + op.substr(6) +
          " is fixed to eval): call model.train() before torch.jit.trace, or use torch.jit.script");
    }
    for (const auto& p : module.parameters()) p.set_requires_grad(true);
    return std::make_shared<TorchScriptClassifier>(std::move(module));
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw std::runtime_error(path + ": cannot load a TorchScript module: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace baton
