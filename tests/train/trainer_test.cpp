// The trainer (src/train/trainer.cpp): events in the reference order, microbatches, evaluation,
// stopping, bad options and NaN losses.
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
#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"
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

// A gpt trained 3 batches on random windows of tokens, its blocks' activations recomputed or not.
TrainerOptions gpt_options(std::vector<std::string> checkpointing) {
  torch::manual_seed(0);
  auto model =
      make_model("gpt", ModelOptions().input_shape({16}).num_classes(32).layers(2).width(32).heads(4).dropout(0.1));
  auto data = std::make_shared<TensorDataset>(torch::randint(0, 32, {48, 16}), torch::randint(0, 32, {48, 16}));
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(16).seed(3)))
      .optimizers({make_optimizer(OptimizerOptions().name("adamw").lr(0.01), model->parameters())})
      .activation_checkpointing(std::move(checkpointing))
      .max_duration("3ba")
      .progress_bar(false)
      .console_log_interval("0ba");
}

// sharding in one process: nothing to shard over, one warning, and it trains as without.
TEST(Trainer, ShardingInOneProcessSaysItDoesNothing) {
  testing::CapturedLog log;
  TrainerOptions o = gpt_options({});
  Trainer t(o.sharding(Sharding::kFull));
  t.fit();
  EXPECT_EQ(t.state().sharding, Sharding::kNone);
  EXPECT_THAT(log.text(), HasSubstr("sharding: full does nothing in a single process: there are no ranks"));
  EXPECT_THAT(testing::error_of([] { Trainer(gpt_options({}).sharding(Sharding::kFull).offload_optimizer(true)); }),
              HasSubstr("offload: the run is on the CPU, where the optimizer's state already is"));
}

TEST(Trainer, ActivationCheckpointingTrainsToTheSameWeights) {
  TrainerOptions plain = gpt_options({}), recomputed = gpt_options({"auto"});
  Trainer(plain).fit();
  Trainer(recomputed).fit();
  const auto a = plain.model()->parameters(), b = recomputed.model()->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), 1e-5) << i;
  EXPECT_THAT(testing::error_of([] { Trainer(gpt_options({"Bottleneck"})); }),
              HasSubstr("activation_checkpointing: the model has no Bottleneck block (its blocks: Block)"));
  TrainerOptions plain_bf16 = gpt_options({}).precision(Precision::kAmpBf16),
                 recomputed_bf16 = gpt_options({"auto"}).precision(Precision::kAmpBf16);
  Trainer(plain_bf16).fit();
  Trainer(recomputed_bf16).fit();  // recomputed under autocast, as the forward ran
  const auto c = plain_bf16.model()->parameters(), d = recomputed_bf16.model()->parameters();
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_LT((c[i] - d[i]).abs().max().item<double>(), 1e-5) << i;
}

// The memory a fit reports: what the model, its gradients and the optimizer's state hold, measured
// (momentum's buffers are the parameters' size; Adam keeps two moments), and the process's peak.
TEST(Trainer, ReportsTheBytesOfParametersGradientsAndOptimizerState) {
  TrainerOptions sgd = small_options(64, 16, /*momentum=*/0.9).max_duration("2ba");
  int64_t params = 0;
  for (const auto& p : sgd.model()->parameters()) params += p.numel() * 4;
  Trainer momentum(sgd);
  momentum.fit();
  const MemoryUse m = momentum.summary().memory;
  EXPECT_EQ(m.params_bytes, params);
  EXPECT_EQ(m.grads_bytes, params);
  EXPECT_EQ(m.optimizer_bytes, params);
  EXPECT_GT(m.peak_bytes, params);
  ASSERT_EQ(momentum.summary().memory_per_rank.size(), 1U);
  EXPECT_EQ(momentum.summary().memory_per_rank[0].optimizer_bytes, params);
  TrainerOptions adam = small_options(64, 16).max_duration("2ba");
  adam.optimizers({make_optimizer(OptimizerOptions().name("adam").lr(0.01), adam.model()->parameters())});
  Trainer two_moments(adam);
  two_moments.fit();
  EXPECT_EQ(two_moments.summary().memory.optimizer_bytes, 2 * params);
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

TEST(Trainer, BfloatAutocastTrains) {
  Trainer trainer(small_options(256, 16).max_duration("3ep").eval_interval("1ep").precision(Precision::kAmpBf16));
  trainer.fit();
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.85);
}

}  // namespace
}  // namespace baton
