#include "baton/train/trainer.h"

#include <stdexcept>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "baton/algorithms/registry.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::blobs;
using ::testing::HasSubstr;
using testing::small_options;

// Records every event the trainer fires.
class EventRecorder : public Callback {
 public:
  void run_event(Event event, State&, Logger&) override { events.emplace_back(to_string(event)); }
  std::vector<std::string> events;
};

// The events of one training batch with `micro` microbatches.
std::vector<std::string> train_batch_events(int micro) {
  std::vector<std::string> out = {"before_dataloader", "after_dataloader", "batch_start", "before_train_batch"};
  for (int i = 0; i < micro; ++i) {
    for (const char* e :
         {"before_forward", "after_forward", "before_loss", "after_loss", "before_backward", "after_backward"}) {
      out.emplace_back(e);
    }
  }
  out.insert(out.end(), {"after_train_batch", "batch_end"});
  return out;
}

std::vector<std::string> eval_events(int batches) {
  std::vector<std::string> out = {"eval_before_all", "eval_start"};
  for (int i = 0; i < batches; ++i) {
    out.insert(out.end(), {"eval_batch_start", "eval_before_forward", "eval_after_forward", "eval_batch_end"});
  }
  out.insert(out.end(), {"eval_end", "eval_after_all"});
  return out;
}

TEST(Trainer, FiresEveryEventInTheReferenceOrder) {
  auto recorder = std::make_shared<EventRecorder>();
  // 2 epochs of 4 batches of 16, microbatches of 8 (2 per batch), evaluation every 3 batches.
  Trainer trainer(
      small_options().max_duration("2ep").eval_interval("3ba").device_train_microbatch_size(8).callbacks({recorder}));
  trainer.fit();

  std::vector<std::string> expected = {"init", "before_load", "after_load", "fit_start", "iteration_start"};
  int batch = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    expected.emplace_back("epoch_start");
    for (int b = 0; b < 4; ++b) {
      auto events = train_batch_events(2);
      expected.insert(expected.end(), events.begin(), events.end());
      if (++batch % 3 == 0) {
        auto ev = eval_events(2);
        expected.insert(expected.end(), ev.begin(), ev.end());
      }
      expected.emplace_back("batch_checkpoint");
    }
    expected.insert(expected.end(), {"epoch_end", "epoch_checkpoint"});
  }
  auto final_eval = eval_events(2);  // batch 8 was not evaluated: the final evaluation
  expected.insert(expected.end(), final_eval.begin(), final_eval.end());
  expected.emplace_back("fit_end");
  EXPECT_EQ(recorder->events, expected);
  EXPECT_EQ(trainer.state().timestamp.batch(), 8);
  EXPECT_EQ(trainer.state().timestamp.epoch(), 2);
  EXPECT_EQ(trainer.summary().steps, 8);
  EXPECT_EQ(trainer.summary().samples, 128);
}

TEST(Trainer, IterationsOfEpochsFireTheirEvents) {
  auto recorder = std::make_shared<EventRecorder>();
  Trainer trainer(small_options().max_duration("3ep").eval_interval("0ep").iteration_length(2).callbacks({recorder}));
  trainer.fit();
  std::vector<std::string> around;  // the iteration events and the epoch events they sit between
  for (const auto& e : recorder->events) {
    if (e.rfind("iteration_", 0) == 0 || e == "epoch_start" || e == "epoch_checkpoint") around.push_back(e);
  }
  const std::vector<std::string> expected = {
      "iteration_start", "epoch_start",          "epoch_checkpoint", "epoch_start", "epoch_checkpoint",
      "iteration_end",   "iteration_checkpoint", "iteration_start",  "epoch_start", "epoch_checkpoint"};
  EXPECT_EQ(around, expected);
  // Fit again to a longer run: the second iteration ends after its second epoch.
  recorder->events.clear();
  trainer.fit(Time::parse("4ep"));
  EXPECT_EQ(std::count(recorder->events.begin(), recorder->events.end(), "iteration_start"), 0);
  EXPECT_EQ(std::count(recorder->events.begin(), recorder->events.end(), "iteration_end"), 1);
}

