// The data sets a recipe names (src/train/data_sets.cpp): IDX, NPY, text, image folders and token
// shards train; missing files and keys are named.
#include "baton/train/recipe.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/images.h"
#include "baton/data/readers.h"
#include "baton/data/tokens.h"
#include "baton/models/safetensors.h"
#include "baton/models/zoo.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing::error_of;

class Files : public ::testing::Test {
 protected:
  testing::TempDir tmp_{"recipe"};
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Four classes of 6x6 single-channel images: a bright square in one quadrant.
  static std::pair<at::Tensor, at::Tensor> quadrants(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    auto labels = torch::randint(0, 4, {n}, gen, torch::kLong);
    auto images = (torch::rand({n, 6, 6}, gen) * 60).to(torch::kByte);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = labels[i].item<int64_t>();
      images[i].slice(0, (q / 2) * 3, (q / 2) * 3 + 3).slice(1, (q % 2) * 3, (q % 2) * 3 + 3).fill_(250);
    }
    return {images, labels.to(torch::kByte)};
  }

  // 64 quadrant images as x.npy and y.npy; the recipe's data line that reads them.
  std::string small_npy_data() {
    auto [x, y] = quadrants(64, 3);
    write_npy("x.npy", x.to(torch::kFloat).unsqueeze(1));
    write_npy("y.npy", y);
    return "data: {dataset: files, train_inputs: " + path("x.npy") + ", train_labels: " + path("y.npy") + "}\n";
  }

  void write_idx(const std::string& file, const at::Tensor& t, bool gzip) {
    std::vector<unsigned char> bytes = {0, 0, 0x08, static_cast<unsigned char>(t.dim())};
    for (int64_t d : t.sizes()) {
      for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(d >> shift));
    }
    auto c = t.contiguous();
    bytes.insert(bytes.end(), c.data_ptr<uint8_t>(), c.data_ptr<uint8_t>() + c.numel());
    if (gzip) {
      gzFile f = gzopen(path(file).c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path(file), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
  }

  void write_npy(const std::string& file, const at::Tensor& t) {
    const bool is_float = t.scalar_type() == at::kFloat;
    std::string shape = "(";
    for (int64_t d : t.sizes()) shape += std::to_string(d) + ", ";
    shape += ")";
    std::string header = std::string("{'descr': '") + (is_float ? "<f4" : "|u1") +
                         "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::ofstream out(path(file), std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
    out.write(reinterpret_cast<const char*>(len), 2);
    out << header;
    auto c = t.contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  }

  double train_on(const std::string& files_yaml) {
    const std::string yaml =
        "max_duration: 4ep\neval_interval: 4ep\nprogress_bar: false\n"
        "model: {name: mlp, hidden: [32]}\noptimizer: {name: sgd, lr: 0.1, momentum: 0.9}\n"
        "data:\n  dataset: files\n  batch_size: 16\n" +
        files_yaml;
    TrainingRun run = build_run(Recipe::parse(yaml, "files.yaml"));
    EXPECT_EQ(run.train_data->input_shape(), (std::vector<int64_t>{1, 6, 6}));
    EXPECT_EQ(run.train_data->num_classes(), 4);
    Trainer trainer(run.options.console_log_interval("0ep"));
    trainer.fit();
    return trainer.state().eval_metrics["eval"]["accuracy"];
  }

  std::string dir_ = tmp_.str();
};

TEST_F(Files, TrainsOnIdxFilesGzipOrNot) {
  auto [x, y] = quadrants(256, 1);
  auto [tx, ty] = quadrants(64, 2);
  write_idx("train-x.gz", x, true);
  write_idx("train-y.gz", y, true);
  write_idx("test-x", tx, false);
  write_idx("test-y", ty, false);
  EXPECT_GT(train_on("  train_inputs: " + path("train-x.gz") + "\n  train_labels: " + path("train-y.gz") +
                     "\n  eval_inputs: " + path("test-x") + "\n  eval_labels: " + path("test-y") + "\n"),
            0.9);
}

