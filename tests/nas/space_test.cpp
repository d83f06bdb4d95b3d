// Model spaces: the search space a network's choices make, the networks frozen from it, and the
// errors of a space written wrongly or of parameters that do not fit it.
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

using ::testing::HasSubstr;
namespace nn = torch::nn;

int64_t parameters_in(const nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

nn::AnyModule conv(int64_t in, int64_t out, int64_t k) {
  return nn::AnyModule(nn::Conv2d(nn::Conv2dOptions(in, out, k).padding(k / 2)));
}

// A small CNN for [1, 8, 8] images: a stem of `width` channels, a stage of `depth` blocks (each an
// op: a convolution of kernel `kernel` (nested), max pooling or nothing), the sum of the chosen
// outputs of the stem and the stage, a linear layer to 10 classes.
ModelSpace tiny_space() {
  return ModelSpace("tiny", {1, 8, 8}, [](Space& s) {
    const auto width = s.value<int64_t>(ValueChoice("width", {4, 8}));
    auto stem = conv(1, width, 3);
    auto stage = s.repeat(Repeat("depth", {1, 2}, [&s, width](int64_t) {
      return s.layer(LayerChoice(
          "op", {{"conv",
                  [&s, width] {
                    return conv(width, width, s.value<int64_t>(ValueChoice("kernel", {1, 3})));
                  }},
                 {"pool", [] { return nn::AnyModule(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(1).padding(1))); }},
                 {"identity", [] { return nn::AnyModule(nn::Identity()); }}}));
    }));
    auto merge = s.input(InputChoice("merge", 2, 1));
    auto head = nn::Linear(width * 8 * 8, 10);
    struct Net : nn::Module {
      Net(nn::AnyModule a, nn::AnyModule b, InputSelect c, nn::Linear d) : stem(a), stage(b), merge(c), head(d) {
        register_module("stem", stem.ptr());
        register_module("stage", stage.ptr());
        register_module("merge", merge);
        register_module("head", head);
      }
      at::Tensor forward(const at::Tensor& x) {
        auto a = stem.forward<at::Tensor>(x);
        auto b = stage.forward<at::Tensor>(a);
        return head(merge(std::vector<at::Tensor>{a, b}).flatten(1));
      }
      nn::AnyModule stem, stage;
      InputSelect merge;
      nn::Linear head;
    };
    return nn::AnyModule(std::make_shared<Net>(stem, stage, merge, head));
  });
}

TEST(ModelSpace, ItsChoicesAreASearchSpaceInNnisFormat) {
  const auto space = tiny_space();
  const nlohmann::json expected = {
      {"width", {{"_type", "choice"}, {"_value", {4, 8}}}},
      {"depth", {{"_type", "choice"}, {"_value", {1, 2}}}},
      {"op",
       {{"_type", "choice"},
        {"_value", {{{"_name", "conv"}, {"kernel", {{"_type", "choice"}, {"_value", {1, 3}}}}}, "pool", "identity"}}}},
      {"merge", {{"_type", "choice"}, {"_value", {"0", "1"}}}}};
  EXPECT_EQ(space.search_space(), expected) << space.search_space().dump();
  EXPECT_EQ(space.labels(), (std::vector<std::string>{"depth", "merge", "op", "kernel", "width"}));
  // The supernet holds every candidate: both convolutions of both blocks.
  EXPECT_EQ(parameters_in(*space.supernet().ptr()), (1 * 9 * 4 + 4) + 2 * (4 * 4 * 1 + 4) + 4 * 64 * 10 + 10);
}

// Every architecture a strategy samples freezes into a network of plain modules that runs, holding
// only the modules it chose.
TEST(ModelSpace, EverySampledArchitectureFreezesIntoAPlainNetworkThatRuns) {
  const auto space = tiny_space();
  const auto search = SearchSpace::from_json(space.search_space());
  std::mt19937_64 rng(7);
  std::set<int64_t> sizes;
  for (int i = 0; i < 40; ++i) {
    const nlohmann::json p = search.sample(rng);
    auto net = space.freeze(p);
    for (const auto& m : net.ptr()->modules()) {
      EXPECT_NE(m->name(), "LayerChoice") << p.dump();
      EXPECT_NE(m->name(), "Repeat") << p.dump();
    }
    const auto out = net.forward<at::Tensor>(torch::randn({3, 1, 8, 8}));
    EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 10})) << p.dump();
    const int64_t width = p["width"].get<int64_t>();
    const bool convs = p["op"].is_object();
    const int64_t kernel = convs ? p["op"]["kernel"].get<int64_t>() : 0;
    const int64_t per_block = convs ? width * width * kernel * kernel + width : 0;
    EXPECT_EQ(parameters_in(*net.ptr()),
              (9 * width + width) + p["depth"].get<int64_t>() * per_block + width * 64 * 10 + 10)
        << p.dump();
    sizes.insert(parameters_in(*net.ptr()));
  }
  EXPECT_GE(sizes.size(), 5U);  // the samples differ
}