TEST(Trainer, EpochIntervalEvaluatesBetweenEpochEndAndEpochCheckpoint) {
  auto recorder = std::make_shared<EventRecorder>();
  Trainer trainer(small_options().max_duration("1ep").eval_interval("1ep").callbacks({recorder}));
  trainer.fit();
  auto& ev = recorder->events;
  auto end = std::find(ev.begin(), ev.end(), "epoch_end");
  ASSERT_NE(end, ev.end());
  EXPECT_EQ(*(end + 1), "eval_before_all");
  EXPECT_EQ(std::count(ev.begin(), ev.end(), "eval_before_all"), 1);  // no second, final evaluation
  EXPECT_EQ(*(std::find(ev.begin(), ev.end(), "eval_after_all") + 1), "epoch_checkpoint");
}

// Captures the gradients after the last microbatch, before the optimizer steps.
class GradientProbe : public Callback {
 public:
  void after_train_batch(State& state, Logger&) override {
    grads.clear();
    for (const auto& p : state.model->parameters()) grads.push_back(p.grad().clone());
  }
  std::vector<at::Tensor> grads;
};

TEST(Trainer, MicrobatchGradientsAddUpToTheWholeBatch) {
  auto run = [](std::optional<int64_t> micro) {
    torch::manual_seed(0);
    auto probe = std::make_shared<GradientProbe>();
    Trainer trainer(
        small_options(24, 24).max_duration("1ba").eval_interval("0ep").device_train_microbatch_size(micro).callbacks(
            {probe}));
    trainer.fit();
    return probe->grads;
  };
  const auto whole = run(std::nullopt);
  const auto split = run(5);  // 5 + 5 + 5 + 5 + 4: uneven shares
  ASSERT_EQ(whole.size(), split.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    EXPECT_LT((whole[i] - split[i]).abs().max().item<double>(), 1e-6) << i;
  }
}

TEST(Trainer, StopTrainingEndsFitAfterTheCurrentBatch) {
  struct StopAtThree : Callback {
    void batch_end(State& state, Logger&) override {
      if (state.timestamp.batch() == 3) state.stop_training();
    }
  };
  auto recorder = std::make_shared<EventRecorder>();
  Trainer trainer(
      small_options().max_duration("5ep").eval_interval("0ep").callbacks({std::make_shared<StopAtThree>(), recorder}));
  trainer.fit();
  EXPECT_EQ(trainer.state().timestamp.batch(), 3);
  EXPECT_TRUE(trainer.summary().stopped_early);
  EXPECT_EQ(recorder->events[recorder->events.size() - 2], "batch_checkpoint");
  EXPECT_EQ(recorder->events.back(), "fit_end");
}

TEST(Trainer, FitAgainContinuesToALongerDuration) {
  Trainer trainer(small_options().max_duration("1ep").eval_interval("0ep"));
  trainer.fit();
  EXPECT_EQ(trainer.state().timestamp.batch(), 4);
  trainer.fit(Time::parse("6ba"));
  EXPECT_EQ(trainer.state().timestamp.batch(), 6);
  EXPECT_EQ(trainer.state().timestamp.batch_in_epoch(), 2);
  trainer.fit(Time::parse("2ep"));
  EXPECT_EQ(trainer.state().timestamp.batch(), 8);
  EXPECT_EQ(trainer.state().timestamp.epoch(), 2);
}

TEST(Trainer, LearnsAndEvaluates) {
  Trainer trainer(small_options(256, 16).max_duration("3ep").eval_interval("1ep"));
  trainer.fit();
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);
  const auto metrics = trainer.eval();
  EXPECT_GT(metrics.at("eval").at("accuracy"), 0.9);
  EXPECT_GT(trainer.summary().train_s, 0.0);
  EXPECT_GT(trainer.summary().eval_s, 0.0);
}