TEST_F(Files, TrainsOnNpyFiles) {
  auto [x, y] = quadrants(256, 3);
  auto [tx, ty] = quadrants(64, 4);
  write_npy("x.npy", x.to(torch::kFloat).unsqueeze(1));
  write_npy("y.npy", y);
  write_npy("tx.npy", tx.to(torch::kFloat).unsqueeze(1));
  write_npy("ty.npy", ty);
  EXPECT_GT(train_on("  train_inputs: " + path("x.npy") + "\n  train_labels: " + path("y.npy") +
                     "\n  eval_inputs: " + path("tx.npy") + "\n  eval_labels: " + path("ty.npy") + "\n"),
            0.9);
}

TEST_F(Files, AlgorithmsAndCallbacksByNameInTheRecipesOrder) {
  const std::string data = small_npy_data();
  auto build = [&](const std::string& extra) { return build_run(Recipe::parse(data + extra, "a.yaml")); };
  TrainingRun run = build(
      "algorithms:\n  label_smoothing: {smoothing: 0.2}\n  ema:\n    half_life: 50ba\n  channels_last:\n"
      "callbacks:\n  threshold_stopper: {monitor: eval/accuracy, threshold: 0.9}\n");
  ASSERT_EQ(run.options.algorithms().size(), 3U);
  EXPECT_EQ(run.options.algorithms()[0]->name(), "LabelSmoothing");
  EXPECT_EQ(run.options.algorithms()[1]->name(), "Ema");
  EXPECT_EQ(run.options.algorithms()[1]->recipe_spec()["options"]["half_life"], "50ba");
  EXPECT_EQ(run.options.algorithms()[2]->name(), "ChannelsLast");
  ASSERT_EQ(run.options.callbacks().size(), 1U);
  EXPECT_EQ(run.options.callbacks()[0]->name(), "ThresholdStopper");

  EXPECT_THAT(error_of([&] { build("algorithms:\n  mixup: {alpah: 0.2}\n"); }),
              StartsWith("a.yaml:3:11: algorithms.mixup.alpah: unknown option (known: alpha, interpolate_loss)"));
  EXPECT_THAT(error_of([&] { build("algorithms:\n  ema:\n    half_life: fifty\n"); }),
              StartsWith("a.yaml:4:16: algorithms.ema.half_life: invalid time 'fifty'"));
  EXPECT_THAT(error_of([&] { build("algorithms:\n  mixupp:\n"); }),
              StartsWith("a.yaml:3:3: algorithms.mixupp: unknown algorithm 'mixupp' (known: blurpool,"));
  EXPECT_THAT(error_of([&] { build("algorithms: [mixup]\n"); }),
              HasSubstr("algorithms: expected a mapping of names to their options"));
  EXPECT_THAT(error_of([&] { build("callbacks:\n  threshold_stopper: {threshold: high}\n"); }),
              HasSubstr("callbacks.threshold_stopper.threshold: expected a number, got 'high'"));
  EXPECT_THAT(error_of([&] { build_run(Recipe::parse(data, "a.yaml", {"algorithms.cutout.length=-1"})); }),
              StartsWith("--set algorithms.cutout.length: algorithms.cutout: length must be positive"));
}

// memory_format: auto is channels-last for a convolutional model on the CPU (the channels_last
// algorithm, once), contiguous for one without 4-d weights; the other values and their errors.
TEST_F(Files, MemoryFormatAutoIsChannelsLastForConvolutionsOnTheCpu) {
  const std::string data = small_npy_data();
  auto build = [&](const std::string& extra) { return build_run(Recipe::parse(data + extra, "a.yaml")); };
  auto layouts = [](const TrainingRun& run) {
    int n = 0;
    for (const auto& a : run.options.algorithms()) n += a->name() == "ChannelsLast" ? 1 : 0;
    return n;
  };
  TrainingRun run = build("");
  EXPECT_EQ(run.memory_format, "channels_last");
  EXPECT_EQ(layouts(run), 1);
  EXPECT_EQ(layouts(build("algorithms: {channels_last: }\n")), 1);  // not twice
  run = build("memory_format: contiguous\n");
  EXPECT_EQ(run.memory_format, "contiguous");
  EXPECT_EQ(layouts(run), 0);
  run = build("model: {name: mlp}\n");  // no 4-d weights
  EXPECT_EQ(run.memory_format, "contiguous");
  EXPECT_EQ(layouts(run), 0);
  EXPECT_EQ(build("model: {name: mlp}\nmemory_format: channels_last\n").memory_format, "channels_last");

  EXPECT_THAT(error_of([&] { build("memory_format: nhwc\n"); }),
              StartsWith("a.yaml:2:16: memory_format: expected auto, channels_last or contiguous, got 'nhwc'"));
  EXPECT_THAT(error_of([&] { build("memory_format: contiguous\nalgorithms: {channels_last: }\n"); }),
              HasSubstr("memory_format: contiguous, but algorithms has channels_last: remove one of the two"));
}