TEST(ModelSpace, ALabelMetAgainIsTheSameDecision) {
  const ModelSpace space("shared", {2}, [](Space& s) {
    const auto a = s.value<int64_t>(ValueChoice("width", {3, 5}));
    const auto b = s.value<int64_t>(ValueChoice("width", {3, 5}));
    struct Net : nn::Module {
      Net(int64_t a, int64_t b)
          : first(register_module("first", nn::Linear(2, a))), second(register_module("second", nn::Linear(b, 1))) {}
      at::Tensor forward(const at::Tensor& x) { return second(first(x)); }
      nn::Linear first, second;
    };
    return nn::AnyModule(std::make_shared<Net>(a, b));
  });
  EXPECT_EQ(space.search_space().size(), 1U);
  auto net = space.freeze({{"width", 5}});
  EXPECT_EQ(parameters_in(*net.ptr()), (2 * 5 + 5) + (5 + 1));
}

TEST(ModelSpace, ParametersAsRecipeKeysSpellThemFreezeToo) {  // `name` for `_name`, 8.0 for 8
  const auto space = tiny_space();
  auto net = space.freeze({{"width", 8.0}, {"depth", 1}, {"op", {{"name", "conv"}, {"kernel", 3}}}, {"merge", "1"}});
  EXPECT_EQ(parameters_in(*net.ptr()), (9 * 8 + 8) + (8 * 8 * 9 + 8) + 8 * 64 * 10 + 10);
}

using testing::error_of;

TEST(ModelSpace, ParametersThatDoNotFitAreRefusedNamingTheChoice) {
  const auto space = tiny_space();
  const nlohmann::json good = {{"width", 4}, {"depth", 2}, {"op", {{"_name", "conv"}, {"kernel", 1}}}, {"merge", "0"}};
  EXPECT_NO_THROW(space.freeze(good));
  auto without = good;
  without.erase("width");
  EXPECT_THAT(error_of([&] { space.freeze(without); }),
              HasSubstr("the parameters have no value for ValueChoice 'width' (one of 4, 8)"));
  auto nested_missing = good;
  nested_missing["op"] = "conv";
  EXPECT_THAT(error_of([&] { space.freeze(nested_missing); }),
              HasSubstr("no value for ValueChoice 'kernel' (inside op=conv)"));
  auto unknown = good;
  unknown["widht"] = 4;
  EXPECT_THAT(error_of([&] { space.freeze(unknown); }),
              HasSubstr("name 'widht', which the space has no choice of (its choices: depth, merge, op, width)"));
  auto not_one = good;
  not_one["op"] = "conv9";
  EXPECT_THAT(error_of([&] { space.freeze(not_one); }),
              HasSubstr("LayerChoice 'op': \"conv9\" is not one of its candidates (conv, pool, identity)"));
  auto bad_value = good;
  bad_value["width"] = 6;
  EXPECT_THAT(error_of([&] { space.freeze(bad_value); }), HasSubstr("ValueChoice 'width': 6 is not one of"));
  EXPECT_THAT(error_of([&] { space.freeze(nlohmann::json::array()); }), HasSubstr("not an object"));
}