// eval_subset_num_batches: an evaluation reads that many batches, not one more (a batch of
// decoded images past the limit was read and thrown away). (A prefetching loader reads one ahead:
// limit_eval_batches, a limit of the loader's own, reads none.)
TEST(Trainer, AnEvaluationSubsetReadsOnlyItsBatches) {
  auto eval = std::make_shared<testing::CountedGathers>(blobs(64, 4));
  TrainerOptions o = small_options().max_duration("2ba").eval_interval("0ep").eval_subset_num_batches(2);
  o.eval_dataloaders(
      {Evaluator{"eval",
                 std::make_shared<DataLoader>(eval, DataLoaderOptions().batch_size(16).shuffle(false).prefetch(false)),
                 {},
                 std::nullopt}});
  Trainer trainer(o);
  trainer.eval();
  EXPECT_EQ(eval->gathers.load(), 2);
}

TEST(Trainer, EachEvaluatorRunsAtItsOwnIntervalWithItsOwnMetrics) {
  auto memory = std::make_shared<InMemoryLogger>();
  auto loader = [](int64_t n) {
    return std::make_shared<DataLoader>(blobs(n, 4), DataLoaderOptions().batch_size(16).shuffle(false));
  };
  auto recorder = std::make_shared<EventRecorder>();
  Trainer trainer(small_options(64, 16)  // 4 batches an epoch; the default "eval" every 2ep
                      .max_duration("3ep")
                      .eval_interval("2ep")
                      .evaluator(Evaluator{"eval/often", loader(32), {"accuracy", "f1"}, Time::from_batch(3)})
                      .evaluator(Evaluator{"eval/never", loader(16), {}, Time::from_epoch(0)})
                      .loggers({memory})
                      .callbacks({recorder}));
  trainer.fit();
  auto steps = [&](const std::string& key) {
    std::vector<int64_t> out;
    for (const auto& [step, value] : memory->series(key)) out.push_back(step);
    return out;
  };
  EXPECT_EQ(steps("eval/accuracy"), (std::vector<int64_t>{8, 12}));  // 2ep, and at the end
  EXPECT_EQ(steps("eval/loss"), (std::vector<int64_t>{8, 12}));      // the model's metrics
  EXPECT_EQ(steps("eval/often/f1"), (std::vector<int64_t>{3, 6, 9, 12}));
  EXPECT_TRUE(steps("eval/often/loss").empty());
  EXPECT_TRUE(steps("eval/never/accuracy").empty());
  // After batches 3, 6, 9 and 12 ("often"), epoch 2 ("eval") and at the fit's end ("eval" again).
  EXPECT_EQ(std::count(recorder->events.begin(), recorder->events.end(), "eval_before_all"), 6);
  EXPECT_EQ(trainer.state().eval_metric("eval/often/accuracy"),
            trainer.state().eval_metrics.at("eval/often").at("accuracy"));
  EXPECT_FALSE(trainer.state().eval_metric("eval/never/accuracy").has_value());
  // Standalone, every evaluator runs, whatever its interval.
  EXPECT_EQ(trainer.eval().count("eval/never"), 1u);
  EXPECT_THROW(Trainer(small_options().evaluator(Evaluator{"eval", loader(16), {}, std::nullopt})),
               std::invalid_argument);
  EXPECT_THROW(Trainer(small_options().evaluator(Evaluator{"x", loader(16), {"r2"}, std::nullopt})),
               std::invalid_argument);
  EXPECT_THROW(Trainer(small_options().evaluator(Evaluator{"x", loader(16), {}, Time::from_token(5)})),
               std::invalid_argument);
}

TEST(Trainer, StandaloneEvalAndPredictFireTheirEvents) {
  auto recorder = std::make_shared<EventRecorder>();
  Trainer trainer(small_options().callbacks({recorder}));
  recorder->events.clear();
  trainer.eval();
  EXPECT_EQ(recorder->events.front(), "eval_standalone_start");
  EXPECT_EQ(recorder->events.back(), "eval_standalone_end");
  EXPECT_EQ(std::count(recorder->events.begin(), recorder->events.end(), "eval_before_all"), 0);
  recorder->events.clear();
  DataLoader loader(blobs(40, 5), DataLoaderOptions().batch_size(16).shuffle(false));
  const auto outputs = trainer.predict(loader);
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs[2].sizes(), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(recorder->events.front(), "predict_start");
  EXPECT_EQ(std::count(recorder->events.begin(), recorder->events.end(), "predict_batch_end"), 3);
  EXPECT_EQ(recorder->events.back(), "predict_end");
}