TEST_F(Files, MissingFilesAndMissingKeysAreNamed) {
  EXPECT_THAT(
      error_of([&] { train_on("  train_inputs: " + path("nope.npy") + "\n  train_labels: " + path("y.npy") + "\n"); }),
      HasSubstr("nope.npy: cannot open"));
  EXPECT_THAT(error_of([&] { train_on("  train_inputs: " + path("x.npy") + "\n"); }),
              HasSubstr("data.train_labels: required when data.dataset is files"));
}

TEST(Recipe, TextDataAndTheGptModel) {
  const baton::testing::TempDir dir_tmp("recipe_text");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  std::string text;
  for (int i = 0; i < 40; ++i) text += "to be or not to be, that is the question. ";
  std::ofstream(dir / "t.txt") << text;
  const std::string data = "data: {dataset: text, path: " + (dir / "t.txt").string() + ", context: 16}\n";
  const TrainingRun run =
      build_run(Recipe::parse(data + "model: {name: gpt, layers: 1, width: 16, heads: 2}\n", "r.yaml"));
  EXPECT_EQ(run.model_spec.input_shape(), std::vector<int64_t>{16});
  EXPECT_EQ(run.model_spec.num_classes(), run.train_data->num_classes());
  EXPECT_EQ(run.model_spec.width(), 16);
  ASSERT_TRUE(run.eval_data);
  const auto build = [&](const std::string& yaml) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); });
  };
  EXPECT_THAT(build("data: {dataset: text, path: /nonexistent/text}\n"),
              StartsWith("r.yaml:1:29: data.path: /nonexistent/text: no such file or folder"));
  EXPECT_THAT(build("data: {dataset: text, path: " + (dir / "t.txt").string() + ", tokens: words}\n"),
              HasSubstr("data.tokens: expected chars or bytes, got 'words'"));
  EXPECT_THAT(build(data + "model: {name: gpt, width: 30, heads: 4}\n"),
              HasSubstr("model.width: model 'gpt': width 30 must be a multiple of heads 4"));
  EXPECT_THAT(build("model: {name: gpt}\n"), HasSubstr("needs windows of tokens (data.dataset: text or tokens)"));
  baton::remove_tree(dir);
}

