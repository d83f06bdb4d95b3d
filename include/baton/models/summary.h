// A model's summary, as Lightning's ModelSummary prints it when training starts: its top-level
// modules with their parameters, the totals, the size of its tensors and its FLOPs per example.
//
//   baton::ModelSummary s = baton::summarize(*model, example_batch.input);
//   std::fputs(s.to_string().c_str(), stdout);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/models/model.h"

namespace baton {

struct ModelSummary {
  std::vector<ModelPart> parts;
  int64_t parameters = 0;
  int64_t trainable = 0;
  double size_mb = 0.0;  // parameters and buffers, in their dtypes (10^6 bytes)
  // A forward's floating-point operations for one example (2 per multiply-add of convolutions and
  // matrix products, from the traced graph); none when the model cannot be traced.
  std::optional<double> flops_per_example;

  // The table and the totals, one line each, ready to print.
  std::string to_string() const;
  nlohmann::json to_json() const;
};

// `example_input`: a batch of inputs the model takes (a couple of examples are enough); undefined:
// no FLOPs. The model's training mode is restored.
ModelSummary summarize(Model& model, const at::Tensor& example_input);

}  // namespace baton