TEST(Trainer, UsesTheLossAnAlgorithmLeaves) {
  // Scaling the loss to zero leaves the weights where they were.
  struct ZeroLoss : Algorithm {
    bool match(Event e, const State&) override { return e == Event::kAfterLoss; }
    std::optional<int> apply(Event, State& s, Logger&) override {
      s.loss = s.loss * 0.0;
      return std::nullopt;
    }
  };
  auto options = small_options().max_duration("2ba").eval_interval("0ep").algorithms({std::make_shared<ZeroLoss>()});
  const auto before = options.model()->parameters()[0].clone();
  Trainer trainer(options);
  trainer.fit();
  EXPECT_TRUE(torch::equal(before, options.model()->parameters()[0]));
}

TEST(Trainer, ANaNLossIsAShortErrorNamingTheBatch) {
  struct PoisonLoss : Algorithm {
    bool match(Event e, const State& s) override { return e == Event::kAfterLoss && s.timestamp.batch() == 2; }
    std::optional<int> apply(Event, State& s, Logger&) override {
      s.loss = s.loss * std::numeric_limits<double>::quiet_NaN();
      return std::nullopt;
    }
  };
  Trainer trainer(
      small_options().max_duration("1ep").eval_interval("0ep").algorithms({std::make_shared<PoisonLoss>()}));
  EXPECT_THAT([&] { trainer.fit(); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("train/loss is nan at batch 3")));
}

TEST(Trainer, AModelThatDoesNotFitTheDataIsAShortError) {
  auto model = make_model("mlp", ModelOptions().input_shape({5}).num_classes(4));
  auto options = small_options()
                     .model(model)
                     .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.1), model->parameters())})
                     .eval_interval("0ep");
  Trainer trainer(options);
  try {
    trainer.fit();
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_THAT(what, HasSubstr("the model cannot take this batch (inputs of shape [16, 8])"));
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Trainer, RefusesBadOptions) {
  EXPECT_THROW(Trainer{TrainerOptions()}, std::invalid_argument);
  EXPECT_THROW(Trainer(small_options().max_duration("0.5dur")), std::invalid_argument);
  EXPECT_THROW(Trainer(small_options().eval_interval("10tok")), std::invalid_argument);
  EXPECT_THROW(Trainer(small_options().device_train_microbatch_size(0)), std::invalid_argument);
  EXPECT_THROW(Trainer(small_options().eval_metrics({"f2"})), std::invalid_argument);
  EXPECT_THAT(
      [] {
        Trainer t(small_options().eval_metrics({"accuracy", "r2"}));
      },  // classes, not values
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("metric 'r2' needs values, but loss cross_entropy gives class logits")));
  EXPECT_THAT([] { Trainer t(small_options().device("cpu").cuda_graphs(CudaGraphs::kOn)); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  HasSubstr("cuda_graphs on needs a CUDA device (the run's device is cpu); use auto or off")));
  EXPECT_THROW(parse_cuda_graphs("yes"), std::invalid_argument);
}

TEST(Trainer, CudaGraphsAutoTrainsEagerOnTheCpu) {
  Trainer trainer(small_options().device("cpu").max_duration("2ep").cuda_graphs(CudaGraphs::kAuto));
  trainer.fit();
  EXPECT_EQ(trainer.summary().graph_steps, 0);
  EXPECT_GT(trainer.summary().steps, 0);
}

TEST(Trainer, BfloatAutocastTrains) {
  Trainer trainer(small_options(256, 16).max_duration("3ep").eval_interval("1ep").precision(Precision::kAmpBf16));
  trainer.fit();
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.85);
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

