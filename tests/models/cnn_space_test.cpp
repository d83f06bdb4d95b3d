// The zoo's CNN space (src/models/cnn_space.cpp): its stages' choices are a search space whose
// architectures are recipe models.
#include "baton/nas/space.h"

#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/exec/space.h"
#include "baton/models/zoo.h"
#include "common/test_util.h"

namespace baton::nas {
namespace {

using baton::testing::error_of;
using ::testing::HasSubstr;
namespace nn = torch::nn;

// The zoo's CNN space: three stages of an op, a width and a depth each; every sampled architecture
// is a recipe model (model.name cnn_space, model.arch its choices).
TEST(CnnSpace, ItsStagesChoicesAreASpaceWhoseArchitecturesAreRecipeModels) {
  const auto spec = ModelOptions().input_shape({1, 28, 28}).num_classes(10);
  const auto space = model_space("cnn_space", spec);
  EXPECT_EQ(space.labels(),
            (std::vector<std::string>{"stage1_depth", "stage1_op", "stage1_width", "stage2_depth", "stage2_op",
                                      "stage2_width", "stage3_depth", "stage3_op", "stage3_width"}));
  std::size_t architectures = 1;
  for (const auto& [label, d] : space.search_space().items()) architectures *= d["_value"].size();
  EXPECT_EQ(architectures, 91125U);  // (5 ops x 3 widths x 3 depths)^3
  const auto search = SearchSpace::from_json(space.search_space());
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5; ++i) {
    auto arch = search.sample(rng);
    auto model = make_model("cnn_space", ModelOptions(spec).arch(arch));
    auto& net = std::dynamic_pointer_cast<Classifier>(model)->module();
    EXPECT_EQ(net.forward<at::Tensor>(torch::randn({2, 1, 28, 28})).sizes(), (std::vector<int64_t>{2, 10}))
        << arch.dump();
  }
  EXPECT_THAT(error_of([&] { make_model("cnn_space", spec); }),
              HasSubstr("model 'cnn_space' is a model space: model.arch chooses its architecture (stage1_depth, "));
  auto arch = search.sample(rng);
  arch["stage2_op"] = "conv7x7";
  EXPECT_THAT(error_of([&] { make_model("cnn_space", ModelOptions(spec).arch(arch)); }),
              HasSubstr("LayerChoice 'stage2_op': \"conv7x7\" is not one of its candidates (conv3x3, conv5x5, "
                        "dwsep3x3, maxpool, identity)"));
  EXPECT_THAT(error_of([&] { model_space("cnn_spcae", spec); }), HasSubstr("unknown model space 'cnn_spcae'"));
}

}  // namespace
}  // namespace baton::nas
