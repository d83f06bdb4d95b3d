// Precompiled header for baton's own .cpp files, tests and benchmarks (never installed).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>
