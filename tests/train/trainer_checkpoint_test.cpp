// The trainer's checkpoints (src/train/trainer_checkpoint.cpp): every algorithm resumes bitwise,
// mid-epoch too; damaged, partial and wrong-kind checkpoints are said; devices are not written.
#include "baton/train/trainer.h"

#include <stdexcept>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "baton/algorithms/registry.h"
#include "baton/core/device.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/threads.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {
using ::testing::AnyOf;
using testing::error_of;

using testing::blobs;
using ::testing::HasSubstr;
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
    if (name == "lora") continue;  // adapts a Hugging Face model's layers: tests/algorithms/lora_test.cpp resumes it
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

class CheckpointDevice : public ::testing::Test {
 protected:
  testing::TempDir tmp_{"device"};
  std::string dir_ = tmp_.str();
};

// An OutputArchive's bytes as a GPU would have written them: each storage's location is cuda:0.
std::string as_if_written_on_cuda(const std::string& bytes) {
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  std::string out;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, std::size_t n) {
      out.append(static_cast<const char*>(data), n);
      return n;
    });
    int relocated = 0;
    for (const std::string& name : reader.getAllRecords()) {
      // The writer adds its own version records.
      if (name.find("version") != std::string::npos || name.find("byteorder") != std::string::npos ||
          name.find("serialization_id") != std::string::npos) {
        continue;
      }
      auto [data, size] = reader.getRecord(name);
      std::string record(static_cast<const char*>(data.get()), size);
      if (name.ends_with("data.pkl")) {
        // The pickler writes the location once (BINUNICODE, 4-byte length) and memoizes it.
        const std::string cpu(
            "X\x03\x00\x00\x00"
            "cpu",
            8);
        const std::string cuda(
            "X\x06\x00\x00\x00"
            "cuda:0",
            11);
        for (auto at = record.find(cpu); at != std::string::npos; at = record.find(cpu, at + cuda.size())) {
          record.replace(at, cpu.size(), cuda);
          ++relocated;
        }
      }
      writer.writeRecord(name, record.data(), record.size());
    }
    writer.writeEndOfFile();
    EXPECT_GT(relocated, 0) << "no tensor location found in the archive";
  }
  return out;
}

TEST_F(CheckpointDevice, OptimizerStateWrittenOnAGpuLoadsOnTheCpu) {
  torch::manual_seed(0);
  Trainer gpu_run(small_options(64, 16, /*momentum=*/0.9).max_duration("2ba").eval_interval("0ep").device("cpu"));
  gpu_run.fit();
  StateDict sd = gpu_run.snapshot(/*weights_only=*/false);
  const at::Tensor bytes = sd.tensors.at("optimizers/0").contiguous();
  const std::string relocated = as_if_written_on_cuda(
      std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())));
  sd.tensors["optimizers/0"] =
      torch::from_blob(const_cast<char*>(relocated.data()), {static_cast<int64_t>(relocated.size())}, torch::kByte)
          .clone();
  write_checkpoint(dir_ + "/gpu.ckpt", sd, nlohmann::json::object());
  // The momentum buffers come back on the CPU: one more batch gives the same weights as the run that wrote them.
  torch::manual_seed(0);
  Trainer cpu_run(
      small_options(64, 16, 0.9).max_duration("3ba").eval_interval("0ep").device("cpu").load_path(dir_ + "/gpu.ckpt"));
  EXPECT_EQ(cpu_run.state().timestamp.batch(), 2);
  cpu_run.fit();
  gpu_run.fit(Time::parse("3ba"));
  const auto a = gpu_run.state().model->parameters();
  const auto b = cpu_run.state().model->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i]));
}

TEST_F(CheckpointDevice, ACheckpointFileNamesNoDevice) {
  Trainer t(small_options().max_duration("1ba").eval_interval("0ep").device("cpu").save_folder(dir_ + "/run"));
  t.fit();
  const CheckpointFile ckpt = read_checkpoint(dir_ + "/run/latest");
  for (const auto& entry : ckpt.tensors) {
    for (const auto& [key, value] : entry.items()) {
      EXPECT_TRUE(key == "name" || key == "dtype" || key == "shape" || key == "offset" || key == "nbytes") << key;
    }
  }
}

}  // namespace
}  // namespace baton
