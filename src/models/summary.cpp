#include "baton/models/summary.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/models/export.h"

namespace baton {
namespace {

// 1234567 -> "1,234,567".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return (n < 0 ? "-" : "") + digits;
}

// 12300000 -> "12.3 M", 704 -> "704 ".
std::string scaled(double v) {
  const char* units[] = {" ", " K", " M", " G", " T", " P"};
  std::size_t u = 0;
  while (v >= 1000.0 && u + 1 < std::size(units)) {
    v /= 1000.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f%s" : "%.1f%s", v, units[u]);
  return text;
}

}  // namespace

ModelSummary summarize(Model& model, const at::Tensor& example_input) {
  ModelSummary s;
  s.parts = model.parts();
  double bytes = 0.0;
  for (const auto& p : model.parameters(/*recurse=*/true)) {
    s.parameters += p.numel();
    if (p.requires_grad()) s.trainable += p.numel();
    bytes += static_cast<double>(p.numel() * p.element_size());
  }
  for (const auto& b : model.buffers(/*recurse=*/true)) bytes += static_cast<double>(b.numel() * b.element_size());
  s.size_mb = bytes / 1e6;
  if (example_input.defined()) {
    try {
      const double macs = count_multiply_adds(model, example_input);
      if (macs > 0) s.flops_per_example = 2.0 * macs;
    } catch (const std::exception&) {  // a model the tracer cannot follow: FLOPs unknown
    }
  }
  return s;
}

std::string ModelSummary::to_string() const {
  std::size_t name_width = 4;
  std::size_t type_width = 4;
  for (const auto& p : parts) {
    name_width = std::max(name_width, p.name.size());
    type_width = std::max(type_width, p.type.size());
  }
  const int nw = static_cast<int>(name_width);
  const int tw = static_cast<int>(type_width);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s  %-*s  %13s  %s\n", nw, "name", tw, "type", "params", "mode");
  out += line;
  for (const auto& p : parts) {
    const char* mode = p.trainable == p.parameters ? "trainable" : p.trainable == 0 ? "frozen" : "partly frozen";
    std::snprintf(line, sizeof line, "  %-*.*s  %-*.*s  %13s  %s\n", nw, nw, p.name.c_str(), tw, tw, p.type.c_str(),
                  grouped(p.parameters).c_str(), p.parameters == 0 ? "-" : mode);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %s parameters (%s trainable, %s frozen), %.2f MB", grouped(parameters).c_str(),
                grouped(trainable).c_str(), grouped(parameters - trainable).c_str(), size_mb);
  out += line;
  out += flops_per_example ? ", " + scaled(*flops_per_example) + "FLOPs per example (forward)\n"
                           : ", FLOPs unknown (the model cannot be traced)\n";
  return out;
}

nlohmann::json ModelSummary::to_json() const {
  nlohmann::json j = {{"parameters", parameters}, {"trainable", trainable}, {"size_mb", size_mb}};
  j["flops_per_example"] = flops_per_example ? nlohmann::json(*flops_per_example) : nlohmann::json();
  j["parts"] = nlohmann::json::array();
  for (const auto& p : parts) {
    j["parts"].push_back(
        {{"name", p.name}, {"type", p.type}, {"parameters", p.parameters}, {"trainable", p.trainable}});
  }
  return j;
}

}  // namespace baton