using testing::small_options;

TEST(TorchScript, AScriptedModuleTrainsInCpp) {
  const testing::TempDir dir_tmp("ts");
  const std::string dir = dir_tmp.str();
  const std::string path = dir + "/net.pt";
  {
    torch::jit::Module m("Net");
    m.register_parameter("w", torch::randn({8, 4}) * 0.1, false);
    m.register_parameter("b", torch::zeros({4}), false);
    m.define(R"(
def forward(self, x):
    return torch.matmul(x, self.w) + self.b
)");
    m.save(path);
  }
  auto model = load_torchscript_classifier(path);
  ASSERT_EQ(model->parameters().size(), 2u);
  const auto before = model->parameters()[0].clone();
  Trainer trainer(small_options(256, 16)
                      .model(model)
                      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.1), model->parameters())})
                      .max_duration("3ep")
                      .eval_interval("3ep"));
  trainer.fit();
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);
  EXPECT_FALSE(torch::equal(before, model->parameters()[0]));
  // The scripted module itself was trained: reload is not needed to see the new weights.
  EXPECT_THAT([&] { load_torchscript_classifier(dir + "/missing.pt"); },
              ::testing::ThrowsMessage<std::runtime_error>(
                  HasSubstr("missing.pt: cannot open the TorchScript module (No such file or directory)")));
  std::filesystem::remove_all(dir);
}

// A TorchScript file saved by LibTorch, its code records rewritten by `edit` (as a newer PyTorch,
// or a hostile hand, would have written them).
std::string edited_torchscript(const std::string& dir, const std::function<std::string(std::string)>& edit) {
  const std::string saved = dir + "/saved.pt", out = dir + "/edited.pt";
  {
    torch::jit::Module m("Net");
    m.register_parameter("w", torch::randn({8, 4}), false);
    m.define("def forward(self, x):\n    return torch.relu(torch.matmul(x, self.w))\n");
    m.save(saved);
  }
  caffe2::serialize::PyTorchStreamReader reader(saved);
  caffe2::serialize::PyTorchStreamWriter writer(out);
  for (const std::string& name : reader.getAllRecords()) {
    auto [data, size] = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (name.find("code/") != std::string::npos && name.ends_with(".py")) bytes = edit(bytes);
    if (name != "version" && name != ".data/version") writer.writeRecord(name, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  return out;
}

TEST(TorchScript, AnOperatorThisLibTorchLacksIsNamedInOneLineWithTheBuildThatHasIt) {
  const testing::TempDir dir("ts_newer");
  const std::string path = edited_torchscript(dir.str(), [](std::string code) {
    const size_t at = code.find("torch.relu(");
    return at == std::string::npos ? code : code.replace(at, 10, "torch.rms_norm");
  });
  const std::string error = testing::error_of([&] { load_torchscript_classifier(path); });
  EXPECT_THAT(error, HasSubstr("edited.pt: the module uses operator aten::rms_norm, which this LibTorch ("));
  EXPECT_THAT(error, HasSubstr("LibTorch 2.4 has"));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(TorchScript, CodeNestedTooDeepForLibTorchsParserIsRefusedNotACrash) {
  const testing::TempDir dir("ts_deep");
  const std::string path = edited_torchscript(dir.str(), [](std::string code) {
    const size_t line = code.rfind('\n', code.find("return"));  // a line before the return, indented as it
    const std::string indent = code.substr(line + 1, code.find("return") - line - 1);
    return code.insert(line + 1, indent + "deep = " + std::string(50000, '(') + "1" + std::string(50000, ')') + "\n");
  });
  EXPECT_THAT(testing::error_of([&] { load_torchscript_classifier(path); }),
              HasSubstr("deep, more than the 200 baton reads"));
}

}  // namespace
}  // namespace baton

#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"

namespace baton {
namespace {

using testing::small_options;

class Resume : public ::testing::Test {
 protected:
  testing::TempDir tmp_{"resume"};

  TrainerOptions options(const std::string& folder) {
    torch::manual_seed(0);
    return small_options().deterministic(true).eval_interval("2ba").save_folder(dir_ + "/" + folder);
  }
  static std::vector<at::Tensor> weights(Trainer& t) {
    std::vector<at::Tensor> out;
    for (const auto& p : t.state().model->parameters()) out.push_back(p.detach().clone());
    return out;
  }
  static bool equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!torch::equal(a[i], b[i])) return false;
    }
    return true;
  }
  std::string dir_ = tmp_.str();
};

