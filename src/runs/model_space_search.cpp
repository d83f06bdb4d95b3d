// --model-space NAME in a search as a library call (include/baton/runs/model_space_search.h).
#include "baton/runs/model_space_search.h"

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "baton/exec/experiment.h"
#include "baton/exec/search.h"
#include "baton/models/zoo.h"
#include "baton/train/recipe.h"

namespace baton {
namespace {

[[noreturn]] void not_a_candidate(const std::string& file, const std::string& key, const nlohmann::json& value,
                                  const nlohmann::json& candidates) {
  std::string names;
  for (const auto& c : candidates) {
    names += names.empty() ? "" : ", ";
    names += (c.is_object() ? c.value("_name", nlohmann::json()) : c).dump();
  }
  throw std::invalid_argument(file + ": " + key + ": " + value.dump() +
                              " is not one of the model space's candidates (" + names +
                              "); a space file narrows a choice");
}

[[noreturn]] void no_choice(const std::string& file, const std::string& key, const std::string& space) {
  throw std::invalid_argument(file + ": " + key + ": the model space " + space + " has no choice " + key.substr(11) +
                              " (its choices: model_space.json, or docs/nas.md)");
}

// A space file's `key` (a choice of the model space's `choice`) narrowing it to some of its
// candidates: those candidates, or std::invalid_argument naming a value that is not one.
nlohmann::json narrowed(const std::string& file, const std::string& key, const nlohmann::json& given,
                        const nlohmann::json& choice) {
  nlohmann::json out = choice;
  out["_value"] = nlohmann::json::array();
  const auto name = [](const nlohmann::json& v) { return v.is_object() ? v.value("_name", nlohmann::json()) : v; };
  for (const auto& v : given.value("_value", nlohmann::json::array())) {
    bool found = false;
    for (const auto& c : choice["_value"]) {
      if (name(c) == name(v) || (v.is_number() && c.is_number() && v.get<double>() == c.get<double>())) {
        out["_value"].push_back(c);
        found = true;
      }
    }
    if (!found) not_a_candidate(file, key, name(v), choice["_value"]);
  }
  if (given.value("_type", std::string()) != "choice" || out["_value"].empty())
    throw std::invalid_argument(file + ": " + key +
                                ": a model space's choice is narrowed with {_type: choice, _value: [...]}");
  return out;
}

}  // namespace

void use_model_space(const std::string& name, ExperimentOptions& o) {
  if (o.recipe().empty())
    throw std::invalid_argument("--model-space " + name + " searches a recipe's model: add --recipe RECIPE");
  const std::string model = "model.name=" + name;
  for (const auto& set : o.sets()) {
    if (set.rfind("model.name=", 0) != 0 || set == model) continue;
    std::string why = "--set " + set;
    why += " and --model-space " + name + " name two models; drop the --set";
    throw std::invalid_argument(why);
  }
  o.sets().insert(o.sets().begin(), model);
  nlohmann::json space;
  try {
    space = model_space(name, recipe_model_spec(Recipe::load(o.recipe(), o.sets()))).search_space();
  } catch (const std::invalid_argument& e) {  // an unknown space, data the space cannot take
    throw std::invalid_argument("--model-space " + name + ": " + e.what());
  }
  nlohmann::json definition = nlohmann::json::object();
  if (!o.space().empty()) {
    try {
      definition = SearchSpace::read_file(o.space());
      (void)SearchSpace::from_json(definition, o.space());
    } catch (const std::exception& e) {  // a space file that cannot be read, or is not a space
      throw std::invalid_argument(e.what());
    }
  }
  for (const auto& [key, value] : definition.items()) {
    if (key.rfind("model.arch.", 0) == 0 && !space.contains(key.substr(11))) no_choice(o.space(), key, name);
  }
  for (const auto& [label, choice] : space.items()) {
    const std::string key = "model.arch." + label;
    definition[key] = definition.contains(key) ? narrowed(o.space(), key, definition[key], choice) : choice;
  }
  o.space((o.space().empty() ? "" : o.space() + " + ") + "model space " + name);
  o.space_definition(definition);
}

}  // namespace baton
