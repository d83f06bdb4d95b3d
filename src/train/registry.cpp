// The data set kinds by name: each registered once here (write its loader in
// src/train/data_sets.cpp, register it, test it, add its keys to docs/recipes.md).
#include "baton/core/registry.h"

#include <stdexcept>

#include "train/data_sets.h"

namespace baton {
namespace {

using DataSets = Registry<DataSplit, OptionReader&, const DataSetContext&>;

const DataSets& data_set_registry() {
  static const DataSets data_sets("dataset", DataSets::Order::kRegistration,
                                  {{"fashion_mnist", load_fashion_mnist_data},
                                   {"files", load_files},
                                   {"text", load_text_data},
                                   {"images", load_images_data}});
  return data_sets;
}

}  // namespace

std::vector<std::string> data_set_names() { return data_set_registry().names(); }

DataSplit load_data_sets(OptionReader& data, const DataSetContext& context) {
  const std::string kind = data.get<std::string>("dataset", "fashion_mnist");
  if (!data_set_registry().contains(kind)) data.fail("dataset", unknown_name("dataset", kind, data_set_names()));
  return data_set_registry().make(kind, data, context);
}

}  // namespace baton