TEST(ModelSpace, ASpaceWrittenWronglyIsRefusedWhenBuilt) {
  EXPECT_THAT(error_of([] { [[maybe_unused]] const ValueChoice c("width", nlohmann::json::array()); }),
              HasSubstr("ValueChoice 'width': no candidates"));
  EXPECT_THAT(error_of([] {
                [[maybe_unused]] const ValueChoice c("width", {4, 4.0});
              }),
              HasSubstr("candidate 4.0 is given twice"));
  EXPECT_THAT(error_of([] { [[maybe_unused]] const LayerChoice c("op", {}); }),
              HasSubstr("LayerChoice 'op': no candidates"));
  EXPECT_THAT(error_of([] {
                [[maybe_unused]] const Repeat c("depth", {2, 1}, [](int64_t) { return nn::AnyModule(nn::Identity()); });
              }),
              HasSubstr("depths must increase"));
  EXPECT_THAT(error_of([] { [[maybe_unused]] const InputChoice c("merge", 2, 3); }),
              HasSubstr("chooses 3 of 2 inputs"));
  EXPECT_THAT(error_of([] { [[maybe_unused]] const ValueChoice c("a.b", {1}); }), HasSubstr("no spaces, dots or '='"));
  // Candidates whose outputs disagree: found by the supernet's forward, naming them and the shapes.
  EXPECT_THAT(error_of([] {
                ModelSpace("bad", {1, 8, 8}, [](Space& s) {
                  return s.layer(LayerChoice(
                      "op", {{"conv", [] { return conv(1, 4, 3); }},
                             {"pool", [] { return nn::AnyModule(nn::MaxPool2d(nn::MaxPool2dOptions(2))); }}}));
                });
              }),
              HasSubstr("LayerChoice 'op': its candidates disagree on the output shape for an input of [2, 1, 8, 8]: "
                        "conv gives [2, 4, 8, 8], pool gives [2, 1, 4, 4]"));
  EXPECT_THAT(error_of([] {
                ModelSpace("deep", {1, 8, 8}, [](Space& s) {
                  return s.repeat(Repeat(
                      "depth", {1, 2}, [](int64_t) { return nn::AnyModule(nn::MaxPool2d(nn::MaxPool2dOptions(2))); }));
                });
              }),
              HasSubstr("Repeat 'depth': its depths disagree on the output shape"));
  EXPECT_THAT(error_of([] {
                ModelSpace("twice", {2}, [](Space& s) {
                  s.value<int64_t>(ValueChoice("width", {3, 5}));
                  return nn::AnyModule(nn::Linear(2, s.value<int64_t>(ValueChoice("width", {3, 6}))));
                });
              }),
              HasSubstr("ValueChoice 'width': the label names another choice already"));
}

// The zoo's GPT space: layers (a Repeat of blocks), width, heads and MLP ratio; an architecture
// frozen from it is the zoo's gpt with the same settings (the same parameters, by name and shape).
TEST(GptSpace, ItsArchitecturesAreTheZoosGptWithTheirSettings) {
  const auto spec = ModelOptions().input_shape({16}).num_classes(50);
  const auto space = model_space("gpt_space", spec);
  EXPECT_EQ(space.labels(), (std::vector<std::string>{"heads", "layers", "mlp_ratio", "width"}));
  EXPECT_EQ(space.search_space()["layers"]["_value"], nlohmann::json({2, 4, 6}));
  const auto search = SearchSpace::from_json(space.search_space());
  std::mt19937_64 rng(5);
  std::set<int64_t> sizes;
  std::set<std::string> shapes;  // layers, width and MLP ratio decide the size (heads do not)
  for (int i = 0; i < 4; ++i) {
    const auto arch = search.sample(rng);
    auto frozen = make_model("gpt_space", ModelOptions(spec).arch(arch));
    auto plain = make_model("gpt", ModelOptions(spec)
                                       .layers(arch["layers"].get<int64_t>())
                                       .width(arch["width"].get<int64_t>())
                                       .heads(arch["heads"].get<int64_t>())
                                       .mlp_ratio(arch["mlp_ratio"].get<int64_t>()));
    std::vector<std::pair<std::string, std::vector<int64_t>>> a, b;
    for (const auto& p : frozen->named_parameters()) a.emplace_back(p.key(), p.value().sizes().vec());
    for (const auto& p : plain->named_parameters()) b.emplace_back(p.key(), p.value().sizes().vec());
    EXPECT_EQ(a, b) << arch.dump();
    sizes.insert(parameters_in(*frozen));
    shapes.insert(arch["layers"].dump() + arch["width"].dump() + arch["mlp_ratio"].dump());
    Batch batch;
    batch.input = torch::randint(50, {2, 16}, torch::kLong);
    EXPECT_EQ(frozen->forward(batch).sizes(), (std::vector<int64_t>{2, 16, 50})) << arch.dump();
  }
  EXPECT_EQ(sizes.size(), shapes.size());
  EXPECT_GE(shapes.size(), 2U);
  EXPECT_THAT(error_of([&] {
                model_space("gpt_space", ModelOptions().input_shape({1, 28, 28}));
              }),
              HasSubstr("model 'gpt_space': needs windows of tokens"));
  EXPECT_THAT(error_of([&] {
                make_model("gpt_space", ModelOptions(spec).arch({{"layers", 3}}));
              }),
              HasSubstr("model 'gpt_space': "));
}