// Two classes of 20x20 gray PNGs (bright left half or bright right half, with noise), in ImageNet's
// layout; a CNN learns them through the images data set, errors name the key.
TEST(Recipe, ImageFoldersTrainAndBadKeysAreNamed) {
  const baton::testing::TempDir dir("recipe_images");
  torch::manual_seed(5);
  for (const char* split : {"train", "val"}) {
    for (int label = 0; label < 2; ++label) {
      const auto folder = dir.path() / split / (label == 0 ? "left" : "right");
      std::filesystem::create_directories(folder);
      for (int i = 0; i < (std::string(split) == "train" ? 48 : 16); ++i) {
        at::Tensor p = torch::randint(0, 60, {20, 20, 1}).to(torch::kByte);
        p.slice(1, label * 10, label * 10 + 10).add_(150);
        write_png((folder / (std::to_string(i) + ".png")).string(), p);
      }
    }
  }
  const std::string data = "data: {dataset: images, train_dir: " + (dir / "train").string() +
                           ", eval_dir: " + (dir / "val").string() +
                           ", channels: 1, image_size: 16, workers: 2, batch_size: 16,"
                           " train_transforms: [{random_resized_crop: {scale: [0.7, 1.0]}}],"
                           " eval_transforms: [{resize: 16}, {center_crop: 16}]}\n";
  TrainingRun run = build_run(
      Recipe::parse(data + "max_duration: 6ep\neval_interval: 6ep\nprogress_bar: false\nmodel: {name: fashion_cnn}\n"
                           "optimizer: {name: adam, lr: 0.003}\n",
                    "r.yaml"));
  EXPECT_EQ(run.train_data->input_shape(), (std::vector<int64_t>{1, 16, 16}));
  EXPECT_EQ(run.train_data->num_classes(), 2);
  Trainer trainer(run.options.console_log_interval("0ep"));
  trainer.fit();
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);
  const auto build = [&](const std::string& yaml) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); });
  };
  EXPECT_THAT(build("data: {dataset: images}\n"), HasSubstr("data.train_dir: give one of train_dir"));
  EXPECT_THAT(build("data: {dataset: images, train_dir: " + (dir / "nope").string() + "}\n"),
              HasSubstr("data.train_dir: " + (dir / "nope").string() + ": nothing, not a folder of class folders"));
  EXPECT_THAT(build("data: {dataset: images, train_dir: " + (dir / "train").string() + ", channels: 2}\n"),
              HasSubstr("data.channels: expected 1 (gray) or 3 (RGB)"));
  EXPECT_THAT(
      build("data: {dataset: images, train_dir: " + (dir / "train").string() + ", train_transforms: [{rotate: 5}]}\n"),
      HasSubstr("data.train_transforms: [0]: unknown transform 'rotate'"));
  EXPECT_THAT(build("data: {dataset: images, train_dir: " + (dir / "train").string() + ", bad_files: maybe}\n"),
              HasSubstr("data.bad_files: expected error or skip, got 'maybe'"));
  // A key of another kind is refused before any file is read (the folder named here does not exist).
  EXPECT_THAT(build("data: {dataset: fashion_mnist, dir: /nonexistent, eval_dir: x}\n"),
              HasSubstr("unknown key 'data.eval_dir' (known in data: dataset, batch_size, eval_batch_size, shuffle, "
                        "drop_last, prefetch, on_device, dir)"));
  // webdataset: its keys checked before any shard is read (the shards named here do not exist).
  EXPECT_THAT(build("data: {dataset: webdataset}\n"),
              HasSubstr("data.train_shards: required when data.dataset is webdataset"));
  EXPECT_THAT(build("data: {dataset: webdataset, train_shards: x.tar, shuffle_buffer: 0}\n"),
              HasSubstr("data.shuffle_buffer: expected 1 to 10000000 samples"));
  EXPECT_THAT(build("data: {dataset: webdataset, train_shards: [x.tar, 3]}\n"),
              HasSubstr("data.train_shards: expected a shard pattern"));
  EXPECT_THAT(build("data: {dataset: webdataset, train_shards: x.tar, train_dir: y}\n"),
              HasSubstr("unknown key 'data.train_dir'"));
  EXPECT_THAT(
      build("data: {dataset: imagez}\n"),
      HasSubstr(
          "data.dataset: unknown dataset 'imagez' (known: fashion_mnist, files, text, images, webdataset, tokens)"));
}

// model: {name: hf, pretrained: false}: a Llama from its config.json alone (transformers'
// from_config) learns the shards' cycle; without weights and without it, the folder says what to do.
TEST(Recipe, AnHfModelFromItsConfigAloneTrainsWithPretrainedFalse) {
  const baton::testing::TempDir dir("recipe_hf_config");
  std::vector<uint16_t> tokens(5000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 3) % 17);
  write_token_shard((dir.path() / "train_000.bin").string(), tokens);
  std::filesystem::create_directories(dir.path() / "llama");
  std::ofstream(dir.path() / "llama" / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 17, "hidden_size": 32,)"
      << R"( "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 64})";
  const std::string recipe = "data: {dataset: tokens, train_files: " + (dir.path() / "train_*.bin").string() +
                             ", context: 16, batch_size: 8}\nmax_duration: 12800tok\nprogress_bar: false\n"
                             "optimizer: {name: adamw, lr: 0.01}\nmodel: {name: hf, path: " +
                             (dir.path() / "llama").string();
  TrainingRun run = build_run(Recipe::parse(recipe + ", pretrained: false}\n", "r.yaml"));
  Trainer trainer(run.options.console_log_interval("0ep"));
  trainer.fit();
  EXPECT_EQ(trainer.state().timestamp.token(), 12800);
  EXPECT_LT(trainer.state().loss.item<double>(), 1.0) << "the cycle is learned (ln 17 = 2.83 at first)";
  const auto build = [&](const std::string& yaml) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); });
  };
  EXPECT_THAT(build(recipe + "}\n"), HasSubstr("no model.safetensors or model.safetensors.index.json (a recipe's "
                                               "model.pretrained: false trains config.json's architecture"));
  EXPECT_THAT(build("data: {dataset: tokens, train_files: " + (dir.path() / "train_*.bin").string() +
                    "}\nmodel: {name: torchscript, path: x.pt, pretrained: false}\n"),
              HasSubstr("model.pretrained: false is for hf models"));
}