// Composer's test over every algorithm: a run resumed from its checkpoint at batch 3 ends with the
// weights of the run that went on (resnet20 on 16x16 images: every algorithm has something to act
// on, single_path a one-shot supernet of cnn_space; the same max_duration for both, so schedules by
// fraction of the run agree).
TEST_F(Resume, EveryAlgorithmResumesBitwise) {
  auto options = [&](const std::string& algorithm, const std::string& folder) {
    torch::manual_seed(0);
    auto spec = ModelOptions().input_shape({1, 16, 16}).num_classes(4);
    auto model =
        algorithm == "single_path"
            ? make_model("cnn_space",
                         spec.one_shot(true).arch({{"stage1_width", 16}, {"stage2_width", 16}, {"stage3_width", 16}}))
            : make_model("resnet20", spec);
    return TrainerOptions()
        .model(model)
        .train_dataloader(
            std::make_shared<DataLoader>(testing::quadrants(64, 1), DataLoaderOptions().batch_size(16).seed(3)))
        .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
        .algorithms({make_algorithm(algorithm)})
        .max_duration("6ba")
        .eval_interval("0ep")
        .progress_bar(false)
        .console_log_interval("0ba")
        .deterministic(true)
        .save_interval("3ba")
        .save_folder(dir_ + "/" + folder);
  };
  for (const auto& name : algorithm_names()) {
    SCOPED_TRACE(name);
    Trainer whole(options(name, name));
    whole.fit();
    Trainer resumed(options(name, name + "-resumed").load_path(dir_ + "/" + name + "/ep0-ba3.ckpt"));
    EXPECT_EQ(resumed.state().timestamp.batch(), 3);
    resumed.fit();
    EXPECT_TRUE(equal(weights(resumed), weights(whole)));
  }
}

TEST_F(Resume, MidEpochResumeEndsWithTheSameWeightsAsAnUninterruptedRun) {
  Trainer uninterrupted(options("a").max_duration("3ep"));
  uninterrupted.fit();
  const auto expected = weights(uninterrupted);

  {
    Trainer first(options("b").max_duration("6ba").save_interval("3ba"));  // stops in the middle of epoch 2
    first.fit();
  }
  EXPECT_TRUE(std::filesystem::is_symlink(dir_ + "/b/latest"));
  EXPECT_EQ(std::filesystem::read_symlink(dir_ + "/b/latest").string(), "ep1-ba6.ckpt");
  Trainer resumed(options("b").max_duration("3ep").autoresume(true));
  EXPECT_EQ(resumed.loaded_from(), dir_ + "/b/latest");
  EXPECT_EQ(resumed.state().timestamp.batch(), 6);
  EXPECT_EQ(resumed.state().timestamp.batch_in_epoch(), 2);
  resumed.fit();
  EXPECT_EQ(resumed.state().timestamp.batch(), 12);
  EXPECT_TRUE(equal(weights(resumed), expected));
  EXPECT_EQ(weights_sha256(resumed.snapshot(true)), weights_sha256(uninterrupted.snapshot(true)));
}

