// The zoo's image models (src/models/zoo.cpp): the peers' architectures, refusals by name.
#include "baton/models/zoo.h"

#include <cmath>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "common/test_util.h"
#include "models/models_fixtures.h"

namespace baton {
namespace {

using namespace models_fixtures;  // NOLINT(google-build-using-namespace)

using testing::error_of;
using ::testing::HasSubstr;

TEST(Zoo, FashionCnnIsThePeersArchitecture) {
  auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  // conv 1->32 (320) + conv 32->64 (18496) + linear 3136->128 (401536) + linear 128->10 (1290)
  EXPECT_EQ(count_parameters(*model), 320 + 18496 + 401536 + 1290);
  Batch batch{torch::randn({4, 1, 28, 28}), torch::tensor({0, 1, 2, 3})};
  EXPECT_EQ(model->forward(batch).sizes(), (std::vector<int64_t>{4, 10}));
}

TEST(Zoo, MlpAndResNet20) {
  auto mlp = make_model("mlp", ModelOptions().input_shape({3, 8}).num_classes(5).hidden({16}));
  EXPECT_EQ(count_parameters(*mlp), 24 * 16 + 16 + 16 * 5 + 5);
  auto resnet = make_model("resnet20", ModelOptions().input_shape({3, 32, 32}).num_classes(10));
  EXPECT_NEAR(static_cast<double>(count_parameters(*resnet)), 0.27e6, 0.01e6);  // ResNet-20: 0.27M
  Batch batch{torch::randn({2, 3, 32, 32}), torch::tensor({0, 1})};
  EXPECT_EQ(resnet->forward(batch).sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(Zoo, RefusesUnknownNamesAndShapesItCannotTake) {
  EXPECT_THAT(
      [] {
        make_model("vgg", ModelOptions().input_shape({1, 28, 28}));
      },
      ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
          "unknown model 'vgg' (known: fashion_cnn, mlp, resnet20, resnet18, resnet50, gpt, cnn_space, gpt_space)")));
  EXPECT_THAT([] { make_model("fashion_cnn", ModelOptions().input_shape({784})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("needs image inputs")));
}

}  // namespace
}  // namespace baton
