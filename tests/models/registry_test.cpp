// Models and model spaces by name (src/models/registry.cpp): every name builds and gives its outputs,
// an unknown name lists the known ones, a model without outputs is refused.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/models/zoo.h"
#include "baton/nas/space.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(ModelRegistry, EveryNameBuildsAModelWithItsOutputs) {
  for (const std::string& name : model_names()) {
    SCOPED_TRACE(name);
    torch::manual_seed(0);
    const bool tokens = name.rfind("gpt", 0) == 0;
    // ImageNet's ResNets shrink an image 32 times: 64x64 leaves them 2x2 at the end.
    ModelOptions spec = tokens ? ModelOptions().input_shape({16}).num_classes(32).layers(1).width(16).heads(2)
                               : ModelOptions().input_shape({3, 64, 64}).num_classes(5);
    const auto spaces = model_space_names();
    if (std::find(spaces.begin(), spaces.end(), name) != spaces.end()) {  // a space: its first architecture
      nlohmann::json arch = nlohmann::json::object();
      const nas::ModelSpace space = model_space(name, spec);
      for (const auto& [key, choice] : space.search_space().items()) arch[key] = choice["_value"][0];
      spec.arch(arch);
    }
    const auto model = make_model(name, spec);
    ASSERT_NE(model, nullptr);
    EXPECT_FALSE(model->parameters().empty());
    model->eval();
    torch::NoGradGuard no_grad;
    const at::Tensor x = tokens ? torch::randint(0, 32, {2, 16}) : torch::randn({2, 3, 64, 64});
    const at::Tensor out = model->forward(Batch{x, at::Tensor()});
    EXPECT_EQ(out.size(0), 2);
    EXPECT_EQ(out.size(-1), tokens ? 32 : 5);
  }
}

TEST(ModelRegistry, UnknownNamesListTheKnownOnesAndOutputsMustBeThere) {
  EXPECT_THAT(error_of([] { make_model("resnet21", ModelOptions()); }),
              ::testing::AllOf(HasSubstr("unknown model 'resnet21' (known: "), HasSubstr("resnet20")));
  EXPECT_THAT(error_of([] { make_model("mlp", ModelOptions().num_classes(0)); }),
              HasSubstr("model 'mlp': num_classes (its outputs) must be at least 1, got 0"));
  const auto spaces = model_space_names();
  EXPECT_EQ(spaces, (std::vector<std::string>{"cnn_space", "gpt_space"}));
  for (const std::string& space : spaces) {
    EXPECT_NE(std::find(model_names().begin(), model_names().end(), space), model_names().end()) << space;
  }
  EXPECT_THAT(error_of([] { model_space("mlp_space", ModelOptions()); }), HasSubstr("unknown model space 'mlp_space'"));
}

}  // namespace
}  // namespace baton
