// The zoo's transformer (make_model("gpt", spec) builds it through this).
#pragma once

#include <memory>

#include "baton/models/zoo.h"

namespace baton {

// Throws std::invalid_argument for a spec it cannot take (inputs not token windows, width not a
// multiple of heads, ...).
std::shared_ptr<Model> make_gpt(const ModelOptions& spec);

}  // namespace baton
