// Train a classifier with baton's Trainer: four well-separated clusters in 8 dimensions, an MLP,
// SGD with a cosine schedule, evaluation every epoch.
//
//   build/bin/train_classifier
//
// Swap the data for load_fashion_mnist() and the model for "fashion_cnn" to train the main job.
#include <cstdio>

#include <torch/torch.h>

#include <baton/data/dataloader.h>
#include <baton/models/zoo.h>
#include <baton/optim/optimizers.h>
#include <baton/optim/scheduler.h>
#include <baton/train/trainer.h>

namespace {

std::shared_ptr<baton::TensorDataset> clusters(int64_t n) {
  auto labels = torch::randint(0, 4, {n}, torch::kLong);
  auto inputs = torch::eye(4, 8).index_select(0, labels) * 3.0 + torch::randn({n, 8});
  return std::make_shared<baton::TensorDataset>(inputs, labels);
}

}  // namespace

int main() {
  torch::manual_seed(0);
  auto model = baton::make_model("mlp", baton::ModelOptions().input_shape({8}).num_classes(4).hidden({32}));
  baton::Trainer trainer(
      baton::TrainerOptions()
          .model(model)
          .train_dataloader(
              std::make_shared<baton::DataLoader>(clusters(2048), baton::DataLoaderOptions().batch_size(64)))
          .eval_dataloader(
              "eval", std::make_shared<baton::DataLoader>(clusters(512), baton::DataLoaderOptions().shuffle(false)))
          .max_duration("3ep")
          .eval_interval("1ep")
          .optimizers(
              {baton::make_optimizer(baton::OptimizerOptions().name("sgd").lr(0.1).momentum(0.9), model->parameters())})
          .schedulers({baton::make_scheduler(
              baton::SchedulerOptions().name("cosine_warmup").t_warmup(baton::Time::parse("0.1dur")))})
          .progress_bar(false));
  trainer.fit();
  std::printf("eval/accuracy %.4f after %lld batches (%.0f samples/s)\n",
              trainer.state().eval_metrics["eval"]["accuracy"],
              static_cast<long long>(trainer.state().timestamp.batch()), trainer.summary().samples_per_s());
  return trainer.state().eval_metrics["eval"]["accuracy"] > 0.9 ? 0 : 1;
}
