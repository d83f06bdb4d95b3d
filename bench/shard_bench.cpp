// Sharded training's speed and memory under mpirun: the zoo's gpt on random windows of tokens, fp32,
// AdamW, each rank one thread and its share of every global batch; one JSON line (rank 0): tokens/s
// of the global batches over the timed steps (after warm-up), the wait per step for gradient
// reductions, and every rank's parameters + gradients + optimizer state and peak resident set.
//
//   mpirun -np 2 build/bin/shard_bench --sharding full [--layers 4 --width 256 --context 128 --batch 16]
//   build/bin/shard_bench --device cuda --sharding full --activation-checkpointing auto   (one GPU: the kit)
//
// bench/shard_bench.sh runs it beside data parallelism and PyTorch FSDP2 (bench/peers/fsdp2_gpt.py).
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Args {
  std::string sharding = "full";
  std::string device = "cpu";
  int64_t layers = 4, width = 256, heads = 4, context = 128, batch = 16, vocab = 256, steps = 20, warmup = 3;
  std::vector<std::string> checkpointing;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + ": needs a value");
    const std::string value = argv[++i];
    if (flag == "--sharding") {
      a.sharding = value;
    } else if (flag == "--device") {
      a.device = value;
    } else if (flag == "--activation-checkpointing") {
      if (value != "false") a.checkpointing = {value};
    } else {
      int64_t* target = flag == "--layers"    ? &a.layers
                        : flag == "--width"   ? &a.width
                        : flag == "--heads"   ? &a.heads
                        : flag == "--context" ? &a.context
                        : flag == "--batch"   ? &a.batch
                        : flag == "--steps"   ? &a.steps
                        : flag == "--warmup"  ? &a.warmup
                                              : nullptr;
      if (target == nullptr) throw std::invalid_argument("unknown option " + flag);
      *target = std::stoll(value);
    }
  }
  return a;
}

int run(const Args& a) {
  torch::manual_seed(0);
  auto model = baton::make_model("gpt", baton::ModelOptions()
                                            .input_shape({a.context})
                                            .num_classes(a.vocab)
                                            .layers(a.layers)
                                            .width(a.width)
                                            .heads(a.heads)
                                            .dropout(0.0));
  const int64_t examples = a.batch * (a.steps + 1);
  auto tokens = torch::randint(0, a.vocab, {examples, a.context + 1}, torch::kLong);
  auto data = std::make_shared<baton::TensorDataset>(tokens.narrow(1, 0, a.context), tokens.narrow(1, 1, a.context));
  baton::TrainerOptions options;
  options.model(model)
      .train_dataloader(std::make_shared<baton::DataLoader>(data, baton::DataLoaderOptions().batch_size(a.batch)))
      .optimizers({baton::make_optimizer(baton::OptimizerOptions().name("adamw").lr(3e-4).weight_decay(0.1),
                                         model->parameters())})
      .max_duration(baton::Time::from_batch(a.warmup))
      .eval_interval("0ba")
      .precision(baton::Precision::kFp32)
      .device(a.device)
      .distributed(baton::Distributed::kOn)
      .sharding(*baton::from_name<baton::Sharding>(a.sharding))
      .activation_checkpointing(a.checkpointing)
      .num_threads(1)
      .progress_bar(false)
      .console_log_interval("0ba");
  baton::Trainer trainer(options);
  trainer.fit();  // warm-up
  const double wait0 = trainer.ddp_wait_seconds(), gather0 = trainer.gather_wait_seconds(), t0 = now_s();
  trainer.fit(baton::Time::from_batch(a.steps));
  const double dt = now_s() - t0;
  if (trainer.rank() != 0) return 0;
  const int64_t timed = a.steps - a.warmup;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& m : trainer.summary().memory_per_rank) {
    ranks.push_back({{"state_mb", static_cast<double>(m.params_bytes + m.grads_bytes + m.optimizer_bytes) / 1e6},
                     {"peak_mb", static_cast<double>(m.peak_bytes) / (1 << 20)}});
  }
  const nlohmann::json out = {{"case", "baton_" + a.sharding + (a.checkpointing.empty() ? "" : "_checkpointed")},
                              {"device", a.device},
                              {"ranks", trainer.world_size()},
                              {"layers", a.layers},
                              {"width", a.width},
                              {"tokens_per_s", static_cast<double>(timed * a.batch * a.context) / dt},
                              {"reduce_wait_ms_per_step", (trainer.ddp_wait_seconds() - wait0) / timed * 1e3},
                              {"gather_wait_ms_per_step", (trainer.gather_wait_seconds() - gather0) / timed * 1e3},
                              {"per_rank", ranks}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "shard_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shard_bench: %s\n", e.what());
    return 1;
  }
}
