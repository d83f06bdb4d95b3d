#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "baton/io/file.h"
#include "baton/io/text.h"
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

// A TorchScript file's code: what LibTorch's parser reads recursively (a segfault when too deep).
constexpr std::uint64_t kMaxCodeBytes = 64ull << 20;  // all of code/ together
constexpr int kMaxNesting = 200;                      // brackets inside brackets in its code

std::uint64_t little_endian(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return v;
}

// The names and uncompressed sizes of a zip archive's entries, from its central directory (zip64
// too), without reading them. Throws std::runtime_error naming the file when it is not a zip.
std::vector<std::pair<std::string, std::uint64_t>> zip_entries(const std::string& path) {
  ReadableFile file(path, {.what = "the TorchScript module", .max_bytes = 64ull << 30});
  const auto read_at = [&](std::uint64_t offset, std::uint64_t n) {
    std::string out(n, '\0');
    if (offset + n > file.size() ||
        ::pread(file.fd(), out.data(), n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n)) {
      throw std::runtime_error(path + ": not a TorchScript file (no zip directory)");
    }
    return out;
  };
  const std::uint64_t tail_size = std::min<std::uint64_t>(file.size(), (1 << 16) + 22);
  const std::string tail = read_at(file.size() - tail_size, tail_size);
  const std::size_t end = tail.rfind(std::string("PK\x05\x06", 4));
  if (end == std::string::npos || end + 22 > tail.size()) {
    throw std::runtime_error(path + ": not a TorchScript file (no zip directory)");
  }
  std::uint64_t count = little_endian(tail, end + 10, 2), size = little_endian(tail, end + 12, 4),
                offset = little_endian(tail, end + 16, 4);
  if (offset == 0xffffffff && end >= 20 && tail.compare(end - 20, 4, std::string("PK\x06\x07", 4)) == 0) {
    const std::string z = read_at(little_endian(tail, end - 20 + 8, 8), 56);  // the zip64 directory's end
    count = little_endian(z, 32, 8), size = little_endian(z, 40, 8), offset = little_endian(z, 48, 8);
  }
  if (size > (256ull << 20) || count > 10'000'000) throw std::runtime_error(path + ": a zip directory too large");
  const std::string dir = read_at(offset, size);
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (std::size_t at = 0; at + 46 <= dir.size() && dir.compare(at, 4, std::string("PK\x01\x02", 4)) == 0;) {
    const std::size_t name = little_endian(dir, at + 28, 2), extra = little_endian(dir, at + 30, 2),
                      comment = little_endian(dir, at + 32, 2);
    if (at + 46 + name + extra > dir.size()) break;
    std::uint64_t bytes = little_endian(dir, at + 24, 4);
    for (std::size_t e = at + 46 + name; bytes == 0xffffffff && e + 4 <= at + 46 + name + extra;) {
      const std::size_t id = little_endian(dir, e, 2), length = little_endian(dir, e + 2, 2);
      if (id == 1 && e + 12 <= dir.size()) bytes = little_endian(dir, e + 4, 8);  // zip64: the size first
      e += 4 + length;
    }
    out.emplace_back(dir.substr(at + 46, name), bytes);
    at += 46 + name + extra + comment;
  }
  return out;
}

// The deepest brackets inside brackets in `code`.
int nesting(std::string_view code) {
  int depth = 0, deepest = 0;
  for (const char c : code) {
    if (c == '(' || c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}

// What LibTorch's loader would take for a segfault is refused first: code too large or too deeply
// nested for its recursive parser.
void check_archive(const std::string& path) {
  std::uint64_t code_bytes = 0;
  std::vector<std::string> code;
  for (const auto& [name, bytes] : zip_entries(path)) {
    if (name.find("/code/") == std::string::npos) continue;
    code_bytes += bytes;
    code.push_back(name.substr(name.find('/') + 1));
  }
  if (code_bytes > kMaxCodeBytes) {
    throw std::runtime_error(path + ": the TorchScript module's code is " + human_bytes(code_bytes) +
                             ", more than the " + human_bytes(kMaxCodeBytes) + " baton reads");
  }
  caffe2::serialize::PyTorchStreamReader reader(path);
  for (const std::string& name : code) {
    if (!reader.hasRecord(name)) continue;
    auto [data, size] = reader.getRecord(name);
    const std::string_view text(static_cast<const char*>(data.get()), size);
    if (const int depth = nesting(text); depth > kMaxNesting) {
      std::string why = path;
      why.append(": ").append(name).append(" nests brackets ").append(std::to_string(depth));
      throw std::runtime_error(
          why.append(" deep, more than the ").append(std::to_string(kMaxNesting)).append(" baton reads"));
    }
  }
}

// LibTorch's message about a module it cannot load, as one line: an operator this build lacks is
// named with the LibTorch that has it.
std::string load_error(const std::string& path, const std::string& what) {
  const std::string first = one_line(what.substr(0, what.find('\n')), 300);
  const std::pair<const char*, const char*> newer[] = {
      {"aten::rms_norm", "2.4"}, {"aten::scaled_dot_product_attention", "2.0"}, {"aten::_scaled_dot_product", "2.0"}};
  const std::size_t op = what.find("aten::");
  if (what.find("Unknown builtin op") != std::string::npos && op != std::string::npos) {
    const std::string name = what.substr(op, what.find_first_of(".\n '", op) - op);
    std::string since = "a newer LibTorch";
    for (const auto& [known, version] : newer) {
      if (name.rfind(known, 0) == 0) since = std::string("LibTorch ") + version;
    }
    return path + ": the module uses operator " + name + ", which this LibTorch (" + TORCH_VERSION + ") lacks and " +
           since +
           " has: build baton against it (make build does against python3's PyTorch 2.x: pip install torch; "
           "docs/building.md), or script the model without it";
  }
  return path + ": cannot load a TorchScript module: " + first;
}

}  // namespace

std::shared_ptr<Model> load_torchscript_classifier(const std::string& path) {
  { ReadableFile regular(path, {.what = "the TorchScript module", .max_bytes = 64ull << 30}); }  // not a FIFO
  try {
    check_archive(path);
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
    throw std::runtime_error(load_error(path, e.what_without_backtrace()));
  } catch (const std::runtime_error&) {
    throw;                             // baton's own, one line
  } catch (const std::exception& e) {  // the script's compiler (torch::jit::ErrorReport): many lines
    throw std::runtime_error(load_error(path, e.what()));
  }
}

}  // namespace baton