// One-shot supernets (SPOS): weights shared by the paths, one path at a time.
TEST(OneShot, ASupernetRefusesWidthsItCannotShareAndNarrowsChoicesToTheAllowedValues) {
  const auto space = tiny_space();
  EXPECT_THAT(error_of([&] { space.one_shot(); }),
              HasSubstr("ValueChoice 'width' has 2 candidates (4, 8): a one-shot supernet shares the weights of "
                        "layer choices, repeats and input choices, not of widths; fix it to one value"));
  EXPECT_THAT(error_of([&] {
                space.one_shot({{"width", 4}, {"kernel", 3}, {"colour", 1}});
              }),
              HasSubstr("name 'colour', which the space has no choice of"));
  EXPECT_THAT(error_of([&] {
                space.one_shot({{"width", 5}, {"kernel", 3}});
              }),
              HasSubstr("ValueChoice 'width': 5 is not one of its candidates (4, 8)"));
  auto supernet = space.one_shot({{"width", 8}, {"kernel", {3}}, {"op", {"conv", "identity"}}});
  const auto& dims = supernet->search_space();
  EXPECT_EQ(dims["width"]["_value"], nlohmann::json({8}));
  EXPECT_EQ(dims["depth"]["_value"], nlohmann::json({1, 2}));
  ASSERT_EQ(dims["op"]["_value"].size(), 2U);  // pool is left out, and its module too
  EXPECT_EQ(dims["op"]["_value"][0],
            nlohmann::json({{"_name", "conv"}, {"kernel", {{"_type", "choice"}, {"_value", {3}}}}}));
  EXPECT_EQ(dims["op"]["_value"][1], "identity");
  for (const auto& p : supernet->named_parameters()) EXPECT_EQ(p.key().find("pool"), std::string::npos) << p.key();
  EXPECT_THAT(error_of([&] {
                supernet->activate({{"width", 8}, {"depth", 1}, {"op", "pool"}, {"merge", "0"}});
              }),
              HasSubstr("'op': \"pool\" is not one of the supernet's candidates (conv, identity)"));
  EXPECT_THAT(error_of([&] {
                supernet->activate({{"width", 8}, {"op", "identity"}, {"merge", "0"}});
              }),
              HasSubstr("the path has no value for 'depth' (one of 1, 2)"));
}

TEST(OneShot, EachPathComputesWithItsOwnWeightsAndOnlyTheyGetGradients) {
  auto supernet = tiny_space().one_shot({{"width", 4}, {"kernel", 3}});
  const auto x = torch::randn({3, 1, 8, 8});
  const nlohmann::json conv = {{"width", 4}, {"depth", 2}, {"op", {{"_name", "conv"}, {"kernel", 3}}}, {"merge", "1"}};
  const nlohmann::json pool = {{"width", 4}, {"depth", 2}, {"op", "pool"}, {"merge", "1"}};
  supernet->activate(conv);
  const auto a = supernet->forward(x);
  supernet->activate(pool);
  const auto b = supernet->forward(x);
  supernet->activate(conv);
  EXPECT_TRUE(torch::equal(supernet->forward(x), a));
  EXPECT_FALSE(torch::allclose(a, b));
  EXPECT_EQ(supernet->active(), conv);
  supernet->activate(pool);
  supernet->zero_grad();
  supernet->forward(x).sum().backward();
  int on_path = 0;
  for (const auto& p : supernet->named_parameters()) {
    const bool off = p.key().find(".conv.") != std::string::npos;  // the conv candidates: off the pool path
    EXPECT_EQ(p.value().grad().defined(), !off) << p.key();
    on_path += off ? 0 : 1;
  }
  EXPECT_GT(on_path, 0);
}