TEST_F(Resume, KeepsTheNewestCheckpointsAndFallsBackFromADamagedLatest) {
  {
    Trainer t(options("c").max_duration("2ep").save_interval("2ba").save_num_checkpoints_to_keep(2));
    t.fit();
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/c")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  // Batch 8 is saved at batch_checkpoint (still epoch 1), then at fit end (epoch 2).
  EXPECT_EQ(files, (std::vector<std::string>{"ep1-ba8.ckpt", "ep2-ba8.ckpt", "latest"}));
  EXPECT_EQ(std::filesystem::read_symlink(dir_ + "/c/latest").string(), "ep2-ba8.ckpt");
  // Damage the newest: resuming takes the good one before it.
  std::filesystem::resize_file(dir_ + "/c/ep2-ba8.ckpt", 100);
  Trainer resumed(options("c").max_duration("2ep").autoresume(true));
  EXPECT_EQ(resumed.loaded_from(), dir_ + "/c/ep1-ba8.ckpt");
  EXPECT_EQ(resumed.state().timestamp.epoch(), 1);
}

TEST_F(Resume, ACheckpointWrittenAfterLatestIsResumedFromAndNotWrittenAgain) {
  {
    Trainer t(options("k").max_duration("3ba").save_interval("1ba"));
    t.fit();
  }
  // As if the run was killed after renaming ep0-ba2 and ep0-ba3 into place but before moving the link.
  point_latest_at(dir_ + "/k", dir_ + "/k/ep0-ba1.ckpt");
  const auto bytes = [&](const std::string& name) { return testing::read_file(dir_ + "/k/" + name); };
  const std::string saved = bytes("ep0-ba3.ckpt");
  Trainer resumed(options("k").max_duration("4ba").save_interval("1ba").autoresume(true));
  EXPECT_EQ(resumed.loaded_from(), dir_ + "/k/ep0-ba3.ckpt");
  EXPECT_EQ(resumed.state().timestamp.batch(), 3);
  resumed.fit();
  EXPECT_EQ(bytes("ep0-ba3.ckpt"), saved);  // saved once, never again
  EXPECT_EQ(std::filesystem::read_symlink(dir_ + "/k/latest").string(), "ep1-ba4.ckpt");
}

TEST_F(Resume, WeightsOnlyLoadsIntoAnotherRecipeWithIgnoredKeys) {
  Trainer source(options("d").max_duration("2ba"));
  source.fit();
  source.save_checkpoint(dir_ + "/d.ckpt");
  // Same body, a 6-class head: the head's tensors are skipped, the rest is loaded.
  torch::manual_seed(1);
  auto model = make_model("mlp", ModelOptions().input_shape({8}).num_classes(6).hidden({16}));
  auto tune = small_options().model(model).optimizers(
      {make_optimizer(OptimizerOptions().name("sgd").lr(0.1), model->parameters())});
  EXPECT_THAT(
      [&] { Trainer t(tune.load_path(dir_ + "/d.ckpt").load_weights_only(true)); },
      ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("has shape [4, 16] but the model's is [6, 16]")));
  Trainer tuned(tune.load_path(dir_ + "/d.ckpt").load_weights_only(true).load_ignore_keys({"model/module.layers.2.*"}));
  EXPECT_TRUE(torch::equal(tuned.state().model->named_parameters()["module.layers.0.weight"],
                           source.state().model->named_parameters()["module.layers.0.weight"]));
  EXPECT_EQ(tuned.state().timestamp.batch(), 0);
}

TEST_F(Resume, WhenNoCheckpointCanBeReadAutoresumeStopsInsteadOfStartingOverThem) {
  {
    Trainer t(options("f").max_duration("4ba").save_interval("2ba"));
    t.fit();
  }
  for (const char* name : {"/f/ep0-ba2.ckpt", "/f/ep0-ba4.ckpt", "/f/ep1-ba4.ckpt"}) {
    if (std::filesystem::exists(dir_ + name)) std::filesystem::resize_file(dir_ + name, 50);
  }
  const std::string why = testing::error_of([&] { Trainer t(options("f").max_duration("6ba").autoresume(true)); });
  EXPECT_THAT(why, HasSubstr("/f: no checkpoint can be resumed from ("));
  EXPECT_THAT(why, HasSubstr("ep0-ba2.ckpt"));
  EXPECT_THAT(why, HasSubstr("--restart moves them aside"));
  EXPECT_EQ(std::filesystem::file_size(dir_ + "/f/ep0-ba2.ckpt"), 50U);  // nothing written over
}

