// A search of a model space (`baton search --model-space NAME`) as a library call.
//
//   baton::ExperimentOptions options;
//   options.recipe("recipes/fashion_mnist.yaml").strategy("regularized_evolution").trials(20);
//   baton::use_model_space("cnn_space", options);  // the trials train cnn_space's architectures
//   baton::Experiment(options).run();
#pragma once

#include <string>

namespace baton {

class ExperimentOptions;

// The trials of `options` train the zoo's model space `name` (model.name=NAME), built for the
// recipe's data; the search space is its choices under model.arch. — narrowed by the choices a
// space file (options.space()) names, as {_type: choice, _value: [...]} with some of the
// candidates. Throws std::invalid_argument for no recipe, a --set naming another model, an unknown
// space, a space file naming a choice or a candidate the space does not have; the recipe's errors
// (RecipeError) as they are.
void use_model_space(const std::string& name, ExperimentOptions& options);

}  // namespace baton