TEST(OneShot, APathOfTheCnnSpacesSupernetIsTheFrozenArchitectureWithTheSupernetsWeights) {
  const ModelOptions spec = ModelOptions().input_shape({1, 12, 12}).num_classes(10);
  const auto space = model_space("cnn_space", spec);
  auto supernet = space.one_shot({{"stage1_width", 16}, {"stage2_width", 32}, {"stage3_width", 64}});
  const std::vector<std::string> ops = {"conv5x5", "dwsep3x3", "conv3x3"};
  const nlohmann::json path = {{"stage1_width", 16},  {"stage2_width", 32},  {"stage3_width", 64},
                               {"stage1_depth", 2},   {"stage2_depth", 1},   {"stage3_depth", 3},
                               {"stage1_op", ops[0]}, {"stage2_op", ops[1]}, {"stage3_op", ops[2]}};
  supernet->activate(path);
  auto frozen = space.freeze(path);
  // The frozen network's tensor "I.J.rest" of the S-th stage's blocks is the supernet's
  // "net.I.J.OP.rest" (OP the stage's op); any other tensor "net.NAME".
  std::vector<std::string> repeats;
  for (const auto& p : frozen.ptr()->named_parameters()) {
    const auto first = p.key().substr(0, p.key().find('.'));
    if (!supernet->named_parameters().contains("net." + p.key()) &&
        std::find(repeats.begin(), repeats.end(), first) == repeats.end())
      repeats.push_back(first);
  }
  ASSERT_EQ(repeats.size(), 3U);
  const auto supernet_name = [&](const std::string& key) {
    const auto first = key.substr(0, key.find('.'));
    const auto stage = std::find(repeats.begin(), repeats.end(), first) - repeats.begin();
    if (stage == 3) return "net." + key;
    const auto second = key.find('.', first.size() + 1);
    return "net." + key.substr(0, second) + "." + ops[static_cast<std::size_t>(stage)] + key.substr(second);
  };
  torch::NoGradGuard no_grad;
  for (auto& p : supernet->parameters()) p.uniform_(-0.3, 0.3);
  const auto sp = supernet->named_parameters();
  const auto sb = supernet->named_buffers();
  for (auto& p : frozen.ptr()->named_parameters()) p.value().copy_(sp[supernet_name(p.key())]);
  for (auto& b : frozen.ptr()->named_buffers()) b.value().copy_(sb[supernet_name(b.key())]);
  supernet->eval();
  frozen.ptr()->eval();
  const auto x = torch::randn({2, 1, 12, 12});
  EXPECT_TRUE(torch::allclose(supernet->forward(x), frozen.forward<at::Tensor>(x), 1e-5, 1e-6));
}

TEST(OneShot, PathsAreAFunctionOfSeedAndStepAndFairSamplingTakesEachCandidateOncePerRun) {
  auto supernet = model_space("cnn_space", ModelOptions().input_shape({1, 8, 8}))
                      .one_shot({{"stage1_width", 16}, {"stage2_width", 16}, {"stage3_width", 16}});
  EXPECT_EQ(supernet->sample(7, 12, false), supernet->sample(7, 12, false));
  EXPECT_EQ(supernet->sample(7, 12, true), supernet->sample(7, 12, true));
  std::set<std::string> fair_run, uniform, seeds;
  for (int64_t step = 10; step < 15; ++step) fair_run.insert(supernet->sample(3, step, true)["stage2_op"]);
  EXPECT_EQ(fair_run.size(), 5U);  // steps 10..14: the third run of 5, each op once
  for (int64_t step = 0; step < 60; ++step) uniform.insert(supernet->sample(3, step, false)["stage2_op"]);
  EXPECT_EQ(uniform.size(), 5U);
  for (uint64_t seed = 0; seed < 20; ++seed) seeds.insert(supernet->sample(seed, 0, false).dump());
  EXPECT_GT(seeds.size(), 10U);
  for (int64_t step = 0; step < 20; ++step) supernet->activate(supernet->sample(1, step, step % 2 == 0));
  Classifier model(supernet.ptr());
  EXPECT_EQ(find_supernet(model), supernet.get());
  EXPECT_EQ(find_supernet(*model_space("cnn_space", ModelOptions().input_shape({1, 8, 8})).supernet().ptr()), nullptr);
}

}  // namespace
}  // namespace baton::nas