TEST_F(Resume, APartialLoadSaysWhatItLoadedAndALoadOfNothingIsAnError) {
  Trainer source(options("g").max_duration("2ba"));
  source.fit();
  source.save_checkpoint(dir_ + "/g.ckpt");
  // Another model: no tensor name in common.
  auto cnn = make_model("fashion_cnn", ModelOptions().input_shape({1, 8, 8}).num_classes(4));
  EXPECT_THAT(testing::error_of([&] {
                Trainer t(small_options()
                              .model(cnn)
                              .optimizers({make_optimizer(OptimizerOptions().name("sgd"), cnn->parameters())})
                              .load_path(dir_ + "/g.ckpt")
                              .load_weights_only(true)
                              .load_strict(false));
              }),
              HasSubstr("g.ckpt: none of its tensors has the name of one of this model's (0 of the model's"));
}

// A checkpoint that reads well (its checksum holds) but whose values are not of baton's types, or
// holds another optimizer's state: a CheckpointError naming it, not a library's assertion.
TEST_F(Resume, AWellFormedCheckpointOfTheWrongKindIsACheckpointError) {
  Trainer source(options("h").max_duration("2ba"));
  source.fit();
  StateDict mistyped = source.snapshot(false);
  mistyped.values["timestamp"] = "later";
  write_checkpoint(dir_ + "/mistyped.ckpt", mistyped, nlohmann::json::object());
  EXPECT_THAT([&] { Trainer t(options("h2").load_path(dir_ + "/mistyped.ckpt")); },
              ::testing::ThrowsMessage<CheckpointError>(
                  HasSubstr("mistyped.ckpt: timestamp state: expected a JSON object, got \"later\"")));
  mistyped = source.snapshot(false);
  mistyped.values["eval_metrics"] = {{"eval", {{"accuracy", "high"}}}};
  write_checkpoint(dir_ + "/mistyped.ckpt", mistyped, nlohmann::json::object());
  EXPECT_THAT([&] { Trainer t(options("h2").load_path(dir_ + "/mistyped.ckpt")); },
              ::testing::ThrowsMessage<CheckpointError>(HasSubstr("mistyped.ckpt: a value in its metadata is not of "
                                                                  "the type baton writes")));
  source.save_checkpoint(dir_ + "/sgd.ckpt");
  auto adam = options("h3");
  adam.optimizers({make_optimizer(OptimizerOptions().name("adam").lr(0.01), adam.model()->parameters())});
  EXPECT_THAT([&] { Trainer t(adam.load_path(dir_ + "/sgd.ckpt")); },
              ::testing::ThrowsMessage<CheckpointError>(
                  HasSubstr("sgd.ckpt: holds the state of optimizer sgd, but this run's optimizer is adam")));
}

// A resume counts the checkpoints written before it against num_checkpoints_to_keep, whatever
// extension save_filename gives them.
TEST_F(Resume, KeepingTheNewestCountsTheCheckpointsOfBeforeTheResume) {
  auto keep = [&] {
    return options("m").save_interval("1ba").save_filename("b{batch}.pt").save_num_checkpoints_to_keep(2);
  };
  {
    Trainer t(keep().max_duration("3ba"));
    t.fit();
  }
  Trainer resumed(keep().max_duration("5ba").autoresume(true));
  EXPECT_EQ(resumed.loaded_from(), dir_ + "/m/latest");
  EXPECT_EQ(resumed.state().timestamp.batch(), 3);
  resumed.fit();
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/m")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"b4.pt", "b5.pt", "latest"}));
}

TEST_F(Resume, ADamagedLoadPathIsAShortError) {
  std::ofstream(dir_ + "/bad.ckpt") << "garbage";
  EXPECT_THAT([&] { Trainer t(options("e").load_path(dir_ + "/bad.ckpt")); },
              ::testing::ThrowsMessage<CheckpointError>(HasSubstr("bad.ckpt: not a baton checkpoint")));
}

}  // namespace
}  // namespace baton
