// A custom Algorithm: halve the loss after it is computed, and see the engine's trace of it.
#include <iostream>

#include <torch/torch.h>

#include <baton/baton.h>

class HalveLoss : public baton::Algorithm {
 public:
  bool match(baton::Event event, const baton::State&) override { return event == baton::Event::kAfterLoss; }
  std::optional<int> apply(baton::Event, baton::State& state, baton::Logger&) override {
    state.loss = state.loss * 0.5;
    return std::nullopt;
  }
};

int main() {
  baton::State state;
  state.algorithms.push_back(std::make_shared<HalveLoss>());
  baton::Logger logger(state);
  baton::Engine engine(state, logger);
  engine.run_event(baton::Event::kInit);
  state.loss = torch::tensor(3.0);
  for (const auto& [key, trace] : engine.run_event(baton::Event::kAfterLoss)) {
    std::cout << key << " ran at position " << *trace.order << "\n";
  }
  std::cout << "loss after the algorithm: " << state.loss.item<double>() << "\n";  // 1.5
  engine.close();
}