// Token shards train a GPT for a number of tokens, its vocabulary from the shards; tok counts only
// where the data are token windows.
TEST(Recipe, TokenShardsTrainAGptForTokens) {
  const baton::testing::TempDir dir("recipe_tokens");
  std::vector<uint16_t> tokens(5000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 3) % 17);  // a cycle
  write_token_shard((dir.path() / "train_000.bin").string(), tokens);
  write_token_shard((dir.path() / "train_001.bin").string(), tokens);
  write_token_shard((dir.path() / "val_000.bin").string(), std::vector<uint16_t>(tokens.begin(), tokens.begin() + 700));
  const std::string data = "data: {dataset: tokens, train_files: " + (dir.path() / "train_*.bin").string() +
                           ", eval_files: [" + (dir.path() / "val_*.bin").string() + "], context: 16, batch_size: 8}\n";
  TrainingRun run = build_run(Recipe::parse(data + "max_duration: 6400tok\neval_interval: 1ep\nprogress_bar: false\n"
                                                   "model: {name: gpt, layers: 1, width: 32, heads: 2}\n"
                                                   "optimizer: {name: adamw, lr: 0.01}\n",
                                            "r.yaml"));
  EXPECT_EQ(run.train_data->num_classes(), 17);
  EXPECT_EQ(run.train_data->size(), 2 * (4999 / 16));
  Trainer trainer(run.options.console_log_interval("0ep"));
  trainer.fit();
  EXPECT_EQ(trainer.state().timestamp.batch(), 50);  // 6400 tokens / (8 windows x 16 tokens)
  EXPECT_EQ(trainer.state().timestamp.token(), 6400);
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);  // the cycle is learned
  const auto build = [&](const std::string& yaml) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); });
  };
  EXPECT_THAT(build("data: {dataset: tokens}\n"), HasSubstr("data.train_files: required when data.dataset is tokens"));
  EXPECT_THAT(build("data: {dataset: tokens, train_files: " + (dir.path() / "none_*.bin").string() + "}\n"),
              HasSubstr("matches no regular file"));
  EXPECT_EQ(build(data + "max_duration: 100tok\nmodel: {name: gpt, layers: 1, width: 32, heads: 2}\n"), "no error");
  EXPECT_EQ(build("data: {dataset: tokens, train_files: " + (dir.path() / "train_*.bin").string() +
                  ", vocab_size: 10}\nmax_duration: 1ba\nmodel: {name: gpt, layers: 1, width: 32, heads: 2}\n"),
            "r.yaml:1:38: data.train_files: " + (dir.path() / "train_000.bin").string() +
                ": token 12 at position 4 is not below vocab_size 10");  // before a run is made, not at training
  write_npy((dir.path() / "x.npy").string(), torch::randn({8, 4}));
  write_npy((dir.path() / "y.npy").string(), torch::arange(8) % 2);
  EXPECT_THAT(build("max_duration: 1000tok\ndata: {dataset: files, train_inputs: " + (dir.path() / "x.npy").string() +
                    ", train_labels: " + (dir.path() / "y.npy").string() + "}\n"),
              HasSubstr("max_duration: '1000tok' counts tokens, but data.dataset files is not token windows"));
}

}  // namespace
}  // namespace baton
