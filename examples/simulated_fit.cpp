// A fit loop written out by hand around baton's Engine: one epoch of a few batches of a small
// classifier, two algorithms (label smoothing, gradient clipping) and a callback that prints
// every event with the traces of the algorithms that ran on it.
//
//   build/bin/simulated_fit [--batches N] [--epochs N]
//
// baton's Trainer runs this loop for you; this program shows what the engine does inside it.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <torch/torch.h>

#include <baton/baton.h>

namespace {

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

// Mixes one-hot targets with the uniform distribution before the loss is computed.
class LabelSmoothing : public baton::Algorithm {
 public:
  explicit LabelSmoothing(double smoothing) : smoothing_(smoothing) {}
  bool match(baton::Event event, const baton::State&) override { return event == baton::Event::kBeforeLoss; }
  std::optional<int> apply(baton::Event, baton::State& state, baton::Logger&) override {
    const int64_t classes = state.outputs.size(1);
    auto one_hot = torch::one_hot(state.batch.target, classes).to(torch::kFloat);
    state.batch.target = one_hot * (1.0 - smoothing_) + smoothing_ / static_cast<double>(classes);
    return std::nullopt;
  }

 private:
  double smoothing_;
};

// Scales the gradients down when their norm is above a threshold; the exit code says whether it did.
class GradientClipping : public baton::Algorithm {
 public:
  explicit GradientClipping(double max_norm) : max_norm_(max_norm) {}
  bool match(baton::Event event, const baton::State&) override { return event == baton::Event::kAfterBackward; }
  std::optional<int> apply(baton::Event, baton::State& state, baton::Logger& logger) override {
    const double norm = torch::nn::utils::clip_grad_norm_(state.model->parameters(), max_norm_);
    logger.log_metrics({{"grad_norm", norm}});
    return norm > max_norm_ ? 1 : 0;
  }

 private:
  double max_norm_;
};

// Prints each event with the timestamp; the traces arrive through log_traces.
class EventPrinter : public baton::LoggerDestination {
 public:
  void run_event(baton::Event event, baton::State& state, baton::Logger&) override {
    std::string line = pad(state.timestamp.to_string(), 24) + std::string(baton::to_string(event));
    if (!pending_.empty()) line = pad(line, 46) + pending_;
    std::printf("%s\n", line.c_str());
    pending_.clear();
  }
  void log_traces(const baton::Traces& traces) override {
    for (const auto& [key, trace] : traces) {
      pending_ += "  ran " + key + (trace.exit_code ? " (exit " + std::to_string(*trace.exit_code) + ")" : "");
    }
  }
  void log_metrics(const baton::Metrics& metrics, int64_t step) override {
    for (const auto& [name, value] : metrics) last_metrics_[name] = value;
  }
  const baton::Metrics& last_metrics() const { return last_metrics_; }

 private:
  std::string pending_;
  baton::Metrics last_metrics_;
};

int flag(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = flag(argc, argv, "--batches", 3);
  const int epochs = flag(argc, argv, "--epochs", 1);
  torch::manual_seed(0);

  auto model = std::make_shared<torch::nn::LinearImpl>(4, 3);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  const auto inputs = torch::randn({batches * 8, 4});
  const auto labels = inputs.slice(1, 0, 3).argmax(1);  // a learnable rule

  baton::State state;
  state.model = model;
  state.max_duration = baton::Time::from_epoch(epochs);
  state.algorithms = {std::make_shared<LabelSmoothing>(0.1), std::make_shared<GradientClipping>(0.5)};
  auto printer = std::make_shared<EventPrinter>();
  state.callbacks = {printer};
  baton::Logger logger(state, {printer});
  baton::Engine engine(state, logger);

  std::cout << "simulated fit: " << epochs << " epoch(s) of " << batches
            << " batches, algorithms LabelSmoothing and GradientClipping, callback EventPrinter\n";
  engine.run_event(baton::Event::kInit);
  engine.run_event(baton::Event::kFitStart);
  while (state.timestamp.get(baton::TimeUnit::kEpoch) < *state.max_duration) {
    engine.run_event(baton::Event::kEpochStart);
    for (int b = 0; b < batches; ++b) {
      engine.run_event(baton::Event::kBeforeDataloader);
      state.batch = {inputs.slice(0, b * 8, b * 8 + 8), labels.slice(0, b * 8, b * 8 + 8)};
      engine.run_event(baton::Event::kAfterDataloader);
      engine.run_event(baton::Event::kBatchStart);
      engine.run_event(baton::Event::kBeforeTrainBatch);
      optimizer.zero_grad();
      engine.run_event(baton::Event::kBeforeForward);
      state.outputs = model->forward(state.batch.input);
      engine.run_event(baton::Event::kAfterForward);
      engine.run_event(baton::Event::kBeforeLoss);
      state.loss = torch::nn::functional::cross_entropy(state.outputs, state.batch.target);
      engine.run_event(baton::Event::kAfterLoss);
      engine.run_event(baton::Event::kBeforeBackward);
      state.loss.backward();
      engine.run_event(baton::Event::kAfterBackward);
      engine.run_event(baton::Event::kAfterTrainBatch);
      optimizer.step();
      state.timestamp = state.timestamp.to_next_batch(state.batch.size());
      logger.log_metrics({{"train/loss", state.loss.item<double>()}});
      engine.run_event(baton::Event::kBatchEnd);
      engine.run_event(baton::Event::kBatchCheckpoint);
    }
    state.timestamp = state.timestamp.to_next_epoch();
    engine.run_event(baton::Event::kEpochEnd);
    engine.run_event(baton::Event::kEpochCheckpoint);
  }
  engine.run_event(baton::Event::kFitEnd);
  engine.close();
  std::printf("done: %lld batches, last train/loss %.4f, last grad_norm %.4f\n",
              static_cast<long long>(state.timestamp.batch()), printer->last_metrics().at("train/loss"),
              printer->last_metrics().at("grad_norm"));
}
